package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"ingest/internal/ingestexec"
)

// TestReadRoutes checks the read side against the real binary: the service
// list, newest first over HTTP and on the command line, and the histogram.
func TestReadRoutes(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	var body []byte
	for i := range 30 { // api: one event every 10 s from 16:00:00, levels cycle info, warn, error
		body = fmt.Appendf(body, `{"ts":"2026-11-21T16:%02d:%02dZ","service":"api","level":%q,"id":"a%d","msg":"event %d"}`+"\n",
			i/6, i%6*10, []string{"info", "warn", "error"}[i%3], i, i)
	}
	body = fmt.Appendf(body, `{"ts":"2026-11-21T17:30:00Z","service":"web","id":"w0","msg":"other"}`+"\n")
	// Names with '_', as sent or as a replaced byte: stored as pay_api and web_v2.
	body = fmt.Appendf(body, `{"ts":"2026-11-21T17:40:00Z","service":"pay_api","id":"p0","msg":"underscored"}`+"\n")
	body = fmt.Appendf(body, `{"ts":"2026-11-21T17:45:00Z","service":"web/v2","id":"v0","msg":"replaced"}`+"\n")
	for i := range 4000 { // big: 4,000 lines of about 200 bytes in one blob, one every 0.5 s from 16:00
		body = fmt.Appendf(body, `{"ts":"2026-11-21T16:%02d:%02d.%dZ","service":"big","id":"b%d","msg":"request %d served in %d ms by the upstream pool %s"}`+"\n",
			i/120, i/2%60, i%2*5, i, i, i%977, strings.Repeat("x", 80))
	}
	if code, b := s.post("/v1/logs", "application/x-ndjson", "", body); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	s.waitDrained()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := get("/v1/services"); code != 200 || strings.TrimSpace(b) != `["api","big","pay_api","web","web_v2"]` {
		t.Fatalf("GET /v1/services = %d %s", code, b)
	}
	const rng = "from=2026-11-21T16:00:00Z&to=2026-11-21T18:00:00Z"
	if code, b := get("/v1/logs?service=*&" + rng + "&order=desc&limit=3"); code != 200 || idsOf(t, b) != "v0 p0 w0" {
		t.Fatalf("newest 3 of every service = %d %q", code, b)
	}
	code, b := get("/v1/logs?service=api,web&" + rng + "&order=desc&limit=3")
	if code != 200 || idsOf(t, b) != "w0 a29 a28" {
		t.Fatalf("newest 3 = %d %q", code, b)
	}
	code, b = get("/v1/logs?service=api&" + rng + "&level=error&histogram=1m")
	var h struct {
		Interval int `json:"interval_seconds"`
		Buckets  []struct {
			TS    string `json:"ts"`
			Total int    `json:"total"`
			Error int    `json:"error"`
			Info  int    `json:"info"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal([]byte(b), &h); err != nil || code != 200 {
		t.Fatalf("histogram = %d %q (%v)", code, b, err)
	}
	// 30 events over 16:00-16:04, every third an error: 2 per minute.
	if h.Interval != 60 || len(h.Buckets) != 5 || h.Buckets[0].TS != "2026-11-21T16:00:00.0000000Z" || h.Buckets[0].Total != 2 || h.Buckets[0].Error != 2 || h.Buckets[0].Info != 0 {
		t.Fatalf("histogram %+v", h)
	}
	for _, bad := range []string{"&order=sideways", "&histogram=soon", "&histogram=1ms"} {
		if code, b := get("/v1/logs?service=api&" + rng + bad); code != 400 {
			t.Errorf("GET with %s = %d %s, want 400", bad, code, b)
		}
	}

	out, err := ingestexec.Command(binary, "query", "--data-dir", dir, "--service", "api", "--from", "2026-11-21T16:00:00Z",
		"--to", "2026-11-21T17:00:00Z", "--reverse", "--limit", "2", "--format", "ndjson").Output()
	if err != nil || idsOf(t, string(out)) != "a29 a28" {
		t.Fatalf("ingest query --reverse --limit 2 = %q (%v)", out, err)
	}
	// The newest of a larger blob: read backwards from its end, a small
	// part of the blob.
	cmd := ingestexec.Command(binary, "query", "--data-dir", dir, "--service", "big", "--from", "2026-11-21T16:00:00Z",
		"--to", "2026-11-21T17:00:00Z", "--reverse", "--limit", "3", "--format", "ndjson", "--stats", "--query-reorder-bytes", "16KiB")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil || idsOf(t, string(out)) != "b3999 b3998 b3997" {
		t.Fatalf("ingest query --reverse --limit 3 = %q (%v) %s", out, err, stderr.String())
	}
	var read int64
	if i := strings.Index(stderr.String(), "bytes_read="); i < 0 {
		t.Fatalf("no bytes_read in --stats: %q", stderr.String())
	} else if _, err := fmt.Sscanf(stderr.String()[i:], "bytes_read=%d", &read); err != nil {
		t.Fatal(err)
	}
	if read == 0 || read > 200<<10 {
		t.Fatalf("newest 3 of a %d KiB blob read %d bytes: want one 64 KiB ranged read and a second at most (%s)", 4000*200>>10, read, stderr.String())
	}
}

// idsOf lists the id fields of NDJSON lines, space separated.
func idsOf(t *testing.T, ndjson string) string {
	t.Helper()
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(ndjson), "\n") {
		var m struct{ ID string }
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		ids = append(ids, m.ID)
	}
	return strings.Join(ids, " ")
}
