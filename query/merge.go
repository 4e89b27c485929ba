package query

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"ingest/blobsink"
	"ingest/internal/httperr"
	"ingest/logline"
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
	// low bounds the lines not yet merged (head included) from below,
	// under the reorder bound: the low of the batch being taken.
	low int64
	// pending: no line yet, only low (the read-ahead is scanning lines
	// that do not match); the merge orders the stream by low meanwhile.
	pending bool
	late    int64 // the blob's Lateness metadata; -1 when unknown

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
	// low: no line of the blob from this batch's first on is older, under
	// the reorder bound (the blob's StartTime, or the newest line read
	// more than Config.ReorderBytes before the batch began).
	low int64
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
//
// A batch with lines in it is also sent once a quarter of ReorderBytes (64
// KiB to 1 MiB) of the blob have been scanned since it began: a selective
// query's lines reach the merge, and its bound (lineBatch.low) moves,
// without waiting for 128 KiB of matches.
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

// hourMerge is one hour's merge: the open blobs, ordered by their head,
// and the candidates not opened yet.
type hourMerge struct {
	h     streamHeap
	cands []candidate // in StartTime order
	next  int         // cands[next:] are not opened yet
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
	r.nextRelease = 0
	m := &hourMerge{cands: cands}
	defer func() {
		for _, s := range m.h {
			r.close(s)
		}
	}()
	for lines := 0; ; lines++ {
		if err := r.openDue(ctx, m); err != nil {
			return err
		}
		if len(m.h) == 0 {
			break
		}
		if lines&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		s := m.h[0]
		if s.pending {
			// Nothing to merge from s before it has a line: hand out what
			// is certain, then wait for its next line or a higher low.
			if err := r.release(ctx, m.h, m.cands[m.next:]); err != nil {
				return err
			}
		} else if err := r.take(ctx, m, s); err != nil {
			return err
		}
		if err := r.advanceHead(m, s); err != nil {
			return err
		}
	}
	return r.flush(ctx)
}

// openDue opens the candidates the merge has reached (their StartTime is
// not after the oldest head), up to --query-max-open-blobs, or the next one
// when none is open; a blob with no matching line is closed at once.
func (r *runner) openDue(ctx context.Context, m *hourMerge) error {
	for m.next < len(m.cands) && (len(m.h) == 0 || (len(m.h) < r.cfg.MaxOpenBlobs && m.cands[m.next].start <= m.h[0].t)) {
		s, err := r.open(ctx, m.cands[m.next], m.next)
		m.next++
		if err != nil {
			return err
		}
		if s == nil {
			continue
		}
		if ok, err := r.advanceOrLow(s); err != nil {
			r.close(s)
			return err
		} else if !ok {
			r.close(s)
			continue
		}
		heap.Push(&m.h, s)
	}
	return nil
}

// take adds the head line of s, the oldest, to the sort buffer, making
// room first, and hands out what is certain when it is time to.
func (r *runner) take(ctx context.Context, m *hourMerge, s *stream) error {
	if !r.sort.fits(len(s.head)) {
		// Full: hand out what is certain, and only if that frees no
		// room, the whole buffer.
		if err := r.release(ctx, m.h, m.cands[m.next:]); err != nil {
			return err
		}
		if !r.sort.fits(len(s.head)) {
			if err := r.flush(ctx); err != nil {
				return err
			}
		}
	}
	r.sort.add(s.head, &s.info)
	// Hand out what is certain before waiting for this blob's next line,
	// and now and then anyway.
	if len(r.sort.recs) >= r.nextRelease || s.waiting() {
		return r.release(ctx, m.h, m.cands[m.next:])
	}
	return nil
}

// advanceHead moves s, the heap's top, to its next line or a higher low,
// and closes it at its end.
func (r *runner) advanceHead(m *hourMerge, s *stream) error {
	ok, err := r.advanceOrLow(s)
	switch {
	case err != nil:
		return err
	case ok:
		heap.Fix(&m.h, 0)
	default:
		heap.Pop(&m.h)
		r.close(s)
	}
	return nil
}

