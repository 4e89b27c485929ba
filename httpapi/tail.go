package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/admission"
	"ingest/buffer"
	"ingest/internal/httperr"
	"ingest/logline"
	"ingest/query"
)

// Live tail (GET /v1/tail). The intake path hands every accepted batch's
// encoded log lines to the hub, which costs one atomic load when nobody
// tails. With readers, each (service, hour) group of lines is copied once,
// charged once to the tail budget (--tail-budget-bytes), and offered to
// every reader whose services include it; the last reader done with it
// gives its bytes back. A reader holds at most tailQueueBytes of groups;
// past that, or when the budget is spent, a group is dropped for that
// reader only and counted, and the reader's stream says so with a marker
// line where the gap is. Filtering by level and text, and encoding as
// NDJSON, happen in the reader's own goroutine, never on the intake path,
// one line at a time into a scratch buffer also charged to the budget, and
// written in pieces no larger than the stream's buffer: a reader that does
// not read holds its queue and one scratch line, never a growing backlog.
// A write that makes no progress for tailStall closes the reader's
// connection. Each reader also charges tailReaderBytes for its connection's
// fixed buffers, and --max-tail-readers bounds the readers (429 past it).
//
// Without local=1, the tail also follows every other live instance's own
// tail (tailpeers.go), so a client sees what the whole cluster accepts.

// tailQueueBytes bounds the lines waiting for one tail reader.
const tailQueueBytes = 4 << 20

// tailQueueChunks bounds the groups waiting for one tail reader.
const tailQueueChunks = 1024

// tailReaderBytes is what one reader's connection holds whatever it tails:
// the stream's 4 KiB buffer, the pipe to the connection (up to four 4 KiB
// writes), the connection's own buffers, the encoding scratch it keeps.
const tailReaderBytes = 32 << 10

// tailScratchKeep is the largest encoding scratch a reader keeps between
// groups; a larger one (a long line) is given back after its group.
const tailScratchKeep = 16 << 10

// tailHeartbeat is how often an idle tail writes an empty line, so a reader
// that went away is noticed (a write fails) and released. A variable for
// tests.
var tailHeartbeat = 10 * time.Second

// tailStall is how long a write to a tail reader may make no progress
// before the reader is dropped (its connection closed). A variable for
// tests.
var tailStall = 30 * time.Second

var (
	errTailClosed = errors.New("shutting down: tail another instance")
	errTailFull   = errors.New("too many tail readers")
)

// tailChunk is lines for a reader: a group of stored lines shared read-only
// by every reader it went to (refs counts them; the budget is charged once),
// or NDJSON lines from a peer's stream (written set: written as they are,
// then handed back to the peer stream that owns them).
type tailChunk struct {
	data    []byte
	events  int
	refs    atomic.Int32
	budget  *admission.Budget
	written chan struct{} // peer chunks: signalled once written
}

// finish is called by each reader once done with c.
func (c *tailChunk) finish() {
	if c.written != nil {
		c.written <- struct{}{}
		return
	}
	if c.refs.Add(-1) == 0 {
		c.budget.Release(int64(len(c.data)))
	}
}

// tailReader is one GET /v1/tail client.
type tailReader struct {
	all      bool            // every service
	services map[string]bool // normalised names, when !all
	queue    chan *tailChunk
	peers    chan *tailChunk // from the streams of other instances
	held     atomic.Int64    // bytes of the groups queued or being written
	dropped  atomic.Int64    // events dropped since the reader last reported them
	done     chan struct{}
	abort    func() // closes the client's connection; nil in tests
}

func newTailReader() *tailReader {
	return &tailReader{queue: make(chan *tailChunk, tailQueueChunks), peers: make(chan *tailChunk), done: make(chan struct{})}
}

func (r *tailReader) wants(service []byte) bool {
	return r.all || r.services[string(service)]
}

