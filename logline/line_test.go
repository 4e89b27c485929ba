package logline

import (
	"bytes"
	"ingest/internal/benchcpu"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func mustTime(t testing.TB, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixNano()
}

func TestAppendLine(t *testing.T) {
	f := func(e Event, want string) {
		t.Helper()
		got := string(AppendLine(nil, &e))
		if got != want {
			t.Fatalf("AppendLine\n got %q\nwant %q", got, want)
		}
	}
	f(Event{
		Time: mustTime(t, "2026-11-21T18:04:05.12345678Z"), Level: LevelError,
		Service: []byte("api"), Host: []byte("web-1"), ID: []byte("01JDQ8"),
		Message: []byte(`disk "/var" full; retrying`), Attrs: []byte(`{"user":"u1","code":507}`),
	}, `1.0;2026-11-21T18:04:05.1234567Z;error;api;web-1;01JDQ8;"disk \"/var\" full; retrying";{"user":"u1","code":507}`+"\n")
	f(Event{Time: 0}, "1.0;1970-01-01T00:00:00.0000000Z;;;;;\"\";{}\n")
	f(Event{Time: mustTime(t, "2024-02-29T23:59:59.9999999Z"), Service: []byte("a b/c;d"), Message: []byte("x\ny\x01\xff")},
		"1.0;2024-02-29T23:59:59.9999999Z;;a_b_c_d;;;\"x\\ny\\u0001\ufffd\";{}\n")
	f(Event{Time: 0, Service: []byte(".."), Host: []byte("."), ID: []byte("a.b")}, "1.0;1970-01-01T00:00:00.0000000Z;;__;_;a.b;\"\";{}\n")
}

func TestAppendTimeMatchesStdlib(t *testing.T) {
	for _, s := range []string{
		"1970-01-01T00:00:00Z", "1969-12-31T23:59:59.9999999Z", "2000-02-29T12:00:00.5Z",
		"2100-03-01T00:00:00Z", "9999-12-31T23:59:59.9999999Z", "0001-01-01T00:00:00Z", "2026-11-21T18:04:05.1234567Z",
	} {
		ns := mustTime(t, s)
		want := time.Unix(0, ns).UTC().Format(TimeLayout)
		if got := string(AppendTime(nil, ns)); got != want {
			t.Errorf("AppendTime(%s) = %s, want %s", s, got, want)
		}
	}
}

func TestParseRoundTrip(t *testing.T) {
	in := Event{
		Time: mustTime(t, "2026-11-21T18:04:05.1234567Z"), Level: LevelWarn,
		Service: []byte("svc"), Host: []byte("h"), ID: []byte("id1"),
		Message: []byte("ünïcode \"q\" \\ ; \t\n \U0001F600"), Attrs: []byte(`{"a":[1,2]}`),
	}
	line := AppendLine(nil, &in)
	var out Event
	if err := Parse(line, &out); err != nil {
		t.Fatal(err)
	}
	if out.Time != in.Time || out.Level != in.Level || !bytes.Equal(out.Service, in.Service) ||
		!bytes.Equal(out.Host, in.Host) || !bytes.Equal(out.ID, in.ID) ||
		!bytes.Equal(out.Message, in.Message) || !bytes.Equal(out.Attrs, in.Attrs) {
		t.Fatalf("round trip changed the event:\n in %+v\nout %+v", in, out)
	}
}

func TestParseErrors(t *testing.T) {
	for _, line := range []string{
		"", "1.0;x", "2.0;2026-11-21T18:04:05.1234567Z;;a;b;c;\"m\";{}",
		"1.0;2026-11-21 18:04:05;;a;b;c;\"m\";{}",
		"1.0;2026-11-21T18:04:05.1234567Z;loud;a;b;c;\"m\";{}",
		"1.0;2026-11-21T18:04:05.1234567Z;;a;b;c;m;{}",
		"1.0;2026-11-21T18:04:05.1234567Z;;a;b;c;\"m;{}",
		"1.0;2026-11-21T18:04:05.1234567Z;;a;b;c;\"m\";",
		"1.0;2026-11-21T18:04:05.1234567Z;;a;b;c;\"m\\q\";{}",
	} {
		var e Event
		if err := Parse([]byte(line), &e); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", line)
		}
	}
}

func TestParseLevel(t *testing.T) {
	f := func(in string, want Level, wantOK bool) {
		t.Helper()
		got, ok := ParseLevel([]byte(in))
		if got != want || ok != wantOK {
			t.Fatalf("ParseLevel(%q) = %v,%v want %v,%v", in, got, ok, want, wantOK)
		}
	}
	f("WARNING", LevelWarn, true)
	f("err", LevelError, true)
	f("Critical", LevelFatal, true)
	f("info", LevelInfo, true)
	f("3", LevelError, true)
	f("7", LevelDebug, true)
	f("30", LevelInfo, true)
	f("", LevelNone, true)
	f("loud", LevelNone, false)
	f("99", LevelNone, false)
	f(strings.Repeat("x", 40), LevelNone, false)
}

