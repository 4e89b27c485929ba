package intake

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fastjson"

	"ingest/logline"
)

const (
	// MaxErrors caps the line errors listed in a Result; counting goes on.
	MaxErrors = 100
	// MaxLineBytes is the longest line (or array element) accepted. Longer
	// ones are rejected with their line number and skipped.
	MaxLineBytes = 1 << 20
	// retainBytes is the scratch capacity a pooled Parser may keep; a
	// request that grew a buffer past it drops that buffer on Put so one
	// huge request does not pin memory in the pool.
	retainBytes = 256 << 10
)

// LineError names one rejected line.
type LineError struct {
	Line  int    `json:"line"` // 1-based: line number, array element or OTLP record index
	Error string `json:"error"`
}

// Result counts the events of one request.
type Result struct {
	Accepted int         `json:"accepted"`
	Rejected int         `json:"rejected"`
	Errors   []LineError `json:"errors"` // the first MaxErrors rejections
}

// reject counts a bad line and lists it while there is room.
func (r *Result) reject(line int, msg string) {
	r.Rejected++
	if len(r.Errors) < MaxErrors {
		r.Errors = append(r.Errors, LineError{Line: line, Error: msg})
	}
}

// AppendJSON appends the 202 response body,
// {"accepted":N,"rejected":M,"errors":[{"line":L,"error":"..."}]}.
func (r *Result) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"accepted":`...)
	dst = strconv.AppendInt(dst, int64(r.Accepted), 10)
	dst = append(dst, `,"rejected":`...)
	dst = strconv.AppendInt(dst, int64(r.Rejected), 10)
	dst = append(dst, `,"errors":[`...)
	for i, e := range r.Errors {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"line":`...)
		dst = strconv.AppendInt(dst, int64(e.Line), 10)
		dst = append(dst, `,"error":`...)
		dst = logline.AppendQuoted(dst, []byte(e.Error))
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// Defaults fill in what an event does not say.
type Defaults struct {
	Service []byte // service of events without one; empty means "default"
	Now     int64  // Unix nanoseconds for events without a time; 0 means time.Now()
}

var defaultService = []byte("default")

// Parser holds the reusable state of one request: a JSON parser, scratch
// buffers and the event handed to emit. It is not safe for concurrent use.
// Take one with GetParser and return it with PutParser; after warm-up,
// parsing NDJSON allocates nothing per event.
type Parser struct {
	jp fastjson.Parser
	ev logline.Event
	lg Login

	attrs []byte // the event's attrs object
	msg   []byte // a non-string message rendered as JSON
	svc   []byte // service/user given as a number
	host  []byte // host/ip given as a number
	id    []byte // id given as a number, or generated
	ua    []byte // ua given as a number
	num   []byte // a number's text
	res   []byte // OTLP resource attributes, each after a comma
	ids   idGen
	spans []span // array element bounds

	service []byte // resolved default service of this request
	now     int64  // resolved default time of this request
	big     bool   // a line larger than retainBytes went through jp
}

var parserPool sync.Pool

// NewParser returns a fresh Parser. Most callers want GetParser.
func NewParser() *Parser { return new(Parser) }

// GetParser takes a Parser from the package's pool.
func GetParser() *Parser {
	if p, ok := parserPool.Get().(*Parser); ok {
		return p
	}
	return NewParser()
}

// PutParser returns p to the pool. Events and logins emitted by p must no
// longer be used. Buffers grown past a few hundred KiB are dropped, not
// pooled.
func PutParser(p *Parser) {
	if p.big {
		p.jp = fastjson.Parser{}
		p.big = false
	}
	for _, b := range []*[]byte{&p.attrs, &p.msg, &p.svc, &p.host, &p.id, &p.ua, &p.num, &p.res} {
		if cap(*b) > retainBytes {
			*b = nil
		}
	}
	if cap(p.spans) > retainBytes/8 {
		p.spans = nil
	}
	p.ev.Reset()
	p.lg = Login{}
	p.service = nil
	parserPool.Put(p)
}

