package intake

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"ingest/internal/jsonstr"
	"ingest/logline"
)

// The OTLP protobuf request is read in the wire format, where it lies,
// without building its message tree: the tree cost an allocation per
// record, attribute and value (8 million empty records, 16 MB, took
// gigabytes), where reading in place allocates nothing per record and
// stops as soon as emit says so. Field numbers are those of
// opentelemetry-proto's logs/v1, common/v1 and resource/v1.
const (
	fieldLogsDataResourceLogs   = 1 // LogsData, ExportLogsServiceRequest
	fieldResourceLogsResource   = 1
	fieldResourceLogsScopeLogs  = 2
	fieldResourceAttributes     = 1
	fieldScopeLogsScope         = 1
	fieldScopeLogsLogRecords    = 2
	fieldScopeName              = 1
	fieldRecordTime             = 1
	fieldRecordSeverityNumber   = 2
	fieldRecordSeverityText     = 3
	fieldRecordBody             = 5
	fieldRecordAttributes       = 6
	fieldRecordTraceID          = 9
	fieldRecordSpanID           = 10
	fieldRecordObservedTime     = 11
	fieldRecordEventName        = 12
	fieldKeyValueKey            = 1
	fieldKeyValueValue          = 2
	fieldAnyString              = 1
	fieldAnyBool                = 2
	fieldAnyInt                 = 3
	fieldAnyDouble              = 4
	fieldAnyArray               = 5
	fieldAnyKvlist              = 6
	fieldAnyBytes               = 7
	fieldArrayValues, fieldKvls = 1, 1 // ArrayValue.values, KeyValueList.values
)

// wireFields steps through the fields of one message in the wire format:
//
//	for f := (wireFields{b: msg}); f.next(); {
//		switch f.num { ... f.v (bytes), f.x (varint, fixed) }
//	}
//	if f.err != nil { ... }
type wireFields struct {
	b   []byte
	num protowire.Number
	typ protowire.Type
	v   []byte // a length-delimited field's bytes
	x   uint64 // a varint's or fixed field's value
	err error
}

var errWire = errors.New("not a valid protobuf message")

// next reads the next field; false at the end of the message or on an
// error (err).
func (f *wireFields) next() bool {
	if len(f.b) == 0 || f.err != nil {
		return false
	}
	num, typ, n := protowire.ConsumeTag(f.b)
	if n < 0 {
		f.err = errWire
		return false
	}
	f.b = f.b[n:]
	f.num, f.typ, f.v = num, typ, nil
	switch typ {
	case protowire.VarintType:
		f.x, n = protowire.ConsumeVarint(f.b)
	case protowire.Fixed64Type:
		f.x, n = protowire.ConsumeFixed64(f.b)
	case protowire.Fixed32Type:
		var x uint32
		x, n = protowire.ConsumeFixed32(f.b)
		f.x = uint64(x)
	case protowire.BytesType:
		f.v, n = protowire.ConsumeBytes(f.b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, f.b)
	}
	if n < 0 {
		f.err = errWire
		return false
	}
	f.b = f.b[n:]
	return true
}

// is reports whether the field is number num of wire type typ. A known
// number with another wire type is an unknown field, as proto decodes it.
func (f *wireFields) is(num protowire.Number, typ protowire.Type) bool {
	return f.num == num && f.typ == typ
}

// checkOTLPWire checks the frame of the request, down to its log records,
// before any is emitted: a request broken as a whole is a 400 with nothing
// taken from it, as it was when it was decoded whole.
func checkOTLPWire(body []byte) error {
	rls := wireFields{b: body}
	for rls.next() {
		if !rls.is(fieldLogsDataResourceLogs, protowire.BytesType) {
			continue
		}
		sls := wireFields{b: rls.v}
		for sls.next() {
			if sls.is(fieldResourceLogsResource, protowire.BytesType) || !sls.is(fieldResourceLogsScopeLogs, protowire.BytesType) {
				continue
			}
			recs := wireFields{b: sls.v}
			for recs.next() {
			}
			if recs.err != nil {
				return recs.err
			}
		}
		if sls.err != nil {
			return sls.err
		}
	}
	return rls.err
}

