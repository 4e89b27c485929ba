package buffer

import (
	"context"
	"errors"
	"fmt"
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
	b, err := Open(context.Background(), cfg, t.TempDir(), []Flusher{sink}, nil, quiet)
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
