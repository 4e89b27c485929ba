package httpapi

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// TestRouteTable: which route each request reaches ("" for none: 404).
func TestRouteTable(t *testing.T) {
	for _, pprof := range []bool{false, true} {
		s := &Server{cfg: Config{Pprof: pprof}}
		rt := s.newRoutes()
		f := func(method, path, want string) {
			t.Helper()
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(method)
			ctx.Request.SetRequestURI(path)
			r := find(&ctx, rt.open)
			if r == nil {
				r = find(&ctx, rt.api)
			}
			got := ""
			if r != nil {
				got = r.name
			}
			if got != want {
				t.Errorf("pprof %v: %s %s reaches %q, want %q", pprof, method, path, got, want)
			}
		}
		f("GET", "/healthz", "healthz")
		f("POST", "/healthz", "healthz")
		f("GET", "/readyz", "readyz")
		f("GET", "/metrics", "metrics")
		f("GET", "/", "page")
		f("GET", "/ui/app.js", "page")
		f("POST", "/", "")
		f("GET", "/uix", "")
		f("GET", "/debug/pprof/heap", map[bool]string{false: "", true: "pprof"}[pprof])
		f("GET", "/v1/stats", "get_stats")
		f("POST", "/v1/stats/api", "get_stats") // answers 405
		f("GET", "/v1/statsx", "")
		f("POST", "/v1/retention", "post_retention")
		f("GET", "/v1/retention", "post_retention") // answers 405
		f("POST", "/v1/logs", "post_logs")
		f("POST", "/v1/logs/api", "post_logs")
		f("POST", "/v1/logsx", "")
		f("GET", "/v1/logs", "get_logs")
		f("GET", "/v1/logs/api", "other") // 405
		f("DELETE", "/v1/logs", "other")
		f("POST", "/v1/logins", "post_logins")
		f("POST", "/v1/logins/alice", "other")
		f("GET", "/v1/logins/alice", "get_logins")
		f("GET", "/v1/logins/", "other")
		f("GET", "/v1/logins", "other")
		f("GET", "/v1/tail", "get_tail")
		f("POST", "/v1/tail", "other")
		f("GET", "/v1/services", "get_services")
		f("GET", "/v1/nope", "")
	}
}
