package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esutil"
	"github.com/klauspost/compress/s2"
	"google.golang.org/protobuf/encoding/protowire"
)

// Shippers speaking the Elasticsearch bulk API and Loki's push API into a
// running ingest: the real clients this machine has (Fluent Bit's es and
// loki outputs, the official Go Elasticsearch client), and the exact
// requests of those it has not (Filebeat, Logstash, Vector, Promtail,
// Grafana Alloy), replayed.

// documentedAs fails the test unless the shipper configuration at path
// (from the repository root) still has each of settings: a replay sends
// what that configuration makes the shipper send, and must change with it.
func documentedAs(t *testing.T, path string, settings ...string) {
	t.Helper()
	doc := readRepoFile(t, path)
	for _, want := range settings {
		if !strings.Contains(doc, want) {
			t.Fatalf("%s no longer has %s, which this replay assumes: replay what it configures now", path, want)
		}
	}
}

// fluentBit is the Fluent Bit binary INGEST_TEST_FLUENT_BIT names. Without
// one the test skips, or fails under CI=true (.ci/run sets it from the
// build beside the repository): a shipper test CI never runs proves
// nothing.
func fluentBit(t *testing.T) string {
	t.Helper()
	fb := os.Getenv("INGEST_TEST_FLUENT_BIT")
	if fb == "" {
		msg := "INGEST_TEST_FLUENT_BIT is not set: set it to a fluent-bit binary (with the dummy input and the http, opentelemetry, es, loki and syslog outputs) to run this test"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(fb); err != nil {
		t.Fatalf("INGEST_TEST_FLUENT_BIT=%s: %v", fb, err)
	}
	return fb
}

// runFluentBit runs the Fluent Bit binary INGEST_TEST_FLUENT_BIT names with
// the documented configuration conf, its outputs pointed at s (Port 8080
// rewritten, ports of them) and its tail input replaced by a dummy one
// emitting record samples times. It skips the test without the binary.
func runFluentBit(t *testing.T, s *server, conf string, ports int, record string, samples int) {
	t.Helper()
	runFluentBitOn(t, "8080", strings.TrimPrefix(s.url, "http://127.0.0.1:"), conf, ports, record, samples)
}

// runFluentBitOn is runFluentBit with the configuration's port from, on
// its Port lines, replaced by to.
func runFluentBitOn(t *testing.T, from, to string, conf string, ports int, record string, samples int) {
	t.Helper()
	fb := fluentBit(t)
	port := to
	text := readRepoFile(t, conf)
	text = regexp.MustCompile(`(?m)^(\s*Port\s+)`+from+`$`).ReplaceAllString(text, "${1}"+port)
	text = regexp.MustCompile(`(?ms)^\[INPUT\].*?^$`).ReplaceAllString(text,
		fmt.Sprintf("[INPUT]\n    Name    dummy\n    Dummy   %s\n    Samples %d\n", record, samples))
	if strings.Count(text, port) != ports || !strings.Contains(text, "dummy") {
		t.Fatalf("%s does not have the tail input and the %d outputs on port %s this test expects:\n%s", conf, ports, from, text)
	}
	path := filepath.Join(t.TempDir(), "fluent-bit.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fb, "-c", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("fluent-bit output:\n%s", out.String())
		}
	})
}

// TestShipperFluentBitES runs Fluent Bit's es output, as documented in
// docs/shippers/fluent-bit-es.conf, into ingest.
func TestShipperFluentBitES(t *testing.T) {
	s := start(t, t.TempDir(), "--flush-interval", "100ms")
	t0 := time.Now().Add(-time.Second)
	runFluentBit(t, s, "docs/shippers/fluent-bit-es.conf", 1, `{"log":"card declined","level":"ERROR","host":"fb-1","user":"u9"}`, 3)
	evs := s.queryNDJSON("checkout", t0, time.Now().Add(time.Minute), 3)
	checkFields(t, "fluent-bit es", evs[0], map[string]any{"service": "checkout", "level": "error", "host": "fb-1", "message": "card declined", "user": "u9"})
	ts, err := time.Parse(time.RFC3339Nano, evs[0]["ts"].(string))
	if err != nil || ts.Before(t0.Truncate(time.Millisecond)) || ts.After(time.Now()) {
		t.Errorf("ts %v is not the record's time (%v)", evs[0]["ts"], err)
	}
}

