package httpapi

import (
	"bytes"
	"fmt"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/pprofhandler"

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
// without a token (or check their own); every /v1/ path needs a token
// when tokens are set, known or not, before the api routes are tried: a
// route added there is never open by mistake.
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
	}
	rt.open = append(rt.open, s.shipperOpenRoutes()...)
	if s.cfg.Pprof {
		rt.open = append(rt.open, route{name: "pprof", match: hasPrefix("/debug/pprof"), serve: s.withToken(pprofhandler.PprofHandler)})
	}
	rt.api = []route{
		{name: "get_stats", match: under("/v1/stats"), serve: allowOnly(fasthttp.MethodGet, s.stats)},
		{name: "post_retention", match: is("/v1/retention"), serve: allowOnly(fasthttp.MethodPost, unscoped("retention", s.retention))},
		{name: "post_logs", method: fasthttp.MethodPost, match: under("/v1/logs"), serve: func(ctx *fasthttp.RequestCtx) { s.ingest(ctx, false) }},
		{name: "post_logins", method: fasthttp.MethodPost, match: is("/v1/logins"),
			serve: unscoped("posting login attempts", func(ctx *fasthttp.RequestCtx) { s.ingest(ctx, true) })},
		{name: "get_logs", method: fasthttp.MethodGet, match: is("/v1/logs"), serve: s.queryLogs},
		{name: "get_logins", method: fasthttp.MethodGet, match: below("/v1/logins/"), serve: s.queryLogins},
		{name: "get_tail", method: fasthttp.MethodGet, match: is("/v1/tail"), serve: s.tailLogs},
		{name: "get_services", method: fasthttp.MethodGet, match: is("/v1/services"), serve: s.listServices},
		{name: "es", match: under(esBase), serve: s.esAPI},
		// The paths above, with a method they do not take.
		{name: "other", match: anyOf(under("/v1/logs"), under("/v1/logins"), is("/v1/tail"), is("/v1/services")),
			serve: func(ctx *fasthttp.RequestCtx) { methodNotAllowed(ctx, "GET, POST") }},
	}
	return rt
}

// shipperOpenRoutes are the routes of the shippers' protocols that live
// outside /v1/ (where shippers expect them), each behind the token check
// itself. The Elasticsearch API is under /v1/es/, an api route.
func (s *Server) shipperOpenRoutes() []route {
	return []route{
		{name: "loki_push", method: fasthttp.MethodPost, match: is(lokiPushPath), serve: s.withToken(s.lokiPush)},
		{name: "ready", match: is("/ready"), serve: s.ready}, // Loki's readiness check, which Vector's healthcheck calls
	}
}

// dispatch serves the request by the route table and returns the name of
// the route that answered it.
func (s *Server) dispatch(ctx *fasthttp.RequestCtx) string {
	if r := find(ctx, s.routes.open); r != nil {
		r.serve(ctx)
		return r.name
	}
	if under(esBase)(ctx.Path()) {
		// Elasticsearch clients check every answer for it, a 401 included.
		ctx.Response.Header.Set("X-Elastic-Product", "Elasticsearch")
	}
	if bytes.HasPrefix(ctx.Path(), []byte("/v1/")) && !s.authorize(ctx) {
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

// withToken serves h only with a known token when tokens are set.
func (s *Server) withToken(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if s.authorize(ctx) {
			h(ctx)
		}
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
