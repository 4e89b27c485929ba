package httpapi

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"ingest/buffer"
	"ingest/query"
)

// logRecords is a log handler that hands each record to the test.
type logRecords chan slog.Record

func (c logRecords) Enabled(context.Context, slog.Level) bool      { return true }
func (c logRecords) Handle(_ context.Context, r slog.Record) error { c <- r; return nil }
func (c logRecords) WithAttrs([]slog.Attr) slog.Handler            { return c }
func (c logRecords) WithGroup(string) slog.Handler                 { return c }

// boom is where the test routes panic.
func boom() { panic("boom from a test route") }

// TestPanicsEndTheRequestNotTheProcess: a handler that panics answers 500,
// a body writer that panics ends its answer with an in-band error line;
// both are counted, and each place is logged with its stack once however
// often it panics.
func TestPanicsEndTheRequestNotTheProcess(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	logged := make(logRecords, 100)
	f.srv.panics.log = slog.New(logged)
	f.srv.routes.api = append([]route{
		{name: "boom", match: is("/v1/boom"), serve: func(*fasthttp.RequestCtx) { boom() }},
		{name: "boom_stream", match: is("/v1/boom-stream"), serve: func(ctx *fasthttp.RequestCtx) {
			if !f.srv.enterQuery(ctx) {
				return
			}
			f.srv.streamBody(ctx, f.srv.queries.leave, func(w *bufio.Writer) {
				w.WriteString(`{"ts":"2026-11-21T16:00:00.0000000Z","message":"before"}` + "\n")
				boom()
			})
		}},
	}, f.srv.routes.api...)
	for range 5 {
		code, _, body := f.do(t, "GET", "/v1/boom", nil, nil)
		if code != 500 || !strings.Contains(body, "internal error") || strings.Contains(body, "boom") {
			t.Fatalf("panicking handler: %d %s, want 500 saying no more than internal error", code, body)
		}
		code, _, body = f.do(t, "GET", "/v1/boom-stream", nil, nil)
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		if code != 200 || len(lines) != 2 || query.ControlKind([]byte(lines[1])) != query.ControlError || !strings.Contains(lines[1], "internal error") {
			t.Fatalf("panicking body writer: %d %q, want the event then an in-band error line", code, body)
		}
	}
	if code, _, _ := f.do(t, "GET", "/healthz", nil, nil); code != 200 {
		t.Fatalf("healthz after the panics: %d", code)
	}
	for where, want := range map[string]float64{"handler": 5, "stream": 5} {
		if got := testutil.ToFloat64(f.srv.met.panics.WithLabelValues(where)); got != want {
			t.Errorf("ingest_panics_total{where=%q} = %v, want %v", where, got, want)
		}
	}
	// Every stream slot was given back: five more reads run at once.
	for range DefaultMaxConcurrentQueries {
		if !f.srv.queries.enter() {
			t.Fatal("a panicking body writer kept its query slot")
		}
	}
	close(logged)
	var sites []string
	for r := range logged {
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		if r.Level != slog.LevelError || !strings.Contains(attrs["stack"], "panics_test.go") {
			t.Errorf("panic logged at %v without the stack: %v", r.Level, attrs)
		}
		sites = append(sites, attrs["where"]+" "+attrs["site"])
	}
	if len(sites) != 2 || !strings.HasPrefix(sites[0], "handler ingest/httpapi.boom ") || !strings.HasPrefix(sites[1], "stream ingest/httpapi.boom ") {
		t.Fatalf("panics logged at %q, want one handler and one stream record, at boom", sites)
	}
}

// TestPanicsOnRequestGoroutinesEndThemNotTheProcess: a panic on a
// goroutine a request starts (goGuarded: peer streams, a WebSocket's
// reader) or on a hijacked connection's (recoverStream) ends that
// goroutine, counted as a stream panic; the server goes on answering.
func TestPanicsOnRequestGoroutinesEndThemNotTheProcess(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	f.srv.panics.log = slog.New(make(logRecords, 100))
	f.srv.routes.api = append([]route{
		{name: "boom_hijack", match: is("/v1/boom-hijack"), serve: func(ctx *fasthttp.RequestCtx) {
			ctx.Hijack(func(net.Conn) {
				defer f.srv.recoverStream("/v1/boom-hijack")
				boom()
			})
		}},
	}, f.srv.routes.api...)
	stream := f.srv.met.panics.WithLabelValues("stream")
	for i := range 3 {
		f.srv.goGuarded("/v1/tail", boom)
		f.do(t, "GET", "/v1/boom-hijack", nil, nil)
		want := float64(2 * (i + 1))
		for deadline := time.Now().Add(10 * time.Second); testutil.ToFloat64(stream) < want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("ingest_panics_total{where=\"stream\"} = %v, want %v", testutil.ToFloat64(stream), want)
			}
		}
	}
	if code, _, _ := f.do(t, "GET", "/healthz", nil, nil); code != 200 {
		t.Fatalf("healthz after the panics: %d", code)
	}
}
