package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/buffer"
	"ingest/intake"
	"ingest/logline"
	"ingest/tablesink"
)

// Streams of the buffer: which sink a group goes to.
const (
	StreamLogs   buffer.Stream = 0
	StreamLogins buffer.Stream = 1
)

const hourNanos = int64(time.Hour)

// reqState is one request's reusable memory.
type reqState struct {
	body    []byte
	decoded []byte
	batch   buffer.Batch
	key     []byte
	record  []byte
	// log events: the group of the previous event, to skip the key lookup
	lastSvc  []byte
	lastHour int64
	lastG    *buffer.Group // valid until the batch's next Group call
	lastIdx  int
	counts   []groupCount
	attempt  tablesink.Attempt
	loginErr []intake.LineError
}

// groupCount tallies a group's events per level for the stats counters.
type groupCount struct {
	svcLen int // the key's service prefix length
	hour   int64
	levels [7]int
}

var statePool = sync.Pool{New: func() any { return new(reqState) }}

func (st *reqState) reset() {
	st.batch.Reset()
	st.lastSvc = st.lastSvc[:0]
	st.lastHour = -1 << 62
	st.lastG = nil
	st.counts = st.counts[:0]
	st.loginErr = st.loginErr[:0]
	if cap(st.body) > 8<<20 {
		st.body = nil
	}
	if cap(st.decoded) > 8<<20 {
		st.decoded = nil
	}
}

// ingest handles POST /v1/logs[/{service}] and POST /v1/logins.
func (s *Server) ingest(ctx *fasthttp.RequestCtx, logins bool) {
	if s.closing.Load() {
		writeError(ctx, &httpError{fasthttp.StatusServiceUnavailable, "shutting down: send to another instance or retry"})
		return
	}
	s.active.Add(1)
	defer s.active.Done()

	st := statePool.Get().(*reqState)
	st.reset()
	defer statePool.Put(st)

	// Reserve memory for the body before reading it.
	reserved := int64(ctx.Request.Header.ContentLength())
	if reserved < 0 { // chunked: reserve the most it may be
		reserved = s.cfg.MaxBodyBytes
	}
	if reserved > s.cfg.MaxBodyBytes {
		writeError(ctx, &httpError{fasthttp.StatusRequestEntityTooLarge, fmt.Sprintf("body of %d bytes is over --max-body-bytes (%d)", reserved, s.cfg.MaxBodyBytes)})
		return
	}
	if !s.inflight.acquire(reserved, 100*time.Millisecond) {
		s.met.inflightFull.Inc()
		writeError(ctx, &httpError{fasthttp.StatusTooManyRequests, "too many request bytes in flight: retry shortly, or raise --max-inflight-bytes"})
		return
	}
	defer func() { s.inflight.release(reserved) }()

	body, err := s.readBody(ctx, st)
	if err != nil {
		writeError(ctx, err)
		return
	}
	s.met.bytesIn.Add(float64(len(body)))
	if enc := ctx.Request.Header.Peek("Content-Encoding"); len(enc) > 0 && !bytes.EqualFold(enc, []byte("identity")) {
		st.decoded, err = intake.Decompress(st.decoded[:0], body, string(enc), int(s.cfg.MaxDecompressedBytes))
		if err != nil {
			writeError(ctx, err)
			return
		}
		// The decoded body is held too: count it, or refuse.
		extra := int64(len(st.decoded))
		if !s.inflight.acquire(extra, 100*time.Millisecond) {
			s.met.inflightFull.Inc()
			writeError(ctx, &httpError{fasthttp.StatusTooManyRequests, "too many request bytes in flight: retry shortly, or raise --max-inflight-bytes"})
			return
		}
		reserved += extra
		body = st.decoded
	}
	// The encoded lines about match the decoded body in size: count them too.
	if !s.inflight.acquire(int64(len(body)), 100*time.Millisecond) {
		s.met.inflightFull.Inc()
		writeError(ctx, &httpError{fasthttp.StatusTooManyRequests, "too many request bytes in flight: retry shortly, or raise --max-inflight-bytes"})
		return
	}
	reserved += int64(len(body))
	format, err := intake.DetectFormat(string(ctx.Request.Header.ContentType()), body, !logins)
	if err != nil {
		writeError(ctx, err)
		return
	}

	p := intake.GetParser()
	defer intake.PutParser(p)
	d := intake.Defaults{Now: time.Now().UnixNano()}
	var res intake.Result
	if logins {
		res, err = p.ParseLogins(body, format, d, func(l *intake.Login) error { return s.addLogin(st, l) })
	} else {
		d.Service = s.serviceOf(ctx)
		res, err = p.ParseLogs(body, format, d, func(e *logline.Event) { s.addEvent(st, e) })
	}
	if err != nil {
		writeError(ctx, err)
		return
	}
	s.met.eventsRejected.Add(float64(res.Rejected))
	if res.Accepted == 0 {
		s.writeResult(ctx, fasthttp.StatusBadRequest, &res, format)
		return
	}
	if err := s.deps.Buffer.Add(context.Background(), &st.batch); err != nil {
		switch {
		case errors.Is(err, buffer.ErrFull):
			err = &httpError{fasthttp.StatusTooManyRequests, err.Error()}
		case errors.Is(err, buffer.ErrClosed):
			err = &httpError{fasthttp.StatusServiceUnavailable, err.Error()}
		}
		writeError(ctx, err)
		return
	}
	if !logins && s.deps.Counters != nil {
		for i := range st.counts {
			c := &st.counts[i]
			svc := st.batch.Groups()[i].Key[:c.svcLen]
			for l, n := range c.levels {
				if n > 0 {
					s.deps.Counters.Add(svc, c.hour*hourNanos, logline.Level(l), n)
				}
			}
		}
	}
	s.met.eventsAccepted.Add(float64(res.Accepted))
	s.writeResult(ctx, fasthttp.StatusAccepted, &res, format)
}

