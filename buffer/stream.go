package buffer

import (
	"fmt"
	"sync/atomic"
	"time"

	"ingest/internal/retry"
)

// Stream identifies one stream of the buffer: the kind of data a group
// holds and so the sink it goes to. A stream's id is written in the
// write-ahead log with every record, so it never changes.
type Stream uint8

// The ingester's streams.
const (
	StreamLogs   Stream = 0 // log lines, stored in append blobs (package blobsink)
	StreamLogins Stream = 1 // login attempts, stored in day tables (package tablesink)
)

// StreamDef registers one stream with the buffer (Open takes the
// registry: every stream, in id order).
type StreamDef struct {
	ID   Stream
	Name string // the "stream" label of the buffer's metrics, "logs"
	// Flusher stores the stream's keys.
	Flusher Flusher
	// FlushBytes is the stream's chunk size: a key is flushed once it
	// holds this many bytes, and one flush stores at most one chunk (a
	// batch's group larger than that is one chunk of its own), or
	// FlushJoin of them. Zero:
	// Config.FlushBytes (--flush-bytes). The buffer keeps it within a
	// quarter of --buffer-bytes, so one key's backlog leaves room for the
	// others, and never below --flush-bytes. The login stream sets it
	// (--login-flush-bytes): an entity group transaction covers one
	// bucket, so a flush fills its transactions only when it holds enough
	// attempts for every bucket, far more than 4 MiB of them.
	FlushBytes int64
	// FlushAge is how old a key's oldest byte gets before it is flushed.
	// Zero: Config.FlushInterval (--flush-interval). With --ack flush it
	// is never longer than --flush-interval: a request waits for the
	// flush. The login stream sets a longer one (--login-flush-interval),
	// with FlushQuiet: every flush costs a request per bucket, so it does
	// not flush a part of the attempts while more keep arriving.
	FlushAge time.Duration
	// FlushQuiet, when set, flushes a key as soon as no byte has come for
	// this long, before FlushAge (to the scheduler's tick, at most 250 ms).
	FlushQuiet time.Duration
	// Checksums keeps each chunk's CRC-32C up as batches are copied in,
	// while their bytes are in the cache, and hands it to the Flusher
	// (Flush's sums), for a sink that checksums what it stores.
	Checksums bool
	// FlushJoin, when above 1, lets a flush that starts with several of
	// the key's chunks waiting take consecutive ones up to FlushJoin x
	// FlushBytes in all (always at least one), handed to the Flusher as
	// pieces, not copied, once no batch has come for joinIdle (draining;
	// under load a joined flush would hold memory that waiting requests
	// need), and no more than the stream's last measured flush stored in
	// joinSpan (5 s), so a joined flush on a slow link stays well within a
	// storage request's timeout. A key's flushes go one at a time, so the
	// sink's cost per flush (blobsink: a metadata write and an append) is
	// paid per chunk unless chunks are joined. Zero or 1: one chunk per
	// flush.
	FlushJoin int
}

// stream is a registered stream and the buffer's state for it.
type stream struct {
	StreamDef
	queue chan *keyBuf // keys due for a flush, for the stream's workers
	retry retry.Policy // of its flushes
	spare chan []byte  // flushed chunk buffers of FlushBytes capacity, for new chunks
	rate  atomic.Int64 // bytes/s of the last flush stored at its first attempt; 0 before one
}

// newStreams checks the registry and returns the buffer's streams.
func newStreams(defs []StreamDef, cfg *Config) ([]*stream, error) {
	if len(defs) == 0 {
		return nil, fmt.Errorf("cannot open the buffer without a stream")
	}
	streams := make([]*stream, len(defs))
	names := map[string]bool{}
	for i, d := range defs {
		switch {
		case int(d.ID) != i:
			return nil, fmt.Errorf("cannot register stream %q (id %d) at position %d: list the streams in id order, with no gap", d.Name, d.ID, i)
		case d.Name == "" || names[d.Name]:
			return nil, fmt.Errorf("cannot register stream %d with name %q: every stream needs a name of its own", d.ID, d.Name)
		case d.Flusher == nil:
			return nil, fmt.Errorf("cannot register stream %q without a flusher", d.Name)
		case d.FlushBytes < 0:
			return nil, fmt.Errorf("cannot flush stream %q by chunks of %d bytes: want a positive size, or 0 for --flush-bytes", d.Name, d.FlushBytes)
		case d.FlushJoin < 0:
			return nil, fmt.Errorf("cannot join %d chunks in a flush of stream %q: want 0 or more", d.FlushJoin, d.Name)
		case d.FlushAge < 0 || d.FlushQuiet < 0:
			return nil, fmt.Errorf("cannot flush stream %q after %v, or %v without data: want positive durations, or 0 for --flush-interval and no quiet rule", d.Name, d.FlushAge, d.FlushQuiet)
		}
		names[d.Name] = true
		d.FlushBytes = chunkBytes(cfg, d.FlushBytes)
		d.FlushAge = flushAge(cfg, d.FlushAge)
		streams[i] = &stream{StreamDef: d, queue: make(chan *keyBuf, 1<<16), spare: make(chan []byte, spareChunks(d.FlushBytes, d.FlushJoin))}
	}
	return streams, nil
}

// chunkBytes is the chunk size of a stream that asks for want bytes (0:
// --flush-bytes): within a quarter of --buffer-bytes, so that one key's
// backlog leaves room for the others; never below --flush-bytes.
func chunkBytes(cfg *Config, want int64) int64 {
	if want == 0 {
		return cfg.FlushBytes
	}
	return max(cfg.FlushBytes, min(want, cfg.BufferBytes/4))
}

// flushAge is the flush age of a stream that asks for want (0:
// --flush-interval); with --ack flush, never longer than --flush-interval.
func flushAge(cfg *Config, want time.Duration) time.Duration {
	if want == 0 || cfg.Ack == AckFlush && want > cfg.FlushInterval {
		return cfg.FlushInterval
	}
	return want
}
