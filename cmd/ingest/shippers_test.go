package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// Shippers exporting into a running ingest: what each real client sends,
// and what lands.

// queryNDJSON reads a service's events back through GET /v1/logs, waiting
// (up to 30 s: a shipper flushes on its own schedule) until want events are
// readable.
func (s *server) queryNDJSON(service string, from, to time.Time, want int) []map[string]any {
	s.t.Helper()
	q := url.Values{"service": {service}, "from": {from.UTC().Format(time.RFC3339Nano)}, "to": {to.UTC().Format(time.RFC3339Nano)}}
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequest("GET", s.url+"/v1/logs?"+q.Encode(), nil)
		if s.token != "" {
			req.Header.Set("Authorization", "Bearer "+s.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			s.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body = string(b); strings.Count(body, "\n") >= want {
			break
		}
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			s.t.Fatalf("query answered a line that is not JSON: %v: %q", err, line)
		}
		out = append(out, m)
	}
	if len(out) != want {
		s.t.Fatalf("service %s: %d events readable, want %d:\n%s", service, len(out), want, body)
	}
	return out
}

// checkFields fails unless ev holds every key of want with that value
// (numbers compared as JSON numbers).
func checkFields(t *testing.T, what string, ev map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		got, ok := ev[k]
		if !ok {
			t.Errorf("%s: no field %q in %v", what, k, ev)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("%s: %s = %v, want %v (event %v)", what, k, got, v, ev)
		}
	}
}

// collected keeps the records the SDK emits, so the test hands one batch to
// the real exporter and sees what Export returns (the SDK's own processors
// report export errors only to the global error handler).
type collected struct {
	mu      sync.Mutex
	records []sdklog.Record
}

func (c *collected) OnEmit(_ context.Context, r *sdklog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r.Clone())
	return nil
}
func (c *collected) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (c *collected) Shutdown(context.Context) error                         { return nil }
func (c *collected) ForceFlush(context.Context) error                       { return nil }

func TestShipperOTelGoSDK(t *testing.T) {
	s := start(t, t.TempDir(), "--flush-interval", "100ms")
	ctx := context.Background()
	exp, err := otlploghttp.New(ctx, otlploghttp.WithEndpointURL(s.url+"/v1/logs"),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(ctx)
	res := resource.NewWithAttributes("",
		attribute.String("service.name", "checkout"),
		attribute.String("host.name", "web-7"),
		attribute.String("deployment.environment", "prod"))
	var got collected
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(&got))
	logger := lp.Logger("shop/payments")

	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	emit := func(ts time.Time, sev otellog.Severity, body string, attrs ...attribute.KeyValue) {
		var r otellog.Record
		r.SetTimestamp(ts)
		r.SetSeverity(sev)
		r.SetBody(attribute.StringValue(body))
		r.AddAttributes(attrs...)
		logger.Emit(ctx, r)
	}
	emit(t0, otellog.SeverityError, "payment declined; card \"expired\"", attribute.String("user", "u1"), attribute.Int("code", 402))
	emit(t0.Add(time.Second), otellog.SeverityWarn2, "slow answer", attribute.Float64("seconds", 2.5))
	if err := exp.Export(ctx, got.records); err != nil {
		t.Fatalf("export of two valid records: %v", err)
	}

	// A batch with one record the server refuses (a time past 2262): the
	// others are stored and the exporter reports a partial success.
	got.records = nil
	emit(t0.Add(2*time.Second), otellog.SeverityInfo, "accepted beside a bad one")
	emit(time.Date(2262, 3, 1, 0, 0, 0, 0, time.UTC), otellog.SeverityInfo, "from too far ahead")
	err = exp.Export(ctx, got.records)
	if err == nil || !strings.Contains(err.Error(), "1 log records rejected") {
		t.Fatalf("export with one bad record: err %v, want a partial success naming 1 rejected record", err)
	}
	t.Logf("the exporter reports: %v", err)

	evs := s.queryNDJSON("checkout", t0, t0.Add(time.Minute), 3)
	checkFields(t, "first record", evs[0], map[string]any{
		"ts": t0.UTC().Format("2006-01-02T15:04:05.0000000Z"), "service": "checkout", "host": "web-7", "level": "error",
		"message": `payment declined; card "expired"`, "user": "u1", "code": 402,
		"resource.deployment.environment": "prod", "scope.name": "shop/payments",
	})
	checkFields(t, "second record", evs[1], map[string]any{"level": "warn", "message": "slow answer", "seconds": 2.5, "host": "web-7"})
	checkFields(t, "record beside the bad one", evs[2], map[string]any{"level": "info", "message": "accepted beside a bad one"})
}

