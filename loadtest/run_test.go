package loadtest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func quickConfig(target string) Config {
	cfg := DefaultConfig()
	cfg.Target = target
	cfg.Concurrency = 4
	cfg.Batch = 100
	cfg.Seed = 42
	cfg.Quiet = true
	cfg.Partitions = 16
	return cfg
}

// TestRunEndToEnd drives an in-process server and checks that what it
// counted matches the report, for each encoding.
func TestRunEndToEnd(t *testing.T) {
	for _, enc := range []string{"identity", "gzip", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			s := newSink(t)
			cfg := quickConfig(startServer(t, s.handle))
			cfg.Encoding = enc
			cfg.Events = 10_050 // a partial last batch
			cfg.LoginsRatio = 0.2
			cfg.AttackUser = "victim"
			cfg.AttackRate = 2000
			rep, err := Run(context.Background(), cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			logs, logins := s.count("/v1/logs"), s.count("/v1/logins")
			if got := int64(logs + logins); got != rep.EventsSent || rep.EventsAccepted != rep.EventsSent {
				t.Errorf("server counted %d events, report sent %d accepted %d", got, rep.EventsSent, rep.EventsAccepted)
			}
			if main := rep.EventsSent - rep.AttackSent; main != cfg.Events {
				t.Errorf("main stream sent %d events, want %d", main, cfg.Events)
			}
			if frac := float64(rep.LoginsSent-rep.AttackSent) / float64(cfg.Events); frac < 0.15 || frac > 0.25 {
				t.Errorf("logins share %.2f, want about 0.2", frac)
			}
			for id, n := range s.ids {
				if n != 1 || !strings.HasPrefix(id, rep.RunID+"-") {
					t.Fatalf("id %q posted %d times", id, n)
				}
			}
			if s.badTypes > 0 {
				t.Errorf("%d posts without Content-Type application/x-ndjson", s.badTypes)
			}
			if rep.Status["202"] != rep.Requests || rep.Errors != 0 {
				t.Errorf("status %v, errors %d", rep.Status, rep.Errors)
			}
			if rep.Latency.Count != rep.Requests || rep.Latency.P50 <= 0 || rep.Latency.Max < rep.Latency.P99 {
				t.Errorf("latency %+v for %d requests", rep.Latency, rep.Requests)
			}
			if enc != "identity" && rep.BytesWire >= rep.BytesRaw {
				t.Errorf("%s: %d bytes on the wire for %d raw", enc, rep.BytesWire, rep.BytesRaw)
			}
			if rep.Partitions == nil || rep.Partitions.Attempts != rep.LoginsSent {
				t.Errorf("partition report %+v, want %d attempts", rep.Partitions, rep.LoginsSent)
			}
		})
	}
}

