package loki

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"ingest/internal/httperr"
	"ingest/logline"
)

var now = time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC).UnixNano()

// The protobuf messages, written field by field from Loki's documented
// schema (the test's own encoder, independent of the decoder).
type pbEntry struct {
	secs, nanos int64
	noTime      bool
	line        string
	meta        [][2]string
}

type pbStream struct {
	labels     string
	labelsLast bool // write the labels after the entries
	entries    []pbEntry
	hash       uint64
}

func pushProto(streams ...pbStream) []byte {
	var b []byte
	b = protowire.AppendTag(b, 2, protowire.BytesType) // PushRequest.format, newer clients
	b = protowire.AppendString(b, "loki")
	for _, s := range streams {
		var sm []byte
		labels := func() {
			sm = protowire.AppendTag(sm, 1, protowire.BytesType)
			sm = protowire.AppendString(sm, s.labels)
		}
		if !s.labelsLast {
			labels()
		}
		for _, e := range s.entries {
			var em []byte
			if !e.noTime {
				var ts []byte
				ts = protowire.AppendTag(ts, 1, protowire.VarintType)
				ts = protowire.AppendVarint(ts, uint64(e.secs))
				ts = protowire.AppendTag(ts, 2, protowire.VarintType)
				ts = protowire.AppendVarint(ts, uint64(e.nanos))
				em = protowire.AppendTag(em, 1, protowire.BytesType)
				em = protowire.AppendBytes(em, ts)
			}
			em = protowire.AppendTag(em, 2, protowire.BytesType)
			em = protowire.AppendString(em, e.line)
			for _, kv := range e.meta {
				var p []byte
				p = protowire.AppendTag(p, 1, protowire.BytesType)
				p = protowire.AppendString(p, kv[0])
				p = protowire.AppendTag(p, 2, protowire.BytesType)
				p = protowire.AppendString(p, kv[1])
				em = protowire.AppendTag(em, 3, protowire.BytesType)
				em = protowire.AppendBytes(em, p)
			}
			sm = protowire.AppendTag(sm, 2, protowire.BytesType)
			sm = protowire.AppendBytes(sm, em)
		}
		if s.labelsLast {
			labels()
		}
		sm = protowire.AppendTag(sm, 3, protowire.VarintType)
		sm = protowire.AppendVarint(sm, s.hash)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, sm)
	}
	return b
}

type event struct {
	Time                             string
	Level, Service, Host, Msg, Attrs string
}

func decode(t *testing.T, body []byte, f Format, cfg Config) ([]event, Result, error) {
	labels := cfg.Labels()
	t.Helper()
	var d Decoder
	var evs []event
	res, err := d.Decode(body, f, labels, now, func(e *logline.Event) error {
		if len(e.ID) != 26 {
			t.Errorf("event id %q, want a generated one", e.ID)
		}
		if len(e.Attrs) > 0 && !json.Valid(e.Attrs) {
			t.Fatalf("attrs %q are not valid JSON", e.Attrs)
		}
		var back logline.Event
		if err := logline.Parse(logline.AppendLine(nil, e), &back); err != nil || string(back.Message) != string(e.Message) {
			t.Fatalf("the event's line does not give the message back: %v", err)
		}
		evs = append(evs, event{time.Unix(0, e.Time).UTC().Format(time.RFC3339Nano), e.Level.String(), string(e.Service), string(e.Host), string(e.Message), string(e.Attrs)})
		return nil
	})
	return evs, res, err
}

func check(t *testing.T, name string, got []event, res Result, accepted, rejected int, want ...event) {
	t.Helper()
	if res.Accepted != accepted || res.Rejected != rejected {
		t.Fatalf("%s: accepted %d rejected %d (%v), want %d and %d", name, res.Accepted, res.Rejected, res.Errors, accepted, rejected)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d: %+v", name, len(got), len(want), got)
	}
	for i := range want {
		if want[i].Time == "" {
			want[i].Time = time.Unix(0, now).UTC().Format(time.RFC3339Nano)
		}
		if got[i] != want[i] {
			t.Errorf("%s: event %d\n got %+v\nwant %+v", name, i, got[i], want[i])
		}
	}
}

