package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"ingest/blobsink"
	"ingest/buffer"
	"ingest/query"
)

// listingStore is the fixture's file store, counting the listings of each
// service: the work a read does grows with them.
type listingStore struct {
	query.Store
	mu       sync.Mutex
	listings int
	services map[string]bool
}

func (l *listingStore) List(ctx context.Context, prefix string, fn func(blobsink.BlobInfo) error) error {
	l.mu.Lock()
	l.listings++
	svc, _, _ := strings.Cut(prefix, "/")
	l.services[svc] = true
	l.mu.Unlock()
	return l.Store.List(ctx, prefix, fn)
}

// ListTop keeps "*" to one directory read, as the file store does it.
func (l *listingStore) ListTop(ctx context.Context) ([]string, error) {
	return l.Store.(query.TopLister).ListTop(ctx)
}

func (l *listingStore) take() (listings, services int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	listings, services = l.listings, len(l.services)
	l.listings, l.services = 0, map[string]bool{}
	return listings, services
}

// FuzzReadParams drives the whole read path with hostile parameters
// (GET /v1/logs, /v1/logins, /v1/services, and Loki's query_range and
// query as Grafana sends them): from
// the raw query string through the handler's parsing and bounds, the
// histogram, the planning of the listings and the walk over a real file
// store holding blobs of a few hours, days and years. No input may panic
// (a 500), answer with anything but whole JSON lines (control lines
// last), or list more than a bounded number of prefixes per service
// whatever its range.
func FuzzReadParams(f *testing.F) {
	fx := newFixture(f, Config{}, buffer.Config{})
	var body []byte
	for _, ts := range []string{"1678-01-01T00:00:00Z", "1999-12-31T23:59:59Z", "2026-11-21T16:00:00Z", "2026-11-22T00:30:00Z", "2027-02-01T05:00:00Z", "2261-12-31T23:59:59Z"} {
		for _, svc := range []string{"api", "web"} {
			body = append(body, `{"ts":"`+ts+`","service":"`+svc+`","level":"warn","msg":"far","error":"x","@ingest":"y"}`+"\n"...)
		}
	}
	if code, _, b := fx.do(f, "POST", "/v1/logs", map[string]string{"Content-Type": "application/x-ndjson"}, body); code != 202 {
		f.Fatalf("POST = %d %s", code, b)
	}
	if code, _, b := fx.do(f, "POST", "/v1/logins", map[string]string{"Content-Type": "application/x-ndjson"},
		[]byte(`{"user":"api","id":"l1"}`+"\n"+`{"user":"%41","id":"l2","@ingest":"error"}`)); code != 202 {
		f.Fatalf("POST = %d %s", code, b)
	}
	for tries := 0; ; tries++ {
		if _, _, got := fx.do(f, "GET", "/v1/logs?service=*&from=1678-01-01&to=2262-01-01", nil, nil); strings.Count(got, "\n") == 12 {
			break
		} else if tries > 500 {
			f.Fatalf("the events are not stored: %s", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	store := &listingStore{Store: fx.srv.deps.Blobs, services: map[string]bool{}}
	fx.srv.deps.Blobs = store

	for _, s := range []struct {
		route                                      uint8
		service, from, to, hist, limit, order, raw string
	}{
		{0, "x", "1700-01-01T00:00:00Z", "now", "1h", "", "", ""},
		{0, "*", "1700-01-01T00:00:00Z", "now", "168h", "", "", ""},
		{0, "*", "1700-01-01T00:00:00Z", "now", "", "100000", "", ""},
		{0, "x", "now", "2261-12-31", "", "", "desc", "stats=1"},
		{0, "api,web", "0001-01-02", "9999-12-31", "", "3", "desc", ""},
		{0, "api", "-199w", "+199w", "744h", "", "", ""},
		{0, "*", "2026-11-21T16:00:00.5Z", "2026-11-22T00:30:00.0000001Z", "", "1", "asc", "level=warn&q=far&grep=f.r"},
		{0, "api", "now-1.5h", "now", "1500ms", "", "", ""},
		{1, "api", "99999999999", "10000", "", "", "", ""},
		{1, "%2541", "1", "1", "", "", "", ""},
		{2, "", "", "", "", "", "", ""},
		{3, `{service="api"} |= "far"`, "1", "9999999999999999999", "", "5000", "backward", ""},
		{3, `sum by (level) (count_over_time({service=~".+"} [1h]))`, "0", "7258118400000000000", "1", "", "", ""},
		{3, `sum by (level) (count_over_time({service="api"} | drop __error__ [1s]))`, "1700-01-01T00:00:00Z", "2261-12-31T00:00:00Z", "1ms", "", "", ""},
		{4, `vector(1)+vector(1)`, "now", "", "", "", "", ""},
		{4, `sum(count_over_time({service="web"}[100000h]))`, "2261-12-31T00:00:00Z", "", "", "", "", ""},
	} {
		f.Add(s.route, s.service, s.from, s.to, s.hist, s.limit, s.order, s.raw)
	}
	f.Fuzz(func(t *testing.T, route uint8, service, from, to, hist, limit, order, raw string) {
		v := url.Values{}
		set := func(k, val string) {
			if val != "" {
				v.Set(k, val)
			}
		}
		// raw as a client can send it: no byte outside printable ASCII,
		// no fragment.
		var r []byte
		for _, c := range []byte(raw) {
			if c <= ' ' || c >= 0x7f || c == '#' {
				r = fmt.Appendf(r, "%%%02X", c)
			} else {
				r = append(r, c)
			}
		}
		raw = string(r)
		var uri string
		switch route % 5 {
		case 0:
			set("service", service)
			set("from", from)
			set("to", to)
			set("histogram", hist)
			set("limit", limit)
			set("order", order)
			uri = "/v1/logs?" + v.Encode() + "&" + raw
		case 1:
			set("days", from)
			set("limit", to)
			uri = "/v1/logins/" + url.PathEscape(service) + "?" + v.Encode() + "&" + raw
		case 2:
			uri = "/v1/services?" + raw
		case 3: // Grafana's Loki data source: service is the LogQL
			set("query", service)
			set("start", from)
			set("end", to)
			set("step", hist)
			set("limit", limit)
			set("direction", order)
			uri = "/loki/api/v1/query_range?" + v.Encode() + "&" + raw
		default:
			set("query", service)
			set("time", from)
			set("limit", limit)
			uri = "/loki/api/v1/query?" + v.Encode() + "&" + raw
		}
		var req fasthttp.Request
		req.Header.SetMethod("GET")
		req.SetRequestURI(uri)
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, nil, nil)
		store.take()
		fx.srv.handle(&ctx)
		out := ctx.Response.Body()
		if rs := ctx.Response.BodyStream(); rs != nil {
			var err error
			if out, err = io.ReadAll(rs); err != nil {
				t.Fatalf("%s: reading the answer: %v", uri, err)
			}
			ctx.Response.CloseBodyStream()
		}
		code := ctx.Response.StatusCode()
		if code != 200 && code != 400 && code != 404 && code != 405 { // /v1/logins/ with no user is 405
			t.Fatalf("%s: status %d %s", uri, code, out)
		}
		if n := testutil.ToFloat64(fx.srv.met.panics.WithLabelValues("handler")) + testutil.ToFloat64(fx.srv.met.panics.WithLabelValues("stream")); n > 0 {
			t.Fatalf("%s: %v panics recovered", uri, n)
		}
		control := false
		for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
			if len(out) == 0 {
				break
			}
			if !json.Valid(line) {
				t.Fatalf("%s: invalid JSON line %q", uri, line)
			}
			kind := query.ControlKind(line)
			if control && kind == "" {
				t.Fatalf("%s: an event after a control line: %s", uri, out)
			}
			control = control || kind != ""
			if kind == query.ControlError {
				t.Fatalf("%s: in-band error %s", uri, line)
			}
		}
		// A probe per empty block, an hour listing per hour of a partial
		// day at either end, a day listing per day of a month with blobs.
		if listings, services := store.take(); listings > 250*max(services, 1) {
			t.Fatalf("%s: %d listings for %d services", uri, listings, services)
		}
	})
}
