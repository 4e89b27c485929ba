package httpapi

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
	"ingest/logline"
	"ingest/logql"
	"ingest/query"
)

// Loki's label and index API over the query engine, and harmless answers
// to the other calls Grafana makes of a Loki data source.

// lokiLabelScanEvents bounds the events a label lookup reads: the host and
// level values, and the series, are those of the newest events of the
// range that match. The engine reads them from the ends of the newest
// blobs (a newest-first query with a limit), not the whole range.
const lokiLabelScanEvents = 10000

// lokiLabelsSince is Loki's default range of label lookups.
const lokiLabelsSince = 6 * time.Hour

// lokiLabels handles GET /loki/api/v1/labels: the label names, always the
// three an event has.
func (s *Server) lokiLabels(ctx *fasthttp.RequestCtx) {
	if !s.enterQuery(ctx) {
		return
	}
	defer s.queries.leave()
	b := []byte(`{"status":"success","data":[`)
	for i, l := range logql.Labels {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, l)
	}
	lokiJSON(ctx, append(b, "]}\n"...))
}

// lokiLabelValues handles GET /loki/api/v1/label/{name}/values[?query=]:
// the services that have blobs (whatever the range), or the hosts or
// levels of the newest events of the range; none for another name.
func (s *Server) lokiLabelValues(ctx *fasthttp.RequestCtx) {
	if !s.enterQuery(ctx) {
		return
	}
	defer s.queries.leave()
	path := ctx.Path()
	name := string(path[len("/loki/api/v1/label/") : len(path)-len("/values")])
	sel, start, end, err := lokiSelector(ctx.QueryArgs(), "query")
	if err != nil {
		lokiError(ctx, err)
		return
	}
	var values []string
	switch name {
	case "service":
		values, err = s.lokiServices(context.Background(), sel)
		if err == nil && len(values) > 0 {
			// A selector naming a service does not make it exist: answer
			// the services that have blobs.
			c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var stored []string
			stored, err = query.Services(c, s.deps.Blobs)
			cancel()
			if len(values) == 1 && values[0] == "*" {
				values = stored
			} else {
				values = slices.DeleteFunc(values, func(v string) bool { return !slices.Contains(stored, v) })
			}
		}
	case "host", "level":
		var sets []lokiLabelSet
		sets, err = s.lokiLabelScan(sel, start, end)
		seen := map[string]bool{}
		for _, ls := range sets {
			v := ls.host
			if name == "level" {
				v = ls.level.String()
			}
			if v != "" && !seen[v] {
				seen[v] = true
				values = append(values, v)
			}
		}
	}
	if err != nil {
		lokiError(ctx, lookupFailed(err))
		return
	}
	slices.Sort(values)
	b := []byte(`{"status":"success","data":[`)
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = logline.AppendQuoted(b, []byte(v))
	}
	lokiJSON(ctx, append(b, "]}\n"...))
}

// lokiSeries handles GET /loki/api/v1/series?match[]=...: the label sets
// of the newest events of the range each selector matches.
func (s *Server) lokiSeries(ctx *fasthttp.RequestCtx) {
	if !s.enterQuery(ctx) {
		return
	}
	defer s.queries.leave()
	args := ctx.QueryArgs()
	matches := args.PeekMulti("match[]")
	if len(matches) == 0 {
		matches = [][]byte{[]byte("{}")}
	}
	if len(matches) > 16 {
		lokiError(ctx, badLoki("cannot look up %d selectors at once: at most 16", len(matches)))
		return
	}
	seen := map[lokiLabelSet]bool{}
	var sets []lokiLabelSet
	for _, m := range matches {
		sel, err := logql.Parse(string(m))
		if err == nil && sel.Kind != logql.Logs {
			err = badLoki("cannot look up series of %q: want a selector like {service=\"api\"}", m)
		}
		var start, end time.Time
		if err == nil {
			start, end, err = lokiRange(args, lokiLabelsSince)
		}
		var found []lokiLabelSet
		if err == nil {
			found, err = s.lokiLabelScan(sel, start, end)
		}
		if err != nil {
			lokiError(ctx, lookupFailed(err))
			return
		}
		for _, ls := range found {
			if !seen[ls] {
				seen[ls] = true
				sets = append(sets, ls)
			}
		}
	}
	b := []byte(`{"status":"success","data":[`)
	for i, ls := range sets {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLokiLabels(b, []byte(ls.service), []byte(ls.host), ls.level)
	}
	lokiJSON(ctx, append(b, "]}\n"...))
}

