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
// release, then is refused rather than queued without bound. No reservation
// ever takes the budget past its limit: one larger than the whole budget
// can never fit and is refused at once with 413, not 429, since retrying
// cannot help.
//
// A Hold is one request's share of a budget, reserved a step at a time as
// the request's memory grows; past the whole budget, its next step is the
// 413:
//
//	var h admission.Hold
//	h.Begin(budget, ctx, 100*time.Millisecond)
//	defer h.Release()
//	if err := h.Reserve(64 << 10); err != nil {
//		return err // 429 (wait and retry) or 413 (never fits: split the request)
//	}
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
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Acquire reserves n bytes, waiting up to wait (or until ctx ends) for
// them to fit. It returns nil or a refusal that wraps ErrRefused and names
// the flag to raise: a 429 *httperr.Error with Retry-After, or a 413 when n
// is more than the whole budget.
func (b *Budget) Acquire(ctx context.Context, n int64, wait time.Duration) error {
	if b.TryAcquire(n) {
		return nil
	}
	if n > b.limit {
		return b.tooLarge(n)
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

// tooLarge is the refusal of a reservation that can never fit.
func (b *Budget) tooLarge(n int64) error {
	return &httperr.Error{
		Status: http.StatusRequestEntityTooLarge,
		Msg:    fmt.Sprintf("cannot accept the request: it needs %d bytes of %s, more than the whole limit (%d bytes); split it into smaller requests, or raise %s", n, b.what, b.limit, b.flag),
		Err:    ErrRefused,
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

// Hold is what one request holds of a Budget. Its zero value holds
// nothing; Begin ties it to a budget. Not safe for concurrent use.
type Hold struct {
	b    *Budget
	ctx  context.Context
	wait time.Duration
	n    int64
}

// Begin ties h, holding nothing, to b: each Reserve waits up to wait, or
// until ctx ends, for its bytes.
func (h *Hold) Begin(b *Budget, ctx context.Context, wait time.Duration) {
	*h = Hold{b: b, ctx: ctx, wait: wait}
}

// Reserve adds n bytes to what h holds. Past the whole budget (what h
// holds and n together) it is the 413 refusal at once, without waiting:
// the request can never fit, whatever others release.
func (h *Hold) Reserve(n int64) error {
	if n <= 0 {
		return nil
	}
	if h.n+n > h.b.limit {
		return h.b.tooLarge(h.n + n)
	}
	if err := h.b.Acquire(h.ctx, n, h.wait); err != nil {
		return err
	}
	h.n += n
	return nil
}

// Held is how many bytes h holds.
func (h *Hold) Held() int64 { return h.n }

// Left is how many more bytes h could reserve before the whole budget (the
// 413): what others hold may keep them from it for now.
func (h *Hold) Left() int64 { return h.b.limit - h.n }

// Release returns everything h holds and forgets its context.
func (h *Hold) Release() {
	if h.b != nil {
		h.b.Release(h.n)
	}
	*h = Hold{}
}

// Memory is what Grow reserves from: a request's *Hold.
type Memory interface {
	Reserve(n int64) error
	Left() int64
}

// growStep is the least Grow reserves at a time within a buffer's
// capacity; growFirst the least capacity it allocates.
const growStep, growFirst = 64 << 10, 4 << 10

// Grow returns buf with room for n more bytes, at most most bytes in all
// (0: no bound), reserving from m the memory that takes before it is used;
// *counted is how much of buf's capacity is reserved. Room within the
// capacity buf has (a pooled buffer's) is reserved a step at a time, at
// least 64 KiB and doubling. Past it, the new buffer's growth is reserved
// before it is allocated; the new buffer (4 KiB at first) doubles, but asks
// for no more than m has left when the need fits in that. The old buffer is garbage:
// the budget counts what requests hold, the collector's soft memory limit
// (set above the budgets) bounds what they dropped. On a refusal, buf is
// returned unchanged with m's error.
func Grow(m Memory, buf []byte, n, most int, counted *int) ([]byte, error) {
	need := len(buf) + n
	if need <= *counted && need <= cap(buf) {
		return buf, nil
	}
	if need <= cap(buf) {
		to := max(need, min(cap(buf), 2**counted+growStep))
		if most > 0 {
			to = max(need, min(to, most))
		}
		if err := m.Reserve(int64(to - *counted)); err != nil {
			return buf, err
		}
		*counted = to
		return buf, nil
	}
	grown := max(2*cap(buf), growFirst)
	if most > 0 {
		grown = min(grown, most)
	}
	if left := m.Left(); int64(grown-*counted) > left {
		grown = *counted + int(left)
	}
	grown = max(grown, need)
	if err := m.Reserve(int64(grown - *counted)); err != nil {
		return buf, err
	}
	*counted = grown
	b := make([]byte, len(buf), grown)
	copy(b, buf)
	return b, nil
}
