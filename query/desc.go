package query

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"ingest/blobsink"
	"ingest/logline"
)

// Newest first (Query.Desc). The range is walked from its end (plan.go's
// walk, skipping empty blocks as oldest first does), a day's hours newest
// first, so a query with a Limit lists and reads only the newest days and
// hours it needs. Within an hour:
//
//   - with a Limit of at most descTopMax events, the newest events found so
//     far are kept. With a store that has ranged reads (RangeReader), the
//     blobs are read backwards from their ends (backward.go), always the one
//     that may hold the newest unread line, a blob opened (by EndTime,
//     newest first) once it may hold newer lines than every open one; the
//     hour ends once nothing unread can be newer than the events kept.
//     Without ranged reads, blobs are read whole in EndTime order, newest
//     first, until one whose EndTime is older than all the events kept;
//   - otherwise (or when those events outgrow the sort buffer) the hour's
//     matching lines go into the sort buffer and are handed out in reverse.
//     When they do not fit, the time window is halved and the newer half is
//     read first: output stays exactly newest first, memory stays bounded,
//     and a very busy hour is read more than once (LinesScanned counts
//     every pass).

// descTopMax is the largest remaining Limit served by keeping the newest
// events in a heap.
const descTopMax = 10000

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
	seq  int64 // orders equal times: the higher is the newer
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

// topK keeps the newest k matching lines found so far.
type topK struct {
	k    int
	h    keptHeap
	size int // bytes held, lines and records
}

func (t *topK) full() bool { return len(t.h) == t.k }

// offer keeps a copy of line (with its '\n') when it is among the newest k.
func (t *topK) offer(tm, seq int64, line []byte, li *lineInfo) {
	switch {
	case len(t.h) < t.k:
		kp := kept{t: tm, seq: seq, line: appendLine(nil, line), info: *li}
		t.size += len(kp.line) + recSize
		heap.Push(&t.h, kp)
	case tm > t.h[0].t || (tm == t.h[0].t && seq > t.h[0].seq):
		t.size -= len(t.h[0].line)
		t.h[0].t, t.h[0].seq, t.h[0].line, t.h[0].info = tm, seq, appendLine(t.h[0].line[:0], line), *li
		t.size += len(t.h[0].line)
		heap.Fix(&t.h, 0)
	}
}

// appendLine appends line to dst, with a '\n' if it has none (a blob's
// last line may not).
func appendLine(dst, line []byte) []byte {
	dst = append(dst, line...)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		dst = append(dst, '\n')
	}
	return dst
}

// descTop hands out the newest k matching events of the hour. done is
// false, with nothing handed out, when they outgrow the sort buffer.
func (r *runner) descTop(ctx context.Context, cands []candidate, k int) (done bool, err error) {
	top := &topK{k: k}
	if rr, ok := r.store.(RangeReader); ok {
		done, err = r.descTopBack(ctx, rr, cands, top)
	} else {
		done, err = r.descTopForward(ctx, cands, top)
	}
	if !done || err != nil {
		return done, err
	}
	slices.SortFunc(top.h, func(a, b kept) int { // newest first
		switch {
		case a.t != b.t && a.t > b.t, a.t == b.t && a.seq > b.seq:
			return -1
		}
		return 1
	})
	for i := range top.h {
		if err := r.emit(ctx, i, top.h[i].line, trimNL(top.h[i].line), &top.h[i].info); err != nil {
			return true, err
		}
	}
	return true, nil
}

// descTopBack finds the newest matching events of the hour by reading its
// blobs backwards from their ends (backward.go): always the blob that may
// hold the newest unread line, opening the next blob (by EndTime, newest
// first) once it may hold newer lines than every open one, and stopping
// once nothing unread can be newer than the k found.
func (r *runner) descTopBack(ctx context.Context, rr RangeReader, cands []candidate, top *topK) (bool, error) {
	type ranked struct {
		c    candidate
		rank int
	}
	sortByStart(cands)
	order := make([]ranked, len(cands))
	for i, c := range cands {
		order[i] = ranked{c, i}
	}
	slices.SortFunc(order, func(a, b ranked) int { return cmp.Compare(b.c.end, a.c.end) })

	br := &backReader{r: r, rr: rr}
	defer br.close()
	var li lineInfo
	var en lineEncoder
	var enc []byte
	br.line = func(b *backBlob, line []byte, depth int64, t int64, ok bool) {
		if ok && top.full() && t < top.h[0].t || !r.f.prefilter(line) {
			return // older than the k found, or ruled out unparsed
		}
		msg, ok := br.sc.scan(line, &li)
		if !ok {
			r.st.LinesBad++
			return
		}
		if !r.f.match(line, &li, msg) {
			return
		}
		r.st.LinesMatched++
		if r.f.ndjson { // kept and handed out encoded, as the read-ahead's
			enc = en.append(enc[:0], line, &li, msg)
			line = enc
		}
		top.offer(li.t, int64(b.rank)<<44-depth, line, &li)
	}
	var open []*backBlob
	next := 0
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if top.size > r.cfg.SortBytes {
			return false, nil
		}
		// The newest an unread line can be: the open blobs' bounds, and
		// the EndTime of the next blob not yet opened.
		bi, bound := -1, int64(math.MinInt64)
		for i, b := range open {
			if b.hi > bound {
				bi, bound = i, b.hi
			}
		}
		nextEnd := int64(math.MinInt64)
		if next < len(order) {
			nextEnd = order[next].c.end
		}
		if newest := max(bound, nextEnd); newest < r.f.from || (top.full() && newest < top.h[0].t) {
			break
		}
		if next < len(order) && nextEnd >= bound {
			b := newBackBlob(order[next].c, order[next].rank)
			next++
			r.st.BlobsRead++
			if !b.finished() {
				open = append(open, b)
			}
			continue
		}
		b := open[bi]
		if err := br.step(ctx, b); err != nil && !errors.Is(err, blobsink.ErrNotFound) { // a vanished blob has nothing left
			return false, fmt.Errorf("cannot read blob %s: %w", b.c.name, err)
		} else if err != nil || b.finished() || b.hi < r.f.from {
			open = slices.Delete(open, bi, bi+1)
		}
	}
	r.st.BlobsSkipped += len(order) - next
	return true, nil
}

// descTopForward finds the newest matching events of the hour in a store
// without ranged reads: blobs are read whole, newest EndTime first, until
// one cannot hold an event newer than the k found.
func (r *runner) descTopForward(ctx context.Context, cands []candidate, top *topK) (bool, error) {
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(b.end, a.end) })
	seq := int64(0)
	for i, c := range cands {
		if top.full() && top.h[0].t > c.end {
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
			seq++ // reading order: among equal times the later read is newer
			top.offer(s.t, seq, s.head, &s.info)
			if top.size > r.cfg.SortBytes {
				r.close(s)
				return false, nil
			}
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
		if err := r.emitSorted(ctx, i); err != nil {
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
