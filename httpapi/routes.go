package httpapi

import (
	"bytes"
	"fmt"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/pprofhandler"

	"ingest/intake"
	"ingest/internal/httperr"
)

// route is one entry of the route table: the requests it matches and how
// they are served.
type route struct {
	name   string // the route label of the request metrics
	method string // the method it takes; "" for any
	match  func(path []byte) bool
	serve  fasthttp.RequestHandler
}

// routes is the route table, tried in order. The open routes answer
// without a token (or check their own); every /v1/ and /loki/ path needs
// a token when tokens are set, known or not, before the api routes are
// tried: a route added there is never open by mistake.
type routes struct {
	open, api []route
}

// newRoutes builds the server's route table.
func (s *Server) newRoutes() routes {
	var rt routes
	rt.open = []route{
		{name: "healthz", match: is("/healthz"), serve: healthz},
		{name: "readyz", match: is("/readyz"), serve: s.ready},
		{name: "metrics", match: is("/metrics"), serve: s.metrics},
		{name: "page", method: fasthttp.MethodGet, match: isPage, serve: s.page},
		{name: "ready", match: is("/ready"), serve: s.ready}, // Loki's readiness path, which Vector's health check calls
		// Checks its own token: another instance following this one's tail
		// presents this instance's tail key instead of a client's token.
		{name: "get_tail", method: fasthttp.MethodGet, match: is("/v1/tail"), serve: s.withTailKeyOrToken(s.tailLogs)},
	}
	if s.cfg.Pprof {
		rt.open = append(rt.open, route{name: "pprof", match: hasPrefix("/debug/pprof"), serve: s.withProfileAccess(pprofIndex)})
	}
	rt.api = []route{
		{name: "get_stats", match: under("/v1/stats"), serve: allowOnly(fasthttp.MethodGet, s.stats)},
		{name: "post_retention", match: is("/v1/retention"), serve: allowOnly(fasthttp.MethodPost, unscoped("retention", s.retention))},
		{name: "post_logs", method: fasthttp.MethodPost, match: under("/v1/logs"),
			serve: s.parsedTypesOnly(false, func(ctx *fasthttp.RequestCtx) { s.ingest(ctx, false) })},
		{name: "post_logins", method: fasthttp.MethodPost, match: is("/v1/logins"),
			serve: unscoped("posting login attempts", s.parsedTypesOnly(true, func(ctx *fasthttp.RequestCtx) { s.ingest(ctx, true) }))},
		{name: "get_logs", method: fasthttp.MethodGet, match: is("/v1/logs"), serve: s.queryLogs},
		{name: "get_logins", method: fasthttp.MethodGet, match: below("/v1/logins/"), serve: s.queryLogins},
		{name: "get_cluster", method: fasthttp.MethodGet, match: is("/v1/cluster"), serve: s.listCluster},
		{name: "get_services", method: fasthttp.MethodGet, match: is("/v1/services"), serve: s.listServices},
		{name: "es", match: under(esBase), serve: s.esAPI},
		// The paths above, with a method they do not take.
		{name: "other", match: anyOf(under("/v1/logs"), under("/v1/logins"), is("/v1/tail"), is("/v1/services"), is("/v1/cluster")),
			serve: func(ctx *fasthttp.RequestCtx) { methodNotAllowed(ctx, "GET, POST") }},
	}
	// Loki's push API for shippers (lokipush.go) and its read API for
	// Grafana's Loki data source (loki_*.go); behind the token check as
	// /v1/ is.
	const loki = "/loki/api/v1/"
	rt.api = append(rt.api,
		route{name: "loki_push", method: fasthttp.MethodPost, match: is(lokiPushPath), serve: s.lokiPush},
		route{name: "loki_query_range", match: is(loki + "query_range"), serve: allowOnly(fasthttp.MethodGet, s.lokiQueryRange)},
		route{name: "loki_query", match: is(loki + "query"), serve: allowOnly(fasthttp.MethodGet, s.lokiQuery)},
		route{name: "loki_labels", match: anyOf(is(loki+"labels"), is(loki+"label")), serve: allowOnly(fasthttp.MethodGet, s.lokiLabels)},
		route{name: "loki_label_values", match: between(loki+"label/", "/values"), serve: allowOnly(fasthttp.MethodGet, s.lokiLabelValues)},
		route{name: "loki_series", match: is(loki + "series"), serve: allowOnly(fasthttp.MethodGet, s.lokiSeries)},
		route{name: "loki_index_stats", match: is(loki + "index/stats"), serve: allowOnly(fasthttp.MethodGet, s.lokiIndexStats)},
		route{name: "loki_tail", match: is(loki + "tail"), serve: allowOnly(fasthttp.MethodGet, s.lokiTail)},
		route{name: "loki_buildinfo", match: is(loki + "status/buildinfo"), serve: allowOnly(fasthttp.MethodGet, lokiBuildInfo)},
		route{name: "loki_empty", match: anyOf(is(loki+"detected_fields"), between(loki+"detected_field/", "/values"), is(loki+"patterns"),
			is(loki+"index/volume"), is(loki+"index/volume_range")), serve: allowOnly(fasthttp.MethodGet, lokiEmpty)},
	)
	return rt
}

