package httpapi

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ingest/blobsink"
	"ingest/buffer"
)

func TestParseTokens(t *testing.T) {
	f := func(file string, tok string, wantFound bool, wantPrefixes ...string) {
		t.Helper()
		ts, err := parseTokens(strings.NewReader(file), "tokens")
		if err != nil {
			t.Fatalf("parseTokens(%q): %v", file, err)
		}
		e := ts.lookup([]byte(tok))
		if (e != nil) != wantFound {
			t.Fatalf("lookup(%q) in %q found=%v, want %v", tok, file, e != nil, wantFound)
		}
		if e != nil && strings.Join(e.prefixes, ",") != strings.Join(wantPrefixes, ",") {
			t.Fatalf("lookup(%q) in %q prefixes %q, want %q", tok, file, e.prefixes, wantPrefixes)
		}
	}
	f("tok\n", "tok", true)
	f("tok\n", "to", false)
	f("tok\n", "tokk", false)
	f("tok\n", "", false)
	f("  tok  \n", "tok", true)
	f("# comment\n\ntok123 checkout payments-\n", "tok123", true, "checkout", "payments-")
	f("a\tsvc # the shop\nb\n", "a", true, "svc")
	f("a svc\nb\n", "b", true)
	f("# tok\nreal\n", "tok", false) // a comment is no token
	for _, bad := range []string{"", "# only a comment\n", "\n\n"} {
		if _, err := parseTokens(strings.NewReader(bad), "tokens"); err == nil || !strings.Contains(err.Error(), "holds no token") {
			t.Errorf("parseTokens(%q) = %v, want an error saying it holds no token", bad, err)
		}
	}
	// What editors and other systems write, read as meant.
	f("\ufefftok svc\r\nother\r\n", "tok", true, "svc")
	f("\ufefftok svc\r\nother\r\n", "other", true)
	f("tok\tsvc-a\t\tsvc-b # both\n", "tok", true, "svc-a", "svc-b")
	f("last-line-without-newline", "last-line-without-newline", true)
}

// TestTokensFileRefused: a tokens file the server cannot read as meant is
// refused whole, naming the line and never the token. A token listed twice
// used to have its entries' indices ORed: with "dup-tok checkout" and
// "dup-tok payments-" it selected entry 1|2 = 3, the unscoped local token.
func TestTokensFileRefused(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"Twice", "a-tok\ndup-tok checkout\ndup-tok payments-\n", "line 3 lists the same token as line 2"},
		{"TwiceOutOfRange", "a-tok\nb-tok\nc-dup svc-x\nc-dup svc-y\n", "line 4 lists the same token as line 3"},
		{"TwiceUnscoped", "# x\n\ndup-tok\r\ndup-tok\r\n", "line 4 lists the same token as line 3"},
		{"BOMInside", "ok-tok\n\ufeffdup-tok\n", "token on line 2 holds"},
		{"TwiceAcrossComment", "dup-tok # first\n# dup-tok\n  dup-tok\t\n", "line 3 lists the same token as line 1"},
		{"LocalToken", "a-tok\nlocal-secret checkout\n", "line 2 lists the server's local token"},
		{"ControlCharacter", "ok-tok\nbad\x01tok\n", "token on line 2 holds a control character"},
		{"NonASCII", "tök\n", "token on line 1 holds"},
		{"Wildcard", "tok payments-*\n", `prefix "payments-*" on line 1 can never match`},
		{"LongLine", "tok\n" + strings.Repeat("x", maxTokensLine+1) + "\n", "line 2 is longer than 65536 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens")
			os.WriteFile(path, []byte(c.file), 0o600)
			_, err := readTokensFile(path, "local-secret")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err %v, want one naming %s and %q", err, path, c.want)
			}
			for _, tok := range []string{"dup-tok", "c-dup", "local-secret", "bad\x01tok"} {
				if strings.Contains(err.Error(), tok) {
					t.Fatalf("the error shows a token: %v", err)
				}
			}
		})
	}
}

