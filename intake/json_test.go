package intake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"ingest/internal/benchcpu"
	"ingest/internal/httperr"
	"ingest/internal/jsonstr"
	"ingest/logline"
)

func errLines(r Result) []int {
	var l []int
	for _, e := range r.Errors {
		l = append(l, e.Line)
	}
	return l
}

func TestNDJSONLineNumbers(t *testing.T) {
	body := strings.Join([]string{
		`{"msg":"one"}`,            // 1
		`{"msg":"two"`,             // 2 broken JSON
		``,                         // 3 blank: skipped, not an error
		"   \t\r",                  // 4 blank
		`{"msg":"five"}` + "\r",    // 5 CRLF
		`{"level":"info"}`,         // 6 no message
		`[1]`,                      // 7 not an object
		`{"msg":"eight","ts":"x"}`, // 8 bad time
		`{"msg":"nine"}`,           // 9, no trailing newline
	}, "\n")
	evs, res, err := parseAll(t, body, FormatNDJSON, Defaults{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 3 || res.Rejected != 4 || fmt.Sprint(errLines(res)) != "[2 6 7 8]" {
		t.Fatalf("result %+v, want 3 accepted, lines 2 6 7 8 rejected", res)
	}
	if evs[0].Message != "one" || evs[1].Message != "five" || evs[2].Message != "nine" {
		t.Fatalf("events %v", evs)
	}
}

func TestNDJSONPrettyObject(t *testing.T) {
	body := "{\n  \"msg\": \"pretty\",\n  \"level\": \"warn\",\n  \"a\": {\n    \"b\": 1\n  }\n}\n"
	evs, res, err := parseAll(t, body, FormatNDJSON, Defaults{Now: now})
	if err != nil || res.Accepted != 1 || res.Rejected != 0 || evs[0].Message != "pretty" || evs[0].Attrs != `{"a":{"b":1}}` {
		t.Fatalf("%v %+v %v, want the indented object as one event", err, res, evs)
	}
	// Two indented objects are not NDJSON either: each line is rejected.
	_, res, _ = parseAll(t, body+body, FormatNDJSON, Defaults{Now: now})
	if res.Accepted != 0 || res.Rejected == 0 {
		t.Fatalf("%+v, want line-by-line rejections", res)
	}
}

func TestErrorsListCapped(t *testing.T) {
	var b strings.Builder
	for range 150 {
		b.WriteString("not json\n")
	}
	b.WriteString(`{"msg":"ok"}` + "\n")
	_, res, err := parseAll(t, b.String(), FormatNDJSON, Defaults{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 1 || res.Rejected != 150 || len(res.Errors) != MaxErrors ||
		res.Errors[0].Line != 1 || res.Errors[MaxErrors-1].Line != MaxErrors {
		t.Fatalf("accepted %d rejected %d listed %d, want 1, 150, %d (lines 1..%d)",
			res.Accepted, res.Rejected, len(res.Errors), MaxErrors, MaxErrors)
	}
}

func TestOverlongLine(t *testing.T) {
	body := `{"msg":"a"}` + "\n" + `{"msg":"` + strings.Repeat("x", MaxLineBytes) + `"}` + "\n" + `{"msg":"c"}`
	evs, res, err := parseAll(t, body, FormatNDJSON, Defaults{Now: now})
	if err != nil || len(evs) != 2 || res.Rejected != 1 || res.Errors[0].Line != 2 ||
		!strings.Contains(res.Errors[0].Error, "byte limit") {
		t.Fatalf("err=%v events=%d result=%+v, want line 2 rejected as too long", err, len(evs), res)
	}
}

func TestJSONArray(t *testing.T) {
	f := func(body string, wantMsgs string, wantErrLines string) {
		t.Helper()
		evs, res, err := parseAll(t, body, FormatJSONArray, Defaults{Now: now})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var msgs []string
		for _, e := range evs {
			msgs = append(msgs, e.Message)
		}
		if strings.Join(msgs, ",") != wantMsgs || fmt.Sprint(errLines(res)) != wantErrLines || res.Rejected != len(res.Errors) {
			t.Fatalf("%s: messages %q errors %+v, want %q and lines %s", body, msgs, res.Errors, wantMsgs, wantErrLines)
		}
	}
	f(`[]`, "", "[]")
	f(" \n[ ] \n", "", "[]")
	f(`[{"msg":"a"}]`, "a", "[]")
	f(`[{"date":1732212245.1,"log":"a"},{"date":1732212245.2,"log":"b"}]`, "a,b", "[]")
	f(`[{"msg":"a"}, 5, {"log":"b"}, {"msg":tru}, "s", {"msg":"c"}, [{"msg":"x"}]]`, "a,b,c", "[2 4 5 7]")
	f(`[{"msg":"]}\"[{"},{"msg":"\\"}]`, `]}"[{,\`, "[]")
	f(`[{"msg":"a"},,{"msg":"b"},]`, "a,b", "[2 4]")
	f("[\n  {\"msg\": \"pretty\",\n   \"n\": [1, 2]}\n]", "pretty", "[]")
}

func TestJSONArrayFraming(t *testing.T) {
	for _, body := range []string{
		`{"msg":"a"}`, `[{"msg":"a"}`, `[{"msg":"a"`, `[{"msg":"a}]`, `[{"msg":"a"} {"msg":"b"}]`,
		`[{"msg":"a"}] trailing`, `[`, `[{"msg":"a"},`,
	} {
		p := GetParser()
		emitted := 0
		_, err := p.ParseLogs([]byte(body), FormatJSONArray, Defaults{Now: now}, func(*logline.Event) error { emitted++; return nil })
		PutParser(p)
		if httperr.StatusOf(err) != 400 || emitted != 0 {
			t.Errorf("%s: err=%v emitted=%d, want a 400 and nothing emitted", body, err, emitted)
		}
	}
}

// benchBody builds n realistic events of about 200 bytes each.
func benchBody(n int) []byte {
	levels := []string{"info", "debug", "warn", "error"}
	var b []byte
	for i := range n {
		b = fmt.Appendf(b, `{"ts":"2026-11-21T18:04:%02d.%06dZ","level":"%s","service":"checkout","host":"web-%d",`+
			`"msg":"user u%d logged in from 10.0.%d.%d via password","user":"u%d","latency_ms":%d,"path":"/api/v1/login"}`+"\n",
			i%60, i*7919%1000000, levels[i%4], i%32, i, i%256, i%200, i, i%500)
	}
	return b
}

func TestParseLogsNDJSONAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	body := benchBody(1000)
	p := NewParser()
	d := Defaults{Service: []byte("svc"), Now: now}
	n := 0
	emit := func(e *logline.Event) error { n++; return nil }
	run := func() {
		if _, err := p.ParseLogs(body, FormatNDJSON, d, emit); err != nil {
			t.Fatal(err)
		}
	}
	run() // warm up the scratch buffers
	if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
		t.Fatalf("ParseLogs allocates %v times per 1,000-event batch, want 0", allocs)
	}
	if n != 22*1000 { // the warm-up, AllocsPerRun's own warm-up, 20 runs
		t.Fatalf("emitted %d events, want %d", n, 22*1000)
	}
	// The other line formats share the path.
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	array := []byte("[" + strings.Join(lines, ",") + "]")
	for _, tc := range []struct {
		f    Format
		body []byte
	}{{FormatJSONArray, array}, {FormatText, body}} {
		p.ParseLogs(tc.body, tc.f, d, emit)
		if allocs := testing.AllocsPerRun(20, func() { p.ParseLogs(tc.body, tc.f, d, emit) }); allocs != 0 {
			t.Fatalf("ParseLogs(%s) allocates %v times per batch, want 0", tc.f, allocs)
		}
	}
	// Events without an id get a generated one; that must not allocate either.
	noID := []byte(strings.Repeat(`{"msg":"m","a":1}`+"\n", 100))
	p.ParseLogs(noID, FormatNDJSON, d, emit)
	if allocs := testing.AllocsPerRun(20, func() { p.ParseLogs(noID, FormatNDJSON, d, emit) }); allocs != 0 {
		t.Fatalf("ParseLogs with generated ids allocates %v times per batch, want 0", allocs)
	}
}

func BenchmarkParseLogsNDJSON(b *testing.B) {
	body := benchBody(1000)
	p := GetParser()
	d := Defaults{Service: []byte("svc"), Now: now}
	var sink int
	emit := func(e *logline.Event) error { sink += len(e.Message); return nil }
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		if _, err := p.ParseLogs(body, FormatNDJSON, d, emit); err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, 1000, benchcpu.Start()-cpu)
}

// reportEvents adds events/s and wall and CPU nanoseconds per event.
func reportEvents(b *testing.B, perOp int, cpu time.Duration) {
	events := float64(b.N) * float64(perOp)
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/events, "cpu-ns/event")
	}
}

// BenchmarkParseEncodeUnicode parses events with non-ASCII text in the
// message and an attribute (raw UTF-8, no escapes, as the load generator
// and many real services send) and encodes each as its stored line: the
// request's whole parse-and-encode step.
func BenchmarkParseEncodeUnicode(b *testing.B) {
	body := bytes.ReplaceAll(benchBody(1000), []byte(" via password"), []byte(" via café → ✓ naïve"))
	body = bytes.ReplaceAll(body, []byte(`"path":"/api/v1/login"`), []byte(`"path":"/api/v1/café"`))
	benchParseEncode(b, body)
}

// benchParseEncode parses body (NDJSON, every line a valid event) and
// encodes each event as its stored line, as a request does.
func benchParseEncode(b *testing.B, body []byte) {
	events := bytes.Count(body, []byte("\n"))
	p := GetParser()
	d := Defaults{Service: []byte("svc"), Now: now}
	var enc logline.Encoder
	var lines []byte
	emit := func(e *logline.Event) error { lines = enc.AppendLine(lines, e); return nil }
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		lines = lines[:0]
		res, err := p.ParseLogs(body, FormatNDJSON, d, emit)
		if err != nil || res.Accepted != events {
			b.Fatalf("accepted %d of %d: %v %v", res.Accepted, events, err, res.Errors)
		}
	}
	reportEvents(b, events, benchcpu.Start()-cpu)
}

func BenchmarkParseLogsNDJSONParallel(b *testing.B) {
	body := benchBody(1000)
	d := Defaults{Service: []byte("svc"), Now: now}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	b.RunParallel(func(pb *testing.PB) {
		var sink int
		emit := func(e *logline.Event) error { sink += len(e.Message); return nil }
		for pb.Next() {
			p := GetParser()
			if _, err := p.ParseLogs(body, FormatNDJSON, d, emit); err != nil {
				b.Error(err)
			}
			PutParser(p)
		}
	})
	reportEvents(b, 1000, benchcpu.Start()-cpu)
}

func BenchmarkParseLogsJSONArray(b *testing.B) {
	lines := strings.Split(strings.TrimSpace(string(benchBody(1000))), "\n")
	body := []byte("[" + strings.Join(lines, ",") + "]")
	p := GetParser()
	d := Defaults{Service: []byte("svc"), Now: now}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		if _, err := p.ParseLogs(body, FormatJSONArray, d, func(*logline.Event) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, 1000, benchcpu.Start()-cpu)
}

// checkResult checks the invariants of every Result.
func checkResult(t *testing.T, res Result, err error, emitted int) {
	t.Helper()
	if err != nil {
		if s := httperr.StatusOf(err); s != 400 && s != 415 {
			t.Fatalf("error %v has status %d", err, s)
		}
		if emitted != 0 {
			t.Fatalf("%d events emitted before a whole-body error", emitted)
		}
		return
	}
	if res.Accepted != emitted {
		t.Fatalf("Accepted = %d, emitted %d", res.Accepted, emitted)
	}
	if len(res.Errors) > MaxErrors || len(res.Errors) > res.Rejected || len(res.Errors) < min(res.Rejected, MaxErrors) {
		t.Fatalf("%d errors listed for %d rejections", len(res.Errors), res.Rejected)
	}
	last := 0
	for _, e := range res.Errors {
		if e.Line <= last || e.Error == "" {
			t.Fatalf("errors out of order or empty: %+v", res.Errors)
		}
		last = e.Line
	}
}

// validJSON reports whether b is valid JSON (what attrs must always be).
func validJSON(b []byte) bool { return json.Valid(b) && utf8.Valid(b) }

func FuzzParseLogs(f *testing.F) {
	f.Add([]byte(benchBody(3)), uint8(0))
	f.Add([]byte(`[{"date":1732212245.123,"log":"x"},{"msg":{"a":[1,"\u00e9\ud83d\ude00"]}},5]`), uint8(1))
	f.Add([]byte("plain\r\ntext\n\n"), uint8(2))
	f.Add([]byte(`{"msg":"a\\q\"","level":"loud","x":NaN,"ts":"2026-11-21 18:04:05,5"}`), uint8(0))
	pb, _ := proto.Marshal(otlpRequest())
	f.Add(pb, uint8(3))
	js, _ := protojson.Marshal(otlpRequest())
	f.Add(js, uint8(4))
	formats := []Format{FormatNDJSON, FormatJSONArray, FormatText, FormatOTLPProto, FormatOTLPJSON}
	f.Fuzz(func(t *testing.T, body []byte, fi uint8) {
		p := GetParser()
		defer PutParser(p)
		emitted := 0
		var line []byte
		res, err := p.ParseLogs(body, formats[int(fi)%len(formats)], Defaults{Now: now}, func(e *logline.Event) error {
			emitted++
			if len(e.Attrs) > 0 && !validJSON(e.Attrs) {
				t.Fatalf("attrs are not valid JSON: %q", e.Attrs)
			}
			line = logline.AppendLine(line[:0], e)
			var back logline.Event
			if err := logline.Parse(line, &back); err != nil {
				t.Fatalf("event makes a line logline.Parse refuses: %q: %v", line, err)
			}
			want := e.Time - e.Time%100 // lines keep 100 ns ticks, rounding down
			if e.Time%100 < 0 {
				want -= 100
			}
			if back.Time != want {
				t.Fatalf("time changed through the line: %d -> %d", e.Time, back.Time)
			}
			return nil
		})
		checkResult(t, res, err, emitted)
	})
}

// rewriteAttrs builds an event's attrs the plain way, every member re-written
// by jsonstr.AppendValue, as the reference for the members attrAt copies whole.
func rewriteAttrs(p *Parser, b []byte) (attrs []byte, bad string) {
	p.ev.Reset()
	p.beginAttrs(b)
	var seen seenFields
	bad = p.walkObject(b, func(key, rawKey []byte, keyFlags jsonstr.Flags, start, i int) (int, string) {
		if end, reason, taken := p.eventFieldAt(b, key, i, &seen); taken {
			return end, reason
		}
		if len(attrs) == 0 {
			attrs = append(attrs, '{')
		} else {
			attrs = append(attrs, ',')
		}
		attrs = append(jsonstr.AppendRaw(attrs, rawKey, keyFlags), ':')
		var end int
		var reason string
		attrs, end, reason = jsonstr.AppendValue(attrs, b, i, 0)
		return end, reason
	})
	if len(attrs) > 0 {
		attrs = append(attrs, '}')
	}
	return attrs, bad
}

func TestAttrsCopiedAsRewritten(t *testing.T) {
	for _, line := range attrSeeds {
		checkAttrsCopy(t, []byte(line))
	}
}

var attrSeeds = []string{
	`{"msg":"m","a":1,"b":"x","c":[1,2,{"d":null}],"e":{"f":true,"g":false}}`,
	`{"a":1,"msg":"m","b":2,"level":"info","c":3}`,
	`{"a" : 1, "b":2 ,"msg":"m","c":{ "x":1},"d":[ 1 ],"e":[1 ,2]}`,
	`{"a":"\u00e9","b":"tab\tin","c":"é","d":"bad\xff","e":"\q","msg":"m"}`,
	`{"a\"k":1,"msg":"m","x":NaN,"y":-Infinity,"z":Infinity,"w":-1.5e3}`,
	`{"msg":"m","level":"loud","level":"info","ts":"2026-11-21T18:04:05Z","ts":5,"n":{"":[]},"o":{}}`,
	`{"msg":"m","a":{"b":{"c":[[[]]]}},"bad":01}`,
	`{"msg":"m","a":tru}`,
	`{"msg":"m","a":[1,2}`,
	`{"msg":"m","a":"x"  }`,
	`{"service":{"x":1},"host":[1],"id":"","msg":"m","k":-0}`,
	`{"msg":"café → ✓ naïve","ä":"ö","k":{"é":["✓",1]},"e":"a\"b\u00e9\/"}`,
	"{\"msg\":\"bad \xff utf8\",\"k\":\"bad \xfe\",\"\xff\":1}",
}

func checkAttrsCopy(t *testing.T, line []byte) {
	t.Helper()
	p := NewParser()
	p.begin(&Defaults{Now: now})
	bad := p.eventFromLine(line)
	got := append([]byte(nil), p.ev.Attrs...)
	ref := NewParser()
	ref.begin(&Defaults{Now: now})
	want, refBad := rewriteAttrs(ref, line)
	if refBad != "" {
		if bad != refBad {
			t.Fatalf("line %q: rejected with %q, want %q", line, bad, refBad)
		}
		return
	}
	if bad == "" && !bytes.Equal(got, want) {
		t.Fatalf("line %q: attrs %q, want %q", line, got, want)
	}
	// A message the parser lets the line copy is quoted the same either way.
	if bad == "" && p.ev.MessagePlain {
		copied := logline.AppendLine(nil, &p.ev)
		p.ev.MessagePlain = false
		if quoted := logline.AppendLine(nil, &p.ev); !bytes.Equal(copied, quoted) {
			t.Fatalf("line %q: copying the message gives %q, quoting it %q", line, copied, quoted)
		}
	}
}

func FuzzAttrsCopiedAsRewritten(f *testing.F) {
	for _, s := range attrSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) > MaxLineBytes {
			return
		}
		checkAttrsCopy(t, line)
	})
}

// BenchmarkParseEncodeLoadgen parses and encodes 300 events as the load
// generator sends them (testdata/loadgen.ndjson, one of its bodies: about
// 300 B and a dozen fields per event, its mix of time and level keys), the
// request step that dominates the server's CPU under that load.
func BenchmarkParseEncodeLoadgen(b *testing.B) {
	body, err := os.ReadFile("testdata/loadgen.ndjson")
	if err != nil {
		b.Fatal(err)
	}
	benchParseEncode(b, body)
}
