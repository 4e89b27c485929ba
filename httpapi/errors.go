package httpapi

import (
	"math"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
	"ingest/logline"
)

// writeError turns any error into a response: the one place statuses are
// chosen. An *httperr.Error answers with its status (and Retry-After when
// it carries one; a 429 or 503 always does), anything else with 500.
func writeError(ctx *fasthttp.RequestCtx, err error) {
	status := httperr.StatusOf(err)
	retry := httperr.RetryAfterOf(err)
	if retry > 0 || status == fasthttp.StatusTooManyRequests || status == fasthttp.StatusServiceUnavailable {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retry.Seconds())))))
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	b := append([]byte(`{"error":`), logline.AppendQuoted(nil, []byte(err.Error()))...)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	ctx.SetBody(append(b, "}\n"...))
}

var errShuttingDown = &httperr.Error{Status: fasthttp.StatusServiceUnavailable, Msg: "cannot accept the request: shutting down; send to another instance or retry", RetryAfter: time.Second}
