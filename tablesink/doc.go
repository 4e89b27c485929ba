// Package tablesink keeps login attempts in one Azure table per UTC day, on
// the Azure Table service or an embedded bbolt file with the same names,
// keys and queries; its Store is the table service the stats package uses
// too.
//
// Day tables: an attempt at time T goes to table logins{YYYYMMDD} of T's
// UTC day. Sink.Maintain (at start-up, then hourly from Sink.Run) creates
// today's and tomorrow's tables ahead of time, since Azure throttles a
// brand-new table while it learns its load, and deletes each table older
// than --login-retention-days with one DeleteTable. Azure refuses a deleted
// table's name for a while, so names are never reused: attempts older than
// the retention are refused at intake and dropped, counted, at flush.
//
// Keys come from package shard: PartitionKey a hash bucket of the user (and
// salt, for a hot user), RowKey escaped user "~" inverted ticks "_" escaped
// id, so user alice@example.com, id 01JDQ8 at 2026-11-21T18:04:05.1234567Z
// is entity 001e / alice@example.com~8584063226403541240_01JDQ8. Properties:
// User, Time, Success, IP, UA, ID and Props (the client's other fields as
// one JSON string: Azure property names must be identifiers, at most 252).
// A salted user has a marker row in the unsalted bucket; a table created by
// this version has a scheme marker (scheme.go). A table without it comes
// from the first key scheme and is read under both schemes until it ages
// out; such records replayed from the write-ahead log are re-keyed.
//
//	s, _ := tablesink.New(cfg, tablesink.NewAzureStore(svc), reg, log)
//	s.SetDeadLetters(blobStore)
//	key, rec, err := s.AppendRecord(rec[:0], &attempt) // at intake
//	err = s.Write(ctx, key, records)                    // from the buffer
//	latest, err := s.Tail(ctx, "alice@example.com", 7, 50)
//
// Write path: AppendRecord decides the keys and checks Azure's limits at
// intake, and appends one compact JSON record for the buffer, keyed by day
// table. Write groups a flush's records by bucket into entity group
// transactions (at most 100 entities and 4 MiB, one partition, a RowKey
// once) and upserts them, --login-flush-parallel at a time, so a replayed
// or retried flush duplicates nothing. Throttling and transient errors are
// retried (internal/retry); a missing table is created; a transaction
// refused as invalid is retried entity by entity, and what the service
// refuses on its own, like a record that is no entity, goes to a
// dead-letter blob (package deadletter). Write returns nil only when
// everything is committed or dead-lettered.
//
// Read path: Tail reads a user's newest attempts, day table by day table
// from the newest, with one $top range query in the user's bucket, and in
// each salted bucket too, merged, once the salted marker shows.
//
// Azurite accepts transactions over two partitions or 100 entities,
// entities over 1 MiB and more than 252 properties; Azure does not, so
// checkBatch and checkEntity enforce Azure's limits in both Stores.
//
// Cost: a flush costs about one write request per bucket it touches and
// per 100 of its attempts there, so larger flushes fill transactions
// better; AppendRecord allocates nothing; BoltStore commits a flush in one
// bolt transaction. BenchmarkFlush, BenchmarkParseRecords and
// BenchmarkAppendRecord measure them (figures in docs/performance.md).
package tablesink
