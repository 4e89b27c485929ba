package query

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"ingest/blobsink"
)

// stream is one open blob, positioned on its next matching line (head).
// Its lines are read, decompressed and filtered ahead by a goroutine of its
// own (readAhead), so the blobs of an hour are scanned on every core while
// the merge hands lines out in order.
type stream struct {
	name string
	seq  int // position in the hour's candidate order: breaks time ties
	raw  *countingReader
	dec  io.ReadCloser
	lr   *lineReader
	info lineInfo // head's fields
	head []byte
	t    int64

	feed   chan *lineBatch // matching lines, in blob order; closed at the end
	free   chan *lineBatch // batches handed back for reuse
	budget chan struct{}   // the query's read-ahead budget: one token per extra batch
	extra  int             // tokens taken, returned at close
	stop   chan struct{}   // closed to end readAhead early
	exited chan struct{}
	cur    *lineBatch
	pos    int
	st     Stats // readAhead's counts, added to the query's at close
	err    error // readAhead's storage error, valid once feed is closed
}

// lineBatch is a run of matching lines read ahead.
type lineBatch struct {
	buf  []byte
	recs []batchRec
}

type batchRec struct {
	info   lineInfo
	off, n int32
}

// Read-ahead bounds: each open blob holds one batch of about batchBytes
// (plus one line) of its own and up to batchesPerStream-1 more while the
// query's read-ahead budget (Config.ReadAheadBytes, shared by its open blobs)
// has room: a few busy blobs read well ahead, many open blobs do not
// multiply the memory.
const (
	batchBytes       = 128 << 10
	maxBatchRecs     = 4096 // a counting pass copies no lines: bound its records
	batchesPerStream = 3
)

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
	sortByStart(cands)
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
		r.sort.add(s.head, &s.info)
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

// sortByStart orders an hour's candidates by StartTime, then name: the
// order ties between equal times follow.
func sortByStart(cands []candidate) {
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
}

// open opens a candidate blob and starts reading it ahead; nil when it
// vanished since the listing. The stream filters with the runner's filter
// as it is now.
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
	dec, err := decode(blobsink.CompressionOf(c.name), raw, &r.decoders)
	if err != nil {
		rc.Close()
		if raw.err != nil {
			return nil, fmt.Errorf("cannot read blob %s: %w", c.name, err)
		}
		r.st.BlobsDamaged++
		return nil, nil
	}
	s := &stream{name: c.name, seq: seq, raw: raw, dec: dec, lr: newLineReader(dec, r.cfg.MaxLineBytes),
		feed: make(chan *lineBatch, batchesPerStream), free: make(chan *lineBatch, batchesPerStream),
		budget: r.budget, stop: make(chan struct{}), exited: make(chan struct{})}
	s.free <- &lineBatch{}
	f := r.f
	go s.readAhead(&f)
	return s, nil
}

// close stops the stream's reading, waits for it, and counts what it did.
func (r *runner) close(s *stream) {
	close(s.stop)
	<-s.exited
	for range s.extra {
		r.budget <- struct{}{}
	}
	s.extra = 0
	r.st.BytesRead += s.raw.n
	r.st.LinesTooLong += s.lr.tooLong
	r.st.LinesScanned += s.st.LinesScanned
	r.st.BytesDecoded += s.st.BytesDecoded
	r.st.LinesBad += s.st.LinesBad
	r.st.LinesMatched += s.st.LinesMatched
	r.st.BlobsDamaged += s.st.BlobsDamaged
	s.raw.n, s.lr.tooLong, s.st = 0, 0, Stats{}
	s.dec.Close()
}

// advance moves s to its next matching line; false at the end of the blob.
// A decoding error ends the blob (counted as damaged); a storage error is
// returned.
func (r *runner) advance(s *stream) (bool, error) {
	for {
		if b := s.cur; b != nil {
			if s.pos < len(b.recs) {
				rec := b.recs[s.pos]
				s.pos++
				s.head, s.t, s.info = b.buf[rec.off:rec.off+rec.n], rec.info.t, rec.info
				return true, nil
			}
			b.buf, b.recs = b.buf[:0], b.recs[:0]
			s.free <- b // never blocks: at most batchesPerStream exist
			s.cur = nil
		}
		b, ok := <-s.feed
		if !ok {
			return false, s.err
		}
		s.cur, s.pos = b, 0
	}
}

// readAhead reads, decompresses and filters the blob's lines into batches
// for advance, until the blob ends or the stream is stopped. It touches only
// the stream's own fields.
func (s *stream) readAhead(f *filter) {
	defer close(s.exited)
	defer close(s.feed)
	r := aheadReader{s: s, f: f}
	select {
	case r.b = <-s.free:
	case <-s.stop:
		return
	}
	// With a text that is looked for on the raw line, whole buffers of
	// lines are searched for it at once and only the lines holding it are
	// looked at: most lines of a selective query are never split out.
	bulk := f.textRawCheck && s.lr.max >= readBufSize
	for {
		if bulk {
			if blk := s.lr.block(); len(blk) > 0 {
				if !r.takeHolding(blk) {
					return
				}
				continue
			}
		}
		line, err := s.lr.next()
		if err != nil {
			r.finish(err)
			return
		}
		s.st.LinesScanned++
		s.st.BytesDecoded += int64(len(line))
		if !r.take(line) {
			return
		}
	}
}

// aheadReader is one blob's read-ahead goroutine: the batch it fills and
// the scratch space of its line checks.
type aheadReader struct {
	s  *stream
	f  *filter
	b  *lineBatch
	li lineInfo
	sc lineScanner
	en lineEncoder
}

