package buffer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// budget counts bytes held against --buffer-bytes.
type budget struct {
	limit int64
	used  atomic.Int64
	freed notifier
}

// tryAcquire reserves n bytes if they fit. A batch larger than the whole
// budget is let through when nothing else is held, so it cannot wait forever.
func (b *budget) tryAcquire(n int64) bool {
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

// acquire waits up to wait for n bytes.
func (b *budget) acquire(ctx context.Context, n int64, wait time.Duration) bool {
	if b.tryAcquire(n) {
		return true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		ch := b.freed.wait()
		if b.tryAcquire(n) {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// force reserves n bytes whatever the limit (replayed data must be held).
func (b *budget) force(n int64) { b.used.Add(n) }

func (b *budget) release(n int64) {
	b.used.Add(-n)
	b.freed.broadcast()
}

// notifier wakes every waiter at once: wait returns a channel that the next
// broadcast closes.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) broadcast() {
	n.mu.Lock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	n.mu.Unlock()
}
