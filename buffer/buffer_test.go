package buffer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ingest/internal/disk"
	"ingest/logline"
	"ingest/storage"
)

// memSink is a Flusher that keeps what it stores in memory, so tests can
// check exactly what reached "storage". It journals an intent like a real
// sink (the store's size before the write) and can be told to fail or to
// stop half way, as a crash would.
type memSink struct {
	mu       sync.Mutex
	stored   map[string][]byte
	failNext int           // fail this many Flush calls before storing anything
	partial  int           // store only this many bytes, then block until release is closed
	release  chan struct{} // see partial
	full     int           // Flush calls stored whole before partial applies
	calls    int
	landed   int // Landed calls
	// cutPieces are the piece sizes of the flush partial stopped.
	cutPieces []int
	// maxPieces is the most pieces a flush came in.
	maxPieces int
	// lines are the summaries of every piece stored whole, by key.
	lines map[string][]logline.Summary
	// summed counts the pieces that came with their CRC-32C; badSums
	// names those whose sum was not their bytes'.
	summed  int
	badSums []string
}

func newMemSink() *memSink {
	return &memSink{stored: map[string][]byte{}, lines: map[string][]logline.Summary{}}
}

func (m *memSink) Flush(ctx context.Context, r FlushRequest) (int, error) {
	key, pieces, lines, sums, journal := r.Key, r.Data, r.Summaries, r.Sums, r.Journal
	data := bytes.Join(pieces, nil)
	m.mu.Lock()
	m.calls++
	for i, s := range sums {
		if s == 0 {
			continue
		}
		m.summed++
		if s != crc32.Checksum(pieces[i], disk.Castagnoli) {
			m.badSums = append(m.badSums, fmt.Sprintf("%s piece %d (%d bytes)", key, i, len(pieces[i])))
		}
	}
	m.maxPieces = max(m.maxPieces, len(pieces))
	if m.failNext > 0 {
		m.failNext--
		m.mu.Unlock()
		return 0, errors.New("storage unavailable")
	}
	size := len(m.stored[key])
	m.mu.Unlock()
	if err := journal([]byte(fmt.Sprint(size))); err != nil {
		return 0, err
	}
	m.mu.Lock()
	if m.partial > 0 && m.calls > m.full {
		n := min(m.partial, len(data))
		m.stored[key] = append(m.stored[key], data[:n]...)
		for _, p := range pieces {
			m.cutPieces = append(m.cutPieces, len(p))
		}
		release := m.release
		m.mu.Unlock()
		<-release // the process "dies" here
		return n, errors.New("crashed")
	}
	m.stored[key] = append(m.stored[key], data...)
	m.lines[key] = append(m.lines[key], lines...)
	m.mu.Unlock()
	return len(data), nil
}

func (m *memSink) Landed(_ context.Context, key string, intent []byte) (int, error) {
	var before int
	fmt.Sscan(string(intent), &before)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.landed++
	return len(m.stored[key]) - before, nil
}

func (m *memSink) get(key string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return string(m.stored[key])
}

func testConfig(ack AckMode) Config {
	return Config{Ack: ack, FlushInterval: 50 * time.Millisecond, FlushBytes: 1 << 20, BufferBytes: 8 << 20,
		FlushWorkers: 2, BudgetWait: 20 * time.Millisecond}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func addLines(t *testing.T, b *Buffer, key string, from, to int) {
	t.Helper()
	addBatch(t, b, key, from, to, false)
}

// addSummarized is addLines with the lines' Summary kept as they are
// written (Group.Lines), as the logs stream's producer does: line i has
// time i µs, and level info.
func addSummarized(t *testing.T, b *Buffer, key string, from, to int) {
	t.Helper()
	addBatch(t, b, key, from, to, true)
}

func addBatch(t *testing.T, b *Buffer, key string, from, to int, summarize bool) {
	t.Helper()
	var batch Batch
	for i := from; i < to; i++ {
		g := batch.Group(0, []byte(key))
		g.Data = fmt.Appendf(g.Data, "%s line %d\n", key, i)
		g.Events++
		if summarize {
			g.Lines.Add(int64(i)*1000, logline.LevelInfo)
		}
	}
	if err := b.Add(context.Background(), &batch); err != nil {
		t.Fatal(err)
	}
}

func wantLines(key string, from, to int) string {
	var sb strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&sb, "%s line %d\n", key, i)
	}
	return sb.String()
}

// openBuffer opens a buffer on dir or fails the test.
func openBuffer(t testing.TB, cfg Config, dir string, sinks ...Flusher) *Buffer {
	t.Helper()
	b, err := Open(context.Background(), cfg, dir, streamsOf(sinks...), nil, quiet)
	if err != nil {
		t.Fatalf("cannot open the buffer: %v", err)
	}
	return b
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFlushesInOrderPerKey(t *testing.T) {
	for _, ack := range []AckMode{AckWAL, AckMemory, AckFlush} {
		t.Run(string(ack), func(t *testing.T) {
			sink := newMemSink()
			b, err := Open(context.Background(), testConfig(ack), t.TempDir(), streamsOf(sink), nil, quiet)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for k := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 200; i += 10 {
						addLines(t, b, fmt.Sprintf("k%d", k), i, i+10)
					}
				}()
			}
			wg.Wait()
			if err := b.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			for k := range 4 {
				key := fmt.Sprintf("k%d", k)
				if got, want := sink.get(key), wantLines(key, 0, 200); got != want {
					t.Fatalf("%s stored %d bytes, want %d in order", key, len(got), len(want))
				}
			}
			if b.Used() != 0 {
				t.Fatalf("budget not released: %d bytes held", b.Used())
			}
		})
	}
}

