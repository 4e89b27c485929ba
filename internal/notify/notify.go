// Package notify wakes every waiter at once, the way a condition variable's
// Broadcast does, but through a channel a waiter can select on beside a
// context or a timer.
package notify

import "sync"

// Notifier wakes every waiter at once: Wait returns a channel that the next
// Broadcast closes. The zero value is ready to use.
type Notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

// Wait returns the channel the next Broadcast closes.
func (n *Notifier) Wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// Broadcast wakes everyone waiting on a channel from Wait.
func (n *Notifier) Broadcast() {
	n.mu.Lock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	n.mu.Unlock()
}
