package blobsink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"ingest/internal/flagutil"
	"ingest/logline"
)

// Config tunes the sink.
type Config struct {
	MaxBlobBytes int64
	Compression  Compression
	// MaxBlocks closes a blob before Azure's 50,000-block limit.
	MaxBlocks int
	// ChunkBytes bounds the raw bytes of one appended block (before compression).
	ChunkBytes int
}

// RegisterFlags adds the sink's flags to fs.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	flagutil.BytesVar(fs, &c.MaxBlobBytes, "blob-max-bytes", 256<<20, "close a blob and claim the next number past this size")
	fs.StringVar((*string)(&c.Compression), "blob-compression", "", "compress each flushed block as an independent frame: zstd or gzip (blob names end .log.zst / .log.gz); empty = plain .log")
	c.MaxBlocks = MaxBlocks - 1000
	c.ChunkBytes = MaxAppendBytes - 64<<10
}

// Validate checks the settings.
func (c *Config) Validate() error {
	switch c.Compression {
	case CompressNone, CompressZstd, CompressGzip:
	default:
		return fmt.Errorf("cannot use --blob-compression %q: want zstd, gzip or nothing", c.Compression)
	}
	if c.MaxBlobBytes <= 0 {
		return fmt.Errorf("cannot use --blob-max-bytes %d: it must be positive", c.MaxBlobBytes)
	}
	if c.MaxBlocks <= 0 || c.MaxBlocks > MaxBlocks {
		c.MaxBlocks = MaxBlocks - 1000
	}
	// The margin covers compression growing incompressible data slightly.
	if c.ChunkBytes <= 0 || c.ChunkBytes > MaxAppendBytes-64<<10 {
		c.ChunkBytes = MaxAppendBytes - 64<<10
	}
	return nil
}

// Sink writes one key's lines ("{service}/{YYYY}/{MM}/{DD}/{hh}00") into
// that hour prefix's blobs. It implements the buffer's Flusher.
type Sink struct {
	store Store
	cfg   Config
	log   *slog.Logger
	met   *sinkMetrics

	mu      sync.Mutex
	writers map[string]*writer // by key; a key's flushes never overlap

	zenc *zstd.Encoder
}

