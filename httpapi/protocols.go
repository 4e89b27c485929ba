package httpapi

import (
	"errors"
	"sync"

	"github.com/valyala/fasthttp"

	"ingest/admission"
	"ingest/buffer"
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
// calling emit for every event; mem reserves more memory the request
// holds against --max-inflight-bytes, before it is allocated. It returns the accepted and rejected
// counts, or the error that fails the whole request (then nothing is
// stored).
type decodeFunc func(body []byte, mem admission.Memory, emit func(*logline.Event) error) (accepted, rejected int, err error)

// intakeEvents runs one protocol request the way POST /v1/logs runs:
// receive the body, hand its events to a Grouper (which reserves what it
// encodes, and applies the per-request limits), add the batch to the
// buffer. It answers errors itself and returns true when the protocol
// should answer success: the events are as safe as --ack says (with an
// --ack-timeout, in the write-ahead log at least), or there were none.
func (s *Server) intakeEvents(ctx *fasthttp.RequestCtx, count protocolCounters, decode decodeFunc) bool {
	st := s.beginWrite(ctx)
	if st == nil {
		return false
	}
	defer s.endWrite(st)
	// The format receive tells is the NDJSON intake's: a protocol reads its
	// own, so receive's refusal of a body it cannot tell (415, with the body
	// read) is not one here.
	body, _, err := s.receive(ctx, st, false)
	if err != nil && (body == nil || httperr.StatusOf(err) != fasthttp.StatusUnsupportedMediaType) {
		writeError(ctx, err)
		return false
	}
	g := s.groups.Get(&st.hold)
	defer s.groups.Put(g)
	accepted, rejected, err := decode(body, &st.hold, g.AddEvent)
	if err != nil {
		s.countRefusal(err)
		writeError(ctx, err)
		return false
	}
	s.met.eventsRejected.Add(float64(rejected))
	count.rejected.Add(float64(rejected))
	if accepted == 0 {
		return true
	}
	batch := g.Batch()
	if err := checkWriteScope(ctx, batch); err != nil {
		writeError(ctx, err)
		return false
	}
	err = s.addBatch(batch)
	pending := errors.Is(err, buffer.ErrAckTimeout)
	if err != nil && !pending {
		writeError(ctx, err)
		return false
	}
	s.met.eventsAccepted.Add(float64(accepted))
	s.publishTail(batch)
	count.accepted.Add(float64(accepted))
	ack := s.deps.Buffer.Ack()
	if pending {
		s.met.ackTimeouts.Inc()
		ack = buffer.AckWAL
	}
	ctx.Response.Header.Set("X-Ingest-Ack", string(ack))
	return true
}
