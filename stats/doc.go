// Package stats keeps the hour-by-hour event counts of the logs stream,
// per service and level, in table "stats" (the data-series pattern), and
// reads them back for `ingest stats` and GET /v1/stats/{service}.
//
// Counts are kept per blob. After each flush that appended to a blob, the
// blob sink tells Table.Count what the blob holds so far (its lines per
// level, logline.Summary.ByLevel), before the flush counts as done; Count
// replaces the blob's entity with those counts. After a crash, the blob
// sink's recovery of the unfinished flush tells it again what landed:
// replacing an entity with the same counts changes nothing, so every
// stored event is counted exactly once, whenever the process died, and a
// count is never lost to a crash (blobsink.Counter).
//
// One entity per blob: PartitionKey "{escaped service}~{YYYYMMDD}",
// RowKey "{hh}00~{blob file name}" ("1800~000001.log"), properties Hhh
// (events of that hour, every level), Hhh_<level> for each level present
// ("_none" for no level) and Instance (--stats-instance, the writer). A
// read is one range query of the service's day partition, summing every
// entity in it, so entities of other writers and layouts (one per
// instance and day, H00..H23) add up the same way.
//
// Cost: one upsert (a one-entity transaction) per flush and blob it
// appended to, in the partition of the blob's service and day.
package stats
