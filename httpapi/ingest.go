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

	"ingest/admission"
	"ingest/buffer"
	"ingest/intake"
	"ingest/internal/httperr"
)

// reqState is one request's reusable memory: the body as received and
// decoded, and its share of --max-inflight-bytes.
type reqState struct {
	body    []byte
	decoded []byte
	hold    admission.Hold
}

var statePool = sync.Pool{New: func() any { return new(reqState) }}

// retainBody bounds the body buffers a pooled reqState keeps: pooled
// memory is reserved by no request, so it stays small, yet holds a usual
// request's body so the next one does not grow it again.
const retainBody = 1 << 20

// release returns what st holds and keeps it for another request.
func (st *reqState) release() {
	st.hold.Release()
	if cap(st.body) > retainBody {
		st.body = nil
	}
	if cap(st.decoded) > retainBody {
		st.decoded = nil
	}
	statePool.Put(st)
}

// beginWrite admits a write request, or refuses it while the server shuts
// down (503 after the body, connection closed) and returns nil. An
// admitted request counts for Drain until endWrite, and its state reserves
// memory against --max-inflight-bytes as it is taken (the body as it
// arrives, never for what a header declares; the decoded body and the
// encoded lines as they grow): a stalled upload holds only what it sent,
// and a request that can never fit is refused with 413.
func (s *Server) beginWrite(ctx *fasthttp.RequestCtx) *reqState {
	if s.closing.Load() {
		s.refuseThenLinger(ctx, errShuttingDown)
		return nil
	}
	s.active.Add(1)
	st := statePool.Get().(*reqState)
	st.hold.Begin(s.inflight, ctx, inflightWait)
	return st
}

// endWrite releases what beginWrite admitted.
func (s *Server) endWrite(st *reqState) {
	st.release()
	s.active.Done()
}

// inflightWait is how long a request waits for --max-inflight-bytes to
// free up before it is refused with 429.
const inflightWait = 100 * time.Millisecond

// readStep is how much a request's body buffer grows by at least, and
// the unit of its reservations.
const readStep = 64 << 10

// ingest handles POST /v1/logs[/{service}] and POST /v1/logins: receive
// the body, hand its rows to a Grouper, add the batch to the buffer,
// answer.
func (s *Server) ingest(ctx *fasthttp.RequestCtx, logins bool) {
	st := s.beginWrite(ctx)
	if st == nil {
		return
	}
	defer s.endWrite(st)
	body, format, err := s.receive(ctx, st, logins)
	if err != nil {
		writeError(ctx, err)
		return
	}
	g := s.groups.Get(&st.hold)
	defer s.groups.Put(g)
	p := intake.GetParser()
	defer intake.PutParser(p)
	d := intake.Defaults{Now: time.Now().UnixNano(), MaxRows: s.groups.MaxEvents()}
	var res intake.Result
	if logins {
		res, err = p.ParseLogins(body, format, d, g.AddLogin)
	} else {
		d.Service = s.serviceOf(ctx)
		res, err = p.ParseLogs(body, format, d, g.AddEvent)
	}
	if err != nil {
		s.countRefusal(err)
		writeError(ctx, err)
		return
	}
	s.met.eventsRejected.Add(float64(res.Rejected))
	if res.Accepted == 0 {
		s.writeResult(ctx, fasthttp.StatusBadRequest, &res, format)
		return
	}
	s.store(ctx, g.Batch(), &res, format, logins)
}

// store adds the request's batch to the buffer and answers.
func (s *Server) store(ctx *fasthttp.RequestCtx, batch *buffer.Batch, res *intake.Result, format intake.Format, logins bool) {
	if !logins {
		if err := checkWriteScope(ctx, batch); err != nil {
			writeError(ctx, err)
			return
		}
	}
	err := s.addBatch(batch)
	pending := errors.Is(err, buffer.ErrAckTimeout)
	if err != nil && !pending {
		writeError(ctx, err)
		return
	}
	s.met.eventsAccepted.Add(float64(res.Accepted))
	if !logins {
		s.publishTail(batch)
	}
	if pending {
		s.writePending(ctx, res, format, err)
		return
	}
	ctx.Response.Header.Set("X-Ingest-Ack", string(s.deps.Buffer.Ack()))
	s.writeResult(ctx, fasthttp.StatusAccepted, res, format)
}

