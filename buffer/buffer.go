package buffer

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ingest/admission"
	"ingest/internal/disk"
	"ingest/internal/httperr"
	"ingest/internal/notify"
	"ingest/internal/retry"
	"ingest/logline"
	"ingest/wal"
)

// Flusher stores one key's buffered bytes. Each sink (blobs, tables) is one.
type Flusher interface {
	// Flush stores r.Data, whole '\n'-terminated records of key r.Key in
	// arrival order, and returns how many leading bytes are durably
	// stored: all of them when err is nil. Flushes of one key never run
	// concurrently.
	Flush(ctx context.Context, r FlushRequest) (int, error)
	// Landed returns how many leading bytes of the flush described by intent
	// reached storage before a crash, finishing whatever bookkeeping (such as
	// metadata) the interrupted flush left undone.
	Landed(ctx context.Context, key string, intent []byte) (int, error)
}

// FlushRequest is one flush of a key's records.
type FlushRequest struct {
	Key string
	// Data is one run of bytes in pieces (the key's chunks, each ending at
	// a record's end, see StreamDef.FlushJoin): the sink may store them as
	// one write without joining them, and counts bytes across them.
	Data [][]byte
	// Summaries[i] is the Summary of Data[i]'s lines when its Count is not
	// zero: the producer summarized every group of that piece (see
	// Group.Lines). Otherwise the sink reads the piece's lines if it needs
	// to know what they hold.
	Summaries []logline.Summary
	// Sums[i], when not 0, is the CRC-32C (Castagnoli) of Data[i], for a
	// sink that checksums what it stores.
	Sums []uint32
	// Journal, called at most once before any byte reaches storage, writes
	// an intent that lets Landed tell, after a crash, what landed; a sink
	// whose writes are idempotent need not call it.
	Journal func(intent []byte) error
}

// Errors Add returns.
var (
	// ErrFull is wrapped by the 429 refusal Add returns when --buffer-bytes
	// is used up.
	ErrFull = admission.ErrRefused
	// ErrAckTimeout is wrapped by what Add returns with --ack flush when
	// --ack-timeout passed before storage confirmed the batch: the batch is
	// in the write-ahead log and will be stored, so the client must not
	// resend it.
	ErrAckTimeout       = errors.New("the batch is in the write-ahead log and will be stored, but storage did not confirm it within --ack-timeout; do not resend it")
	ErrClosed     error = &httperr.Error{Status: http.StatusServiceUnavailable, Msg: "cannot accept the batch: shutting down; send to another instance or retry", RetryAfter: time.Second}
)

const numStripes = 16

// Buffer is the set of per-key buffers between intake and sinks.
type Buffer struct {
	cfg     Config
	streams []*stream // the registry, indexed by Stream
	log     *slog.Logger
	wal     *wal.Log // nil with --ack memory
	met     *metrics

	stripes [numStripes]stripe
	seed    maphash.Seed

	budget    *admission.Budget
	flushed   notify.Notifier // broadcast after every completed flush
	memLSN    atomic.Uint64
	lastFull  atomic.Int64 // when Add last refused a batch, Unix ns
	lastAdd   atomic.Int64 // when the last batch was inserted, Unix ns
	queuesMu  sync.RWMutex // held for reading while sending to the streams' queues, for writing to close them
	queuesEnd bool
	closing   atomic.Bool
	stop      context.Context // ends to stop the scheduler and retry waits
	halt      context.CancelFunc
	// landedRetry is the retry policy of replay (the streams' flushes
	// have their own).
	landedRetry retry.Policy
	// failing counts flushes whose latest attempts failed at least
	// storageDownAfter times in a row (see StorageDown).
	failing atomic.Int64
	walFail atomic.Pointer[walFailure] // the last batch the WAL's disk refused (walguard.go)
	// lastFlushErr is the error of the latest failed flush attempt, for
	// refusals while StorageDown.
	lastFlushErr atomic.Pointer[error]
	workersWG    sync.WaitGroup
	schedWG      sync.WaitGroup
	// doneWG counts the done records being appended to the WAL, which
	// Close waits for: a log closed without them leaves the next start
	// asking the sink what the last flushes stored.
	doneWG doneGroup
	// beforeDone, when set (tests), runs where a done record is about to
	// be appended, so a test can hold it back until Close waits for it.
	beforeDone func()
	records    sync.Pool // *batchRecord: a batch's WAL record in pieces
}

