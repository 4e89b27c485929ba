package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ingest/internal/ingestexec"
)

// runCLI runs the real binary with args and returns its combined output.
func runCLI(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := ingestexec.Command(binary, args...)
	cmd.Env = append(cmd.Env, env...)
	done := make(chan struct{})
	// Bounded: a command that hangs on a lock fails the test instead.
	timer := time.AfterFunc(60*time.Second, func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	close(done)
	return string(out), err
}

// TestCommandsBesideRunningServer: every command works while a server runs
// on the same --data-dir, with no extra flag, even with --tokens set (the
// table commands ask the server with the token of its run file), and again
// after the server is killed (the run file it left is ignored).
func TestCommandsBesideRunningServer(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("writer\n"), 0o600)
	s := start(t, dir, "--flush-interval", "50ms", "--tokens", tokens)
	auth := map[string]string{"Authorization": "Bearer writer"}
	postAuth := func(path string, body []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.url+path, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/x-ndjson")
		for k, v := range auth {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 202 {
			t.Fatalf("POST %s = %d %s", path, resp.StatusCode, b)
		}
	}
	postAuth("/v1/logs", events("api", "web-1", "bs", 20))
	now := time.Now().UTC()
	postAuth("/v1/logins", fmt.Appendf(nil, `{"user":"alice","success":false,"ip":"203.0.113.9","ts":%q,"id":"att-beside"}`+"\n", now.Add(-time.Minute).Format(time.RFC3339Nano)))
	if info, err := os.Stat(filepath.Join(dir, "server.json")); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("run file: %v %v, want mode 0600", info, err)
	}

	poll := func(what string, args []string, ok func(string) bool) string {
		t.Helper()
		var out string
		var err error
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if out, err = runCLI(t, nil, args...); err == nil && ok(out) {
				return out
			}
			if err != nil {
				break // an error is an error at once: no lock timeout to wait for
			}
		}
		t.Fatalf("%s beside the running server: %v\n%s", what, err, out)
		return ""
	}
	poll("logins", []string{"logins", "alice", "--data-dir", dir}, func(o string) bool { return strings.Contains(o, "att-beside") && strings.Contains(o, "false") })
	poll("logins ndjson", []string{"logins", "alice", "--data-dir", dir, "--format", "ndjson"}, func(o string) bool {
		return strings.Contains(o, `"id":"att-beside"`) && strings.Contains(o, `"ip":"203.0.113.9"`)
	})
	poll("stats", []string{"stats", "api", "--data-dir", dir, "--day", "2026-11-21"}, regexp.MustCompile(`16:00\s+20\s+0\s+0\s+20\s`).MatchString)
	poll("retention --dry-run", []string{"retention", "--dry-run", "--data-dir", dir}, func(o string) bool { return strings.Contains(o, "no login table is older than 60 days") })
	poll("retention", []string{"retention", "--data-dir", dir}, func(o string) bool { return strings.Contains(o, "no login table is older than 60 days") })
	poll("ls", []string{"ls", "api/", "--data-dir", dir}, func(o string) bool { return strings.Contains(o, "EventCount=20") })
	poll("cat", []string{"cat", "api/2026/11/21/1600/000001.log", "--data-dir", dir}, func(o string) bool { return strings.Count(o, "\n") == 20 })
	poll("query", []string{"query", "--service", "api", "--from", "2026-11-21T16:00:00Z", "--to", "2026-11-21T17:00:00Z", "--data-dir", dir}, func(o string) bool { return strings.Count(o, "\n") == 20 })

	// Killed: the run file stays, names a dead process, and is ignored.
	s.kill9()
	if _, err := os.Stat(filepath.Join(dir, "server.json")); err != nil {
		t.Fatalf("kill -9 should leave the run file behind (this test checks it is ignored): %v", err)
	}
	poll("logins after kill -9", []string{"logins", "alice", "--data-dir", dir}, func(o string) bool { return strings.Contains(o, "att-beside") })

	// A clean stop removes the run file.
	s = start(t, dir, "--tokens", tokens)
	if code := s.stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "server.json")); !os.IsNotExist(err) {
		t.Fatalf("run file after a clean stop: %v, want it removed", err)
	}
}

