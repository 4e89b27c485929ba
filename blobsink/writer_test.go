package blobsink

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"ingest/buffer"
	"ingest/logline"
)

// writerLifeCycle checks that a blob changed behind the sink's back or gone
// abandons its writer instead of wedging the key: the flush that finds out
// fails, the next one claims the next number, and every line is stored
// exactly once. It runs inside sinkSuite, on every backend.
func writerLifeCycle(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := context.Background()
	t.Run("ForeignAppendAbandonsWriter", func(t *testing.T) {
		store := newStore(t)
		s := newTestSink(t, store, Config{})
		key := HourPrefix("foreign", hour)
		d1, d2, d3 := lines("foreign", hour, 5, logline.LevelInfo), lines("foreign", hour.Add(time.Minute), 5, logline.LevelWarn), lines("foreign", hour.Add(2*time.Minute), 5, logline.LevelError)
		mustFlush(t, s, key, d1)
		first := BlobName(key, 1, CompressNone)
		foreign := lines("other", hour, 3, logline.LevelDebug)
		if err := store.Append(ctx, first, int64(len(d1)), foreign); err != nil {
			t.Fatal(err)
		}
		n, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{d2}, Summaries: nil, Sums: nil, Journal: noJournal})
		if err == nil || n != 0 {
			t.Fatalf("Flush onto a blob another writer appended to = %d, %v; want 0 and an error", n, err)
		}
		// The buffer retries: this time the flush must go through, into a new blob.
		mustFlush(t, s, key, d2)
		mustFlush(t, s, key, d3)
		wantBlob(t, store, first, append(append([]byte(nil), d1...), foreign...))
		wantBlob(t, store, BlobName(key, 2, CompressNone), append(append([]byte(nil), d2...), d3...))
		if got := testutil.ToFloat64(s.met.abandoned); got != 1 {
			t.Errorf("ingest_blob_writers_abandoned_total = %v, want 1", got)
		}
	})
	t.Run("TruncatedBlobAbandonsWriter", func(t *testing.T) {
		store := newStore(t)
		s := newTestSink(t, store, Config{})
		key := HourPrefix("touched", hour)
		d1, d2 := lines("touched", hour, 5, logline.LevelInfo), lines("touched", hour.Add(time.Minute), 5, logline.LevelInfo)
		mustFlush(t, s, key, d1)
		// Someone deletes the blob and puts an empty one in its place.
		removeBlob(t, store, BlobName(key, 1, CompressNone))
		if err := store.Create(ctx, BlobName(key, 1, CompressNone), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{d2}, Summaries: nil, Sums: nil, Journal: noJournal}); err == nil {
			t.Fatal("Flush onto a blob shorter than written succeeded")
		}
		mustFlush(t, s, key, d2)
		wantBlob(t, store, BlobName(key, 1, CompressNone), nil)
		wantBlob(t, store, BlobName(key, 2, CompressNone), d2)
	})
	t.Run("VanishedBlobAbandonsWriter", func(t *testing.T) {
		store := newStore(t)
		s := newTestSink(t, store, Config{})
		key := HourPrefix("vanished", hour)
		d1, d2 := lines("vanished", hour, 5, logline.LevelInfo), lines("vanished", hour.Add(time.Minute), 5, logline.LevelInfo)
		mustFlush(t, s, key, d1)
		removeBlob(t, store, BlobName(key, 1, CompressNone))
		if _, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{d2}, Summaries: nil, Sums: nil, Journal: noJournal}); err == nil {
			t.Fatal("Flush into a vanished blob succeeded")
		}
		mustFlush(t, s, key, d2)
		wantBlob(t, store, BlobName(key, 2, CompressNone), d2)
	})
	t.Run("LostAnswerThenForeignAppend", func(t *testing.T) {
		inner := newStore(t)
		key := HourPrefix("lostforeign", hour)
		foreign := lines("other", hour, 3, logline.LevelDebug)
		store := &flakyStore{Store: inner, loseAfterAppend: 1}
		s := newTestSink(t, store, Config{})
		d1, d2 := lines("lostforeign", hour, 5, logline.LevelInfo), lines("lostforeign", hour.Add(time.Minute), 5, logline.LevelInfo)
		n, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{d1}, Summaries: nil, Sums: nil, Journal: noJournal})
		if err == nil || n != 0 {
			t.Fatalf("Flush = %d, %v; want the lost answer reported", n, err)
		}
		// Our block landed; another writer appends after it before we retry.
		if err := inner.Append(ctx, BlobName(key, 1, CompressNone), int64(len(d1)), foreign); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{d1}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil || n != len(d1) {
			t.Fatalf("retried Flush = %d, %v; want the block found in place (%d bytes)", n, err, len(d1))
		}
		mustFlush(t, s, key, d2)
		wantBlob(t, inner, BlobName(key, 1, CompressNone), append(append([]byte(nil), d1...), foreign...))
		wantBlob(t, inner, BlobName(key, 2, CompressNone), d2)
	})
	t.Run("LandedIgnoresForeignBytes", func(t *testing.T) {
		inner := newStore(t)
		store := &flakyStore{Store: inner, failAppendsAfter: 1}
		s := newTestSink(t, store, Config{ChunkBytes: 1000})
		key := HourPrefix("crashforeign", hour)
		data := lines("crashforeign", hour, 40, logline.LevelWarn) // several blocks; one lands, then a crash
		var intent []byte
		n, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: func(b []byte) error { intent = b; return nil }})
		if err == nil || n == 0 || n == len(data) {
			t.Fatalf("Flush = %d, %v: want a partial flush", n, err)
		}
		// While we were down another writer appended more than our next block.
		first := BlobName(key, 1, CompressNone)
		foreign := lines("other", hour, 30, logline.LevelDebug)
		if err := inner.Append(ctx, first, int64(n), foreign); err != nil {
			t.Fatal(err)
		}
		s2 := newTestSink(t, inner, Config{ChunkBytes: 1000})
		landed, err := s2.Landed(ctx, key, intent)
		if err != nil || landed != n {
			t.Fatalf("Landed = %d, %v; want %d: another writer's bytes are not our blocks", landed, err, n)
		}
		mustFlush(t, s2, key, data[landed:])
		wantBlob(t, inner, first, append(append([]byte(nil), data[:n]...), foreign...))
		wantBlob(t, inner, BlobName(key, 2, CompressNone), data[n:])
	})
}

