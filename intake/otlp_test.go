package intake

import (
	"encoding/hex"
	"math"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"ingest/internal/benchcpu"
	"ingest/internal/httperr"
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
