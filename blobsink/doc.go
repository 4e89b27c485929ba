// Package blobsink writes buffered log lines into append blobs named by hour
// prefix, the way Azure Storage Analytics names its logs:
//
//	{service}/{YYYY}/{MM}/{DD}/{hh}00/{NNNNNN}.log
//
// A writer claims an NNNNNN of an hour prefix with a conditional create
// (If-None-Match: * on Azure, O_EXCL on files), so any number of instances
// write the same service and hour without colliding; once it has met
// another writer it claims at random past the highest number, so that a
// fleet's first flushes of an hour do not queue up on the same numbers
// (claim.go: numbers have gaps). Each flush sends the blob's metadata
// (LogVersion, StartTime, EndTime, LogType, EventCount, and Lateness: how
// late an event can be stored, see Meta.Late) as it will be once
// the flush's blocks have landed, then appends blocks of at most
// MaxAppendBytes (100 MiB, Azure's limit) with an append-position
// condition: one metadata write and one append per flush (widen.go), so
// a larger --flush-bytes means fewer requests per GB. A flush may carry
// several of the buffer's chunks as pieces (a key with a backlog): a plain
// block keeps them apart and the store sends them as one body, so they are
// never copied together. A blob is closed and
// the next number claimed at --blob-max-bytes or before Azure's
// 50,000-block limit.
//
// A writer goes claimed -> appending -> retired (full or idle), or
// abandoned when its blob changed behind its back (another writer
// appended, the file was touched) or vanished: that flush fails with what
// it stored so far, and the next claims the next number (writer.go). An
// append whose answer was lost is resolved by reading the block back, and
// each flush's intent carries a CRC-32C per block, so neither a retry nor
// recovery after a crash ever takes another writer's bytes for ours.
//
// The contract with the buffer (Sink implements its Flusher): Flush
// journals its intent, then either stores all of data and returns its
// length, or returns an error with the bytes stored so far; Landed tells,
// after a crash, how many bytes of a journaled intent are in storage.
// Before a flush succeeds, and when Landed resolves one, the sink's Counter
// (the stats table) is told what each blob it wrote holds, so the counts
// follow the blobs exactly once (count.go). The
// append-position condition keeps a retried block from landing twice, and
// the per-block CRC-32C keeps another writer's bytes from counting as ours.
//
// Storage sits behind the Store interface: FileStore (embedded, files under
// the data directory) and AzureStore (Azure Blob service through azblob).
//
// One concern per file: config.go (settings and flags), sink.go (Flush as
// a sequence of steps), encode.go (splitting into blocks, compression),
// scanmeta.go (a block's metadata from its lines, for a piece that came
// without its logline.Summary), plan.go (placing blocks
// in blobs, the journaled intent), claim.go (claiming the next blob
// number), writers.go (a key's current writer, idle eviction), writer.go
// (a writer's life cycle), widen.go (metadata before and after appending),
// append.go (one conditional append and resolving its lost answer),
// recover.go (finishing a crashed flush), count.go (telling the Counter),
// metrics.go.
package blobsink