// readBody reads the request body under --max-body-bytes.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, st *reqState) ([]byte, error) {
	r := ctx.RequestBodyStream()
	if r == nil {
		return ctx.Request.Body(), nil
	}
	limit := s.cfg.MaxBodyBytes
	buf := st.body[:0]
	if n := ctx.Request.Header.ContentLength(); n > 0 && int64(n) <= limit && cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			st.body = buf[:0]
			return nil, &httpError{fasthttp.StatusRequestEntityTooLarge, fmt.Sprintf("body is over --max-body-bytes (%d)", limit)}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			st.body = buf[:0]
			if errors.Is(err, fasthttp.ErrBodyTooLarge) {
				return nil, &httpError{fasthttp.StatusRequestEntityTooLarge, fmt.Sprintf("body is over --max-body-bytes (%d)", limit)}
			}
			return nil, &httpError{fasthttp.StatusBadRequest, "cannot read the body: " + err.Error()}
		}
	}
	st.body = buf
	return buf, nil
}

// serviceOf is the default service of a logs request: the path's, else
// ?service=, else X-Service (an event's own field wins over all of them).
func (s *Server) serviceOf(ctx *fasthttp.RequestCtx) []byte {
	if p := ctx.Path(); len(p) > len("/v1/logs/") {
		return p[len("/v1/logs/"):]
	}
	if v := ctx.QueryArgs().Peek("service"); len(v) > 0 {
		return v
	}
	return ctx.Request.Header.Peek("X-Service")
}

// addEvent encodes one log event into its (service, hour) group.
func (s *Server) addEvent(st *reqState, e *logline.Event) {
	hour := e.Time / hourNanos
	if e.Time < 0 && e.Time%hourNanos != 0 {
		hour--
	}
	g := st.lastG
	if g == nil || hour != st.lastHour || !bytes.Equal(e.Service, st.lastSvc) {
		st.key = logline.AppendToken(st.key[:0], e.Service)
		svcLen := len(st.key)
		st.key = append(st.key, '/')
		st.key = logline.HourPrefix(st.key, e.Time)
		g = st.batch.Group(StreamLogs, st.key)
		groups := st.batch.Groups()
		if len(groups) > len(st.counts) {
			st.counts = append(st.counts, groupCount{svcLen: svcLen, hour: hour})
		}
		for i := range groups {
			if &groups[i] == g {
				st.lastIdx = i
			}
		}
		st.lastG, st.lastHour = g, hour
		st.lastSvc = append(st.lastSvc[:0], e.Service...)
	}
	g.Data = logline.AppendLine(g.Data, e)
	g.Events++
	st.counts[st.lastIdx].levels[e.Level]++
}

// addLogin encodes one login attempt into its day table's group.
func (s *Server) addLogin(st *reqState, l *intake.Login) error {
	a := &st.attempt
	*a = tablesink.Attempt{Time: l.Time, User: l.User, IP: l.IP, UA: l.UA, ID: l.ID,
		Success: l.Success, HasSuccess: l.HasSuccess, Props: l.Props}
	key, rec, err := s.deps.Logins.AppendRecord(st.record[:0], a)
	st.record = rec
	if err != nil {
		return err
	}
	st.key = append(st.key[:0], key...)
	g := st.batch.Group(StreamLogins, st.key)
	g.Data = append(g.Data, rec...)
	g.Events++
	return nil
}

// writeResult answers with the batch's counts and line errors.
func (s *Server) writeResult(ctx *fasthttp.RequestCtx, status int, res *intake.Result, f intake.Format) {
	if f == intake.FormatOTLPProto || f == intake.FormatOTLPJSON {
		writeOTLPResult(ctx, status, res, f)
		return
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(append(res.AppendJSON(ctx.Response.Body()[:0]), '\n'))
}