// drain finishes the groups still queued once r is out of the hub.
func (r *tailReader) drain() {
	for {
		select {
		case c := <-r.queue:
			r.held.Add(-int64(len(c.data)))
			c.finish()
		default:
			return
		}
	}
}

// tailHub fans accepted lines out to the tail readers.
type tailHub struct {
	n       atomic.Int32 // readers: the intake path's only cost when 0
	mu      sync.RWMutex
	readers map[*tailReader]struct{}
	closed  bool
	max     int
	// budget counts what every tail holds against --tail-budget-bytes; it
	// is only tried, never waited on: a tail that does not fit loses
	// events (or is refused).
	budget  *admission.Budget
	dropped func(n int) // metric hook
	// The timings, taken from the package's variables when the server
	// starts, so a test that changes them races with no server of another.
	heartbeat, stall, peerPoll time.Duration
}

// active reports whether anyone tails; cheap enough for every request.
func (h *tailHub) active() bool { return h.n.Load() > 0 }

// add registers r, charging tailReaderBytes, unless the hub is closed or
// full.
func (h *tailHub) add(r *tailReader) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errTailClosed
	}
	if len(h.readers) >= h.max || !h.budget.TryAcquire(tailReaderBytes) {
		return errTailFull
	}
	if h.readers == nil {
		h.readers = map[*tailReader]struct{}{}
	}
	h.readers[r] = struct{}{}
	h.n.Store(int32(len(h.readers)))
	return nil
}

// remove unregisters r (once) and gives back its fixed charge.
func (h *tailHub) remove(r *tailReader) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.readers[r]; ok {
		delete(h.readers, r)
		close(r.done)
		h.budget.Release(tailReaderBytes)
	}
	h.n.Store(int32(len(h.readers)))
}

// close ends every tail (shutdown) and refuses new ones.
func (h *tailHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for r := range h.readers {
		delete(h.readers, r)
		close(r.done)
		h.budget.Release(tailReaderBytes)
	}
	h.n.Store(0)
}

// publish offers the log groups of an accepted batch to every reader. It
// never blocks: a reader whose queue is full, or a group the budget cannot
// take, is dropped for that reader (counted).
func (h *tailHub) publish(b *buffer.Batch) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	groups := b.Groups()
	for i := range groups {
		g := &groups[i]
		if g.Stream != buffer.StreamLogs || len(g.Data) == 0 {
			continue
		}
		svc := g.Key
		if j := bytes.IndexByte(svc, '/'); j >= 0 {
			svc = svc[:j]
		}
		size := int64(len(g.Data))
		var c *tailChunk
		spent := false // the budget refused this group
		for r := range h.readers {
			if !r.wants(svc) {
				continue
			}
			if c == nil && !spent {
				if spent = !h.budget.TryAcquire(size); !spent {
					c = &tailChunk{data: bytes.Clone(g.Data), events: g.Events, budget: h.budget}
					c.refs.Store(1) // publish's own, given up below
				}
			}
			if c == nil || r.held.Add(size) > tailQueueBytes {
				if c != nil {
					r.held.Add(-size)
				}
				h.drop(r, g.Events)
				continue
			}
			c.refs.Add(1)
			select {
			case r.queue <- c:
			default:
				c.refs.Add(-1)
				r.held.Add(-size)
				h.drop(r, g.Events)
			}
		}
		if c != nil {
			c.finish()
		}
	}
}

func (h *tailHub) drop(r *tailReader, events int) {
	r.dropped.Add(int64(events))
	h.dropped(events)
}

// publishTail hands an accepted batch to the live tail, if anyone follows it.
func (s *Server) publishTail(b *buffer.Batch) {
	if s.tail.active() {
		s.tail.publish(b)
	}
}

// tailFilter is what a tail reader keeps of the lines it is offered.
type tailFilter struct {
	level logline.Level
	text  []byte
}

