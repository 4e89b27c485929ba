package query

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"ingest/blobsink"
	"ingest/logline"
)

// stream is one open blob, positioned on its next matching line (head).
type stream struct {
	name string
	seq  int // position in the hour's candidate order: breaks time ties
	raw  *countingReader
	dec  io.ReadCloser
	lr   *lineReader
	ev   logline.Event
	head []byte
	t    int64
}

// streamHeap orders open streams by their head's time.
type streamHeap []*stream

func (h streamHeap) Len() int { return len(h) }
func (h streamHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h streamHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)   { *h = append(*h, x.(*stream)) }
func (h *streamHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return s
}

// hour merges one hour's candidate blobs (all services) into the sort
// buffer, handing out each full buffer and the rest at the end.
func (r *runner) hour(ctx context.Context, cands []candidate) error {
	if len(cands) == 0 {
		return nil
	}
	// Open blobs in StartTime order, each only once the merge reaches its
	// StartTime: a writer's consecutive blobs are then never open together.
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.start != b.start {
			if a.start < b.start {
				return -1
			}
			return 1
		}
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	var h streamHeap
	defer func() {
		for _, s := range h {
			r.close(s)
		}
	}()
	next := 0
	for lines := 0; ; lines++ {
		for next < len(cands) && (len(h) == 0 || (len(h) < r.cfg.MaxOpenBlobs && cands[next].start <= h[0].t)) {
			s, err := r.open(ctx, cands[next], next)
			next++
			if err != nil {
				return err
			}
			if s == nil {
				continue
			}
			if ok, err := r.advance(s); err != nil {
				r.close(s)
				return err
			} else if !ok {
				r.close(s)
				continue
			}
			heap.Push(&h, s)
		}
		if len(h) == 0 {
			break
		}
		if lines&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		s := h[0]
		if !r.sort.fits(len(s.head)) {
			if err := r.flush(ctx); err != nil {
				return err
			}
		}
		r.sort.add(s.head, s.t)
		ok, err := r.advance(s)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
			r.close(s)
		}
	}
	return r.flush(ctx)
}

// open opens a candidate blob; nil when it vanished since the listing.
func (r *runner) open(ctx context.Context, c candidate, seq int) (*stream, error) {
	rc, err := r.store.Open(ctx, c.name)
	if errors.Is(err, blobsink.ErrNotFound) {
		r.st.BlobsSkipped++
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open blob %s: %w", c.name, err)
	}
	r.st.BlobsRead++
	raw := &countingReader{rc: rc}
	dec, err := decode(blobsink.CompressionOf(c.name), raw)
	if err != nil {
		rc.Close()
		if raw.err != nil {
			return nil, fmt.Errorf("cannot read blob %s: %w", c.name, err)
		}
		r.st.BlobsDamaged++
		return nil, nil
	}
	return &stream{name: c.name, seq: seq, raw: raw, dec: dec, lr: newLineReader(dec, r.cfg.MaxLineBytes)}, nil
}

func (r *runner) close(s *stream) {
	r.st.BytesRead += s.raw.n
	r.st.LinesTooLong += s.lr.tooLong
	s.raw.n, s.lr.tooLong = 0, 0
	s.dec.Close()
}

// advance moves s to its next matching line; false at the end of the blob.
// A decoding error ends the blob (counted as damaged); a storage error is
// returned.
func (r *runner) advance(s *stream) (bool, error) {
	for {
		line, err := s.lr.next()
		if err != nil {
			if err == io.EOF {
				return false, nil
			}
			if s.raw.err != nil {
				return false, fmt.Errorf("cannot read blob %s: %w", s.name, err)
			}
			r.st.BlobsDamaged++
			return false, nil
		}
		r.st.LinesScanned++
		r.st.BytesDecoded += int64(len(line))
		if !r.f.prefilter(line) {
			continue
		}
		if logline.Parse(line, &s.ev) != nil {
			r.st.LinesBad++
			continue
		}
		if !r.f.match(line, &s.ev) {
			continue
		}
		r.st.LinesMatched++
		s.head, s.t = line, s.ev.Time
		return true, nil
	}
}

// flush sorts the buffered lines and hands them to fn.
func (r *runner) flush(ctx context.Context) error {
	defer r.sort.reset()
	r.sort.sortByTime()
	for i := range r.sort.recs {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line := r.sort.line(i)
		if err := logline.Parse(line, &r.ev); err != nil {
			return fmt.Errorf("cannot parse a buffered line again: %w", err) // cannot happen: it parsed before
		}
		if err := r.fn(line, &r.ev); err != nil {
			return err
		}
		r.st.LinesReturned++
		if r.q.Limit > 0 && r.st.LinesReturned >= int64(r.q.Limit) {
			return errStop
		}
	}
	return nil
}
