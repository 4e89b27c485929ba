package intake

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"ingest/logline"
)

// parseOTLP turns an OTLP/HTTP ExportLogsServiceRequest into events: one
// per log record, numbered across the request from 1.
//
// Mapping: resource attribute service.name -> service, host.name -> host,
// the other resource attributes -> attrs "resource.<key>"; record body ->
// message (a string as is, any other value as JSON); SeverityNumber ->
// level, else SeverityText; TimeUnixNano, else ObservedTimeUnixNano, else
// the request time; the record attribute log.record.uid (or id) -> id;
// record attributes, event name, scope name, trace and span ids -> attrs.
//
// The protobuf form is read in place (otlpwire.go): nothing is allocated
// per record. The JSON form is framed here and each resource, scope and
// record decoded on its own, so memory is a record's tree, not the
// request's.
func (p *Parser) parseOTLP(body []byte, jsonForm bool, maxRows int, emit func(*logline.Event) error) (Result, error) {
	r := &Result{maxRows: maxRows}
	var err error
	if jsonForm {
		err = p.parseOTLPJSON(body, r, emit)
	} else {
		err = p.parseOTLPWire(body, r, emit)
	}
	return *r, err
}

// eventFromRecord fills p.ev from one decoded log record; it returns "" or
// why the record is rejected.
func (p *Parser) eventFromRecord(rec *logspb.LogRecord, scope string, jsonForm bool) string {
	ev := &p.ev
	ev.Reset()
	p.attrs = p.attrs[:0]

	var reason string
	if ev.Time, reason = recordTime(rec.GetTimeUnixNano(), rec.GetObservedTimeUnixNano(), p.now); reason != "" {
		return reason
	}

	ev.Level = logline.LevelFromOTLP(int32(rec.GetSeverityNumber()))
	var unknownSeverity []byte
	if ev.Level == logline.LevelNone && rec.GetSeverityText() != "" {
		l, ok := logline.ParseLevel([]byte(rec.GetSeverityText()))
		if ev.Level = l; !ok {
			unknownSeverity = []byte(rec.GetSeverityText())
		}
	}

	p.message = p.message[:0]
	if b := rec.GetBody(); b != nil {
		if s, ok := b.GetValue().(*commonpb.AnyValue_StringValue); ok {
			p.message = append(p.message, s.StringValue...)
		} else {
			p.message = appendAnyValue(p.message, b)
		}
	}
	ev.Message = p.message

	haveID := false
	for _, kv := range rec.GetAttributes() {
		if k := kv.GetKey(); !haveID && (k == "log.record.uid" || k == "id") {
			if p.id = appendText(p.id[:0], kv.GetValue()); len(p.id) > 0 {
				ev.ID, haveID = p.id, true
				continue
			}
		}
		p.attrs = attrName(p.attrs, []byte(kv.GetKey()))
		p.attrs = appendAnyValue(p.attrs, kv.GetValue())
	}
	p.recordAttrs([]byte(rec.GetEventName()), []byte(scope), rec.GetTraceId(), rec.GetSpanId(), unknownSeverity, jsonForm)
	ev.Service = p.svc // empty: finishEvent applies the default
	ev.Host = p.host
	p.finishEvent(true, haveID)
	return ""
}

// resourceKey appends to p.res, after a comma, the name of a resource
// attribute as an event's attribute ("resource.<key>") and a colon.
func (p *Parser) resourceKey(key []byte) {
	p.num = append(append(p.num[:0], "resource."...), key...)
	p.res = append(p.res, ',')
	p.res = logline.AppendQuoted(p.res, p.num)
	p.res = append(p.res, ':')
}