func TestDecodeProto(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 15, 4, 5, 123456789, time.UTC)
	body := pushProto(
		// Promtail: a job, a file name, a level label.
		pbStream{labels: `{filename="/var/log/app.log", host="web-1", job="varlogs", level="warn"}`, hash: 42, entries: []pbEntry{
			{secs: t0.Unix(), nanos: int64(t0.Nanosecond()), line: `GET /pay 200 "ok"`},
			{secs: t0.Unix() + 1, line: "second", meta: [][2]string{{"trace_id", "abc"}, {"user", "u\"1"}}},
		}},
		// Alloy with service_name; labels after the entries; escapes; no timestamp.
		pbStream{labels: "{service_name=\"checkout\", job=\"j\", detected_level=\"ERROR\", hostname=\"h\\\"2\", note=\"tab\\there \\u00e9\"}", labelsLast: true,
			entries: []pbEntry{{noTime: true, line: "no time"}}},
		// Labels that cannot be read: its entries are rejected, the rest goes on.
		pbStream{labels: `{job="x", broken}`, entries: []pbEntry{{line: "a"}, {line: "b"}}},
		// A timestamp out of range.
		pbStream{labels: `{}`, entries: []pbEntry{{secs: 1 << 40, line: "far"}, {secs: t0.Unix(), line: "fine", meta: [][2]string{{"k", "v"}}}}},
	)
	evs, res, err := decode(t, body, FormatProtobuf, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	check(t, "proto", evs, res, 4, 3,
		event{Time: "2026-11-21T15:04:05.123456789Z", Level: "warn", Service: "varlogs", Host: "web-1", Msg: `GET /pay 200 "ok"`, Attrs: `{"filename":"/var/log/app.log"}`},
		event{Time: "2026-11-21T15:04:06Z", Level: "warn", Service: "varlogs", Host: "web-1", Msg: "second", Attrs: `{"filename":"/var/log/app.log","trace_id":"abc","user":"u\"1"}`},
		event{Level: "error", Service: "checkout", Host: `h"2`, Msg: "no time", Attrs: `{"job":"j","note":"tab\there é"}`},
		event{Time: "2026-11-21T15:04:05Z", Service: "default", Msg: "fine", Attrs: `{"k":"v"}`},
	)
	for i, want := range map[int]string{0: "entry 4", 1: "entry 5", 2: "outside the years"} {
		e := res.Errors[i]
		if got := fmt.Sprintf("entry %d: %s", e.Line, e.Error); !strings.Contains(got, want) {
			t.Errorf("error %d is %q, want one naming %q", i, got, want)
		}
	}
	if !strings.Contains(res.Errors[0].Error, "cannot read its labels") || !strings.Contains(res.Message(), "3 of 7 entries rejected") {
		t.Errorf("errors %v, message %q", res.Errors, res.Message())
	}

	// The service labels are configurable.
	evs, res, _ = decode(t, pushProto(pbStream{labels: `{app="a", team="t"}`, entries: []pbEntry{{line: "x"}}}), FormatProtobuf, Config{ServiceLabels: "team,app"})
	check(t, "service labels", evs, res, 1, 0, event{Service: "t", Msg: "x", Attrs: `{"app":"a"}`})
}

