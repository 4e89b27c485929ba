package tablesink

import (
	"context"
	"sync"
	"time"
)

// partitionRate is the entities per second the whole cluster writes into
// any one partition: under Azure's target of 2,000 entities/s per
// partition with room for the commit times' jitter. Hashed buckets stay
// far below it; flushes reach it when they carry a backlog (storage was
// slow or away) for a bucket holding a hot user's unsalted share, on every
// instance at once.
const partitionRate = 1500

// partitionPacer spaces a sink's transactions into each partition: one of
// n entities may start n/rate() seconds after the previous one into that
// partition started. So the entities whose transactions start within any
// one second are at most rate() plus one transaction, across flushes too
// (one pacer per sink). rate is partitionRate over the live instances
// (as --hot-user-rate is shared), so the cluster's instances together
// stay under partitionRate without talking to each other.
type partitionPacer struct {
	rate func() float64
	mu   sync.Mutex
	next map[string]time.Time // table "/" PartitionKey: when its next transaction may start
}

func newPartitionPacer(rate func() float64) *partitionPacer {
	return &partitionPacer{rate: rate, next: map[string]time.Time{}}
}

// wait blocks until a transaction of n entities may start into partition
// pk of table, or ctx ends; it returns how long it waited.
func (p *partitionPacer) wait(ctx context.Context, table, pk string, n int) (time.Duration, error) {
	now := time.Now()
	k := table + "/" + pk
	p.mu.Lock()
	start := p.next[k]
	if start.Before(now) {
		start = now
		if len(p.next) > 4096 {
			p.forget(now)
		}
	}
	p.next[k] = start.Add(time.Duration(float64(n) / p.rate() * float64(time.Second)))
	p.mu.Unlock()
	d := start.Sub(now)
	if d <= 0 {
		return 0, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return d, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// forget drops the partitions free to start now, so the map holds only
// those written within the last moments.
func (p *partitionPacer) forget(now time.Time) {
	for k, t := range p.next {
		if !t.After(now) {
			delete(p.next, k)
		}
	}
}
