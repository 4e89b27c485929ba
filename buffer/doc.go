// Package buffer holds accepted events between the HTTP intake and storage.
//
// Events arrive as a Batch of groups, one group per key (for logs: a
// service and UTC hour, "api/2026/11/21/1800"; for logins: a day table),
// each group already encoded as '\n'-terminated lines. The buffer appends
// every group to its key's pending bytes and flushes a key when it reaches
// its stream's chunk size or its oldest byte its stream's flush age, on
// worker goroutines of its own per stream, so one slow key or one slow
// sink never blocks the intake of the others.
//
// The streams are a registry the buffer is opened with (StreamDef): each
// has an id (StreamLogs, StreamLogins; written in the WAL, so fixed), a
// name (its metrics' "stream" label), the Flusher that stores its keys
// (blobsink's Sink for logs, tablesink's Sink for logins), a chunk size
// (FlushBytes: --flush-bytes unless set; --login-flush-bytes for logins,
// kept between --flush-bytes and a quarter of --buffer-bytes), a flush
// age (FlushAge: --flush-interval unless set; --login-flush-interval for
// logins, with a quiet rule, FlushQuiet: a key quiet that long is flushed
// at once), how many waiting chunks one flush may take once no batch is
// coming (FlushJoin: the logs stream takes up to 16, handed to its Flusher
// as pieces, so a draining key pays one flush per up to 16 chunks; no more
// than its flushes were last seen to store in 5 s).
// A group may carry the logline.Summary of its lines (Group.Lines, kept by
// the HTTP layer as it encodes them): the buffer merges them per chunk and
// hands them to the Flusher with the chunk, so blobsink writes a blob's
// metadata without reading the lines back; a chunk rebuilt from the WAL
// has none.
//
// Durability follows --ack:
//
//   - wal (default): Add returns once the batch is in the write-ahead log,
//     fsync'd by group commit. After a crash, Open replays the log and
//     re-queues every byte not yet durably flushed; nothing acknowledged is
//     lost and nothing is written twice.
//   - flush: as wal, and Add returns only once the batch is in storage, or
//     after --ack-timeout with ErrAckTimeout (the batch is in the WAL and
//     will be stored). While StorageDown, Add refuses
//     at once with a 503 before writing anything.
//   - memory: Add returns once the batch is buffered; a crash loses it.
//
// Exactly-once flushing works with the sink's help (the Flusher interface):
// before writing, the sink journals an intent (where the bytes go) through
// the WAL; after a crash, Landed tells for an unfinished intent how many
// bytes already reached storage, and only the rest is flushed again.
//
// Memory is bounded by --buffer-bytes: Add reserves its batch's size and a
// flush releases it; when the budget is used up, Add waits briefly and then
// fails with a 429 refusal (package admission; errors.Is ErrFull) that the
// HTTP layer answers with Retry-After.
//
// Disk is bounded by --wal-max-bytes: while the WAL's segments on disk
// reach it (storage not keeping up), Add refuses with a 503 naming the flag
// (errors.Is ErrWALFull) before writing anything. When the WAL's disk fails
// a write (full, read-only, failing), Add returns a 503 naming the cause;
// nothing of the batch is kept (package wal cuts the failed group off), and
// WALErr tells /readyz. Failed flushes are retried with the internal/retry
// policy; StorageDown is true while one has failed three times in a row.
//
// Performance: with --ack wal, one goroutine (the WAL writer) inserts every
// durable batch into the key buffers in log order; inserting is a memcpy per
// group. Keys live in lock-striped maps so the flush scheduler and the
// inserters rarely meet on a lock.
package buffer
