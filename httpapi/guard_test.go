package httpapi

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ingest/buffer"
)

func TestHostGuard(t *testing.T) {
	hostname, _ := os.Hostname()
	f := func(listen, advertise, host string, want bool) {
		t.Helper()
		g := newHostGuard(&Config{Listen: listen, AdvertiseURL: advertise})
		if got := g.allows([]byte(host)); got != want {
			t.Errorf("--listen %q --advertise-url %q: Host %q allowed %v, want %v", listen, advertise, host, got, want)
		}
	}
	for _, listen := range []string{":8080", "0.0.0.0:8080", "[::]:8080", "127.0.0.1:8080"} {
		f(listen, "", "", true) // no browser sends no Host
		f(listen, "", "localhost:8080", true)
		f(listen, "", "LocalHost.:8080", true)
		f(listen, "", "localhost", true)
		f(listen, "", "127.0.0.1:8080", true)
		f(listen, "", "10.1.2.3:9090", true) // a pod IP, a NAT'd address: never rebound
		f(listen, "", "[::1]:8080", true)
		f(listen, "", "[fe80::1%25eth0]:8080", true) // a zone as a browser escapes it
		f(listen, "", "[fe80::1%eth0]:8080", true)
		f(listen, "", "::1", true)
		f(listen, "", hostname+":8080", true)
		f(listen, "", strings.ToUpper(hostname), true)
		f(listen, "", "evil.example:8080", false)
		f(listen, "", "evil.example", false)
		f(listen, "", "localhost.evil.example", false)
		f(listen, "", "127.0.0.1.nip.io:8080", false)
		f(listen, "", "ingest:8080", false) // a Service name: --advertise-url or tokens
		f(listen, "", "[evil.example]:8080", false)
		f(listen, "", "cafe", false) // hex letters only: still a name
		f(listen, "", "2130706433", false)
		f(listen, "", "127.0.0.1.", true)
		f(listen, "", "127.0.0.01", false)
		f(listen, "", "256.0.0.1", false)
		f(listen, "", "1.2.3", false)
		f(listen, "", "1.2.3.4.5", false)
		f(listen, "", "1.2.3.", false)
		f(listen, "", "[::]0", false) // malformed: what no browser sends
		f(listen, "", "0.0.0.0:]", false)
		f(listen, "", "localhost:80x", false)
	}
	f("logs.internal:8080", "", "logs.internal:8080", true)
	f("logs.internal:8080", "", "Logs.Internal", true)
	f("logs.internal:8080", "", "other.internal", false)
	f(":8080", "https://ingest-0.ingest-pods:8443/", "ingest-0.ingest-pods:8443", true)
	f(":8080", "https://ingest-0.ingest-pods:8443/", "ingest-0.ingest-pods", true)
	f(":8080", "http://[2001:db8::1]:8080", "[2001:db8::1]:8080", true)
	f(":8080", "http://logs.example.com", "ingest-1.ingest-pods", false)
}

// TestHostGuardAllocs: the check of an ordinary Host costs no allocation
// (it runs for every request without tokens).
func TestHostGuardAllocs(t *testing.T) {
	g := newHostGuard(&Config{Listen: ":8080", AdvertiseURL: "http://ingest:8080"})
	for _, host := range []string{"localhost:8080", "ingest:8080", "Ingest:8080", "127.0.0.1:8080", "evil.example"} {
		b := []byte(host)
		if n := testing.AllocsPerRun(100, func() { g.allows(b) }); n != 0 {
			t.Errorf("allows(%q): %v allocations", host, n)
		}
	}
}

func TestAdvertiseURLValidate(t *testing.T) {
	for _, u := range []string{"http://ingest:8080", "https://ingest-0.ingest-pods.ns.svc.cluster.local/", "http://[2001:db8::1]:8080", "http://10.0.0.5"} {
		c := DefaultConfig()
		c.AdvertiseURL = u
		if err := c.Validate(); err != nil {
			t.Errorf("--advertise-url %q: %v", u, err)
		}
	}
	for _, u := range []string{"ingest:8080", "ftp://ingest", "http://", "http://:8080", "http://ingest/v1", "http://u:p@ingest", "http://ingest?x=1", "http://ingest#x", "ingest", "http://in gest"} {
		c := DefaultConfig()
		c.AdvertiseURL = u
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--advertise-url") {
			t.Errorf("--advertise-url %q: %v, want a refusal naming the flag", u, err)
		}
	}
}