func mustFlush(t *testing.T, s *Sink, key string, data []byte) {
	t.Helper()
	if n, err := s.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil || n != len(data) {
		t.Fatalf("Flush = %d, %v; want %d, nil", n, err, len(data))
	}
}

func wantBlob(t *testing.T, s Store, name string, want []byte) {
	t.Helper()
	if got := readAll(t, s, name); !bytes.Equal(got, want) {
		t.Fatalf("blob %s holds %d bytes, want %d:\n%s", name, len(got), len(want), got)
	}
}

// removeBlob deletes a blob behind the sink's back.
func removeBlob(t *testing.T, s Store, name string) {
	t.Helper()
	switch s := s.(type) {
	case *FileStore:
		p, err := s.path(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(metaPath(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	case *AzureStore:
		if _, err := s.blob(name).Delete(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	case *flakyStore:
		removeBlob(t, s.Store, name)
	default:
		t.Fatalf("cannot remove a blob from a %T", s)
	}
}

func TestWriterStates(t *testing.T) {
	w := newWriter("k/000001.log", 1)
	if w.state != writerClaimed || !w.open() {
		t.Fatalf("a new writer is %v", w.state)
	}
	w.appended(10, Meta{Count: 1})
	if w.state != writerAppending || w.size != 10 || w.blocks != 1 || w.metaSent {
		t.Fatalf("after an append: %+v", w)
	}
	w.retire()
	if w.state != writerRetired || w.open() {
		t.Fatalf("after retire: %v", w.state)
	}
	w.abandon("changed")
	if w.state != writerAbandoned || w.open() || w.why != "changed" {
		t.Fatalf("after abandon: %v %q", w.state, w.why)
	}
	w2 := newWriter("k/000002.log", 2)
	w2.abandon("gone")
	w2.retire() // abandoned is final
	if w2.state != writerAbandoned {
		t.Fatalf("retire changed an abandoned writer to %v", w2.state)
	}
}

// metaFailing fails the first SetMetadata of one blob.
type metaFailing struct {
	Store
	blob   string
	failed bool
}

func (m *metaFailing) SetMetadata(ctx context.Context, name string, meta map[string]string) error {
	if name == m.blob && !m.failed {
		m.failed = true
		return errors.New("metadata refused by the test")
	}
	return m.Store.SetMetadata(ctx, name, meta)
}

// TestMetadataFailureIsCountedAndRetried: a blob's metadata is written
// before its blocks (so that no listing skips them); when that write
// fails, the flush fails with nothing appended, the failure is counted as
// ingest_blob_errors_total{op="metadata"}, and the flush retried stores
// every line once.
func TestMetadataFailureIsCountedAndRetried(t *testing.T) {
	files, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := HourPrefix("meta", hour)
	s := newTestSink(t, &metaFailing{Store: files, blob: BlobName(key, 1, CompressNone)}, Config{})
	data := lines("meta", hour, 10, logline.LevelInfo)
	req := buffer.FlushRequest{Key: key, Data: [][]byte{data}, Journal: noJournal}
	if _, err := s.Flush(context.Background(), req); err == nil || !strings.Contains(err.Error(), "metadata refused by the test") {
		t.Fatalf("Flush with the metadata refused: %v, want the refusal", err)
	}
	if got := testutil.ToFloat64(s.met.errors.WithLabelValues("metadata")); got != 1 {
		t.Fatalf(`ingest_blob_errors_total{op="metadata"} = %v, want 1`, got)
	}
	if n, err := s.Flush(context.Background(), req); err != nil || n != len(data) {
		t.Fatalf("Flush retried = %d, %v", n, err)
	}
	var all []byte
	for _, name := range listNames(t, files, key+"/") {
		all = append(all, readAll(t, files, name)...)
	}
	if !bytes.Equal(all, data) {
		t.Fatalf("stored %d bytes, want the %d of the flush once", len(all), len(data))
	}
}
