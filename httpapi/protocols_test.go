package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"google.golang.org/protobuf/encoding/protowire"

	"ingest/buffer"
)

// TestESAPI: the calls Elasticsearch shippers make answer as they expect,
// each with X-Elastic-Product, and a bulk request stores its documents and
// answers one item per action.
func TestESAPI(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	cases := []struct {
		method, path string
		status       int
		contains     string
	}{
		{"GET", "/v1/es/", 200, `"number":"8.19.0"`},
		{"GET", "/v1/es", 200, `"tagline":"You Know, for Search"`},
		{"HEAD", "/v1/es/", 200, ""},
		{"GET", "/v1/es/_cluster/health", 200, `"status":"green"`},
		{"GET", "/v1/es/_license?human=false", 200, `"status":"active"`},
		{"GET", "/v1/es/_xpack", 200, `"ilm":{"available":true`},
		{"GET", "/v1/es/_nodes/http", 200, `"nodes":{}`},
		{"HEAD", "/v1/es/_index_template/filebeat-8.15.0", 200, ""},
		{"PUT", "/v1/es/_index_template/filebeat-8.15.0", 200, `"acknowledged":true`},
		{"PUT", "/v1/es/_ilm/policy/logstash-policy", 200, `"acknowledged":true`},
		{"GET", "/v1/es/_data_stream/logs-generic-default", 200, `"acknowledged":true`},
		{"PUT", "/v1/es/_ingest/pipeline/p1", 200, `"acknowledged":true`},
		{"GET", "/v1/es/_bulk", 405, "not allowed"},
		{"DELETE", "/v1/es/", 405, "not allowed"},
	}
	for _, c := range cases {
		code, hdr, body := f.do(t, c.method, c.path, nil, nil)
		if code != c.status || !strings.Contains(body, c.contains) || hdr.Get("X-Elastic-Product") != "Elasticsearch" {
			t.Errorf("%s %s = %d %q (X-Elastic-Product %q), want %d with %q", c.method, c.path, code, body, hdr.Get("X-Elastic-Product"), c.status, c.contains)
		}
	}

	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	body := fmt.Sprintf(`{"create":{"_index":"shop"}}
{"@timestamp":%q,"message":"paid","log":{"level":"warn"},"host":{"name":"web-1"},"user":"u1"}
{"delete":{"_index":"shop","_id":"1"}}
{"index":{}}
{"@timestamp":%q,"message":"second","service.name":"billing"}
`, t0.Format(time.RFC3339Nano), t0.Add(time.Second).Format(time.RFC3339Nano))
	code, hdr, answer := f.do(t, "POST", "/v1/es/ignored-index/_bulk?filter_path=errors,items.*.error,items.*.status", map[string]string{"Content-Type": "application/x-ndjson"}, []byte(body))
	want := `{"errors":true,"items":[{"create":{"status":201}},{"delete":{"status":400,"error":{"type":"illegal_argument_exception","reason":"line 3: cannot delete a document: ingest stores logs append-only; send create or index"}}},{"index":{"status":201}}]}`
	if code != 200 || answer != want || hdr.Get("X-Ingest-Ack") != "wal" {
		t.Fatalf("bulk = %d %s (X-Ingest-Ack %q)\nwant 200 %s", code, answer, hdr.Get("X-Ingest-Ack"), want)
	}
	q := fmt.Sprintf("&from=%s&to=%s", t0.Add(-time.Second).Format(time.RFC3339), t0.Add(time.Minute).Format(time.RFC3339))
	shop := f.waitLines(t, "/v1/logs?service=shop"+q, 1)
	billing := f.waitLines(t, "/v1/logs?service=billing"+q, 1)
	for _, want := range []string{`"service":"shop"`, `"level":"warn"`, `"host":"web-1"`, `"message":"paid"`, `"user":"u1"`} {
		if !strings.Contains(shop, want) {
			t.Errorf("stored %s, want %s in it", shop, want)
		}
	}
	if !strings.Contains(billing, `"message":"second"`) {
		t.Errorf("stored %s, want the second document", billing)
	}
}

// lokiProto is a snappy-compressed PushRequest of one stream.
func lokiProto(labels string, ts time.Time, lines ...string) []byte {
	var s []byte
	s = protowire.AppendTag(s, 1, protowire.BytesType)
	s = protowire.AppendString(s, labels)
	for i, line := range lines {
		var tsm, e []byte
		tsm = protowire.AppendTag(tsm, 1, protowire.VarintType)
		tsm = protowire.AppendVarint(tsm, uint64(ts.Unix()))
		tsm = protowire.AppendTag(tsm, 2, protowire.VarintType)
		tsm = protowire.AppendVarint(tsm, uint64(ts.Nanosecond()+i))
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendBytes(e, tsm)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendString(e, line)
		s = protowire.AppendTag(s, 2, protowire.BytesType)
		s = protowire.AppendBytes(s, e)
	}
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, s)
	return s2.EncodeSnappy(nil, b)
}

