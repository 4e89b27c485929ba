package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/buffer"
	"ingest/intake"
	"ingest/internal/httperr"
	"ingest/logline"
	"ingest/tablesink"
)

const hourNanos = int64(time.Hour)

// reqState is one request's reusable memory.
type reqState struct {
	body    []byte
	decoded []byte
	batch   buffer.Batch
	key     []byte
	svc     []byte // the current group's service, as stored (AppendService)
	record  []byte
	enc     logline.Encoder // keeps the last minute's time stamp across events
	// log events: the groups found so far by the event's own service and
	// hour, to skip encoding the key of every event
	seen     []seenGroup
	seenSlot [seenSlots]uint8 // by seenHash: index in seen + 1, or 0
	keys     []groupKey       // by group index
	attempt  tablesink.Attempt
	loginErr []intake.LineError
}

// groupKey is what the request keeps of a log group's key.
type groupKey struct {
	svcLen int // the key's service prefix length
}

var statePool = sync.Pool{New: func() any { return new(reqState) }}

func (st *reqState) reset() {
	st.batch.Reset()
	st.seen = st.seen[:0]
	clear(st.seenSlot[:])
	st.keys = st.keys[:0]
	st.loginErr = st.loginErr[:0]
	if cap(st.body) > 8<<20 {
		st.body = nil
	}
	if cap(st.decoded) > 8<<20 {
		st.decoded = nil
	}
}

// inflightWait is how long a request waits for --max-inflight-bytes to
// free up before it is refused with 429.
const inflightWait = 100 * time.Millisecond

// readStep is how much a request's body buffer grows by at least, and
// the unit of its reservations.
const readStep = 64 << 10

// ingest handles POST /v1/logs[/{service}] and POST /v1/logins: receive
// the body, parse it into the request's batch, add the batch to the
// buffer, answer.
func (s *Server) ingest(ctx *fasthttp.RequestCtx, logins bool) {
	if s.closing.Load() {
		writeError(ctx, errShuttingDown)
		return
	}
	s.active.Add(1)
	defer s.active.Done()

	st := statePool.Get().(*reqState)
	st.reset()
	defer statePool.Put(st)

	// Memory is reserved against --max-inflight-bytes as the body arrives,
	// never for what a header declares: a stalled upload holds only what it
	// sent, and its connection, not everyone's budget.
	var held int64
	defer func() { s.inflight.Release(held) }()
	body, format, err := s.receive(ctx, st, &held, logins)
	if err != nil {
		writeError(ctx, err)
		return
	}
	p := intake.GetParser()
	defer intake.PutParser(p)
	res, err := s.parse(ctx, st, p, body, format, logins)
	if err != nil {
		writeError(ctx, err)
		return
	}
	s.met.eventsRejected.Add(float64(res.Rejected))
	if res.Accepted == 0 {
		s.writeResult(ctx, fasthttp.StatusBadRequest, &res, format)
		return
	}
	if !logins {
		if err := checkWriteScope(ctx, &st.batch); err != nil {
			writeError(ctx, err)
			return
		}
	}
	err = s.addBatch(&st.batch)
	pending := errors.Is(err, buffer.ErrAckTimeout)
	if err != nil && !pending {
		writeError(ctx, err)
		return
	}
	s.accepted(st, &res, logins)
	if pending {
		s.writePending(ctx, &res, format, err)
		return
	}
	ctx.Response.Header.Set("X-Ingest-Ack", string(s.deps.Buffer.Ack()))
	s.writeResult(ctx, fasthttp.StatusAccepted, &res, format)
}

// receive reads the body under --max-body-bytes, decompresses it and
// reserves --max-inflight-bytes for what the request holds (held), and
// tells its format.
func (s *Server) receive(ctx *fasthttp.RequestCtx, st *reqState, held *int64, logins bool) ([]byte, intake.Format, error) {
	if n := int64(ctx.Request.Header.ContentLength()); n > s.cfg.MaxBodyBytes {
		s.answerThenLinger(ctx)
		return nil, 0, httperr.New(fasthttp.StatusRequestEntityTooLarge, "cannot accept a body of %d bytes: it is over --max-body-bytes (%d)", n, s.cfg.MaxBodyBytes)
	}
	body, err := s.readBody(ctx, st, held)
	if err != nil {
		return nil, 0, err
	}
	s.met.bytesIn.Add(float64(len(body)))
	if body, err = s.decode(ctx, st, held, body); err != nil {
		return nil, 0, err
	}
	// The encoded lines about match the decoded body in size: count them too.
	if err := s.reserve(ctx, held, int64(len(body))); err != nil {
		return nil, 0, err
	}
	format, err := intake.DetectFormat(string(ctx.Request.Header.ContentType()), body, !logins)
	return body, format, err
}

