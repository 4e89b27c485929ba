package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"ingest/buffer"
)

// TestMaxConcurrentQueries: past --max-concurrent-queries every read that
// scans storage gets 429 with Retry-After once its short wait is over; a
// streamed answer holds its slot to its end, and gives it back.
func TestMaxConcurrentQueries(t *testing.T) {
	defer func(w time.Duration) { queryWait = w }(queryWait)
	queryWait = 50 * time.Millisecond
	cfg := Config{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxInflightBytes: 64 << 20, ReadTimeout: 10 * time.Second, MaxConcurrentQueries: 2}
	f := newFixture(t, cfg, buffer.Config{})
	reads := []string{
		"/v1/logs?service=x&from=-1h",
		"/v1/logs?service=x&from=-1h&histogram=1m",
		"/v1/logins/bob",
		"/v1/services",
	}
	// Sequential reads, streamed or not, each give their slot back.
	for range 3 {
		for _, p := range reads {
			if code, _, body := f.do(t, "GET", p, nil, nil); code != 200 {
				t.Fatalf("GET %s = %d %s", p, code, body)
			}
		}
	}
	f.srv.queries.enter()
	f.srv.queries.enter()
	for _, p := range reads {
		code, h, body := f.do(t, "GET", p, nil, nil)
		if code != 429 || h.Get("Retry-After") == "" || !strings.Contains(body, "--max-concurrent-queries") {
			t.Errorf("GET %s with every slot taken = %d (Retry-After %q) %s", p, code, h.Get("Retry-After"), body)
		}
	}
	if got := testutil.ToFloat64(f.srv.met.queriesRefused); got != float64(len(reads)) {
		t.Errorf("ingest_queries_refused_total = %v, want %d", got, len(reads))
	}
	// A bad request is answered 400 without a slot.
	if code, _, _ := f.do(t, "GET", "/v1/logs?service=x&from=nonsense", nil, nil); code != 400 {
		t.Errorf("a bad request with every slot taken = %d, want 400", code)
	}
	// The tail, health and writes do not count.
	if code, _, _ := f.do(t, "GET", "/healthz", nil, nil); code != 200 {
		t.Errorf("healthz = %d", code)
	}
	f.srv.queries.leave()
	if code, _, body := f.do(t, "GET", reads[0], nil, nil); code != 200 {
		t.Errorf("after a slot came free: %d %s", code, body)
	}
}
