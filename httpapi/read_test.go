package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"ingest/buffer"
	"ingest/query"
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
		if len(lines) != 5 || !strings.HasPrefix(last, `{"@ingest":"stats","stats":{"prefixes":1,"listings":1,`) || !strings.Contains(last, `"lines_scanned":10,"lines_matched":4,"lines_out_of_order":0}`) {
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

// TestReadBounds: every range, step, count and order a query parameter
// carries is checked before it is used. The histogram from 1700 by the hour
// overflowed a time.Duration and made the server exit; newest first from
// now to 2261 listed every hour.
func TestReadBounds(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	if code, _, b := f.do(t, "POST", "/v1/logs", map[string]string{"Content-Type": "application/x-ndjson"},
		[]byte(`{"ts":"2026-11-21T16:00:00Z","service":"x","msg":"one"}`)); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	f.waitLines(t, "/v1/logs?service=x&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z", 1)
	for _, c := range []struct {
		params string
		code   int
		want   string
	}{
		{"service=x&from=1700-01-01T00:00:00Z&to=now&histogram=1h", 400, "at most 100000"},
		{"service=*&from=1700-01-01T00:00:00Z&to=now&histogram=168h", 200, `"interval_seconds":604800,"buckets":[{"ts":`},
		{"service=x&from=1000-01-01&to=9999-12-31&histogram=744h", 200, `"total":1`},
		{"service=x&from=-1h&histogram=745h", 400, "from 1s to 744h"},
		{"service=x&from=-1h&histogram=1500ms", 400, "whole number of seconds"},
		{"service=x&from=-1h&histogram=-1h", 400, "from 1s to 744h"},
		{"service=x&from=-1h&histogram=9999999999h", 400, "bad histogram"},
		{"service=*&from=1700-01-01T00:00:00Z&to=now", 200, `"message":"one"`},
		{"service=x&from=0001-01-02&to=9999-12-31&order=desc&limit=1", 200, `"message":"one"`},
		{"service=x&from=now&to=2261-12-31&order=desc&stats=1", 200, `"stats":{"prefixes":`},
		{"service=x&from=-199w&to=%2B199w&order=desc&limit=99999999", 200, `"message":"one"`},
		{"service=x&from=-1h&limit=99999999999999999999", 400, "bad limit"},
		{"service=x&from=-1000000000w", 400, "too far from now"},
		{"service=" + manyServices(101) + "&from=-1h", 400, "at most 100"},
		{"service=x&from=-1h&order=sideways", 400, "bad order"},
	} {
		code, _, got := f.do(t, "GET", "/v1/logs?"+c.params, nil, nil)
		if code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("GET /v1/logs?%s = %d %.300s, want %d with %q", c.params, code, got, c.code, c.want)
		}
	}
	// Newest first over 235 empty years: a probe per empty block, not a
	// listing per hour (2 million before).
	_, _, got := f.do(t, "GET", "/v1/logs?service=x&from=2026-11-21T16:00:00Z&to=2261-12-31&order=desc&stats=1", nil, nil)
	m := regexp.MustCompile(`"listings":(\d+)`).FindStringSubmatch(got)
	if n, _ := strconv.Atoi(m[1]); len(m) != 2 || n > 200 || !strings.Contains(got, `"message":"one"`) {
		t.Fatalf("newest first to 2261: %s", got)
	}
	if code, _, _ := f.do(t, "GET", "/healthz", nil, nil); code != 200 {
		t.Fatalf("the server does not answer after the hostile reads: %d", code)
	}
}