// decode undoes the body's Content-Encoding into st.decoded, reserving
// what the decoded body holds; an identity body is returned as it is.
func (s *Server) decode(ctx *fasthttp.RequestCtx, st *reqState, held *int64, body []byte) ([]byte, error) {
	enc := ctx.Request.Header.Peek("Content-Encoding")
	if len(enc) == 0 || bytes.EqualFold(enc, []byte("identity")) {
		return body, nil
	}
	var err error
	st.decoded, err = intake.Decompress(st.decoded[:0], body, string(enc), int(s.cfg.MaxDecompressedBytes))
	if err != nil {
		return nil, err
	}
	// The decoded body is held too: count it, or refuse.
	if err := s.reserve(ctx, held, int64(len(st.decoded))); err != nil {
		return nil, err
	}
	return st.decoded, nil
}

// parse parses body into the request's batch: log events grouped per
// service and hour, or login attempts per day table.
func (s *Server) parse(ctx *fasthttp.RequestCtx, st *reqState, p *intake.Parser, body []byte, format intake.Format, logins bool) (intake.Result, error) {
	d := intake.Defaults{Now: time.Now().UnixNano()}
	if logins {
		return p.ParseLogins(body, format, d, func(l *intake.Login) error { return s.addLogin(st, l) })
	}
	d.Service = s.serviceOf(ctx)
	return p.ParseLogs(body, format, d, func(e *logline.Event) { s.addEvent(st, e) })
}

// addBatch adds the batch to the buffer; when it returns nil or
// ErrAckTimeout the batch is as safe as --ack promises (ErrAckTimeout: in
// the write-ahead log, not yet in storage).
func (s *Server) addBatch(batch *buffer.Batch) error {
	// The request's deadline: --ack-timeout bounds the wait for storage
	// (the buffer answers ErrAckTimeout first), the margin covers the rest.
	// Not derived from ctx: a fasthttp.RequestCtx parent costs a goroutine
	// per request, and shutdown waits for requests in progress anyway.
	c, cancel := context.WithTimeout(context.Background(), s.deps.Buffer.AckTimeout()+time.Second)
	defer cancel()
	return s.deps.Buffer.Add(c, batch)
}

// accepted counts an accepted batch (metrics) and shows its log events to
// live tails.
func (s *Server) accepted(st *reqState, res *intake.Result, logins bool) {
	s.met.eventsAccepted.Add(float64(res.Accepted))
	if !logins {
		s.publishTail(&st.batch)
	}
}

// writePending answers a batch that --ack-timeout cut short: still a 2xx,
// and true: the batch is in the fsync'd WAL and will be stored. A client
// that resent it would store it twice.
func (s *Server) writePending(ctx *fasthttp.RequestCtx, res *intake.Result, format intake.Format, err error) {
	s.met.ackTimeouts.Inc()
	ctx.Response.Header.Set("X-Ingest-Ack", string(buffer.AckWAL))
	s.writeResult(ctx, fasthttp.StatusAccepted, res, format)
	if format != intake.FormatOTLPProto && format != intake.FormatOTLPJSON {
		b := ctx.Response.Body()
		b = append(b[:len(b)-2], `,"stored":false,"message":`...) // drop "}\n"
		b = logline.AppendQuoted(b, []byte(err.Error()))
		ctx.SetBody(append(b, "}\n"...))
	}
}

// reserve adds n bytes to the request's share of --max-inflight-bytes
// (held), or returns the 429 refusal.
func (s *Server) reserve(ctx context.Context, held *int64, n int64) error {
	if err := s.inflight.Acquire(ctx, n, inflightWait); err != nil {
		s.met.inflightFull.Inc()
		return err
	}
	*held += n
	return nil
}

