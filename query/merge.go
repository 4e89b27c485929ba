package query

import (
	"bytes"
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
	dec, err := decode(blobsink.CompressionOf(c.name), raw, &r.decoders)
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
		// The message is unescaped only when a filter needs it; otherwise
		// the full parse waits until the line is handed out, so a matching
		// line is parsed once, not twice.
		if r.f.needsMessage() {
			if logline.Parse(line, &s.ev) != nil {
				r.st.LinesBad++
				continue
			}
		} else if !parseHead(line, &s.ev) {
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

// parseHead reads a line's version, time and level, enough to filter and
// order it; Parse checks the rest when the line is handed out.
func parseHead(line []byte, e *logline.Event) bool {
	const end = timeOff + len(logline.TimeLayout)
	if len(line) <= end || string(line[:timeOff]) != logline.Version+";" || line[end] != ';' {
		return false
	}
	t, ok := parseTime(line[timeOff:end])
	if !ok {
		return false
	}
	rest := line[end+1:]
	i := bytes.IndexByte(rest, ';')
	if i < 0 {
		return false
	}
	l, ok := levelOf(rest[:i])
	if !ok {
		return false
	}
	e.Time, e.Level = t, l
	return true
}

// parseTime is logline.ParseTime without time.Date: the same checks and
// the same result (out-of-range days and leap seconds carry over the same
// way), at a fraction of the cost on the scan path.
func parseTime(b []byte) (int64, bool) {
	if len(b) != len(logline.TimeLayout) || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' ||
		b[16] != ':' || b[19] != '.' || b[27] != 'Z' {
		return 0, false
	}
	ok := true
	num := func(s []byte) int64 {
		var n int64
		for _, c := range s {
			c -= '0'
			if c > 9 {
				ok = false
			}
			n = n*10 + int64(c)
		}
		return n
	}
	y, mo, d := num(b[0:4]), num(b[5:7]), num(b[8:10])
	h, mi, s, f := num(b[11:13]), num(b[14:16]), num(b[17:19]), num(b[20:27])
	if !ok || y < 1678 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 {
		return 0, false
	}
	// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
	if mo <= 2 {
		y--
	}
	era := y / 400 // y >= 1677: never negative
	yoe := y - era*400
	mp := (mo + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := era*146097 + doe - 719468
	return ((days*86400+h*3600+mi*60+s)*1e9 + f*100), true
}

// levelOf is ParseLevel with a fast path for the names lines are written
// with.
func levelOf(b []byte) (logline.Level, bool) {
	switch string(b) {
	case "":
		return logline.LevelNone, true
	case "trace":
		return logline.LevelTrace, true
	case "debug":
		return logline.LevelDebug, true
	case "info":
		return logline.LevelInfo, true
	case "warn":
		return logline.LevelWarn, true
	case "error":
		return logline.LevelError, true
	case "fatal":
		return logline.LevelFatal, true
	}
	return logline.ParseLevel(b)
}

// flush sorts the buffered lines and hands them to fn.
func (r *runner) flush(ctx context.Context) error {
	defer r.sort.reset()
	r.sort.sortByTime()
	for i := range r.sort.recs {
		if err := r.emit(ctx, i, r.sort.line(i)); err != nil {
			return err
		}
	}
	return nil
}

// emit parses a matching line and hands it to fn; i counts the lines of one
// hand-out, to check ctx now and then. errStop once Limit lines are out.
func (r *runner) emit(ctx context.Context, i int, line []byte) error {
	if i&1023 == 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := logline.Parse(line, &r.ev); err != nil {
		// Only its time and level were checked so far (parseHead).
		r.st.LinesBad++
		r.st.LinesMatched--
		return nil
	}
	if err := r.fn(line, &r.ev); err != nil {
		return err
	}
	r.st.LinesReturned++
	if r.q.Limit > 0 && r.st.LinesReturned >= int64(r.q.Limit) {
		return errStop
	}
	return nil
}
