package tablesink

import (
	"context"
	"testing"
	"time"
)

// TestPartitionPacer: transactions into one partition start no faster
// than the rate allows (timers never fire early, so the lower bound is
// exact), a fresh partition or table starts at once, and a cancelled
// wait returns its context's error.
func TestPartitionPacer(t *testing.T) {
	const rate, n, txns = 20_000, 100, 20 // 5 ms per transaction
	p := newPartitionPacer(func() float64 { return rate })
	ctx := context.Background()
	first := time.Now()
	for i := range txns {
		if _, err := p.wait(ctx, "logins20261128", "00a6", n); err != nil {
			t.Fatal(err)
		}
		want := time.Duration(i) * n * time.Second / rate
		if got := time.Since(first); got < want {
			t.Fatalf("transaction %d started %v after the first, want at least %v", i, got, want)
		}
	}
	for _, c := range []struct{ table, pk string }{{"logins20261128", "00a7"}, {"logins20261129", "00a6"}} {
		if waited, err := p.wait(ctx, c.table, c.pk, n); err != nil || waited != 0 {
			t.Errorf("%s/%s: waited %v (%v), want 0: another partition's writes do not hold it", c.table, c.pk, waited, err)
		}
	}
	slow := newPartitionPacer(func() float64 { return 1 })
	slow.wait(ctx, "t", "p", 100) // the next may start in 100 s
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := slow.wait(cctx, "t", "p", 100); err != context.DeadlineExceeded {
		t.Errorf("a wait past its context = %v, want %v", err, context.DeadlineExceeded)
	}
}

// TestPartitionPacerForgets: the pacer's map keeps only partitions not
// yet free to start, once it has grown past its bound.
func TestPartitionPacerForgets(t *testing.T) {
	p := newPartitionPacer(func() float64 { return 1e9 }) // every reservation ends within a nanosecond or so
	ctx := context.Background()
	for i := range 10_000 {
		p.wait(ctx, "t", string(rune('a'+i%26))+string(rune(i)), 1)
	}
	time.Sleep(time.Millisecond)
	p.wait(ctx, "t", "last", 1)
	if len(p.next) > 4097 {
		t.Fatalf("the pacer holds %d partitions, want at most 4,097", len(p.next))
	}
}