// doneGroup is the WaitGroup of the done records; onWait, when set
// (tests), runs as Close starts waiting for them.
type doneGroup struct {
	sync.WaitGroup
	onWait func()
}

func (g *doneGroup) Wait() {
	if g.onWait != nil {
		g.onWait()
	}
	g.WaitGroup.Wait()
}

// stripe is one of the numStripes locks over the keys, so inserts of
// different keys rarely contend.
type stripe struct {
	mu   sync.RWMutex
	keys map[string]*keyBuf
}

// keyBuf is one key's pending bytes.
type keyBuf struct {
	stream Stream
	key    string

	mu         sync.Mutex
	chunks     []*chunk // pending, oldest first; appends go to the last
	flushing   bool
	flushFrom  uint64 // while flushing: LSN of the oldest byte being flushed
	flushedLSN uint64 // every byte up to this LSN is stored
	queued     bool
	lastActive time.Time
	// lastChunk is how many bytes the key's last flushed chunk held: the
	// next chunk starts that big instead of growing to it again.
	lastChunk int
}

// chunk is at most its stream's FlushBytes of a key's pending lines, whole batches
// only (a larger batch gets a chunk of its own): a flush takes one chunk
// (or its stream's FlushJoin of them, as pieces), so flushes stay bounded
// whatever piles up behind a slow one, and memory
// held is about the bytes held, not a doubling slice's capacity.
type chunk struct {
	data              []byte
	firstLSN, lastLSN uint64
	// skip is how many bytes of record firstLSN were stored before this
	// chunk (by a flush a crash interrupted); data starts after them.
	skip  int
	since time.Time // when its first byte arrived
	// lines summarizes data when every group added to it came with its
	// Summary (Group.Lines); linesOK says so.
	lines   logline.Summary
	linesOK bool
	// sum is the CRC-32C of data when the stream keeps it
	// (StreamDef.Checksums), updated as each batch is copied in while its
	// bytes are still in the cache: the blob sink checksums every block it
	// appends, and reading a whole chunk back from memory for that cost it
	// more than twice as much.
	sum uint32
}

// due reports whether the key has a chunk to flush now: a full one (of
// the stream's FlushBytes), more than one, one whose oldest byte is the
// stream's FlushAge old, or any when the key has been quiet for the
// stream's FlushQuiet.
func (kb *keyBuf) due(now time.Time, s *stream) bool {
	if len(kb.chunks) == 0 {
		return false
	}
	c := kb.chunks[0]
	return len(kb.chunks) > 1 || int64(len(c.data)) >= s.FlushBytes || now.Sub(c.since) >= s.FlushAge ||
		s.FlushQuiet > 0 && now.Sub(kb.lastActive) >= s.FlushQuiet
}

// due reports whether kb has a chunk to flush now.
func (b *Buffer) due(kb *keyBuf, now time.Time) bool {
	return kb.due(now, b.streams[kb.stream])
}

