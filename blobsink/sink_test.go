package blobsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"ingest/buffer"
	"ingest/internal/azurite"
	"ingest/internal/disk"
	"ingest/logline"
	"ingest/storage"
)

var hour = time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC)

// lines builds n log lines of service svc, one second apart from start.
func lines(svc string, start time.Time, n int, level logline.Level) []byte {
	var out []byte
	for i := range n {
		e := logline.Event{Time: start.Add(time.Duration(i) * time.Second).UnixNano(), Level: level,
			Service: []byte(svc), Host: []byte("h1"), ID: fmt.Appendf(nil, "id%05d", i), Message: fmt.Appendf(nil, "message %d", i)}
		out = logline.AppendLine(out, &e)
	}
	return out
}

func noJournal([]byte) error { return nil }

func readAll(t *testing.T, s Store, name string) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return decompress(t, CompressionOf(name), b)
}

// decompress returns the lines of b, blocks compressed as c.
func decompress(t *testing.T, c Compression, b []byte) []byte {
	t.Helper()
	var err error
	switch c {
	case CompressZstd:
		var d *zstd.Decoder
		if d, err = zstd.NewReader(bytes.NewReader(b)); err == nil {
			defer d.Close()
			b, err = io.ReadAll(d)
		}
	case CompressGzip:
		var r *gzip.Reader
		r, err = gzip.NewReader(bytes.NewReader(b)) // multistream by default
		if err == nil {
			b, err = io.ReadAll(r)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func listNames(t *testing.T, s Store, prefix string) []string {
	t.Helper()
	var names []string
	if err := s.List(context.Background(), prefix, func(b BlobInfo) error { names = append(names, b.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	return names
}

// newFileStore is a FileStore in a fresh temporary directory.
func newFileStore(t testing.TB) *FileStore {
	t.Helper()
	s, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatalf("cannot open a file store: %v", err)
	}
	return s
}

// stat is store.Stat(name) that fails the test on an error.
func stat(t *testing.T, store Store, name string) BlobInfo {
	t.Helper()
	info, err := store.Stat(context.Background(), name)
	if err != nil {
		t.Fatalf("cannot stat %s: %v", name, err)
	}
	return info
}

func newTestSink(t *testing.T, store Store, cfg Config) *Sink {
	t.Helper()
	if cfg.MaxBlobBytes == 0 {
		cfg.MaxBlobBytes = 256 << 20
	}
	s, err := NewSink(store, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sinkSuite runs against every backend (see store_test.go for Azure).
func sinkSuite(t *testing.T, newStore func(t *testing.T) Store) {
	t.Run("NamesLinesMetadata", func(t *testing.T) {
		store := newStore(t)
		s := newTestSink(t, store, Config{})
		key := HourPrefix("api", hour)
		data := append(lines("api", hour.Add(4*time.Minute), 10, logline.LevelInfo), lines("api", hour.Add(2*time.Minute), 5, logline.LevelError)...)
		if n, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil || n != len(data) {
			t.Fatalf("Flush = %d, %v", n, err)
		}
		more := lines("api", hour.Add(50*time.Minute), 3, logline.LevelWarn)
		if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{more}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		names := listNames(t, store, key+"/")
		if len(names) != 1 || names[0] != "api/2026/11/21/1600/000001.log" {
			t.Fatalf("blobs = %v", names)
		}
		if got := readAll(t, store, names[0]); !bytes.Equal(got, append(data, more...)) {
			t.Fatalf("blob content differs:\n%s", got)
		}
		info, err := store.Stat(context.Background(), names[0])
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]string{
			MetaLogVersion: "1.0", MetaStartTime: "2026-11-21T16:02:00.0000000Z", MetaEndTime: "2026-11-21T16:50:02.0000000Z",
			MetaLogType: "error,info,warn", MetaEventCount: "18",
			// The error lines are stored after info lines up to 2m9s newer.
			MetaLateness: "2m9s",
		} {
			if got, _ := MetaValue(info.Metadata, k); got != want {
				t.Errorf("metadata %s = %q, want %q", k, got, want)
			}
		}
	})
	t.Run("RolloverAtMaxBytes", func(t *testing.T) {
		store := newStore(t)
		s := newTestSink(t, store, Config{MaxBlobBytes: 4000, ChunkBytes: 1500})
		key := HourPrefix("roll", hour)
		data := lines("roll", hour, 100, logline.LevelInfo) // ~9 KB
		if n, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil || n != len(data) {
			t.Fatalf("Flush = %d, %v", n, err)
		}
		names := listNames(t, store, key+"/")
		if len(names) < 3 {
			t.Fatalf("want rollover into several blobs, got %v", names)
		}
		var all []byte
		var count int64
		for _, n := range names {
			info := stat(t, store, n)
			if info.Size > 4000 {
				t.Errorf("blob %s is %d bytes, over --blob-max-bytes 4000", n, info.Size)
			}
			m, ok := ParseMeta(info.Metadata)
			if !ok {
				t.Errorf("blob %s has no metadata", n)
			}
			count += m.Count
			all = append(all, readAll(t, store, n)...)
		}
		if !bytes.Equal(all, data) || count != 100 {
			t.Fatalf("rolled-over blobs hold %d bytes / %d events, want %d / 100", len(all), count, len(data))
		}
	})
	t.Run("ClaimSkipsOtherWriters", func(t *testing.T) {
		store := newStore(t)
		key := HourPrefix("shared", hour)
		// Another instance already wrote 000001 and 000002.
		for seq := 1; seq <= 2; seq++ {
			if err := store.Create(context.Background(), BlobName(key, seq, CompressNone), nil); err != nil {
				t.Fatal(err)
			}
		}
		a, b := newTestSink(t, store, Config{}), newTestSink(t, store, Config{})
		da, db := lines("shared", hour, 5, logline.LevelInfo), lines("shared", hour.Add(time.Minute), 5, logline.LevelInfo)
		if _, err := a.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{da}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{db}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, store, BlobName(key, 3, CompressNone)); !bytes.Equal(got, da) {
			t.Fatalf("first writer's blob 000003 = %q", got)
		}
		if got := readAll(t, store, BlobName(key, 4, CompressNone)); !bytes.Equal(got, db) {
			t.Fatalf("second writer's blob 000004 = %q", got)
		}
		if got := readAll(t, store, BlobName(key, 1, CompressNone)); len(got) != 0 {
			t.Fatal("a writer appended into another writer's blob")
		}
	})
	for _, c := range []Compression{CompressZstd, CompressGzip} {
		t.Run("Compressed-"+string(c), func(t *testing.T) {
			store := newStore(t)
			s := newTestSink(t, store, Config{Compression: c})
			key := HourPrefix("z", hour)
			d1, d2 := lines("z", hour, 50, logline.LevelInfo), lines("z", hour.Add(time.Hour/2), 50, logline.LevelDebug)
			for _, d := range [][]byte{d1, d2} {
				if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{d}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
					t.Fatal(err)
				}
			}
			names := listNames(t, store, key+"/")
			if len(names) != 1 || !strings.HasSuffix(names[0], c.Ext()) {
				t.Fatalf("blobs = %v", names)
			}
			if got := readAll(t, store, names[0]); !bytes.Equal(got, append(d1, d2...)) {
				t.Fatal("two compressed frames do not decode to the two flushes")
			}
		})
	}
	t.Run("LostAppendResponseDoesNotDuplicate", func(t *testing.T) {
		inner := newStore(t)
		store := &flakyStore{Store: inner, loseAfterAppend: 1}
		s := newTestSink(t, store, Config{})
		key := HourPrefix("lost", hour)
		data := lines("lost", hour, 20, logline.LevelInfo)
		n, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: noJournal})
		if err == nil {
			t.Fatal("the lost response was not reported")
		}
		// The buffer retries the rest; the sink finds the block already there.
		if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data[n:]}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, inner, BlobName(key, 1, CompressNone)); !bytes.Equal(got, data) {
			t.Fatalf("after a retried append the blob holds %d bytes, want %d exactly once", len(got), len(data))
		}
	})
	t.Run("MetadataCoversBlocksBeforeTheyLand", func(t *testing.T) {
		inner := newStore(t)
		spy := &metaSpy{Store: inner}
		s := newTestSink(t, spy, Config{ChunkBytes: 1000})
		key := HourPrefix("spy", hour)
		if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{lines("spy", hour, 10, logline.LevelInfo)}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		late := lines("spy", hour.Add(40*time.Minute), 30, logline.LevelError)
		if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{late}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		if spy.appends < 3 || spy.uncovered > 0 {
			t.Fatalf("%d of %d appends landed while the blob's metadata did not cover them: a query could skip them", spy.uncovered, spy.appends)
		}
	})
	t.Run("RolloverBeforeBlockLimit", func(t *testing.T) {
		store := newStore(t)
		s := newTestSink(t, store, Config{MaxBlocks: 3, ChunkBytes: 500})
		key := HourPrefix("blocks", hour)
		data := lines("blocks", hour, 40, logline.LevelInfo) // ~8 blocks of 500 bytes
		if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		names := listNames(t, store, key+"/")
		if len(names) < 3 {
			t.Fatalf("blobs = %v: want a new blob every 3 blocks", names)
		}
		var all []byte
		for _, n := range names {
			all = append(all, readAll(t, store, n)...)
		}
		if !bytes.Equal(all, data) {
			t.Fatal("blobs do not hold the data in order exactly once")
		}
	})
	t.Run("LandedAfterCrash", func(t *testing.T) {
		inner := newStore(t)
		store := &flakyStore{Store: inner, failAppendsAfter: 2}
		s := newTestSink(t, store, Config{ChunkBytes: 1000})
		key := HourPrefix("crash", hour)
		data := lines("crash", hour, 40, logline.LevelWarn) // several blocks; two land, then "crash"
		var intent []byte
		n, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: func(b []byte) error { intent = b; return nil }})
		if err == nil || n == 0 || n == len(data) {
			t.Fatalf("Flush = %d, %v: want a partial flush", n, err)
		}
		// A new process resolves the intent from storage alone.
		s2 := newTestSink(t, inner, Config{ChunkBytes: 1000})
		landed, err := s2.Landed(context.Background(), key, intent)
		if err != nil || landed != n {
			t.Fatalf("Landed = %d, %v; want %d", landed, err, n)
		}
		info := stat(t, inner, BlobName(key, 1, CompressNone))
		m, ok := ParseMeta(info.Metadata)
		if !ok || m.Count != int64(bytes.Count(data[:n], []byte{'\n'})) {
			t.Fatalf("metadata after recovery = %+v, %v", m, ok)
		}
		// The rest goes to a new blob: a restarted writer never appends to an old one.
		if _, err := s2.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data[landed:]}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		all := append(readAll(t, inner, BlobName(key, 1, CompressNone)), readAll(t, inner, BlobName(key, 2, CompressNone))...)
		if !bytes.Equal(all, data) {
			t.Fatal("recovered blobs do not hold every line exactly once")
		}
	})
	t.Run("OneMetadataWritePerFlush", func(t *testing.T) {
		spy := &metaCounter{Store: newStore(t)}
		s := newTestSink(t, spy, Config{})
		key := HourPrefix("meta", hour)
		total := 0
		for i := range 4 {
			before := spy.writes
			d := lines("meta", hour.Add(time.Duration(i)*time.Minute), 10+i, logline.LevelInfo)
			if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{d}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
				t.Fatal(err)
			}
			total += 10 + i
			if got := spy.writes - before; got != 1 {
				t.Fatalf("flush %d wrote the metadata %d times, want once", i+1, got)
			}
		}
		m, ok := ParseMeta(stat(t, spy, BlobName(key, 1, CompressNone)).Metadata)
		if !ok || m.Count != int64(total) || m.End != hour.Add(3*time.Minute+12*time.Second).UnixNano() {
			t.Fatalf("metadata = %+v, %v; want %d events up to the last one", m, ok, total)
		}
	})
	t.Run("JoinedChunksAreOneAppend", func(t *testing.T) {
		spy := &metaSpy{Store: newStore(t)}
		counter := &metaCounter{Store: spy}
		s := newTestSink(t, counter, Config{})
		key := HourPrefix("join", hour)
		var pieces [][]byte
		for i := range 4 { // four chunks the buffer joined, a late one among them
			pieces = append(pieces, lines("join", hour.Add(time.Duration(10-3*i)*time.Minute), 20, logline.Level(1+i%3)))
		}
		data := bytes.Join(pieces, nil)
		if n, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: pieces, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil || n != len(data) {
			t.Fatalf("Flush = %d, %v; want %d", n, err, len(data))
		}
		if spy.appends != 1 || counter.writes != 1 || spy.uncovered != 0 {
			t.Fatalf("%d appends, %d metadata writes (%d appends not covered by the metadata), want one of each, covered", spy.appends, counter.writes, spy.uncovered)
		}
		name := BlobName(key, 1, CompressNone)
		if got := readAll(t, spy, name); !bytes.Equal(got, data) {
			t.Fatal("the blob does not hold the pieces in order")
		}
		m, ok := ParseMeta(stat(t, spy, name).Metadata)
		want := scanMeta(data)
		want.ByLevel = [logline.NumLevels]int64{} // not in blob metadata
		if !ok || m != want {
			t.Fatalf("metadata = %+v, %v; want that of the lines as one run, %+v", m, ok, want)
		}
	})
	t.Run("LandedAcrossPieces", func(t *testing.T) {
		inner := newStore(t)
		store := &flakyStore{Store: inner, failAppendsAfter: 1}
		s := newTestSink(t, store, Config{ChunkBytes: 1500})
		key := HourPrefix("pieces", hour)
		var pieces [][]byte
		for i := range 4 { // blocks of 1,500 bytes span the pieces' boundaries
			pieces = append(pieces, lines("pieces", hour.Add(time.Duration(i)*time.Minute), 9, logline.LevelInfo))
		}
		data := bytes.Join(pieces, nil)
		var intent []byte
		n, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: pieces, Summaries: nil, Sums: nil, Journal: func(b []byte) error { intent = b; return nil }})
		if err == nil || n <= len(pieces[0]) || n >= len(data) {
			t.Fatalf("Flush = %d, %v: want a partial flush past the first piece (%d bytes) and short of %d", n, err, len(pieces[0]), len(data))
		}
		s2 := newTestSink(t, inner, Config{ChunkBytes: 1500})
		landed, err := s2.Landed(context.Background(), key, intent)
		if err != nil || landed != n {
			t.Fatalf("Landed = %d, %v; want %d", landed, err, n)
		}
		if _, err := s2.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data[landed:]}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		all := append(readAll(t, inner, BlobName(key, 1, CompressNone)), readAll(t, inner, BlobName(key, 2, CompressNone))...)
		if !bytes.Equal(all, data) {
			t.Fatal("recovered blobs do not hold every line exactly once")
		}
	})
	t.Run("FailedAppendMetadataCorrected", func(t *testing.T) {
		store := &flakyStore{Store: newStore(t), failAppendsAfter: 1}
		s := newTestSink(t, store, Config{})
		key := HourPrefix("fail", hour)
		if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{lines("fail", hour, 10, logline.LevelInfo)}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		// Sent ahead counting 30 more events, then the append fails.
		if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{lines("fail", hour.Add(time.Minute), 30, logline.LevelInfo)}, Summaries: nil, Sums: nil, Journal: noJournal}); err == nil {
			t.Fatal("the failed append was not reported")
		}
		store.failAppendsAfter = 0
		if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{lines("fail", hour.Add(2*time.Minute), 5, logline.LevelInfo)}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
			t.Fatal(err)
		}
		m, ok := ParseMeta(stat(t, store, BlobName(key, 1, CompressNone)).Metadata)
		if !ok || m.Count != 15 {
			t.Fatalf("metadata = %+v, %v; want the 15 events that landed", m, ok)
		}
	})
	writerLifeCycle(t, newStore)
}