// selfSigned writes a self-signed certificate for ingest.test and 127.0.0.1
// and its key to certFile and keyFile, and returns the certificate's serial.
func selfSigned(t *testing.T, certFile, keyFile string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "ingest.test"},
		DNSNames:     []string{"ingest.test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Written to temporary names and renamed, as a certificate manager does,
	// so the server never reads half a file.
	write := func(path string, blk *pem.Block) {
		if err := os.WriteFile(path+".new", pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	write(keyFile, &pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	write(certFile, &pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestTLSReloadOnSIGHUP: HTTPS with --tls-cert/--tls-key; after SIGHUP a new
// handshake sees the new certificate while a keep-alive connection opened
// before keeps working; the commands beside the server follow it.
func TestTLSReloadOnSIGHUP(t *testing.T) {
	certDir := t.TempDir()
	certFile, keyFile := filepath.Join(certDir, "cert.pem"), filepath.Join(certDir, "key.pem")
	selfSigned(t, certFile, keyFile, 1)
	dir := t.TempDir()
	s := start(t, dir, "--tls-cert", certFile, "--tls-key", keyFile)

	// A client that trusts nothing but checks which certificate it got.
	var dials atomic.Int32
	client := func() *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			MaxConnsPerHost: 1,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			},
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		}}
	}
	serialOf := func(c *http.Client) (int64, *http.Response) {
		t.Helper()
		resp, err := c.Get(s.url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.TLS == nil || resp.ProtoMajor != 1 || resp.ProtoMinor != 1 {
			t.Fatalf("GET /healthz over TLS: %s %s, TLS %v", resp.Status, resp.Proto, resp.TLS != nil)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64(), resp
	}
	old := client()
	if serial, _ := serialOf(old); serial != 1 {
		t.Fatalf("first certificate serial %d, want 1", serial)
	}
	if d := dials.Load(); d != 1 {
		t.Fatalf("%d dials, want 1", d)
	}

	selfSigned(t, certFile, keyFile, 2)
	if err := s.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var serial int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if serial, _ = serialOf(client()); serial == 2 {
			break
		}
	}
	if serial != 2 {
		t.Fatalf("a new handshake after SIGHUP sees serial %d, want 2\n%s", serial, s.Stderr())
	}
	// The keep-alive connection opened before the reload still serves.
	before := dials.Load()
	serial, _ = serialOf(old)
	if serial != 1 || dials.Load() != before {
		t.Fatalf("old keep-alive connection: serial %d, dials %d -> %d; want serial 1 on the same connection", serial, before, dials.Load())
	}
	if !strings.Contains(s.Stderr(), "reloaded") {
		t.Errorf("no reload logged:\n%s", s.Stderr())
	}

	// The commands beside the server reach it over HTTPS, trusting exactly
	// the certificate of --tls-cert.
	if out, err := runCLI(t, nil, "stats", "api", "--data-dir", dir); err != nil || !strings.Contains(out, "HOUR") {
		t.Fatalf("ingest stats beside an HTTPS server: %v\n%s", err, out)
	}
	// A broken certificate on SIGHUP keeps the one in use.
	os.WriteFile(certFile, []byte("not a certificate"), 0o600)
	s.Cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !strings.Contains(s.Stderr(), "cannot reload"); {
		time.Sleep(50 * time.Millisecond)
	}
	if serial, _ := serialOf(client()); serial != 2 || !strings.Contains(s.Stderr(), "previous certificate stays") {
		t.Fatalf("after a bad certificate: serial %d, want 2 kept\n%s", serial, s.Stderr())
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestTLSFlagsNeedBoth: a certificate without a key is refused at start.
func TestTLSFlagsNeedBoth(t *testing.T) {
	out, err := runCLI(t, nil, "serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--tls-cert", "x.pem")
	if err == nil || !strings.Contains(out, "give both") {
		t.Fatalf("serve --tls-cert alone: %v\n%s", err, out)
	}
}

// TestConfigFile: --config sets every command's flags from one YAML file;
// INGEST_<FLAG> wins over it and the command line over both; a key no
// command knows is an error naming it.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("tok\n"), 0o600)
	port := freePort(t)
	cfg := filepath.Join(t.TempDir(), "ingest.yaml")
	os.WriteFile(cfg, fmt.Appendf(nil, "# one file for every command\nlisten: \"127.0.0.1:%d\"\ndata-dir: %q\ntokens: %q\nmetrics-auth: true\nflush-interval: 50ms\nbuffer-bytes: 64MiB\ndays: 3\n", port, dir, tokens), 0o600)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)

	serve := func(env ...string) (stop func()) {
		t.Helper()
		cmd := ingestexec.Command(binary, "serve", "--config", cfg)
		cmd.Env = append(cmd.Env, env...)
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop = func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("no exit after SIGTERM:\n%s", stderr.String())
			}
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if resp, err := http.Get(url + "/healthz"); err == nil {
				resp.Body.Close()
				return stop
			}
			select {
			case <-exited:
				t.Fatalf("serve --config exited:\n%s", stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("serve --config not listening on the file's address after 30s:\n%s", stderr.String())
			}
		}
	}
	status := func(path string) int {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	stop := serve()
	// listen, tokens and metrics-auth came from the file.
	if got := status("/metrics"); got != 401 {
		t.Errorf("/metrics with metrics-auth: true in the file: %d, want 401", got)
	}
	if got := status("/v1/logins/alice"); got != 401 {
		t.Errorf("/v1/logins with tokens in the file: %d, want 401", got)
	}
	// The same file serves a read command beside the server: its listen and
	// tokens keys belong to serve and are skipped; data-dir and days apply.
	if out, err := runCLI(t, nil, "logins", "alice", "--config", cfg); err != nil || !strings.Contains(out, "TIME") {
		t.Fatalf("ingest logins --config: %v\n%s", err, out)
	}
	req, _ := http.NewRequest("POST", url+"/v1/logs/cfgsvc", strings.NewReader(`{"msg":"from the config test"}`))
	req.Header.Set("Authorization", "Bearer tok")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 202 {
		t.Fatalf("POST with the file's token: %v %v", resp, err)
	}
	stop() // flushes

	// INGEST_<FLAG> wins over the file.
	stop = serve("INGEST_METRICS_AUTH=false")
	if got := status("/metrics"); got != 200 {
		t.Errorf("/metrics with INGEST_METRICS_AUTH=false over the file: %d, want 200", got)
	}
	stop()
	// The file's data-dir holds the blob; INGEST_DATA_DIR wins over the
	// file, and the command line over both.
	empty := "INGEST_DATA_DIR=" + t.TempDir()
	if out, err := runCLI(t, nil, "ls", "cfgsvc/", "--config", cfg); err != nil || !strings.Contains(out, "cfgsvc/") {
		t.Fatalf("ingest ls --config: %v\n%s", err, out)
	}
	if out, err := runCLI(t, []string{empty}, "ls", "cfgsvc/", "--config", cfg); err != nil || strings.Contains(out, "cfgsvc/") {
		t.Fatalf("ingest ls --config with INGEST_DATA_DIR elsewhere: %v\n%s", err, out)
	}
	if out, err := runCLI(t, []string{empty}, "ls", "cfgsvc/", "--config", cfg, "--data-dir", dir); err != nil || !strings.Contains(out, "cfgsvc/") {
		t.Fatalf("ingest ls --data-dir over INGEST_DATA_DIR: %v\n%s", err, out)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("data-dir: /tmp\nlisen: \":9000\"\n"), 0o600)
	for _, args := range [][]string{{"serve", "--config", bad}, {"ls", "--config", bad}} {
		out, err := runCLI(t, nil, args...)
		if err == nil || !strings.Contains(out, `line 2: unknown key "lisen"`) {
			t.Errorf("ingest %s with an unknown key: %v\n%s", args[0], err, out)
		}
	}
}

// TestConnectionLimitsPerIP: past --max-conns-per-ip, a new connection from
// the same address is answered 429 and closed; the ones open keep working.
func TestConnectionLimitsPerIP(t *testing.T) {
	s := start(t, t.TempDir(), "--max-conns-per-ip", "2")
	addr := strings.TrimPrefix(s.url, "http://")
	get := func(c net.Conn) string {
		t.Helper()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err.Error()
		}
		b := make([]byte, 512)
		n, err := c.Read(b)
		if n == 0 {
			return fmt.Sprint(err)
		}
		return string(b[:n])
	}
	// From 127.0.0.2, an address of its own: the health checks of start
	// may leave keep-alive connections from 127.0.0.1.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	var open []net.Conn
	for range 2 {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := get(c); !strings.HasPrefix(got, "HTTP/1.1 200") {
			t.Fatalf("connection within the limit: %q", got)
		}
		open = append(open, c)
	}
	third, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if got := get(third); !strings.HasPrefix(got, "HTTP/1.1 429") {
		t.Fatalf("connection past --max-conns-per-ip 2: %q, want 429", got)
	}
	for _, c := range open {
		if got := get(c); !strings.HasPrefix(got, "HTTP/1.1 200") {
			t.Fatalf("a connection within the limit stopped working: %q", got)
		}
	}
	// Another address has its own count.
	other, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}}).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got := get(other); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("a connection from 127.0.0.3: %q, want 200", got)
	}
	// The refusal is counted (scraped from 127.0.0.4, under no limit yet).
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 4)}}).DialContext}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if want := `ingest_conns_refused_total{reason="per_ip"} 1`; !strings.Contains(string(body), want+"\n") {
		t.Errorf("/metrics after one refused connection has no %s", want)
	}
}

