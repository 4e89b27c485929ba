package query

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"ingest/internal/jsonstr"
	"ingest/logline"
)

func TestAppendNDJSON(t *testing.T) {
	ts := time.Date(2026, 11, 21, 18, 4, 5, 123456700, time.UTC).UnixNano()
	f := func(attrs, want string) {
		t.Helper()
		e := logline.Event{Time: ts, Level: logline.LevelError, Service: []byte("api"), Host: []byte("web-1"), ID: []byte("01JDQ8"),
			Message: []byte("disk \"/var\" full;\n retrying"), Attrs: []byte(attrs)}
		got := string(AppendNDJSON(nil, &e))
		if got != want+"\n" {
			t.Fatalf("AppendNDJSON(attrs %s)\n got %s\nwant %s", attrs, got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("invalid JSON: %s", got)
		}
	}
	const fixed = `{"ts":"2026-11-21T18:04:05.1234567Z","level":"error","service":"api","host":"web-1","id":"01JDQ8","message":"disk \"/var\" full;\n retrying"`
	f(``, fixed+`}`)
	f(`{}`, fixed+`}`)
	f(`{"user":"u1","code":507}`, fixed+`,"user":"u1","code":507}`)
	f(`{"id":"dup","level":3,"message":{"a":[1,2.5e-3,true,null,"x\"y"]},"ts":-0.5}`,
		fixed+`,"attr.id":"dup","attr.level":3,"attr.message":{"a":[1,2.5e-3,true,null,"x\"y"]},"attr.ts":-0.5}`)
	f(`{"\u0069d":1,"hos\u0074x":2}`, fixed+`,"attr.\u0069d":1,"hos\u0074x":2}`)
	f(` { "a" : [ ] , "b" : { } } `, fixed+`,"a":[],"b":{}}`)
	// Not a well-formed object: kept whole as a string.
	// Strings are read by jsonstr's rules: what is not valid as it is gets
	// rewritten valid.
	f(`{"a":"\x","b":"`+"\xff"+`"}`, fixed+`,"a":"\\x","b":"`+"\ufffd"+`"}`)
	// Not a well-formed object: kept whole as a string.
	for _, bad := range []string{`{"a":}`, `{"a":1,}`, `[1]`, `{"a":1}x`, `{"a":01}`, `{"a":tru}`, `{"a" 1}`, `{"a":1`,
		strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200)} {
		e := logline.Event{Attrs: []byte(bad)}
		got := AppendNDJSON(nil, &e)
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatalf("attrs %q: invalid JSON %s: %v", bad, got, err)
		}
		if _, ok := m["attrs"].(string); !ok {
			t.Fatalf("attrs %q not kept as a string: %s", bad, got)
		}
	}
}

func TestAppendNDJSONAllocs(t *testing.T) {
	e := logline.Event{Time: 1, Level: logline.LevelInfo, Service: []byte("api"), Host: []byte("h"), ID: []byte("x"),
		Message: []byte("hello \"x\""), Attrs: []byte(`{"a":1,"id":"\u0041","nested":{"b":[1,2]}}`)}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendNDJSON(buf[:0], &e) }); n != 0 {
		t.Fatalf("AppendNDJSON allocates %v times per call, want 0", n)
	}
}

func FuzzAppendNDJSON(f *testing.F) {
	f.Add("m", `{"a":1,"id":"x","b":{"c":[true,null,-1.5e+2]}}`)
	f.Add("\xff\"", `{"\u0074s":"\ud800"}`)
	f.Add("", `{"a":`)
	f.Fuzz(func(t *testing.T, msg, attrs string) {
		e := logline.Event{Time: 1, Message: []byte(msg), Attrs: []byte(attrs)}
		out := AppendNDJSON(nil, &e)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON for attrs %q: %s", attrs, out)
		}
		if strings.Count(string(out), "\n") != 1 || out[len(out)-1] != '\n' {
			t.Fatalf("not one line for attrs %q: %q", attrs, out)
		}
		if json.Valid([]byte(attrs)) && strings.HasPrefix(strings.TrimSpace(attrs), "{") && strings.Contains(string(out), `"attrs":`) &&
			!strings.Contains(attrs, `"attrs"`) && strings.Count(attrs, "{")+strings.Count(attrs, "[") < jsonstr.MaxDepth {
			t.Fatalf("a valid object was not merged: %q -> %s", attrs, out)
		}
	})
}

func BenchmarkAppendNDJSON(b *testing.B) {
	e := logline.Event{Time: 1763748245123456700, Level: logline.LevelInfo, Service: []byte("checkout"), Host: []byte("web-17"),
		ID: []byte("01JDQ8ZK3M9X2V7B4N6P8R0T2W"), Message: []byte(strings.Repeat("user logged in from 10.0.0.1 ", 4)),
		Attrs: []byte(`{"user":"u123","latency_ms":42,"route":"/api/v1/cart"}`)}
	buf := AppendNDJSON(nil, &e)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendNDJSON(buf[:0], &e)
	}
}
