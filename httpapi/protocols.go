package httpapi

import (
	"errors"
	"sync"

	"github.com/valyala/fasthttp"

	"ingest/buffer"
	"ingest/intake"
	"ingest/intake/es"
	"ingest/intake/loki"
	"ingest/internal/httperr"
	"ingest/logline"
)

// The shippers' protocols (Elasticsearch bulk, Loki push) share the
// request path of POST /v1/logs: the body read and decompressed under the
// same limits and budget, events grouped into the same batch, the batch
// added to the buffer and acknowledged as --ack says. Each protocol only
// decodes its body and writes its answer; intakeEvents is the one place
// they meet that path.

// protoState is the reusable memory of one protocol request.
type protoState struct {
	es     es.Decoder
	loki   loki.Decoder
	raw    []byte // a Loki protobuf body, snappy-decoded
	answer []byte
}

var protoPool = sync.Pool{New: func() any { return new(protoState) }}

// lineOverhead is about what a stored line adds to an event's fields:
// version, time, level, separators, quotes, newline.
const lineOverhead = 48

// retainProto is the scratch a pooled protoState may keep.
const retainProto = 1 << 20

func putProto(ps *protoState) {
	ps.es.Release(retainProto)
	ps.loki.Release(retainProto)
	if cap(ps.raw) > 8<<20 {
		ps.raw = nil
	}
	if cap(ps.answer) > retainProto {
		ps.answer = nil
	}
	protoPool.Put(ps)
}

// decodeFunc decodes a request's body (its Content-Encoding undone),
// calling emit for every event; reserve counts more memory the request
// holds against --max-inflight-bytes. It returns the accepted and rejected
// counts, or the error that fails the whole request (then nothing is
// stored).
type decodeFunc func(body []byte, reserve func(n int64) error, emit func(*logline.Event) error) (accepted, rejected int, err error)

// intakeEvents runs one protocol request: receive the body, decode it into
// the request's batch, add the batch to the buffer. It answers errors
// itself (with setHeaders' headers) and returns true when the protocol
// should answer success: the events are as safe as --ack says (with an
// --ack-timeout, in the write-ahead log at least), or there were none.
func (s *Server) intakeEvents(ctx *fasthttp.RequestCtx, count protocolCounters, decode decodeFunc) bool {
	if s.closing.Load() {
		writeError(ctx, errShuttingDown)
		return false
	}
	s.active.Add(1)
	defer s.active.Done()
	st := statePool.Get().(*reqState)
	st.reset()
	defer statePool.Put(st)
	var held int64
	defer func() { s.inflight.Release(held) }()
	// The format receive tells is the NDJSON intake's: a protocol reads its
	// own, so receive's refusal of a body it cannot tell (415, with the body
	// read) is not one here.
	body, _, err := s.receive(ctx, st, &held, false)
	if err != nil && (body == nil || httperr.StatusOf(err) != fasthttp.StatusUnsupportedMediaType) {
		writeError(ctx, err)
		return false
	}
	reserve := func(n int64) error { return s.reserve(ctx, &held, n) }
	// The encoded lines are held too. receive counted the body's size for
	// them; a body of tiny records (a Loki entry can be 2 bytes, snappy
	// makes a million of them cheap to send) encodes to many times that,
	// so what goes past it is reserved as it is written, a step at a time.
	lines, counted := int64(0), int64(len(body))
	emit := func(e *logline.Event) error {
		s.addEvent(st, e)
		lines += int64(len(e.Message)+len(e.Attrs)+len(e.Service)+len(e.Host)+len(e.ID)) + lineOverhead
		if lines > counted {
			step := max(lines-counted, readStep)
			if err := reserve(step); err != nil {
				return err
			}
			counted += step
		}
		return nil
	}
	accepted, rejected, err := decode(body, reserve, emit)
	if err != nil {
		writeError(ctx, err)
		return false
	}
	s.met.eventsRejected.Add(float64(rejected))
	count.rejected.Add(float64(rejected))
	if accepted == 0 {
		return true
	}
	if err := checkWriteScope(ctx, &st.batch); err != nil {
		writeError(ctx, err)
		return false
	}
	err = s.addBatch(&st.batch)
	pending := errors.Is(err, buffer.ErrAckTimeout)
	if err != nil && !pending {
		writeError(ctx, err)
		return false
	}
	s.accepted(st, &intake.Result{Accepted: accepted}, false)
	count.accepted.Add(float64(accepted))
	ack := s.deps.Buffer.Ack()
	if pending {
		s.met.ackTimeouts.Inc()
		ack = buffer.AckWAL
	}
	ctx.Response.Header.Set("X-Ingest-Ack", string(ack))
	return true
}