// TestTokenLookupSelectsOne: every token of a file finds its own entry,
// whatever its position; no token finds another's.
func TestTokenLookupSelectsOne(t *testing.T) {
	var file strings.Builder
	for i := range 37 {
		fmt.Fprintf(&file, "tok-%d svc-%d\n", i, i)
	}
	ts, err := parseTokens(strings.NewReader(file.String()), "tokens", "local")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 37 {
		e := ts.lookup([]byte(fmt.Sprintf("tok-%d", i)))
		if e == nil || len(e.prefixes) != 1 || e.prefixes[0] != fmt.Sprintf("svc-%d", i) {
			t.Fatalf("tok-%d found %+v", i, e)
		}
	}
	if e := ts.lookup([]byte("local")); e == nil || !e.unscoped() {
		t.Fatalf("local token found %+v", e)
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add("tok123 checkout payments-\n# c\nadmin\n", "tok123", "checkout-1")
	f.Fuzz(func(t *testing.T, file, tok, svc string) {
		ts, err := parseTokens(strings.NewReader(file), "fuzz")
		if err != nil {
			return
		}
		if e := ts.lookup([]byte(tok)); e != nil {
			allowed := e.mayWrite([]byte(svc))
			if e.unscoped() && !allowed {
				t.Fatalf("an unscoped token may not write %q", svc)
			}
		}
	})
}

func TestMayWrite(t *testing.T) {
	e := tokenEntry{prefixes: []string{"checkout", "payments-"}}
	for svc, want := range map[string]bool{"checkout": true, "checkout-eu": true, "payments-eu": true,
		"payments": false, "check": false, "api": false, "": false} {
		if got := e.mayWrite([]byte(svc)); got != want {
			t.Errorf("mayWrite(%q) = %v, want %v", svc, got, want)
		}
	}
}

func TestReadTokensFileAddsTheLocalToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(path, []byte("scoped svc-\n"), 0o600)
	ts, err := readTokensFile(path, "local")
	if err != nil {
		t.Fatal(err)
	}
	if e := ts.lookup([]byte("local")); e == nil || !e.unscoped() {
		t.Fatalf("local token: %+v, want an unscoped entry", e)
	}
	if _, err := readTokensFile(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "cannot read the tokens file") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestTokensOnEveryRoute: with --tokens, every /v1/ route, reads included
// and routes that do not exist, answers 401 without a valid token; health
// stays open; /metrics is open unless --metrics-auth.
func TestTokensOnEveryRoute(t *testing.T) {
	for _, metricsAuth := range []bool{false, true} {
		tokens := filepath.Join(t.TempDir(), "tokens")
		os.WriteFile(tokens, []byte("# ops\ns3cret\nother\n"), 0o600)
		f := newFixture(t, Config{TokensFile: tokens, MetricsAuth: metricsAuth}, buffer.Config{})
		ndjson := `{"msg":"x","service":"api"}`
		routes := []struct{ method, path, body string }{
			{"POST", "/v1/logs", ndjson},
			{"POST", "/v1/logs/api", ndjson},
			{"POST", "/v1/logins", `{"user":"bob"}`},
			{"GET", "/v1/logs?service=api&from=-1h", ""},
			{"GET", "/v1/logs?service=api&from=-1h&histogram=1m", ""},
			{"GET", "/v1/logs?service=*&from=-1h&order=desc", ""},
			{"GET", "/v1/logins/bob", ""},
			{"GET", "/v1/services", ""},
			{"GET", "/v1/tail?service=api", ""},
			{"GET", "/v1/stats/api", ""},
			{"POST", "/v1/retention?dry-run=1", ""},
			{"GET", "/v1/no-such-route", ""},
		}
		for _, r := range routes {
			for _, auth := range []string{"", "Bearer wrong", "Basic s3cret", "Bearer s3cre", "Bearer s3crett"} {
				code, hdr, body := f.do(t, r.method, r.path, map[string]string{"Authorization": auth, "Content-Type": "application/x-ndjson"}, []byte(r.body))
				if code != 401 || hdr.Get("WWW-Authenticate") == "" || !strings.Contains(body, "bearer token") {
					t.Errorf("%s %s with Authorization %q = %d %q, want 401 with WWW-Authenticate", r.method, r.path, auth, code, body)
				}
			}
			if r.path == "/v1/tail?service=api" {
				continue // streams until the client goes away: checked for 401 only
			}
			for _, auth := range []string{"Bearer s3cret", "bearer other"} {
				code, _, body := f.do(t, r.method, r.path, map[string]string{"Authorization": auth, "Content-Type": "application/x-ndjson"}, []byte(r.body))
				if code == 401 || code == 403 {
					t.Errorf("%s %s with Authorization %q = %d %q, want it let through", r.method, r.path, auth, code, body)
				}
			}
		}
		// The query page itself is open: it holds no data, asks for the
		// token in the browser, and sends it with its /v1/ calls (above).
		for _, path := range []string{"/healthz", "/readyz", "/"} {
			if code, _, _ := f.do(t, "GET", path, nil, nil); code != 200 {
				t.Errorf("%s needs no token, got %d", path, code)
			}
		}
		code, _, _ := f.do(t, "GET", "/metrics", nil, nil)
		if want := map[bool]int{false: 200, true: 401}[metricsAuth]; code != want {
			t.Errorf("/metrics without a token, --metrics-auth=%v: %d, want %d", metricsAuth, code, want)
		}
		if code, _, _ := f.do(t, "GET", "/metrics", map[string]string{"Authorization": "Bearer s3cret"}, nil); code != 200 {
			t.Errorf("/metrics with a token: %d, want 200", code)
		}
	}
}

// TestScopedTokens: a token with service prefixes writes only those
// services, wherever the service is named; a batch naming another is refused
// whole and nothing of it is stored.
func TestScopedTokens(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("admin\ntok123 checkout payments-\n"), 0o600)
	f := newFixture(t, Config{TokensFile: tokens}, buffer.Config{})
	scoped := map[string]string{"Authorization": "Bearer tok123", "Content-Type": "application/x-ndjson"}
	cases := []struct {
		name, method, path string
		hdr                map[string]string
		body               string
		want               int
	}{
		{"path service", "POST", "/v1/logs/checkout", nil, `{"msg":"a"}`, 202},
		{"prefix", "POST", "/v1/logs/payments-eu", nil, `{"msg":"a"}`, 202},
		{"event service", "POST", "/v1/logs", nil, `{"msg":"a","service":"checkout-2"}`, 202},
		{"query service", "POST", "/v1/logs?service=payments-x", nil, `{"msg":"a"}`, 202},
		{"header service", "POST", "/v1/logs", map[string]string{"X-Service": "checkout"}, `{"msg":"a"}`, 202},
		{"other path service", "POST", "/v1/logs/api", nil, `{"msg":"a"}`, 403},
		{"prefix is not a match the other way", "POST", "/v1/logs/payments", nil, `{"msg":"a"}`, 403},
		{"default service", "POST", "/v1/logs", nil, `{"msg":"a"}`, 403},
		{"other header service", "POST", "/v1/logs", map[string]string{"X-Service": "api"}, `{"msg":"a"}`, 403},
		{"one event of the batch elsewhere", "POST", "/v1/logs/checkout", nil, "{\"msg\":\"a\"}\n{\"msg\":\"b\",\"service\":\"api\"}\n", 403},
		{"otlp json elsewhere", "POST", "/v1/logs", map[string]string{"Content-Type": "application/json"},
			`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},"scopeLogs":[{"logRecords":[{"body":{"stringValue":"x"}}]}]}]}`, 403},
		{"logins", "POST", "/v1/logins", nil, `{"user":"bob"}`, 403},
		{"retention", "POST", "/v1/retention?dry-run=1", nil, "", 403},
		{"reads", "GET", "/v1/logs?service=api", nil, "", 200},
		{"login reads", "GET", "/v1/logins/bob", nil, "", 200},
	}
	for _, c := range cases {
		hdr := map[string]string{}
		for k, v := range scoped {
			hdr[k] = v
		}
		for k, v := range c.hdr {
			hdr[k] = v
		}
		code, _, body := f.do(t, c.method, c.path, hdr, []byte(c.body))
		if code != c.want {
			t.Errorf("%s: %s %s = %d %s, want %d", c.name, c.method, c.path, code, body, c.want)
		}
		if code == 403 && !strings.Contains(body, "token") {
			t.Errorf("%s: 403 without saying why: %s", c.name, body)
		}
	}
	// Nothing of a refused batch is stored: api never got a blob.
	f.buf.Close(t.Context())
	var names []string
	f.store.List(t.Context(), "", func(b blobsink.BlobInfo) error { names = append(names, b.Name); return nil })
	for _, n := range names {
		if strings.HasPrefix(n, "api/") || strings.HasPrefix(n, "default/") || strings.HasPrefix(n, "payments/") {
			t.Errorf("blob %s holds events of a refused batch", n)
		}
	}
	if len(names) == 0 {
		t.Error("no blob at all: the accepted batches were not stored either")
	}
	// The unscoped token writes anything.
	if code, _, body := f.do(t, "POST", "/v1/logins", map[string]string{"Authorization": "Bearer admin", "Content-Type": "application/x-ndjson"}, []byte(`{"user":"bob"}`)); code != 503 && code != 202 {
		t.Errorf("admin token posting logins: %d %s", code, body)
	}
}

