package httpapi

import (
	"time"

	"github.com/valyala/fasthttp"

	"ingest/admission"
	"ingest/intake"
	"ingest/intake/loki"
	"ingest/logline"
)

// lokiPushPath is Loki's push endpoint, where Promtail, Grafana Alloy,
// Vector and Fluent Bit send (they take the server's base URL).
const lokiPushPath = "/loki/api/v1/push"

// lokiPush serves POST /loki/api/v1/push: 204 once the entries are as
// safe as --ack says; 400 naming the rejected entries when some were
// (the others are stored, as Loki does: a client does not resend them).
func (s *Server) lokiPush(ctx *fasthttp.RequestCtx) {
	f, err := loki.DetectFormat(string(ctx.Request.Header.ContentType()))
	if err != nil {
		writeError(ctx, err)
		return
	}
	ps := protoPool.Get().(*protoState)
	defer putProto(ps)
	var res loki.Result
	now := time.Now().UnixNano()
	ok := s.intakeEvents(ctx, s.met.loki, func(body []byte, mem admission.Memory, emit func(*logline.Event) error) (int, int, error) {
		if f == loki.FormatProtobuf { // always snappy, block format
			var err error
			if ps.raw, err = intake.Decompress(ps.raw[:0], body, "snappy", int(s.cfg.MaxDecompressedBytes), mem); err != nil {
				return 0, 0, err
			}
			body = ps.raw
		} else if err := mem.Reserve(int64(len(body) / 4)); err != nil { // the JSON index
			return 0, 0, err
		}
		res, err = ps.loki.Decode(body, f, s.lokiServiceLabels, now, emit)
		return res.Accepted, res.Rejected, err
	})
	if !ok {
		return
	}
	if res.Rejected > 0 {
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString(res.Message() + "\n")
		return
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}