// The OpenTelemetry Collector's otlphttp exporter and Vector's http sink
// cannot be installed here, so these post exactly what they send (headers
// and body as their sources build them) to the real binary.

func TestShipperOTelCollectorWireFormat(t *testing.T) {
	s := start(t, t.TempDir(), "--flush-interval", "100ms")
	t0 := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	str := func(v string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
	}
	req := &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			{Key: "service.name", Value: str("billing")},
			{Key: "host.name", Value: str("node-3")},
		}},
		ScopeLogs: []*logspb.ScopeLogs{{
			Scope: &commonpb.InstrumentationScope{Name: "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver"},
			LogRecords: []*logspb.LogRecord{{
				TimeUnixNano:         uint64(t0.UnixNano()),
				ObservedTimeUnixNano: uint64(t0.Add(time.Millisecond).UnixNano()),
				SeverityNumber:       logspb.SeverityNumber_SEVERITY_NUMBER_ERROR,
				SeverityText:         "ERROR",
				Body:                 str("invoice 17 failed"),
				Attributes:           []*commonpb.KeyValue{{Key: "log.file.name", Value: str("billing.log")}},
			}, {
				// filelog without a timestamp parser: only the observed time.
				ObservedTimeUnixNano: uint64(t0.Add(time.Second).UnixNano()),
				Body:                 str("plain line"),
			}},
		}},
	}}}
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, enc := range []string{"gzip", ""} { // gzip is the exporter's default; `compression: none` sends it plain
		r, _ := http.NewRequest("POST", s.url+"/v1/logs", bytes.NewReader(map[bool][]byte{true: gz(body), false: body}[enc == "gzip"]))
		r.Header.Set("Content-Type", "application/x-protobuf")
		r.Header.Set("User-Agent", "OpenTelemetry Collector Contrib/0.115.0 (linux/amd64)")
		if enc != "" {
			r.Header.Set("Content-Encoding", enc)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var out collogs.ExportLogsServiceResponse
		buf := new(bytes.Buffer)
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(buf.Bytes(), &out) != nil || out.PartialSuccess != nil {
			t.Fatalf("Collector export (encoding %q) = %d %s %q, want 200 with an empty ExportLogsServiceResponse", enc, resp.StatusCode, resp.Header.Get("Content-Type"), buf.Bytes())
		}
	}
	evs := s.queryNDJSON("billing", t0, t0.Add(time.Minute), 4)
	checkFields(t, "record with a time", evs[0], map[string]any{"service": "billing", "host": "node-3", "level": "error", "message": "invoice 17 failed", "log.file.name": "billing.log"})
	checkFields(t, "record with only the observed time", evs[3], map[string]any{"ts": t0.Add(time.Second).UTC().Format("2006-01-02T15:04:05.0000000Z"), "message": "plain line"})
}