// release hands out the buffered lines older than anything not yet merged
// can be: every open blob's low and the StartTime of the next blob to open
// bound that from below. So the first lines of a selective query go out
// once each open blob has been read --query-reorder-bytes past them, not at
// the end of the hour.
func (r *runner) release(ctx context.Context, h streamHeap, unopened []candidate) error {
	r.nextRelease = len(r.sort.recs) + max(64, len(r.sort.recs)/2)
	bound := int64(math.MaxInt64)
	if len(unopened) > 0 {
		bound = unopened[0].start
	}
	for _, s := range h {
		bound = min(bound, s.low)
	}
	if len(r.sort.recs) == 0 || r.sort.oldest >= bound {
		return nil
	}
	r.sort.sortByTime()
	n, _ := slices.BinarySearchFunc(r.sort.recs, bound, func(rc rec, t int64) int { return cmp.Compare(rc.info.t, t) })
	for i := range n {
		if err := r.emitSorted(ctx, i); err != nil {
			return err
		}
	}
	r.sort.drop(n)
	r.nextRelease = len(r.sort.recs) + max(64, len(r.sort.recs)/2)
	return nil
}

// waiting reports whether advance would wait for the blob's read-ahead.
func (s *stream) waiting() bool {
	return (s.cur == nil || s.pos >= len(s.cur.recs)) && len(s.feed) == 0
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
	if c.late >= 0 {
		// The Lateness listed covers the bytes listed, no more: a flush
		// appended since may hold a later event than it allows.
		rc = limitedReadCloser{io.LimitReader(rc, c.size), rc}
	}
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
	s := &stream{name: c.name, seq: seq, low: c.start, late: c.late, raw: raw, dec: dec, lr: newLineReader(dec, r.cfg.MaxLineBytes),
		feed: make(chan *lineBatch, batchesPerStream), free: make(chan *lineBatch, batchesPerStream),
		budget: r.budget, stop: make(chan struct{}), exited: make(chan struct{})}
	s.free <- &lineBatch{}
	f := r.f
	go s.readAhead(&f, int64(r.cfg.ReorderBytes))
	return s, nil
}

// limitedReadCloser reads up to a limit and closes the whole reader.
type limitedReadCloser struct {
	io.Reader
	io.Closer
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
		ok, err := r.advanceOrLow(s)
		if err != nil || !ok || !s.pending {
			return ok, err
		}
	}
}