// TestLoginsPathDecodedOnce: /v1/logins/%2541 is user "%41", not "A" (the
// path was decoded twice); days and limit as large as an int holds are
// taken as the retention and 2^30 (the largest limit made the day read's
// top+1 overflow, and answered nothing).
func TestLoginsPathDecodedOnce(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	now := time.Now().UTC().Format(time.RFC3339Nano)
	body := fmt.Sprintf(`{"user":"A","ts":%q,"id":"plainA"}`+"\n"+`{"user":"%%41","ts":%q,"id":"percent41"}`+"\n"+
		`{"user":"a/b","ts":%q,"id":"slash","@ingest":"error","error":"x"}`+"\n", now, now, now)
	if code, _, b := f.do(t, "POST", "/v1/logins", map[string]string{"Content-Type": "application/x-ndjson"}, []byte(body)); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	f.waitLines(t, "/v1/logins/A", 1)
	for _, c := range []struct{ path, want string }{
		{"/v1/logins/A", "plainA"},
		{"/v1/logins/%41", "plainA"},
		{"/v1/logins/%2541", "percent41"},
		{"/v1/logins/a%2Fb", "slash"},
		{"/v1/logins/A?days=99999999999", "plainA"},
		{"/v1/logins/A?limit=9223372036854775807", "plainA"},
	} {
		code, _, got := f.do(t, "GET", c.path, nil, nil)
		if ids := strings.Join(idsOf(got), " "); code != 200 || ids != c.want {
			t.Errorf("GET %s = %d, ids %q, want %q", c.path, code, ids, c.want)
		}
		if strings.Contains(got, `{"@ingest"`) || query.ControlKind([]byte(got)) != "" {
			t.Errorf("GET %s: an attempt reads as a control line: %s", c.path, got)
		}
	}
	if _, _, got := f.do(t, "GET", "/v1/logins/a%2Fb", nil, nil); !strings.Contains(got, `"attr.@ingest":"error","error":"x"`) {
		t.Errorf("an attempt's own @ingest field is not renamed: %s", got)
	}
	if code, _, got := f.do(t, "GET", "/v1/logins/A?limit=9223372036854775808", nil, nil); code != 400 || !strings.Contains(got, "bad limit") {
		t.Errorf("limit over what an int holds: %d %s", code, got)
	}
}

func TestLoginUser(t *testing.T) {
	for _, c := range []struct {
		raw, user string
		ok        bool
	}{
		{"/v1/logins/A", "A", true},
		{"/v1/logins/%2541", "%41", true},
		{"/v1/logins/%41", "A", true},
		{"/v1/logins/a%2Fb", "a/b", true},
		{"/v1/logins/a%20b", "a b", true},
		{"/v1/logins/%zz", "", false},
		{"/v1/logins/", "", false},
		{"/v1//logins/x", "", false},
	} {
		if user, ok := loginUser([]byte(c.raw)); user != c.user || ok != c.ok {
			t.Errorf("loginUser(%q) = %q %v, want %q %v", c.raw, user, ok, c.user, c.ok)
		}
	}
}

// manyServices is a comma list of n distinct service names.
func manyServices(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint("s", i)
	}
	return strings.Join(names, ",")
}

// TestAnswerControlLines: events whose own fields are named like the
// control lines' (error, stats, dropped, even @ingest) are events; only the
// reserved key makes a control line.
func TestAnswerControlLines(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	body := `{"ts":"2026-11-21T16:00:01Z","service":"c","msg":"first","error":"connection refused"}` + "\n" +
		`{"ts":"2026-11-21T16:00:02Z","service":"c","msg":"second","stats":{"n":1},"dropped":3}` + "\n" +
		`{"ts":"2026-11-21T16:00:03Z","service":"c","msg":"third","@ingest":"error"}` + "\n" +
		`{"ts":"2026-11-21T16:00:04Z","service":"c","msg":"fourth","\u0040ingest":"stats"}` + "\n"
	if code, _, b := f.do(t, "POST", "/v1/logs", map[string]string{"Content-Type": "application/x-ndjson"}, []byte(body)); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	got := f.waitLines(t, "/v1/logs?service=c&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z&stats=1", 5)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	for i, l := range lines[:4] {
		var o map[string]any
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("line %d %s: %v", i+1, l, err)
		}
		if _, ok := o[query.ControlKey]; ok || query.ControlKind([]byte(l)) != "" {
			t.Errorf("event line %d reads as a control line: %s", i+1, l)
		}
	}
	if !strings.Contains(lines[2], `"attr.@ingest":"error"`) || !strings.Contains(lines[3], `"attr.\u0040ingest":"stats"`) {
		t.Errorf("an attribute named @ingest is not renamed:\n%s", got)
	}
	if query.ControlKind([]byte(lines[4])) != query.ControlStats {
		t.Errorf("last line %s is not the stats control line", lines[4])
	}
}
