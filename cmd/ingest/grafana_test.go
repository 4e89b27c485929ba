package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"go.yaml.in/yaml/v3"

	"ingest/internal/azurite"
)

// The requests Grafana's built-in Loki data source sends, as Grafana 11.x
// builds them (pkg/tsdb/loki: the health check and the data queries, with
// Go's url.Values encoding; public/app/plugins/datasource/loki: the label
// browser's resource calls, the log volume's supplementary query, the index
// stats, and the live tail's WebSocket URL, which carries only the query),
// replayed against the real binary with events posted first, the answers
// decoded as Loki's JSON. Grafana itself cannot run here.

// TestGrafanaLokiDataSource, on the embedded backend, with the token sent
// as deploy/grafana/datasource.yaml has Grafana send it.
func TestGrafanaLokiDataSource(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("grafana-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, t.TempDir(), "--tokens", tokens, "--flush-interval", "50ms")
	grafanaReplay(t, s, provisionedAuth(t, s.url, "grafana-token"))
}

// provisionedAuth reads deploy/grafana/datasource.yaml as Grafana would,
// with INGEST_URL and INGEST_TOKEN set, checks it is a Loki data source
// Grafana's server proxies to ingest, and returns the Authorization header
// it makes Grafana send.
func provisionedAuth(t *testing.T, ingestURL, token string) string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/grafana/datasource.yaml")
	if err != nil {
		t.Fatal(err)
	}
	expanded := os.Expand(string(b), func(k string) string {
		return map[string]string{"INGEST_URL": ingestURL, "INGEST_TOKEN": token}[k]
	})
	var f struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Type, Access, URL string
			JSONData          map[string]any    `yaml:"jsonData"`
			SecureJSONData    map[string]string `yaml:"secureJsonData"`
		}
	}
	if err := yaml.Unmarshal([]byte(expanded), &f); err != nil {
		t.Fatal(err)
	}
	if f.APIVersion != 1 || len(f.Datasources) != 1 {
		t.Fatalf("provisioning file: %+v", f)
	}
	ds := f.Datasources[0]
	if ds.Type != "loki" || ds.Access != "proxy" || ds.URL != ingestURL || ds.JSONData["httpHeaderName1"] != "Authorization" || ds.JSONData["maxLines"] != 1000 {
		t.Fatalf("data source %+v", ds)
	}
	return ds.SecureJSONData["httpHeaderValue1"]
}

// TestGrafanaLokiDataSourceAzure: the same against Azurite.
func TestGrafanaLokiDataSourceAzure(t *testing.T) {
	conn := azurite.ConnString(t)
	container := fmt.Sprintf("grafana%d", time.Now().UnixNano()%1e9)
	s := start(t, t.TempDir(), "--storage", conn, "--container", container, "--flush-interval", "50ms")
	grafanaReplay(t, s, "")
}

// grafanaClient sends what the data source sends, with its Authorization
// header.
type grafanaClient struct {
	t    *testing.T
	s    *server
	auth string
}

// get GETs path with params encoded as Go's url.Values (sorted keys, as
// Grafana's backend builds them) and decodes the JSON answer into v.
func (g *grafanaClient) get(path string, params url.Values, hdr map[string]string, v any) int {
	g.t.Helper()
	req, _ := http.NewRequest("GET", g.s.url+path+"?"+params.Encode(), nil)
	if g.auth != "" {
		req.Header.Set("Authorization", g.auth)
	}
	for k, val := range hdr {
		req.Header.Set(k, val)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, v); err != nil {
			g.t.Fatalf("GET %s: %v in %s", req.URL, err, b)
		}
	}
	return resp.StatusCode
}