// metaCounter counts metadata writes.
type metaCounter struct {
	Store
	writes int
}

func (m *metaCounter) SetMetadata(ctx context.Context, name string, meta map[string]string) error {
	m.writes++
	return m.Store.SetMetadata(ctx, name, meta)
}

// metaSpy checks, at every append, that the blob's stored metadata already
// covers the block's events.
type metaSpy struct {
	Store
	appends, uncovered int
}

func (m *metaSpy) Append(ctx context.Context, name string, offset int64, block ...[]byte) error {
	m.appends++
	info, err := m.Store.Stat(ctx, name)
	if err != nil {
		return err
	}
	meta, ok := ParseMeta(info.Metadata)
	blockMeta := scanMeta(bytes.Join(block, nil))
	if !ok || meta.Start > blockMeta.Start || meta.End < blockMeta.End || meta.Levels&blockMeta.Levels != blockMeta.Levels {
		m.uncovered++
	}
	return m.Store.Append(ctx, name, offset, block...)
}

// flakyStore injects failures into a real store.
type flakyStore struct {
	Store
	loseAfterAppend  int // this many appends land but report an error
	failAppendsAfter int // after this many successful appends, every append fails
	appends          int
}

func (f *flakyStore) Append(ctx context.Context, name string, offset int64, block ...[]byte) error {
	if f.failAppendsAfter > 0 && f.appends >= f.failAppendsAfter {
		return errors.New("connection reset")
	}
	err := f.Store.Append(ctx, name, offset, block...)
	f.appends++
	if err == nil && f.loseAfterAppend > 0 {
		f.loseAfterAppend--
		return errors.New("timeout awaiting response")
	}
	return err
}