// guardRequest sends method path with the given Host and headers.
func guardRequest(t *testing.T, f *fixture, method, host, path string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	h := map[string]string{"Host": host}
	for k, v := range hdr {
		h[k] = v
	}
	status, _, b := f.do(t, method, path, h, []byte(body))
	return status, b
}

// TestHostAndOriginGuards: without tokens, a Host naming another site is
// refused (the probes excepted); a write a browser sends from another
// origin is refused with or without tokens; same-origin and non-browser
// writes pass.
func TestHostAndOriginGuards(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := newFixture(t, Config{}, buffer.Config{})
	closed := newFixture(t, Config{TokensFile: tokens, MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxInflightBytes: 64 << 20}, buffer.Config{})
	ndjson := map[string]string{"Content-Type": "application/x-ndjson"}
	with := func(kv ...string) map[string]string {
		h := map[string]string{"Content-Type": "application/x-ndjson", "Authorization": "Bearer tok"}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	cases := []struct {
		name               string
		f                  *fixture
		method, host, path string
		hdr                map[string]string
		body               string
		status             int
		contains           string
	}{
		{"rebound name", open, "GET", "evil.example:8080", "/v1/services", nil, "", 421, "--advertise-url"},
		{"rebound name, page", open, "GET", "evil.example", "/", nil, "", 421, "DNS rebinding"},
		{"rebound name, post", open, "POST", "evil.example", "/v1/logs", ndjson, `{"msg":"a"}`, 421, "--tokens"},
		{"probe by any name", open, "GET", "10-1-2-3.pod:8080", "/healthz", nil, "", 200, "ok"},
		{"readiness by any name", open, "GET", "evil.example", "/readyz", nil, "", 200, "ready"},
		{"advertised name", open, "GET", "ingest:8080", "/v1/services", nil, "", 200, "["},
		{"address", open, "GET", "192.0.2.7:8080", "/v1/services", nil, "", 200, "["},
		{"tokens: any name", closed, "GET", "evil.example", "/v1/services", with(), "", 200, "["},
		{"cross-site form", open, "POST", "ingest", "/v1/retention", map[string]string{"Origin": "http://evil.example"}, "", 403, "another site"},
		{"cross-site fetch metadata", open, "POST", "ingest", "/v1/logs", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}, "x", 403, "another site"},
		{"same-site other port", open, "POST", "ingest:8080", "/v1/logs", map[string]string{"Sec-Fetch-Site": "same-site", "Content-Type": "text/plain"}, "x", 403, "another site"},
		{"sandboxed frame", open, "POST", "ingest", "/v1/logins", map[string]string{"Origin": "null"}, `{"user":"u"}`, 403, "another site"},
		{"other port, origin only", open, "POST", "ingest:8080", "/v1/retention", map[string]string{"Origin": "http://ingest:3000"}, "", 403, "another site"},
		{"cross-site with a token", closed, "POST", "ingest", "/v1/retention", with("Origin", "http://evil.example"), "", 403, "another site"},
		{"same origin", open, "POST", "ingest:8080", "/v1/retention?dry-run=1", map[string]string{"Origin": "http://INGEST:8080", "Sec-Fetch-Site": "same-origin"}, "", 200, "dry_run"},
		{"same origin, origin only", open, "POST", "ingest:8080", "/v1/retention?dry-run=1", map[string]string{"Origin": "http://ingest:8080"}, "", 200, "dry_run"},
		{"advertised origin behind a proxy", open, "POST", "127.0.0.1:8080", "/v1/retention?dry-run=1", map[string]string{"Origin": "http://ingest"}, "", 200, "dry_run"},
		{"not a browser", open, "POST", "ingest", "/v1/logs", ndjson, `{"msg":"a"}`, 202, "accepted"},
		{"cross-site read", open, "GET", "ingest", "/v1/services", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, "", 200, "["},
	}
	for _, c := range cases {
		status, body := guardRequest(t, c.f, c.method, c.host, c.path, c.hdr, c.body)
		if status != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s: %s %s (Host %s) = %d %s, want %d with %q", c.name, c.method, c.path, c.host, status, body, c.status, c.contains)
		}
	}
}

