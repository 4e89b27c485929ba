package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
	"ingest/logline"
	"ingest/query"
	"ingest/tablesink"
	"ingest/web"
)

// maxQueryTime bounds one query, so that no handler runs without a
// deadline; a query past it ends with an in-band error line.
const maxQueryTime = 10 * time.Minute

// queryLogs handles GET /v1/logs: NDJSON out, streamed as blobs are read.
// X-Ingest-* trailers are not available to every client, so the scan
// figures go to metrics and to a final line only when ?stats=1.
func (s *Server) queryLogs(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	q, err := query.Params{
		Service: string(args.Peek("service")),
		From:    string(args.Peek("from")),
		To:      string(args.Peek("to")),
		Level:   string(args.Peek("level")),
		Text:    string(args.Peek("q")),
		Grep:    string(args.Peek("grep")),
		Limit:   string(args.Peek("limit")),
		Order:   string(args.Peek("order")),
	}.Parse(time.Now(), s.deps.Query)
	if err != nil {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: err.Error()})
		return
	}
	if iv := args.Peek("histogram"); len(iv) > 0 {
		s.histogram(ctx, q, string(iv))
		return
	}
	ctx.SetContentType("application/x-ndjson")
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetBodyStreamWriter(s.streamLogs(q, string(args.Peek("stats")) == "1"))
}

// streamLogs writes the events of q as NDJSON, an in-band error line if the
// query fails once the headers are gone, and with withStats a final line of
// scan figures.
func (s *Server) streamLogs(q query.Query, withStats bool) fasthttp.StreamWriter {
	store := s.deps.Blobs
	return func(w *bufio.Writer) {
		qctx, cancel := context.WithTimeout(context.Background(), maxQueryTime)
		defer cancel()
		st, err := query.RunNDJSON(qctx, store, q, w) // a client that went away stops the query
		s.met.blobsSkipped.Add(float64(st.BlobsSkipped))
		s.met.blobsRead.Add(float64(st.BlobsRead))
		if err != nil {
			fmt.Fprintf(w, "{\"error\":%s}\n", logline.AppendQuoted(nil, []byte(err.Error())))
		}
		if withStats {
			fmt.Fprintf(w, "{\"stats\":{\"prefixes\":%d,\"blobs_listed\":%d,\"blobs_skipped\":%d,\"blobs_read\":%d,\"lines_scanned\":%d,\"lines_matched\":%d,\"lines_out_of_order\":%d}}\n",
				st.Prefixes, st.BlobsListed, st.BlobsSkipped, st.BlobsRead, st.LinesScanned, st.LinesMatched, st.LinesOutOfOrder)
		}
	}
}

// histogram answers GET /v1/logs?...&histogram=INTERVAL: counts per
// interval and level as one JSON object, no lines.
func (s *Server) histogram(ctx *fasthttp.RequestCtx, q query.Query, interval string) {
	iv, err := time.ParseDuration(interval)
	if err != nil {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: fmt.Sprintf("bad histogram %q: want an interval like 1m, 10s or 1h", interval)})
		return
	}
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h, st, err := query.RunHistogram(c, s.deps.Blobs, q, iv)
	s.met.blobsSkipped.Add(float64(st.BlobsSkipped))
	s.met.blobsRead.Add(float64(st.BlobsRead))
	if err != nil {
		status := fasthttp.StatusServiceUnavailable
		if st.Prefixes == 0 && st.Listings == 0 {
			status = fasthttp.StatusBadRequest // refused before reading anything
		}
		writeError(ctx, &httperr.Error{Status: status, Msg: err.Error()})
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(h.AppendJSON(nil))
}

// page serves the query page and its files (package web). They hold no
// data: with --tokens the page asks for a token and sends it on its API
// calls, which are what the tokens guard.
func (s *Server) page(ctx *fasthttp.RequestCtx) {
	body, ctype, ok := web.Asset(string(ctx.Path()))
	if !ok {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusNotFound, Msg: fmt.Sprintf("no page file %s", ctx.Path())})
		return
	}
	ctx.SetContentType(ctype)
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	// No other site may frame the page (clickjacking): frame-ancestors for
	// current browsers, X-Frame-Options for those before CSP level 2.
	ctx.Response.Header.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
	ctx.Response.Header.Set("X-Frame-Options", "DENY")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	ctx.SetBody(body)
}

// listServices handles GET /v1/services: a JSON array of the services that
// have blobs.
func (s *Server) listServices(ctx *fasthttp.RequestCtx) {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names, err := query.Services(c, s.deps.Blobs)
	if err != nil {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusServiceUnavailable, Msg: err.Error()})
		return
	}
	out := []byte{'['}
	for i, n := range names {
		if i > 0 {
			out = append(out, ',')
		}
		out = logline.AppendQuoted(out, []byte(n))
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(append(out, "]\n"...))
}

// queryLogins handles GET /v1/logins/{user}?days=D&limit=N: NDJSON, newest
// first, streamed a day table at a time; a storage error once the answer has
// begun ends it with an {"error":...} line, as GET /v1/logs does.
func (s *Server) queryLogins(ctx *fasthttp.RequestCtx) {
	user, err := url.PathUnescape(string(ctx.Path()[len("/v1/logins/"):]))
	if err != nil || user == "" {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "bad user in path"})
		return
	}
	days, limit := 7, 100
	if v := ctx.QueryArgs().Peek("days"); len(v) > 0 {
		if days, err = strconv.Atoi(string(v)); err != nil || days <= 0 {
			writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "bad days: want a number > 0"})
			return
		}
	}
	if v := ctx.QueryArgs().Peek("limit"); len(v) > 0 {
		if limit, err = strconv.Atoi(string(v)); err != nil || limit <= 0 {
			writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "bad limit: want a number > 0"})
			return
		}
	}
	ctx.SetContentType("application/x-ndjson")
	ctx.SetStatusCode(fasthttp.StatusOK)
	logins := s.deps.Logins
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var line []byte
		err := logins.TailEach(c, user, days, limit, func(a *tablesink.Attempt) error {
			line = append(tablesink.AppendAttemptJSON(line[:0], a), '\n')
			_, err := w.Write(line)
			return err // a client that went away stops the reading
		})
		if err != nil {
			// Headers are gone already: report in-band, as the last line.
			fmt.Fprintf(w, "{\"error\":%s}\n", logline.AppendQuoted(nil, []byte("cannot read login attempts: "+err.Error())))
		}
	})
}