// TestLokiPush: protobuf and JSON pushes are stored and answered 204; a
// push with a bad entry stores the others and says 400; /ready answers.
func TestLokiPush(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	proto := map[string]string{"Content-Type": "application/x-protobuf"}
	if code, _, body := f.do(t, "POST", "/loki/api/v1/push", proto, lokiProto(`{job="varlogs", level="error", host="h1"}`, t0, "one", "two")); code != 204 {
		t.Fatalf("protobuf push = %d %s, want 204", code, body)
	}
	jsonBody := fmt.Sprintf(`{"streams":[{"stream":{"service_name":"varlogs","env":"prod"},"values":[["%d","three",{"trace_id":"t1"}],["soon","bad"]]}]}`, t0.Add(time.Second).UnixNano())
	code, _, body := f.do(t, "POST", "/loki/api/v1/push", map[string]string{"Content-Type": "application/json"}, []byte(jsonBody))
	if code != 400 || !strings.Contains(body, "1 of 2 entries rejected; entry 2:") {
		t.Fatalf("JSON push with a bad entry = %d %q, want 400 naming entry 2", code, body)
	}
	q := fmt.Sprintf("/v1/logs?service=varlogs&from=%s&to=%s", t0.Add(-time.Second).Format(time.RFC3339), t0.Add(time.Minute).Format(time.RFC3339))
	got := f.waitLines(t, q, 3)
	for _, want := range []string{`"message":"one"`, `"level":"error"`, `"host":"h1"`, `"message":"three"`, `"env":"prod"`, `"trace_id":"t1"`} {
		if !strings.Contains(got, want) {
			t.Errorf("stored %s, want %s in it", got, want)
		}
	}
	if code, _, body := f.do(t, "POST", "/loki/api/v1/push", map[string]string{"Content-Type": "text/plain"}, []byte("x")); code != 415 {
		t.Errorf("text push = %d %s, want 415", code, body)
	}
	if code, _, body := f.do(t, "POST", "/loki/api/v1/push", proto, []byte("not snappy")); code != 400 {
		t.Errorf("push of a body that is not snappy = %d %s, want 400", code, body)
	}
	if code, _, body := f.do(t, "GET", "/ready", nil, nil); code != 200 || body != "ready\n" {
		t.Errorf("GET /ready = %d %q", code, body)
	}
}

// TestShipperTokenSchemes: a token is taken as Bearer, as ApiKey (plain or
// base64 of id:token) and as the password of Basic auth, on the new routes
// and the old; a scoped token writes only its services through them too.
func TestShipperTokenSchemes(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("admin-tok\nscoped-tok shop\n"), 0o600)
	f := newFixture(t, Config{TokensFile: tokens}, buffer.Config{})
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	bulk := []byte(`{"create":{"_index":"shop"}}` + "\n" + `{"message":"m"}` + "\n")
	other := []byte(`{"create":{"_index":"other"}}` + "\n" + `{"message":"m"}` + "\n")
	push := lokiProto(`{job="shop"}`, time.Now(), "m")
	cases := []struct {
		name, auth, method, path string
		body                     []byte
		want                     int
	}{
		{"bearer", "Bearer admin-tok", "POST", "/v1/es/_bulk", bulk, 200},
		{"api key", "ApiKey admin-tok", "POST", "/v1/es/_bulk", bulk, 200},
		{"api key id:token", "ApiKey " + b64("ingest:admin-tok"), "GET", "/v1/es/", nil, 200},
		{"basic", "Basic " + b64("elastic:admin-tok"), "GET", "/v1/es/_license", nil, 200},
		{"basic on /v1/logs", "Basic " + b64("x:admin-tok"), "GET", "/v1/services", nil, 200},
		{"basic on loki", "Basic " + b64("fluent:scoped-tok"), "POST", "/loki/api/v1/push", push, 204},
		{"scoped bulk of its service", "ApiKey " + b64("id:scoped-tok"), "POST", "/v1/es/_bulk", bulk, 200},
		{"scoped bulk of another", "ApiKey " + b64("id:scoped-tok"), "POST", "/v1/es/_bulk", other, 403},
		{"no token", "", "GET", "/v1/es/", nil, 401},
		{"no token on loki", "", "POST", "/loki/api/v1/push", push, 401},
		{"unknown api key", "ApiKey " + b64("ingest:nope"), "POST", "/v1/es/_bulk", bulk, 401},
		{"basic without password", "Basic " + b64("admin-tok"), "GET", "/v1/es/", nil, 401},
		{"token as the user", "Basic " + b64("admin-tok:"), "GET", "/v1/es/", nil, 401},
	}
	for _, c := range cases {
		hdr := map[string]string{"Content-Type": "application/x-ndjson"}
		if strings.HasPrefix(c.path, "/loki") {
			hdr["Content-Type"] = "application/x-protobuf"
		}
		if c.auth != "" {
			hdr["Authorization"] = c.auth
		}
		code, h, body := f.do(t, c.method, c.path, hdr, c.body)
		if code != c.want {
			t.Errorf("%s: %s %s = %d %s, want %d", c.name, c.method, c.path, code, body, c.want)
		}
		if strings.HasPrefix(c.path, "/v1/es") && h.Get("X-Elastic-Product") != "Elasticsearch" {
			t.Errorf("%s: answer without X-Elastic-Product", c.name)
		}
		if code == 200 && c.method == "POST" {
			var m map[string]any
			if json.Unmarshal([]byte(body), &m) != nil || m["errors"] != false {
				t.Errorf("%s: answer %s, want errors false", c.name, body)
			}
		}
	}
}

