package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ingest/internal/ingestexec"
	"ingest/logline"
	"ingest/query"
)

// TestTailCommand follows a running server with `ingest tail` and sees the
// events posted afterwards that match its service and level, and only those.
func TestTailCommand(t *testing.T) {
	s := start(t, t.TempDir())
	followAndPost(t, s, "", "--server", s.url)
}

// TestTailCommandFindsServer: without --server and --token, ingest tail
// follows the server running on --data-dir, with the URL and local token
// of its run file, even when the server wants a token from --tokens.
func TestTailCommandFindsServer(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("writer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, dir, "--tokens", tokens)
	followAndPost(t, s, "writer", "--data-dir", dir)
}

// followAndPost runs ingest tail with args, posts events (with token, if
// any) until one comes through, and checks it is the one that matches.
func followAndPost(t *testing.T, s *server, token string, args ...string) {
	t.Helper()
	cmd := ingestexec.Command(binary, append([]string{"tail", "--service", "api", "--level", "error"}, args...)...)
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
		req, _ := http.NewRequest("POST", s.url+"/v1/logs", strings.NewReader(
			`{"service":"web","level":"error","msg":"other service"}`+"\n"+
				`{"service":"api","level":"info","msg":"too low"}`+"\n"+
				`{"service":"api","level":"error","msg":"payment failed","order":42}`))
		req.Header.Set("Content-Type", "application/x-ndjson")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 202 {
			t.Fatalf("POST = %s", resp.Status)
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

// TestFollowTailControlLines: ingest tail tells control lines by their
// reserved key only: events with fields named dropped or error go to the
// output like any other, the note of dropped events to the error output.
func TestFollowTailControlLines(t *testing.T) {
	var stream []byte
	for i, attrs := range []string{`{"dropped":5}`, `{"error":"connection refused","@ingest":"dropped"}`, `{}`} {
		e := logline.Event{Time: int64(i), Service: []byte("api"), Message: []byte("event " + strconv.Itoa(i)), Attrs: []byte(attrs)}
		stream = query.AppendNDJSON(stream, &e)
		if i == 1 {
			stream = query.AppendDroppedLine(stream, 7)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write(append([]byte("\n"), stream...))
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	if err := followTail(context.Background(), http.DefaultClient, srv.URL, "", &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 3 || !strings.Contains(out.String(), `"dropped":5`) || strings.Contains(out.String(), `"dropped":7`) {
		t.Fatalf("%d lines out, want the 3 events:\n%s", n, out.String())
	}
	if !strings.Contains(errOut.String(), `"dropped":7`) || strings.Contains(errOut.String(), `"message":"event`) {
		t.Fatalf("error output %q, want the dropped note only", errOut.String())
	}
}