// Open creates the buffer, replaying the write-ahead log in walDir (with
// --ack wal or flush) and re-queueing whatever it holds that was not yet
// stored. streams is the registry: every stream, in id order.
func Open(ctx context.Context, cfg Config, walDir string, streams []StreamDef, reg prometheus.Registerer, log *slog.Logger) (*Buffer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	// The streams' queues exist before replay: replayed keys over their
	// stream's FlushBytes are queued.
	ss, err := newStreams(streams, &cfg)
	if err != nil {
		return nil, err
	}
	b := &Buffer{cfg: cfg, streams: ss, log: log, seed: maphash.MakeSeed()}
	b.stop, b.halt = context.WithCancel(context.Background())
	rm := retry.NewMetrics(reg)
	for _, s := range b.streams {
		s.retry = retry.Policy{Op: "flush_" + s.Name, Min: cfg.RetryMin, Max: cfg.RetryMax, Log: log, Metrics: rm}
		rm.Declare(s.retry.Op)
	}
	b.landedRetry = retry.Policy{Op: "resolve_unfinished_flush", Min: cfg.RetryMin, Max: cfg.RetryMax, Log: log, Metrics: rm}
	rm.Declare(b.landedRetry.Op)
	b.budget = admission.New(cfg.BufferBytes, "accepted bytes not yet stored", "--buffer-bytes")
	b.met = newMetrics(reg, b)
	for i := range b.stripes {
		b.stripes[i].keys = make(map[string]*keyBuf)
	}
	if cfg.Ack != AckMemory {
		spares := cfg.WALSpareSegments
		if spares == 0 {
			spares = -1 // the log's own zero means its default
		}
		l, err := wal.Open(walDir, wal.Options{SegmentBytes: cfg.WALSegmentBytes, SpareSegments: spares, OnSync: b.met.observeSync})
		if err != nil {
			return nil, err
		}
		if err := b.replay(ctx, l); err != nil {
			return nil, err
		}
		if err := l.Start(); err != nil {
			return nil, err
		}
		b.wal = l
	}
	for _, s := range b.streams {
		for range cfg.FlushWorkers {
			b.workersWG.Add(1)
			go b.worker(s)
		}
	}
	b.schedWG.Add(1)
	go b.scheduler()
	return b, nil
}

func (b *Buffer) stripeOf(key []byte) *stripe {
	return &b.stripes[maphash.Bytes(b.seed, key)%numStripes]
}

// Add accepts a batch; when it returns nil, the batch is as safe as --ack
// promises. The batch may be reused once Add returns.
func (b *Buffer) Add(ctx context.Context, batch *Batch) error {
	if b.closing.Load() {
		return ErrClosed
	}
	n := int64(batch.Bytes())
	if n == 0 {
		return nil
	}
	if b.cfg.Ack == AckFlush {
		// Waiting for a storage that is known to be failing would only end
		// in a timeout: refuse before anything is written.
		if err := b.refuseIfStorageDown(); err != nil {
			return err
		}
	}
	if err := b.walRoom(); err != nil {
		return err
	}
	if err := b.budget.Acquire(ctx, n, b.cfg.BudgetWait); err != nil {
		b.lastFull.Store(time.Now().UnixNano())
		b.met.full.Inc()
		return err
	}
	if b.wal == nil {
		b.insert(batch, b.memLSN.Add(1))
		return nil
	}
	rec, _ := b.records.Get().(*batchRecord)
	if rec == nil {
		rec = new(batchRecord)
	}
	lsn, err := b.wal.AppendParts(rec.encode(batch), func(lsn uint64) { b.insert(batch, lsn) })
	rec.release()
	b.records.Put(rec)
	if err != nil {
		b.budget.Release(n)
		if errors.Is(err, wal.ErrClosed) {
			return ErrClosed
		}
		return b.walFailed(err)
	}
	if b.cfg.Ack == AckFlush {
		return b.waitFlushed(ctx, batch, lsn)
	}
	return nil
}

// insert appends every group to its key's buffer.
func (b *Buffer) insert(batch *Batch, lsn uint64) {
	now := time.Now()
	b.lastAdd.Store(now.UnixNano())
	for i := range batch.groups {
		g := &batch.groups[i]
		b.addToKey(g.Stream, g.Key, g.Data, g.Lines, lsn, 0, now)
	}
}

