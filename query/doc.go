// Package query reads log events back out of the hour-prefixed blobs that
// blobsink writes: by service, time range, level, message text and regular
// expression, in time order, with memory bounded whatever the range.
//
// A time range becomes the hour prefixes it touches
// ({service}/{YYYY}/{MM}/{DD}/{hh}00, the Storage Analytics layout); each is
// listed with metadata, and a blob whose StartTime/EndTime (or LogType, when
// a level is asked for) cannot match is skipped without being opened. A blob
// with missing or unparseable metadata is read: a blob being written may not
// have its final metadata yet. Whole UTC days inside the range are listed
// with one day prefix per service instead of 24 hour prefixes, and the
// millennia, centuries, decades, years and months wholly inside it are
// first probed (a listing stopped at its first name; a prefix of the
// year's digits covers a decade, century or millennium): a block with no
// blob of a service is skipped whole, oldest or newest first alike, so any
// range costs a probe per empty block and a listing per day of a month with
// blobs, a few dozen listings for centuries without data, never one per day
// or hour (plan.go).
//
//	q := query.Query{Services: []string{"api"}, From: from, To: to, Level: logline.LevelWarn}
//	st, err := query.Run(ctx, store, q, func(line []byte, e *logline.Event) error {
//		_, err := w.Write(query.AppendNDJSON(buf[:0], e))
//		return err
//	})
//
// # Order
//
// Hours are processed in order, and an event always lives under the prefix of
// its own hour, so hours never interleave. Within an hour, the blobs of every
// requested service are read as concurrently open streams merged by time
// (container/heap); a blob is opened only once the merge reaches its
// StartTime, so blobs one writer filled one after another are not open
// together. A blob holds its lines in the order they arrived, not sorted (a
// client may send old events late), so the merged, matching lines of an hour
// go into a sort buffer of Config.SortBytes (default 16 MiB) and are sorted
// before they are handed out. A line is handed out as soon as nothing not
// yet merged can be older (merge.go, release): a blob not opened yet is
// bounded by its StartTime; an open blob by the newest line its read-ahead
// read more than Config.ReorderBytes (default 16 MiB) before where the
// merge is in it, since an event is taken to be stored at most that far
// from its place in time order, or, when higher, by the newest line it has
// seen less the blob's Lateness metadata (blobsink.Meta.Late: how much
// older than an earlier-stored event an event in it is at most), which is
// proven for the bytes listed (a blob with Lateness is read no further).
// A blob with no matching line yet takes part in the merge by its bound
// alone (lineBatch.low). Output is exactly in time order (equal times in
// merge order, which is deterministic) whenever no event is stored further
// than ReorderBytes from its place, which blobs with Lateness metadata
// and no longer than that always satisfy, and the sort buffer holds the
// lines it must (a full buffer with nothing certain to hand out is handed
// out whole); an event that is not comes out late and is counted
// (Stats.LinesOutOfOrder). Lateness makes lines go out sooner: as they are
// read, instead of once a blob has been read ReorderBytes past them.
//
// Query.Desc hands out the newest events first, and RunHistogram counts
// events per interval and level without handing any out (see desc.go and
// histogram.go).
//
// # Memory
//
// Per query: the sort buffer (Config.SortBytes: the slabs holding lines
// not yet handed out and their index, whose slice may have grown up to
// twice what it holds), the read-ahead budget (Config.ReadAheadBytes,
// default 8 MiB, shared by the open blobs), and per open blob one 128 KiB
// batch of lines read ahead of its own, a 64 KiB read buffer, a line buffer
// that grows only for lines longer than that (up to Config.MaxLineBytes,
// default 4 MiB; longer lines are skipped and counted) and, for zstd blobs,
// the decoder's window (the size of one flushed frame). At most
// Config.MaxOpenBlobs (default 64) blobs are open at once. Nothing grows with
// the length of the range: a one-day listing's metadata is the largest other
// allocation.
//
// # Performance
//
// Every open blob is read, decompressed and filtered ahead by a goroutine of
// its own, into small batches of matching lines; the merge takes lines from
// the batches in time order. The blobs of an hour (several writers, several
// services) are so scanned on all cores while output stays in order.
// A text with no character a JSON encoder might escape is searched for in
// whole read buffers at once (bytes.Index), and only the lines holding it
// are split out and looked at. A line is first checked against the time
// range by comparing its fixed-width time field as bytes, against the level by its level field, and against the
// message text on the raw line when the text has no character a JSON encoder
// might escape; only then is it parsed, on its blob's goroutine, which
// records where its fields are: handing it out builds the event from those
// offsets without parsing again (a message without escapes is not copied).
// The check looks for the message's closing quote, escapes and control
// characters in one pass, eight bytes at a time, and parses a time from its
// minute on when the previous line had the same hour.
//
// RunNDJSON (the HTTP answer, `ingest query --format ndjson`) goes further:
// each blob's goroutine encodes its matching lines as NDJSON right away,
// copying the stored time field and message literal where they already are
// in the answer's form, and the merge and the sort buffer move encoded
// events, handed to the writer in runs of many. See BenchmarkScan for
// lines/s, MB/s and MB per CPU-second on one large hour.
package query
