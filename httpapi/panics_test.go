package httpapi

import (
	"bufio"
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"ingest/buffer"
	"ingest/query"
)

// lockedLog is a log sink safe for the server's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// boom is where the test routes panic.
func boom() { panic("boom from a test route") }

// TestPanicsEndTheRequestNotTheProcess: a handler that panics answers 500,
// a body writer that panics ends its answer with an in-band error line;
// both are counted, and each place is logged with its stack once however
// often it panics.
func TestPanicsEndTheRequestNotTheProcess(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	var log lockedLog
	f.srv.panics.log = slog.New(slog.NewTextHandler(&log, nil))
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
	out := log.String()
	if n := strings.Count(out, "recovered from a panic"); n != 2 || strings.Count(out, "panics_test.go") < 2 ||
		!strings.Contains(out, "site=\"ingest/httpapi.boom ") {
		t.Fatalf("%d panic log lines, want 2 (one per place, with the stack and site):\n%s", n, out)
	}
}
