package intake

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"ingest/internal/benchcpu"
	"ingest/internal/httperr"
	"ingest/internal/jsonstr"
	"ingest/logline"
)

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

// otlpRequest builds an export request the way an SDK does. LogsData is
// field-for-field the ExportLogsServiceRequest message.
func otlpRequest() *logspb.LogsData {
	traceID, _ := hex.DecodeString("5b8efff798038103d269b633813fc60c")
	spanID, _ := hex.DecodeString("eee19b7ec3c1b174")
	return &logspb.LogsData{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			kv("service.name", str("checkout")),
			kv("host.name", str("web-1")),
			kv("deployment.environment", str("prod")),
		}},
		ScopeLogs: []*logspb.ScopeLogs{{
			Scope: &commonpb.InstrumentationScope{Name: "app.logger"},
			LogRecords: []*logspb.LogRecord{
				{
					TimeUnixNano:   1732212245123456789,
					SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_WARN,
					SeverityText:   "WARN",
					Body:           str("disk almost full"),
					Attributes: []*commonpb.KeyValue{
						kv("log.record.uid", str("01JDQ8ZK3M9X2V7B4N6P8R0T2W")),
						kv("disk", str("/var")),
						kv("pct", &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 93}}),
						kv("ratio", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.NaN()}}),
					},
					TraceId: traceID,
					SpanId:  spanID,
				},
				{
					ObservedTimeUnixNano: 1732212246e9,
					SeverityText:         "Error",
					Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
						Values: []*commonpb.KeyValue{
							kv("a", &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}),
							kv("b", &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{
								Values: []*commonpb.AnyValue{str("x\ny"), {Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{1, 2}}}, {}},
							}}}),
						},
					}}},
					EventName: "order.failed",
				},
				{SeverityText: "loud", Body: str("no time")},
				{TimeUnixNano: math.MaxUint64, Body: str("far future")},
			},
		}},
	}}}
}

func TestOTLP(t *testing.T) {
	pb, err := proto.Marshal(otlpRequest())
	if err != nil {
		t.Fatal(err)
	}
	js, err := protojson.Marshal(otlpRequest()) // ids in base64, as protojson writes them
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
		f    Format
	}{{"protobuf", pb, FormatOTLPProto}, {"protojson", js, FormatOTLPJSON}} {
		evs, res, err := parseAll(t, string(tc.body), tc.f, Defaults{Service: []byte("fallback"), Now: now})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Accepted != 3 || res.Rejected != 1 || res.Errors[0].Line != 4 || !strings.Contains(res.Errors[0].Error, "outside the years") {
			t.Fatalf("%s: result %+v, want 3 accepted and record 4 rejected for its time", tc.name, res)
		}
		const res0 = `"resource.deployment.environment":"prod","scope.name":"app.logger"`
		want := []got{{
			Time: 1732212245123456789, Level: logline.LevelWarn, Service: "checkout", Host: "web-1",
			ID: "01JDQ8ZK3M9X2V7B4N6P8R0T2W", Message: "disk almost full",
			Attrs: `{"disk":"/var","pct":93,"ratio":"NaN",` + res0 +
				`,"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b174"}`,
		}, {
			Time: 1732212246e9, Level: logline.LevelError, Service: "checkout", Host: "web-1",
			Message: `{"a":true,"b":["x\ny","AQI=",null]}`,
			Attrs:   `{"event.name":"order.failed",` + res0 + `}`,
		}, {
			Time: now, Service: "checkout", Host: "web-1", Message: "no time",
			Attrs: `{` + res0 + `,"severity_text":"loud"}`,
		}}
		for i := range want {
			g := evs[i]
			if want[i].ID == "" && len(g.ID) == IDLen {
				g.ID = ""
			}
			if g != want[i] {
				t.Errorf("%s record %d:\n got %v\nwant %v", tc.name, i+1, g, want[i])
			}
		}
	}
}