// TestTokensReload: Reload swaps the tokens; a file that fails to load
// leaves the previous ones in place.
func TestTokensReload(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("old\n"), 0o600)
	f := newFixture(t, Config{TokensFile: tokens}, buffer.Config{})
	get := func(tok string) int {
		code, _, _ := f.do(t, "GET", "/v1/logins/bob", map[string]string{"Authorization": "Bearer " + tok}, nil)
		return code
	}
	if get("old") != 200 || get("new") != 401 {
		t.Fatalf("before reload: old %d, new %d", get("old"), get("new"))
	}
	os.WriteFile(tokens, []byte("new\n"), 0o600)
	if err := f.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if get("old") != 401 || get("new") != 200 {
		t.Fatalf("after reload: old %d, new %d", get("old"), get("new"))
	}
	for _, bad := range []string{"# emptied by mistake\n", "new\nnewer checkout\nnewer payments-\n"} {
		os.WriteFile(tokens, []byte(bad), 0o600)
		if err := f.srv.Reload(); err == nil || !strings.Contains(err.Error(), "previous tokens stay") {
			t.Fatalf("reload of %q: %v", bad, err)
		}
		if get("new") != 200 || get("newer") != 401 {
			t.Fatalf("a failed reload of %q changed the tokens in use", bad)
		}
	}
}

