package intake

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"ingest/internal/jsonstr"
	"ingest/logline"
)

// The OTLP JSON request is framed here, down to its log records, and each
// resource, scope and record is decoded on its own by protojson (which
// knows the spelling of every field, enums by name, 64-bit integers as
// strings): memory is one record's message tree at a time, not the
// request's, and decoding stops as soon as emit says so. Field names are
// taken in both spellings protojson accepts (resourceLogs, resource_logs).

// otlpJSON is the messages a Parser decodes the JSON form into, reused.
type otlpJSON struct {
	resource resourcepb.Resource
	scope    commonpb.InstrumentationScope
	record   logspb.LogRecord
}

var protojsonOptions = protojson.UnmarshalOptions{DiscardUnknown: true}

// parseOTLPJSON emits the records of an OTLP JSON request, numbered
// across the request from 1.
func (p *Parser) parseOTLPJSON(body []byte, r *Result, emit func(*logline.Event) error) error {
	if err := walkOTLPJSON(body, nil, nil); err != nil {
		return errorf(http.StatusBadRequest, "cannot decode OTLP logs request: %v", err)
	}
	if p.otlp == nil {
		p.otlp = new(otlpJSON)
	}
	return walkOTLPJSON(body, &otlpEmitter{p: p, r: r}, emit)
}

// otlpEmitter decodes and emits what walkOTLPJSON finds: a resource before
// the records of its scopes, a scope before its records. A concrete type,
// not an interface, and emit passed along rather than kept in it, so that
// emit does not escape (every caller of ParseLogs would allocate its
// callback).
type otlpEmitter struct {
	p         *Parser
	r         *Result
	scopeName string
	n         int // records so far
}

func (v *otlpEmitter) resource(raw []byte) {
	p := v.p
	p.svc, p.host, p.res = p.svc[:0], p.host[:0], p.res[:0]
	if raw == nil || protojsonOptions.Unmarshal(raw, &p.otlp.resource) != nil {
		return // the records still go in, without what the resource says
	}
	for _, kv := range p.otlp.resource.GetAttributes() {
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
}

func (v *otlpEmitter) scope(raw []byte) {
	v.scopeName = ""
	if raw != nil && protojsonOptions.Unmarshal(raw, &v.p.otlp.scope) == nil {
		v.scopeName = v.p.otlp.scope.GetName()
	}
}

func (v *otlpEmitter) record(raw []byte, emit func(*logline.Event) error) error {
	v.n++
	rec := &v.p.otlp.record
	if err := protojsonOptions.Unmarshal(raw, rec); err != nil {
		v.r.reject(v.n, fmt.Sprintf("cannot decode record: %v", err))
	} else if reason := v.p.eventFromRecord(rec, v.scopeName, true); reason != "" {
		v.r.reject(v.n, reason)
	} else if err := v.r.emit(v.n, emit, &v.p.ev); err != nil {
		return err
	}
	return v.r.full()
}

// walkOTLPJSON walks the request's resource logs, their scope logs and
// their records, calling v (nil: only checking that the frame is sound).
func walkOTLPJSON(body []byte, v *otlpEmitter, emit func(*logline.Event) error) error {
	i := jsonstr.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return errors.New("the body is not a JSON object")
	}
	end, err := jsonMembers(body, i, func(key []byte, s, e int) error {
		if !isKey(key, "resourceLogs", "resource_logs") {
			return nil
		}
		return jsonObjects(body, s, "resourceLogs", func(s, e int) error { return walkResourceLogs(body[s:e], v, emit) })
	})
	if err != nil {
		return err
	}
	if jsonstr.SkipSpace(body, end) < len(body) {
		return errors.New("unexpected data after the request object")
	}
	return nil
}

// walkResourceLogs walks one ResourceLogs object: its resource first,
// wherever it is written, then its scope logs.
func walkResourceLogs(rl []byte, v *otlpEmitter, emit func(*logline.Event) error) error {
	return walkPart(rl, "resource", []string{"scopeLogs", "scope_logs"},
		func(raw []byte) {
			if v != nil {
				v.resource(raw)
			}
		},
		func(sl []byte) error { return walkScopeLogs(sl, v, emit) })
}