// begin resets the per-request state.
func (p *Parser) begin(d *Defaults) {
	p.service = d.Service
	if len(p.service) == 0 {
		p.service = defaultService
	}
	p.now = d.Now
	if p.now == 0 {
		p.now = time.Now().UnixNano()
	}
	p.ids.reset()
}

// parseJSON parses one line or element with the reusable fastjson parser.
func (p *Parser) parseJSON(b []byte) (*fastjson.Object, string) {
	if len(b) > retainBytes {
		p.big = true
	}
	v, err := p.jp.ParseBytes(b)
	if err != nil {
		return nil, err.Error()
	}
	o, err := v.Object()
	if err != nil {
		return nil, "line is not a JSON object: it is " + v.Type().String()
	}
	return o, ""
}

// fieldKind classifies the keys with a meaning of their own.
type fieldKind uint8

const (
	fieldAttr fieldKind = iota
	fieldTime
	fieldLevel
	fieldService
	fieldHost
	fieldID
	fieldMessage
	// login fields
	fieldUser
	fieldSuccess
	fieldIP
	fieldUA
)

func eventField(key []byte) fieldKind {
	switch string(key) { // compiled to comparisons, no allocation
	case "ts", "timestamp", "time", "@timestamp", "date":
		return fieldTime
	case "level", "severity":
		return fieldLevel
	case "service":
		return fieldService
	case "host":
		return fieldHost
	case "id":
		return fieldID
	case "message", "msg", "log":
		return fieldMessage
	}
	return fieldAttr
}

// eventFromObject fills p.ev from one JSON object. It returns "" on success
// or why the line is rejected.
func (p *Parser) eventFromObject(o *fastjson.Object) string {
	ev := &p.ev
	ev.Reset()
	p.attrs = p.attrs[:0]
	var haveTime, haveLevel, haveMsg, haveID, haveService, haveHost bool
	var bad string
	o.Visit(func(key []byte, v *fastjson.Value) {
		if bad != "" {
			return
		}
		switch eventField(key) {
		case fieldTime:
			if haveTime {
				break
			}
			t, msg := p.timeOf(key, v)
			if msg != "" {
				bad = msg
				return
			}
			ev.Time, haveTime = t, true
			return
		case fieldLevel:
			if haveLevel {
				break
			}
			if l, ok := p.levelOf(v); ok {
				ev.Level, haveLevel = l, true
				return
			}
			// An unknown level keeps its spelling as an attribute.
		case fieldService:
			if s, ok := p.textOf(v, &p.svc); ok && !haveService {
				ev.Service, haveService = s, true // empty: the default applies
				return
			}
		case fieldHost:
			if s, ok := p.textOf(v, &p.host); ok && !haveHost {
				ev.Host, haveHost = s, true
				return
			}
		case fieldID:
			if s, ok := p.textOf(v, &p.id); ok && !haveID {
				ev.ID, haveID = s, len(s) > 0 // empty: one is generated
				return
			}
		case fieldMessage:
			if haveMsg {
				break
			}
			haveMsg = true
			if v.Type() == fastjson.TypeString {
				ev.Message, _ = v.StringBytes()
			} else {
				p.msg = p.appendJSON(p.msg[:0], v)
				ev.Message = p.msg
			}
			return
		}
		p.addAttr(key, v)
	})
	if bad != "" {
		return bad
	}
	if !haveMsg {
		return "line has no message, msg or log field"
	}
	p.finishEvent(haveTime, haveID)
	return ""
}

// finishEvent applies the defaults and closes the attrs object.
func (p *Parser) finishEvent(haveTime, haveID bool) {
	ev := &p.ev
	if !haveTime {
		ev.Time = p.now
	}
	if len(ev.Service) == 0 {
		ev.Service = p.service
	}
	if !haveID {
		p.id = p.ids.next(p.id[:0], p.now)
		ev.ID = p.id
	}
	if len(p.attrs) > 0 {
		p.attrs = append(p.attrs, '}')
		ev.Attrs = p.attrs
	}
}

