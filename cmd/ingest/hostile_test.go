package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ingest/internal/ingestexec"
)

// getAs is GET path on s with a bearer token: status and body; a status
// of 0 when the server does not answer at all.
func (s *server) getAs(path, token string) (int, string) {
	req, _ := http.NewRequest("GET", s.url+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostileReadsKeepTheServer: reads that used to end the process (a
// histogram over centuries overflowed a time.Duration and make panicked,
// in the handler, which fasthttp does not recover) are 400s naming the
// limit or plain answers, and the server goes on; newest first over 235
// empty years costs a few hundred listings, not 2 million.
func TestHostileReadsKeepTheServer(t *testing.T) {
	s := start(t, t.TempDir())
	if code, b := s.post("/v1/logs", "application/x-ndjson", "", []byte(`{"ts":"2026-11-21T16:00:00Z","service":"x","msg":"one"}`)); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	s.waitDrained()
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/v1/logs?service=x&from=1700-01-01T00:00:00Z&to=now&histogram=1h", 400, "at most 100000"},
		// What the page asks for the link /?service=*&from=1700-01-01T00:00:00Z&to=now.
		{"/v1/logs?service=*&from=1700-01-01T00:00:00Z&to=now&histogram=168h", 200, `"total":1`},
		{"/v1/logs?service=*&from=1700-01-01T00:00:00Z&to=now&limit=100000", 200, `"message":"one"`},
		{"/v1/logs?service=x&from=0001-01-02&to=9999-12-31&histogram=744h", 200, `"total":1`},
		{"/v1/logins/%2541?limit=99999999999999999999", 400, "bad limit"},
	} {
		if code, body := s.getAs(c.path, ""); code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s = %d %.300s, want %d with %q", c.path, code, body, c.code, c.want)
		}
	}
	pid := s.Cmd.Process.Pid
	cpu0, _ := ingestexec.CPUSeconds(pid)
	code, body := s.getAs("/v1/logs?service=x&from=2026-11-21T16:00:00Z&to=2261-12-31&order=desc&stats=1", "")
	cpu1, _ := ingestexec.CPUSeconds(pid)
	m := regexp.MustCompile(`"listings":(\d+)`).FindStringSubmatch(body)
	if code != 200 || len(m) != 2 || !strings.Contains(body, `"message":"one"`) {
		t.Fatalf("newest first to 2261: %d %s", code, body)
	}
	if n, _ := strconv.Atoi(m[1]); n > 1000 {
		t.Fatalf("newest first to 2261 made %d listings: %s", n, body)
	}
	t.Logf("newest first to 2261: %s listings, %.2f CPU-s (machine shared)", m[1], cpu1-cpu0)
	select {
	case <-s.Exited():
		t.Fatalf("the server exited:\n%s", s.Stderr())
	default:
	}
	if code, _ := s.getAs("/healthz", ""); code != 200 {
		t.Fatalf("healthz after the hostile reads: %d", code)
	}
}

// TestDuplicateTokenRefusedAtStart: a tokens file listing a token twice is
// refused at start, naming the two lines and not the token. It used to
// load, and the second entry's index ORed with the first's picked a third
// entry (the unscoped local token) or one past the end (a panic per
// request).
func TestDuplicateTokenRefusedAtStart(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("a-tok\ndup-tok checkout\ndup-tok payments-\n"), 0o600)
	out, err := runCLI(t, nil, "serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--tokens", tokens)
	if err == nil || !strings.Contains(out, "line 3 lists the same token as line 2") || strings.Contains(out, "dup-tok") {
		t.Fatalf("serve with a token listed twice: %v\n%s", err, out)
	}
}

// TestTokensReloadKeepsPreviousOnBadFile: on SIGHUP a tokens file that
// does not load (a token listed twice) leaves the tokens in use; a good
// one replaces them.
func TestTokensReloadKeepsPreviousOnBadFile(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("old-tok\n"), 0o600)
	s := start(t, t.TempDir(), "--tokens", tokens)
	reload := func(file, logged string) {
		t.Helper()
		os.WriteFile(tokens, []byte(file), 0o600)
		before := strings.Count(s.Stderr(), logged)
		if err := s.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); strings.Count(s.Stderr(), logged) == before; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q logged after SIGHUP:\n%s", logged, s.Stderr())
			}
		}
	}
	reload("new-tok\nnew-tok scoped-\n", "previous tokens stay")
	if old, _ := s.getAs("/v1/services", "old-tok"); old != 200 {
		t.Fatalf("after a bad file: the previous token gets %d", old)
	}
	if code, _ := s.getAs("/v1/services", "new-tok"); code != 401 || strings.Contains(s.Stderr(), "new-tok") {
		t.Fatalf("after a bad file: the new token gets %d, or the log shows it:\n%s", code, s.Stderr())
	}
	reload("new-tok\n", "reloaded")
	if old, _ := s.getAs("/v1/services", "old-tok"); old != 401 {
		t.Fatalf("after a good file: the previous token gets %d", old)
	}
	if code, _ := s.getAs("/v1/services", "new-tok"); code != 200 {
		t.Fatalf("after a good file: the new token gets %d", code)
	}
}

// TestLoginsUserDecodedOnce: `ingest logins %41` beside a server reads the
// user "%41", whom the command sends as /v1/logins/%2541; the server used
// to decode the path twice and answer with user "A"'s attempts.
func TestLoginsUserDecodedOnce(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	now := time.Now().UTC().Format(time.RFC3339)
	if code, b := s.post("/v1/logins", "application/x-ndjson", "", []byte(
		`{"user":"A","ts":"`+now+`","id":"plain-a","ip":"192.0.2.1"}`+"\n"+`{"user":"%41","ts":"`+now+`","id":"percent-41","ip":"192.0.2.2"}`)); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	s.waitDrained()
	for _, c := range []struct{ user, want, not string }{{"%41", "percent-41", "plain-a"}, {"A", "plain-a", "percent-41"}} {
		var out string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var err error
			if out, err = runCLI(t, nil, "logins", c.user, "--data-dir", dir, "--format", "ndjson"); err != nil {
				t.Fatalf("ingest logins %s: %v\n%s", c.user, err, out)
			}
			if strings.Contains(out, c.want) || time.Now().After(deadline) {
				break
			}
		}
		if !strings.Contains(out, c.want) || strings.Contains(out, c.not) {
			t.Fatalf("ingest logins %s:\n%s\nwant %s and not %s", c.user, out, c.want, c.not)
		}
	}
}