// walkScopeLogs walks one ScopeLogs object: its scope first, then its
// records.
func walkScopeLogs(sl []byte, v *otlpEmitter, emit func(*logline.Event) error) error {
	return walkPart(sl, "scope", []string{"logRecords", "log_records"},
		func(raw []byte) {
			if v != nil {
				v.scope(raw)
			}
		},
		func(rec []byte) error {
			if v == nil {
				return nil
			}
			return v.record(rec, emit)
		})
}

// walkPart walks a ResourceLogs or ScopeLogs object: head, the object
// named headKey (nil when it has none), goes first, wherever it is
// written; then each element of the array named by one of listKeys.
func walkPart(obj []byte, headKey string, listKeys []string, head func(raw []byte), each func(raw []byte) error) error {
	var raw []byte
	_, err := jsonMembers(obj, 0, func(key []byte, s, e int) error {
		if isKey(key, headKey) && obj[s] == '{' {
			raw = obj[s:e]
		}
		return nil
	})
	if err != nil {
		return err
	}
	head(raw)
	_, err = jsonMembers(obj, 0, func(key []byte, s, e int) error {
		if !isKey(key, listKeys...) {
			return nil
		}
		return jsonObjects(obj, s, listKeys[0], func(s, e int) error { return each(obj[s:e]) })
	})
	return err
}

// isKey reports whether the raw key is one of names.
func isKey(key []byte, names ...string) bool {
	for _, n := range names {
		if string(key) == n {
			return true
		}
	}
	return false
}

// jsonMembers calls fn for each member of the object at b[i], with its
// raw key (between the quotes) and its value's bounds, until fn returns an
// error; it returns the index after the object. Values are framed, not
// checked.
func jsonMembers(b []byte, i int, fn func(key []byte, start, end int) error) (int, error) {
	i = jsonstr.SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return i, errors.New("want a JSON object")
	}
	i = jsonstr.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, errors.New("want a member name")
		}
		q, _ := jsonstr.Scan(b, i)
		if q < 0 {
			return i, errors.New("not terminated before the end of the body")
		}
		key := b[i+1 : q-1]
		i = jsonstr.SkipSpace(b, q)
		if i >= len(b) || b[i] != ':' {
			return i, errors.New("want ':' after a member name")
		}
		start := jsonstr.SkipSpace(b, i+1)
		end, reason := jsonstr.FrameEnd(b, start)
		if reason != "" {
			return end, errors.New(reason)
		}
		if c := b[start]; c != '"' && c != '{' && c != '[' {
			end = start // a scalar ends at the object's end too
			for end < len(b) && !strings.ContainsRune(",} \t\r\n", rune(b[end])) {
				end++
			}
		}
		if end == start {
			return end, errors.New("a member has no value")
		}
		if err := fn(key, start, end); err != nil {
			return end, err
		}
		i = jsonstr.SkipSpace(b, end)
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		if i >= len(b) || b[i] != ',' {
			return i, errors.New("want ',' or '}' after a member")
		}
		i = jsonstr.SkipSpace(b, i+1)
	}
}

// jsonObjects calls fn for each element of the array of objects at b[i]
// (null: none), until fn returns an error; name names the field in errors.
func jsonObjects(b []byte, i int, name string, fn func(start, end int) error) error {
	if bytes.HasPrefix(b[i:], []byte("null")) {
		return nil
	}
	if b[i] != '[' {
		return fmt.Errorf("%s is not an array", name)
	}
	i = jsonstr.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for {
		end, reason := jsonstr.FrameEnd(b, i)
		if reason != "" {
			return errors.New(reason)
		}
		if end == i || b[i] != '{' {
			return fmt.Errorf("an element of %s is not an object", name)
		}
		if err := fn(i, end); err != nil {
			return err
		}
		i = jsonstr.SkipSpace(b, end)
		if i < len(b) && b[i] == ']' {
			return nil
		}
		if i >= len(b) || b[i] != ',' {
			return fmt.Errorf("want ',' or ']' in %s", name)
		}
		i = jsonstr.SkipSpace(b, i+1)
	}
}
