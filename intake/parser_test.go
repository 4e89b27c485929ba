package intake

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"ingest/intake/group"
	"ingest/intake/login"
	"ingest/internal/httperr"
	"ingest/logline"
)

// now is the request time the tests pass in Defaults.
var now = time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC).UnixNano()

// got is a copy of an emitted event, comparable with ==.
type got struct {
	Time    int64
	Level   logline.Level
	Service string
	Host    string
	ID      string
	Message string
	Attrs   string
}

func (g got) String() string {
	return fmt.Sprintf("{%s %q svc=%q host=%q id=%q msg=%q attrs=%s}",
		time.Unix(0, g.Time).UTC().Format(time.RFC3339Nano), g.Level, g.Service, g.Host, g.ID, g.Message, g.Attrs)
}

// parseAll runs ParseLogs and copies out every event, checking on the way
// that each one makes a line logline.Parse accepts.
func parseAll(t testing.TB, body string, f Format, d Defaults) ([]got, Result, error) {
	t.Helper()
	p := GetParser()
	defer PutParser(p)
	var out []got
	var line []byte
	res, err := p.ParseLogs([]byte(body), f, d, func(e *logline.Event) error {
		out = append(out, got{e.Time, e.Level, string(e.Service), string(e.Host), string(e.ID), string(e.Message), string(e.Attrs)})
		line = logline.AppendLine(line[:0], e)
		var back logline.Event
		if perr := logline.Parse(line, &back); perr != nil {
			t.Errorf("event makes a line logline.Parse refuses: %q: %v", line, perr)
		}
		return nil
	})
	if err == nil && res.Accepted != len(out) {
		t.Errorf("Accepted = %d, but %d events were emitted", res.Accepted, len(out))
	}
	return out, res, err
}

func ts(s string) int64 {
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return tm.UnixNano()
}

func TestEventFields(t *testing.T) {
	d := Defaults{Service: []byte("fallback"), Now: now}
	f := func(name, line string, want got) {
		t.Helper()
		evs, res, err := parseAll(t, line, FormatNDJSON, d)
		if err != nil || res.Rejected != 0 || len(evs) != 1 {
			t.Fatalf("%s: %q: err=%v result=%+v events=%d", name, line, err, res, len(evs))
		}
		g := evs[0]
		if want.ID == "" { // generated
			if len(g.ID) != IDLen {
				t.Fatalf("%s: generated id %q, want %d characters", name, g.ID, IDLen)
			}
			g.ID = ""
		}
		if want.Service == "" {
			want.Service = "fallback"
		}
		if want.Time == 0 {
			want.Time = now
		}
		if g != want {
			t.Fatalf("%s: %s\n got %v\nwant %v", name, line, g, want)
		}
	}
	f("fluent-bit", `{"date":1732212245.123456,"log":"GET /health 200"}`,
		got{Time: 1732212245123456000, Message: "GET /health 200"})
	f("vector", `{"host":"web-1","message":"disk full","source_type":"http_server","timestamp":"2024-11-21T18:04:05.123456789Z"}`,
		got{Time: ts("2024-11-21T18:04:05.123456789Z"), Host: "web-1", Message: "disk full", Attrs: `{"source_type":"http_server"}`})
	f("@timestamp with offset", `{"@timestamp":"2024-11-21T19:04:05.5+01:00","msg":"m"}`,
		got{Time: ts("2024-11-21T18:04:05.5Z"), Message: "m"})
	f("space, no zone", `{"time":"2024-11-21 18:04:05","msg":"m"}`, got{Time: ts("2024-11-21T18:04:05Z"), Message: "m"})
	f("epoch s", `{"ts":1732212245,"msg":"m"}`, got{Time: 1732212245e9, Message: "m"})
	f("epoch ms", `{"ts":1732212245123,"msg":"m"}`, got{Time: 1732212245123e6, Message: "m"})
	f("epoch us", `{"ts":1732212245123456,"msg":"m"}`, got{Time: 1732212245123456e3, Message: "m"})
	f("epoch ns", `{"ts":1732212245123456789,"msg":"m"}`, got{Time: 1732212245123456789, Message: "m"})
	f("epoch string", `{"timestamp":"1732212245.5","msg":"m"}`, got{Time: 1732212245500000000, Message: "m"})
	f("level WARNING", `{"level":"WARNING","msg":"m"}`, got{Level: logline.LevelWarn, Message: "m"})
	f("level err", `{"level":"err","msg":"m"}`, got{Level: logline.LevelError, Message: "m"})
	f("severity critical", `{"severity":"critical","msg":"m"}`, got{Level: logline.LevelFatal, Message: "m"})
	f("pino number", `{"level":50,"msg":"m"}`, got{Level: logline.LevelError, Message: "m"})
	f("syslog string", `{"level":"3","msg":"m"}`, got{Level: logline.LevelError, Message: "m"})
	f("unknown level kept", `{"level":"loud","msg":"m"}`, got{Message: "m", Attrs: `{"level":"loud"}`})
	f("unknown severity number kept", `{"msg":"m","severity":99}`, got{Message: "m", Attrs: `{"severity":99}`})
	f("service, host, id", `{"service":"api","host":"h1","id":"ev-1","msg":"m"}`,
		got{Service: "api", Host: "h1", ID: "ev-1", Message: "m"})
	f("numeric id and service", `{"service":42,"id":12345,"msg":"m"}`, got{Service: "42", ID: "12345", Message: "m"})
	f("empty service", `{"service":"","msg":"m"}`, got{Message: "m"})
	f("object service is an attr", `{"service":{"name":"x"},"msg":"m"}`, got{Message: "m", Attrs: `{"service":{"name":"x"}}`})
	f("attrs in input order", `{"b":1,"msg":"m","a":"x","c":{"z":[1,"two",null,true,false,-0.5e3]}}`,
		got{Message: "m", Attrs: `{"b":1,"a":"x","c":{"z":[1,"two",null,true,false,-0.5e3]}}`})
	f("object message", `{"message":{"a":1,"b":[true]}}`, got{Message: `{"a":1,"b":[true]}`})
	f("number message", `{"msg":42}`, got{Message: `42`})
	f("first message wins", `{"msg":"one","log":"two"}`, got{Message: "one", Attrs: `{"log":"two"}`})
	f("escapes", `{"msg":"a\nb\"c\u00e9","k\"ey":"x\ty\u0001\\q"}`,
		got{Message: "a\nb\"cé", Attrs: `{"k\"ey":"x\ty\u0001\\q"}`})
	f("NaN attr becomes a string", `{"msg":"m","n":NaN,"i":-Infinity,"j":[Infinity]}`, got{Message: "m", Attrs: `{"n":"NaN","i":"-Infinity","j":["Infinity"]}`})
	f("invalid utf-8", "{\"msg\":\"a\xffb\",\"k\":\"\xfe\"}", got{Message: "a\xffb", Attrs: `{"k":"` + "\ufffd" + `"}`})
	f("raw newline-free attrs", `{"msg":"m","deep":{"a":{"b":{"c":"line1\nline2"}}}}`,
		got{Message: "m", Attrs: `{"deep":{"a":{"b":{"c":"line1\nline2"}}}}`})
	f("null message", `{"msg":null}`, got{Message: "null"})
	f("BOM", "\xef\xbb\xbf{\"msg\":\"m\"}", got{Message: "m"})
}

