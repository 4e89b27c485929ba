package buffer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ingest/internal/httperr"
)

// TestWALMaxBytes: while storage is down the WAL grows only up to
// --wal-max-bytes; past it batches get a 503 naming the flag, and once
// storage is back the WAL shrinks and batches are taken again.
func TestWALMaxBytes(t *testing.T) {
	sink := newMemSink()
	sink.failNext = 1 << 30 // storage down
	cfg := testConfig(AckWAL)
	cfg.WALSegmentBytes, cfg.WALMaxBytes = 4<<10, 16<<10
	cfg.RetryMin, cfg.RetryMax = time.Millisecond, 20*time.Millisecond
	b, err := Open(context.Background(), cfg, t.TempDir(), streamsOf(sink), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())

	add := func(i int) error {
		var batch Batch
		g := batch.Group(0, []byte("k"))
		g.Data = fmt.Appendf(g.Data, "k line %d %s\n", i, strings.Repeat("x", 1000))
		g.Events++
		return b.Add(context.Background(), &batch)
	}
	accepted := 0
	var refusal error
	for i := range 1000 {
		if err := add(i); err != nil {
			refusal = err
			break
		}
		accepted++
	}
	if refusal == nil {
		t.Fatalf("1000 batches of 1 KB accepted with storage down and --wal-max-bytes 16 KiB")
	}
	if httperr.StatusOf(refusal) != 503 || httperr.RetryAfterOf(refusal) <= 0 || !errors.Is(refusal, ErrWALFull) ||
		!strings.Contains(refusal.Error(), "--wal-max-bytes") {
		t.Fatalf("refusal = %d %q (Retry-After %v); want 503 + Retry-After naming --wal-max-bytes",
			httperr.StatusOf(refusal), refusal, httperr.RetryAfterOf(refusal))
	}
	if got := b.wal.Bytes(); got > cfg.WALMaxBytes+2<<10 {
		t.Errorf("the WAL holds %d bytes, over --wal-max-bytes %d by more than one batch", got, cfg.WALMaxBytes)
	}
	if b.WALErr() == nil {
		t.Error("WALErr is nil while batches are refused: /readyz would say ready")
	}

	// Storage is back: what was accepted is stored, the WAL shrinks, and
	// batches are taken again without a restart.
	sink.mu.Lock()
	sink.failNext = 0
	sink.mu.Unlock()
	waitFor(t, "the WAL to shrink below --wal-max-bytes", func() bool { return b.WALErr() == nil })
	if err := add(accepted); err != nil {
		t.Fatalf("Add after storage came back = %v", err)
	}
	accepted++
	waitFor(t, "every accepted batch stored", func() bool { return strings.Count(sink.get("k"), "\n") == accepted })
}

// TestReplayAfterTornTail: a crash in the middle of writing a record (the
// batch was never acknowledged) leaves half a record at the end of the WAL;
// the next start cuts it off and stores every acknowledged batch once.
func TestReplayAfterTornTail(t *testing.T) {
	dir := t.TempDir()
	sink := newMemSink()
	sink.failNext = 1 << 30 // storage is down: nothing is flushed before the crash
	cfg := testConfig(AckWAL)
	b, err := Open(context.Background(), cfg, dir, streamsOf(sink), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	addLines(t, b, "a", 0, 30)
	b.kill()
	segs, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	if len(segs) == 0 {
		t.Fatal("no WAL segment")
	}
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A header announcing 4000 bytes, then only part of them.
	torn := append([]byte{0xa0, 0x0f, 0, 0, 1, 2, 3, 4, 99, 0, 0, 0, 0, 0, 0, 0}, bytes.Repeat([]byte("x"), 100)...)
	if _, err := f.Write(torn); err != nil {
		t.Fatal(err)
	}
	f.Close()

	sink2 := newMemSink()
	b2, err := Open(context.Background(), cfg, dir, streamsOf(sink2), nil, quiet)
	if err != nil {
		t.Fatalf("cannot start after a torn last record: %v", err)
	}
	addLines(t, b2, "a", 30, 40)
	if err := b2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sink2.get("a"); got != wantLines("a", 0, 40) {
		t.Fatalf("after a torn tail a = %q, want lines 0..39 once", got)
	}
}
