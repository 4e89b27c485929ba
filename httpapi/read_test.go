package httpapi

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"ingest/buffer"
)

// idsOf lists the "id" fields of an NDJSON answer, in order.
func idsOf(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`"id":"([^"]+)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// waitLines GETs path until the answer holds want lines (events become
// readable once flushed), failing the test after 10 s.
func (f *fixture) waitLines(t *testing.T, path string, want int) string {
	t.Helper()
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var code int
		code, _, body = f.do(t, "GET", path, nil, nil)
		if code == 200 && strings.Count(body, "\n") == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s = %d, %d lines after 10s, want %d:\n%s", path, code, strings.Count(body, "\n"), want, body)
		}
	}
}

// TestGetLogsFilters: each filter of GET /v1/logs selects what it names,
// and every malformed parameter is a 400 naming it.
func TestGetLogsFilters(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	levels := []string{"debug", "info", "warn", "error", "fatal"}
	var body []byte
	for i := range 10 { // ids r0..r9, one second apart, levels cycling
		msg := "routine"
		if i%3 == 0 {
			msg = "disk full on /var"
		}
		body = fmt.Appendf(body, `{"ts":"2026-11-21T16:00:%02dZ","service":"rd","id":"r%d","level":%q,"msg":%q}`+"\n", i, i, levels[i%5], msg)
	}
	if code, _, b := f.do(t, "POST", "/v1/logs", map[string]string{"Content-Type": "application/x-ndjson"}, body); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	window := "service=rd&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z"
	f.waitLines(t, "/v1/logs?"+window, 10)

	for _, c := range []struct {
		name, params string
		want         string // ids, in order
	}{
		{"all", "", "r0 r1 r2 r3 r4 r5 r6 r7 r8 r9"},
		{"level warn and above", "&level=warn", "r2 r3 r4 r7 r8 r9"},
		{"level by alias", "&level=ERR", "r3 r4 r8 r9"},
		{"q", "&q=" + url.QueryEscape("disk full"), "r0 r3 r6 r9"},
		{"grep", "&grep=" + url.QueryEscape(`;r[13];`), "r1 r3"},
		{"level and q", "&level=error&q=disk", "r3 r9"},
		{"limit", "&limit=3", "r0 r1 r2"},
		{"limit 0 is no limit", "&limit=0", "r0 r1 r2 r3 r4 r5 r6 r7 r8 r9"},
		{"from inclusive, to exclusive", "from=2026-11-21T16:00:02Z&to=2026-11-21T16:00:05Z", "r2 r3 r4"},
		{"relative times", "from=-1000000h&to=now", "r0 r1 r2 r3 r4 r5 r6 r7 r8 r9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := "/v1/logs?" + window + c.params
			if c.params != "" && !strings.HasPrefix(c.params, "&") {
				path = "/v1/logs?service=rd&" + c.params
			}
			code, hdr, got := f.do(t, "GET", path, nil, nil)
			if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" {
				t.Fatalf("GET = %d (%s) %s", code, hdr.Get("Content-Type"), got)
			}
			if ids := strings.Join(idsOf(got), " "); ids != c.want {
				t.Fatalf("ids %q, want %q\n%s", ids, c.want, got)
			}
		})
	}

	t.Run("stats", func(t *testing.T) {
		_, _, got := f.do(t, "GET", "/v1/logs?"+window+"&level=error&stats=1", nil, nil)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		last := lines[len(lines)-1]
		if len(lines) != 5 || !strings.HasPrefix(last, `{"stats":{`) || !strings.Contains(last, `"lines_scanned":10,"lines_matched":4,"lines_out_of_order":0}`) {
			t.Fatalf("stats=1 answer:\n%s", got)
		}
		if _, _, plain := f.do(t, "GET", "/v1/logs?"+window, nil, nil); strings.Contains(plain, `"stats"`) {
			t.Fatalf("stats line without stats=1:\n%s", plain)
		}
	})

	for _, c := range []struct{ params, want string }{
		{"service=rd&from=yesterday", "bad from"},
		{"service=rd&to=2026-13-01T00:00:00Z", "bad to"},
		{window + "&level=loud", `unknown level`},
		{window + "&grep=" + url.QueryEscape("(unclosed"), "bad grep"},
		{window + "&limit=-1", "bad limit"},
		{window + "&limit=ten", "bad limit"},
		{"from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z", "no service given"},
		{"service=rd&from=2026-11-21T17:00:00Z&to=2026-11-21T16:00:00Z", "is not before to"},
	} {
		t.Run("400 "+c.want, func(t *testing.T) {
			code, _, got := f.do(t, "GET", "/v1/logs?"+c.params, nil, nil)
			if code != 400 || !strings.Contains(got, c.want) {
				t.Fatalf("GET /v1/logs?%s = %d %s, want 400 naming %q", c.params, code, got, c.want)
			}
		})
	}
}

// TestGetLoginsFilters: days and limit of GET /v1/logins/{user}, and 400s.
func TestGetLoginsFilters(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	now := time.Now().UTC()
	var body []byte
	// a0..a4 today, one second apart; o0, o1 three days ago.
	for i := range 5 {
		body = fmt.Appendf(body, `{"user":"zoe","success":false,"ip":"203.0.113.1","ts":%q,"id":"a%d"}`+"\n", now.Add(time.Duration(i-5)*time.Second).Format(time.RFC3339Nano), i)
	}
	for i := range 2 {
		body = fmt.Appendf(body, `{"user":"zoe","success":true,"ts":%q,"id":"o%d"}`+"\n", now.AddDate(0, 0, -3).Add(time.Duration(i)*time.Minute).Format(time.RFC3339Nano), i)
	}
	body = fmt.Appendf(body, `{"user":"someone else","ts":%q,"id":"x0"}`+"\n", now.Format(time.RFC3339Nano))
	if code, _, b := f.do(t, "POST", "/v1/logins", map[string]string{"Content-Type": "application/x-ndjson"}, body); code != 202 || !strings.Contains(b, `"accepted":8`) {
		t.Fatalf("POST = %d %s", code, b)
	}
	f.waitLines(t, "/v1/logins/zoe?days=7", 7)

	for _, c := range []struct{ query, want string }{
		{"", "a4 a3 a2 a1 a0 o1 o0"}, // default: 7 days, 100 attempts
		{"?days=7&limit=3", "a4 a3 a2"},
		{"?days=1", "a4 a3 a2 a1 a0"},
		{"?days=4&limit=100", "a4 a3 a2 a1 a0 o1 o0"},
	} {
		code, _, got := f.do(t, "GET", "/v1/logins/zoe"+c.query, nil, nil)
		if ids := strings.Join(idsOf(got), " "); code != 200 || ids != c.want {
			t.Errorf("GET /v1/logins/zoe%s = %d, ids %q, want %q", c.query, code, ids, c.want)
		}
	}
	// Streamed a day table at a time, like the logs answer: no
	// Content-Length, the body is not built whole first.
	if _, h, _ := f.do(t, "GET", "/v1/logins/zoe", nil, nil); h.Get("Content-Length") != "" {
		t.Errorf("GET /v1/logins/zoe has Content-Length %s, want a streamed answer", h.Get("Content-Length"))
	}
	if code, _, got := f.do(t, "GET", "/v1/logins/"+url.PathEscape("someone else"), nil, nil); code != 200 || strings.Join(idsOf(got), " ") != "x0" {
		t.Errorf("GET of an escaped user = %d %s", code, got)
	}
	if code, _, got := f.do(t, "GET", "/v1/logins/nobody", nil, nil); code != 200 || got != "" {
		t.Errorf("GET of an unknown user = %d %q, want 200 and no line", code, got)
	}
	for _, c := range []struct{ path, want string }{
		{"/v1/logins/zoe?days=0", "bad days"},
		{"/v1/logins/zoe?days=week", "bad days"},
		{"/v1/logins/zoe?limit=0", "bad limit"},
		{"/v1/logins/zoe?limit=-5", "bad limit"},
	} {
		if code, _, got := f.do(t, "GET", c.path, nil, nil); code != 400 || !strings.Contains(got, c.want) {
			t.Errorf("GET %s = %d %s, want 400 naming %q", c.path, code, got, c.want)
		}
	}
}