// recordAttrs adds, after a record's own attributes, its event name, the
// resource's attributes, the scope name, the trace and span ids and an
// unknown severity text, those that are set.
func (p *Parser) recordAttrs(eventName, scope, traceID, spanID, unknownSeverity []byte, jsonForm bool) {
	if len(eventName) > 0 {
		p.attrs = attrName(p.attrs, []byte("event.name"))
		p.attrs = logline.AppendQuoted(p.attrs, eventName)
	}
	if len(p.res) > 0 {
		if len(p.attrs) == 0 {
			p.attrs = append(p.attrs, '{')
			p.attrs = append(p.attrs, p.res[1:]...)
		} else {
			p.attrs = append(p.attrs, p.res...)
		}
	}
	if len(scope) > 0 {
		p.attrs = attrName(p.attrs, []byte("scope.name"))
		p.attrs = logline.AppendQuoted(p.attrs, scope)
	}
	if !isZero(traceID) {
		p.attrs = attrName(p.attrs, []byte("trace_id"))
		p.attrs = appendTraceID(p.attrs, traceID, jsonForm)
	}
	if !isZero(spanID) {
		p.attrs = attrName(p.attrs, []byte("span_id"))
		p.attrs = appendTraceID(p.attrs, spanID, jsonForm)
	}
	if len(unknownSeverity) > 0 {
		p.attrs = attrName(p.attrs, []byte("severity_text"))
		p.attrs = logline.AppendQuoted(p.attrs, unknownSeverity)
	}
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// appendTraceID appends a trace or span id as a quoted lower-case hex
// string. OTLP JSON writes these ids in hex where protojson expects base64:
// protojson then decodes the 32 (16) hex characters as base64 into 24 (12)
// bytes. Base64 is a bijection on whole 4-character groups, so encoding
// those bytes again gives back the client's hex text exactly.
func appendTraceID(dst, id []byte, jsonForm bool) []byte {
	dst = append(dst, '"')
	if jsonForm && (len(id) == 24 || len(id) == 12) {
		var b [32]byte
		text := b[:base64.StdEncoding.EncodedLen(len(id))]
		base64.StdEncoding.Encode(text, id)
		if isHex(text) {
			for _, c := range text {
				if 'A' <= c && c <= 'F' {
					c += 'a' - 'A'
				}
				dst = append(dst, c)
			}
			return append(dst, '"')
		}
	}
	dst = hex.AppendEncode(dst, id)
	return append(dst, '"')
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// appendText appends a string value's text, or any other value as JSON.
func appendText(dst []byte, v *commonpb.AnyValue) []byte {
	if s, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok {
		return append(dst, s.StringValue...)
	}
	if v.GetValue() == nil {
		return dst
	}
	return appendAnyValue(dst, v)
}

// appendAnyValue appends an OTLP AnyValue as JSON: scalars as themselves,
// bytes as base64, arrays and key-value lists as arrays and objects, an
// empty value as null. NaN and infinities, which JSON lacks, become strings.
func appendAnyValue(dst []byte, v *commonpb.AnyValue) []byte {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return logline.AppendQuoted(dst, []byte(x.StringValue))
	case *commonpb.AnyValue_BoolValue:
		return strconv.AppendBool(dst, x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.AppendInt(dst, x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return appendFloat(dst, x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x.BytesValue)
		return append(dst, '"')
	case *commonpb.AnyValue_ArrayValue:
		dst = append(dst, '[')
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendAnyValue(dst, e)
		}
		return append(dst, ']')
	case *commonpb.AnyValue_KvlistValue:
		dst = append(dst, '{')
		for i, kv := range x.KvlistValue.GetValues() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = logline.AppendQuoted(dst, []byte(kv.GetKey()))
			dst = append(dst, ':')
			dst = appendAnyValue(dst, kv.GetValue())
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// appendFloat appends f as JSON: NaN and infinities, which JSON lacks, as
// strings.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		dst = append(dst, '"')
		dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
		return append(dst, '"')
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// attrName opens the attrs object or adds a comma, then appends key quoted
// and a colon.
func attrName(dst []byte, key []byte) []byte {
	if len(dst) == 0 {
		dst = append(dst, '{')
	} else {
		dst = append(dst, ',')
	}
	dst = logline.AppendQuoted(dst, key)
	return append(dst, ':')
}

// recordTime is a record's event time: its time_unix_nano, else its
// observed time, else now; or why the record cannot be taken.
func recordTime(t, observed uint64, now int64) (int64, string) {
	if t == 0 {
		t = observed
	}
	switch {
	case t == 0:
		return now, ""
	case t > uint64(maxTime):
		return 0, fmt.Sprintf("cannot accept record: time_unix_nano %d %v", t, errTimeRange)
	}
	return int64(t), ""
}