// lokiResult is Loki's query answer: streams, matrix or vector.
type lokiResult struct {
	Status string `json:"status"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Stream map[string]string `json:"stream"`
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

func grafanaReplay(t *testing.T, s *server, auth string) {
	g := &grafanaClient{t: t, s: s, auth: auth}
	// Events of the last minutes, as a dashboard's "Last 1 hour" shows
	// them: api at h1/h2 with levels, web, one api event without a level.
	now := time.Now().UTC().Truncate(time.Second)
	base := now.Add(-30 * time.Minute)
	var body []byte
	levels := []string{"info", "warn", "error"}
	for i := range 30 {
		body = fmt.Appendf(body, `{"ts":%q,"service":"api","host":"h%d","level":%q,"msg":"request %d served","n":%d}`+"\n",
			base.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), 1+i%2, levels[i%3], i, i)
	}
	body = fmt.Appendf(body, `{"ts":%q,"service":"web","host":"w1","level":"error","msg":"web down"}`+"\n", base.Format(time.RFC3339))
	body = fmt.Appendf(body, `{"ts":%q,"service":"api","msg":"no level"}`+"\n", base.Add(90*time.Second).Format(time.RFC3339))
	req, _ := http.NewRequest("POST", s.url+"/v1/logs", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/x-ndjson")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 202 {
		t.Fatalf("POST: %v %v", resp, err)
	}
	s.waitDrained()
	ns := func(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }
	start, end := now.Add(-time.Hour), now.Add(time.Minute)

	// The health check: an instant query of vector(1)+vector(1) from 1 s
	// to 4 s, direction unset; Grafana wants one value, 2.
	var r lokiResult
	if code := g.get("/loki/api/v1/query", url.Values{"query": {"vector(1)+vector(1)"}, "direction": {""}, "time": {"4000000000"}}, nil, &r); code != 200 ||
		r.Data.ResultType != "vector" || len(r.Data.Result) != 1 || r.Data.Result[0].Value[1] != "2" {
		t.Fatalf("health check = %d %+v", code, r)
	}
	if auth != "" {
		if code := (&grafanaClient{t: t, s: s}).get("/loki/api/v1/query", url.Values{"query": {"vector(1)+vector(1)"}, "time": {"4000000000"}}, nil, &r); code != 401 {
			t.Fatalf("health check without the token = %d, want 401", code)
		}
	}

	// The label browser: detected_labels is probed first (404: Grafana
	// falls back to the labels endpoint), then labels and values.
	rng := url.Values{"start": {ns(start)}, "end": {ns(end)}}
	var dl any
	if code := g.get("/loki/api/v1/detected_labels", rng, nil, &dl); code != 404 {
		t.Fatalf("detected_labels = %d, want 404", code)
	}
	var names struct{ Data []string }
	if code := g.get("/loki/api/v1/labels", rng, nil, &names); code != 200 || !slices.Equal(names.Data, []string{"host", "level", "service"}) {
		t.Fatalf("labels = %d %v", code, names)
	}
	for label, want := range map[string][]string{"service": {"api", "web"}, "level": {"error", "info", "warn"}, "host": {"h1", "h2", "w1"}} {
		var vals struct{ Data []string }
		if code := g.get("/loki/api/v1/label/"+label+"/values", rng, nil, &vals); code != 200 || !slices.Equal(vals.Data, want) {
			t.Errorf("values of %s = %d %v, want %v", label, code, vals.Data, want)
		}
	}
	var series struct{ Data []map[string]string }
	if code := g.get("/loki/api/v1/series", url.Values{"match[]": {`{service="web"}`}, "start": {ns(start)}, "end": {ns(end)}}, nil, &series); code != 200 ||
		len(series.Data) != 1 || series.Data[0]["host"] != "w1" || series.Data[0]["level"] != "error" {
		t.Errorf("series = %d %v", code, series.Data)
	}

	// The query's size estimate under the editor.
	var st struct{ Streams, Chunks, Bytes, Entries int }
	if code := g.get("/loki/api/v1/index/stats", url.Values{"query": {`{service="api"}`}, "start": {ns(start)}, "end": {ns(end)}}, nil, &st); code != 200 ||
		st.Streams != 1 || st.Chunks == 0 || st.Bytes == 0 || st.Entries != 31 {
		t.Errorf("index/stats = %d %+v", code, st)
	}

	// A logs panel: newest first, 1000 lines at most.
	q := url.Values{"query": {`{service="api", host=~"h1|h2"} |= "served"`}, "direction": {"backward"}, "limit": {"1000"},
		"start": {ns(start)}, "end": {ns(end)}, "step": {"2000ms"}}
	if code := g.get("/loki/api/v1/query_range", q, nil, &r); code != 200 || r.Data.ResultType != "streams" {
		t.Fatalf("logs = %d %+v", code, r)
	}
	var lines []string
	var last int64 = 1 << 62
	for _, e := range r.Data.Result {
		for _, v := range e.Values {
			ts, err := strconv.ParseInt(v[0].(string), 10, 64)
			if err != nil || ts > last || e.Stream["service"] != "api" {
				t.Fatalf("entry %v of %v: not newest first in nanoseconds", v, e.Stream)
			}
			last = ts
			lines = append(lines, v[1].(string))
		}
	}
	if len(lines) != 30 || lines[0] != "request 29 served" || lines[29] != "request 0 served" {
		t.Fatalf("logs: %d lines %v", len(lines), lines)
	}

	// The log volume above it (Grafana 11: by level and detected_level,
	// with | drop __error__, the step as milliseconds).
	q = url.Values{"query": {`sum by (level, detected_level) (count_over_time({service="api", host=~"h1|h2"} |= "served" | drop __error__[1m]))`},
		"direction": {"backward"}, "limit": {"1000"}, "start": {ns(start)}, "end": {ns(end)}, "step": {"60000ms"}}
	if code := g.get("/loki/api/v1/query_range", q, map[string]string{"X-Query-Tags": "Source=logvolhist"}, &r); code != 200 || r.Data.ResultType != "matrix" {
		t.Fatalf("volume = %d %+v", code, r)
	}
	counts := map[string]float64{}
	for _, sr := range r.Data.Result {
		for _, v := range sr.Values {
			n, _ := strconv.ParseFloat(v[1].(string), 64)
			counts[sr.Metric["level"]] += n
		}
	}
	if counts["info"] != 10 || counts["warn"] != 10 || counts["error"] != 10 || len(counts) != 3 {
		t.Fatalf("volume counts %v", counts)
	}

	// Live tailing: the WebSocket URL carries the query alone.
	grafanaTail(t, s, s, auth)
}

// grafanaTail opens the live tail on s as Grafana's LiveStreams does
// (through its proxy: no Origin) with the gobwas/ws client, posts to
// poster (s itself, or another instance of its cluster), and reads the
// event back.
func grafanaTail(t *testing.T, s, poster *server, auth string) {
	hdr := http.Header{}
	if auth != "" {
		hdr.Set("Authorization", auth)
	}
	d := ws.Dialer{Timeout: 10 * time.Second, Header: ws.HandshakeHeaderHTTP(hdr)}
	u := "ws" + strings.TrimPrefix(s.url, "http") + "/loki/api/v1/tail?" + url.Values{"query": {`{service="api"} |= "live"`}}.Encode()
	conn, br, _, err := d.Dial(context.Background(), u)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	defer conn.Close()
	var r io.Reader = conn
	if br != nil {
		r = io.MultiReader(br, conn)
	}
	got := make(chan string, 1)
	go func() {
		for {
			msgs, err := wsutil.ReadServerMessage(r, nil)
			if err != nil {
				close(got)
				return
			}
			for _, m := range msgs {
				var a struct {
					Streams []struct {
						Stream map[string]string
						Values [][2]string
					}
				}
				if m.OpCode == ws.OpText && json.Unmarshal(m.Payload, &a) == nil && len(a.Streams) > 0 {
					got <- a.Streams[0].Stream["level"] + " " + a.Streams[0].Values[0][1]
					return
				}
			}
		}
	}()
	// The subscription is in place once the handshake is answered; post
	// until the event comes through all the same.
	deadline := time.After(20 * time.Second)
	for {
		req, _ := http.NewRequest("POST", poster.url+"/v1/logs", strings.NewReader(`{"service":"web","msg":"live elsewhere"}`+"\n"+
			`{"service":"api","level":"warn","msg":"live one"}`))
		req.Header.Set("Content-Type", "application/x-ndjson")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 202 {
			t.Fatalf("POST: %v %v", resp, err)
		}
		select {
		case l, ok := <-got:
			if !ok || l != "warn live one" {
				t.Fatalf("tail gave %q (open %v)", l, ok)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("nothing came through the tail in 20s")
		}
	}
}