func TestSinkOnFileStore(t *testing.T) {
	sinkSuite(t, func(t *testing.T) Store {
		s, err := NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestTornBlockIsCutOnRecovery(t *testing.T) {
	store := newFileStore(t)
	s := newTestSink(t, store, Config{ChunkBytes: 1000})
	key := HourPrefix("torn", hour)
	data := lines("torn", hour, 30, logline.LevelInfo)
	var intent []byte
	flaky := &flakyStore{Store: store, failAppendsAfter: 1}
	s.store = flaky
	n, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: func(b []byte) error { intent = b; return nil }})
	if err == nil || n == 0 || n+100 > len(data) {
		t.Fatalf("Flush = %d, %v: want one block stored, then a failure", n, err)
	}
	// Power loss mid-append: half of the next block is on disk.
	name := BlobName(key, 1, CompressNone)
	if err := store.Append(context.Background(), name, stat(t, store, name).Size, data[n:n+100]); err != nil {
		t.Fatal(err)
	}
	s2 := newTestSink(t, store, Config{ChunkBytes: 1000})
	landed, err := s2.Landed(context.Background(), key, intent)
	if err != nil || landed != n {
		t.Fatalf("Landed = %d, %v; want %d", landed, err, n)
	}
	if got := readAll(t, store, name); !bytes.Equal(got, data[:n]) {
		t.Fatalf("the torn block was not cut: %d bytes, want %d", len(got), n)
	}
}

func TestScanMeta(t *testing.T) {
	data := append(lines("m", hour.Add(time.Minute), 3, logline.LevelInfo), lines("m", hour, 2, LevelNoneForTest)...)
	m := scanMeta(data)
	if m.Count != 5 || m.Start != hour.UnixNano() || m.End != hour.Add(time.Minute+2*time.Second).UnixNano() || m.Levels.String() != "info" {
		t.Fatalf("scanMeta = %+v (%s)", m, m.Levels)
	}
}

const LevelNoneForTest = logline.LevelNone

// BenchmarkScanMeta reads the metadata of a flush's lines, of every level.
func BenchmarkScanMeta(b *testing.B) {
	var data []byte
	for _, l := range logline.Levels() {
		data = append(data, lines("bench", hour, 5000, l)...)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if m := scanMeta(data); m.Count != 30000 {
			b.Fatalf("scanMeta counted %d lines, want 30000", m.Count)
		}
	}
}

func BenchmarkSinkFlushFile(b *testing.B) {
	for _, c := range []Compression{CompressNone, CompressZstd} {
		b.Run("compression="+string(c), func(b *testing.B) {
			s, err := NewSink(newFileStore(b), Config{MaxBlobBytes: 1 << 40, Compression: c}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			data := lines("bench", hour, 20000, logline.LevelInfo) // ~2 MB
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			key := HourPrefix("bench", hour)
			for b.Loop() {
				if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestSinkOnAzure(t *testing.T) {
	conn := azurite.ConnString(t)
	client, err := (&storage.Config{ConnString: conn}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sinkSuite(t, func(t *testing.T) Store {
		n++
		s, err := NewAzureStore(t.Context(), client, fmt.Sprintf("sink%d-%d", time.Now().UnixNano()%1e9, n))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestListTop(t *testing.T) {
	conn := azurite.ConnString(t)
	client, err := (&storage.Config{ConnString: conn}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	az, err := NewAzureStore(t.Context(), client, fmt.Sprintf("top%d", time.Now().UnixNano()%1e9))
	if err != nil {
		t.Fatal(err)
	}
	fsStore := newFileStore(t)
	for name, store := range map[string]interface {
		Store
		ListTop(context.Context) ([]string, error)
	}{"file": fsStore, "azure": az} {
		for _, b := range []string{"api/2026/11/21/1600/000001.log", "api/2026/11/21/1700/000001.log", "web/2026/11/21/1600/000001.log"} {
			if err := store.Create(context.Background(), b, nil); err != nil {
				t.Fatal(err)
			}
		}
		top, err := store.ListTop(context.Background())
		if err != nil || strings.Join(top, ",") != "api,web" {
			t.Errorf("%s: ListTop = %v, %v; want [api web]", name, top, err)
		}
	}
}

// TestConcurrentKeys flushes several keys at once, as the buffer's workers
// do; run with -race it checks that keys share no unguarded writer state.
func TestConcurrentKeys(t *testing.T) {
	store := newFileStore(t)
	s := newTestSink(t, store, Config{})
	var wg sync.WaitGroup
	for k := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := fmt.Sprintf("svc%d", k)
			key := HourPrefix(svc, hour)
			for i := range 20 {
				if _, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{lines(svc, hour.Add(time.Duration(i)*time.Minute), 5, logline.LevelInfo)}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for k := range 8 {
		key := HourPrefix(fmt.Sprintf("svc%d", k), hour)
		if got := bytes.Count(readAll(t, store, BlobName(key, 1, CompressNone)), []byte{'\n'}); got != 100 {
			t.Fatalf("%s holds %d lines, want 100", key, got)
		}
	}
}

func TestEncodeBlocks(t *testing.T) {
	t.Run("FullFlushIsOneAppend", func(t *testing.T) {
		s := newTestSink(t, nil, Config{})
		one := lines("e", hour, 1, logline.LevelInfo)
		data := bytes.Repeat(one, (16<<20)/len(one)) // --flush-bytes 16MiB, four times Azure's old block limit
		chunks, err := s.encode([][]byte{data}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) != 1 {
			t.Fatalf("a %d-byte flush made %d blocks, want 1 (one append per default flush)", len(data), len(chunks))
		}
	})
	t.Run("PlainBlocksKeepThePieces", func(t *testing.T) {
		f := func(sizes []int, limit int, wantSizes []int) {
			t.Helper()
			var pieces [][]byte
			for _, n := range sizes { // lines of 10 bytes
				pieces = append(pieces, bytes.Repeat([]byte("123456789\n"), n/10))
			}
			// A summary the lines could not give (scanMeta finds no time in
			// them): a block must take it for a piece it holds whole, and
			// read the lines of a piece it holds in part.
			known := make([]logline.Summary, len(pieces))
			for i := range known {
				known[i] = logline.Summary{Start: int64(i), End: int64(i), Count: int64(1000 + i), LateKnown: true}
			}
			// Sums the bytes do not have, likewise: a block that is one
			// piece whole must take its sum, any other must checksum itself.
			sums := make([]uint32, len(pieces))
			for i := range sums {
				sums[i] = uint32(7000 + i)
			}
			for _, lines := range [][]logline.Summary{nil, known} {
				var given []uint32
				if lines != nil {
					given = sums
				}
				chunks := splitPlain(pieces, lines, given, limit)
				var got []int
				var joined []byte
				for _, c := range chunks {
					got = append(got, c.size)
					block := bytes.Join(c.encoded, nil)
					var want Meta
					for k, part := range c.encoded {
						m := scanMeta(part)
						for i, p := range pieces {
							if lines != nil && len(p) == len(part) && &p[0] == &part[0] {
								m = Meta(lines[i])
							}
						}
						if k > 0 {
							m = want.Merge(m)
						}
						want = m
					}
					if c.raw != c.size || len(block) != c.size || c.meta != want {
						t.Fatalf("splitPlain(%v, %d): a block of %d raw, %d stored, %d in pieces, metadata %+v; want them equal and %+v", sizes, limit, c.raw, c.size, len(block), c.meta, want)
					}
					wantSum := crc32.Checksum(block, disk.Castagnoli)
					for i, p := range pieces {
						if given != nil && len(c.encoded) == 1 && len(p) == len(block) && &p[0] == &c.encoded[0][0] {
							wantSum = sums[i]
						}
					}
					if got := c.checksum(); got != wantSum {
						t.Fatalf("splitPlain(%v, %d, sums %v): a block of %d bytes in %d pieces has checksum %d, want %d", sizes, limit, given != nil, len(block), len(c.encoded), got, wantSum)
					}
					joined = append(joined, block...)
				}
				if !slices.Equal(got, wantSizes) || !bytes.Equal(joined, bytes.Join(pieces, nil)) {
					t.Fatalf("splitPlain(%v, %d) = blocks %v; want %v, carrying every byte in order", sizes, limit, got, wantSizes)
				}
				if len(chunks) > 0 && len(pieces[0]) > 0 && &chunks[0].encoded[0][0] != &pieces[0][0] {
					t.Fatal("a block copied its piece instead of keeping it")
				}
			}
		}
		f([]int{40, 40, 40, 40}, 1000, []int{160})
		f([]int{40, 40, 40, 40}, 100, []int{100, 60})
		f([]int{40, 40, 40, 40}, 80, []int{80, 80})
		f([]int{250}, 100, []int{100, 100, 50})
		f([]int{30, 250}, 100, []int{100, 100, 80})
		f([]int{}, 100, nil)
		f([]int{40}, 100, []int{40})               // a flush of one chunk: the block is the piece
		f([]int{100, 60}, 100, []int{100, 60})     // each block one piece whole
		f([]int{100, 50, 30}, 100, []int{100, 80}) // one piece alone, then two
	})
	for _, c := range []Compression{CompressZstd, CompressGzip} {
		t.Run("IncompressibleSplits-"+string(c), func(t *testing.T) {
			s := newTestSink(t, nil, Config{Compression: c, ChunkBytes: 4 << 20})
			rng := rand.New(rand.NewPCG(1, 2))
			data := make([]byte, s.cfg.ChunkBytes)
			for i := range data {
				data[i] = byte(rng.IntN(256))
				if data[i] == '\n' { // lines of 1,000 bytes
					data[i] = 'x'
				}
				if i%1000 == 999 {
					data[i] = '\n'
				}
			}
			data[len(data)-1] = '\n'
			half := bytes.LastIndexByte(data[:len(data)/2], '\n') + 1
			chunks, err := s.encode([][]byte{data[:half], data[half:]}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) < 2 {
				t.Fatalf("%d blocks: incompressible lines of the full limit should need a second block", len(chunks))
			}
			var joined []byte
			for _, ch := range chunks {
				if ch.size > s.cfg.ChunkBytes || len(ch.encoded) != 1 || len(ch.encoded[0]) != ch.size {
					t.Fatalf("a block of %d bytes in %d frames, want one frame within the %d-byte block limit", ch.size, len(ch.encoded), s.cfg.ChunkBytes)
				}
				raw := decompress(t, c, ch.encoded[0])
				if len(raw) != ch.raw || raw[len(raw)-1] != '\n' {
					t.Fatal("a block does not end at a line boundary")
				}
				joined = append(joined, raw...)
			}
			if !bytes.Equal(joined, data) {
				t.Fatal("the blocks do not carry the data exactly once, in order")
			}
		})
	}
}