// TestLokiPushOfTinyEntriesIsBounded: a push of a million empty entries
// (2 bytes each in protobuf, a few KiB once snappy-compressed) would
// encode to tens of MiB of lines, more than --max-inflight-bytes can ever
// give one request; it is refused with 413 naming the limit instead, and
// the server goes on.
func TestLokiPushOfTinyEntriesIsBounded(t *testing.T) {
	f := newFixture(t, Config{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxInflightBytes: 8 << 20, ReadTimeout: 10 * time.Second}, buffer.Config{})
	var s []byte
	s = protowire.AppendTag(s, 1, protowire.BytesType)
	s = protowire.AppendString(s, `{job="tiny"}`)
	for range 1 << 20 {
		s = append(s, 0x12, 0x00) // an entry with nothing in it
	}
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, s)
	body := s2.EncodeSnappy(nil, req)
	code, _, answer := f.do(t, "POST", "/loki/api/v1/push", map[string]string{"Content-Type": "application/x-protobuf"}, body)
	if code != 413 || !strings.Contains(answer, "--max-inflight-bytes") {
		t.Fatalf("push of %d bytes holding 1Mi entries = %d %s, want 413 naming --max-inflight-bytes", len(body), code, answer)
	}
	if code, _, answer := f.do(t, "POST", "/loki/api/v1/push", map[string]string{"Content-Type": "application/x-protobuf"}, lokiProto(`{job="tiny"}`, time.Now(), "fine")); code != 204 {
		t.Fatalf("a normal push after it = %d %s", code, answer)
	}
}

// TestProtocolsRejectRowsPastTheServiceCap: a bulk or push naming more
// services than --max-service-hours-per-request keeps the first ones and
// rejects the documents or entries of the others one by one (a shipper
// neither drops nor resends the batch for them).
func TestProtocolsRejectRowsPastTheServiceCap(t *testing.T) {
	const services = 1_000 + 5 // group.DefaultConfig's cap, and 5 past it
	f := newFixture(t, Config{}, buffer.Config{})
	var bulk strings.Builder
	for i := range services {
		fmt.Fprintf(&bulk, "{\"create\":{\"_index\":\"es-%d\"}}\n{\"message\":\"m\"}\n", i)
	}
	code, _, answer := f.do(t, "POST", "/v1/es/_bulk?filter_path=items.*.status", map[string]string{"Content-Type": "application/x-ndjson"}, []byte(bulk.String()))
	if code != 200 || strings.Count(answer, `"status":201`) != 1_000 || strings.Count(answer, `"status":400`) != 5 {
		t.Fatalf("bulk of %d indices = %d with %d stored and %d refused items, want 1000 and 5", services, code, strings.Count(answer, `"status":201`), strings.Count(answer, `"status":400`))
	}
	var push strings.Builder
	push.WriteString(`{"streams":[`)
	for i := range services {
		if i > 0 {
			push.WriteByte(',')
		}
		fmt.Fprintf(&push, `{"stream":{"service_name":"lk-%d"},"values":[["%d","m"]]}`, i, time.Now().UnixNano())
	}
	push.WriteString(`]}`)
	code, _, answer = f.do(t, "POST", "/loki/api/v1/push", map[string]string{"Content-Type": "application/json"}, []byte(push.String()))
	if code != 400 || !strings.Contains(answer, fmt.Sprintf("5 of %d entries rejected", services)) || !strings.Contains(answer, "--max-service-hours-per-request") {
		t.Fatalf("push of %d services = %d %q, want 400: 5 entries rejected naming --max-service-hours-per-request", services, code, answer)
	}
}