func TestEventRejections(t *testing.T) {
	f := func(line, wantErr string) {
		t.Helper()
		evs, res, err := parseAll(t, line, FormatNDJSON, Defaults{Now: now})
		if err != nil || len(evs) != 0 || res.Rejected != 1 || len(res.Errors) != 1 || res.Errors[0].Line != 1 {
			t.Fatalf("%q: err=%v events=%v result=%+v, want one rejection on line 1", line, err, evs, res)
		}
		if !strings.Contains(res.Errors[0].Error, wantErr) {
			t.Fatalf("%q: error %q, want it to contain %q", line, res.Errors[0].Error, wantErr)
		}
	}
	f(`{"level":"info"}`, "line has no message, msg or log field")
	f(`{"msg":"m","ts":"yesterday"}`, `cannot parse field "ts": "yesterday" is neither RFC 3339`)
	f(`{"msg":"m","time":"2024-13-01T00:00:00Z"}`, `cannot parse field "time"`)
	f(`{"msg":"m","ts":true}`, `the timestamp is a boolean`)
	f(`{"msg":"m","ts":99999999999999999999}`, "outside the years")
	f(`{"msg":"m","date":"3000-01-01T00:00:00Z"}`, "outside the years")
	f(`{"msg":"m"`, "cannot parse JSON")
	f(`["msg"]`, "line is not a JSON object")
	f(`{"msg":"m"} {"msg":"n"}`, `unexpected '{' at byte 13, want the end of the line`)
	f(`{"msg":"m","a":+1}`, `unexpected '+' at byte 16, want a value`)
	f(`{"msg":"m","a":[1,]}`, `want a value`)
	f(`{"msg":"m","a":{"b" 1}}`, `want ':'`)
	f(`{"msg":"m","a":"x}`, `not terminated`)
	f(`{"msg":"m","a":1.}`, `want a number`)
	f(`{"msg":"m",}`, `want a quoted key`)
	f(`{"msg":"m","a":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)+`}`, `nested deeper`)
	f(`{"msg":"m","a":tru}`, `want a value`)
	f(`{"msg":{"a":}}`, `want a value`)
	f(`{"ts":{"a":1},"msg":"m"}`, `the timestamp is an object`)
	f(`xyz`, `want '{'`)
}

func TestResultAppendJSON(t *testing.T) {
	r := Result{Accepted: 2, Rejected: 1, Errors: []LineError{{Line: 3, Error: `bad "x"`}}}
	want := `{"accepted":2,"rejected":1,"errors":[{"line":3,"error":"bad \"x\""}]}`
	if got := string(r.AppendJSON(nil)); got != want {
		t.Fatalf("AppendJSON = %s, want %s", got, want)
	}
	if got := string((&Result{}).AppendJSON(nil)); got != `{"accepted":0,"rejected":0,"errors":[]}` {
		t.Fatalf("empty AppendJSON = %s", got)
	}
	want = `{"accepted":2,"rejected":1,"errors":[{"line":3,"error":"bad \"x\""}],"stored":false,"message":"in the \"WAL\"; do not resend"}`
	if got := string(r.AppendPendingJSON(nil, `in the "WAL"; do not resend`)); got != want {
		t.Fatalf("AppendPendingJSON = %s, want %s", got, want)
	}
}

func TestPutParserDropsBigBuffers(t *testing.T) {
	p := NewParser()
	big := `{"msg":"` + strings.Repeat("x", retainBytes) + `","a":"` + strings.Repeat("y", retainBytes) + `"}`
	if _, err := p.ParseLogs([]byte(big), FormatNDJSON, Defaults{Now: now}, func(*logline.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if cap(p.attrs) <= retainBytes {
		t.Fatalf("expected the attrs buffer to have grown: cap %d", cap(p.attrs))
	}
	PutParser(p)
	if p.attrs != nil {
		t.Fatalf("PutParser kept an oversized buffer: cap(attrs)=%d", cap(p.attrs))
	}
}

// The emit contract, for every log body format: an error that
// group.IsRejected rejects that event alone, with its line (or element, or
// record) number; any other error ends parsing at once and is returned.
func TestEmitErrors(t *testing.T) {
	pb, err := proto.Marshal(otlpRequest())
	if err != nil {
		t.Fatal(err)
	}
	js, err := protojson.Marshal(otlpRequest())
	if err != nil {
		t.Fatal(err)
	}
	three := `{"msg":"one"}` + "\n" + `{"msg":"two"}` + "\n" + `{"msg":"three"}`
	bodies := []struct {
		name string
		f    Format
		body string
	}{
		{"ndjson", FormatNDJSON, three},
		{"array", FormatJSONArray, "[" + strings.ReplaceAll(three, "\n", ",") + "]"},
		{"text", FormatText, "one\ntwo\nthree"},
		{"otlp protobuf", FormatOTLPProto, string(pb)}, // records 1-3 valid, 4 rejected for its time
		{"otlp json", FormatOTLPJSON, string(js)},
	}
	stop := errors.New("cannot reserve memory")
	for _, b := range bodies {
		for _, tc := range []struct {
			name string
			err  error
		}{{"rejected", &group.Rejected{Reason: "cannot accept the event: over a cap"}}, {"ends parsing", stop}} {
			calls := 0
			res, err := NewParser().ParseLogs([]byte(b.body), b.f, Defaults{Now: now}, func(*logline.Event) error {
				if calls++; calls == 2 {
					return tc.err
				}
				return nil
			})
			if tc.err == stop {
				if err != stop || calls != 2 || res.Accepted != 1 {
					t.Errorf("%s, %s: %v after %d calls, %+v; want emit's error after the second call", b.name, tc.name, err, calls, res)
				}
				continue
			}
			if err != nil || calls != 3 || res.Accepted != 2 || len(res.Errors) == 0 || res.Errors[0].Line != 2 || res.Errors[0].Error != tc.err.Error() {
				t.Errorf("%s, %s: %v after %d calls, %+v; want line 2 rejected with emit's error and the rest accepted", b.name, tc.name, err, calls, res)
			}
		}
	}
}

// Defaults.MaxRows counts every row, rejected ones too: a body of
// millions of bad lines is refused (413) at the first row past the cap,
// not parsed to its end.
func TestMaxRows(t *testing.T) {
	const max = 50
	bad := strings.Repeat("x\n", 10*max)
	var badRecords []*logspb.LogRecord
	for range 10 * max {
		badRecords = append(badRecords, &logspb.LogRecord{TimeUnixNano: math.MaxUint64})
	}
	req := &logspb.LogsData{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: badRecords}}}}}
	pb, _ := proto.Marshal(req)
	js, _ := protojson.Marshal(req)
	for _, tc := range []struct {
		name string
		f    Format
		body string
	}{
		{"ndjson", FormatNDJSON, bad},
		{"array", FormatJSONArray, "[" + strings.Repeat("1,", 10*max) + "1]"},
		{"text", FormatText, strings.Repeat("ok\n", 10*max)},
		{"otlp protobuf", FormatOTLPProto, string(pb)},
		{"otlp json", FormatOTLPJSON, string(js)},
		{"logins", 0, bad},
	} {
		var res Result
		var err error
		d := Defaults{Now: now, MaxRows: max}
		if tc.f == 0 {
			res, err = NewParser().ParseLogins([]byte(tc.body), FormatNDJSON, d, func(*login.Attempt) error { return nil })
		} else {
			res, err = NewParser().ParseLogs([]byte(tc.body), tc.f, d, func(*logline.Event) error { return nil })
		}
		if httperr.StatusOf(err) != 413 || !strings.Contains(err.Error(), "--max-events-per-request") || res.Accepted+res.Rejected != max+1 {
			t.Errorf("%s: %v after %d rows, want a 413 naming --max-events-per-request after %d", tc.name, err, res.Accepted+res.Rejected, max+1)
		}
	}
}
