package intake

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"ingest/intake/group"
	"ingest/intake/login"
	"ingest/internal/benchcpu"
	"ingest/internal/httperr"
)

type gotLogin struct {
	Time                int64
	User, IP, UA, ID    string
	Success, HasSuccess bool
	Props               string
}

func parseLogins(t testing.TB, body string, f Format) ([]gotLogin, Result, error) {
	t.Helper()
	p := GetParser()
	defer PutParser(p)
	var out []gotLogin
	res, err := p.ParseLogins([]byte(body), f, Defaults{Now: now}, func(l *login.Attempt) error {
		out = append(out, gotLogin{l.Time, string(l.User), string(l.IP), string(l.UA), string(l.ID), l.Success, l.HasSuccess, string(l.Props)})
		return nil
	})
	return out, res, err
}

func TestLogins(t *testing.T) {
	body := strings.Join([]string{
		`{"user":"alice","ts":"2026-11-21T18:04:05Z","success":true,"ip":"10.0.0.1","ua":"curl/8","id":"a1","method":"password","mfa":{"ok":true}}`,
		`{"user":"","success":false}`,             // 2: empty user
		`{"success":false,"ip":"10.0.0.2"}`,       // 3: no user
		`{"user":"bob","success":"FALSE","ip":7}`, // 4
		`{"user":42,"success":1}`,                 // 5: numeric user
		`{"user":"eve","success":"maybe"}`,        // 6: bad success
		`{"user":{"name":"x"}}`,                   // 7: user not a string
		`{"user":"carol"}`,                        // 8: success not given
		`{"user":"dave","ts":"soon"}`,             // 9: bad time
		`{"user":"a\"b","time":1732212245}`,       // 10: escaped user
	}, "\n")
	logins, res, err := parseLogins(t, body, FormatNDJSON)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 5 || fmt.Sprint(errLines(res)) != "[2 3 6 7 9]" {
		t.Fatalf("result %+v, want 5 accepted and lines 2 3 6 7 9 rejected", res)
	}
	if !strings.Contains(res.Errors[0].Error, `non-empty user`) || !strings.Contains(res.Errors[2].Error, `"success"`) {
		t.Fatalf("errors %+v", res.Errors)
	}
	want := []gotLogin{
		{Time: ts("2026-11-21T18:04:05Z"), User: "alice", IP: "10.0.0.1", UA: "curl/8", ID: "a1", Success: true, HasSuccess: true,
			Props: `{"method":"password","mfa":{"ok":true}}`},
		{Time: now, User: "bob", IP: "7", HasSuccess: true},
		{Time: now, User: "42", Success: true, HasSuccess: true},
		{Time: now, User: "carol"},
		{Time: 1732212245e9, User: `a"b`},
	}
	for i, w := range want {
		g := logins[i]
		if w.ID == "" && len(g.ID) == IDLen {
			g.ID = ""
		}
		if g != w {
			t.Errorf("login %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestLoginsArrayAndFormats(t *testing.T) {
	logins, res, err := parseLogins(t, `[{"user":"a","success":true},{"ip":"x"},{"user":"b"}]`, FormatJSONArray)
	if err != nil || len(logins) != 2 || fmt.Sprint(errLines(res)) != "[2]" {
		t.Fatalf("%v %+v %v", err, res, logins)
	}
	for _, f := range []Format{FormatText, FormatOTLPJSON, FormatOTLPProto} {
		if _, _, err := parseLogins(t, `{"user":"a"}`, f); httperr.StatusOf(err) != 415 {
			t.Errorf("logins as %s: %v, want a 415", f, err)
		}
	}
	if _, _, err := parseLogins(t, `[{"user":"a"}`, FormatJSONArray); httperr.StatusOf(err) != 400 {
		t.Errorf("broken array: %v, want a 400", err)
	}
}

// An emit error that group.IsRejected rejects that attempt alone; any
// other ends parsing and is returned.
func TestLoginEmitError(t *testing.T) {
	body := "{\"user\":\"a\"}\n{\"user\":\"old\"}\n{\"user\":\"b\"}"
	for _, tc := range []struct {
		name  string
		err   error
		calls int
	}{
		{"rejected", &group.Rejected{Reason: "cannot accept login: older than the retention"}, 3},
		{"ends parsing", errors.New("cannot reserve memory"), 2},
	} {
		calls := 0
		res, err := NewParser().ParseLogins([]byte(body), FormatNDJSON, Defaults{Now: now}, func(l *login.Attempt) error {
			calls++
			if string(l.User) == "old" {
				return tc.err
			}
			return nil
		})
		if calls != tc.calls {
			t.Errorf("%s: emit called %d times, want %d", tc.name, calls, tc.calls)
		}
		if tc.calls == 2 {
			if err != tc.err || res.Accepted != 1 {
				t.Errorf("%s: %v %+v, want emit's error after 1 accepted", tc.name, err, res)
			}
			continue
		}
		if err != nil || res.Accepted != 2 || res.Rejected != 1 || res.Errors[0].Line != 2 || res.Errors[0].Error != tc.err.Error() {
			t.Errorf("%s: %v %+v, want line 2 rejected with emit's error", tc.name, err, res)
		}
	}
}

func TestParseLoginsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	body := []byte(loginBody(100))
	p := NewParser()
	d := Defaults{Now: now}
	emit := func(*login.Attempt) error { return nil }
	p.ParseLogins(body, FormatNDJSON, d, emit)
	if allocs := testing.AllocsPerRun(20, func() { p.ParseLogins(body, FormatNDJSON, d, emit) }); allocs != 0 {
		t.Fatalf("ParseLogins allocates %v times per batch, want 0", allocs)
	}
}

func loginBody(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"ts":"2026-11-21T18:04:%02dZ","user":"user%d@example.com","success":%v,"ip":"10.1.%d.%d","ua":"Mozilla/5.0 (X11; Linux x86_64)","method":"password"}`+"\n",
			i%60, i%5000, i%7 != 0, i%256, i%199)
	}
	return b.String()
}

func BenchmarkParseLogins(b *testing.B) {
	body := []byte(loginBody(1000))
	p := GetParser()
	d := Defaults{Now: now}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		if _, err := p.ParseLogins(body, FormatNDJSON, d, func(*login.Attempt) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, 1000, benchcpu.Start()-cpu)
}

func FuzzParseLogins(f *testing.F) {
	f.Add([]byte(loginBody(3)), false)
	f.Add([]byte(`[{"user":"a","success":"true","x":[1,{"y":null}]},{"user":""}]`), true)
	f.Fuzz(func(t *testing.T, body []byte, array bool) {
		format := FormatNDJSON
		if array {
			format = FormatJSONArray
		}
		p := GetParser()
		defer PutParser(p)
		emitted := 0
		res, err := p.ParseLogins(body, format, Defaults{Now: now}, func(l *login.Attempt) error {
			emitted++
			if len(l.User) == 0 || len(l.ID) == 0 || l.Time < minTime || l.Time > maxTime {
				t.Fatalf("emitted an invalid login %+v", l)
			}
			if len(l.Props) > 0 && !validJSON(l.Props) {
				t.Fatalf("props are not valid JSON: %q", l.Props)
			}
			return nil
		})
		checkResult(t, res, err, emitted)
	})
}
