package es

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"ingest/internal/jsonstr"
	"ingest/logline"
)

var now = time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC).UnixNano()

// event is what a test reads of an emitted event.
type event struct {
	Time                          string
	Level, Service, Host, ID, Msg string
	Attrs                         string
}

func decode(t *testing.T, body string, r Request) ([]event, map[string]any) {
	t.Helper()
	var d Decoder
	if r.Now == 0 {
		r.Now = now
	}
	var evs []event
	err := d.Decode([]byte(body), r, func(e *logline.Event) error {
		evs = append(evs, event{Time: time.Unix(0, e.Time).UTC().Format(time.RFC3339Nano), Level: e.Level.String(),
			Service: string(e.Service), Host: string(e.Host), ID: string(e.ID), Msg: string(e.Message), Attrs: string(e.Attrs)})
		// The line must be what the event says, whatever the copy shortcuts.
		line := logline.AppendLine(nil, e)
		var back logline.Event
		if err := logline.Parse(line, &back); err != nil {
			t.Fatalf("the event's line %q does not parse: %v", line, err)
		}
		if e.Attrs != nil && !json.Valid(e.Attrs) {
			t.Fatalf("attrs %q are not valid JSON", e.Attrs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	answer := d.AppendAnswer(nil, 3*time.Millisecond)
	var m map[string]any
	if err := json.Unmarshal(answer, &m); err != nil {
		t.Fatalf("the answer %s is not JSON: %v", answer, err)
	}
	return evs, m
}

// statuses lists the answer's items as "op status".
func statuses(m map[string]any) string {
	var out []string
	items, _ := m["items"].([]any)
	for _, it := range items {
		for op, v := range it.(map[string]any) {
			out = append(out, fmt.Sprintf("%s %v", op, v.(map[string]any)["status"]))
		}
	}
	return strings.Join(out, ", ")
}

func TestDecodeMapping(t *testing.T) {
	f := func(name, body string, r Request, want ...event) {
		t.Helper()
		evs, _ := decode(t, body, r)
		if len(evs) != len(want) {
			t.Fatalf("%s: %d events, want %d: %+v", name, len(evs), len(want), evs)
		}
		for i := range want {
			w := want[i]
			g := evs[i]
			if w.ID == "" {
				if len(g.ID) != 26 {
					t.Errorf("%s: event %d has id %q, want a generated one", name, i, g.ID)
				}
				g.ID = ""
			}
			if w.Time == "" {
				w.Time = time.Unix(0, now).UTC().Format(time.RFC3339Nano)
			}
			if g != w {
				t.Errorf("%s: event %d\n got %+v\nwant %+v", name, i, g, w)
			}
		}
	}
	// Filebeat 8: nested ECS objects.
	f("filebeat", `{"create":{"_index":"filebeat-8.15.0"}}
{"@timestamp":"2026-11-21T15:04:05.123Z","message":"disk full","log":{"level":"error","file":{"path":"/var/log/app.log"},"offset":42},"host":{"name":"web-1","os":{"type":"linux"}},"service":{"name":"api","type":"go"},"agent":{"type":"filebeat","version":"8.15.0"},"ecs":{"version":"8.0.0"},"tags":["a","b"],"fields":{}}
`, Request{}, event{Time: "2026-11-21T15:04:05.123Z", Level: "error", Service: "api", Host: "web-1", Msg: "disk full",
		Attrs: `{"log.file.path":"/var/log/app.log","log.offset":42,"host.os.type":"linux","service.type":"go","agent.type":"filebeat","agent.version":"8.15.0","ecs.version":"8.0.0","tags":["a","b"],"fields":{}}`})
	// The same names written with dots.
	f("dotted", `{"index":{}}
{"log.level":"WARN","host.name":"web-2","service.name":"billing","message":"slow","http.request.method":"GET"}
`, Request{}, event{Level: "warn", Service: "billing", Host: "web-2", Msg: "slow", Attrs: `{"http.request.method":"GET"}`})
	// Service from the action's index, then the path's, then "default"; the id from _id.
	f("index names", `{"create":{"_index":"shop","_id":"doc-1"}}
{"message":"a"}
{"index":{"_id":"doc-2"}}
{"message":"b"}
`, Request{Index: []byte("from-path")},
		event{Service: "shop", ID: "doc-1", Msg: "a"}, event{Service: "from-path", ID: "doc-2", Msg: "b"})
	f("no index", `{"create":{}}`+"\n"+`{"message":"c","service":"","level":"loud"}`+"\n", Request{},
		event{Service: "default", Msg: "c", Attrs: `{"level":"loud"}`})
	// Fluent Bit's tail input: the line under log, a plain host; epoch milliseconds.
	f("fluent-bit", `{"create":{"_index":"fluent-bit"}}
{"@timestamp":"2026-11-21T15:04:05.000Z","log":"card declined","host":"fb-1","level":"ERROR","user":"u9"}
{"create":{"_index":"fluent-bit"}}
{"@timestamp":1795273445123,"msg":"first","log":"second"}
`, Request{}, event{Time: "2026-11-21T15:04:05Z", Level: "error", Service: "fluent-bit", Host: "fb-1", Msg: "card declined", Attrs: `{"user":"u9"}`},
		event{Time: "2026-11-21T15:04:05.123Z", Service: "fluent-bit", Msg: "first", Attrs: `{"log":"second"}`})
	// Vector's bulk mode: timestamp, not @timestamp; @timestamp wins when both are there.
	f("vector", `{"index":{"_index":"vector-2026.11.21"}}
{"host":"vec-1","message":"m","source_type":"file","timestamp":"2026-11-21T15:04:05.5Z"}
{"index":{"_index":"vector-2026.11.21"}}
{"timestamp":"2026-11-21T15:04:05.5Z","@timestamp":"2026-11-21T15:04:06Z","message":"m2"}
`, Request{}, event{Time: "2026-11-21T15:04:05.5Z", Service: "vector-2026.11.21", Host: "vec-1", Msg: "m", Attrs: `{"source_type":"file"}`},
		event{Time: "2026-11-21T15:04:06Z", Service: "vector-2026.11.21", Msg: "m2", Attrs: `{"timestamp":"2026-11-21T15:04:05.5Z"}`})
	// No message at all: kept whole as attributes; escapes, odd spacing,
	// a non-string message, CRLF lines and blank lines.
	f("odd", "{ \"create\" : { \"_index\" : \"a\\u0062c\" } }\r\n\r\n{\"status\":200, \"k\\\"ey\" : { \"x\" : [ 1 , 2 ] } }\r\n"+
		`{"create":{}}`+"\n"+`{"message":{"a":1},"service.name":"s\u00e9"}`+"\n", Request{},
		event{Service: "abc", Attrs: `{"status":200,"k\"ey.x":[1,2]}`}, event{Service: "sé", Msg: `{"a":1}`})
}

func TestDecodeAnswer(t *testing.T) {
	body := `{"create":{"_index":"a","_id":"1"}}
{"message":"stored"}
{"delete":{"_index":"a","_id":"2"}}
{"update":{"_index":"a","_id":"3"}}
{"doc":{"message":"x"}}
{"create":{"_index":"a"}}
not json
{"index":{"_index":"a"}}
{"@timestamp":"yesterday","message":"bad time"}
{"create":{"_index":"a"},"index":{}}
{"message":"after a bad action line: skipped with it"}
{"frobnicate":{}}
{"message":"skipped"}
{"index":{"_index":"a"}}
{"message":"last"}
{"create":{"_index":"a"}}
`
	evs, m := decode(t, body, Request{})
	if len(evs) != 2 || evs[0].Msg != "stored" || evs[1].Msg != "last" {
		t.Fatalf("events %+v, want the two good ones", evs)
	}
	want := "create 201, delete 400, update 400, create 400, index 400, index 400, index 400, index 201, create 400"
	if got := statuses(m); got != want {
		t.Fatalf("items\n got %s\nwant %s\n%v", got, want, m)
	}
	if m["errors"] != true || m["took"] != 3.0 {
		t.Fatalf("answer %v: want errors true and took 3", m)
	}
	items := m["items"].([]any)
	first := items[0].(map[string]any)["create"].(map[string]any)
	if first["_id"] != "1" || first["_index"] != "a" || first["result"] != "created" {
		t.Fatalf("first item %v", first)
	}
	for i, want := range map[int]string{1: "append-only", 3: "line 7: the document is not a JSON object", 4: `"@timestamp"`, 5: "more than one action", 6: "unknown action", 8: "no document line"} {
		it := items[i].(map[string]any)
		for _, v := range it {
			e := v.(map[string]any)["error"].(map[string]any)
			if !strings.Contains(e["reason"].(string), want) || e["type"] == "" {
				t.Errorf("item %d: error %v, want a reason naming %q", i+1, e, want)
			}
		}
	}
	// Stored answers carry the generated id of their event.
	if id := items[7].(map[string]any)["index"].(map[string]any)["_id"]; id != evs[1].ID {
		t.Errorf("item 8 _id %v, want the event's id %s", id, evs[1].ID)
	}
}

func TestFilterPath(t *testing.T) {
	body := `{"create":{"_index":"a"}}` + "\n" + `{"message":"m"}` + "\n" + `{"delete":{}}` + "\n"
	f := func(fp, want string) {
		t.Helper()
		var d Decoder
		if err := d.Decode([]byte(body), Request{Now: now, FilterPath: []byte(fp)}, func(*logline.Event) error { return nil }); err != nil {
			t.Fatal(err)
		}
		got := string(d.AppendAnswer(nil, 0))
		got = regexp.MustCompile(`"_id":"[0-9A-Z]{26}"`).ReplaceAllString(got, `"_id":"ID"`)
		got = strings.Replace(got, `"reason":"line 3: cannot delete a document: ingest stores logs append-only; send create or index"`, `"reason":"R"`, 1)
		if got != want {
			t.Errorf("filter_path %q:\n got %s\nwant %s", fp, got, want)
		}
	}
	// Filebeat's and Logstash's.
	f("errors,items.*.error,items.*.status", `{"errors":true,"items":[{"create":{"status":201}},{"delete":{"status":400,"error":{"type":"illegal_argument_exception","reason":"R"}}}]}`)
	f("errors", `{"errors":true}`)
	f("took,items.create._index", `{"took":0,"items":[{"create":{"_index":"a"}},{"delete":{}}]}`)
	f("items.*.err*, -took", `{"items":[{"create":{}},{"delete":{"error":{"type":"illegal_argument_exception","reason":"R"}}}]}`)
	f("**.status", `{"took":0,"errors":true,"items":[{"create":{"_index":"a","_id":"`+"ID"+`","_version":1,"result":"created","status":201}},{"delete":{"_id":null,"status":400,"error":{"type":"illegal_argument_exception","reason":"R"}}}]}`)
}

func TestDecodeStopsOnEmitError(t *testing.T) {
	var d Decoder
	stop := errors.New("cannot take more events: over --max-events-per-request")
	n := 0
	err := d.Decode([]byte(strings.Repeat(`{"create":{}}`+"\n"+`{"message":"m"}`+"\n", 5)), Request{Now: now}, func(*logline.Event) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Fatalf("Decode returned %v after %d events, want the callback's error after 2", err, n)
	}
}

// bulkBody is n events of about 200 bytes as Filebeat sends them, of one
// index, with their action lines.
func bulkBody(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"create":{"_index":"logs-generic-default"}}`+"\n"+
			`{"@timestamp":"2026-11-21T16:04:05.%03dZ","message":"user u%d paid order %d with card ending 4242 in 87 ms","log":{"level":"info"},"host":{"name":"web-17"},"service":{"name":"checkout"},"user":"u%d","status":200,"path":"/api/pay"}`+"\n",
			i%1000, i, i*7, i)
	}
	return b.Bytes()
}

// TestDecodeAllocsPerEvent guards the steady path: after warm-up a request
// allocates nothing, whatever its number of documents, with generated ids
// and with the answer written.
func TestDecodeAllocsPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	var d Decoder
	emit := func(*logline.Event) error { return nil }
	var answer []byte
	fp := []byte("errors,items.*.error,items.*.status")
	for _, n := range []int{10, 1000} {
		body := bulkBody(n)
		run := func() {
			if err := d.Decode(body, Request{Now: now, FilterPath: fp}, emit); err != nil {
				t.Fatal(err)
			}
			answer = d.AppendAnswer(answer[:0], time.Millisecond)
		}
		run()
		if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
			t.Fatalf("a request of %d documents allocates %v times, want 0", n, allocs)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	body := bulkBody(1000)
	var d Decoder
	var sink int
	emit := func(e *logline.Event) error { sink += len(e.Message); return nil }
	var answer []byte
	fp := []byte("errors,items.*.error,items.*.status")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Decode(body, Request{Now: now, FilterPath: fp}, emit); err != nil {
			b.Fatal(err)
		}
		answer = d.AppendAnswer(answer[:0], time.Millisecond)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/event")
}

// FuzzDecode feeds any body: no panic, every event's attributes valid
// JSON, one item per action, and an answer that is valid JSON.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(bulkBody(2)))
	f.Add([]byte(`{"index":{"_index":"a","_id":"x"}}` + "\n" + `{"log":{"level":"warn"},"a":{"b":{}},"timestamp":"2026-01-01T00:00:00Z","msg":"m"}` + "\n"))
	f.Add([]byte(`{"delete":{}}` + "\n" + `{"update":{}}` + "\n" + `{}` + "\n" + `x` + "\n" + `{"create":{}}`))
	f.Add([]byte("{\"create\":{}}\n{\"k\\u00e9\":\"\xff\",\"a\":{\"b.c\":NaN}}\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var d Decoder
		err := d.Decode(body, Request{Now: now}, func(e *logline.Event) error {
			if len(e.Attrs) > 0 && !json.Valid(e.Attrs) {
				t.Fatalf("attrs %q are not valid JSON (body %q)", e.Attrs, body)
			}
			var back logline.Event
			if err := logline.Parse(logline.AppendLine(nil, e), &back); err != nil {
				t.Fatalf("the event's line does not parse: %v (body %q)", err, body)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		answer := d.AppendAnswer(nil, 0)
		var m struct{ Items []map[string]any }
		if err := json.Unmarshal(answer, &m); err != nil {
			t.Fatalf("answer %q is not JSON: %v", answer, err)
		}
		if len(m.Items) != d.Stored()+d.Refused() {
			t.Fatalf("%d items for %d stored and %d refused", len(m.Items), d.Stored(), d.Refused())
		}
	})
}

// FuzzActionLine: where the shortcut for shippers' action lines takes a
// line, the JSON reader reads the same action and index from it.
func FuzzActionLine(f *testing.F) {
	for _, s := range []string{`{"create":{}}`, `{"index":{"_index":"logs-generic-default"}}`, `{"create":{"_index":"a\"b"}}`,
		`{"create":{"_index":"a","_id":"1"}}`, `{"index":{"_index":"é"}}`, `{"create":{"_index":""}}`, `{"index":{"_index":"a"}} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast, slow Decoder
		if !fast.plainAction(line) {
			return
		}
		slow.idx.Reset(line)
		// The reader's own path, without the shortcut.
		slow.op, slow.index = actUnread, nil
		i := 0
		end, reason := slow.idx.Object(i, &slow.key, func(key, _ []byte, _ jsonstr.Flags, _, v int) (int, string) {
			slow.op = actionNamed(key)
			return slow.idx.Object(v, &slow.key, slow.metadata)
		})
		if reason != "" || end != len(line) || slow.op != fast.op || string(slow.index) != string(fast.index) {
			t.Fatalf("line %q: the shortcut reads %v %q, the reader %v %q (%q)", line, fast.op, fast.index, slow.op, slow.index, reason)
		}
	})
}