// NewSink creates a sink over store.
func NewSink(store Store, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Sink{store: store, cfg: cfg, log: log, writers: map[string]*writer{}, met: newSinkMetrics(reg)}
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

// intent is what Flush journals before writing: every block it will append,
// in order, so that recovery can tell which of them landed.
type intent struct {
	Blobs  []intentBlob  `json:"b"`
	Chunks []intentChunk `json:"c"`
}

type intentBlob struct {
	Name string `json:"n"`
	Base Meta   `json:"m"` // metadata before this flush
}

type intentChunk struct {
	Blob   int    `json:"b"` // index into Blobs
	Offset int64  `json:"o"`
	Raw    int    `json:"r"`           // bytes of data it carries
	Stored int    `json:"s"`           // bytes appended (compressed size)
	Sum    uint32 `json:"k,omitempty"` // CRC-32C of the stored bytes: tells our block from another writer's
	Meta   Meta   `json:"m"`
}

// chunk is one planned block.
type chunk struct {
	raw     []byte
	encoded []byte
	meta    Meta
}

// Flush implements the buffer's Flusher: it appends data to the key's blob,
// claiming new blobs as they fill, and returns the bytes stored.
func (s *Sink) Flush(ctx context.Context, key string, data []byte, journal func([]byte) error) (int, error) {
	chunks, err := s.encode(data)
	if err != nil {
		return 0, err
	}
	w, err := s.writerFor(ctx, key)
	if err != nil {
		return 0, err
	}
	// Plan: place every chunk, rolling over to a new blob where it does not fit.
	var in intent
	ws := []*writer{w}
	in.Blobs = append(in.Blobs, intentBlob{Name: w.name, Base: w.meta})
	offset, blocks := w.size, w.blocks
	for _, c := range chunks {
		if !fits(&s.cfg, offset, blocks, len(c.encoded)) {
			nw, err := s.claim(ctx, key, ws[len(ws)-1].seq+1)
			if err != nil {
				return 0, err
			}
			ws = append(ws, nw)
			in.Blobs = append(in.Blobs, intentBlob{Name: nw.name})
			offset, blocks = 0, 0
		}
		in.Chunks = append(in.Chunks, intentChunk{Blob: len(ws) - 1, Offset: offset, Raw: len(c.raw), Stored: len(c.encoded),
			Sum: crc32.Checksum(c.encoded, crcTable), Meta: c.meta})
		offset += int64(len(c.encoded))
		blocks++
	}
	body, err := json.Marshal(&in)
	if err != nil {
		return 0, err
	}
	if err := journal(body); err != nil {
		return 0, fmt.Errorf("cannot journal the flush intent: %w", err)
	}

	stored := 0
	for i, c := range chunks {
		ic := in.Chunks[i]
		w := ws[ic.Blob]
		if i == 0 || in.Chunks[i-1].Blob != ic.Blob {
			if err := s.widenMeta(ctx, w, in.Chunks[i:], ic.Blob, chunks[i:]); err != nil {
				s.setWriter(key, ws, ic.Blob)
				return stored, err
			}
		}
		if err := s.append(ctx, w, ic.Offset, c.encoded); err != nil {
			// Metadata of what did land is brought up to date on the next
			// flush or by recovery, so queries never skip these blocks.
			s.setWriter(key, ws, ic.Blob)
			return stored, err
		}
		w.appended(len(c.encoded), c.meta)
		stored += len(c.raw)
		// Finish a blob's metadata as soon as the flush moves past it.
		last := i+1 == len(chunks) || in.Chunks[i+1].Blob != ic.Blob
		if last || !w.open() {
			if err := s.store.SetMetadata(ctx, w.name, w.meta.Map()); err != nil {
				s.log.Warn("cannot update blob metadata, will retry on the next flush", "blob", w.name, "err", err)
				s.met.errors.WithLabelValues("metadata").Inc()
			} else {
				w.metaSent = true
			}
		}
		if !w.open() && i+1 < len(chunks) {
			// Our block landed, then another writer appended after it: the
			// rest goes to a new blob at the next flush.
			s.setWriter(key, ws, ic.Blob)
			return stored, fmt.Errorf("cannot append to blob %s: %s; the next flush claims a new blob", w.name, w.why)
		}
		if last && i+1 < len(chunks) {
			w.retire() // full: the flush goes on in the next blob
		}
	}
	s.setWriter(key, ws, len(ws)-1)
	s.met.appended.Add(float64(len(data)))
	return stored, nil
}

// widenMeta makes the blob's StartTime, EndTime and LogType cover the
// blocks about to be appended to it, before they are: a query that lists the
// blob between the append and the final metadata update must not skip it.
// (EventCount is only raised once the blocks are in.)
func (s *Sink) widenMeta(ctx context.Context, w *writer, planned []intentChunk, blob int, chunks []chunk) error {
	wide := w.meta
	have := w.meta.Count > 0
	for j, ic := range planned {
		if ic.Blob != blob {
			break
		}
		m := chunks[j].meta
		if m.Count == 0 {
			continue
		}
		if !have {
			wide.Start, wide.End, have = m.Start, m.End, true
		}
		wide.Start = min(wide.Start, m.Start)
		wide.End = max(wide.End, m.End)
		wide.Levels |= m.Levels
	}
	if wide == w.meta && w.metaSent {
		return nil
	}
	md := wide.Map()
	md[MetaStartTime] = string(logline.AppendTime(nil, wide.Start))
	md[MetaEndTime] = string(logline.AppendTime(nil, wide.End))
	if err := s.store.SetMetadata(ctx, w.name, md); err != nil {
		s.met.errors.WithLabelValues("metadata").Inc()
		if errors.Is(err, ErrNotFound) {
			s.abandon(w, "the blob vanished")
			return fmt.Errorf("cannot append to blob %s: it vanished; the next flush claims a new blob", w.name)
		}
		return fmt.Errorf("cannot widen the metadata of blob %s before appending: %w", w.name, err)
	}
	return nil
}

// append appends one block, resolving a failed or ambiguous attempt: the
// append-position condition means a block either landed whole at offset or
// not at all, so on ErrAppendPosition the blob's bytes at offset say which.
// A blob changed behind our back or gone abandons the writer; when our
// block landed and another writer appended after it, append returns nil and
// the writer is abandoned all the same.
func (s *Sink) append(ctx context.Context, w *writer, offset int64, block []byte) error {
	err := s.store.Append(ctx, w.name, offset, block)
	if err == nil {
		s.met.blocks.Inc()
		return nil
	}
	if errors.Is(err, ErrNotFound) {
		s.met.errors.WithLabelValues("append").Inc()
		s.abandon(w, "the blob vanished")
		return fmt.Errorf("cannot append to blob %s: it vanished; the next flush claims a new blob", w.name)
	}
	if !errors.Is(err, ErrAppendPosition) {
		s.met.errors.WithLabelValues("append").Inc()
		return fmt.Errorf("cannot append to blob %s: %w", w.name, err)
	}
	info, serr := s.store.Stat(ctx, w.name)
	if errors.Is(serr, ErrNotFound) {
		s.abandon(w, "the blob vanished")
		return fmt.Errorf("cannot append to blob %s: it vanished; the next flush claims a new blob", w.name)
	}
	if serr != nil {
		s.met.errors.WithLabelValues("append").Inc()
		return fmt.Errorf("cannot append to blob %s (append position did not match) nor read its size: %w", w.name, serr)
	}
	end := offset + int64(len(block))
	if info.Size >= end {
		ours, rerr := s.holds(ctx, w.name, offset, block)
		if rerr != nil {
			s.met.errors.WithLabelValues("append").Inc()
			return fmt.Errorf("cannot append to blob %s (append position did not match) nor read it back: %w", w.name, rerr)
		}
		if ours {
			// An earlier attempt landed but its answer was lost.
			s.met.resolvedRetries.Inc()
			s.met.blocks.Inc()
			if info.Size > end {
				s.abandon(w, fmt.Sprintf("it is %d bytes, expected %d: another writer appended to it", info.Size, end))
			}
			return nil
		}
	}
	s.met.errors.WithLabelValues("foreign").Inc()
	why := fmt.Sprintf("it is %d bytes, expected %d: another writer appended to it or it was changed", info.Size, offset)
	s.abandon(w, why)
	return fmt.Errorf("cannot append to blob %s: %s; the next flush claims a new blob", w.name, why)
}

// abandon gives up a writer whose blob changed behind our back.
func (s *Sink) abandon(w *writer, why string) {
	if !w.open() {
		return
	}
	w.abandon(why)
	s.met.abandoned.Inc()
	s.log.Warn("blob changed behind the writer's back: abandoning it, the next flush claims a new blob", "blob", w.name, "why", why)
}

// holds reports whether the blob has exactly block at offset.
func (s *Sink) holds(ctx context.Context, name string, offset int64, block []byte) (bool, error) {
	got, err := readRange(ctx, s.store, name, offset, len(block))
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, block), nil
}

