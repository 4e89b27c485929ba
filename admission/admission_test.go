package admission

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"ingest/internal/httperr"
)

func TestAcquire(t *testing.T) {
	cases := []struct {
		name    string
		limit   int64
		held, n int64
		status  int // 0: reserved
	}{
		{"fits", 100, 40, 60, 0},
		{"one over", 100, 41, 60, 429},
		{"the whole budget", 100, 0, 100, 0},
		// Never admitted, even into an empty budget: it would take the
		// server past the limit, and no wait can make it fit.
		{"larger than the budget, nothing held", 100, 0, 500, 413},
		{"larger than the budget, something held", 100, 1, 500, 413},
		{"zero", 100, 100, 0, 0},
	}
	for _, tc := range cases {
		b := New(tc.limit, "test bytes", "--test-bytes")
		b.Force(tc.held)
		err := b.Acquire(context.Background(), tc.n, 0)
		if got := httperr.StatusOf(err); (err == nil) != (tc.status == 0) || err != nil && got != tc.status {
			t.Errorf("%s: Acquire = %v (status %d), want status %d", tc.name, err, got, tc.status)
			continue
		}
		want := tc.held
		if err == nil {
			want += tc.n
		}
		if b.Used() != want {
			t.Errorf("%s: Used = %d, want %d", tc.name, b.Used(), want)
		}
		if err != nil {
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "raise --test-bytes") || !strings.Contains(err.Error(), "test bytes") {
				t.Errorf("%s: refusal %v does not name what is counted and the flag", tc.name, err)
			}
			if retry := httperr.RetryAfterOf(err); (tc.status == 429) != (retry == RetryAfter) {
				t.Errorf("%s: status %d with Retry-After %v", tc.name, tc.status, retry)
			}
		}
	}
}

// A Hold reserves step by step; the step that would take the request past
// the whole budget is a 413 at once (not a wait), while one that only does
// not fit now waits and then is a 429. Release returns every step.
func TestHold(t *testing.T) {
	b := New(100, "test bytes", "--test-bytes")
	var h Hold
	h.Begin(b, context.Background(), 10*time.Millisecond)
	for range 3 {
		if err := h.Reserve(30); err != nil {
			t.Fatalf("Reserve(30): %v", err)
		}
	}
	start := time.Now()
	if err := h.Reserve(20); httperr.StatusOf(err) != 413 || !strings.Contains(err.Error(), "110 bytes") {
		t.Fatalf("Reserve past the whole budget = %v (status %d), want 413 naming the 110 bytes needed", err, httperr.StatusOf(err))
	}
	if waited := time.Since(start); waited >= 10*time.Millisecond {
		t.Errorf("a reservation that can never fit waited %v", waited)
	}
	if h.Held() != 90 || b.Used() != 90 {
		t.Fatalf("held %d, used %d after a refusal; want 90", h.Held(), b.Used())
	}
	var other Hold
	other.Begin(b, context.Background(), 10*time.Millisecond)
	if err := other.Reserve(20); httperr.StatusOf(err) != 429 {
		t.Fatalf("Reserve that fits the budget but not now = %v, want 429", err)
	}
	h.Release()
	if err := other.Reserve(20); err != nil {
		t.Fatalf("Reserve after the other request released: %v", err)
	}
	other.Release()
	if b.Used() != 0 {
		t.Fatalf("Used = %d after both released", b.Used())
	}
}

// A waiter gets the bytes a release frees within its wait.
func TestAcquireWaitsForRelease(t *testing.T) {
	b := New(100, "test bytes", "--test-bytes")
	b.Force(100)
	go func() {
		time.Sleep(20 * time.Millisecond)
		b.Release(50)
	}()
	if err := b.Acquire(context.Background(), 50, time.Minute); err != nil {
		t.Fatalf("Acquire after a release: %v", err)
	}
	if b.Used() != 100 {
		t.Fatalf("Used = %d, want 100", b.Used())
	}
}