// parseOTLPWire emits the records of an OTLP protobuf request, numbered
// across the request from 1.
func (p *Parser) parseOTLPWire(body []byte, r *Result, emit func(*logline.Event) error) error {
	if err := checkOTLPWire(body); err != nil {
		return errorf(http.StatusBadRequest, "cannot decode OTLP logs request: %v", err)
	}
	n := 0
	rls := wireFields{b: body}
	for rls.next() {
		if !rls.is(fieldLogsDataResourceLogs, protowire.BytesType) {
			continue
		}
		p.resourceWire(rls.v)
		sls := wireFields{b: rls.v}
		for sls.next() {
			if !sls.is(fieldResourceLogsScopeLogs, protowire.BytesType) {
				continue
			}
			scope := scopeNameWire(sls.v)
			recs := wireFields{b: sls.v}
			for recs.next() {
				if !recs.is(fieldScopeLogsLogRecords, protowire.BytesType) {
					continue
				}
				n++
				var err error
				if reason := p.eventFromWire(recs.v, scope); reason != "" {
					r.reject(n, reason)
				} else {
					err = r.emit(n, emit, &p.ev)
				}
				if err == nil {
					err = r.full()
				}
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// resourceWire keeps a ResourceLogs' resource: service.name and host.name
// in p.svc and p.host, the other attributes in p.res, each after a comma.
func (p *Parser) resourceWire(rl []byte) {
	p.svc, p.host, p.res = p.svc[:0], p.host[:0], p.res[:0]
	for f := (wireFields{b: rl}); f.next(); {
		if f.num != fieldResourceLogsResource || f.typ != protowire.BytesType {
			continue
		}
		for a := (wireFields{b: f.v}); a.next(); {
			if a.num != fieldResourceAttributes || a.typ != protowire.BytesType {
				continue
			}
			key, value := keyValueWire(a.v)
			switch string(key) {
			case "service.name":
				p.svc = appendTextWire(p.svc[:0], value)
			case "host.name":
				p.host = appendTextWire(p.host[:0], value)
			default:
				p.resourceKey(key)
				p.res = appendAnyOrNull(p.res, value)
			}
		}
	}
}

// scopeNameWire is the name of a ScopeLogs' scope.
func scopeNameWire(sl []byte) []byte {
	var name []byte
	for f := (wireFields{b: sl}); f.next(); {
		if f.num == fieldScopeLogsScope && f.typ == protowire.BytesType {
			for s := (wireFields{b: f.v}); s.next(); {
				if s.num == fieldScopeName && s.typ == protowire.BytesType {
					name = s.v
				}
			}
		}
	}
	return name
}

// keyValueWire splits a KeyValue into its key and its AnyValue's bytes.
func keyValueWire(kv []byte) (key, value []byte) {
	for f := (wireFields{b: kv}); f.next(); {
		if f.typ != protowire.BytesType {
			continue
		}
		switch f.num {
		case fieldKeyValueKey:
			key = f.v
		case fieldKeyValueValue:
			value = f.v
		}
	}
	return key, value
}

// wireRecord is what a LogRecord holds besides its attributes.
type wireRecord struct {
	time, observed          uint64
	severity                int32
	severityText, eventName []byte
	body, traceID, spanID   []byte
	hasBody                 bool
}

// readWireRecord reads rec's fields other than the attributes; the last
// of a repeated field wins, as in a decoded message.
func readWireRecord(rec []byte) (wireRecord, error) {
	var w wireRecord
	f := wireFields{b: rec}
	for f.next() {
		switch {
		case f.is(fieldRecordTime, protowire.Fixed64Type):
			w.time = f.x
		case f.is(fieldRecordObservedTime, protowire.Fixed64Type):
			w.observed = f.x
		case f.is(fieldRecordSeverityNumber, protowire.VarintType):
			w.severity = int32(f.x)
		case f.is(fieldRecordSeverityText, protowire.BytesType):
			w.severityText = f.v
		case f.is(fieldRecordBody, protowire.BytesType):
			w.body, w.hasBody = f.v, true
		case f.is(fieldRecordTraceID, protowire.BytesType):
			w.traceID = f.v
		case f.is(fieldRecordSpanID, protowire.BytesType):
			w.spanID = f.v
		case f.is(fieldRecordEventName, protowire.BytesType):
			w.eventName = f.v
		}
	}
	return w, f.err
}

// eventFromWire fills p.ev from one LogRecord in the wire format, mapped
// as eventFromRecord maps a decoded one; it returns "" or why the record
// is rejected.
func (p *Parser) eventFromWire(rec []byte, scope []byte) string {
	w, err := readWireRecord(rec)
	if err != nil {
		return fmt.Sprintf("cannot decode record: %v", err)
	}
	ev := &p.ev
	ev.Reset()
	p.attrs = p.attrs[:0]
	var reason string
	if ev.Time, reason = recordTime(w.time, w.observed, p.now); reason != "" {
		return reason
	}
	ev.Level = logline.LevelFromOTLP(w.severity)
	unknownSeverity := false
	if ev.Level == logline.LevelNone && len(w.severityText) > 0 {
		l, ok := logline.ParseLevel(w.severityText)
		ev.Level, unknownSeverity = l, !ok
	}
	if w.hasBody {
		if s, ok := stringWire(w.body); ok {
			ev.Message = s
		} else {
			p.message, err = appendAnyWire(p.message[:0], w.body, 0)
			if err != nil {
				return fmt.Sprintf("cannot decode record body: %v", err)
			}
			ev.Message = p.message
		}
	}
	haveID, reason := p.attrsFromWire(rec)
	if reason != "" {
		return reason
	}
	if !unknownSeverity {
		w.severityText = nil
	}
	p.recordAttrs(w.eventName, scope, w.traceID, w.spanID, w.severityText, false)
	ev.Service = p.svc // empty: finishEvent applies the default
	ev.Host = p.host
	p.finishEvent(true, haveID)
	return ""
}

// attrsFromWire writes rec's attributes into p.attrs in order, taking
// log.record.uid (or id) as the event id.
func (p *Parser) attrsFromWire(rec []byte) (haveID bool, reason string) {
	for f := (wireFields{b: rec}); f.next(); {
		if !f.is(fieldRecordAttributes, protowire.BytesType) {
			continue
		}
		key, value := keyValueWire(f.v)
		if !haveID && (string(key) == "log.record.uid" || string(key) == "id") {
			if p.id = appendTextWire(p.id[:0], value); len(p.id) > 0 {
				p.ev.ID, haveID = p.id, true
				continue
			}
		}
		p.attrs = attrName(p.attrs, key)
		var err error
		if p.attrs, err = appendAnyWire(p.attrs, value, 0); err != nil {
			return false, fmt.Sprintf("cannot decode attribute %q: %v", clip(key), err)
		}
	}
	return haveID, ""
}

// stringWire returns an AnyValue's string, when that is what it holds.
func stringWire(v []byte) ([]byte, bool) {
	var s []byte
	ok := false
	for f := (wireFields{b: v}); f.next(); {
		if anyValueType(f.num) == f.typ { // the oneof's last value wins
			s, ok = f.v, f.num == fieldAnyString
		}
	}
	return s, ok
}

// appendTextWire appends an AnyValue's string, or any other value as
// JSON; nothing for an empty value.
func appendTextWire(dst, v []byte) []byte {
	if s, ok := stringWire(v); ok {
		return append(dst, s...)
	}
	if len(v) == 0 {
		return dst
	}
	out, err := appendAnyWire(dst, v, 0)
	if err != nil {
		return dst
	}
	return out
}

// appendAnyOrNull appends an AnyValue as JSON, or null when it cannot be
// decoded: a resource's broken attribute does not reject its records.
func appendAnyOrNull(dst, v []byte) []byte {
	out, err := appendAnyWire(dst, v, 0)
	if err != nil {
		return append(dst, "null"...)
	}
	return out
}

// appendAnyWire appends an AnyValue in the wire format as JSON, as
// appendAnyValue does a decoded one: scalars as themselves, bytes as
// base64, arrays and key-value lists as arrays and objects, an empty value
// as null, NaN and infinities as strings. Of several values, the last
// wins. Nesting past jsonstr.MaxDepth is an error.
func appendAnyWire(dst, v []byte, depth int) ([]byte, error) {
	if depth >= jsonstr.MaxDepth {
		return dst, fmt.Errorf("nested deeper than %d levels", jsonstr.MaxDepth)
	}
	var last wireFields
	f := wireFields{b: v}
	for f.next() {
		if anyValueType(f.num) == f.typ {
			last = f
		}
	}
	if f.err != nil {
		return dst, f.err
	}
	switch {
	case last.num == fieldAnyString && last.typ == protowire.BytesType:
		return logline.AppendQuoted(dst, last.v), nil
	case last.num == fieldAnyBool && last.typ == protowire.VarintType:
		return strconv.AppendBool(dst, last.x != 0), nil
	case last.num == fieldAnyInt && last.typ == protowire.VarintType:
		return strconv.AppendInt(dst, int64(last.x), 10), nil
	case last.num == fieldAnyDouble && last.typ == protowire.Fixed64Type:
		return appendFloat(dst, math.Float64frombits(last.x)), nil
	case last.num == fieldAnyBytes && last.typ == protowire.BytesType:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, last.v)
		return append(dst, '"'), nil
	case last.num == fieldAnyArray && last.typ == protowire.BytesType:
		return appendArrayWire(dst, last.v, depth)
	case last.num == fieldAnyKvlist && last.typ == protowire.BytesType:
		return appendKvlistWire(dst, last.v, depth)
	}
	return append(dst, "null"...), nil
}

// anyValueType is the wire type of AnyValue's field num; -1 for a number
// it does not have (another type is an unknown field, as proto decodes it).
func anyValueType(num protowire.Number) protowire.Type {
	switch num {
	case fieldAnyBool, fieldAnyInt:
		return protowire.VarintType
	case fieldAnyDouble:
		return protowire.Fixed64Type
	case fieldAnyString, fieldAnyArray, fieldAnyKvlist, fieldAnyBytes:
		return protowire.BytesType
	}
	return -1
}

func appendArrayWire(dst, arr []byte, depth int) ([]byte, error) {
	dst = append(dst, '[')
	first := true
	f := wireFields{b: arr}
	for f.next() {
		if f.num != fieldArrayValues || f.typ != protowire.BytesType {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		var err error
		if dst, err = appendAnyWire(dst, f.v, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), f.err
}

func appendKvlistWire(dst, list []byte, depth int) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	f := wireFields{b: list}
	for f.next() {
		if f.num != fieldKvls || f.typ != protowire.BytesType {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		key, value := keyValueWire(f.v)
		dst = logline.AppendQuoted(dst, key)
		dst = append(dst, ':')
		var err error
		if dst, err = appendAnyWire(dst, value, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), f.err
}
