package query

import (
	"container/heap"
	"context"
	"slices"
	"time"

	"ingest/logline"
)

// Newest first (Query.Desc). Hours are listed one at a time from the end of
// the range, so a query with a Limit lists and reads only the newest hours
// it needs. Within an hour:
//
//   - with a Limit of at most descTopMax events, blobs are read in EndTime
//     order, newest first, keeping the newest events found so far; a blob
//     whose EndTime is older than all of them (once there are enough) ends
//     the hour's reading, and so do all older ones;
//   - otherwise (or when those events outgrow the sort buffer) the hour's
//     matching lines go into the sort buffer and are handed out in reverse.
//     When they do not fit, the time window is halved and the newer half is
//     read first: output stays exactly newest first, memory stays bounded,
//     and a very busy hour is read more than once (LinesScanned counts
//     every pass).

// descTopMax is the largest remaining Limit served by keeping the newest
// events in a heap.
const descTopMax = 10000

// walkDesc calls fn with the candidates of every hour of the range that has
// any, newest hour first. Each hour is its own listing.
func (r *runner) walkDesc(ctx context.Context, fn func(context.Context, []candidate) error) error {
	services, err := r.services(ctx)
	if err != nil || len(services) == 0 {
		return err
	}
	from, to := r.q.From.UTC(), r.q.To.UTC()
	first := from.Truncate(time.Hour)
	r.st.Prefixes = len(services) * int((to.Sub(first)+time.Hour-1)/time.Hour)
	for h := to.Add(-1).Truncate(time.Hour); !h.Before(first); h = h.Add(-time.Hour) {
		if err := ctx.Err(); err != nil {
			return err
		}
		hours, err := r.list(ctx, services, h, 1)
		if err != nil {
			return err
		}
		if len(hours[0]) == 0 {
			continue
		}
		r.hourStart = h
		if err := fn(ctx, hours[0]); err != nil {
			return err
		}
	}
	return nil
}

// descHour hands out one hour's matching events, newest first.
func (r *runner) descHour(ctx context.Context, cands []candidate) error {
	if r.q.Limit > 0 {
		if k := r.q.Limit - int(r.st.LinesReturned); k <= descTopMax {
			done, err := r.descTop(ctx, cands, k)
			if done || err != nil {
				return err
			}
		}
	}
	lo := max(r.f.from, r.hourStart.UnixNano())
	hi := min(r.f.to, r.hourStart.Add(time.Hour).UnixNano())
	return r.descWindow(ctx, cands, lo, hi)
}

// kept is one of the newest events found so far.
type kept struct {
	t    int64
	seq  int64 // reading order: among equal times the later read is newer
	line []byte
	info lineInfo
}

// keptHeap has the oldest kept event on top.
type keptHeap []kept

func (h keptHeap) Len() int { return len(h) }
func (h keptHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h keptHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *keptHeap) Push(x any)   { *h = append(*h, x.(kept)) }
func (h *keptHeap) Pop() any {
	old := *h
	k := old[len(old)-1]
	*h = old[:len(old)-1]
	return k
}

// descTop hands out the newest k matching events of the hour. done is
// false, with nothing handed out, when they outgrow the sort buffer.
func (r *runner) descTop(ctx context.Context, cands []candidate, k int) (done bool, err error) {
	slices.SortFunc(cands, func(a, b candidate) int {
		switch {
		case a.end > b.end:
			return -1
		case a.end < b.end:
			return 1
		}
		return 0
	})
	var h keptHeap
	size, seq := 0, int64(0)
	for i, c := range cands {
		if len(h) == k && h[0].t > c.end {
			r.st.BlobsSkipped += len(cands) - i
			break
		}
		s, err := r.open(ctx, c, i)
		if err != nil {
			return false, err
		}
		if s == nil {
			continue
		}
		for {
			ok, err := r.advance(s)
			if err != nil || !ok {
				r.close(s)
				if err != nil {
					return false, err
				}
				break
			}
			seq++
			switch {
			case len(h) < k:
				heap.Push(&h, kept{t: s.t, seq: seq, line: append([]byte(nil), s.head...), info: s.info})
				size += len(s.head) + recSize
			case s.t > h[0].t || (s.t == h[0].t && seq > h[0].seq):
				size += len(s.head) - len(h[0].line)
				h[0].t, h[0].seq, h[0].line, h[0].info = s.t, seq, append(h[0].line[:0], s.head...), s.info
				heap.Fix(&h, 0)
			}
			if size > r.cfg.SortBytes {
				r.close(s)
				return false, nil
			}
		}
	}
	slices.SortFunc(h, func(a, b kept) int { // newest first
		switch {
		case a.t != b.t && a.t > b.t, a.t == b.t && a.seq > b.seq:
			return -1
		}
		return 1
	})
	for i := range h {
		if err := r.emit(ctx, i, h[i].line, &h[i].info); err != nil {
			return true, err
		}
	}
	return true, nil
}

// descWindow hands out the matching events of [lo, hi) newest first,
// halving the window while they do not fit the sort buffer.
func (r *runner) descWindow(ctx context.Context, cands []candidate, lo, hi int64) error {
	saved := r.f
	r.f = saved.narrow(lo, hi)
	overflow := false
	for i, c := range cands {
		if c.end < lo || c.start >= hi {
			continue
		}
		s, err := r.open(ctx, c, i)
		if err != nil {
			r.f = saved
			return err
		}
		if s == nil {
			continue
		}
		for !overflow {
			ok, err := r.advance(s)
			if err != nil {
				r.close(s)
				r.f = saved
				return err
			}
			if !ok {
				break
			}
			// A window of under a microsecond takes what it holds.
			if !r.sort.fits(len(s.head)) && hi-lo > 1000 {
				overflow = true
				break
			}
			r.sort.add(s.head, &s.info)
		}
		r.close(s)
		if overflow {
			break
		}
	}
	r.f = saved
	if overflow {
		r.sort.reset()
		mid := lo + (hi-lo)/2
		if err := r.descWindow(ctx, cands, mid, hi); err != nil {
			return err
		}
		return r.descWindow(ctx, cands, lo, mid)
	}
	defer r.sort.reset()
	r.sort.sortByTime()
	for i := len(r.sort.recs) - 1; i >= 0; i-- {
		if err := r.emit(ctx, i, r.sort.line(i), &r.sort.recs[i].info); err != nil {
			return err
		}
	}
	return nil
}

// narrow is f restricted to [lo, hi).
func (f filter) narrow(lo, hi int64) filter {
	f.from, f.to = max(f.from, lo), min(f.to, hi)
	f.fromT = logline.AppendTime(nil, ceil100(f.from))
	f.toT = logline.AppendTime(nil, ceil100(f.to))
	return f
}