// receive reads the body under --max-body-bytes, decompresses it under
// --max-decompressed-bytes, reserving --max-inflight-bytes as each grows,
// and tells its format.
func (s *Server) receive(ctx *fasthttp.RequestCtx, st *reqState, logins bool) ([]byte, intake.Format, error) {
	if n := int64(ctx.Request.Header.ContentLength()); n > s.cfg.MaxBodyBytes {
		s.answerThenLinger(ctx)
		return nil, 0, httperr.New(fasthttp.StatusRequestEntityTooLarge, "cannot accept a body of %d bytes: it is over --max-body-bytes (%d)", n, s.cfg.MaxBodyBytes)
	}
	body, err := s.readBody(ctx, st)
	if err != nil {
		return nil, 0, err
	}
	s.met.bytesIn.Add(float64(len(body)))
	if body, err = s.decode(ctx, st, body); err != nil {
		return nil, 0, err
	}
	format, err := intake.DetectFormat(string(ctx.Request.Header.ContentType()), body, !logins)
	return body, format, err
}

// decode undoes the body's Content-Encoding into st.decoded; an identity
// body is returned as it is.
func (s *Server) decode(ctx *fasthttp.RequestCtx, st *reqState, body []byte) ([]byte, error) {
	enc := ctx.Request.Header.Peek("Content-Encoding")
	if len(enc) == 0 || bytes.EqualFold(enc, []byte("identity")) {
		return body, nil
	}
	var err error
	st.decoded, err = intake.Decompress(st.decoded[:0], body, string(enc), int(s.cfg.MaxDecompressedBytes), &st.hold)
	if err != nil {
		s.countRefusal(err)
		return nil, err
	}
	return st.decoded, nil
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

// writePending answers a batch that --ack-timeout cut short: still a 2xx,
// and true: the batch is in the fsync'd WAL and will be stored. A client
// that resent it would store it twice.
func (s *Server) writePending(ctx *fasthttp.RequestCtx, res *intake.Result, format intake.Format, err error) {
	s.met.ackTimeouts.Inc()
	ctx.Response.Header.Set("X-Ingest-Ack", string(buffer.AckWAL))
	if format == intake.FormatOTLPProto || format == intake.FormatOTLPJSON {
		writeOTLPResult(ctx, fasthttp.StatusAccepted, res, format)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusAccepted)
	ctx.SetContentType("application/json")
	ctx.SetBody(append(res.AppendPendingJSON(ctx.Response.Body()[:0], err.Error()), '\n'))
}

// readBody reads the request body under --max-body-bytes, reserving
// --max-inflight-bytes a step at a time for bytes that have arrived. The
// buffer grows as the body does: a declared Content-Length is a limit to
// check, not memory to set aside.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, st *reqState) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	r := ctx.RequestBodyStream()
	if r == nil {
		body := ctx.Request.Body()
		return body, s.reserve(&st.hold, int64(len(body)))
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
		if lack := int64(len(buf)) - st.hold.Held(); lack > 0 {
			if err := s.reserve(&st.hold, (lack+readStep-1)/readStep*readStep); err != nil {
				if declared < 0 || len(buf) < declared {
					s.answerThenLinger(ctx) // the rest of the body is on its way
				}
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

// reserve adds n bytes to the request's share of --max-inflight-bytes, or
// returns the refusal.
func (s *Server) reserve(h *admission.Hold, n int64) error {
	err := h.Reserve(n)
	s.countRefusal(err)
	return err
}

// countRefusal counts a refusal of --max-inflight-bytes.
func (s *Server) countRefusal(err error) {
	if errors.Is(err, admission.ErrRefused) {
		s.met.inflightFull.Inc()
	}
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