func (f *tailFilter) match(e *logline.Event) bool {
	if f.level != logline.LevelNone && e.Level < f.level {
		return false
	}
	return len(f.text) == 0 || bytes.Contains(e.Message, f.text)
}

// tailLogs handles GET /v1/tail?service=S[&level=L][&q=TEXT][&local=1].
func (s *Server) tailLogs(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	services := query.ParseServices(string(args.Peek("service")))
	if len(services) == 0 {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "cannot tail: no service given; name one or more (comma separated), or * for all"})
		return
	}
	r := newTailReader()
	if services[0] == "*" {
		r.all = true
	} else {
		r.services = map[string]bool{}
		for _, svc := range services {
			r.services[string(logline.AppendService(nil, []byte(svc)))] = true
		}
	}
	var f tailFilter
	if lv := args.Peek("level"); len(lv) > 0 {
		l, ok := logline.ParseLevel(lv)
		if !ok {
			writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: fmt.Sprintf("unknown level %q", lv)})
			return
		}
		f.level = l
	}
	f.text = bytes.Clone(args.Peek("q"))
	if !s.admitTail(ctx, r) {
		return
	}
	conn := ctx.Conn()
	r.abort = func() { conn.Close() }
	// The same selection from every other instance, unless this is one of
	// those streams itself.
	var peerQuery string
	if s.deps.Cluster != nil && string(args.Peek("local")) != "1" {
		peerQuery = url.Values{"service": {string(args.Peek("service"))}, "level": {string(args.Peek("level"))}, "q": {string(f.text)}, "local": {"1"}}.Encode()
	}
	s.met.tailReaders.Inc()
	ctx.SetContentType("application/x-ndjson")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
	ctx.SetStatusCode(fasthttp.StatusOK)
	// The headers go out at once, before any event: a client (another
	// instance's fan-out among them) knows the tail is on.
	ctx.Response.ImmediateHeaderFlush = true
	s.streamBody(ctx, func() {}, func(w *bufio.Writer) {
		defer s.met.tailReaders.Dec()
		defer r.drain()
		defer s.tail.remove(r)
		if peerQuery != "" {
			peers, stop := context.WithCancel(context.Background())
			defer stop()
			// A panic in the fan-out ends it, and the tail goes on
			// with this instance's events.
			s.goGuarded("/v1/tail", func() { s.followPeers(peers, r, peerQuery) })
		}
		s.streamTail(w, r, &f)
	})
}

// admitTail registers r with the hub, or answers 503 (shutting down) or
// 429 (--max-tail-readers or --tail-budget-bytes reached).
func (s *Server) admitTail(ctx *fasthttp.RequestCtx, r *tailReader) bool {
	if err := s.addTail(r); err != nil {
		writeError(ctx, err)
		return false
	}
	return true
}

// addTail registers r with the hub; its error carries the status: 503
// while shutting down, 429 past --max-tail-readers or --tail-budget-bytes.
func (s *Server) addTail(r *tailReader) error {
	err := errTailClosed
	if !s.closing.Load() {
		err = s.tail.add(r)
	}
	switch {
	case errors.Is(err, errTailClosed):
		return &httperr.Error{Status: fasthttp.StatusServiceUnavailable, Msg: err.Error()}
	case errors.Is(err, errTailFull):
		return &httperr.Error{Status: fasthttp.StatusTooManyRequests, RetryAfter: 10 * time.Second,
			Msg: fmt.Sprintf("cannot tail: %d tails are open, the most this server follows at once (each client tail opens one on every instance); close one or raise --max-tail-readers (and --tail-budget-bytes)", s.tail.max)}
	}
	return err
}