// TestShipperFluentBitLoki runs Fluent Bit's loki output, as documented in
// docs/shippers/fluent-bit-loki.conf, into ingest.
func TestShipperFluentBitLoki(t *testing.T) {
	s := start(t, t.TempDir(), "--flush-interval", "100ms")
	t0 := time.Now().Add(-time.Second)
	runFluentBit(t, s, "docs/shippers/fluent-bit-loki.conf", 1, `{"log":"card declined","level":"error","host":"fb-1","user":"u9"}`, 3)
	evs := s.queryNDJSON("checkout", t0, time.Now().Add(time.Minute), 3)
	checkFields(t, "fluent-bit loki", evs[0], map[string]any{"service": "checkout", "level": "error", "host": "fb-1", "env": "prod",
		"message": `{"log":"card declined","user":"u9"}`})
}

// TestShipperGoElasticsearchBulkIndexer runs the official Go client's bulk
// indexer (go-elasticsearch v8.19.7, esutil.BulkIndexer) against
// ingest with tokens, the token as an API key: the client's product check,
// documents stored, a bad one reported as failed with its reason and not
// retried.
func TestShipperGoElasticsearchBulkIndexer(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("es-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, filepath.Join(dir, "data"), "--flush-interval", "100ms", "--tokens", tokens)
	s.token = "es-token"
	client, err := elasticsearch.NewClient(elasticsearch.Config{Addresses: []string{s.url + "/v1/es"},
		APIKey: base64.StdEncoding.EncodeToString([]byte("ingest:es-token"))})
	if err != nil {
		t.Fatal(err)
	}
	info, err := client.Info()
	if err != nil || info.IsError() {
		t.Fatalf("Info: %v %v", err, info)
	}
	info.Body.Close()
	var failed atomic.Int64
	var reason atomic.Value
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{Client: client, Index: "orders", NumWorkers: 2, FlushBytes: 4 << 10,
		OnError: func(_ context.Context, err error) { t.Errorf("bulk indexer: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	const n = 200
	for i := range n {
		doc := fmt.Sprintf(`{"@timestamp":%q,"message":"order %d paid","log.level":"info","service":{"name":"orders"},"amount":%d}`,
			t0.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), i, i*3)
		if i == 7 {
			doc = `{"@timestamp":"not a time","message":"bad"}`
		}
		err := bi.Add(context.Background(), esutil.BulkIndexerItem{Action: "create", Body: strings.NewReader(doc),
			OnFailure: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
				failed.Add(1)
				reason.Store(fmt.Sprintf("%d %s: %s %v", res.Status, res.Error.Type, res.Error.Reason, err))
			}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := bi.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := bi.Stats()
	if st.NumAdded != n || st.NumIndexed != 0 && st.NumCreated+st.NumIndexed != n-1 || st.NumFailed != 1 || failed.Load() != 1 {
		t.Fatalf("bulk indexer stats %+v, %d failed, want %d added, %d created, 1 failed", st, failed.Load(), n, n-1)
	}
	if r, _ := reason.Load().(string); !strings.Contains(r, "400 document_parsing_exception") || !strings.Contains(r, `"@timestamp"`) {
		t.Errorf("the failed item says %q, want a 400 naming @timestamp", r)
	}
	evs := s.queryNDJSON("orders", t0, t0.Add(time.Minute), n-1)
	checkFields(t, "first document", evs[0], map[string]any{"service": "orders", "level": "info", "message": "order 0 paid", "amount": 0})
}

// replay is one request a shipper sends: method, path, headers and body.
type replay struct {
	method, path string
	header       map[string]string
	body         []byte
	status       int    // the status it expects
	contains     string // something its answer holds
}

// play sends the requests in order and checks each answer.
func (s *server) play(who string, reqs []replay) {
	s.t.Helper()
	for _, r := range reqs {
		req, _ := http.NewRequest(r.method, s.url+r.path, bytes.NewReader(r.body))
		for k, v := range r.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			s.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != r.status || !bytes.Contains(b, []byte(r.contains)) {
			s.t.Fatalf("%s: %s %s = %d %s, want %d with %q", who, r.method, r.path, resp.StatusCode, b, r.status, r.contains)
		}
		if strings.HasPrefix(r.path, "/v1/es") && resp.Header.Get("X-Elastic-Product") != "Elasticsearch" {
			s.t.Fatalf("%s: %s %s answered without X-Elastic-Product: Elasticsearch", who, r.method, r.path)
		}
	}
}

// with returns h with the pairs kv added.
func with(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// gzipBody is b gzip'd, what Filebeat, Logstash and Vector send with
// compression on.
func gzipBody(b []byte) []byte { return gz(b) }

// TestShipperFilebeatWireFormat replays Filebeat 8.15.0's Elasticsearch
// output against ingest (docs/shippers/filebeat.yml: path /v1/es, an API
// key "ingest:<token>", the add_fields processor naming the service): its
// start-up calls (root document, license check, index template and data
// stream set-up) and a gzip'd bulk request of create actions with nested
// ECS documents and Filebeat's filter_path.
func TestShipperFilebeatWireFormat(t *testing.T) {
	documentedAs(t, "docs/shippers/filebeat.yml", "output.elasticsearch:", "path: /v1/es", `api_key: "ingest:${INGEST_TOKEN}"`, "name: checkout")
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("fb-token checkout\n"), 0o600)
	s := start(t, filepath.Join(dir, "data"), "--flush-interval", "100ms", "--tokens", tokens)
	s.token = "fb-token"
	h := map[string]string{
		"User-Agent":    "Elastic-Filebeat/8.15.0 (linux; amd64; 60a1b6a2; 2024-08-01 17:34:20 +0000 UTC)",
		"Accept":        "application/json",
		"Authorization": "ApiKey " + base64.StdEncoding.EncodeToString([]byte("ingest:fb-token")),
	}
	jsonHdr := with(h, "Content-Type", "application/json; charset=UTF-8")
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	var bulk []byte
	for i, line := range []string{"GET /pay 200", "GET /cart 404", "POST /pay 500"} {
		bulk = fmt.Appendf(bulk, `{"create":{"_index":"filebeat-8.15.0"}}`+"\n"+
			`{"@timestamp":%q,"log":{"offset":%d,"file":{"path":"/var/log/app/access.log"}},"message":%q,"input":{"type":"filestream"},`+
			`"service":{"name":"checkout"},"ecs":{"version":"8.0.0"},"host":{"name":"web-7"},`+
			`"agent":{"ephemeral_id":"5c1b","id":"9f3a","name":"web-7","type":"filebeat","version":"8.15.0"}}`+"\n",
			t0.Add(time.Duration(i)*time.Second).Format("2006-01-02T15:04:05.000Z"), i*14, line)
	}
	s.play("filebeat 8.15.0", []replay{
		{"GET", "/v1/es/", h, nil, 200, `"number":"8.19.0"`},
		{"GET", "/v1/es/_license?human=false", h, nil, 200, `"type":"basic"`},
		{"GET", "/v1/es/", h, nil, 200, `"number"`},
		{"GET", "/v1/es/_ilm/policy/filebeat", h, nil, 200, ""},
		{"HEAD", "/v1/es/_index_template/filebeat-8.15.0", h, nil, 200, ""},
		{"PUT", "/v1/es/_index_template/filebeat-8.15.0", jsonHdr, []byte(`{"index_patterns":["filebeat-8.15.0"],"data_stream":{},"priority":150,"template":{"settings":{"index":{"lifecycle":{"name":"filebeat"}}}}}`), 200, `"acknowledged":true`},
		{"GET", "/v1/es/_data_stream/filebeat-8.15.0", h, nil, 200, ""},
		{"POST", "/v1/es/_bulk?filter_path=errors,items.*.error,items.*.status", with(jsonHdr, "Content-Encoding", "gzip"), gzipBody(bulk), 200,
			`{"errors":false,"items":[{"create":{"status":201}},{"create":{"status":201}},{"create":{"status":201}}]}`},
	})
	evs := s.queryNDJSON("checkout", t0, t0.Add(time.Minute), 3)
	checkFields(t, "filebeat document", evs[1], map[string]any{"service": "checkout", "host": "web-7", "message": "GET /cart 404",
		"log.file.path": "/var/log/app/access.log", "log.offset": 14, "agent.type": "filebeat", "ecs.version": "8.0.0"})
}

// TestShipperLogstashWireFormat replays Logstash 8.15.0's elasticsearch
// output (plugin 11.22) against ingest (docs/shippers/logstash.conf: basic
// auth with the token as the password): its health check and version and
// license checks, the ILM and template calls of an index output, and a
// gzip'd bulk of create actions to its default data stream.
func TestShipperLogstashWireFormat(t *testing.T) {
	documentedAs(t, "docs/shippers/logstash.conf", "elasticsearch {", `hosts => ["http://127.0.0.1:8080/v1/es"]`, `password => "${INGEST_TOKEN}"`, `"[service][name]" => "billing"`)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("ls-token\n"), 0o600)
	s := start(t, filepath.Join(dir, "data"), "--flush-interval", "100ms", "--tokens", tokens)
	s.token = "ls-token"
	h := map[string]string{
		"User-Agent":    "Logstash/8.15.0 (OS=Linux-6.1.0-amd64; JVM=Eclipse Adoptium 21.0.4) logstash-output-elasticsearch/11.22.7",
		"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("logstash_writer:ls-token")),
	}
	jsonHdr := with(h, "Content-Type", "application/json")
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	var bulk []byte
	for i := range 2 {
		bulk = fmt.Appendf(bulk, `{"create":{"_index":"logs-generic-default"}}`+"\n"+
			`{"@timestamp":%q,"@version":"1","message":"invoice %d failed","log":{"file":{"path":"/var/log/billing.log"},"level":"error"},`+
			`"host":{"name":"ls-1"},"event":{"original":"invoice %d failed"},"service":{"name":"billing"},`+
			`"data_stream":{"type":"logs","dataset":"generic","namespace":"default"}}`+"\n", t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), i, i)
	}
	s.play("logstash 8.15.0", []replay{
		{"HEAD", "/v1/es/", h, nil, 200, ""},
		{"GET", "/v1/es/", h, nil, 200, `"build_flavor":"default"`},
		{"GET", "/v1/es/_license", h, nil, 200, `"status":"active"`},
		// An output with index => "billing" manages ILM and a template first.
		{"GET", "/v1/es/_xpack", h, nil, 200, `"ilm":{"available":true,"enabled":true}`},
		{"GET", "/v1/es/_ilm/policy/logstash-policy", h, nil, 200, ""},
		{"HEAD", "/v1/es/_alias/billing", h, nil, 200, ""},
		{"PUT", "/v1/es/%3Cbilling-%7Bnow%2Fd%7D-000001%3E", jsonHdr, []byte(`{"aliases":{"billing":{"is_write_index":true}}}`), 200, `"acknowledged":true`},
		{"HEAD", "/v1/es/_index_template/ecs-logstash", h, nil, 200, ""},
		{"POST", "/v1/es/_bulk?filter_path=errors,items.*.error,items.*.status", with(jsonHdr, "Content-Encoding", "gzip"), gzipBody(bulk), 200,
			`{"errors":false,"items":[{"create":{"status":201}},{"create":{"status":201}}]}`},
	})
	evs := s.queryNDJSON("billing", t0, t0.Add(time.Minute), 2)
	checkFields(t, "logstash event", evs[1], map[string]any{"service": "billing", "host": "ls-1", "level": "error", "message": "invoice 1 failed",
		"@version": "1", "data_stream.dataset": "generic", "log.file.path": "/var/log/billing.log"})
}

// TestShipperVectorElasticsearchWireFormat replays Vector 0.43.0's
// elasticsearch sink in bulk mode (docs/shippers/vector-elasticsearch.yaml):
// version detection, its health check, and a bulk request of index actions
// whose documents carry Vector's "timestamp".
func TestShipperVectorElasticsearchWireFormat(t *testing.T) {
	documentedAs(t, "docs/shippers/vector-elasticsearch.yaml", "type: elasticsearch", `endpoints: ["http://127.0.0.1:8080/v1/es"]`, "mode: bulk", "index: shop", "action: index")
	s := start(t, t.TempDir(), "--flush-interval", "100ms")
	h := map[string]string{"User-Agent": "Vector/0.43.0 (x86_64-unknown-linux-gnu 0dc2b8b 2024-11-12 15:28:22.018585734)"}
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	var bulk []byte
	for i, lvl := range []string{"info", "WARN"} {
		bulk = fmt.Appendf(bulk, `{"index":{"_index":"shop"}}`+"\n"+
			`{"file":"/var/log/app/shop.log","host":"vec-1","level":%q,"message":"line %d","source_type":"file","timestamp":%q}`+"\n",
			lvl, i, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano))
	}
	s.play("vector 0.43.0 elasticsearch", []replay{
		{"GET", "/v1/es/", h, nil, 200, `"number"`},
		{"GET", "/v1/es/_cluster/health", h, nil, 200, `"status":"green"`},
		{"POST", "/v1/es/_bulk?timeout=60s", with(h, "Content-Type", "application/x-ndjson"), bulk, 200, `"errors":false`},
	})
	evs := s.queryNDJSON("shop", t0, t0.Add(time.Minute), 2)
	checkFields(t, "vector event", evs[1], map[string]any{"service": "shop", "host": "vec-1", "level": "warn", "message": "line 1",
		"ts": t0.Add(time.Second).Format("2006-01-02T15:04:05.0000000Z"), "source_type": "file"})
}

// lokiStream is one stream of a push, as the clients build it.
type lokiStream struct {
	labels  string // Prometheus form, {a="b", c="d"}
	entries []lokiEntry
}

type lokiEntry struct {
	ts   time.Time
	line string
	meta [][2]string // structured metadata
}

// lokiPush is the snappy-compressed protobuf PushRequest of streams,
// written from Loki's documented schema.
func lokiPush(streams ...lokiStream) []byte {
	var req []byte
	for _, st := range streams {
		var sm []byte
		sm = protowire.AppendTag(sm, 1, protowire.BytesType)
		sm = protowire.AppendString(sm, st.labels)
		for _, e := range st.entries {
			var ts, em []byte
			ts = protowire.AppendTag(ts, 1, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(e.ts.Unix()))
			ts = protowire.AppendTag(ts, 2, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(e.ts.Nanosecond()))
			em = protowire.AppendTag(em, 1, protowire.BytesType)
			em = protowire.AppendBytes(em, ts)
			em = protowire.AppendTag(em, 2, protowire.BytesType)
			em = protowire.AppendString(em, e.line)
			for _, kv := range e.meta {
				var p []byte
				p = protowire.AppendTag(p, 1, protowire.BytesType)
				p = protowire.AppendString(p, kv[0])
				p = protowire.AppendTag(p, 2, protowire.BytesType)
				p = protowire.AppendString(p, kv[1])
				em = protowire.AppendTag(em, 3, protowire.BytesType)
				em = protowire.AppendBytes(em, p)
			}
			sm = protowire.AppendTag(sm, 2, protowire.BytesType)
			sm = protowire.AppendBytes(sm, em)
		}
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, sm)
	}
	return s2.EncodeSnappy(nil, req)
}

// TestShipperPromtailAlloyWireFormat replays the pushes of Promtail 2.9.10
// (docs/shippers/promtail.yaml) and Grafana Alloy 1.5.0's loki.write
// (docs/shippers/config.alloy): snappy-compressed protobuf, a tenant
// header, basic auth with the token as the password (Promtail) or a bearer
// token (Alloy), and Alloy's structured metadata.
func TestShipperPromtailAlloyWireFormat(t *testing.T) {
	documentedAs(t, "docs/shippers/promtail.yaml", "url: http://127.0.0.1:8080/loki/api/v1/push", "password: ${INGEST_TOKEN}", "job: payments", "host: web-3")
	documentedAs(t, "docs/shippers/config.alloy", `url          = "http://127.0.0.1:8080/loki/api/v1/push"`, `bearer_token = sys.env("INGEST_TOKEN")`, `"service_name" = "payments"`)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("loki-token\n"), 0o600)
	s := start(t, filepath.Join(dir, "data"), "--flush-interval", "100ms", "--tokens", tokens)
	s.token = "loki-token"
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	proto := map[string]string{"Content-Type": "application/x-protobuf", "X-Scope-OrgID": "team-a"}
	promtail := lokiPush(lokiStream{labels: `{filename="/var/log/app/pay.log", host="web-3", job="payments", level="warn"}`,
		entries: []lokiEntry{{ts: t0, line: "card declined"}, {ts: t0.Add(time.Second), line: `retry "3"`}}})
	alloy := lokiPush(lokiStream{labels: `{detected_level="error", service_name="payments", source="alloy"}`,
		entries: []lokiEntry{{ts: t0.Add(2 * time.Second), line: "timeout talking to bank", meta: [][2]string{{"trace_id", "4bf92f35"}}}}})
	s.play("promtail 2.9.10 and alloy 1.5.0", []replay{
		{"GET", "/ready", nil, nil, 200, "ready"},
		{"POST", "/loki/api/v1/push", with(proto, "User-Agent", "promtail/2.9.10",
			"Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("team-a:loki-token"))), promtail, 204, ""},
		{"POST", "/loki/api/v1/push", with(proto, "User-Agent", "Alloy/v1.5.0 (linux; binary)", "Authorization", "Bearer loki-token"), alloy, 204, ""},
		{"POST", "/loki/api/v1/push", with(proto, "User-Agent", "promtail/2.9.10"), promtail, 401, "token"},
	})
	evs := s.queryNDJSON("payments", t0, t0.Add(time.Minute), 3)
	checkFields(t, "promtail entry", evs[1], map[string]any{"service": "payments", "host": "web-3", "level": "warn", "message": `retry "3"`,
		"filename": "/var/log/app/pay.log", "ts": t0.Add(time.Second).Format("2006-01-02T15:04:05.0000000Z")})
	checkFields(t, "alloy entry", evs[2], map[string]any{"level": "error", "source": "alloy", "trace_id": "4bf92f35"})
}

// TestShipperVectorLokiWireFormat replays Vector 0.43.0's loki sink
// (docs/shippers/vector-loki.yaml): its /ready health check, a push in
// protobuf (its default, snappy) whose lines are the events in JSON, and
// one in JSON (compression gzip, which Vector sends as JSON).
func TestShipperVectorLokiWireFormat(t *testing.T) {
	documentedAs(t, "docs/shippers/vector-loki.yaml", "type: loki", "endpoint: http://127.0.0.1:8080", "codec: json", "service_name: shop", "source: vector")
	s := start(t, t.TempDir(), "--flush-interval", "100ms")
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	ua := "Vector/0.43.0 (x86_64-unknown-linux-gnu 0dc2b8b 2024-11-12 15:28:22.018585734)"
	labels := `{level="info", service_name="shop", source="vector"}`
	push := lokiPush(lokiStream{labels: labels, entries: []lokiEntry{{ts: t0, line: `{"host":"vec-1","message":"order 1 paid","source_type":"file"}`}}})
	jsonPush := fmt.Appendf(nil, `{"streams":[{"stream":{"level":"info","service_name":"shop","source":"vector"},"values":[[%q,"{\"message\":\"order 2 paid\"}"]]}]}`,
		fmt.Sprint(t0.Add(time.Second).UnixNano()))
	s.play("vector 0.43.0 loki", []replay{
		{"GET", "/ready", map[string]string{"User-Agent": ua}, nil, 200, "ready"},
		{"POST", "/loki/api/v1/push", map[string]string{"User-Agent": ua, "Content-Type": "application/x-protobuf"}, push, 204, ""},
		{"POST", "/loki/api/v1/push", map[string]string{"User-Agent": ua, "Content-Type": "application/json", "Content-Encoding": "gzip"}, gzipBody(jsonPush), 204, ""},
	})
	evs := s.queryNDJSON("shop", t0, t0.Add(time.Minute), 2)
	checkFields(t, "vector protobuf entry", evs[0], map[string]any{"service": "shop", "level": "info", "source": "vector",
		"message": `{"host":"vec-1","message":"order 1 paid","source_type":"file"}`})
	checkFields(t, "vector json entry", evs[1], map[string]any{"message": `{"message":"order 2 paid"}`})
}
