package notify

import (
	"testing"
	"time"
)

func TestBroadcastWakesEveryWaiterOnce(t *testing.T) {
	var n Notifier
	a, b := n.Wait(), n.Wait()
	if a != b {
		t.Fatal("two waits before a broadcast got different channels")
	}
	select {
	case <-a:
		t.Fatal("a waiter woke before any broadcast")
	default:
	}
	n.Broadcast()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter did not wake on Broadcast")
		}
	}
	select {
	case <-n.Wait():
		t.Fatal("a wait after the broadcast woke without a new one")
	default:
	}
	n.Broadcast() // with no waiter: must not panic on a closed channel
	n.Broadcast()
}
