// Package query reads log events back out of the hour-prefixed blobs that
// blobsink writes: by service, time range, level, message text and regular
// expression, in time order, with memory bounded whatever the range.
//
//	q := query.Query{Services: []string{"api"}, From: from, To: to, Level: logline.LevelWarn}
//	st, err := query.Run(ctx, store, q, func(line []byte, e *logline.Event) error {
//		_, err := w.Write(query.AppendNDJSON(buf[:0], e))
//		return err
//	})
//
// Listing (plan.go): a time range becomes the hour prefixes it touches
// ({service}/{YYYY}/{MM}/{DD}/{hh}00), listed with metadata; a blob whose
// StartTime/EndTime (or LogType, for a level) cannot match is skipped
// unopened, one with missing metadata is read. Whole days are listed with
// one day prefix, and empty months, years and longer spans are found by
// one-name probes, so a range costs a probe per empty block and a listing
// per day with blobs, never one per hour.
//
// Order (merge.go): hours never interleave, since an event lives under its
// own hour. Within an hour the requested services' blobs are merged by time
// as concurrently open streams, each opened once the merge reaches its
// StartTime, into a sort buffer (Config.SortBytes). A line goes out once
// nothing not yet merged can be older: an unopened blob is bounded by its
// StartTime, an open one by its read-ahead (an event is taken to be stored
// at most Config.ReorderBytes from its place in time order) or, sooner, by
// its Lateness metadata. Output is exactly in time order, equal times in a
// deterministic order, whenever no event is stored further than that from
// its place; one that is comes out late and is counted
// (Stats.LinesOutOfOrder). Query.Desc hands out the newest first, and
// RunHistogram counts per interval and level (desc.go, histogram.go).
//
// Memory per query: the sort buffer, the read-ahead budget
// (Config.ReadAheadBytes, shared by the open blobs) and per open blob one
// batch of lines read ahead, a read buffer, a line buffer that grows only
// up to Config.MaxLineBytes (longer lines are skipped and counted) and a
// zstd blob's decoder window; at most Config.MaxOpenBlobs are open. Nothing
// grows with the length of the range.
//
// Cost: each open blob is read, decompressed and filtered by a goroutine
// of its own, so an hour's blobs are scanned on every core while output
// stays in order. A line is checked against the time range, level and
// message text on its raw bytes before it is parsed, and a parsed line
// records its fields' offsets, so handing it out parses nothing again.
// RunNDJSON encodes on the blobs' goroutines, copying the stored time and
// message where they are already in the answer's form. BenchmarkScan
// measures lines/s, MB/s and MB per CPU-second (docs/performance.md).
package query