// TestConnectionLimitsPerIPTLS: with TLS, a connection past
// --max-conns-per-ip is closed before the handshake (nothing can be said
// in HTTP before it); the one open keeps working.
func TestConnectionLimitsPerIPTLS(t *testing.T) {
	certDir := t.TempDir()
	certFile, keyFile := filepath.Join(certDir, "cert.pem"), filepath.Join(certDir, "key.pem")
	selfSigned(t, certFile, keyFile, 1)
	s := start(t, t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile, "--max-conns-per-ip", "1")
	addr := strings.TrimPrefix(s.url, "https://")
	d := &tls.Dialer{
		NetDialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 10 * time.Second},
		Config:    &tls.Config{InsecureSkipVerify: true},
	}
	healthz := func(c net.Conn) string {
		t.Helper()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err.Error()
		}
		b := make([]byte, 512)
		n, err := c.Read(b)
		if n == 0 {
			return fmt.Sprint(err)
		}
		return string(b[:n])
	}
	first, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("a TLS connection within the limit: %v", err)
	}
	defer first.Close()
	if got := healthz(first); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("a TLS connection within the limit: %q", got)
	}
	if second, err := d.Dial("tcp", addr); err == nil {
		second.Close()
		t.Fatal("a TLS connection past --max-conns-per-ip 1 completed its handshake, want it closed")
	}
	if got := healthz(first); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("the TLS connection within the limit stopped working: %q", got)
	}
}
