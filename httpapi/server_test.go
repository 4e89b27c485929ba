package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"ingest/blobsink"
	"ingest/buffer"
	"ingest/internal/benchcpu"
	"ingest/tablesink"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fixture struct {
	srv    *Server
	buf    *buffer.Buffer
	store  *blobsink.FileStore
	blobs  string // the store's directory
	client *http.Client
	ln     *fasthttputil.InmemoryListener
	addr   string // with newTCPFixture: the loopback address served
	gateMu sync.Mutex
	gate   chan struct{} // while set and open, blob flushes block (storage "down")
}

func (f *fixture) setGate(ch chan struct{}) {
	f.gateMu.Lock()
	f.gate = ch
	f.gateMu.Unlock()
}

// gatedFlusher blocks flushes while its gate is closed-off, to fill the budget.
type gatedFlusher struct {
	buffer.Flusher
	gate *chan struct{}
	mu   *sync.Mutex
}

func (g gatedFlusher) Flush(ctx context.Context, r buffer.FlushRequest) (int, error) {
	g.mu.Lock()
	ch := *g.gate
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return g.Flusher.Flush(ctx, r)
}

func newFixture(t testing.TB, cfg Config, bcfg buffer.Config) *fixture {
	t.Helper()
	return newFixtureOn(t, cfg, bcfg, false)
}

// newTCPFixture serves on a loopback TCP port (f.addr), for tests that need
// real connections: stalled uploads, slow headers, read timeouts.
func newTCPFixture(t testing.TB, cfg Config, bcfg buffer.Config) *fixture {
	t.Helper()
	return newFixtureOn(t, cfg, bcfg, true)
}

