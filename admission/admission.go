// Package admission bounds the memory that requests may hold at once. It is
// the one place where the server decides to answer 429 with Retry-After:
// both memory budgets, the bytes of request bodies being read and parsed
// (--max-inflight-bytes) and the accepted events not yet stored
// (--buffer-bytes), are a Budget.
//
//	if err := budget.Acquire(ctx, n, 100*time.Millisecond); err != nil {
//		return err // a 429 *httperr.Error naming the flag to raise
//	}
//	defer budget.Release(n)
//
// Acquire has a non-blocking fast path (one atomic compare-and-swap); a
// reservation that does not fit waits at most the given time for others to
// release, then is refused rather than queued without bound. A single
// reservation larger than the whole budget is let through when nothing else
// is held, so it cannot wait forever.
package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"ingest/internal/httperr"
	"ingest/internal/notify"
)

// ErrRefused is wrapped by every refusal Acquire returns.
var ErrRefused = errors.New("memory budget used up")

// RetryAfter is what a refusal asks the client to wait before trying again.
const RetryAfter = time.Second

// Budget counts bytes held against a limit.
type Budget struct {
	limit int64
	what  string // what is counted, for the refusal: "request bytes in flight"
	flag  string // the flag that sets limit: "--max-inflight-bytes"
	used  atomic.Int64
	freed notify.Notifier
}

// New returns a budget of limit bytes. what names what it counts and flag
// the flag that sets it; both appear in refusals.
func New(limit int64, what, flag string) *Budget {
	return &Budget{limit: limit, what: what, flag: flag}
}

// TryAcquire reserves n bytes if they fit, without waiting.
func (b *Budget) TryAcquire(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit && used > 0 {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Acquire reserves n bytes, waiting up to wait (or until ctx ends) for
// them to fit. It returns nil or a refusal: a 429 *httperr.Error with
// Retry-After that wraps ErrRefused and names the flag to raise.
func (b *Budget) Acquire(ctx context.Context, n int64, wait time.Duration) error {
	if b.TryAcquire(n) {
		return nil
	}
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
	loop:
		for {
			ch := b.freed.Wait()
			if b.TryAcquire(n) {
				return nil
			}
			select {
			case <-ch:
			case <-timer.C:
				break loop
			case <-ctx.Done():
				break loop
			}
		}
	}
	return b.refusal(n)
}

func (b *Budget) refusal(n int64) error {
	return &httperr.Error{
		Status:     http.StatusTooManyRequests,
		Msg:        fmt.Sprintf("cannot accept the request: %s are at the limit (%d of %d bytes held, %d more needed); retry shortly, or raise %s", b.what, b.used.Load(), b.limit, n, b.flag),
		RetryAfter: RetryAfter,
		Err:        ErrRefused,
	}
}

// Force reserves n bytes whatever the limit (data that must be held, such
// as what a restart replays).
func (b *Budget) Force(n int64) { b.used.Add(n) }

// Release returns n bytes and wakes every waiter.
func (b *Budget) Release(n int64) {
	if n == 0 {
		return
	}
	b.used.Add(-n)
	b.freed.Broadcast()
}

// Used is the number of bytes held.
func (b *Budget) Used() int64 { return b.used.Load() }

// Limit is the budget's size.
func (b *Budget) Limit() int64 { return b.limit }
