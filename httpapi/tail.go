package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/buffer"
	"ingest/internal/httperr"
	"ingest/logline"
	"ingest/query"
)

// Live tail (GET /v1/tail). The intake path hands every accepted batch's
// encoded log lines to the hub, which costs one atomic load when nobody
// tails. With readers, each (service, hour) group of lines is copied once and
// offered to every reader whose services include it; a reader's queue holds
// at most tailQueueBytes, past which a group is dropped for that reader only
// and counted. Filtering by level and text, and encoding as NDJSON, happen in
// the reader's own goroutine, never on the intake path.

// tailQueueBytes bounds the encoded lines waiting for one tail reader.
const tailQueueBytes = 4 << 20

// tailQueueChunks bounds the groups waiting for one tail reader.
const tailQueueChunks = 1024

// tailHeartbeat is how often an idle tail writes an empty line, so a reader
// that went away is noticed (a write fails) and released. A variable for
// tests.
var tailHeartbeat = 10 * time.Second

// tailChunk is one group's lines, shared read-only by every reader it went to.
type tailChunk struct {
	data   []byte
	events int
}

// tailReader is one GET /v1/tail client.
type tailReader struct {
	all      bool            // every service
	services map[string]bool // normalised names, when !all
	queue    chan tailChunk
	queued   atomic.Int64 // bytes in queue
	dropped  atomic.Int64 // events dropped since the reader last reported them
	done     chan struct{}
}

func (r *tailReader) wants(service []byte) bool {
	return r.all || r.services[string(service)]
}

// tailHub fans accepted lines out to the tail readers.
type tailHub struct {
	n       atomic.Int32 // readers: the intake path's only cost when 0
	mu      sync.RWMutex
	readers map[*tailReader]struct{}
	closed  bool
	dropped func(n int) // metric hook
}

// active reports whether anyone tails; cheap enough for every request.
func (h *tailHub) active() bool { return h.n.Load() > 0 }

func (h *tailHub) add(r *tailReader) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	if h.readers == nil {
		h.readers = map[*tailReader]struct{}{}
	}
	h.readers[r] = struct{}{}
	h.n.Store(int32(len(h.readers)))
	return true
}

func (h *tailHub) remove(r *tailReader) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.readers[r]; ok {
		delete(h.readers, r)
		close(r.done)
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
	}
	h.n.Store(0)
}

// publish offers the log groups of an accepted batch to every reader. It
// never blocks: a reader whose queue is full loses the group (counted).
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
		var c tailChunk
		for r := range h.readers {
			if !r.wants(svc) {
				continue
			}
			if r.queued.Load()+int64(len(g.Data)) > tailQueueBytes {
				r.dropped.Add(int64(g.Events))
				h.dropped(g.Events)
				continue
			}
			if c.data == nil {
				c = tailChunk{data: bytes.Clone(g.Data), events: g.Events}
			}
			select {
			case r.queue <- c:
				r.queued.Add(int64(len(c.data)))
			default:
				r.dropped.Add(int64(g.Events))
				h.dropped(g.Events)
			}
		}
	}
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

// tailLogs handles GET /v1/tail?service=S[&level=L][&q=TEXT].
func (s *Server) tailLogs(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	services := query.ParseServices(string(args.Peek("service")))
	if len(services) == 0 {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "cannot tail: no service given; name one or more (comma separated), or * for all"})
		return
	}
	r := &tailReader{queue: make(chan tailChunk, tailQueueChunks), done: make(chan struct{})}
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
	if s.closing.Load() || !s.tail.add(r) {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusServiceUnavailable, Msg: "shutting down: tail another instance"})
		return
	}
	s.met.tailReaders.Inc()
	ctx.SetContentType("application/x-ndjson")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.met.tailReaders.Dec()
		defer s.tail.remove(r)
		s.streamTail(w, r, &f)
	})
}

// streamTail writes r's matching events until the client goes away or the
// server shuts down.
func (s *Server) streamTail(w *bufio.Writer, r *tailReader, f *tailFilter) {
	// The headers go out at once, so a client knows the tail is on.
	if w.Flush() != nil {
		return
	}
	var ev logline.Event
	var out []byte
	idle := time.NewTimer(tailHeartbeat)
	defer idle.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-idle.C:
			if w.WriteByte('\n') != nil || w.Flush() != nil {
				return
			}
		case c := <-r.queue:
			r.queued.Add(-int64(len(c.data)))
			out = out[:0]
			for data := c.data; len(data) > 0; {
				line := data
				if i := bytes.IndexByte(data, '\n'); i >= 0 {
					line, data = data[:i+1], data[i+1:]
				} else {
					data = nil
				}
				if logline.Parse(line, &ev) != nil || !f.match(&ev) {
					continue
				}
				out = query.AppendNDJSON(out, &ev)
			}
			if _, err := w.Write(out); err != nil {
				return
			}
		}
		if n := r.dropped.Swap(0); n > 0 {
			// In-band, so the reader knows the stream has a gap.
			out = query.AppendDroppedLine(out[:0], n)
			if _, err := w.Write(out); err != nil {
				return
			}
		}
		if len(r.queue) == 0 {
			if w.Flush() != nil {
				return
			}
		}
		idle.Reset(tailHeartbeat)
	}
}