// setWriter records the writer a key continues with after a flush: ws's
// writer number current, or, when that one was abandoned, the blob claimed
// after it in this flush (empty and ours).
func (s *Sink) setWriter(key string, ws []*writer, current int) {
	// Older blobs of this flush whose metadata did not get through are
	// finished now, best effort; recovery covers a crash before that.
	for _, w := range ws[:current] {
		if !w.metaSent && w.state != writerAbandoned {
			if err := s.store.SetMetadata(context.Background(), w.name, w.meta.Map()); err == nil {
				w.metaSent = true
			}
		}
	}
	if !ws[current].open() && current+1 < len(ws) {
		current++
	}
	w := ws[current]
	s.mu.Lock()
	w.used, w.evictable = time.Now(), w.metaSent || !w.open()
	s.writers[key] = w
	s.mu.Unlock()
}

// writerFor returns the key's open writer: the current one, or a new blob
// claimed after a retired or abandoned one, or after the highest number
// listed at the first flush since the start. It also retires writers idle
// for long.
func (s *Sink) writerFor(ctx context.Context, key string) (*writer, error) {
	s.mu.Lock()
	w := s.writers[key]
	now := time.Now()
	for k, o := range s.writers {
		if now.Sub(o.used) > 30*time.Minute && o.evictable {
			delete(s.writers, k)
		}
	}
	s.mu.Unlock()
	if w != nil && w.open() && !w.metaSent && w.meta.Count > 0 {
		err := s.store.SetMetadata(ctx, w.name, w.meta.Map())
		switch {
		case errors.Is(err, ErrNotFound):
			s.abandon(w, "the blob vanished")
		case err != nil:
			return nil, fmt.Errorf("cannot update metadata of blob %s: %w", w.name, err)
		default:
			w.metaSent = true
		}
	}
	if w != nil {
		if w.open() {
			return w, nil
		}
		return s.claim(ctx, key, w.seq+1)
	}
	// After a start, never append to an existing blob: it may be another
	// instance's, or hold a block torn by a crash. Claim past the highest.
	high := 0
	err := s.store.List(ctx, key+"/", func(b BlobInfo) error {
		if p, seq, ok := ParseBlobName(b.Name); ok && p == key && seq > high {
			high = seq
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list blobs under %s/: %w", key, err)
	}
	return s.claim(ctx, key, high+1)
}

// claim creates the first free blob numbered seq or above.
func (s *Sink) claim(ctx context.Context, key string, seq int) (*writer, error) {
	for tries := 0; tries < 1000; tries++ {
		name := BlobName(key, seq, s.cfg.Compression)
		err := s.store.Create(ctx, name, Meta{}.Map())
		if err == nil {
			s.met.created.Inc()
			return newWriter(name, seq), nil
		}
		if !errors.Is(err, ErrExists) {
			s.met.errors.WithLabelValues("create").Inc()
			return nil, fmt.Errorf("cannot create blob %s: %w", name, err)
		}
		s.met.claimConflicts.Inc()
		seq++
	}
	return nil, fmt.Errorf("cannot claim a blob number under %s: 1000 numbers in a row are taken", key)
}

// encode splits data into blocks at line boundaries and compresses them.
func (s *Sink) encode(data []byte) ([]chunk, error) {
	var chunks []chunk
	// A block never exceeds a whole blob, so every blob stays under
	// --blob-max-bytes (unless one line alone is larger).
	limit := int(min(int64(s.cfg.ChunkBytes), s.cfg.MaxBlobBytes))
	for len(data) > 0 {
		n := len(data)
		if n > limit {
			n = bytes.LastIndexByte(data[:limit], '\n') + 1
			if n == 0 { // one line longer than a block: send it alone
				n = bytes.IndexByte(data, '\n') + 1
				if n == 0 {
					n = len(data)
				}
			}
		}
		raw := data[:n]
		data = data[n:]
		c := chunk{raw: raw, meta: scanMeta(raw)}
		switch s.cfg.Compression {
		case CompressZstd:
			c.encoded = s.zenc.EncodeAll(raw, make([]byte, 0, len(raw)/4))
		case CompressGzip:
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
			zw.Write(raw)
			if err := zw.Close(); err != nil {
				return nil, err
			}
			c.encoded = buf.Bytes()
		default:
			c.encoded = raw
		}
		if len(c.encoded) > MaxAppendBytes {
			return nil, fmt.Errorf("cannot append a %d-byte block: over the %d-byte limit (a line longer than a block?)", len(c.encoded), MaxAppendBytes)
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

// scanMeta computes a block's metadata from its lines without parsing them
// whole: the time field has a fixed width and sorts as text.
func scanMeta(raw []byte) Meta {
	var m Meta
	var minT, maxT []byte
	const timeAt, timeEnd = len(logline.Version) + 1, len(logline.Version) + 1 + len(logline.TimeLayout)
	for len(raw) > 0 {
		nl := bytes.IndexByte(raw, '\n')
		line := raw
		if nl >= 0 {
			line, raw = raw[:nl], raw[nl+1:]
		} else {
			raw = nil
		}
		if len(line) <= timeEnd {
			continue
		}
		t := line[timeAt:timeEnd]
		if minT == nil || bytes.Compare(t, minT) < 0 {
			minT = t
		}
		if maxT == nil || bytes.Compare(t, maxT) > 0 {
			maxT = t
		}
		rest := line[timeEnd+1:]
		if i := bytes.IndexByte(rest, ';'); i > 0 {
			if l, ok := logline.ParseLevel(rest[:i]); ok {
				m.Levels = m.Levels.Add(l)
			}
		}
		m.Count++
	}
	if m.Count > 0 {
		m.Start, _ = logline.ParseTime(minT)
		m.End, _ = logline.ParseTime(maxT)
	}
	return m
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// rangeReader is implemented by stores that read part of a blob cheaply.
type rangeReader interface {
	ReadRange(ctx context.Context, name string, offset int64, n int) ([]byte, error)
}

// readRange returns n bytes of the blob from offset (io.ErrUnexpectedEOF
// when it is shorter).
func readRange(ctx context.Context, store Store, name string, offset int64, n int) ([]byte, error) {
	if r, ok := store.(rangeReader); ok {
		return r.ReadRange(ctx, name, offset, n)
	}
	rc, err := store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, offset); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// truncater is implemented by stores that can cut a blob back (FileStore).
type truncater interface {
	Truncate(ctx context.Context, name string, size int64) error
}

// Landed implements the buffer's Flusher: for a flush interrupted by a
// crash, it finds which of the planned blocks are in storage, brings the
// metadata of their blobs up to date and returns the bytes they carry.
func (s *Sink) Landed(ctx context.Context, key string, body []byte) (int, error) {
	var in intent
	if err := json.Unmarshal(body, &in); err != nil {
		return 0, fmt.Errorf("cannot read a flush intent of %s: %w", key, err)
	}
	landed := 0
	stop := false
	for bi, b := range in.Blobs {
		info, err := s.store.Stat(ctx, b.Name)
		if errors.Is(err, ErrNotFound) {
			break // claimed blobs are created before the intent; a missing one got nothing
		}
		if err != nil {
			return 0, fmt.Errorf("cannot read blob %s to resolve an unfinished flush: %w", b.Name, err)
		}
		meta := b.Base
		end := int64(-1)     // end of the last block that landed whole
		missing := int64(-1) // end of the first planned block that did not
		for _, c := range in.Chunks {
			if c.Blob != bi || stop {
				continue
			}
			ok := c.Offset+int64(c.Stored) <= info.Size
			if ok && c.Sum != 0 {
				// The blob is long enough; its bytes say whether they are ours.
				got, err := readRange(ctx, s.store, b.Name, c.Offset, c.Stored)
				if err != nil {
					return 0, fmt.Errorf("cannot read blob %s back to resolve an unfinished flush: %w", b.Name, err)
				}
				ok = crc32.Checksum(got, crcTable) == c.Sum
			}
			if !ok {
				stop = true
				if end < 0 {
					end = c.Offset
				}
				missing = c.Offset + int64(c.Stored)
				continue
			}
			landed += c.Raw
			meta = meta.Merge(c.Meta)
			end = c.Offset + int64(c.Stored)
		}
		if end >= 0 && info.Size > end && info.Size < missing {
			// Part of our next block: torn by power loss, which only a
			// FileStore can see. Another writer's whole bytes stay.
			if t, ok := s.store.(truncater); ok {
				if err := t.Truncate(ctx, b.Name, end); err != nil {
					return 0, err
				}
			}
		}
		if meta.Count > 0 {
			if err := s.store.SetMetadata(ctx, b.Name, meta.Map()); err != nil {
				return 0, fmt.Errorf("cannot update metadata of blob %s: %w", b.Name, err)
			}
		}
		if stop {
			break
		}
	}
	return landed, nil
}

type sinkMetrics struct {
	appended, blocks, created, claimConflicts, resolvedRetries, abandoned prometheus.Counter
	errors                                                                *prometheus.CounterVec
}

func newSinkMetrics(reg prometheus.Registerer) *sinkMetrics {
	m := &sinkMetrics{
		appended:        prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_appended_bytes_total", Help: "Raw line bytes appended to blobs."}),
		blocks:          prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_blocks_total", Help: "Blocks appended to blobs."}),
		created:         prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blobs_created_total", Help: "Blobs claimed (created)."}),
		claimConflicts:  prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_claim_conflicts_total", Help: "Blob numbers found already taken by another writer."}),
		resolvedRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_append_resolved_total", Help: "Appends whose lost answer was resolved by reading the blob size."}),
		abandoned:       prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_writers_abandoned_total", Help: "Blob writers given up because their blob changed behind their back (another writer appended, the file was touched) or vanished; the next flush claimed a new blob."}),
		errors:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_blob_errors_total", Help: "Blob storage errors by operation (retried)."}, []string{"op"}),
	}
	if reg != nil {
		reg.MustRegister(m.appended, m.blocks, m.created, m.claimConflicts, m.resolvedRetries, m.abandoned, m.errors)
	}
	return m
}
