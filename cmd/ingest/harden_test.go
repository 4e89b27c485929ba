package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLsStaysInDataDir: `ingest ls` with a prefix that climbs out of the
// blob folder is refused and lists nothing outside it.
func TestLsStaysInDataDir(t *testing.T) {
	dir := t.TempDir()
	root, err := filepath.Abs(filepath.Join(dir, "blobs", "logs"))
	if err != nil {
		t.Fatal(err)
	}
	// Exactly as many "../" as the root is deep: the names of /etc, as the
	// store would report them, start with the prefix.
	prefix := strings.Repeat("../", strings.Count(root, "/")) + "etc/pass"
	out, err := run("ls", "--data-dir", dir, prefix)
	if err == nil || strings.Contains(string(out), "passwd") || !strings.Contains(string(out), "cannot list blobs under") {
		t.Fatalf("ingest ls %s = %v:\n%s\nwant a refusal, nothing listed", prefix, err, out)
	}
}

// TestDataFilesArePrivate: after events and login attempts are stored,
// every file under a new --data-dir is readable by its user only and
// every folder is closed to others; a data directory left by an older
// version (0755 folders, 0644 files) is closed at start.
func TestDataFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := start(t, dir)
	if code, b := s.post("/v1/logs", "application/x-ndjson", "", events("api", "h1", "p", 50)); code != 202 {
		t.Fatalf("POST logs = %d %s", code, b)
	}
	if code, b := s.post("/v1/logins", "application/x-ndjson", "", []byte(`{"user":"alice","ip":"203.0.113.9","success":false}`)); code != 202 {
		t.Fatalf("POST logins = %d %s", code, b)
	}
	s.waitDrained()
	checkPrivate := func(when string) (files int) {
		t.Helper()
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s: %s is %v, want nothing for group and others", when, p, info.Mode().Perm())
			}
			if !d.IsDir() {
				files++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	// WAL segments, blob and sidecar, tables.db, server.json at least.
	if n := checkPrivate("while serving"); n < 5 {
		t.Fatalf("found %d files under %s, want the WAL, blobs, sidecars, tables and run file", n, dir)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	// As an older version left it.
	for _, d := range []string{"wal", "blobs", "blobs/logs"} {
		if err := os.Chmod(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s = start(t, dir)
	for _, d := range []string{"wal", "blobs"} {
		if st, err := os.Stat(filepath.Join(dir, d)); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s after a restart: %v %v, want 0700", d, st.Mode().Perm(), err)
		}
	}
	if !strings.Contains(s.Stderr(), "data folder made private") {
		t.Errorf("no log line says the folders were closed:\n%s", s.Stderr())
	}
}

// TestOpenServerWarnsAtStart: a server without tokens listening beyond
// loopback says once, at start, what it exposes and how to close it; one
// on loopback or with tokens says nothing.
func TestOpenServerWarnsAtStart(t *testing.T) {
	const warning = "serving without --tokens beyond loopback"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  func(port int) []string
		warns bool
	}{
		{"every interface, no tokens", func(port int) []string { return []string{"--listen", fmt.Sprintf("0.0.0.0:%d", port)} }, true},
		{"loopback", func(int) []string { return nil }, false},
		{"every interface, tokens", func(port int) []string {
			return []string{"--listen", fmt.Sprintf("0.0.0.0:%d", port), "--tokens", tokens}
		}, false},
	} {
		port := freePort(t)
		s := startBinary(t, binary, port, t.TempDir(), c.args(port)...)
		if code := s.stop(); code != 0 {
			t.Fatalf("%s: exit %d", c.name, code)
		}
		log := s.Stderr()
		if n := strings.Count(log, warning); n != map[bool]int{true: 1, false: 0}[c.warns] {
			t.Errorf("%s: the warning appears %d times:\n%s", c.name, n, log)
			continue
		}
		if c.warns && (!strings.Contains(log, "--tokens FILE") || !strings.Contains(log, "login attempts") || !strings.Contains(log, "--listen 127.0.0.1")) {
			t.Errorf("%s: the warning does not say what is exposed and how to close it:\n%s", c.name, log)
		}
	}
}

// request sends one request to the server with the given Host and headers.
func (s *server) request(method, host, path, contentType string, hdr map[string]string, body string) (int, string) {
	s.t.Helper()
	return requestTo(s.t, s.url, method, host, path, contentType, hdr, body)
}

func requestTo(t *testing.T, base, method, host, path, contentType string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSafeWithoutTokens drives a server started as the README starts it
// (no tokens) the way a hostile page would: through a name rebound to it,
// with cross-site forms and no-cors fetches, and asks for its profiles.
func TestSafeWithoutTokens(t *testing.T) {
	port := freePort(t)
	dir := t.TempDir()
	s := startBinary(t, binary, port, dir, "--listen", fmt.Sprintf("0.0.0.0:%d", port), "--pprof", "--advertise-url", "http://ingest.example:8080")
	local := fmt.Sprintf("localhost:%d", port)
	for _, c := range []struct {
		name, method, host, path, ctype string
		hdr                             map[string]string
		body                            string
		status                          int
		contains                        string
	}{
		{"rebound name", "GET", "evil.example:8080", "/v1/services", "", nil, "", 421, "--advertise-url"},
		{"rebound name posting", "POST", "evil.example", "/v1/logins", "application/json", nil, `{"user":"x"}`, 421, "--tokens"},
		{"probe by any name", "GET", "evil.example", "/healthz", "", nil, "", 200, "ok"},
		{"localhost", "GET", local, "/v1/services", "", nil, "", 200, "["},
		{"advertised name", "GET", "ingest.example:8080", "/v1/services", "", nil, "", 200, "["},
		{"cross-site retention form", "POST", local, "/v1/retention", "application/x-www-form-urlencoded", map[string]string{"Origin": "http://evil.example"}, "", 403, "another site"},
		{"cross-site login fetch", "POST", local, "/v1/logins", "text/plain", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, `{"user":"x"}`, 403, "another site"},
		{"multipart login", "POST", local, "/v1/logins", "multipart/form-data", nil, `{"user":"x"}`, 415, "application/x-ndjson or application/json"},
		{"multipart logs", "POST", local, "/v1/logs", "multipart/form-data; boundary=x", nil, multipartBody, 415, "text/plain"},
		{"text login", "POST", local, "/v1/logins", "text/plain", nil, `{"user":"x"}`, 415, "application/x-ndjson or application/json"},
		{"curl -d login", "POST", local, "/v1/logins", "application/x-www-form-urlencoded", nil, `{"user":"x"}`, 202, `"accepted":1`},
		{"profiles from this machine", "GET", "", "/debug/pprof/cmdline", "", nil, "", 200, "--pprof"},
		{"profiles through a proxy", "GET", "", "/debug/pprof/cmdline", "", map[string]string{"X-Forwarded-For": "203.0.113.9"}, "", 403, "--tokens"},
	} {
		if status, body := s.request(c.method, c.host, c.path, c.ctype, c.hdr, c.body); status != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s: %s %s (Host %q) = %d %s, want %d with %q", c.name, c.method, c.path, c.host, status, body, c.status, c.contains)
		}
	}
	// From another machine's point of view: this one's own non-loopback
	// address.
	if ip := nonLoopbackIP(); ip != "" {
		base := "http://" + net.JoinHostPort(ip, fmt.Sprint(port))
		if status, body := requestTo(t, base, "GET", "", "/debug/pprof/cmdline", "", nil, ""); status != 403 {
			t.Errorf("profiles asked from %s = %d %.200s, want 403", ip, status, body)
		}
		if status, body := requestTo(t, base, "GET", "", "/v1/services", "", nil, ""); status != 200 {
			t.Errorf("GET /v1/services by address %s = %d %s", ip, status, body)
		}
	} else {
		t.Log("no non-loopback address: the remote profile request is not tried")
	}
}

// multipartBody is a well-formed form of boundary x with one file.
const multipartBody = "--x\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.json\"\r\n" +
	"Content-Type: application/json\r\n\r\n{\"msg\":\"x\"}\r\n--x--\r\n"

// TestProfilesNeedAnUnscopedToken: with tokens, a token limited to
// services may still read logs but not the profiles (whose command line
// would show a --storage key).
func TestProfilesNeedAnUnscopedToken(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("admin-tok\nscoped-tok checkout\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, filepath.Join(dir, "data"), "--tokens", tokens, "--pprof")
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	for _, c := range []struct {
		path, token string
		status      int
	}{
		{"/debug/pprof/cmdline", "scoped-tok", 403},
		{"/debug/pprof/heap", "scoped-tok", 403},
		{"/debug/pprof/cmdline", "", 401},
		{"/debug/pprof/cmdline", "admin-tok", 200},
		{"/v1/services", "scoped-tok", 200},
	} {
		if status, body := s.request("GET", "", c.path, "", bearer(c.token), ""); status != c.status {
			t.Errorf("GET %s with %q = %d %.200s, want %d", c.path, c.token, status, body, c.status)
		}
	}
}

// nonLoopbackIP is one of this machine's addresses other than loopback,
// or "".
func nonLoopbackIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	return ""
}

// TestFormsAreRefusedUnread: multipart forms are refused before their body
// is read: a dozen 15 MiB forms at once leave the server's peak memory
// where it was (fasthttp used to parse each into memory first).
func TestFormsAreRefusedUnread(t *testing.T) {
	s := start(t, t.TempDir())
	before, _ := s.Status("VmHWM")
	var form bytes.Buffer
	form.WriteString("--x\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.json\"\r\nContent-Type: application/json\r\n\r\n")
	for form.Len() < 15<<20 {
		form.WriteString(`{"msg":"a form field that looks like an event, repeated to fill fifteen mebibytes"}` + "\n")
	}
	form.WriteString("\r\n--x--\r\n")
	const n = 12
	statuses := make(chan int, n)
	for range n {
		go func() {
			req, _ := http.NewRequest("POST", s.url+"/v1/logs", bytes.NewReader(form.Bytes()))
			req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	for range n {
		if code := <-statuses; code != 415 {
			t.Errorf("a multipart form = %d, want 415", code)
		}
	}
	after, ok := s.Status("VmHWM")
	if !ok || after-before > 64<<20 {
		t.Fatalf("peak RSS went from %d MiB to %d MiB for %d refused forms of 15 MiB, want under 64 MiB more", before>>20, after>>20, n)
	}
	t.Logf("peak RSS %d MiB -> %d MiB", before>>20, after>>20)
}
