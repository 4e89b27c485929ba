package httpapi

import (
	"sync"
	"time"
)

// inflight bounds the bytes of request bodies held at once. The fast path is
// a lock and a comparison; a request that does not fit waits a little for
// others to finish, then is refused (429) rather than queued without bound.
type inflight struct {
	mu    sync.Mutex
	used  int64
	limit int64
	freed chan struct{} // closed and replaced on every release
}

func (f *inflight) acquire(n int64, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		f.mu.Lock()
		if f.used+n <= f.limit || f.used == 0 {
			f.used += n
			f.mu.Unlock()
			return true
		}
		if f.freed == nil {
			f.freed = make(chan struct{})
		}
		ch := f.freed
		f.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		select {
		case <-ch:
		case <-time.After(left):
			return false
		}
	}
}

func (f *inflight) release(n int64) {
	f.mu.Lock()
	f.used -= n
	if f.freed != nil {
		close(f.freed)
		f.freed = nil
	}
	f.mu.Unlock()
}