// addToKey appends one group's lines to its key's last chunk, or a new
// one when that is full, and queues the key for flushing when it is due.
// skip is for replay: bytes of record lsn stored already, before data.
func (b *Buffer) addToKey(stream Stream, key, data []byte, lines logline.Summary, lsn uint64, skip int, now time.Time) {
	full := append(make([]byte, 0, 64), byte(stream))
	full = append(full, key...)
	st := b.stripeOf(full)
	st.mu.RLock()
	kb := st.keys[string(full)]
	if kb == nil {
		st.mu.RUnlock()
		st.mu.Lock()
		if kb = st.keys[string(full)]; kb == nil {
			kb = &keyBuf{stream: stream, key: string(key)}
			st.keys[string(full)] = kb
		}
		st.mu.Unlock()
		st.mu.RLock()
	}
	// The stripe's read lock is held while appending, so eviction (which
	// takes the write lock) never removes a key that is being written.
	kb.mu.Lock()
	var last *chunk
	if n := len(kb.chunks); n > 0 {
		last = kb.chunks[n-1]
	}
	if last == nil || (len(last.data) > 0 && int64(len(last.data)+len(data)) > b.streams[stream].FlushBytes) {
		last = &chunk{data: b.streams[stream].chunkBuffer(max(len(data), kb.lastChunk), last != nil), firstLSN: lsn, skip: skip, since: now, linesOK: true}
		kb.chunks = append(kb.chunks, last)
	}
	last.lines = last.lines.Merge(lines)
	last.linesOK = last.linesOK && lines.Count > 0
	if len(last.data)+len(data) > cap(last.data) {
		last.data = b.streams[stream].growChunk(last.data, len(data))
	}
	last.data = append(last.data, data...)
	if b.streams[stream].Checksums {
		last.sum = crc32.Update(last.sum, disk.Castagnoli, data)
	}
	last.lastLSN = lsn
	kb.lastActive = now
	enqueue := !kb.queued && !kb.flushing && b.due(kb, now)
	if enqueue {
		kb.queued = true
	}
	kb.mu.Unlock()
	st.mu.RUnlock()
	if enqueue {
		b.enqueue(kb)
	}
}

// chunkBuffer returns an empty buffer for a new chunk that will hold at
// least need bytes (the first batch's, or what the key's last chunk held).
// A key that has filled a chunk before (full), or about half of one, gets
// a whole one, a flushed one when there is a spare; a slow key starts
// small rather than reserve a whole chunk.
func (s *stream) chunkBuffer(need int, full bool) []byte {
	size := int(s.FlushBytes)
	if need > size {
		return make([]byte, 0, need)
	}
	if full || need >= size/2 {
		return s.wholeChunk()
	}
	return make([]byte, 0, min(size, max(2*need, 64<<10)))
}

// growChunk returns buf, copied into a buffer with room for n more bytes
// (at most a whole chunk: addToKey starts a new chunk rather than pass
// FlushBytes). A chunk that started small doubles, and takes a whole one
// (a spare when there is one) once it would be half of one: append's own
// growth, a quarter at a time, would copy and clear a key's first chunk
// many times over (docs/performance.md, "Moved from code comments").
func (s *stream) growChunk(buf []byte, n int) []byte {
	size := int(s.FlushBytes)
	grown := max(2*cap(buf), len(buf)+n)
	if grown < size/2 || len(buf)+n > size {
		return append(make([]byte, 0, grown), buf...)
	}
	return append(s.wholeChunk(), buf...)
}

// spareBytes bounds the flushed chunk buffers a stream keeps for new
// chunks (at least one, and at least a joined flush's: spareChunks): 8 of
// the default 4 MiB, 4 of the login stream's 8 MiB. A fresh buffer's pages
// fault in as batches are copied into it, on the log's writer goroutine;
// a sync.Pool would lose the spares at every garbage collection. A new
// chunk takes a spare before new memory, so spares are held only while the
// buffer holds less than it did.
const spareBytes = 32 << 20

// spareChunks is how many spares a stream of chunkBytes chunks keeps: at
// least the chunks one joined flush gives back at once (16, 64 MiB, for
// the logs at the default --flush-bytes), so that clients coming back
// after a slow sink fill spares, not fresh memory.
func spareChunks(chunkBytes int64, join int) int {
	return int(max(1, spareBytes/chunkBytes, int64(join)))
}

// wholeChunk returns an empty buffer of FlushBytes capacity, a spare one
// when the stream has one.
func (s *stream) wholeChunk() []byte {
	select {
	case buf := <-s.spare:
		return buf
	default:
		return make([]byte, 0, s.FlushBytes)
	}
}

// recycle keeps a flushed chunk's buffer for reuse when it is full size.
func (s *stream) recycle(buf []byte) {
	if int64(cap(buf)) != s.FlushBytes {
		return
	}
	select {
	case s.spare <- buf[:0]:
	default:
	}
}

