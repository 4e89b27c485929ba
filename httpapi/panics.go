package httpapi

import (
	"bufio"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
	"ingest/query"
)

// No request can end the process: fasthttp recovers nothing, so a panic in
// a handler, in a response body writer (which fasthttp runs on a goroutine
// of its own) or in a goroutine a request starts would. handle recovers
// the handlers' (a 500), streamBody the body writers' (an in-band error
// line ends the answer), goGuarded and recoverStream those of the
// goroutines a request starts and of hijacked connections (that goroutine
// ends), and the query and login readers return their goroutines' panics
// as a *httperr.Panic. Each is counted
// (ingest_panics_total) and logged with its stack once per place and
// minute: a client repeating a request that panics does not flood the log.

// panicLogEvery is how often one place's panics are logged with a stack.
const panicLogEvery = time.Minute

// panicLogSites bounds the places remembered; past it the memory starts
// again (a flood of distinct places is logged at most that many times a
// minute).
const panicLogSites = 1024

// panicLog logs recovered panics, rate-limited per place.
type panicLog struct {
	log   *slog.Logger
	count *prometheus.CounterVec // by where: handler, stream

	mu    sync.Mutex
	sites map[string]*panicSite
}

type panicSite struct {
	logged time.Time
	missed int // panics at the site not logged since
}

func newPanicLog(log *slog.Logger, count *prometheus.CounterVec) *panicLog {
	return &panicLog{log: log, count: count, sites: map[string]*panicSite{}}
}

// report counts a recovered panic and logs it with its stack, unless its
// place was logged less than panicLogEvery ago.
func (p *panicLog) report(where string, path []byte, e *httperr.Panic) {
	p.count.WithLabelValues(where).Inc()
	now := time.Now()
	key := where + " " + e.Site
	p.mu.Lock()
	site := p.sites[key]
	if site == nil {
		if len(p.sites) >= panicLogSites {
			clear(p.sites)
		}
		site = &panicSite{}
		p.sites[key] = site
	}
	if !site.logged.IsZero() && now.Sub(site.logged) < panicLogEvery {
		site.missed++
		p.mu.Unlock()
		return
	}
	missed := site.missed
	site.logged, site.missed = now, 0
	p.mu.Unlock()
	p.log.Error("recovered from a panic: the request failed, the server goes on",
		"where", where, "path", string(path), "panic", fmt.Sprint(e.Value), "site", e.Site,
		"not_logged_since", missed, "stack", string(e.Stack))
}

// errInternal is what a client is told of a panic: the details are in the
// server's log.
const errInternal = "cannot serve the request: internal error (the server logged it)"

// recovered answers a request whose handler panicked with p: 500, unless
// nothing can be said any more. A body writer the handler had set is
// dropped (its writes then fail and it ends).
func (s *Server) recovered(ctx *fasthttp.RequestCtx, p any) {
	s.panics.report("handler", ctx.Path(), httperr.NewPanic(p))
	ctx.Response.Reset()
	ctx.SetConnectionClose()
	writeError(ctx, &httperr.Error{Status: fasthttp.StatusInternalServerError, Msg: errInternal})
}

// streamBody sets write as the response body: fasthttp runs it on a
// goroutine of its own once the handler returns. A panic in it ends the
// answer with an in-band error line (the headers are gone) and is logged
// and counted. done runs at the end in any case (a query slot is given
// back there).
func (s *Server) streamBody(ctx *fasthttp.RequestCtx, done func(), write func(w *bufio.Writer)) {
	path := string(ctx.Path())
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer done()
		defer func() {
			if p := recover(); p != nil {
				s.inBandError(w, path, httperr.NewPanic(p))
			}
		}()
		write(w)
	})
}

// goGuarded runs f on a goroutine of its own that a panic ends instead of
// the process, logged and counted as a stream panic of path: fasthttp
// recovers nothing on the goroutines a request starts (peer streams, a
// WebSocket's reader).
func (s *Server) goGuarded(path string, f func()) {
	go func() {
		defer s.recoverStream(path)
		f()
	}()
}

// recoverStream, deferred first on a goroutine serving one request (a
// hijacked connection, which fasthttp runs on a goroutine of its own),
// ends that goroutine instead of the process on a panic, logged and
// counted as a stream panic of path.
func (s *Server) recoverStream(path string) {
	if p := recover(); p != nil {
		s.panics.report("stream", []byte(path), httperr.NewPanic(p))
	}
}

// inBandError ends a streamed answer with the control line reporting err;
// a *httperr.Panic (a reader's goroutine panicked) is logged and counted,
// and the client is told no more than that it happened.
func (s *Server) inBandError(w *bufio.Writer, path string, err error) {
	msg := err.Error()
	if e, ok := httperr.PanicOf(err); ok {
		s.panics.report("stream", []byte(path), e)
		msg = errInternal
	}
	w.Write(query.AppendErrorLine(nil, msg))
}