// BenchmarkTokenLookup is the per-request cost of --tokens: one SHA-256 of
// the presented token, then a constant-time compare with every entry.
func BenchmarkTokenLookup(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var file strings.Builder
			for i := range n {
				fmt.Fprintf(&file, "token-%040d svc-%d\n", i, i)
			}
			ts, err := parseTokens(strings.NewReader(file.String()), "bench")
			if err != nil {
				b.Fatal(err)
			}
			tok := []byte(fmt.Sprintf("token-%040d", n-1))
			b.ReportAllocs()
			for b.Loop() {
				if ts.lookup(tok) == nil {
					b.Fatal("not found")
				}
			}
		})
	}
}

func TestDigestsEqual(t *testing.T) {
	var a, b [32]byte
	for i := range a {
		a[i], b[i] = byte(i), byte(i)
	}
	if digestsEqual(&a, &b) != 1 {
		t.Fatal("equal digests compare unequal")
	}
	for i := range 32 {
		for _, bit := range []byte{1, 0x80} {
			c := b
			c[i] ^= bit
			if digestsEqual(&a, &c) != 0 {
				t.Fatalf("digests differing in byte %d bit %#x compare equal", i, bit)
			}
		}
	}
}

// TestTokenLookupNeverMixesEntries: even given entries parseTokens would
// refuse (a token twice), the lookup returns one of the token's own
// entries, never another token's: ORing the matches' indices turned
// entries 1 and 2 into entry 3.
func TestTokenLookupNeverMixesEntries(t *testing.T) {
	e := func(tok string, prefixes ...string) tokenEntry {
		return tokenEntry{digest: sha256.Sum256([]byte(tok)), prefixes: prefixes}
	}
	ts := &tokenSet{entries: []tokenEntry{e("dup", "checkout"), e("dup", "payments-"), e("local")}}
	got := ts.lookup([]byte("dup"))
	if got == nil || got.unscoped() || (got.prefixes[0] != "checkout" && got.prefixes[0] != "payments-") {
		t.Fatalf("lookup of a token listed twice found %+v, want one of its own entries", got)
	}
}