// TestRefusedBodyDoesNotBecomeARequest: a refused POST whose body is still
// on its way closes its connection; the body is never answered as a
// request of its own.
func TestRefusedBodyDoesNotBecomeARequest(t *testing.T) {
	f := newTCPFixture(t, Config{}, buffer.Config{})
	body := bytes.Repeat([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 2000)
	req, _ := http.NewRequest("POST", "http://ingest/v1/logs", bytes.NewReader(body))
	req.Host = "evil.example"
	resp, err := f.client.Do(req) // f.do hides whether the connection closes
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 421 || !resp.Close {
		t.Fatalf("POST with Host evil.example = %d (close %v) %s, want 421 and Connection: close", resp.StatusCode, resp.Close, b)
	}
}

// TestProfileAccess: with tokens, profiles need a token without a service
// list; without tokens, a client on this machine, not one behind a proxy.
func TestProfileAccess(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("admin\nscoped checkout\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := Config{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxInflightBytes: 64 << 20, Pprof: true}
	withTokens := base
	withTokens.TokensFile = tokens
	open := newTCPFixture(t, base, buffer.Config{})
	closed := newTCPFixture(t, withTokens, buffer.Config{})
	const path = "/debug/pprof/cmdline"
	for _, c := range []struct {
		name   string
		f      *fixture
		hdr    map[string]string
		status int
	}{
		{"loopback, no tokens", open, nil, 200},
		{"through a local proxy", open, map[string]string{"X-Forwarded-For": "203.0.113.9"}, 403},
		{"through a local proxy (Forwarded)", open, map[string]string{"Forwarded": "for=203.0.113.9"}, 403},
		{"no token", closed, nil, 401},
		{"scoped token", closed, map[string]string{"Authorization": "Bearer scoped"}, 403},
		{"unscoped token", closed, map[string]string{"Authorization": "Bearer admin"}, 200},
	} {
		if status, body := guardRequest(t, c.f, "GET", "127.0.0.1", path, c.hdr, ""); status != c.status {
			t.Errorf("%s: GET %s = %d %s, want %d", c.name, path, status, body, c.status)
		}
	}
	// The index answers where net/http/pprof has it, and without the slash.
	for _, p := range []string{"/debug/pprof/", "/debug/pprof"} {
		if status, body := guardRequest(t, open, "GET", "127.0.0.1", p, nil, ""); status != 200 || !strings.Contains(body, "goroutine") {
			t.Errorf("GET %s = %d %.200s, want 200 and the profiles' index", p, status, body)
		}
	}
	// Scoped tokens still read.
	if status, body := guardRequest(t, closed, "GET", "127.0.0.1", "/v1/services", map[string]string{"Authorization": "Bearer scoped"}, ""); status != 200 {
		t.Errorf("GET /v1/services with a scoped token = %d %s", status, body)
	}
}

// FuzzHostGuard: whatever the Host header, the guard never accepts a name
// that is not the server's: what it lets through is empty, an IP address
// or one of the names, as the standard library reads the header.
func FuzzHostGuard(f *testing.F) {
	for _, h := range []string{"", "localhost:8080", "evil.example", "[::1]:80", "127.0.0.1", "[fe80::1%eth0]", "ingest.", "a:b:c", "[x]y", "1.2.3.4:5:6"} {
		f.Add(h)
	}
	g := newHostGuard(&Config{Listen: ":8080", AdvertiseURL: "http://ingest:8080"})
	f.Fuzz(func(t *testing.T, h string) {
		if !g.allows([]byte(h)) || h == "" {
			return
		}
		host := h
		if hh, _, err := net.SplitHostPort(h); err == nil {
			host = hh
		}
		host = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")), ".")
		addr := host
		if i := strings.IndexByte(addr, '%'); i >= 0 {
			addr = addr[:i]
		}
		if _, err := netip.ParseAddr(addr); err == nil || g.names[host] {
			return
		}
		t.Fatalf("Host %q allowed: %q is neither an address nor one of %v", h, host, g.names)
	})
}

// BenchmarkHostGuard: the cost the guard adds to every request without
// tokens, for the Host headers clients send most.
func BenchmarkHostGuard(b *testing.B) {
	g := newHostGuard(&Config{Listen: ":8080", AdvertiseURL: "http://ingest-0.ingest-pods:8080"})
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "ingest-0.ingest-pods:8080", "[::1]:8080", "evil.example"} {
		b.Run(host, func(b *testing.B) {
			h := []byte(host)
			b.ReportAllocs()
			for b.Loop() {
				g.allows(h)
			}
		})
	}
}