func TestDecodeProtoBroken(t *testing.T) {
	good := pushProto(pbStream{labels: `{job="a"}`, entries: []pbEntry{{line: "x"}, {line: "y"}}})
	for _, body := range [][]byte{good[:len(good)-3], {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, {0x0b}, []byte("{\"streams\":[]}")} {
		_, _, err := decode(t, body, FormatProtobuf, DefaultConfig())
		if httperr.StatusOf(err) != 400 || !strings.Contains(err.Error(), "cannot decode the protobuf push body") {
			t.Errorf("body %q: error %v, want a 400 naming the protobuf body", body, err)
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	body := `{"streams":[
	 {"values":[["1763737445000000001","first"],["1763737445000000002","second",{"trace_id":"t1","user":"u\u00e9"}]],
	  "stream":{"job":"fluent-bit","level":"info","host":"fb-1","env":"prod"}},
	 {"stream":{"service":"s","esc":"a\"b"},"values":[
	   ["1763737445000000003","line with \"quotes\"\n"],
	   [1763737445000000004,"a number is fine"],
	   ["yesterday","bad time"],
	   ["1763737445000000005"],
	   ["1763737445000000006","m",{"n":1}],
	   "not an entry",
	   ["1763737445000000007","x",{},"extra"]]},
	 {"stream":{"job":{"nested":1}},"values":[["1","a"]]},
	 {"stream":{"job":"no values"}}
	]}`
	evs, res, err := decode(t, []byte(body), FormatJSON, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	check(t, "json", evs, res, 4, 6,
		event{Time: "2025-11-21T15:04:05.000000001Z", Level: "info", Service: "fluent-bit", Host: "fb-1", Msg: "first", Attrs: `{"env":"prod"}`},
		event{Time: "2025-11-21T15:04:05.000000002Z", Level: "info", Service: "fluent-bit", Host: "fb-1", Msg: "second", Attrs: `{"env":"prod","trace_id":"t1","user":"u\u00e9"}`},
		event{Time: "2025-11-21T15:04:05.000000003Z", Service: "s", Msg: "line with \"quotes\"\n", Attrs: `{"esc":"a\"b"}`},
		event{Time: "2025-11-21T15:04:05.000000004Z", Service: "s", Msg: "a number is fine", Attrs: `{"esc":"a\"b"}`},
	)
	for i, want := range []string{"not nanoseconds", "has no line", `"n" is a number`, "is a string, want", "not [", "cannot read its labels"} {
		if !strings.Contains(res.Errors[i].Error, want) {
			t.Errorf("error %d is %q, want one naming %q", i, res.Errors[i].Error, want)
		}
	}
	for _, broken := range []string{`{"streams":[{"stream":{},"values":[["1","a"]]}`, `[]`, `{"streams":{}}`, `{"streams":[]} x`, ``} {
		if _, _, err := decode(t, []byte(broken), FormatJSON, DefaultConfig()); httperr.StatusOf(err) != 400 {
			t.Errorf("body %q: error %v, want a 400", broken, err)
		}
	}
}

func TestDetectFormat(t *testing.T) {
	for ct, want := range map[string]Format{"application/x-protobuf": FormatProtobuf, "application/json; charset=utf-8": FormatJSON, "": FormatJSON, "text/plain": 0} {
		f, err := DetectFormat(ct)
		if f != want || (want == 0) != (httperr.StatusOf(err) == 415) {
			t.Errorf("DetectFormat(%q) = %v, %v; want %v", ct, f, err, want)
		}
	}
}

func TestDecodeStopsOnEmitError(t *testing.T) {
	stop := errors.New("cannot take more events")
	for _, tc := range []struct {
		f    Format
		body []byte
	}{{FormatProtobuf, protoBody(5)}, {FormatJSON, jsonBody(5)}} {
		var d Decoder
		n := 0
		cfg := DefaultConfig()
		_, err := d.Decode(tc.body, tc.f, cfg.Labels(), now, func(*logline.Event) error {
			if n++; n == 2 {
				return stop
			}
			return nil
		})
		if err != stop || n != 2 {
			t.Fatalf("format %d: Decode returned %v after %d events, want the callback's error after 2", tc.f, err, n)
		}
	}
}

// protoBody is n entries of about 100 bytes in 8 streams, as Promtail
// batches them.
func protoBody(n int) []byte {
	streams := make([]pbStream, 8)
	for i := range streams {
		streams[i].labels = fmt.Sprintf(`{env="prod", host="web-%02d", job="svc-%d", level="info"}`, i*3, i)
	}
	t0 := time.Date(2026, 11, 21, 16, 4, 5, 0, time.UTC).Unix()
	for i := range n {
		s := &streams[i%8]
		var meta [][2]string
		if i%2 == 0 {
			meta = [][2]string{{"trace_id", fmt.Sprintf("%08x", i)}}
		}
		s.entries = append(s.entries, pbEntry{secs: t0, nanos: int64(i), meta: meta, line: fmt.Sprintf("GET /api/v1/orders/%d 200 %d.%dms user=u%05d trace=%08x dc=eu-west-1", 10000+i*7919%90000, i%97, i%10, i*31%100000, uint32(i)*2654435761)})
	}
	return pushProto(streams...)
}

func jsonBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"streams":[`)
	for s := range 8 {
		if s > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"stream":{"env":"prod","host":"web-%02d","job":"svc-%d","level":"info"},"values":[`, s*3, s)
		for i := s; i < n; i += 8 {
			if i > s {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `["17637374450000%05d","GET /api/v1/orders/%d 200 %d.%dms user=u%05d dc=eu-west-1",{"trace_id":"%08x"}]`, i, 10000+i*7919%90000, i%97, i%10, i*31%100000, i)
		}
		b.WriteString("]}")
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// TestDecodeAllocsPerEvent guards the steady path: after warm-up a push
// allocates nothing, whatever its number of entries.
func TestDecodeAllocsPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	labels := DefaultConfig().Labels()
	emit := func(*logline.Event) error { return nil }
	for _, f := range []Format{FormatProtobuf, FormatJSON} {
		var d Decoder
		for _, n := range []int{16, 1000} {
			body := protoBody(n)
			if f == FormatJSON {
				body = jsonBody(n)
			}
			run := func() {
				if res, err := d.Decode(body, f, labels, now, emit); err != nil || res.Accepted != n {
					t.Fatalf("format %d: %+v, %v", f, res, err)
				}
			}
			run()
			if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
				t.Fatalf("format %d: a push of %d entries allocates %v times, want 0", f, n, allocs)
			}
		}
	}
}

func benchDecode(b *testing.B, f Format, body []byte) {
	var d Decoder
	labels := DefaultConfig().Labels()
	var sink int
	emit := func(e *logline.Event) error { sink += len(e.Message); return nil }
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(body, f, labels, now, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/event")
}

func BenchmarkDecodeProto(b *testing.B) { benchDecode(b, FormatProtobuf, protoBody(1000)) }
func BenchmarkDecodeJSON(b *testing.B)  { benchDecode(b, FormatJSON, jsonBody(1000)) }

// FuzzDecode feeds any body in either format: no panic, valid attributes,
// counts that add up, and either a 400 or no error.
func FuzzDecode(f *testing.F) {
	f.Add(true, protoBody(3))
	f.Add(true, pushProto(pbStream{labels: `{a="\x41\101\u00e9", b="c"}`, entries: []pbEntry{{line: "x", meta: [][2]string{{"k", "\xff"}}}}}))
	f.Add(false, jsonBody(3))
	f.Add(false, []byte(`{"streams":[{"stream":{"a":"b"},"values":[["1","x",{"k":"v"}],[],["2"]]}]}`))
	f.Fuzz(func(t *testing.T, proto bool, body []byte) {
		var d Decoder
		format := FormatJSON
		if proto {
			format = FormatProtobuf
		}
		emitted := 0
		res, err := d.Decode(body, format, DefaultConfig().Labels(), now, func(e *logline.Event) error {
			emitted++
			if len(e.Attrs) > 0 && !json.Valid(e.Attrs) {
				t.Fatalf("attrs %q are not valid JSON", e.Attrs)
			}
			var back logline.Event
			if err := logline.Parse(logline.AppendLine(nil, e), &back); err != nil {
				t.Fatalf("the event's line does not parse: %v", err)
			}
			return nil
		})
		if err != nil && httperr.StatusOf(err) != 400 {
			t.Fatalf("error %v, want a 400 or none", err)
		}
		if err == nil && emitted != res.Accepted {
			t.Fatalf("%d events emitted, %d accepted", emitted, res.Accepted)
		}
	})
}