// lokiIndexStats handles GET /loki/api/v1/index/stats?query=: what the
// query would read, from the blob listings alone (query.EstimateOf): the
// services as streams, the blobs as chunks, their stored bytes and their
// events as entries.
func (s *Server) lokiIndexStats(ctx *fasthttp.RequestCtx) {
	if !s.enterQuery(ctx) {
		return
	}
	defer s.queries.leave()
	sel, start, end, err := lokiSelector(ctx.QueryArgs(), "query")
	var est query.Estimate
	if err == nil {
		var q query.Query
		var none bool
		q, none, err = s.lokiSelection(context.Background(), sel, start, end)
		if err == nil && !none && start.Before(end) {
			c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			est, _, err = query.EstimateOf(c, s.deps.Blobs, q)
			cancel()
		}
	}
	if err != nil {
		lokiError(ctx, lookupFailed(err))
		return
	}
	b := strconv.AppendInt([]byte(`{"streams":`), int64(est.Services), 10)
	b = strconv.AppendInt(append(b, `,"chunks":`...), int64(est.Blobs), 10)
	b = strconv.AppendInt(append(b, `,"bytes":`...), est.Bytes, 10)
	b = strconv.AppendInt(append(b, `,"entries":`...), est.Events, 10)
	lokiJSON(ctx, append(b, "}\n"...))
}

// lokiSelector reads the selector in parameter name ({} when absent) and
// the range of a label lookup.
func lokiSelector(args *fasthttp.Args, name string) (*logql.Query, time.Time, time.Time, error) {
	v := args.Peek(name)
	if len(bytes.TrimSpace(v)) == 0 {
		v = []byte("{}")
	}
	sel, err := logql.Parse(string(v))
	if err != nil {
		return nil, time.Time{}, time.Time{}, badLoki("%s", err.Error())
	}
	if sel.Kind != logql.Logs {
		return nil, time.Time{}, time.Time{}, badLoki("cannot look up labels of %q: want a selector like {service=\"api\"}", v)
	}
	start, end, err := lokiRange(args, lokiLabelsSince)
	return sel, start, end, err
}

// lokiLabelSet is the labels of an event.
type lokiLabelSet struct {
	service, host string
	level         logline.Level
}

// lokiLabelScan returns the distinct label sets of the newest
// lokiLabelScanEvents events of [start, end) that sel selects.
func (s *Server) lokiLabelScan(sel *logql.Query, start, end time.Time) ([]lokiLabelSet, error) {
	q, none, err := s.lokiSelection(context.Background(), sel, start, end)
	if err != nil || none || !start.Before(end) {
		return nil, err
	}
	q.Desc, q.Limit = true, lokiLabelScanEvents
	seen := map[lokiLabelSet]bool{}
	var sets []lokiLabelSet
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := query.Run(c, s.deps.Blobs, q, func(_ []byte, e *logline.Event) error {
		ls := lokiLabelSet{string(e.Service), string(e.Host), e.Level}
		if !seen[ls] {
			seen[ls] = true
			sets = append(sets, ls)
		}
		return nil
	})
	s.met.blobsSkipped.Add(float64(st.BlobsSkipped))
	s.met.blobsRead.Add(float64(st.BlobsRead))
	return sets, err
}

// lookupFailed makes a storage error (not the client's) a 503.
func lookupFailed(err error) error {
	if httperr.StatusOf(err) == fasthttp.StatusInternalServerError {
		return &httperr.Error{Status: fasthttp.StatusServiceUnavailable, Msg: err.Error(), Err: err}
	}
	return err
}

// lokiBuildInfo handles GET /loki/api/v1/status/buildinfo with this
// binary's version: not a Loki version, so a client that turns features
// on by Loki's version turns none on.
func lokiBuildInfo(ctx *fasthttp.RequestCtx) {
	version, revision := "devel", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, st := range bi.Settings {
			if st.Key == "vcs.revision" {
				revision = st.Value
			}
		}
	}
	b := append([]byte(`{"version":`), strconv.Quote("ingest-"+version)...)
	b = append(append(b, `,"revision":`...), strconv.Quote(revision)...)
	b = append(append(b, `,"branch":"","buildUser":"","buildDate":"","goVersion":`...), strconv.Quote(runtime.Version())...)
	lokiJSON(ctx, append(b, "}\n"...))
}

// lokiEmpty answers what Grafana asks of newer Lokis that has no
// counterpart here (fields detected in lines, patterns, volumes by
// label) with an empty, well-formed answer of the shape the path has.
func lokiEmpty(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path())
	var body string
	switch {
	case path == "/loki/api/v1/detected_fields":
		body = `{"fields":[],"limit":1000}`
	case bytes.HasPrefix(ctx.Path(), []byte("/loki/api/v1/detected_field/")):
		body = `{"values":[],"limit":1000}`
	case path == "/loki/api/v1/patterns":
		body = `{"status":"success","data":[]}`
	case path == "/loki/api/v1/index/volume":
		body = `{"status":"success","data":{"resultType":"vector","result":[]}}`
	default: // index/volume_range
		body = `{"status":"success","data":{"resultType":"matrix","result":[]}}`
	}
	lokiJSON(ctx, []byte(body+"\n"))
}
