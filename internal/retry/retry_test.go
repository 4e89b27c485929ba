package retry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestBackoff(t *testing.T) {
	p := Policy{Min: 100 * time.Millisecond, Max: time.Second}
	f := func(n int, want time.Duration) {
		t.Helper()
		if got := p.Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
	f(0, 100*time.Millisecond)
	f(1, 100*time.Millisecond)
	f(2, 200*time.Millisecond)
	f(4, 800*time.Millisecond)
	f(5, time.Second) // capped
	f(1000, time.Second)

	var zero Policy
	if got := zero.Backoff(1); got != DefaultMin {
		t.Errorf("zero Policy Backoff(1) = %v, want %v", got, DefaultMin)
	}
	if got := zero.Backoff(100); got != DefaultMax {
		t.Errorf("zero Policy Backoff(100) = %v, want %v", got, DefaultMax)
	}
}

// TestDelayIsFullJitter checks that delays cover [0, Backoff] with a mean
// near half of it: neither a constant nor a shifted window.
func TestDelayIsFullJitter(t *testing.T) {
	p := Policy{Min: 100 * time.Millisecond, Max: time.Second}
	for _, n := range []int{1, 3, 10} {
		cap := p.Backoff(n)
		var sum time.Duration
		lo, hi := cap, time.Duration(0)
		const samples = 4000
		for range samples {
			d := p.Delay(n)
			if d < 0 || d > cap {
				t.Fatalf("Delay(%d) = %v, outside [0, %v]", n, d, cap)
			}
			sum += d
			lo, hi = min(lo, d), max(hi, d)
		}
		mean := sum / samples
		if mean < cap*4/10 || mean > cap*6/10 {
			t.Errorf("Delay(%d): mean %v, want about %v (half the backoff)", n, mean, cap/2)
		}
		if lo > cap/10 || hi < cap*9/10 {
			t.Errorf("Delay(%d): samples span [%v, %v], want most of [0, %v]", n, lo, hi, cap)
		}
	}
}

func TestDo(t *testing.T) {
	errBusy := errors.New("server busy")
	fast := Policy{Op: "test_op", Min: time.Microsecond, Max: time.Millisecond}

	t.Run("succeeds after failures, each retry logged and counted", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		var logs bytes.Buffer
		p := fast
		p.Metrics = NewMetrics(reg)
		p.Log = slog.New(slog.NewTextHandler(&logs, nil))
		calls := 0
		err := p.Do(context.Background(), func(context.Context) error {
			calls++
			if calls < 4 {
				return errBusy
			}
			return nil
		})
		if err != nil || calls != 4 {
			t.Fatalf("Do = %v after %d calls, want nil after 4", err, calls)
		}
		if got := testutil.ToFloat64(p.Metrics.retries.WithLabelValues("test_op")); got != 3 {
			t.Errorf("ingest_retries_total{op=test_op} = %v, want 3", got)
		}
		if got := p.Metrics.Count("test_op"); got != 3 {
			t.Errorf("Count = %v, want 3", got)
		}
		if n := strings.Count(logs.String(), "cannot test op, will retry"); n != 3 {
			t.Errorf("%d retry warnings logged, want 3:\n%s", n, logs.String())
		}
		if !strings.Contains(logs.String(), "server busy") || !strings.Contains(logs.String(), "attempt=3") {
			t.Errorf("the warnings lack the error or the attempt:\n%s", logs.String())
		}
	})

	t.Run("permanent error stops at once", func(t *testing.T) {
		calls := 0
		err := fast.Do(context.Background(), func(context.Context) error {
			calls++
			return Permanent(errBusy)
		})
		if calls != 1 || err != errBusy {
			t.Errorf("Do = %v after %d calls, want the unwrapped error after 1", err, calls)
		}
	})

	t.Run("tries bound the attempts", func(t *testing.T) {
		p := fast
		p.Tries = 3
		calls := 0
		err := p.Do(context.Background(), func(context.Context) error { calls++; return errBusy })
		if calls != 3 || !errors.Is(err, errBusy) {
			t.Errorf("Do = %v after %d calls, want errBusy after 3", err, calls)
		}
	})

	t.Run("context end stops the wait", func(t *testing.T) {
		p := Policy{Op: "slow", Min: time.Hour, Max: time.Hour, Log: slog.New(slog.DiscardHandler)}
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		done := make(chan error, 1)
		go func() {
			done <- p.Do(ctx, func(context.Context) error { calls++; return errBusy })
		}()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, errBusy) {
				t.Errorf("Do = %v, want the last error", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Do kept waiting after its context ended")
		}
	})
}

func TestNewMetricsSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := NewMetrics(reg), NewMetrics(reg)
	a.inc("x")
	b.inc("x")
	if got := a.Count("x"); got != 2 {
		t.Errorf("two Metrics on one registry count %v, want 2 (one shared counter)", got)
	}
	var none *Metrics
	none.inc("x") // nil counts nothing and does not panic
	if none.Count("x") != 0 {
		t.Error("nil Metrics counted")
	}
}
