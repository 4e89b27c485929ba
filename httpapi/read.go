package httpapi

import (
	"bufio"
	"bytes"
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
// figures go to metrics and to a final control line only when ?stats=1.
// Every parameter is checked, and the range, bucket count and services
// bounded (query.Validate, query.CheckInterval), before anything is read:
// a bad one is a 400 naming it.
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
	if !s.enterQuery(ctx) {
		return
	}
	ctx.SetContentType("application/x-ndjson")
	ctx.SetStatusCode(fasthttp.StatusOK)
	s.streamBody(ctx, s.queries.leave, s.streamLogs(q, string(args.Peek("stats")) == "1"))
}

// streamLogs writes the events of q as NDJSON, an in-band error line if the
// query fails once the headers are gone, and with withStats a final line of
// scan figures.
func (s *Server) streamLogs(q query.Query, withStats bool) func(*bufio.Writer) {
	store := s.deps.Blobs
	return func(w *bufio.Writer) {
		qctx, cancel := context.WithTimeout(context.Background(), maxQueryTime)
		defer cancel()
		st, err := query.RunNDJSON(qctx, store, q, w) // a client that went away stops the query
		s.met.blobsSkipped.Add(float64(st.BlobsSkipped))
		s.met.blobsRead.Add(float64(st.BlobsRead))
		if err != nil {
			s.inBandError(w, "/v1/logs", err)
		}
		if withStats {
			w.Write(query.AppendStatsLine(nil, &st))
		}
	}
}

// histogram answers GET /v1/logs?...&histogram=INTERVAL: counts per
// interval and level as one JSON object, no lines.
func (s *Server) histogram(ctx *fasthttp.RequestCtx, q query.Query, interval string) {
	iv, err := time.ParseDuration(interval)
	if err == nil {
		err = query.CheckInterval(iv)
	} else {
		err = fmt.Errorf("bad histogram %q: want an interval like 1m, 10s or 1h", interval)
	}
	if err != nil {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: err.Error()})
		return
	}
	if !s.enterQuery(ctx) {
		return
	}
	defer s.queries.leave()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h, st, err := query.RunHistogram(c, s.deps.Blobs, q, iv)
	s.met.blobsSkipped.Add(float64(st.BlobsSkipped))
	s.met.blobsRead.Add(float64(st.BlobsRead))
	if err != nil {
		// 400 for what the query refused before reading; a storage
		// failure or the time limit is a 503, a panic a 500.
		status, msg := httperr.StatusOf(err), err.Error()
		if e, ok := httperr.PanicOf(err); ok {
			s.panics.report("handler", ctx.Path(), e)
			msg = errInternal
		} else if status == fasthttp.StatusInternalServerError {
			status = fasthttp.StatusServiceUnavailable
		}
		writeError(ctx, &httperr.Error{Status: status, Msg: msg})
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
	if !s.enterQuery(ctx) {
		return
	}
	defer s.queries.leave()
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

// maxLoginsLimit bounds GET /v1/logins/{user}?limit= silently: more than
// any day table holds of one user, and far enough from the largest int
// that the readers' arithmetic on it (a query's top+1) cannot overflow.
const maxLoginsLimit = 1 << 30

// queryLogins handles GET /v1/logins/{user}?days=D&limit=N: NDJSON, newest
// first, streamed a day table at a time; a storage error once the answer has
// begun ends it with an in-band error line, as GET /v1/logs does. The user
// is the path's last segment as sent, percent-decoded once (fasthttp's
// Path is decoded already: /v1/logins/%2541 is user "%41", not "A").
// days beyond the retention read nothing more and are taken as the
// retention (plus tomorrow's table), a limit over maxLoginsLimit as that.
func (s *Server) queryLogins(ctx *fasthttp.RequestCtx) {
	user, ok := loginUser(ctx.URI().PathOriginal())
	if !ok {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "cannot read login attempts: bad user in path; percent-encode it once, as /v1/logins/{user}"})
		return
	}
	days, limit := 7, 100
	var err error
	if v := ctx.QueryArgs().Peek("days"); len(v) > 0 {
		if days, err = strconv.Atoi(string(v)); err != nil || days <= 0 {
			writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "bad days: want a number > 0"})
			return
		}
	}
	days = min(days, s.deps.Logins.RetentionDays()+1)
	if v := ctx.QueryArgs().Peek("limit"); len(v) > 0 {
		if limit, err = strconv.Atoi(string(v)); err != nil || limit <= 0 {
			writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "bad limit: want a number > 0"})
			return
		}
	}
	limit = min(limit, maxLoginsLimit)
	if !s.enterQuery(ctx) {
		return
	}
	ctx.SetContentType("application/x-ndjson")
	ctx.SetStatusCode(fasthttp.StatusOK)
	logins := s.deps.Logins
	s.streamBody(ctx, s.queries.leave, func(w *bufio.Writer) {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var attempt, line []byte
		err := logins.TailEach(c, user, days, limit, func(a *tablesink.Attempt) error {
			attempt = tablesink.AppendAttemptJSON(attempt[:0], a)
			// An attempt's own fields can never make it a control line.
			line = append(query.AppendDataObject(line[:0], attempt), '\n')
			_, err := w.Write(line)
			return err // a client that went away stops the reading
		})
		if err != nil {
			s.inBandError(w, "/v1/logins", fmt.Errorf("cannot read login attempts: %w", err))
		}
	})
}

// loginUser takes the user of GET /v1/logins/{user} from the path as
// sent (raw: before any decoding), decoding it once.
func loginUser(raw []byte) (string, bool) {
	const prefix = "/v1/logins/"
	i := bytes.Index(raw, []byte(prefix))
	if i < 0 {
		return "", false
	}
	user, err := url.PathUnescape(string(raw[i+len(prefix):]))
	return user, err == nil && user != ""
}