// send hands the full batch to advance and takes an empty one: a returned
// one, else one more from the query's read-ahead budget, else it waits for
// one to come back. False when the stream must stop.
func (r *aheadReader) send() bool {
	s := r.s
	select {
	case s.feed <- r.b:
	case <-s.stop:
		return false
	}
	select {
	case r.b = <-s.free:
		return true
	default:
	}
	if s.extra < batchesPerStream-1 {
		select {
		case <-s.budget:
			s.extra++
			r.b = &lineBatch{}
			return true
		default:
		}
	}
	select {
	case r.b = <-s.free:
		return true
	case <-s.stop:
		return false
	}
}

// take filters one line into the batch; false when the stream must stop.
func (r *aheadReader) take(line []byte) bool {
	f, s, b := r.f, r.s, r.b
	if !f.prefilter(line) {
		return true
	}
	// A counting pass (the histogram) needs the time and level only,
	// unless it filters by text; otherwise the whole line is checked and
	// its fields recorded here, on this blob's goroutine, so handing it
	// out needs no parse.
	var msg []byte
	ok := true
	if f.countOnly && f.text == nil {
		ok = r.sc.head(line, &r.li)
	} else {
		msg, ok = r.sc.scan(line, &r.li)
	}
	if !ok {
		s.st.LinesBad++
		return true
	}
	if !f.match(line, &r.li, msg) {
		return true
	}
	s.st.LinesMatched++
	switch {
	case f.countOnly:
		b.recs = append(b.recs, batchRec{info: r.li})
	case f.ndjson:
		// Encoded here, on this blob's goroutine: the merge moves the
		// answer's bytes instead of the line's.
		off := len(b.buf)
		b.buf = r.en.append(b.buf, line, &r.li, msg)
		b.recs = append(b.recs, batchRec{info: r.li, off: int32(off), n: int32(len(b.buf) - off)})
	default:
		b.recs = append(b.recs, batchRec{info: r.li, off: int32(len(b.buf)), n: int32(len(line))})
		b.buf = append(b.buf, line...)
	}
	return (len(b.buf) < batchBytes && len(b.recs) < maxBatchRecs) || r.send()
}

// takeHolding takes the lines of blk (whole lines, ending in '\n') that
// hold the filter's text; false when the stream must stop.
func (r *aheadReader) takeHolding(blk []byte) bool {
	st := &r.s.st
	st.LinesScanned += int64(bytes.Count(blk, []byte{'\n'}))
	st.BytesDecoded += int64(len(blk))
	for pos := 0; ; {
		j := bytes.Index(blk[pos:], r.f.text)
		if j < 0 {
			return true
		}
		start := bytes.LastIndexByte(blk[:pos+j], '\n') + 1
		end := pos + j + bytes.IndexByte(blk[pos+j:], '\n') + 1
		if !r.take(blk[start:end]) {
			return false
		}
		pos = end
	}
}

// finish ends the blob on err: a storage error is kept for advance, a
// decoding error counts the blob as damaged, and the last batch is sent.
func (r *aheadReader) finish(err error) {
	s := r.s
	if err != io.EOF {
		if s.raw.err != nil {
			s.err = fmt.Errorf("cannot read blob %s: %w", s.name, err)
		} else {
			s.st.BlobsDamaged++
		}
	}
	if len(r.b.recs) > 0 {
		r.send()
	}
}

// flush sorts the buffered lines and hands them to fn.
func (r *runner) flush(ctx context.Context) error {
	defer r.sort.reset()
	r.sort.sortByTime()
	if r.f.ndjson {
		return r.flushRuns(ctx)
	}
	for i := range r.sort.recs {
		if err := r.emit(ctx, i, r.sort.line(i), &r.sort.recs[i].info); err != nil {
			return err
		}
	}
	return nil
}

// flushRuns hands the sorted, encoded events to fn as runs of events that
// lie one after another in the buffer (with lines that came in order, whole
// slabs), up to the Limit.
func (r *runner) flushRuns(ctx context.Context) error {
	recs := r.sort.recs
	if r.q.Limit > 0 {
		recs = recs[:min(len(recs), r.q.Limit-int(r.st.LinesReturned))]
	}
	for i := 0; i < len(recs); {
		if err := ctx.Err(); err != nil {
			return err
		}
		a := recs[i]
		end := a.off + a.n
		j := i + 1
		for ; j < len(recs) && recs[j].slab == a.slab && recs[j].off == end; j++ {
			end += recs[j].n
		}
		if err := r.fn(r.sort.slabs[a.slab][a.off:end], nil); err != nil {
			return err
		}
		r.st.LinesReturned += int64(j - i)
		i = j
	}
	if r.q.Limit > 0 && r.st.LinesReturned >= int64(r.q.Limit) {
		return errStop
	}
	return nil
}

// emit hands a matching line to fn, its event filled from li (or, when the
// read-ahead encoded it, the encoded event alone); i counts the lines of one
// hand-out, to check ctx now and then. errStop once Limit lines are out.
func (r *runner) emit(ctx context.Context, i int, line []byte, li *lineInfo) error {
	if i&1023 == 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if r.f.ndjson {
		if err := r.fn(line, nil); err != nil {
			return err
		}
	} else {
		li.event(line, &r.ev, &r.msg)
		if err := r.fn(line, &r.ev); err != nil {
			return err
		}
	}
	r.st.LinesReturned++
	if r.q.Limit > 0 && r.st.LinesReturned >= int64(r.q.Limit) {
		return errStop
	}
	return nil
}