// The wait ends with the context: a deadline bounds it whatever wait says.
func TestAcquireEndsWithContext(t *testing.T) {
	b := New(100, "test bytes", "--test-bytes")
	b.Force(100)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.Acquire(ctx, 1, time.Hour); !errors.Is(err, ErrRefused) {
		t.Fatalf("Acquire past the context's deadline = %v, want a refusal", err)
	}
	if b.Used() != 100 {
		t.Fatalf("a refusal reserved bytes: Used = %d", b.Used())
	}
}

// Many goroutines acquiring and releasing never leave bytes counted.
func TestAcquireReleaseConcurrent(t *testing.T) {
	b := New(1000, "test bytes", "--test-bytes")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if b.Acquire(context.Background(), 100, time.Second) == nil {
					if u := b.Used(); u > 1000 {
						t.Errorf("Used = %d over the limit", u)
					}
					b.Release(100)
				}
			}
		}()
	}
	wg.Wait()
	if b.Used() != 0 {
		t.Fatalf("Used = %d after every release", b.Used())
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	bud := New(1<<30, "test bytes", "--test-bytes")
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := bud.Acquire(ctx, 4096, time.Millisecond); err != nil {
				b.Fatal(err)
			}
			bud.Release(4096)
		}
	})
}

// Grow reserves before it allocates: a new buffer's growth, room in a
// pooled buffer's capacity a step at a time; near the end of the budget it
// asks for what is needed, not a doubling, and a refusal leaves the buffer
// as it was.
func TestGrow(t *testing.T) {
	b := New(1<<20, "test bytes", "--test-bytes")
	var h Hold
	h.Begin(b, context.Background(), 0)
	counted := 0
	buf, err := Grow(&h, nil, 10, 0, &counted)
	if err != nil || cap(buf) < 10 || counted != cap(buf) || h.Held() != int64(counted) {
		t.Fatalf("from nil: cap %d, counted %d, held %d, %v", cap(buf), counted, h.Held(), err)
	}
	buf = append(buf, make([]byte, cap(buf))...) // full
	before := h.Held()
	buf2, err := Grow(&h, buf, 1, 0, &counted)
	if err != nil || cap(buf2) != 2*cap(buf) || h.Held() != before+int64(cap(buf2)-cap(buf)) || counted != cap(buf2) {
		t.Fatalf("doubling: cap %d -> %d, held %d -> %d, %v", cap(buf), cap(buf2), before, h.Held(), err)
	}
	// A pooled buffer: its capacity is reserved as it is used, in steps,
	// without a new allocation.
	pooled := make([]byte, 0, 512<<10)
	counted = 0
	h.Release()
	h.Begin(b, context.Background(), 0)
	got, err := Grow(&h, pooled, 100, 0, &counted)
	if err != nil || &got[:1][0] != &pooled[:1][0] || counted < 100 || counted > 2*growStep || h.Held() != int64(counted) {
		t.Fatalf("pooled: counted %d, held %d, same buffer %v, %v", counted, h.Held(), &got[:1][0] == &pooled[:1][0], err)
	}
	// Near the end of the budget: what is left, not a doubling.
	h.Release()
	h.Begin(b, context.Background(), 0)
	big := make([]byte, 200<<10) // as if reserved
	if err := h.Reserve(1<<20 - 150<<10); err != nil {
		t.Fatal(err)
	}
	counted = len(big)
	grown, err := Grow(&h, big, 50<<10, 0, &counted)
	if err != nil || cap(grown) != len(big)+150<<10 {
		t.Fatalf("near the end: cap %d, want %d, what is left; %v", cap(grown), len(big)+150<<10, err)
	}
	// Past it: the 413, and the buffer unchanged.
	same, err := Grow(&h, grown, 200<<10, 0, &counted)
	if httperr.StatusOf(err) != 413 || &same[0] != &grown[0] {
		t.Fatalf("past the budget: %v", err)
	}
}
