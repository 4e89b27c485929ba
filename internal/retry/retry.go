// Package retry is the one retry policy of ingest: exponential backoff with
// full jitter, capped, every retry logged and counted, and stopped by a
// context.
//
// Full jitter ("sleep a uniformly random time between zero and the current
// backoff") spreads instances that failed together over the whole window,
// so they do not retry together; the backoff doubles per retry up to Max.
//
//	p := retry.Policy{Op: "blob_flush", Log: log, Metrics: retry.NewMetrics(reg)}
//	err := p.Do(ctx, func(ctx context.Context) error { return store.Append(ctx, ...) })
//
// Every retry logs at warn level (op, attempt, wait, err) and increments
// ingest_retries_total{op}. Do returns at once, without waiting, for an
// error wrapped by Permanent, and when the context ends (with the last error).
package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Defaults for a zero Policy.
const (
	DefaultMin = 100 * time.Millisecond
	DefaultMax = 30 * time.Second
)

// Policy says how to retry one kind of operation. The zero value retries
// until the context ends, from 100 ms up to 30 s, logging to slog.Default.
type Policy struct {
	// Op names the operation in logs and in the metric's op label.
	Op string
	// Min is the backoff before the first retry, Max its cap.
	Min, Max time.Duration
	// Tries bounds the attempts (the first one included); 0 means no bound.
	Tries int
	// Log receives one warning per retry; nil means slog.Default().
	Log *slog.Logger
	// Metrics counts retries; nil counts nothing.
	Metrics *Metrics
}

// Backoff is the cap of the wait before retry n (1 for the first retry):
// Min doubled n-1 times, at most Max.
func (p Policy) Backoff(n int) time.Duration {
	lo, hi := p.bounds()
	if n < 1 {
		n = 1
	}
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// Delay is the wait before retry n: uniform over [0, Backoff(n)].
func (p Policy) Delay(n int) time.Duration {
	return rand.N(p.Backoff(n) + 1)
}

func (p Policy) bounds() (lo, hi time.Duration) {
	lo, hi = p.Min, p.Max
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi <= 0 {
		hi = DefaultMax
	}
	return lo, max(lo, hi)
}

// Do calls fn until it returns nil, a Permanent error, the attempts run out
// or ctx ends, waiting Delay(n) before retry n. It returns nil or the last
// error (unwrapped from Permanent).
func (p Policy) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return perm.err
		}
		if p.Tries > 0 && attempt >= p.Tries {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		if werr := p.Wait(ctx, attempt, err); werr != nil {
			return err
		}
	}
}

// Wait logs and counts retry number n after err, then sleeps Delay(n) or
// until ctx ends (returning ctx's error). Loops that cannot be written as
// one Do call (they keep state between attempts) call it between attempts.
func (p Policy) Wait(ctx context.Context, n int, err error, logAttrs ...any) error {
	d := p.Delay(n)
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	args := append([]any{"op", p.Op, "attempt", n, "retry_in", d.Round(time.Millisecond), "err", err}, logAttrs...)
	log.Warn(fmt.Sprintf("cannot %s, will retry", opText(p.Op)), args...)
	p.Metrics.inc(p.Op)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func opText(op string) string {
	if op == "" {
		return "complete the operation"
	}
	b := []byte(op)
	for i, c := range b {
		if c == '_' {
			b[i] = ' '
		}
	}
	return string(b)
}

// Permanent marks err as not worth retrying: Do returns it at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }
