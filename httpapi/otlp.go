package httpapi

import (
	"fmt"

	"github.com/valyala/fasthttp"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"ingest/intake"
)

// writeOTLPResult answers an OTLP/HTTP export the way OTLP exporters expect:
// 200 with an ExportLogsServiceResponse in the request's encoding, carrying a
// partial success when some records were rejected. (OTLP clients treat any
// other body on success as an error, so the JSON result of the other formats
// is not used here.)
func writeOTLPResult(ctx *fasthttp.RequestCtx, status int, res *intake.Result, f intake.Format) {
	resp := &collogs.ExportLogsServiceResponse{}
	if res.Rejected > 0 {
		msg := fmt.Sprintf("%d log records rejected", res.Rejected)
		if len(res.Errors) > 0 {
			msg += fmt.Sprintf("; first: record %d: %s", res.Errors[0].Line, res.Errors[0].Error)
		}
		resp.PartialSuccess = &collogs.ExportLogsPartialSuccess{RejectedLogRecords: int64(res.Rejected), ErrorMessage: msg}
	}
	if status == fasthttp.StatusAccepted {
		status = fasthttp.StatusOK
	}
	var body []byte
	if f == intake.FormatOTLPProto {
		body, _ = proto.Marshal(resp)
		ctx.SetContentType("application/x-protobuf")
	} else {
		body, _ = protojson.Marshal(resp)
		ctx.SetContentType("application/json")
	}
	ctx.SetStatusCode(status)
	ctx.SetBody(body)
}
