package httpapi

import (
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"

	"ingest/intake"
	"ingest/logline"
)

// httpError is an error with the status to answer it with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// writeError turns any error into a response: the one place statuses are chosen.
func writeError(ctx *fasthttp.RequestCtx, err error) {
	status := fasthttp.StatusInternalServerError
	var he *httpError
	var se *intake.StatusError
	switch {
	case errors.As(err, &he):
		status = he.status
	case errors.As(err, &se):
		status = se.Status
	}
	if status == fasthttp.StatusTooManyRequests || status == fasthttp.StatusServiceUnavailable {
		ctx.Response.Header.Set("Retry-After", "1")
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	b := append([]byte(`{"error":`), logline.AppendQuoted(nil, []byte(err.Error()))...)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	ctx.SetBody(append(b, "}\n"...))
}