func (b *Buffer) enqueue(kb *keyBuf) {
	b.queuesMu.RLock()
	defer b.queuesMu.RUnlock()
	if b.queuesEnd {
		return
	}
	select {
	case b.streams[kb.stream].queue <- kb:
	default:
		// The queue is full: the scheduler will find the key on its next pass.
		kb.mu.Lock()
		kb.queued = false
		kb.mu.Unlock()
	}
}

// waitFlushed blocks until every group of batch (added at lsn) is stored,
// or ctx ends, or --ack-timeout passes: then it returns ErrAckTimeout.
func (b *Buffer) waitFlushed(ctx context.Context, batch *Batch, lsn uint64) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.AckTimeout)
	defer cancel()
	for {
		ch := b.flushed.Wait()
		done := true
		for i := range batch.groups {
			g := &batch.groups[i]
			kb := b.lookup(g.Stream, g.Key)
			if kb == nil {
				continue // evicted: it had nothing left to flush
			}
			kb.mu.Lock()
			ok := kb.flushedLSN >= lsn
			kb.mu.Unlock()
			if !ok {
				done = false
				break
			}
		}
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ErrAckTimeout
		}
	}
}

func (b *Buffer) lookup(stream Stream, key []byte) *keyBuf {
	full := append(make([]byte, 0, 64), byte(stream))
	full = append(full, key...)
	st := b.stripeOf(full)
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.keys[string(full)]
}

// Ack is the --ack mode: when Add returns.
func (b *Buffer) Ack() AckMode { return b.cfg.Ack }

// AckTimeout is the longest Add waits for storage (--ack-timeout).
func (b *Buffer) AckTimeout() time.Duration { return b.cfg.AckTimeout }

// Used is the number of bytes held against the budget.
func (b *Buffer) Used() int64 { return b.budget.Used() }

// Full reports, for readiness, whether the budget is nearly used up (90%)
// or refused a batch in the last second: a load balancer should send
// elsewhere while requests are failing.
func (b *Buffer) Full() bool {
	return b.budget.Used() >= b.budget.Limit()-b.budget.Limit()/10 ||
		time.Since(time.Unix(0, b.lastFull.Load())) < time.Second
}

// forEach calls fn for every key buffer.
func (b *Buffer) forEach(fn func(kb *keyBuf)) {
	for i := range b.stripes {
		st := &b.stripes[i]
		st.mu.RLock()
		kbs := make([]*keyBuf, 0, len(st.keys))
		for _, kb := range st.keys {
			kbs = append(kbs, kb)
		}
		st.mu.RUnlock()
		for _, kb := range kbs {
			fn(kb)
		}
	}
}

// Close stops accepting batches, flushes every key and closes the WAL. When
// ctx ends first, it cancels the flushes in progress and returns once they
// have stopped: what is left unflushed stays in the WAL (with --ack wal or
// flush) and is stored exactly once when the WAL is next opened.
func (b *Buffer) Close(ctx context.Context) error {
	if b.closing.Swap(true) {
		return nil
	}
	var err error
	for {
		pending := 0
		b.forEach(func(kb *keyBuf) {
			kb.mu.Lock()
			busy := len(kb.chunks) > 0 || kb.flushing
			queue := len(kb.chunks) > 0 && !kb.queued && !kb.flushing
			if queue {
				kb.queued = true
			}
			kb.mu.Unlock()
			if busy {
				pending++
			}
			if queue {
				b.enqueue(kb)
			}
		})
		if pending == 0 {
			break
		}
		ch := b.flushed.Wait()
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			err = fmt.Errorf("cannot flush everything before the shutdown deadline: %d keys unflushed (%d bytes); they stay in the write-ahead log and are stored exactly once when it is next opened", pending, b.Used())
		}
		if err != nil {
			break
		}
	}
	b.halt()
	b.schedWG.Wait()
	b.queuesMu.Lock()
	b.queuesEnd = true
	for _, s := range b.streams {
		close(s.queue)
	}
	b.queuesMu.Unlock()
	b.workersWG.Wait()
	b.doneWG.Wait()
	if b.wal != nil {
		b.truncateWAL()
		if e := b.wal.Close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}