// advanceOrLow is advance, but it also returns, with s.pending set and
// s.t = s.low, when the read-ahead sent no line, only a higher low.
func (r *runner) advanceOrLow(s *stream) (bool, error) {
	for {
		if b := s.cur; b != nil {
			if s.pos < len(b.recs) {
				rec := b.recs[s.pos]
				s.pos++
				s.head, s.t, s.info, s.pending = b.buf[rec.off:rec.off+rec.n], rec.info.t, rec.info, false
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
		s.cur, s.pos, s.low = b, 0, b.low
		if len(b.recs) == 0 {
			s.head, s.t, s.pending = nil, s.low, true
			return true, nil
		}
	}
}

// readAhead reads, decompresses and filters the blob's lines into batches
// for advance, until the blob ends or the stream is stopped. It touches only
// the stream's own fields.
func (s *stream) readAhead(f *filter, reorder int64) {
	defer close(s.exited)
	defer close(s.feed)
	// A bug reached by one blob's bytes ends this query with an error
	// (advance returns s.err once feed is closed), not the process.
	defer httperr.Recover(&s.err)
	r := aheadReader{s: s, f: f, w: reorder, low: s.low, newest: s.low, every: max(reorder/64, 4<<10), early: min(max(reorder/4, 64<<10), 1<<20)}
	select {
	case r.b = <-s.free:
	case <-s.stop:
		return
	}
	r.b.low = s.low
	// With a text that is looked for on the raw line, whole buffers of
	// lines are searched for it at once and only the lines holding it are
	// looked at: most lines of a selective query are never split out.
	bulk := f.textRawCheck && s.lr.max >= readBufSize
	for {
		if bulk {
			if blk := s.lr.block(); len(blk) > 0 {
				r.sample(blk)
				if !r.takeHolding(blk) || !r.sendEarly() {
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
		r.sample(line)
		s.st.LinesScanned++
		s.st.BytesDecoded += int64(len(line))
		if !r.take(line) || !r.sendEarly() {
			return
		}
	}
}

// sample notes the time of the line starting at the current position, one
// line in every r.every bytes, for the reorder bound.
func (r *aheadReader) sample(line []byte) {
	at := r.s.st.BytesDecoded
	if at < r.next {
		return
	}
	r.next = at + r.every
	const end = timeOff + len(logline.TimeLayout)
	if len(line) > end {
		if t, ok := r.sc.time(line[timeOff:end]); ok {
			r.samples = append(r.samples, timeSample{at: at, t: t})
			r.newest = max(r.newest, t)
		}
	}
}

// bound is the low of a batch that begins now: the newest line sampled
// more than r.w bytes back (assumed), or the blob's StartTime; or, when
// higher, and the blob's metadata says how late a line can be stored
// (blobsink.Meta.Late), the newest line seen so far less that (proven).
func (r *aheadReader) bound() int64 {
	n := 0
	for _, sm := range r.samples {
		if sm.at >= r.s.st.BytesDecoded-r.w {
			break
		}
		r.low = max(r.low, sm.t)
		n++
	}
	r.samples = append(r.samples[:0], r.samples[n:]...)
	if late := r.s.late; late >= 0 && r.newest > math.MinInt64+late {
		r.low = max(r.low, r.newest-late)
	}
	return r.low
}

// sendEarly sends the batch once r.early bytes have been scanned since it
// began, even with no line in it (then only its low tells the merge how far
// the blob is); false when the stream must stop.
func (r *aheadReader) sendEarly() bool {
	return r.s.st.BytesDecoded-r.began < r.early || r.send()
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

	// The reorder bound (see lineBatch.low): line times sampled every
	// `every` bytes, folded into low once r.w bytes behind.
	w, every, next int64
	early          int64 // scanned bytes after which a batch with lines goes
	samples        []timeSample
	low            int64
	began          int64 // where the batch being filled began
	// newest: the newest time of the lines seen so far that were parsed
	// or sampled (the blob's StartTime before any).
	newest int64
}

type timeSample struct{ at, t int64 }

// send hands the full batch to advance and takes an empty one: a returned
// one, else one more from the query's read-ahead budget, else it waits for
// one to come back. False when the stream must stop.
func (r *aheadReader) send() bool {
	if !r.swap() {
		return false
	}
	r.b.low, r.began = r.bound(), r.s.st.BytesDecoded
	return true
}

func (r *aheadReader) swap() bool {
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
	// unless it filters by other fields; otherwise the whole line is checked and
	// its fields recorded here, on this blob's goroutine, so handing it
	// out needs no parse.
	var msg []byte
	ok := true
	if f.headOnly() {
		ok = r.sc.head(line, &r.li)
	} else {
		msg, ok = r.sc.scan(line, &r.li)
	}
	if !ok {
		s.st.LinesBad++
		return true
	}
	r.newest = max(r.newest, r.li.t)
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
		if err := r.emitSorted(ctx, i); err != nil {
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
	for _, rc := range recs {
		if rc.info.t < r.lastT {
			r.st.LinesOutOfOrder++
		}
		r.lastT = rc.info.t
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

// emitSorted emits the sort buffer's line i. The buffer ends every line in
// '\n', so the event is filled without reading the line's bytes: they were
// copied in up to a sort buffer ago and are no longer in the CPU's cache.
func (r *runner) emitSorted(ctx context.Context, i int) error {
	line := r.sort.line(i)
	return r.emit(ctx, i, line, line[:len(line)-1], &r.sort.recs[i].info)
}

// emit hands a matching line to fn, its event filled from li and body (the
// line without its '\n'), or, when the read-ahead encoded it, the encoded
// event alone; i counts the lines of one hand-out, to check ctx now and
// then. errStop once Limit lines are out.
func (r *runner) emit(ctx context.Context, i int, line, body []byte, li *lineInfo) error {
	if i&1023 == 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if r.q.Desc && li.t > r.lastT || !r.q.Desc && li.t < r.lastT {
		r.st.LinesOutOfOrder++
	}
	r.lastT = li.t
	if r.f.ndjson {
		if err := r.fn(line, nil); err != nil {
			return err
		}
	} else {
		li.event(body, &r.ev, &r.msg)
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