func TestFlushByInterval(t *testing.T) {
	sink := newMemSink()
	b := openBuffer(t, testConfig(AckWAL), t.TempDir(), sink)
	defer b.Close(context.Background())
	addLines(t, b, "k", 0, 3)
	waitFor(t, "the interval flush", func() bool { return sink.get("k") == wantLines("k", 0, 3) })
}

func TestAckFlushWaitsForStorage(t *testing.T) {
	sink := newMemSink()
	sink.failNext = 2 // the first two attempts fail: Add must still return only once stored
	b := openBuffer(t, testConfig(AckFlush), t.TempDir(), sink)
	defer b.Close(context.Background())
	addLines(t, b, "k", 0, 5)
	if got := sink.get("k"); got != wantLines("k", 0, 5) {
		t.Fatalf("Add with --ack flush returned before the data was stored: %q", got)
	}
}

func TestBudgetRefusesWhenFull(t *testing.T) {
	sink := newMemSink()
	sink.partial = 1
	sink.release = make(chan struct{})
	cfg := testConfig(AckMemory)
	cfg.BufferBytes, cfg.FlushBytes = 4096, 1024
	b := openBuffer(t, cfg, t.TempDir(), sink)
	var batch Batch
	g := batch.Group(0, []byte("k"))
	g.Data = bytes.Repeat([]byte("x"), 1000)
	var err error
	for range 10 {
		if err = b.Add(context.Background(), &batch); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Add past --buffer-bytes = %v, want ErrFull", err)
	}
	if b.Used() > cfg.BufferBytes {
		t.Fatalf("budget overrun: %d > %d", b.Used(), cfg.BufferBytes)
	}
	close(sink.release)
	b.kill()
}

