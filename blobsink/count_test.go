package blobsink_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"ingest/blobsink"
	"ingest/buffer"
	"ingest/logline"
	"ingest/stats"
	"ingest/tablesink"
)

// flakyTables is a table store whose writes fail while fail is set, as
// the Table service does when it is unreachable.
type flakyTables struct {
	tablesink.Store
	fail atomic.Bool
}

func (f *flakyTables) Batch(ctx context.Context, table string, ents []tablesink.Entity) error {
	if f.fail.Load() {
		return fmt.Errorf("table service unreachable: %w", tablesink.ErrTransient)
	}
	return f.Store.Batch(ctx, table, ents)
}

// levelLines is n lines of level l in the 16:00 hour.
func levelLines(prefix string, n int, l logline.Level) []byte {
	var out []byte
	at := time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC)
	for i := range n {
		e := logline.Event{Time: at.Add(time.Duration(i) * time.Second).UnixNano(), Level: l, Service: []byte("api"),
			ID: fmt.Appendf(nil, "%s%d", prefix, i), Message: []byte("m")}
		out = logline.AppendLine(out, &e)
	}
	return out
}

// TestFlushCountsWhatItStored: each flush tells the stats table what its
// blob holds before it succeeds; a flush whose count fails fails with
// every byte stored, and its retry (nothing left to store) counts before
// anything else; recovery after a crash counts what landed, and counting
// it again changes nothing. The stats then hold exactly the blob's lines.
func TestFlushCountsWhatItStored(t *testing.T) {
	ctx := context.Background()
	blobs, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bolt, err := tablesink.OpenBolt(filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	tables := &flakyTables{Store: bolt}
	counts, err := stats.New(tables, stats.Config{Instance: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	newSink := func() *blobsink.Sink { // a process's sink: a restart is a new one
		s, err := blobsink.NewSink(blobs, blobsink.DefaultConfig(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.CountInto(counts)
		return s
	}
	key := blobsink.HourPrefix("api", time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC))
	var intent []byte
	journal := func(in []byte) error { intent = append(intent[:0], in...); return nil }
	want := func(total int64, byLevel map[logline.Level]int64) {
		t.Helper()
		got, err := stats.Read(ctx, bolt, "api", time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		var w stats.HourStats
		w.Total = total
		for l, n := range byLevel {
			w.Levels[l] = n
		}
		if got[16] != w {
			t.Fatalf("stats of 16:00 = %+v, want %+v", got[16], w)
		}
	}

	s := newSink()
	d1 := append(levelLines("a", 3, logline.LevelInfo), levelLines("b", 2, logline.LevelError)...)
	if n, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{d1}, Summaries: nil, Sums: nil, Journal: journal}); err != nil || n != len(d1) {
		t.Fatalf("Flush = %d, %v", n, err)
	}
	want(5, map[logline.Level]int64{logline.LevelInfo: 3, logline.LevelError: 2})

	tables.fail.Store(true)
	d2 := levelLines("c", 4, logline.LevelWarn)
	n, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{d2}, Summaries: nil, Sums: nil, Journal: journal})
	if err == nil || n != len(d2) {
		t.Fatalf("Flush with the stats table down = %d, %v; want every byte stored and an error", n, err)
	}
	want(5, map[logline.Level]int64{logline.LevelInfo: 3, logline.LevelError: 2})
	if _, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: nil, Summaries: nil, Sums: nil, Journal: journal}); err == nil {
		t.Fatal("the retry succeeded with the stats table still down")
	}
	tables.fail.Store(false)
	intent2 := append([]byte(nil), intent...)
	noJournal := func([]byte) error { t.Fatal("the retry of a stored flush journaled an intent"); return nil }
	if n, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: nil, Summaries: nil, Sums: nil, Journal: noJournal}); err != nil || n != 0 {
		t.Fatalf("the retry = %d, %v; want 0, nil", n, err)
	}
	want(9, map[logline.Level]int64{logline.LevelInfo: 3, logline.LevelError: 2, logline.LevelWarn: 4})

	// A crash after a flush stored its lines and before it counted them:
	// the next start resolves its intent and counts them.
	tables.fail.Store(true)
	d3 := levelLines("d", 6, logline.LevelDebug)
	if _, err := s.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{d3}, Summaries: nil, Sums: nil, Journal: journal}); err == nil {
		t.Fatal("Flush with the stats table down succeeded")
	}
	tables.fail.Store(false)
	restarted := newSink()
	if n, err := restarted.Landed(ctx, key, intent); err != nil || n != len(d3) {
		t.Fatalf("Landed = %d, %v; want %d", n, err, len(d3))
	}
	all := map[logline.Level]int64{logline.LevelInfo: 3, logline.LevelError: 2, logline.LevelWarn: 4, logline.LevelDebug: 6}
	want(15, all)
	// Resolving an intent whose counts were written already changes nothing.
	for _, in := range [][]byte{intent2, intent} {
		if _, err := newSink().Landed(ctx, key, in); err != nil {
			t.Fatal(err)
		}
	}
	want(15, all)
	if _, err := restarted.Flush(ctx, buffer.FlushRequest{Key: key, Data: [][]byte{levelLines("e", 1, logline.LevelInfo)}, Summaries: nil, Sums: nil, Journal: journal}); err != nil {
		t.Fatal(err)
	}
	got, _ := stats.Read(ctx, bolt, "api", time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))
	if got[16].Total != 16 {
		t.Fatalf("after a restarted sink's flush into a new blob, 16:00 counts %d, want 16", got[16].Total)
	}
}