// needsToken reports whether a path is behind the token check whatever
// its route: the API under /v1/ and Loki's under /loki/.
func needsToken(path []byte) bool {
	return bytes.HasPrefix(path, []byte("/v1/")) || bytes.HasPrefix(path, []byte("/loki/"))
}

// dispatch serves the request by the route table and returns the name of
// the route that answered it.
func (s *Server) dispatch(ctx *fasthttp.RequestCtx) string {
	// The probes answer whatever the Host: Kubernetes and load balancers
	// name the pod or node as they see fit (guard.go).
	if !isProbe(ctx.Path()) && !s.checkHost(ctx) {
		return "refused_host"
	}
	if !s.checkSameOrigin(ctx) {
		return "refused_cross_site"
	}
	if r := find(ctx, s.routes.open); r != nil {
		r.serve(ctx)
		return r.name
	}
	if under(esBase)(ctx.Path()) {
		// Elasticsearch clients check every answer for it, a 401 included.
		ctx.Response.Header.Set("X-Elastic-Product", "Elasticsearch")
	}
	if needsToken(ctx.Path()) && !s.authorize(ctx) {
		return "unauthorized"
	}
	if r := find(ctx, s.routes.api); r != nil {
		r.serve(ctx)
		return r.name
	}
	writeError(ctx, &httperr.Error{Status: fasthttp.StatusNotFound, Msg: fmt.Sprintf("no route for %s %s", ctx.Method(), ctx.Path())})
	return "other"
}

// find returns the first route of table that matches the request, or nil.
func find(ctx *fasthttp.RequestCtx, table []route) *route {
	path, method := ctx.Path(), ctx.Method()
	for i := range table {
		r := &table[i]
		if (r.method == "" || string(method) == r.method) && r.match(path) {
			return r
		}
	}
	return nil
}

// is matches the path p.
func is(p string) func([]byte) bool {
	return func(path []byte) bool { return string(path) == p }
}

// hasPrefix matches the paths starting with p.
func hasPrefix(p string) func([]byte) bool {
	return func(path []byte) bool { return bytes.HasPrefix(path, []byte(p)) }
}

// under matches p and the paths below it, p + "/...".
func under(p string) func([]byte) bool {
	return func(path []byte) bool {
		return string(path) == p || (bytes.HasPrefix(path, []byte(p)) && path[len(p)] == '/')
	}
}

// below matches the paths longer than p that start with it.
func below(p string) func([]byte) bool {
	return func(path []byte) bool { return len(path) > len(p) && bytes.HasPrefix(path, []byte(p)) }
}

// between matches the paths longer than prefix+suffix that start with
// prefix and end with suffix.
func between(prefix, suffix string) func([]byte) bool {
	return func(path []byte) bool {
		return len(path) > len(prefix)+len(suffix) && bytes.HasPrefix(path, []byte(prefix)) && bytes.HasSuffix(path, []byte(suffix))
	}
}

// anyOf matches what any of ms matches.
func anyOf(ms ...func([]byte) bool) func([]byte) bool {
	return func(path []byte) bool {
		for _, m := range ms {
			if m(path) {
				return true
			}
		}
		return false
	}
}

// isProbe matches the health probes' paths.
func isProbe(path []byte) bool {
	return string(path) == "/healthz" || string(path) == "/readyz"
}

// isPage matches the web page's paths: "/" and "/ui/...".
func isPage(path []byte) bool {
	return string(path) == "/" || bytes.HasPrefix(path, []byte("/ui/"))
}

// allowOnly serves h for method and answers 405 otherwise.
func allowOnly(method string, h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Method()) != method {
			methodNotAllowed(ctx, method)
			return
		}
		h(ctx)
	}
}

// unscoped serves h only for a token without a service list (403
// otherwise): what belongs to no service.
func unscoped(what string, h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if requireUnscoped(ctx, what) {
			h(ctx)
		}
	}
}

// parsedTypesOnly refuses (415) a body of a content type the intake never
// parses (intake.CheckContentType) before reading it, so that a form
// costs neither memory nor the read.
func (s *Server) parsedTypesOnly(logins bool, h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if err := intake.CheckContentType(string(ctx.Request.Header.ContentType()), !logins); err != nil {
			s.refuse(ctx, err)
			return
		}
		h(ctx)
	}
}

func healthz(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain")
	ctx.WriteString("ok\n")
}

// metrics serves /metrics, behind a token with --metrics-auth.
func (s *Server) metrics(ctx *fasthttp.RequestCtx) {
	if s.cfg.MetricsAuth && !s.authorize(ctx) {
		return
	}
	s.metricsH(ctx)
}

func methodNotAllowed(ctx *fasthttp.RequestCtx, allow string) {
	ctx.Response.Header.Set("Allow", allow)
	writeError(ctx, &httperr.Error{Status: fasthttp.StatusMethodNotAllowed, Msg: fmt.Sprintf("%s is not allowed on %s", ctx.Method(), ctx.Path())})
}

// pprofIndex serves Go's profiles; the index answers at /debug/pprof/ as
// net/http/pprof's does (fasthttp's handler has it at /debug/pprof only).
func pprofIndex(ctx *fasthttp.RequestCtx) {
	if string(ctx.Path()) == "/debug/pprof/" {
		ctx.URI().SetPath("/debug/pprof")
	}
	pprofhandler.PprofHandler(ctx)
}