// TestReplayAfterCrash: batches acknowledged with --ack wal survive a crash
// before any flush, and are stored exactly once after restart.
func TestReplayAfterCrash(t *testing.T) {
	dir := t.TempDir()
	sink := newMemSink()
	sink.failNext = 1 << 30 // storage is down: nothing is flushed before the crash
	cfg := testConfig(AckWAL)
	b := openBuffer(t, cfg, dir, sink)
	addLines(t, b, "a", 0, 50)
	addLines(t, b, "b", 0, 50)
	b.kill()

	sink2 := newMemSink()
	b2, err := Open(context.Background(), cfg, dir, streamsOf(sink2), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	addLines(t, b2, "a", 50, 60)
	if err := b2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sink2.get("a"); got != wantLines("a", 0, 60) {
		t.Fatalf("after replay a = %q", got)
	}
	if got := sink2.get("b"); got != wantLines("b", 0, 50) {
		t.Fatalf("after replay b = %q", got)
	}
	// A clean shutdown leaves nothing to replay.
	sink3 := newMemSink()
	b3 := openBuffer(t, cfg, dir, sink3)
	b3.Close(context.Background())
	if sink3.calls != 0 {
		t.Fatalf("a clean restart flushed again: %d calls", sink3.calls)
	}
}

// TestFlushCarriesLineSummaries: the Flusher gets each chunk's Summary when
// every batch in it came with one, and none (a zero Summary) when one did
// not, or when the chunk was rebuilt from the WAL after a crash: then the
// sink must read the lines.
func TestFlushCarriesLineSummaries(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(AckWAL)
	info := logline.LevelSet(0).Add(logline.LevelInfo)
	summarized := func(from, to int) logline.Summary {
		s := logline.Summary{Start: int64(from) * 1000, End: int64(to-1) * 1000, Levels: info, Count: int64(to - from), LateKnown: true}
		s.ByLevel[logline.LevelInfo] = int64(to - from)
		return s
	}
	f := func(sink *memSink, key string, want ...logline.Summary) {
		t.Helper()
		if got := sink.lines[key]; !slices.Equal(got, want) {
			t.Fatalf("key %s: the sink got summaries %+v, want %+v", key, got, want)
		}
	}
	// Every piece comes with the CRC-32C of its bytes, replayed ones too.
	sums := func(sink *memSink, want int) {
		t.Helper()
		if sink.summed != want || len(sink.badSums) > 0 {
			t.Fatalf("the sink got %d pieces with sums (want %d), wrong for %v", sink.summed, want, sink.badSums)
		}
	}

	sink := newMemSink()
	b := openBuffer(t, cfg, dir, sink)
	addSummarized(t, b, "a", 0, 10)
	addSummarized(t, b, "a", 10, 25) // the same chunk: merged
	addLines(t, b, "b", 0, 10)
	addSummarized(t, b, "c", 0, 10)
	addLines(t, b, "c", 10, 20) // one batch without: the chunk has none
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f(sink, "a", summarized(0, 25))
	f(sink, "b", logline.Summary{})
	f(sink, "c", logline.Summary{})
	sums(sink, 3)
	if got := sink.get("a"); got != wantLines("a", 0, 25) {
		t.Fatalf("a = %q", got)
	}

	sink.failNext = 1 << 30 // storage down: the next lines wait in the WAL
	b = openBuffer(t, cfg, dir, sink)
	addSummarized(t, b, "a", 25, 30)
	b.kill()
	sink2 := newMemSink()
	b2 := openBuffer(t, cfg, dir, sink2)
	addSummarized(t, b2, "d", 0, 5)
	if err := b2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f(sink2, "a", logline.Summary{}) // replayed
	f(sink2, "d", summarized(0, 5))
	sums(sink2, 2)
	if got := sink2.get("a"); got != wantLines("a", 25, 30) {
		t.Fatalf("after replay a = %q", got)
	}

	// A stream that does not keep sums hands none on.
	sink3 := newMemSink()
	defs := streamsOf(sink3)
	defs[0].Checksums = false
	b3, err := Open(context.Background(), cfg, t.TempDir(), defs, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	addSummarized(t, b3, "e", 0, 5)
	if err := b3.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	sums(sink3, 0)
	if got := sink3.get("e"); got != wantLines("e", 0, 5) {
		t.Fatalf("without sums e = %q", got)
	}
}

// A graceful Close waits for the WAL records that mark its flushes done,
// so the next start has no unfinished flush to ask the sink about (on
// Azure, a request per key). Every done record is held back until Close
// waits for the records, or has returned without waiting: the order in
// which a Close that does not wait loses them.
func TestCloseLeavesNoFlushToResolve(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(AckWAL)
	sink := newMemSink()
	b := openBuffer(t, cfg, dir, sink)
	waiting, closed := make(chan struct{}), make(chan struct{})
	b.doneWG.onWait = func() { close(waiting) }
	b.beforeDone = func() {
		select {
		case <-waiting:
		case <-closed:
		}
	}
	const keys = 8
	for i := range keys {
		addLines(t, b, fmt.Sprintf("k%d", i), 0, 10)
	}
	err := b.Close(context.Background())
	close(closed)
	if err != nil {
		t.Fatal(err)
	}
	b = openBuffer(t, cfg, dir, sink)
	defer b.Close(context.Background())
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.landed != 0 {
		t.Errorf("the start after a graceful Close asked the sink about %d flushes, want none", sink.landed)
	}
	if sink.calls != keys {
		t.Errorf("the sink got %d flushes, want one per key (%d)", sink.calls, keys)
	}
}

// TestCrashMidFlush: the process dies after part of a flush reached storage.
// The restart asks the sink what landed and stores only the rest.
func TestCrashMidFlush(t *testing.T) {
	dir := t.TempDir()
	sink := newMemSink()
	sink.partial = 30 // stores 30 bytes then hangs, as if killed mid-write
	sink.release = make(chan struct{})
	cfg := testConfig(AckWAL)
	b := openBuffer(t, cfg, dir, sink)
	addLines(t, b, "k", 0, 20)
	waitFor(t, "the partial write", func() bool { return len(sink.get("k")) == 30 })
	b.kill()
	defer close(sink.release)

	// "Storage" keeps what landed; a new process starts on the same WAL.
	restartAndCheck(t, cfg, dir, streamsOf(sink), sink, "k", 20)
}

// restartAndCheck lets sink store whole writes again, starts a new buffer
// on dir's WAL and closes it, and checks that sink then holds lines
// [0, n) of key, each once.
func restartAndCheck(t *testing.T, cfg Config, dir string, defs []StreamDef, sink *memSink, key string, n int) {
	t.Helper()
	sink.mu.Lock()
	sink.partial = 0
	sink.mu.Unlock()
	b, err := Open(context.Background(), cfg, dir, defs, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := sink.get(key), wantLines(key, 0, n); got != want {
		t.Fatalf("after a crash mid-flush storage holds\n%q\nwant\n%q", got, want)
	}
}

func TestWALSegmentsAreDeletedOnceStored(t *testing.T) {
	dir := t.TempDir()
	sink := newMemSink()
	cfg := testConfig(AckWAL)
	cfg.WALSegmentBytes = 4096
	b := openBuffer(t, cfg, dir, sink)
	for i := 0; i < 400; i += 20 {
		addLines(t, b, "k", i, i+20)
	}
	waitFor(t, "old segments to go", func() bool {
		if sink.get("k") != wantLines("k", 0, 400) {
			return false
		}
		b.truncateWAL()
		return b.wal.Segments() == 1
	})
	b.Close(context.Background())
}

func TestAddAfterCloseIsRefused(t *testing.T) {
	b := openBuffer(t, testConfig(AckWAL), t.TempDir(), newMemSink())
	b.Close(context.Background())
	var batch Batch
	batch.Group(0, []byte("k")).Data = []byte("x\n")
	if err := b.Add(context.Background(), &batch); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close = %v, want ErrClosed", err)
	}
}

func TestBatchGroupsReuseMemory(t *testing.T) {
	var batch Batch
	keys := [][]byte{[]byte("a/2026/11/21/1800"), []byte("b/2026/11/21/1800")}
	line := []byte("1.0;2026-11-21T18:04:05.1234567Z;info;a;h;id;\"m\";{}\n")
	run := func() {
		batch.Reset(1 << 30)
		for i := range 100 {
			g := batch.Group(0, keys[i%2])
			g.Data = append(g.Data, line...)
			g.Events++
		}
	}
	run()
	if n := testing.AllocsPerRun(50, run); n != 0 {
		t.Fatalf("building a reused batch allocates %v times", n)
	}
	if batch.events() != 100 || len(batch.Groups()) != 2 {
		t.Fatalf("batch has %d events in %d groups", batch.events(), len(batch.Groups()))
	}
}

func BenchmarkAddWAL(b *testing.B)    { benchAdd(b, AckWAL) }
func BenchmarkAddMemory(b *testing.B) { benchAdd(b, AckMemory) }

// benchAdd measures Add with 1,000-event batches of ~200-byte lines from
// parallel goroutines, the shape of the HTTP intake.
func benchAdd(b *testing.B, ack AckMode) {
	sink := &discardSink{}
	cfg := testConfig(ack)
	cfg.BufferBytes = 512 << 20
	cfg.FlushBytes = 4 << 20
	buf, err := Open(context.Background(), cfg, b.TempDir(), streamsOf(sink), nil, quiet)
	if err != nil {
		b.Fatal(err)
	}
	line := []byte(`1.0;2026-11-21T18:04:05.1234567Z;info;checkout;web-17;01JDQ8ZK3M9X2V7B4N6P8R0T2W;"user 123 paid order 456 with card ending 4242 in 87 ms";{"user":"u123","status":200,"path":"/api/pay"}` + "\n")
	const events = 1000
	b.SetBytes(int64(len(line) * events))
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		var batch Batch
		for pb.Next() {
			batch.Reset(1 << 30)
			g := batch.Group(0, []byte("checkout/2026/11/21/1800"))
			for range events {
				g.Data = append(g.Data, line...)
			}
			g.Events = events
			if err := buf.Add(context.Background(), &batch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)*events/b.Elapsed().Seconds(), "events/s")
	buf.Close(context.Background())
}

type discardSink struct{}

func (discardSink) Flush(_ context.Context, r FlushRequest) (int, error) {
	n := 0
	for _, p := range r.Data {
		n += len(p)
	}
	return n, r.Journal(nil)
}
func (discardSink) Landed(context.Context, string, []byte) (int, error) { return 0, nil }

// TestFlushesStayChunked: while a key's flush is stuck, what arrives piles
// up in chunks of at most --flush-bytes, and each later flush takes one.
func TestFlushesStayChunked(t *testing.T) {
	sink := &sizeSink{release: make(chan struct{})}
	cfg := testConfig(AckMemory)
	cfg.FlushBytes, cfg.BufferBytes = 4096, 1<<20
	b := openBuffer(t, cfg, t.TempDir(), sink)
	for i := 0; i < 4000; i += 100 {
		addLines(t, b, "k", i, i+100) // ~1.3 KB a batch, ~52 KB in all
	}
	close(sink.release)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if got := string(sink.all); got != wantLines("k", 0, 4000) {
		t.Fatal("chunked flushes did not store every line in order")
	}
	for _, n := range sink.sizes {
		if n > int(cfg.FlushBytes) {
			t.Fatalf("a flush of %d bytes, over --flush-bytes %d: %v", n, cfg.FlushBytes, sink.sizes)
		}
	}
	if len(sink.sizes) < 10 {
		t.Fatalf("flush sizes %v: want the backlog flushed in several chunks", sink.sizes)
	}
}

// TestStreamFlushBytesSetsItsChunks: a stream registered with a
// FlushBytes of its own piles up and flushes chunks of that size, while
// another stream keeps --flush-bytes.
func TestStreamFlushBytesSetsItsChunks(t *testing.T) {
	logs := &sizeSink{release: make(chan struct{})}
	logins := &sizeSink{release: make(chan struct{})}
	cfg := testConfig(AckMemory)
	cfg.FlushBytes, cfg.BufferBytes = 4096, 1<<20
	streams := streamsOf(logs, logins)
	streams[StreamLogins].FlushBytes = 16 << 10
	b, err := Open(context.Background(), cfg, t.TempDir(), streams, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4000; i += 100 {
		var batch Batch
		for s := range Stream(2) {
			g := batch.Group(s, []byte("k"))
			for j := i; j < i+100; j++ {
				g.Data = fmt.Appendf(g.Data, "k line %d\n", j)
			}
		}
		if err := b.Add(context.Background(), &batch); err != nil {
			t.Fatal(err)
		}
	}
	close(logs.release)
	close(logins.release)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sink *sizeSink
		size int
	}{{"logs", logs, 4096}, {"logins", logins, 16 << 10}} {
		c.sink.mu.Lock()
		if got := string(c.sink.all); got != wantLines("k", 0, 4000) {
			t.Fatalf("%s: the chunked flushes did not store every line in order", c.name)
		}
		if largest := slices.Max(c.sink.sizes); largest > c.size || largest <= c.size/2 {
			t.Fatalf("%s: flush sizes %v, want full chunks of at most %d bytes", c.name, c.sink.sizes, c.size)
		}
		c.sink.mu.Unlock()
	}

}

// TestStreamChunkSizes: a stream's flushes are chunks of --flush-bytes
// when it asks for no size of its own, of its own size otherwise, never
// smaller than --flush-bytes (so a stream cannot make the sink's requests
// smaller than the operator set), and never more than a quarter of
// --buffer-bytes, so that one key's backlog is flushed while it leaves
// room for the others. Each case sends one key's lines through the buffer
// and reads the chunk sizes off the flushes.
func TestStreamChunkSizes(t *testing.T) {
	const flushBytes, bufferBytes = 4 << 10, 64 << 10
	for _, c := range []struct {
		name        string
		buffer      int64 // --buffer-bytes
		ask         int64 // the stream's FlushBytes
		least, most int   // a full chunk's size
	}{
		{"not set", bufferBytes, 0, flushBytes, flushBytes},
		{"its own size", bufferBytes, 8 << 10, 8 << 10, 8 << 10},
		{"smaller than --flush-bytes", bufferBytes, 1 << 10, flushBytes, bufferBytes / 4},
		{"larger than the buffer", bufferBytes, 1 << 20, bufferBytes / 4, bufferBytes / 4},
		{"the largest size", bufferBytes, math.MaxInt64, bufferBytes / 4, bufferBytes / 4},
		{"a buffer of two chunks", 2 * flushBytes, 1 << 20, flushBytes, flushBytes},
	} {
		t.Run(c.name, func(t *testing.T) {
			sink := &sizeSink{release: make(chan struct{})}
			close(sink.release)
			cfg := testConfig(AckMemory)
			cfg.FlushInterval, cfg.FlushBytes, cfg.BufferBytes, cfg.BudgetWait = time.Hour, flushBytes, c.buffer, 5*time.Second
			streams := streamsOf(sink)
			streams[0].FlushBytes = c.ask
			b, err := Open(context.Background(), cfg, t.TempDir(), streams, nil, quiet)
			if err != nil {
				t.Fatal(err)
			}
			const lines, perBatch = 20000, 10
			largestBatch := len(wantLines("k", lines-perBatch, lines))
			for i := 0; i < lines; i += perBatch {
				var batch Batch
				g := batch.Group(0, []byte("k"))
				g.Data = fmt.Appendf(g.Data, "%s", wantLines("k", i, i+perBatch))
				if err := b.Add(context.Background(), &batch); err != nil {
					t.Fatalf("cannot add line %d of one key with --buffer-bytes %d: %v (its backlog was not flushed)", i, c.buffer, err)
				}
			}
			if err := b.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			sink.mu.Lock()
			defer sink.mu.Unlock()
			if string(sink.all) != wantLines("k", 0, lines) {
				t.Fatal("the flushes did not store every line in order")
			}
			// Every flush but the last (Close's) is a full chunk: the interval
			// is an hour, so only size made a key due.
			if len(sink.sizes) < 4 {
				t.Fatalf("flush sizes %v: want the key flushed chunk by chunk", sink.sizes)
			}
			for _, n := range sink.sizes[:len(sink.sizes)-1] {
				if n > c.most || n <= c.least-largestBatch {
					t.Fatalf("flushes of %v bytes with --flush-bytes %d, --buffer-bytes %d and a stream asking for %d: want chunks of %d..%d bytes", sink.sizes, flushBytes, c.buffer, c.ask, c.least, c.most)
				}
			}
		})
	}
}

// TestChunkBytes: over a grid of settings, a stream's chunk is never
// smaller than --flush-bytes (a chunk holds any batch the buffer takes),
// never past a quarter of --buffer-bytes unless --flush-bytes itself is
// (four keys can always fill), and what the stream asks for when that
// fits.
func TestChunkBytes(t *testing.T) {
	for _, flush := range []int64{64 << 10, 1 << 20, 4 << 20, 64 << 20} {
		for _, budget := range []int64{4 << 20, 32 << 20, 256 << 20, 4 << 30} {
			cfg := Config{FlushBytes: flush, BufferBytes: budget}
			for _, ask := range []int64{0, 1, 1 << 20, 8 << 20, 16 << 20, 1 << 30} {
				got := chunkBytes(&cfg, ask)
				fits := ask >= flush && ask <= budget/4
				switch {
				case got < flush:
					t.Errorf("flush %d, budget %d, ask %d: chunk %d is below --flush-bytes", flush, budget, ask, got)
				case got > budget/4 && got > flush:
					t.Errorf("flush %d, budget %d, ask %d: chunk %d is past a quarter of the budget", flush, budget, ask, got)
				case fits && got != ask:
					t.Errorf("flush %d, budget %d, ask %d: chunk %d, want what was asked", flush, budget, ask, got)
				case ask == 0 && got != flush:
					t.Errorf("flush %d, budget %d: a stream asking nothing got %d, want --flush-bytes", flush, budget, got)
				}
			}
		}
	}
}

// sizeSink blocks until release is closed, then records each flush's size
// and how many pieces it came in.
type sizeSink struct {
	mu      sync.Mutex
	release chan struct{}
	sizes   []int
	pieces  []int
	all     []byte
}

func (s *sizeSink) Flush(_ context.Context, r FlushRequest) (int, error) {
	<-s.release
	pieces := r.Data
	data := bytes.Join(pieces, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizes = append(s.sizes, len(data))
	s.pieces = append(s.pieces, len(pieces))
	s.all = append(s.all, data...)
	return len(data), nil
}

func (s *sizeSink) Landed(context.Context, string, []byte) (int, error) { return 0, nil }

// TestFlushRetriesAreCountedAndReportStorageDown checks the retry policy as
// the buffer uses it: every failed attempt is retried and counted under
// ingest_retries_total{op="flush_logs"}, and StorageDown is true while a
// flush keeps failing, false again once it went through.
func TestFlushRetriesAreCountedAndReportStorageDown(t *testing.T) {
	sink := newMemSink()
	sink.failNext = 1 << 30
	reg := prometheus.NewRegistry()
	cfg := testConfig(AckWAL)
	cfg.RetryMin, cfg.RetryMax = time.Millisecond, 5*time.Millisecond
	b, err := Open(context.Background(), cfg, t.TempDir(), streamsOf(sink), reg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if b.StorageDown() {
		t.Fatal("StorageDown before any flush")
	}
	addLines(t, b, "k", 0, 3)
	waitFor(t, "StorageDown while flushes fail", b.StorageDown)
	sink.mu.Lock()
	sink.failNext = 0
	sink.mu.Unlock()
	waitFor(t, "the flush after storage came back", func() bool { return sink.get("k") == wantLines("k", 0, 3) })
	waitFor(t, "StorageDown to clear", func() bool { return !b.StorageDown() })
	sink.mu.Lock()
	calls := sink.calls
	sink.mu.Unlock()
	retries := counterValue(t, reg, "ingest_retries_total", "op", "flush_logs")
	if retries < storageDownAfter || int(retries) != calls-1 {
		t.Errorf("ingest_retries_total{op=flush_logs} = %v after %d Flush calls, want %d", retries, calls, calls-1)
	}
}

// counterValue reads one labelled series of a counter family in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}

// TestCrashTwiceMidFlush: the process dies mid-flush, the restart re-queues
// the rest of that flush together with new batches of the same key, and
// dies again mid-flush. The second restart must store every line exactly
// once: the second intent covers bytes of the first flush's records.
func TestCrashTwiceMidFlush(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(AckWAL)
	cfg.FlushInterval = 300 * time.Millisecond
	sink := newMemSink()
	sink.partial = 30 // stores 30 bytes then hangs, as if killed mid-write
	sink.release = make(chan struct{})
	defer close(sink.release)
	b := openBuffer(t, cfg, dir, sink)
	addLines(t, b, "k", 0, 20)
	waitFor(t, "the first partial write", func() bool { return len(sink.get("k")) == 30 })
	b.kill()

	// The restart re-queues the rest; new lines join it before the flush.
	sink.mu.Lock()
	sink.partial = 50
	sink.mu.Unlock()
	b2 := openBuffer(t, cfg, dir, sink)
	addLines(t, b2, "k", 20, 40)
	waitFor(t, "the second partial write", func() bool { return len(sink.get("k")) == 80 })
	b2.kill()

	sink.mu.Lock()
	sink.partial = 0
	sink.mu.Unlock()
	b3 := openBuffer(t, cfg, dir, sink)
	if err := b3.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := sink.get("k"), wantLines("k", 0, 40); got != want {
		t.Fatalf("after two crashes mid-flush storage holds\n%q\nwant\n%q", got, want)
	}
}

// TestChunkGrowsInFewCopies feeds a new key batches of 40 KB: its first
// chunk must reach FlushBytes in a few doublings, not in append's steps of
// a quarter (about 20 copies of a growing buffer for a 4 MiB chunk).
func TestChunkGrowsInFewCopies(t *testing.T) {
	s := &stream{StreamDef: StreamDef{FlushBytes: 4 << 20}}
	batch := make([]byte, 40<<10)
	buf := s.chunkBuffer(len(batch), false)
	copies := 0
	for len(buf)+len(batch) <= int(s.FlushBytes) {
		if len(buf)+len(batch) > cap(buf) {
			buf = s.growChunk(buf, len(batch))
			copies++
		}
		buf = append(buf, batch...)
	}
	if copies > 6 || cap(buf) != int(s.FlushBytes) {
		t.Fatalf("a 4 MiB chunk filled 40 KB at a time was copied %d times and ended at capacity %d, want at most 6 copies and %d", copies, cap(buf), s.FlushBytes)
	}
}

// TestSpareChunksHoldAJoinedFlush: an open buffer's streams keep room for
// every chunk one joined flush gives back (so the chunks that follow come
// from spares, not fresh memory), for at least one chunk, and for no more
// than spareBytes or one join's worth, whichever is more.
func TestSpareChunksHoldAJoinedFlush(t *testing.T) {
	for _, c := range []struct {
		flush int64
		join  int
	}{{4 << 20, 0}, {4 << 20, 16}, {4 << 20, 4}, {8 << 20, 0}, {64 << 20, 0}, {64 << 20, 2}, {64 << 10, 16}} {
		cfg := testConfig(AckMemory)
		defs := streamsOf(newMemSink())
		defs[0].FlushBytes, defs[0].FlushJoin = c.flush, c.join
		cfg.BufferBytes = max(cfg.BufferBytes, 4*c.flush)
		b, err := Open(context.Background(), cfg, t.TempDir(), defs, nil, quiet)
		if err != nil {
			t.Fatal(err)
		}
		s := b.streams[0]
		room := cap(s.spare)
		if room < 1 || room < c.join || int64(room)*s.FlushBytes > max(spareBytes, int64(c.join)*s.FlushBytes, s.FlushBytes) {
			t.Errorf("chunks of %d, joins of %d: room for %d spares, want at least max(1, %d) and at most %d bytes of them",
				s.FlushBytes, c.join, room, c.join, max(spareBytes, int64(c.join)*s.FlushBytes, s.FlushBytes))
		}
		b.Close(context.Background())
	}
}

// joinSink fails its first flush once release is closed, so that flush's
// retry leaves the stream's measured rate as the test set it, and stores
// the others, recording how many pieces each came in.
type joinSink struct {
	release chan struct{}
	mu      sync.Mutex
	calls   int
	pieces  []int
}

func (s *joinSink) Flush(_ context.Context, r FlushRequest) (int, error) {
	s.mu.Lock()
	s.calls++
	first := s.calls == 1
	s.mu.Unlock()
	if first {
		<-s.release
		return 0, errors.New("the first flush fails once")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pieces = append(s.pieces, len(r.Data))
	n := 0
	for _, p := range r.Data {
		n += len(p)
	}
	return n, nil
}

func (s *joinSink) Landed(context.Context, string, []byte) (int, error) { return 0, nil }

// TestJoinedFlushGivesItsChunksToSpares: once a joined flush is stored,
// the stream keeps every chunk buffer it gives back for new chunks, so that
// batches arriving after it fill reused memory rather than fresh pages,
// even when the join is more chunks than the spares a stream otherwise
// keeps (the logs stream: 16 chunks of 4 MiB). The test piles up a key's
// chunks behind a flush held in the sink, lets the buffer drain, and
// counts the spares.
func TestJoinedFlushGivesItsChunksToSpares(t *testing.T) {
	const chunk, join = 4 << 20, 16
	sink := &joinSink{release: make(chan struct{})}
	cfg := testConfig(AckMemory)
	cfg.FlushInterval, cfg.FlushBytes, cfg.BufferBytes = time.Hour, chunk, 256<<20
	cfg.RetryMin, cfg.RetryMax = time.Millisecond, time.Millisecond
	streams := streamsOf(sink)
	streams[0].FlushJoin = join
	b, err := Open(context.Background(), cfg, t.TempDir(), streams, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	line := append(bytes.Repeat([]byte("x"), 1023), '\n')
	for range (join + 1) * 4 { // join+1 chunks of 4 batches of 1 MiB
		var batch Batch
		g := batch.Group(0, []byte("k"))
		g.Data = bytes.Repeat(line, 1<<10)
		if err := b.Add(context.Background(), &batch); err != nil {
			t.Fatal(err)
		}
	}
	// The first chunk's flush is held in the sink; the buffer now drains
	// on a link fast enough for a whole join.
	s := b.streams[0]
	s.rate.Store(1 << 40)
	b.lastAdd.Store(time.Now().Add(-time.Hour).UnixNano())
	close(sink.release)
	for deadline := time.Now().Add(30 * time.Second); b.Used() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still buffered after 30 s", b.Used())
		}
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if !slices.Equal(sink.pieces, []int{1, join}) {
		t.Fatalf("flushes of %v chunks, want the first chunk's retry and then the other %d joined", sink.pieces, join)
	}
	if n := len(s.spare); n < join {
		t.Fatalf("after a flush of %d chunks of %d bytes, the stream kept %d of their buffers as spares, want all", join, chunk, n)
	}
}

// TestFlushJoinTakesWaitingChunks: with FlushJoin, a flush that starts
// with several chunks waiting takes up to FlushJoin x FlushBytes of them,
// as separate pieces; without it every flush is one chunk.
func TestFlushJoinTakesWaitingChunks(t *testing.T) {
	for _, join := range []int{0, 4} {
		t.Run(fmt.Sprint("join ", join), func(t *testing.T) {
			sink := &sizeSink{release: make(chan struct{})}
			cfg := testConfig(AckMemory)
			cfg.FlushBytes, cfg.BufferBytes = 4096, 1<<20
			streams := streamsOf(sink)
			streams[0].FlushJoin = join
			b, err := Open(context.Background(), cfg, t.TempDir(), streams, nil, quiet)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 4000; i += 100 {
				addLines(t, b, "k", i, i+100) // ~1.3 KB a batch, ~52 KB in all
			}
			b.lastAdd.Store(0) // the batches stopped long ago: draining
			close(sink.release)
			if err := b.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			sink.mu.Lock()
			defer sink.mu.Unlock()
			if got := string(sink.all); got != wantLines("k", 0, 4000) {
				t.Fatal("the flushes did not store every line in order")
			}
			limit := max(1, join) * int(cfg.FlushBytes)
			if largest := slices.Max(sink.sizes); largest > limit {
				t.Fatalf("flush sizes %v: want at most %d bytes", sink.sizes, limit)
			}
			// Chunks of 3 batches (3.6 KB): 4 of them, or 4 and a partly
			// filled last one, fit in 16 KB.
			if got := slices.Max(sink.pieces); join == 0 && got != 1 || join > 0 && got < join {
				t.Fatalf("flushes in %v pieces: want one chunk a flush without joining, else a flush of at least %d behind the stuck one", sink.pieces, join)
			}
		})
	}
}

// TestCrashMidJoinedFlush: the process dies after a joined flush stored
// its first chunk and part of the second. The restart asks the sink what
// landed, across the chunk boundary, and stores only the rest.
func TestCrashMidJoinedFlush(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(AckWAL)
	cfg.FlushBytes = 4096
	streams := func(sink *memSink) []StreamDef {
		s := streamsOf(sink)
		s[0].FlushJoin = 4
		return s
	}
	// Storage is down: the WAL holds every chunk at the crash.
	sink := newMemSink()
	sink.failNext = 1 << 30
	b, err := Open(context.Background(), cfg, dir, streams(sink), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i += 100 {
		addLines(t, b, "k", i, i+100) // ~1.3 KB a batch, ~13 KB in all
	}
	b.kill()

	// The restart requeues the chunks. Its first flush takes one (no flush
	// measured yet); the next joins the others and dies after 6,000 of
	// their bytes: past the first chunk it took.
	sink = newMemSink()
	sink.full, sink.partial = 1, 6000
	sink.release = make(chan struct{})
	defer close(sink.release)
	b2, err := Open(context.Background(), cfg, dir, streams(sink), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	cut := func() []int {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return slices.Clone(sink.cutPieces)
	}
	waitFor(t, "the partial write", func() bool { return len(cut()) > 0 })
	b2.kill()
	if p := cut(); len(p) < 2 || p[0] >= 6000 {
		t.Fatalf("the flush cut after 6,000 bytes came in pieces %v, want the waiting chunks joined and the cut past the first", p)
	}

	restartAndCheck(t, cfg, dir, streams(sink), sink, "k", 1000)
}

func TestTakeJoinsChunksUpToTheLimit(t *testing.T) {
	f := func(sizes []int, limit int64, want []int) {
		t.Helper()
		kb := &keyBuf{}
		for i, n := range sizes {
			kb.chunks = append(kb.chunks, &chunk{data: make([]byte, n), firstLSN: uint64(10 * i), lastLSN: uint64(10*i + 5), skip: i})
		}
		r := kb.take(limit)
		var got []int
		for _, d := range r.data {
			got = append(got, len(d))
		}
		n := len(want)
		if !slices.Equal(got, want) || r.first != 0 || r.skip != 0 || r.upTo != uint64(10*(n-1)+5) || len(kb.chunks) != len(sizes)-n {
			t.Fatalf("take(%v, %d) = pieces %v, LSNs %d-%d skip %d, %d left; want pieces %v, LSNs 0-%d skip 0, %d left",
				sizes, limit, got, r.first, r.upTo, r.skip, len(kb.chunks), want, 10*(n-1)+5, len(sizes)-n)
		}
		if r.size != sum(want) || kb.lastChunk != want[n-1] {
			t.Fatalf("take(%v, %d): size %d, last chunk %d; want %d, %d", sizes, limit, r.size, kb.lastChunk, sum(want), want[n-1])
		}
	}
	f([]int{4, 4, 4, 4, 4, 4}, 16, []int{4, 4, 4, 4})
	f([]int{4, 4}, 16, []int{4, 4})
	f([]int{3, 4, 4}, 8, []int{3, 4})
	f([]int{4, 4}, 4, []int{4})
	f([]int{20, 4}, 16, []int{20}) // a batch over the chunk size goes alone
	f([]int{4, 20}, 16, []int{4})
}

func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}

func TestAfterDropsLeadingBytes(t *testing.T) {
	pieces := [][]byte{[]byte("abc"), []byte("de"), []byte("fgh")}
	// Each piece's summary counts its bytes, so that which one stayed with
	// which piece shows; a piece cut short must lose its summary.
	// Its sum is its length, too.
	r := run{data: pieces, lines: []logline.Summary{{Count: 3}, {Count: 2}, {Count: 3}}, sums: []uint32{3, 2, 3}}
	f := func(n int, want []string, wantCounts []int64) {
		t.Helper()
		var got []string
		data, lines, sums := after(r, n)
		for _, p := range data {
			got = append(got, string(p))
		}
		var counts []int64
		for i, s := range lines {
			counts = append(counts, s.Count)
			if int64(sums[i]) != s.Count {
				t.Fatalf("after(%d): piece %q has sum %d and count %d, want them equal", n, data[i], sums[i], s.Count)
			}
		}
		if !slices.Equal(got, want) || !slices.Equal(counts, wantCounts) {
			t.Fatalf("after(%d) = %q with counts %v, want %q with %v", n, got, counts, want, wantCounts)
		}
	}
	f(0, []string{"abc", "de", "fgh"}, []int64{3, 2, 3})
	f(1, []string{"bc", "de", "fgh"}, []int64{0, 2, 3})
	f(3, []string{"de", "fgh"}, []int64{2, 3})
	f(4, []string{"e", "fgh"}, []int64{0, 3})
	f(7, []string{"h"}, []int64{0})
	f(8, nil, nil)
	if string(bytes.Join(pieces, nil)) != "abcdefgh" || r.lines[0].Count != 3 || r.sums[0] != 3 {
		t.Fatal("after changed its arguments")
	}
}

// TestJoinBytes: what a flush takes is at least one chunk and at most
// FlushJoin of them; one chunk while batches keep coming (a joined flush
// holds memory that waiting requests need) or while no flush was
// measured; a join of all FlushJoin chunks while draining on a link
// that stores them in a second; and never more than a flush at the stream's last measured rate
// stores in half of a storage request's default timeout
// (--storage-try-timeout), so that a join on a slow link is not abandoned
// and retried whole.
func TestJoinBytes(t *testing.T) {
	cfg := testConfig(AckMemory)
	b, err := Open(context.Background(), cfg, t.TempDir(), streamsOf(newMemSink()), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	s := b.streams[0]
	chunk := s.FlushBytes
	timeout := storage.DefaultConfig().TryTimeout
	for _, join := range []int{0, 1, 4, 16, 1 << 20} {
		chunks := int64(max(1, join))
		for _, rate := range []int64{0, 1, chunk / 60, chunk / 7, chunk, 3 * chunk, 100 * chunk, 1 << 50} {
			for _, idle := range []time.Duration{0, 10 * time.Millisecond, time.Minute, 1000 * time.Hour} {
				s.FlushJoin = join
				s.rate.Store(rate)
				b.lastAdd.Store(time.Now().Add(-idle).UnixNano())
				got := b.joinBytes(s)
				where := fmt.Sprintf("FlushJoin %d, last flush at %d bytes/s, %v since the last batch: a flush takes %d bytes (%d-byte chunks)", join, rate, idle, got, chunk)
				switch {
				case got < chunk:
					t.Errorf("%s, want at least one chunk", where)
				case got > chunks*chunk:
					t.Errorf("%s, want at most %d chunks", where, chunks)
				case got > chunk && (idle < 100*time.Millisecond || rate == 0):
					t.Errorf("%s, want one chunk while batches come or before a flush was measured", where)
				case got > chunk && float64(got)/float64(rate) > timeout.Seconds()/2:
					t.Errorf("%s, a join that takes over half of %v at that rate", where, timeout)
				case idle >= time.Minute && chunks*chunk <= rate && got != chunks*chunk:
					t.Errorf("%s, want all %d chunks joined while draining on a link that stores them in a second", where, chunks)
				}
			}
		}
	}
}

// TestFlushRateIsMeasured: a flush stored at its first attempt sets the
// stream's rate; joins follow it.
func TestFlushRateIsMeasured(t *testing.T) {
	sink := newMemSink()
	cfg := testConfig(AckMemory)
	b, err := Open(context.Background(), cfg, t.TempDir(), streamsOf(sink), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if r := b.streams[0].rate.Load(); r != 0 {
		t.Fatalf("rate before any flush = %d, want 0", r)
	}
	addLines(t, b, "k", 0, 10) // flushed at the flush interval
	waitFor(t, "the flush's rate", func() bool { return b.streams[0].rate.Load() > 0 })
	if sink.get("k") != wantLines("k", 0, 10) {
		t.Fatal("a rate was set before the lines were stored")
	}
	var s stream
	s.noteRate(3<<20, 1500*time.Millisecond)
	if got := s.rate.Load(); got != 2<<20 {
		t.Fatalf("noteRate(3 MiB, 1.5 s) set %d B/s, want %d", got, 2<<20)
	}
}