func TestShipperVectorWireFormat(t *testing.T) {
	s := start(t, t.TempDir(), "--flush-interval", "100ms")
	t0 := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	// Vector's log events as its json codec writes them (legacy namespace:
	// message, timestamp with nanoseconds, host, source_type, and the
	// event's other fields), newline_delimited framing.
	var body []byte
	for i, lvl := range []string{"INFO", "warning", "err"} {
		body = fmt.Appendf(body, `{"host":"vec-1","message":"line %d","service":"shop","level":%q,"source_type":"file","file":"/var/log/shop.log","timestamp":%q}`+"\n",
			i, lvl, t0.Add(time.Duration(i)*time.Second).UTC().Format(time.RFC3339Nano))
	}
	for _, enc := range []string{"", "gzip"} { // compression: none (the default) and gzip
		r, _ := http.NewRequest("POST", s.url+"/v1/logs", bytes.NewReader(map[bool][]byte{true: gz(body), false: body}[enc == "gzip"]))
		r.Header.Set("Content-Type", "application/x-ndjson")
		r.Header.Set("User-Agent", "Vector/0.43.0 (x86_64-unknown-linux-gnu)")
		r.Header.Set("Accept-Encoding", "identity")
		if enc != "" {
			r.Header.Set("Content-Encoding", enc)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		buf := new(bytes.Buffer)
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		// Vector retries on 429/5xx and treats any 2xx as delivered.
		if resp.StatusCode != 202 || !strings.Contains(buf.String(), `"accepted":3`) {
			t.Fatalf("Vector batch (encoding %q) = %d %s", enc, resp.StatusCode, buf.String())
		}
	}
	evs := s.queryNDJSON("shop", t0, t0.Add(time.Minute), 6)
	checkFields(t, "first line", evs[0], map[string]any{"service": "shop", "host": "vec-1", "level": "info", "message": "line 0", "source_type": "file", "file": "/var/log/shop.log"})
	checkFields(t, "warning", evs[2], map[string]any{"level": "warn"})
	checkFields(t, "err", evs[4], map[string]any{"level": "error"})
}

// TestShipperFluentBit runs a real Fluent Bit (the binary named by
// INGEST_TEST_FLUENT_BIT) with a dummy input and two outputs into ingest:
// out_http with json_lines and a date key, and out_opentelemetry.
func TestShipperFluentBit(t *testing.T) {
	fb := fluentBit(t)
	s := start(t, t.TempDir(), "--flush-interval", "100ms")
	port := strings.TrimPrefix(s.url, "http://127.0.0.1:")
	// The documented configuration, its outputs pointed at this server and
	// its tail input replaced by a dummy one.
	conf := readRepoFile(t, "docs/shippers/fluent-bit.conf")
	conf = regexp.MustCompile(`(?m)^(\s*Port\s+)8080$`).ReplaceAllString(conf, "${1}"+port)
	conf = regexp.MustCompile(`(?ms)^\[INPUT\].*?^$`).ReplaceAllString(conf,
		"[INPUT]\n    Name    dummy\n    Dummy   {\"log\":\"card declined\",\"level\":\"ERROR\",\"host\":\"fb-1\",\"user\":\"u9\"}\n    Samples 3\n")
	if strings.Count(conf, port) != 2 || !strings.Contains(conf, "dummy") {
		t.Fatalf("docs/shippers/fluent-bit.conf does not have the tail input and the two outputs on port 8080 this test expects:\n%s", conf)
	}
	path := filepath.Join(t.TempDir(), "fluent-bit.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Second)
	cmd := exec.Command(fb, "-c", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("fluent-bit output:\n%s", out.String())
		}
	}()

	for _, svc := range []string{"fluent-bit-http", "fluent-bit-otel"} {
		evs := s.queryNDJSON(svc, t0, time.Now().Add(time.Minute), 3)
		checkFields(t, svc, evs[0], map[string]any{"service": svc, "level": "error", "message": "card declined", "user": "u9"})
		ts, err := time.Parse(time.RFC3339Nano, evs[0]["ts"].(string))
		if err != nil || ts.Before(t0) || ts.After(time.Now()) {
			t.Errorf("%s: ts %v is not the record's time (%v)", svc, evs[0]["ts"], err)
		}
	}
}
