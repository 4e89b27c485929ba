package httpapi

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/admission"
	"ingest/intake/es"
	"ingest/logline"
)

// esBase is where the Elasticsearch API is served: shippers take a base
// URL with a path (Filebeat output.elasticsearch.path, Fluent Bit Path,
// Logstash and Vector endpoint URLs).
const esBase = "/v1/es"

// esAPI serves /v1/es/...: POST (or PUT) {index}/_bulk and _bulk store
// documents; GET and HEAD of the base answer the root document; every other
// call shippers make at start (license, templates, ILM policies,
// pipelines, data streams, cluster health) is answered as done.
func (s *Server) esAPI(ctx *fasthttp.RequestCtx) {
	path := bytes.Trim(ctx.Path()[len(esBase):], "/")
	ctx.SetContentType("application/json")
	if index, ok := bulkIndex(path); ok {
		if !ctx.IsPost() && !ctx.IsPut() {
			methodNotAllowed(ctx, "POST, PUT")
			return
		}
		s.esBulk(ctx, index)
		return
	}
	if len(path) == 0 {
		if !ctx.IsGet() && !ctx.IsHead() {
			methodNotAllowed(ctx, "GET, HEAD")
			return
		}
		ctx.SetBody(s.cfg.ES.AppendInfo(ctx.Response.Body()[:0]))
		return
	}
	ctx.SetBodyString(es.Setup(path))
}

// bulkIndex tells a bulk path, "_bulk" or "{index}/_bulk", and its index.
func bulkIndex(path []byte) (index []byte, ok bool) {
	if string(path) == "_bulk" {
		return nil, true
	}
	index, rest, found := bytes.Cut(path, []byte{'/'})
	return index, found && string(rest) == "_bulk" && len(index) > 0 && index[0] != '_'
}

// esBulk stores the documents of a bulk request and answers one item per
// action, once they are as safe as --ack says.
func (s *Server) esBulk(ctx *fasthttp.RequestCtx, index []byte) {
	start := time.Now()
	ps := protoPool.Get().(*protoState)
	defer putProto(ps)
	req := es.Request{Index: index, Now: start.UnixNano(), FilterPath: ctx.QueryArgs().Peek("filter_path")}
	ok := s.intakeEvents(ctx, s.met.es, func(body []byte, mem admission.Memory, emit func(*logline.Event) error) (int, int, error) {
		if err := ps.es.Decode(body, req, emit); err != nil {
			return 0, 0, err
		}
		// The answer is held too; it may be larger than the body.
		return ps.es.Stored(), ps.es.Refused(), mem.Reserve(int64(ps.es.AnswerBytes()))
	})
	if !ok {
		return
	}
	ps.answer = ps.es.AppendAnswer(ps.answer[:0], time.Since(start))
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetBody(ps.answer)
}
