package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"ingest/internal/ingestexec"
)

// TestTailCommand follows a running server with `ingest tail` and sees the
// events posted afterwards that match its service and level, and only those.
func TestTailCommand(t *testing.T) {
	s := start(t, t.TempDir())
	cmd := ingestexec.Command(binary, "tail", "--service", "api", "--level", "error", "--server", s.url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The tail is registered once the command is connected: post until an
	// event comes through (events posted before that are not in a tail).
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if code, body := s.post("/v1/logs", "application/x-ndjson", "",
			[]byte(`{"service":"web","level":"error","msg":"other service"}`+"\n"+
				`{"service":"api","level":"info","msg":"too low"}`+"\n"+
				`{"service":"api","level":"error","msg":"payment failed","order":42}`)); code != 202 {
			t.Fatalf("POST = %d %s", code, body)
		}
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("ingest tail ended")
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("tail printed %q: %v", l, err)
			}
			if m["message"] != "payment failed" || m["service"] != "api" || m["level"] != "error" || m["order"] != float64(42) {
				t.Fatalf("tail printed %v, want only the api error", m)
			}
			if !strings.HasPrefix(l, `{"ts":"`) {
				t.Fatalf("tail line %q is not the query's NDJSON", l)
			}
			return
		case <-tick.C:
		case <-deadline:
			t.Fatal("no event came through ingest tail in 20s")
		}
	}
}