// streamTail writes r's matching events until the client goes away or the
// server shuts down.
func (s *Server) streamTail(w *bufio.Writer, r *tailReader, f *tailFilter) {
	tw := newTailWriter(w, r, &s.tail)
	defer tw.close()
	idle := time.NewTimer(s.tail.heartbeat)
	defer idle.Stop()
	for {
		var err error
		select {
		case <-r.done:
			return
		case <-idle.C:
			err = tw.write([]byte{'\n'})
		case c := <-r.queue:
			err = tw.lines(c.data, f)
			r.held.Add(-int64(len(c.data)))
			c.finish()
		case c := <-r.peers:
			err = tw.write(c.data)
			c.finish()
		}
		if err == nil {
			err = tw.reportDropped()
		}
		if err == nil && len(r.queue) == 0 {
			err = tw.flush()
		}
		tw.idle()
		if err != nil {
			return
		}
		idle.Reset(s.tail.heartbeat)
	}
}

// tailWriter writes one reader's stream: lines encoded one at a time into
// a scratch buffer charged to the budget, written in pieces of at most the
// stream buffer's size, each piece under the stall watch.
type tailWriter struct {
	w       *bufio.Writer
	r       *tailReader
	hub     *tailHub
	scratch []byte
	held    int64       // budget charged for scratch beyond tailReaderBytes
	watch   *time.Timer // fires r.abort when a write makes no progress
	ev      logline.Event
}

func newTailWriter(w *bufio.Writer, r *tailReader, hub *tailHub) *tailWriter {
	t := &tailWriter{w: w, r: r, hub: hub, scratch: make([]byte, 0, 1024)}
	if r.abort != nil {
		t.watch = time.AfterFunc(time.Hour, r.abort)
		t.watch.Stop()
	}
	return t
}

// lines encodes and writes the stored lines of data that f matches.
func (t *tailWriter) lines(data []byte, f *tailFilter) error {
	defer t.shrink()
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		if logline.Parse(line, &t.ev) != nil || !f.match(&t.ev) {
			continue
		}
		// An encoded line is at most twice the stored one plus its field
		// names: reserve that before encoding, so append never grows it.
		if !t.reserve(2*len(line) + 256) {
			t.hub.drop(t.r, 1)
			continue
		}
		t.scratch = query.AppendNDJSON(t.scratch[:0], &t.ev)
		if err := t.write(t.scratch); err != nil {
			return err
		}
	}
	return nil
}

// reserve makes scratch hold n bytes, charging the budget for the growth.
func (t *tailWriter) reserve(n int) bool {
	if cap(t.scratch) >= n {
		return true
	}
	grow := int64(n - cap(t.scratch))
	if !t.hub.budget.TryAcquire(grow) {
		return false
	}
	t.held += grow
	t.scratch = make([]byte, 0, n)
	return true
}

// shrink gives back a scratch grown past tailScratchKeep by a long line.
func (t *tailWriter) shrink() {
	if cap(t.scratch) > tailScratchKeep {
		t.hub.budget.Release(t.held)
		t.held = 0
		t.scratch = make([]byte, 0, 1024)
	}
}

// write writes p in pieces no larger than the stream's buffer, so the pipe
// to the connection never copies more than that at once.
func (t *tailWriter) write(p []byte) error {
	for len(p) > 0 {
		if t.w.Available() == 0 {
			if err := t.flush(); err != nil {
				return err
			}
		}
		n := min(len(p), t.w.Available())
		if _, err := t.w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// flush sends what is buffered, under the stall watch.
func (t *tailWriter) flush() error {
	if t.watch != nil {
		t.watch.Reset(t.hub.stall)
	}
	return t.w.Flush()
}

// idle stops the stall watch between writes.
func (t *tailWriter) idle() {
	if t.watch != nil {
		t.watch.Stop()
	}
}

// reportDropped writes the marker of the events dropped since the last one.
func (t *tailWriter) reportDropped() error {
	n := t.r.dropped.Swap(0)
	if n == 0 {
		return nil
	}
	t.scratch = query.AppendDroppedLine(t.scratch[:0], n)
	return t.write(t.scratch)
}

func (t *tailWriter) close() {
	t.idle()
	t.hub.budget.Release(t.held)
	t.held = 0
}