// readBody reads the request body under --max-body-bytes, reserving
// --max-inflight-bytes a step at a time for bytes that have arrived. The
// buffer grows as the body does: a declared Content-Length is a limit to
// check, not memory to set aside.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, st *reqState, held *int64) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	r := ctx.RequestBodyStream()
	if r == nil {
		body := ctx.Request.Body()
		return body, s.reserve(ctx, held, int64(len(body)))
	}
	tooLarge := func() error {
		s.answerThenLinger(ctx)
		return httperr.New(fasthttp.StatusRequestEntityTooLarge, "cannot accept the body: it is over --max-body-bytes (%d)", limit)
	}
	declared := ctx.Request.Header.ContentLength()
	buf := st.body[:0]
	defer func() { st.body = buf[:0] }()
	for declared < 0 || len(buf) < declared {
		if len(buf) == cap(buf) {
			grow := max(cap(buf), readStep)
			if declared > 0 {
				grow = min(grow, declared-len(buf))
			}
			buf = slices.Grow(buf, grow)
		}
		// Read as much as the buffer holds (one step past the limit at
		// most): a pooled buffer usually holds the whole body, and one
		// read takes whatever the socket has, instead of one read per step.
		n, err := r.Read(buf[len(buf):min(cap(buf), int(limit)+1)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, tooLarge()
		}
		if lack := int64(len(buf)) - *held; lack > 0 {
			if err := s.reserve(ctx, held, (lack+readStep-1)/readStep*readStep); err != nil {
				return nil, err
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, fasthttp.ErrBodyTooLarge) {
				return nil, tooLarge()
			}
			return nil, httperr.New(fasthttp.StatusBadRequest, "cannot read the body: %v", err)
		}
	}
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

// seenGroup maps an event's service as sent and its hour to its group.
type seenGroup struct {
	svc  []byte
	hour int64
	idx  int // in the batch's groups and st.keys
}

// maxSeen bounds the groups looked up by the event's own service: a
// request of many services falls back to encoding every key.
const maxSeen = 64

// seenSlots is the size of the index of seen: a power of two above
// maxSeen, so that services rarely share a slot.
const seenSlots = 128

// seenHash picks the slot of a service as sent and an hour from a few of
// the name's bytes: a slot says where to look, the entry there decides.
func seenHash(svc []byte, hour int64) int {
	h := uint64(len(svc)) ^ uint64(hour)<<8
	if n := len(svc); n > 0 {
		h ^= uint64(svc[0])<<16 | uint64(svc[n/2])<<24 | uint64(svc[n-1])<<32
	}
	return int((h * 0x9e3779b97f4a7c15) >> (64 - 7))
}

// addEvent encodes one log event into its (service, hour) group.
func (s *Server) addEvent(st *reqState, e *logline.Event) {
	hour := e.Time / hourNanos
	if e.Time < 0 && e.Time%hourNanos != 0 {
		hour--
	}
	i, ok := st.findGroup(e.Service, hour)
	if !ok {
		i = st.addGroup(e, hour)
	}
	g := &st.batch.Groups()[i]
	e.Service = g.Key[:st.keys[i].svcLen] // the line names the service as its blob does
	e.ServiceToken = true
	g.Data = st.enc.AppendLine(g.Data, e)
	g.Events++
	g.Lines.Add(e.Time, e.Level) // the blob's metadata, without reading the lines back
}

// findGroup returns the index of the group of events of service svc (as
// sent) and hour, when a previous event of the request found it.
func (st *reqState) findGroup(svc []byte, hour int64) (int, bool) {
	slot := seenHash(svc, hour)
	if k := int(st.seenSlot[slot]) - 1; k >= 0 {
		if sg := &st.seen[k]; sg.hour == hour && bytes.Equal(sg.svc, svc) {
			return sg.idx, true
		}
	}
	// Another service's entry in the slot, or none: look through them all.
	for k := range st.seen {
		if sg := &st.seen[k]; sg.hour == hour && bytes.Equal(sg.svc, svc) {
			st.seenSlot[slot] = uint8(k + 1)
			return sg.idx, true
		}
	}
	return 0, false
}

// addGroup encodes the key of e's group (service as stored, hour prefix),
// adds it to the batch when new and remembers it under e's service as
// sent; it returns the group's index.
func (st *reqState) addGroup(e *logline.Event, hour int64) int {
	st.svc = logline.AppendService(st.svc[:0], e.Service)
	svcLen := len(st.svc)
	st.key = append(append(st.key[:0], st.svc...), '/')
	st.key = logline.HourPrefix(st.key, e.Time)
	g := st.batch.Group(buffer.StreamLogs, st.key)
	groups := st.batch.Groups()
	if len(groups) > len(st.keys) {
		st.keys = append(st.keys, groupKey{svcLen: svcLen})
	}
	idx := 0
	for i := range groups {
		if &groups[i] == g {
			idx = i
		}
	}
	if len(st.seen) < maxSeen {
		if len(st.seen) < cap(st.seen) {
			st.seen = st.seen[:len(st.seen)+1] // reuse the entry's memory
		} else {
			st.seen = append(st.seen, seenGroup{})
		}
		sg := &st.seen[len(st.seen)-1]
		sg.svc, sg.hour, sg.idx = append(sg.svc[:0], e.Service...), hour, idx
		st.seenSlot[seenHash(e.Service, hour)] = uint8(len(st.seen))
	}
	return idx
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
	g := st.batch.Group(buffer.StreamLogins, st.key)
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