func newFixtureOn(t testing.TB, cfg Config, bcfg buffer.Config, tcp bool) *fixture {
	t.Helper()
	dir := t.TempDir()
	store, err := blobsink.NewFileStore(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	sink, err := blobsink.NewSink(store, blobsink.Config{MaxBlobBytes: 1 << 30}, reg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	bolt, err := tablesink.OpenBolt(filepath.Join(dir, "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	logins, err := tablesink.New(tablesink.DefaultConfig(), bolt, reg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: store, blobs: filepath.Join(dir, "blobs")}
	streams := []buffer.StreamDef{
		{ID: buffer.StreamLogs, Name: "logs", Flusher: gatedFlusher{sink, &f.gate, &f.gateMu}, Checksums: sink.TakesSums()},
		{ID: buffer.StreamLogins, Name: "logins", Flusher: logins},
	}
	if bcfg.Ack == "" {
		bcfg = buffer.Config{Ack: buffer.AckWAL, FlushInterval: 50 * time.Millisecond, FlushBytes: 1 << 20, BufferBytes: 64 << 20, FlushWorkers: 2, BudgetWait: 10 * time.Millisecond}
	}
	f.buf, err = buffer.Open(context.Background(), bcfg, filepath.Join(dir, "wal"), streams, reg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg = Config{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxInflightBytes: 64 << 20, ReadTimeout: 10 * time.Second, TokensFile: cfg.TokensFile, MetricsAuth: cfg.MetricsAuth}
	}
	if cfg.AdvertiseURL == "" {
		cfg.AdvertiseURL = "http://ingest" // the name the tests reach the server by
	}
	f.srv, err = New(cfg, Deps{Buffer: f.buf, Blobs: store, Logins: logins, Registry: reg, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if tcp {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f.srv.ln, f.addr = ln, ln.Addr().String()
		f.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{IdleConnTimeout: time.Second,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "tcp", f.addr)
			}}}
	} else {
		f.ln = fasthttputil.NewInmemoryListener()
		f.srv.ln = f.ln
		// A short idle timeout: net/http against an in-process fasthttp server
		// has been seen to stall until the transport's idle timer fires.
		f.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{IdleConnTimeout: time.Second,
			DialContext: func(context.Context, string, string) (net.Conn, error) { return f.ln.Dial() }}}
	}
	go f.srv.Serve()
	t.Cleanup(func() {
		f.buf.Close(context.Background())
		f.srv.Shutdown(context.Background())
	})
	return f
}

func (f *fixture) do(t testing.TB, method, path string, hdr map[string]string, body []byte) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://ingest"+path, bytes.NewReader(body))
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestStatuses(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	ndjson := map[string]string{"Content-Type": "application/x-ndjson"}
	cases := []struct {
		name, method, path string
		hdr                map[string]string
		body               []byte
		status             int
		contains           string
	}{
		{"accepted", "POST", "/v1/logs", ndjson, []byte(`{"msg":"a"}` + "\n" + `{"msg":"b"}`), 202, `"accepted":2,"rejected":0`},
		{"bad line numbered", "POST", "/v1/logs", ndjson, []byte("{\"msg\":\"a\"}\n{oops\n\n{\"x\":1}"), 202, `"rejected":2,"errors":[{"line":2,`},
		{"no valid line", "POST", "/v1/logs", ndjson, []byte("{oops"), 400, `"accepted":0`},
		{"unknown encoding", "POST", "/v1/logs", map[string]string{"Content-Encoding": "br"}, []byte("{}"), 415, "error"},
		{"unknown type", "POST", "/v1/logs", map[string]string{"Content-Type": "image/png"}, []byte("\x89PNG"), 415, "error"},
		{"login without user", "POST", "/v1/logins", ndjson, []byte(`{"user":"bob"}` + "\n" + `{"ip":"1.2.3.4"}`), 202, `"line":2`},
		{"old login refused by number", "POST", "/v1/logins", ndjson, []byte(`{"user":"bob","ts":"2001-01-01T00:00:00Z"}` + "\n" + `{"user":"bob"}`), 202, `{"line":1,"error":"cannot accept login attempt`},
		{"not found", "GET", "/nope", nil, nil, 404, "no route"},
		{"method", "DELETE", "/v1/logs", nil, nil, 405, "not allowed"},
		{"health", "GET", "/healthz", nil, nil, 200, "ok"},
		{"ready", "GET", "/readyz", nil, nil, 200, "ready"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := f.do(t, c.method, c.path, c.hdr, c.body)
			if code != c.status || !strings.Contains(body, c.contains) {
				t.Fatalf("%s %s = %d %q, want %d containing %q", c.method, c.path, code, body, c.status, c.contains)
			}
		})
	}
	code, _, body := f.do(t, "GET", "/metrics", nil, nil)
	if code != 200 || !strings.Contains(body, `ingest_http_requests_total{route="post_logs",status="2xx"}`) || !strings.Contains(body, "ingest_wal_fsync_duration_seconds") {
		t.Fatalf("/metrics = %d, missing series:\n%.2000s", code, body)
	}
}

func TestGzipBombIsRefusedWithBoundedMemory(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	// 256 MiB of zeros compress to about 250 KiB; the server must stop at
	// --max-decompressed-bytes (4 MiB here) without inflating the rest.
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 256 {
		zw.Write(zeros)
	}
	zw.Close()
	if bomb.Len() > 1<<20 {
		t.Skipf("bomb compressed to %d bytes, over the test's body limit", bomb.Len())
	}
	var before, after runtimeMem
	before.read()
	code, _, body := f.do(t, "POST", "/v1/logs", map[string]string{"Content-Encoding": "gzip", "Content-Type": "application/x-ndjson"}, bomb.Bytes())
	after.read()
	if code != 413 || !strings.Contains(body, "max-decompressed-bytes") {
		t.Fatalf("gzip bomb = %d %s, want 413 naming --max-decompressed-bytes", code, body)
	}
	if grew := after.totalAlloc - before.totalAlloc; grew > 64<<20 {
		t.Fatalf("refusing the bomb allocated %d MiB", grew>>20)
	}
}

func TestBackpressure429ThenRecovers(t *testing.T) {
	bcfg := buffer.Config{Ack: buffer.AckMemory, FlushInterval: 10 * time.Millisecond, FlushBytes: 4096, BufferBytes: 64 << 10, FlushWorkers: 1, BudgetWait: 5 * time.Millisecond}
	f := newFixture(t, Config{}, bcfg)
	gate := make(chan struct{})
	f.setGate(gate) // storage stalls: nothing is flushed
	var once sync.Once
	release := func() { once.Do(func() { f.setGate(nil); close(gate) }) }
	t.Cleanup(release)
	body := bytes.Repeat([]byte(`{"msg":"`+strings.Repeat("x", 200)+`"}`+"\n"), 50)
	var saw429 bool
	for range 40 {
		code, hdr, _ := f.do(t, "POST", "/v1/logs", nil, body)
		if code == 429 {
			saw429 = true
			if hdr.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			break
		}
	}
	if !saw429 {
		t.Fatal("the budget never filled: no 429")
	}
	if f.buf.Used() > bcfg.BufferBytes+int64(len(body))*2 {
		t.Fatalf("buffer holds %d bytes, over the %d budget", f.buf.Used(), bcfg.BufferBytes)
	}
	if code, _, _ := f.do(t, "GET", "/readyz", nil, nil); code != 503 {
		t.Fatalf("readyz with a full buffer = %d, want 503", code)
	}
	release()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _, _ := f.do(t, "POST", "/v1/logs", nil, body)
		if code == 202 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d after storage came back", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBodyTooLarge(t *testing.T) {
	f := newFixture(t, Config{MaxBodyBytes: 1024, MaxDecompressedBytes: 4096, MaxInflightBytes: 1 << 20, ReadTimeout: 5 * time.Second}, buffer.Config{})
	for _, chunked := range []bool{false, true} {
		body := bytes.Repeat([]byte(`{"msg":"x"}`+"\n"), 200) // 2.4 KB
		var r io.Reader = bytes.NewReader(body)
		if chunked {
			r = io.MultiReader(r) // unknown length: sent chunked
		}
		req, _ := http.NewRequest("POST", "http://ingest/v1/logs", r)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatalf("chunked=%v: %v", chunked, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(b), "max-body-bytes") {
			t.Fatalf("chunked=%v: %d %s, want 413 naming --max-body-bytes", chunked, resp.StatusCode, b)
		}
	}
}

func TestDrainAnswers503(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	f.srv.Drain(context.Background())
	code, hdr, _ := f.do(t, "POST", "/v1/logs", nil, []byte(`{"msg":"x"}`))
	if code != 503 || hdr.Get("Retry-After") == "" {
		t.Fatalf("POST while draining = %d (Retry-After %q), want 503 with Retry-After", code, hdr.Get("Retry-After"))
	}
}

func TestServiceResolution(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	post := func(path string, hdr map[string]string, body string) {
		if code, _, b := f.do(t, "POST", path, hdr, []byte(body)); code != 202 {
			t.Fatalf("POST %s = %d %s", path, code, b)
		}
	}
	ts := `"ts":"2026-11-21T16:00:00Z"`
	post("/v1/logs/frompath", nil, `{"msg":"a",`+ts+`}`)
	post("/v1/logs?service=fromquery", nil, `{"msg":"a",`+ts+`}`)
	post("/v1/logs", map[string]string{"X-Service": "fromheader"}, `{"msg":"a",`+ts+`}`)
	post("/v1/logs/frompath", nil, `{"msg":"a","service":"fromevent",`+ts+`}`)
	post("/v1/logs", nil, `{"msg":"a",`+ts+`}`)
	f.buf.Close(context.Background())
	for _, svc := range []string{"frompath", "fromquery", "fromheader", "fromevent", "default"} {
		var n int
		f.store.List(context.Background(), svc+"/2026/11/21/1600/", func(blobsink.BlobInfo) error { n++; return nil })
		if n != 1 {
			t.Errorf("service %s has %d blobs, want 1", svc, n)
		}
	}
}

// BenchmarkIngestPath measures one request's whole path in process: read
// body, parse 1,000 NDJSON events of ~200 bytes, encode lines into the
// batch, add to the buffer with --ack memory (the WAL's disk cost is
// measured by the buffer's own benchmark), answer 202.
func BenchmarkIngestPath(b *testing.B) { benchIngestPath(b, 1) }

// benchIngestPath posts one request of 1,000 events spread over services
// services, one after another, again and again.
func benchIngestPath(b *testing.B, services int) {
	bcfg := buffer.Config{Ack: buffer.AckMemory, FlushInterval: time.Second, FlushBytes: 4 << 20, BufferBytes: 1 << 30, FlushWorkers: 2, BudgetWait: time.Second}
	f := newFixture(b, Config{}, bcfg)
	var body []byte
	for i := range 1000 {
		service := "checkout"
		if services > 1 {
			service = fmt.Sprintf("svc-%d", i%services)
		}
		body = fmt.Appendf(body, `{"ts":"2026-11-21T16:04:05.%03dZ","service":"%s","host":"web-17","level":"info","msg":"user u%d paid order %d with card ending 4242 in 87 ms","user":"u%d","status":200,"path":"/api/pay"}`+"\n", i, service, i, i*7, i)
	}
	var ctx fasthttp.RequestCtx
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		postNDJSON(b, f, &ctx, body)
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "events/s")
	benchcpu.Report(b, cpu, 1000, "event")
}

// postNDJSON sends body to f's handler as POST /v1/logs in ctx (reset
// first, so a caller can reuse it without allocating) and fails unless
// it is answered 202.
func postNDJSON(tb testing.TB, f *fixture, ctx *fasthttp.RequestCtx, body []byte) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/logs")
	ctx.Request.Header.SetContentType("application/x-ndjson")
	ctx.Request.SetBody(body)
	f.srv.handle(ctx)
	if ctx.Response.StatusCode() != 202 {
		tb.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

type runtimeMem struct{ totalAlloc uint64 }
