package blobsink

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"

	"ingest/buffer"
)

// Sink writes one key's lines ("{service}/{YYYY}/{MM}/{DD}/{hh}00") into
// that hour prefix's blobs. It implements the buffer's Flusher.
type Sink struct {
	store Store
	cfg   Config
	log   *slog.Logger
	met   *sinkMetrics

	mu      sync.Mutex
	writers map[string]*writer // by key; a key's flushes never overlap

	// contended is set once a claim found a number taken: the sink shares
	// the account with other writers (claim.go).
	contended atomic.Bool

	counter   Counter              // told what blobs hold (count.go); may be nil
	uncounted map[string][]*writer // by key: blobs the counter could not be told; under mu

	zenc *zstd.Encoder
}

// NewSink creates a sink over store.
func NewSink(store Store, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.Default()
	}
	s := &Sink{store: store, cfg: cfg, log: log, writers: map[string]*writer{}, uncounted: map[string][]*writer{}, met: newSinkMetrics(reg)}
	if cfg.Compression == CompressZstd {
		// EncodeAll with one shared encoder is safe for concurrent use and
		// deterministic, which retries rely on (see Flush).
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(2))
		if err != nil {
			return nil, err
		}
		s.zenc = enc
	}
	return s, nil
}

// TakesSums reports whether Flush uses the sums it is given: a plain block
// is checksummed as it is appended; a compressed one is checksummed as its
// frame, which only the sink sees.
func (s *Sink) TakesSums() bool { return s.cfg.Compression == CompressNone }

// Flush implements the buffer's Flusher: it appends data to the key's blob,
// claiming new blobs as they fill, and returns the bytes stored. It journals
// its plan before writing a byte, so recovery (Landed) can finish it.
// lines[i], when its Count is not zero, is what data[i] holds: the blob's
// metadata takes it instead of reading the piece's lines (nil lines: read
// them all). sums[i], when not 0, is data[i]'s CRC-32C: a block that is
// that piece alone takes it instead of reading the piece again.
//
// A flush whose blobs could not be counted (see Counter) fails with every
// byte stored; the retry (with nothing left to store) counts them before
// anything else.
func (s *Sink) Flush(ctx context.Context, r buffer.FlushRequest) (int, error) {
	key, data, lines, sums, journal := r.Key, r.Data, r.Summaries, r.Sums, r.Journal
	if err := s.countPending(ctx, key); err != nil {
		return 0, err
	}
	if len(data) == 0 {
		return 0, nil
	}
	chunks, err := s.encode(data, lines, sums)
	if err != nil {
		return 0, err
	}
	w, err := s.writerFor(ctx, key)
	if err != nil {
		return 0, err
	}
	in, ws, err := s.plan(ctx, key, w, chunks)
	if err != nil {
		return 0, err
	}
	body, err := json.Marshal(&in)
	if err != nil {
		return 0, err
	}
	if err := journal(body); err != nil {
		return 0, fmt.Errorf("cannot journal the flush intent: %w", err)
	}
	stored, err := s.write(ctx, key, &in, ws, chunks)
	s.met.appended.Add(float64(stored))
	if cerr := s.countWriters(ctx, key, ws); err == nil {
		err = cerr
	}
	return stored, err
}

// write appends the planned chunks in order, widening each blob's metadata
// before its first block and finishing it once the flush moves past it, and
// returns the raw bytes stored. Whatever happens, it records the writer the
// key continues with.
func (s *Sink) write(ctx context.Context, key string, in *intent, ws []*writer, chunks []chunk) (int, error) {
	stored := 0
	for i, c := range chunks {
		ic := in.Chunks[i]
		w := ws[ic.Blob]
		if i == 0 || in.Chunks[i-1].Blob != ic.Blob {
			if err := s.widenMeta(ctx, w, in.Chunks[i:], ic.Blob, chunks[i:]); err != nil {
				s.setWriter(ctx, key, ws, ic.Blob)
				return stored, err
			}
		}
		if err := s.append(ctx, w, ic.Offset, c.encoded, c.size); err != nil {
			// Metadata of what did land is brought up to date on the next
			// flush or by recovery, so queries never skip these blocks.
			s.setWriter(ctx, key, ws, ic.Blob)
			return stored, err
		}
		w.appended(c.size, c.meta)
		stored += c.raw
		// Finish a blob's metadata as soon as the flush moves past it.
		last := i+1 == len(chunks) || in.Chunks[i+1].Blob != ic.Blob
		if last || !w.open() {
			s.finishMeta(ctx, w)
		}
		if !w.open() && i+1 < len(chunks) {
			// Our block landed, then another writer appended after it: the
			// rest goes to a new blob at the next flush.
			s.setWriter(ctx, key, ws, ic.Blob)
			return stored, fmt.Errorf("cannot append to blob %s: %s; the next flush claims a new blob", w.name, w.why)
		}
		if last && i+1 < len(chunks) {
			w.retire() // full: the flush goes on in the next blob
		}
	}
	s.setWriter(ctx, key, ws, len(ws)-1)
	return stored, nil
}