func TestRunDuration(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	cfg := quickConfig(startServer(t, s.handle))
	cfg.Duration = 1500 * time.Millisecond
	cfg.Rate = 20_000
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// Open loop: exactly the scheduled batches, whatever the timing.
	if want := int64(cfg.Rate * cfg.Duration.Seconds()); rep.EventsSent != want {
		t.Errorf("sent %d events, want %d", rep.EventsSent, want)
	}
	if len(rep.Series) < 1 {
		t.Errorf("no per-second series: %+v", rep.Series)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{"events/s", "p99.9", "202:", "partitions", "hashed", "naive"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestOpenLoopStall stalls one request of an open-loop run on a single
// connection. The requests scheduled during the stall queue behind it;
// measured from their intended send times they are slow too, so the stall
// shows at p90 and p99, not only in the max (coordinated omission).
func TestOpenLoopStall(t *testing.T) {
	const stall = 300 * time.Millisecond
	var n atomic.Int64
	url := startServer(t, func(ctx *fasthttp.RequestCtx) {
		if n.Add(1) == 20 {
			time.Sleep(stall)
		}
		ctx.SetStatusCode(fasthttp.StatusAccepted)
	})
	cfg := quickConfig(url)
	cfg.Concurrency = 1
	cfg.Batch = 10
	cfg.Rate = 1000 // 100 requests/s
	cfg.Events = 1000
	cfg.LoginsRatio = 0
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 100 {
		t.Fatalf("%d requests, want 100", rep.Requests)
	}
	// About 30 requests were due during the stall: with one of 100
	// requests stalled, a send-time measurement would put p90 near 0.
	if rep.Latency.Max < float64(stall.Milliseconds()) {
		t.Errorf("max %.1fms, want >= %v", rep.Latency.Max, stall)
	}
	if rep.Latency.P99 < 200 || rep.Latency.P90 < 50 {
		t.Errorf("p90 %.1fms p99 %.1fms: the stall is hidden", rep.Latency.P90, rep.Latency.P99)
	}
	// The one worker was busy through the stall: the requests due then
	// went out late, and the report says so.
	if rep.SendLag.Count != 100 || rep.SendLag.Max < 200 {
		t.Errorf("send lag %+v: want 100 sends, the latest at least 200 ms late", rep.SendLag)
	}
}

// TestRetryAfter answers 429 and 503 before accepting: every batch is
// resent until it is accepted and counted once.
func TestRetryAfter(t *testing.T) {
	s := newSink(t)
	var refusals atomic.Int64
	s.before = func(ctx *fasthttp.RequestCtx, post int) bool {
		if post%3 == 0 {
			return false
		}
		refusals.Add(1)
		code := fasthttp.StatusTooManyRequests
		if post%3 == 2 {
			code = fasthttp.StatusServiceUnavailable
		}
		ctx.Response.Header.Set("Retry-After", "0")
		ctx.SetStatusCode(code)
		return true
	}
	cfg := quickConfig(startServer(t, s.handle))
	cfg.Concurrency = 1
	cfg.Events = 1000
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 10 || rep.EventsSent != 1000 || rep.EventsAccepted != 1000 {
		t.Errorf("requests %d sent %d accepted %d, want 10, 1000, 1000", rep.Requests, rep.EventsSent, rep.EventsAccepted)
	}
	if rep.Retry429 != 10 || rep.Retry503 != 10 || rep.Retry429+rep.Retry503 != refusals.Load() {
		t.Errorf("honoured 429 %d, 503 %d; server refused %d", rep.Retry429, rep.Retry503, refusals.Load())
	}
	if rep.Status["202"] != 10 || len(rep.Status) != 1 {
		t.Errorf("status %v: a retried batch must count once, by its final answer", rep.Status)
	}
	if got := s.count("/v1/logs") + s.count("/v1/logins"); got != 1000 {
		t.Errorf("server stored %d events", got)
	}
}

// TestRetryAfterWaits checks that the wait is honoured and counted in
// the batch's latency.
func TestRetryAfterWaits(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	s.before = func(ctx *fasthttp.RequestCtx, post int) bool {
		if post > 1 {
			return false
		}
		ctx.Response.Header.Set("Retry-After", "1")
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return true
	}
	cfg := quickConfig(startServer(t, s.handle))
	cfg.Concurrency = 1
	cfg.Events = int64(cfg.Batch)
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Retry503 != 1 || rep.EventsAccepted != cfg.Events {
		t.Errorf("503 honoured %d, accepted %d", rep.Retry503, rep.EventsAccepted)
	}
	if rep.Latency.Max < 1000 {
		t.Errorf("latency %.1fms: the Retry-After wait is missing", rep.Latency.Max)
	}
}

func TestErrorsByStatus(t *testing.T) {
	s := newSink(t)
	s.before = func(ctx *fasthttp.RequestCtx, post int) bool {
		switch post % 4 {
		case 1:
			ctx.SetStatusCode(fasthttp.StatusBadRequest)
		case 2:
			ctx.SetStatusCode(fasthttp.StatusInternalServerError)
		case 3:
			// Half the batch is refused line by line.
			ctx.SetStatusCode(fasthttp.StatusAccepted)
			ctx.SetBodyString(`{"accepted":98,"rejected":2,"errors":[{"line":1,"error":"x"},{"line":7,"error":"y"}]}`)
		default:
			return false
		}
		return true
	}
	cfg := quickConfig(startServer(t, s.handle))
	cfg.Concurrency = 1
	cfg.Events = 800
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"400": 2, "500": 2, "202": 4}
	for k, v := range want {
		if rep.Status[k] != v {
			t.Errorf("status %v, want %v", rep.Status, want)
			break
		}
	}
	if rep.Errors != 4 || rep.EventsRejected != 2*100+2*2 || rep.EventsFailed != 200 || rep.EventsAccepted != 2*100+2*98 {
		t.Errorf("errors %d rejected %d failed %d accepted %d", rep.Errors, rep.EventsRejected, rep.EventsFailed, rep.EventsAccepted)
	}
}

func TestTransportError(t *testing.T) {
	cfg := quickConfig("http://127.0.0.1:1") // nothing listens on port 1
	cfg.Concurrency = 1
	cfg.Events = 200
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 2 || rep.Status["transport: connection refused"] != 2 {
		t.Errorf("errors %d, status %v", rep.Errors, rep.Status)
	}
}

func TestRetryAfterParse(t *testing.T) {
	f := func(h string, attempt int, want time.Duration) {
		t.Helper()
		if got := retryAfter([]byte(h), attempt); got != want {
			t.Errorf("retryAfter(%q, %d) = %v, want %v", h, attempt, got, want)
		}
	}
	f("2", 0, 2*time.Second)
	f("0", 0, 0)
	f("0.5", 0, 500*time.Millisecond)
	f("3600", 0, 30*time.Second)
	f("", 0, 100*time.Millisecond)
	f("", 3, 800*time.Millisecond)
	f("", 20, 25600*time.Millisecond)
	f("soon", 1, 200*time.Millisecond)
	f(time.Now().Add(-time.Hour).UTC().Format(time.RFC1123), 0, 0)
	if got := retryAfter([]byte(time.Now().Add(10*time.Second).UTC().Format(time.RFC1123)), 0); got < 8*time.Second || got > 10*time.Second {
		t.Errorf("HTTP-date 10s ahead: %v", got)
	}
}

func TestTicketKind(t *testing.T) {
	for _, ratio := range []float64{0, 0.1, 0.25, 1} {
		s := &stream{loginsRatio: ratio}
		n := 0
		for k := range int64(1000) {
			if s.ticketKind(k) == kindLogins {
				n++
			}
		}
		if want := int(ratio * 1000); n != want {
			t.Errorf("ratio %g: %d login batches of 1000, want %d", ratio, n, want)
		}
	}
}

func TestValidate(t *testing.T) {
	f := func(mod func(*Config), wantErr string) {
		t.Helper()
		cfg := DefaultConfig()
		mod(&cfg)
		err := cfg.Validate()
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("unexpected error: %v", err)
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("error %v, want %q", err, wantErr)
		}
	}
	f(func(c *Config) {}, "")
	f(func(c *Config) { c.Target = "127.0.0.1:8080" }, "--target")
	f(func(c *Config) { c.Target = "ftp://x" }, "--target")
	f(func(c *Config) { c.Encoding = "br" }, "--encoding")
	f(func(c *Config) { c.Zipf = 1 }, "--zipf")
	f(func(c *Config) { c.Batch = 0 }, "--batch")
	f(func(c *Config) { c.Duration, c.Events = 0, 0 }, "--duration")
	f(func(c *Config) { c.AttackUser, c.AttackRate = "x", 0 }, "--attack-rate")
	f(func(c *Config) { c.LoginsRatio = 1.5 }, "--logins-ratio")
	f(func(c *Config) { c.Batch, c.EventSize = 100000, 4096 }, "--batch")
}