// addAttr appends "key":value to the attrs object being built.
func (p *Parser) addAttr(key []byte, v *fastjson.Value) {
	p.attrs = p.attrKey(p.attrs, key)
	p.attrs = p.appendJSON(p.attrs, v)
}

// attrKey opens the object or adds a comma, then appends the quoted key
// and a colon.
func (p *Parser) attrKey(dst, key []byte) []byte {
	if len(dst) == 0 {
		dst = append(dst, '{')
	} else {
		dst = append(dst, ',')
	}
	dst = logline.AppendQuoted(dst, key)
	return append(dst, ':')
}

// appendJSON appends v as compact, valid JSON. fastjson's own MarshalTo is
// not used: it writes Go escapes (\x01) and lets raw control bytes,
// invalid UTF-8 and NaN through, any of which would break a stored line.
func (p *Parser) appendJSON(dst []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return logline.AppendQuoted(dst, s)
	case fastjson.TypeNumber:
		start := len(dst)
		dst = v.MarshalTo(dst)
		if !validNumber(dst[start:]) { // fastjson accepts NaN, Inf, +1, 1e
			p.num = append(p.num[:0], dst[start:]...)
			dst = logline.AppendQuoted(dst[:start], p.num)
		}
		return dst
	case fastjson.TypeObject:
		o, _ := v.Object()
		dst = append(dst, '{')
		first := true
		o.Visit(func(k []byte, vv *fastjson.Value) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = logline.AppendQuoted(dst, k)
			dst = append(dst, ':')
			dst = p.appendJSON(dst, vv)
		})
		return append(dst, '}')
	case fastjson.TypeArray:
		a, _ := v.Array()
		dst = append(dst, '[')
		for i, vv := range a {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = p.appendJSON(dst, vv)
		}
		return append(dst, ']')
	case fastjson.TypeTrue:
		return append(dst, "true"...)
	case fastjson.TypeFalse:
		return append(dst, "false"...)
	}
	return append(dst, "null"...)
}

// validNumber reports whether b is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// textOf returns a string value's text or a number's digits (copied into
// *buf); ok is false for other types, which stay attributes.
func (p *Parser) textOf(v *fastjson.Value, buf *[]byte) ([]byte, bool) {
	switch v.Type() {
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return s, true
	case fastjson.TypeNumber:
		*buf = v.MarshalTo((*buf)[:0])
		return *buf, true
	}
	return nil, false
}

// levelOf maps a level field; ok is false for spellings it does not know.
func (p *Parser) levelOf(v *fastjson.Value) (logline.Level, bool) {
	switch v.Type() {
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return logline.ParseLevel(s)
	case fastjson.TypeNumber:
		p.num = v.MarshalTo(p.num[:0])
		n, ok := smallInt(p.num)
		if !ok {
			return logline.LevelNone, false
		}
		return logline.LevelFromNumber(n)
	}
	return logline.LevelNone, false
}

// timeOf parses a timestamp field; msg says why it cannot.
func (p *Parser) timeOf(key []byte, v *fastjson.Value) (int64, string) {
	var text []byte
	switch v.Type() {
	case fastjson.TypeString:
		text, _ = v.StringBytes()
	case fastjson.TypeNumber:
		p.num = v.MarshalTo(p.num[:0])
		text = p.num
	default:
		return 0, fmt.Sprintf("cannot parse field %q: the timestamp is a JSON %s, want a string or a number", key, v.Type())
	}
	t, err := ParseTimestamp(text)
	if err != nil {
		return 0, fmt.Sprintf("cannot parse field %q: %q %v", key, clip(text), err)
	}
	return t, ""
}

// clip shortens a value quoted in an error message.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// smallInt parses a non-negative decimal integer of at most 9 digits.
func smallInt(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