func TestLevelSet(t *testing.T) {
	s := LevelSet(0).Add(LevelWarn).Add(LevelError).Add(LevelInfo).Add(LevelNone)
	if got := s.String(); got != "error,info,warn" {
		t.Fatalf("LevelSet.String = %q", got)
	}
	if ParseLevelSet(s.String()) != s&^(1<<LevelNone) {
		t.Fatal("ParseLevelSet does not reverse String")
	}
}

func TestHourPrefix(t *testing.T) {
	if got := string(HourPrefix(nil, mustTime(t, "2014-07-31T18:59:59.9Z"))); got != "2014/07/31/1800" {
		t.Fatalf("HourPrefix = %q", got)
	}
}

func FuzzLineRoundTrip(f *testing.F) {
	f.Add(int64(0), uint8(3), "api", "web-1", "id", "hello; \"world\"\n", `{"a":1}`)
	f.Add(int64(-1), uint8(0), "", "", "", "\xff\x00", "")
	f.Fuzz(func(t *testing.T, ts int64, lvl uint8, svc, host, id, msg, attrs string) {
		e := Event{Time: ts, Level: Level(lvl % uint8(numLevels)), Service: []byte(svc), Host: []byte(host), ID: []byte(id), Message: []byte(msg)}
		if attrs != "" { // attrs come from the JSON encoder; only shape matters here
			e.Attrs = []byte(`{"k":` + string(AppendQuoted(nil, []byte(attrs))) + `}`)
		}
		line := AppendLine(nil, &e)
		if bytes.Count(line, []byte{'\n'}) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("line is not one line: %q", line)
		}
		var out Event
		if err := Parse(line, &out); err != nil {
			t.Fatalf("Parse(%q): %v", line, err)
		}
		wantMsg := replaceInvalidUTF8(msg)
		if out.Time != ts/100*100-boolInt(ts%100 < 0)*100 || out.Level != e.Level ||
			!bytes.Equal(out.Service, AppendToken(nil, e.Service)) || !bytes.Equal(out.Host, AppendToken(nil, e.Host)) ||
			!bytes.Equal(out.ID, AppendToken(nil, e.ID)) || !bytes.Equal(out.Message, wantMsg) || !bytes.Equal(out.Attrs, e.Attrs) {
			t.Fatalf("round trip changed the event:\nline %q\n in %+v\nout %+v", line, e, out)
		}
	})
}

// replaceInvalidUTF8 replaces each byte that is not part of valid UTF-8 by
// U+FFFD, as AppendQuoted does.
func replaceInvalidUTF8(s string) []byte {
	var out []byte
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\ufffd"...)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return out
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("1.0;2026-11-21T18:04:05.1234567Z;error;api;web-1;01JDQ8;\"m\";{}"))
	f.Fuzz(func(t *testing.T, line []byte) {
		var e Event
		if Parse(line, &e) != nil {
			return
		}
		// Whatever parses must format to a line that parses to the same event.
		again := AppendLine(nil, &e)
		var e2 Event
		if err := Parse(again, &e2); err != nil {
			t.Fatalf("reformatted line does not parse: %q: %v", again, err)
		}
		if e2.Time != e.Time || !bytes.Equal(e2.Message, replaceInvalidUTF8(string(e.Message))) {
			t.Fatalf("reparse differs: %+v vs %+v", e, e2)
		}
	})
}

func TestAppendLineAllocs(t *testing.T) {
	e := Event{Time: 1, Level: LevelInfo, Service: []byte("api"), Host: []byte("h"), ID: []byte("x"), Message: []byte("hello \"x\""), Attrs: []byte(`{"a":1}`)}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendLine(buf[:0], &e) }); n != 0 {
		t.Fatalf("AppendLine allocates %v times per call, want 0", n)
	}
	var out Event
	if n := testing.AllocsPerRun(100, func() { _ = Parse(buf, &out) }); n != 0 {
		t.Fatalf("Parse allocates %v times per call, want 0", n)
	}
}

func BenchmarkAppendLine(b *testing.B) {
	e := Event{Time: 1763748245123456700, Level: LevelInfo, Service: []byte("checkout"), Host: []byte("web-17"),
		ID: []byte("01JDQ8ZK3M9X2V7B4N6P8R0T2W"), Message: []byte(strings.Repeat("user logged in from 10.0.0.1 ", 4)),
		Attrs: []byte(`{"user":"u123","latency_ms":42}`)}
	buf := AppendLine(nil, &e)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		buf = AppendLine(buf[:0], &e)
	}
	benchcpu.Report(b, cpu, 1, "line")
}

func TestMessagePlainMatchesQuoting(t *testing.T) {
	for _, m := range []string{"plain ascii message, 42% done: ok", "café → ✓ naïve, ünïcödé"} {
		e := Event{Message: []byte(m)}
		quoted := AppendLine(nil, &e)
		e.MessagePlain = true
		if plain := AppendLine(nil, &e); !bytes.Equal(plain, quoted) {
			t.Fatalf("MessagePlain changes the line:\n%q\n%q", plain, quoted)
		}
	}
}