// TestOTLPJSONHexIDs feeds OTLP JSON as the spec writes it: hex trace and
// span ids, integer enums, times as strings.
func TestOTLPJSONHexIDs(t *testing.T) {
	body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},
	"scopeLogs":[{"scope":{"name":"s"},"logRecords":[{"timeUnixNano":"1732212245000000000","severityNumber":17,
	"body":{"stringValue":"boom"},"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"eee19b7ec3c1b174",
	"attributes":[{"key":"id","value":{"intValue":"42"}},{"key":"n","value":{"doubleValue":1.5}}]}]}]}]}`
	f, err := DetectFormat("application/json", []byte(body), true)
	if err != nil || f != FormatOTLPJSON {
		t.Fatalf("DetectFormat = %v, %v", f, err)
	}
	evs, res, err := parseAll(t, body, f, Defaults{Now: now})
	if err != nil || res.Accepted != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	want := got{Time: 1732212245e9, Level: logline.LevelError, Service: "api", ID: "42", Message: "boom",
		Attrs: `{"n":1.5,"scope.name":"s","trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b174"}`}
	if evs[0] != want {
		t.Fatalf("\n got %v\nwant %v", evs[0], want)
	}
}

func TestOTLPErrors(t *testing.T) {
	for _, tc := range []struct {
		body string
		f    Format
	}{
		{"\xff\xff\xff", FormatOTLPProto},
		{`{"resourceLogs":[{"scopeLogs":"nope"}]}`, FormatOTLPJSON},
		{`{"resourceLogs":`, FormatOTLPJSON},
	} {
		if _, _, err := parseAll(t, tc.body, tc.f, Defaults{Now: now}); httperr.StatusOf(err) != 400 {
			t.Errorf("%q: %v, want a 400", tc.body, err)
		}
	}
	// Unknown fields are skipped: newer exporters must keep working.
	if _, res, err := parseAll(t, `{"resourceLogs":[],"newField":1}`, FormatOTLPJSON, Defaults{Now: now}); err != nil || res.Accepted != 0 {
		t.Fatalf("unknown field: %v %+v", err, res)
	}
}

// treeEvents decodes body whole with proto.Unmarshal and maps each record
// with eventFromRecord: what the wire decoder must emit.
func treeEvents(p *Parser, body []byte) ([]got, bool) {
	var req logspb.LogsData
	if proto.Unmarshal(body, &req) != nil {
		return nil, false
	}
	p.begin(&Defaults{Now: now})
	var out []got
	for _, rl := range req.GetResourceLogs() {
		p.svc, p.host, p.res = p.svc[:0], p.host[:0], p.res[:0]
		for _, kv := range rl.GetResource().GetAttributes() {
			switch kv.GetKey() {
			case "service.name":
				p.svc = appendText(p.svc[:0], kv.GetValue())
			case "host.name":
				p.host = appendText(p.host[:0], kv.GetValue())
			default:
				p.resourceKey([]byte(kv.GetKey()))
				p.res = appendAnyValue(p.res, kv.GetValue())
			}
		}
		for _, sl := range rl.GetScopeLogs() {
			for _, rec := range sl.GetLogRecords() {
				if p.eventFromRecord(rec, sl.GetScope().GetName(), false) != "" {
					out = append(out, got{Message: "rejected"})
					continue
				}
				e := &p.ev
				out = append(out, got{e.Time, e.Level, string(e.Service), string(e.Host), string(e.ID), string(e.Message), string(e.Attrs)})
			}
		}
	}
	return out, true
}

// FuzzOTLPWire: the wire decoder emits what decoding the whole message and
// mapping its records does, for every request in canonical form (proto's
// own encoding of what it decodes: no repeated singular field to merge),
// and never fails on a record for anything but its own bytes.
func FuzzOTLPWire(f *testing.F) {
	pb, _ := proto.Marshal(otlpRequest())
	f.Add(pb)
	f.Add(otlpNested(3))
	f.Fuzz(func(t *testing.T, body []byte) {
		p := NewParser()
		var evs []got
		res, err := p.ParseLogs(body, FormatOTLPProto, Defaults{Now: now}, func(e *logline.Event) error {
			evs = append(evs, got{e.Time, e.Level, string(e.Service), string(e.Host), string(e.ID), string(e.Message), string(e.Attrs)})
			return nil
		})
		want, ok := treeEvents(NewParser(), body)
		if !ok {
			return
		}
		if again, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(mustUnmarshal(body)); !bytes.Equal(again, body) {
			return
		}
		if err != nil {
			t.Fatalf("a request proto decodes: %v", err)
		}
		for i, j := 0, 0; i < len(want); i++ {
			if want[i].Message == "rejected" {
				continue
			}
			if j >= len(evs) {
				t.Fatalf("record %d not emitted (%+v)", i+1, res)
			}
			g := evs[j]
			j++
			if len(want[i].ID) == IDLen && len(g.ID) == IDLen {
				g.ID = want[i].ID // generated
			}
			if g != want[i] {
				t.Fatalf("record %d:\n wire %v\n tree %v", i+1, g, want[i])
			}
		}
	})
}

func mustUnmarshal(body []byte) *logspb.LogsData {
	var req logspb.LogsData
	_ = proto.Unmarshal(body, &req)
	return &req
}

// otlpNested is a request of one record whose body nests arrays depth
// deep.
func otlpNested(depth int) []byte {
	v := str("leaf")
	for range depth {
		v = &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{v}}}}
	}
	req := &logspb.LogsData{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{
		LogRecords: []*logspb.LogRecord{{Body: v}, {Body: str("next")}}}}}}}
	b, _ := proto.Marshal(req)
	return b
}

// Decoding in place: a resource written after its scopes still applies to
// their records; a body nested past the depth limit rejects its record
// alone; a record whose own bytes are broken is rejected alone, where the
// request's frame is sound; and a request of millions of empty records
// stops at the first error emit returns.
func TestOTLPWire(t *testing.T) {
	res := protowire.AppendTag(nil, fieldResourceLogsResource, protowire.BytesType)
	resource, _ := proto.Marshal(&resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", str("late"))}})
	res = protowire.AppendBytes(res, resource)
	sl, _ := proto.Marshal(&logspb.ScopeLogs{LogRecords: []*logspb.LogRecord{{Body: str("m")}}})
	rl := protowire.AppendBytes(protowire.AppendTag(nil, fieldResourceLogsScopeLogs, protowire.BytesType), sl)
	rl = append(rl, res...) // the resource after the scope logs
	body := protowire.AppendBytes(protowire.AppendTag(nil, fieldLogsDataResourceLogs, protowire.BytesType), rl)
	evs, r, err := parseAll(t, string(body), FormatOTLPProto, Defaults{Now: now})
	if err != nil || r.Accepted != 1 || evs[0].Service != "late" {
		t.Fatalf("resource after its scopes: %v %+v %v", err, r, evs)
	}

	evs, r, err = parseAll(t, string(otlpNested(jsonstr.MaxDepth+5)), FormatOTLPProto, Defaults{Now: now})
	if err != nil || r.Accepted != 1 || r.Rejected != 1 || r.Errors[0].Line != 1 || !strings.Contains(r.Errors[0].Error, "nested deeper") || evs[0].Message != "next" {
		t.Fatalf("a body nested %d deep: %v %+v", jsonstr.MaxDepth+5, err, r)
	}

	broken := []byte{fieldRecordTime<<3 | 1, 1, 2} // a fixed64 of 2 bytes
	recs := protowire.AppendBytes(protowire.AppendTag(nil, fieldScopeLogsLogRecords, protowire.BytesType), broken)
	good, _ := proto.Marshal(&logspb.LogRecord{Body: str("good")})
	recs = protowire.AppendBytes(protowire.AppendTag(recs, fieldScopeLogsLogRecords, protowire.BytesType), good)
	rl = protowire.AppendBytes(protowire.AppendTag(nil, fieldResourceLogsScopeLogs, protowire.BytesType), recs)
	body = protowire.AppendBytes(protowire.AppendTag(nil, fieldLogsDataResourceLogs, protowire.BytesType), rl)
	evs, r, err = parseAll(t, string(body), FormatOTLPProto, Defaults{Now: now})
	if err != nil || r.Accepted != 1 || r.Rejected != 1 || r.Errors[0].Line != 1 || evs[0].Message != "good" {
		t.Fatalf("a broken record: %v %+v %v", err, r, evs)
	}

	empty := bytes.Repeat([]byte{fieldScopeLogsLogRecords<<3 | 2, 0}, 1<<20)
	rl = protowire.AppendBytes(protowire.AppendTag(nil, fieldResourceLogsScopeLogs, protowire.BytesType), empty)
	body = protowire.AppendBytes(protowire.AppendTag(nil, fieldLogsDataResourceLogs, protowire.BytesType), rl)
	stop := errors.New("cannot take more")
	calls := 0
	_, err = NewParser().ParseLogs(body, FormatOTLPProto, Defaults{Now: now}, func(*logline.Event) error {
		if calls++; calls == 1000 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 1000 {
		t.Fatalf("a million empty records: %v after %d calls, want emit's error after 1,000", err, calls)
	}
}

// The JSON form is decoded a record at a time: a record protojson refuses
// is rejected alone, and fields come in either spelling and any order.
func TestOTLPJSONRecords(t *testing.T) {
	body := `{"resource_logs":[{"scope_logs":[{"log_records":[{"body":{"stringValue":"a"}},{"timeUnixNano":"soon"},{"body":{"stringValue":"c"}}],
		"scope":{"name":"late-scope"}}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"late"}}]}}]}`
	evs, r, err := parseAll(t, body, FormatOTLPJSON, Defaults{Now: now})
	if err != nil || r.Accepted != 2 || r.Rejected != 1 || r.Errors[0].Line != 2 {
		t.Fatalf("%v %+v", err, r)
	}
	if evs[0].Service != "late" || evs[1].Message != "c" || !strings.Contains(evs[0].Attrs, `"scope.name":"late-scope"`) {
		t.Fatalf("events %v", evs)
	}
}

func BenchmarkParseLogsOTLPProto(b *testing.B) {
	req := &logspb.LogsData{}
	rl := &logspb.ResourceLogs{Resource: otlpRequest().ResourceLogs[0].Resource}
	sl := &logspb.ScopeLogs{Scope: &commonpb.InstrumentationScope{Name: "app"}}
	for i := range 1000 {
		r := proto.Clone(otlpRequest().ResourceLogs[0].ScopeLogs[0].LogRecords[0]).(*logspb.LogRecord)
		r.TimeUnixNano += uint64(i)
		r.Attributes = r.Attributes[1:] // generated ids
		sl.LogRecords = append(sl.LogRecords, r)
	}
	rl.ScopeLogs = []*logspb.ScopeLogs{sl}
	req.ResourceLogs = []*logspb.ResourceLogs{rl}
	body, _ := proto.Marshal(req)
	p := GetParser()
	d := Defaults{Now: now}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		if _, err := p.ParseLogs(body, FormatOTLPProto, d, func(*logline.Event) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, 1000, benchcpu.Start()-cpu)
}
