package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"ingest/internal/ingestexec"
	"ingest/loadtest"
)

// get GETs path and returns the status and body.
func (s *server) get(path string) (int, string) {
	s.t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(s.url + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// waitStatus polls GET path until it answers want, for at most d.
func (s *server) waitStatus(path string, want int, d time.Duration) string {
	s.t.Helper()
	var code int
	var body string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, body = s.get(path); code == want {
			return body
		}
	}
	s.t.Fatalf("GET %s = %d %q for %v, want %d", path, code, body, d, want)
	return ""
}

// countIDs counts the "id" values of an NDJSON answer.
func countIDs(body string) map[string]int {
	ids := map[string]int{}
	for _, m := range regexp.MustCompile(`"id":"([^"]+)"`).FindAllStringSubmatch(body, -1) {
		ids[m[1]]++
	}
	return ids
}

// TestSIGTERMWithRequestInFlight: a request whose body is still arriving
// when SIGTERM comes is finished and acknowledged, new requests get 503,
// /readyz says shutting down, and the process exits 0 with the batch stored.
func TestSIGTERMWithRequestInFlight(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir, "--flush-interval", "50ms")
	const n = 2000 // about 300 KB: fasthttp hands the handler a body stream past its first 8 KiB
	body := events("inflight", "h", "f", n)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	half := len(body) / 2
	fmt.Fprintf(conn, "POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := conn.Write(body[:half]); err != nil {
		t.Fatal(err)
	}
	// The handler runs once the first part of the body is in; give it time
	// to start reading, then ask the process to stop.
	time.Sleep(300 * time.Millisecond)
	if err := s.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if got := s.waitStatus("/readyz", 503, 10*time.Second); !strings.Contains(got, "shutting down") {
		t.Fatalf("/readyz while draining = %q, want it to say shutting down", got)
	}
	code, msg := s.post("/v1/logs", "application/x-ndjson", "", events("inflight", "h", "late", 1))
	if code != 503 || !strings.Contains(msg, "shutting down") {
		t.Fatalf("a new POST while draining = %d %s, want 503", code, msg)
	}
	if _, err := conn.Write(body[half:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the request in flight got no answer: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || !strings.Contains(string(answer), fmt.Sprintf(`"accepted":%d`, n)) {
		t.Fatalf("the request in flight = %d %s, want 202 with every event", resp.StatusCode, answer)
	}
	select {
	case <-s.Exited():
	case <-time.After(60 * time.Second):
		t.Fatal("ingest did not exit 60s after SIGINT")
	}
	if code := s.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	out, err := run("query", "--data-dir", dir, "--service", "inflight", "--from", "2026-11-21T16:00:00Z", "--to", "2026-11-21T17:00:00Z", "--format", "ndjson")
	if err != nil {
		t.Fatalf("ingest query: %v\n%s", err, out)
	}
	ids := countIDs(string(out))
	for i := range n {
		if ids[fmt.Sprintf("f-%d", i)] != 1 {
			t.Fatalf("event f-%d stored %d times after the shutdown, want once", i, ids[fmt.Sprintf("f-%d", i)])
		}
	}
	if len(ids) != n {
		t.Fatalf("%d events stored, want the %d of the request in flight", len(ids), n)
	}
}

// TestStorageDownReadyzAndShutdownTimeout: with Azure storage unreachable,
// /readyz answers 503 naming it while writes are still acknowledged from the
// WAL; SIGTERM then gives up flushing after --shutdown-timeout (exit code
// 1), and the next start replays the WAL so that every acknowledged event
// is stored exactly once.
func TestStorageDownReadyzAndShutdownTimeout(t *testing.T) {
	az, pause := pausedAzurite(t)
	dir := t.TempDir()
	args := []string{"--storage", az.ConnString(), "--container", "down", "--flush-interval", "50ms",
		"--storage-try-timeout", "1s", "--shutdown-timeout", "2s"}
	s := start(t, dir, args...)
	if code, body := s.get("/readyz"); code != 200 {
		t.Fatalf("/readyz with storage up = %d %s", code, body)
	}
	if code, body := s.post("/v1/logs", "application/x-ndjson", "", events("down", "h", "before", 50)); code != 202 {
		t.Fatalf("POST = %d %s", code, body)
	}
	s.waitDrained()

	resume := pause()
	if got := s.waitStatus("/readyz", 503, 30*time.Second); !strings.Contains(got, "storage unreachable") {
		t.Fatalf("/readyz with storage paused = %q, want it to name storage", got)
	}
	if code, body := s.post("/v1/logs", "application/x-ndjson", "", events("down", "h", "during", 50)); code != 202 {
		t.Fatalf("POST with storage down = %d %s, want 202 (the WAL holds it)", code, body)
	}
	code, err := s.Stop(60 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 || !strings.Contains(s.Stderr(), "shutdown incomplete") {
		t.Fatalf("exit code %d after --shutdown-timeout with storage down, want 1 and a log saying the shutdown was incomplete:\n%s", code, s.Stderr())
	}

	resume()
	s2 := start(t, dir, args...)
	s2.waitDrained()
	_, got := s2.get("/v1/logs?service=down&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z&limit=0")
	ids := countIDs(got)
	for _, p := range []string{"before", "during"} {
		for i := range 50 {
			if n := ids[fmt.Sprintf("%s-%d", p, i)]; n != 1 {
				t.Errorf("event %s-%d stored %d times after the replay, want once", p, i, n)
			}
		}
	}
	if len(ids) != 100 {
		t.Fatalf("%d distinct events stored, want 100", len(ids))
	}
	if code := s2.stop(); code != 0 {
		t.Fatalf("exit code %d after a clean stop", code)
	}
}

// metricFamilies lists the metric names the Metrics section of
// docs/operations.md promises; a name ending in * is a prefix.
func metricFamilies(t *testing.T) []string {
	t.Helper()
	_, section, ok := strings.Cut(readRepoFile(t, "docs/operations.md"), "\n## Metrics\n")
	if !ok {
		t.Fatal("docs/operations.md has no Metrics section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var names []string
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile("`(ingest_[a-z_]+\\*?)").FindAllStringSubmatch(section, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	if len(names) < 10 {
		t.Fatalf("found only %d metric names in the Metrics section of docs/operations.md: %v", len(names), names)
	}
	return names
}

// TestMetricsFamilies scrapes /metrics of the real binary after traffic of
// every kind and checks that each metric family docs/operations.md lists
// exists.
func TestMetricsFamilies(t *testing.T) {
	names := metricFamilies(t)
	s := start(t, t.TempDir(), "--flush-interval", "50ms")
	if code, body := s.post("/v1/logs", "application/x-ndjson", "", append(events("metrics", "h", "m", 20), "not json\n"...)); code != 202 {
		t.Fatalf("POST logs = %d %s", code, body)
	}
	login := fmt.Sprintf(`{"user":"mia","success":false,"ts":%q}`+"\n", time.Now().UTC().Format(time.RFC3339Nano))
	if code, body := s.post("/v1/logins", "application/x-ndjson", "", []byte(login)); code != 202 {
		t.Fatalf("POST logins = %d %s", code, body)
	}
	s.waitDrained()
	s.getLines("/v1/logs?service=metrics&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z&level=fatal", 0)
	s.getLines("/v1/logs?service=metrics&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z", 20)
	code, text := s.get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	var families []string
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(text, -1) {
		families = append(families, m[1])
	}
	for _, name := range append(names, "go_goroutines", "process_resident_memory_bytes") {
		found := false
		for _, f := range families {
			if f == name || strings.HasSuffix(name, "*") && strings.HasPrefix(f, strings.TrimSuffix(name, "*")) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("metric family %s (listed in docs/operations.md) is not exposed by /metrics", name)
		}
	}
	for series, min := range map[string]float64{
		"ingest_events_accepted_total": 21, "ingest_events_rejected_total": 1, "ingest_flushes_total": 1, "ingest_query_blobs_skipped_total": 1,
	} {
		if v, err := ingestexec.Metric([]byte(text), series); err != nil || v < min {
			t.Errorf("%s = %v, %v; want at least %v after the traffic", series, v, err, min)
		}
	}
}

// TestRaceBinaryUnderMixedLoad runs a -race build of the binary under a
// short load of logs and login attempts with --verify: no data race is
// reported, and every acknowledged event is read back exactly once.
func TestRaceBinaryUnderMixedLoad(t *testing.T) {
	bin, err := ingestexec.Build(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := startBinary(t, bin, 0, dir, "--flush-interval", "100ms", "--flush-bytes", "256KiB", "--blob-max-bytes", "1MiB",
		"--wal-segment-bytes", "1MiB")
	cfg := loadtest.DefaultConfig()
	cfg.Target = s.url
	cfg.Quiet = true
	cfg.Concurrency = 4
	cfg.Batch = 200
	cfg.Events = 20000
	cfg.Rate = 10000
	cfg.LoginsRatio = 0.3
	cfg.Users = 200
	cfg.Encoding = "gzip"
	cfg.Verify = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := loadtest.Run(ctx, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verify == nil {
		t.Fatalf("no verification: %s", rep.VerifyErr)
	}
	v := rep.Verify
	t.Logf("race build: %d requests, accepted %d, found %d, lost %d, duplicated %d; p99 %.1f ms", rep.Requests, v.Accepted, v.Found, v.Lost, v.Duplicated, rep.Latency.P99)
	if v.Accepted == 0 || v.Logins.Accepted == 0 || v.Lost != 0 || v.Duplicated != 0 || rep.VerifyErr != "" {
		t.Errorf("verify: accepted %d (logins %d), lost %d, duplicated %d, error %q", v.Accepted, v.Logins.Accepted, v.Lost, v.Duplicated, rep.VerifyErr)
	}
	code := s.stop()
	if strings.Contains(s.Stderr(), "WARNING: DATA RACE") {
		t.Fatalf("the race detector reported a data race:\n%s", s.Stderr())
	}
	if code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}