func TestAppendService(t *testing.T) {
	cases := []struct{ in, want string }{
		{"checkout", "checkout"},
		{"../../etc", "_._.._etc"},
		{"..", "__"},
		{".hidden", "_hidden"},
		{"a/b", "a_b"},
		{"", ""},
		{strings.Repeat("s", 1000), strings.Repeat("s", MaxServiceLen)},
	}
	for _, tc := range cases {
		if got := string(AppendService([]byte("x/"), []byte(tc.in))); got != "x/"+tc.want {
			t.Errorf("AppendService(%q) = %q, want %q", tc.in, got, "x/"+tc.want)
		}
	}
}

// An Encoder writes the same stamps as AppendTime whatever the order of
// the times: within a minute, across minutes, hours, days and years, before
// 1970 and for years AppendTime formats the long way.
func TestEncoderTimeMatchesAppendTime(t *testing.T) {
	base := time.Date(2026, 11, 21, 23, 59, 58, 999999999, time.UTC).UnixNano()
	times := []int64{base, base + 1, base + 100, base + 1e9, base + 2e9, base - 1, base + 61e9, base,
		0, -1, -99, -100, -1e9, -60e9 - 1, -60e9, 1, 59e9 + 999999999, 60e9,
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).UnixNano(),
		time.Date(1677, 9, 22, 0, 0, 0, 0, time.UTC).UnixNano(), math.MinInt64, math.MaxInt64, base + 5e8}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		times = append(times, base+r.Int64N(300e9)-150e9)
	}
	var enc Encoder
	for _, ts := range times {
		want := AppendTime([]byte("x"), ts)
		if got := enc.AppendTime([]byte("x"), ts); !bytes.Equal(got, want) {
			t.Fatalf("Encoder.AppendTime(%d) = %q, want %q", ts, got, want)
		}
	}
	e := Event{Time: base, Level: LevelWarn, Service: []byte("a/b"), Host: []byte(".."), ID: []byte("x"), Message: []byte("m\n"), Attrs: []byte(`{"k":1}`)}
	if got, want := enc.AppendLine(nil, &e), AppendLine(nil, &e); !bytes.Equal(got, want) {
		t.Fatalf("Encoder.AppendLine = %q, want %q", got, want)
	}
}

func TestAppendToken(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""}, {"web-17", "web-17"}, {"a b/c", "a_b_c"}, {".", "_"}, {"..", "__"}, {"...", "___"},
		{".a", ".a"}, {"a.", "a."}, {"a b", "a_b"}, {"é", "__"}, {"web-17\x00", "web-17_"}, {strings.Repeat("h", 300), strings.Repeat("h", MaxTokenLen)},
		{strings.Repeat(".", 300), strings.Repeat("_", MaxTokenLen)},
	} {
		if got := string(AppendToken([]byte("x;"), []byte(tc.in))); got != "x;"+tc.want {
			t.Errorf("AppendToken(%q) = %q, want %q", tc.in, got, "x;"+tc.want)
		}
		if got, want := IsToken([]byte(tc.in)), tc.in == tc.want; got != want {
			t.Errorf("IsToken(%q) = %v, want %v", tc.in, got, want)
		}
	}
}

// TestIsTokenSeesEveryByte: one byte outside the token set, at any place
// of a long name (IsToken looks at 8 bytes per step, then the rest one
// by one), makes it no token.
func TestIsTokenSeesEveryByte(t *testing.T) {
	name := []byte("api-mcj4p748w-tadqr.x") // 21 bytes: two steps and a tail
	if !IsToken(name) {
		t.Fatalf("IsToken(%q) = false", name)
	}
	for i := range name {
		for _, c := range []byte{';', ' ', '"', 0, 0x80, '/'} {
			bad := bytes.Clone(name)
			bad[i] = c
			if IsToken(bad) {
				t.Errorf("IsToken(%q) = true with %q at byte %d", bad, c, i)
			}
		}
	}
}

// FuzzAppendToken: what AppendToken writes is a token, and it writes a
// name unchanged exactly when IsToken says so.
func FuzzAppendToken(f *testing.F) {
	for _, s := range []string{"web-17", "a b", "..", "api-mcj4p748w-tadqr", "x;y", "é"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := AppendToken(nil, in)
		if !IsToken(out) {
			t.Fatalf("AppendToken(%q) = %q, not a token", in, out)
		}
		if len(in) <= MaxTokenLen && IsToken(in) != bytes.Equal(out, in) {
			t.Fatalf("IsToken(%q) = %v, but AppendToken gives %q", in, IsToken(in), out)
		}
	})
}

func BenchmarkEncoderAppendLine(b *testing.B) {
	e := Event{Time: 1763748245123456700, Level: LevelInfo, Service: []byte("checkout"), Host: []byte("web-17"),
		ID: []byte("01JDQ8ZK3M9X2V7B4N6P8R0T2W"), Message: []byte(strings.Repeat("user logged in from 10.0.0.1 ", 4)),
		Attrs: []byte(`{"user":"u123","latency_ms":42}`)}
	var enc Encoder
	buf := enc.AppendLine(nil, &e)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		e.Time += 1e6
		buf = enc.AppendLine(buf[:0], &e)
	}
	benchcpu.Report(b, cpu, 1, "line")
}
