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
		ok      bool
	}{
		{"fits", 100, 40, 60, true},
		{"one over", 100, 41, 60, false},
		{"larger than the budget, nothing held", 100, 0, 500, true},
		{"larger than the budget, something held", 100, 1, 500, false},
		{"zero", 100, 100, 0, true},
	}
	for _, tc := range cases {
		b := New(tc.limit, "test bytes", "--test-bytes")
		b.Force(tc.held)
		err := b.Acquire(context.Background(), tc.n, 0)
		if (err == nil) != tc.ok {
			t.Errorf("%s: Acquire = %v, want ok=%v", tc.name, err, tc.ok)
			continue
		}
		want := tc.held
		if tc.ok {
			want += tc.n
		}
		if b.Used() != want {
			t.Errorf("%s: Used = %d, want %d", tc.name, b.Used(), want)
		}
		if err != nil {
			if httperr.StatusOf(err) != 429 || httperr.RetryAfterOf(err) != RetryAfter || !errors.Is(err, ErrRefused) ||
				!strings.Contains(err.Error(), "raise --test-bytes") || !strings.Contains(err.Error(), "test bytes") {
				t.Errorf("%s: refusal %v (status %d) does not say 429, Retry-After and the flag", tc.name, err, httperr.StatusOf(err))
			}
		}
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
