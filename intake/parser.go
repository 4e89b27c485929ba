package intake

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"ingest/intake/group"
	"ingest/intake/login"
	"ingest/internal/jsonstr"
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
	maxRows  int         // Defaults.MaxRows
}

// full refuses the request once it has more rows, accepted or rejected,
// than Defaults.MaxRows.
func (r *Result) full() error {
	if r.maxRows > 0 && r.Accepted+r.Rejected > r.maxRows {
		return r.tooMany()
	}
	return nil
}

// tooMany is full's refusal, apart so that full is inlined on every row.
func (r *Result) tooMany() error { return group.TooManyEvents(r.maxRows) }

// reject counts a bad line and lists it while there is room.
func (r *Result) reject(line int, reason string) {
	r.Rejected++
	if len(r.Errors) < MaxErrors {
		r.Errors = append(r.Errors, LineError{Line: line, Error: reason})
	}
}

// emit hands e, the row of line n, to emit and books the outcome: accepted,
// rejected alone (a group.Rejected error), or the error that ends parsing,
// returned.
func (r *Result) emit(n int, emit func(*logline.Event) error, e *logline.Event) error {
	return r.book(n, emit(e))
}

// book counts the row of line n by what its emit returned: accepted (nil),
// rejected alone (a group.Rejected error), or the error that ends parsing,
// returned.
func (r *Result) book(n int, err error) error {
	if err == nil {
		r.Accepted++
		return nil
	}
	return r.bookError(n, err)
}

// bookError is book's slow path, apart so that book is inlined on every
// row.
func (r *Result) bookError(n int, err error) error {
	if group.IsRejected(err) {
		r.reject(n, err.Error())
		return nil
	}
	return err
}

// AppendJSON appends the 202 response body,
// {"accepted":N,"rejected":M,"errors":[{"line":L,"error":"..."}]}.
func (r *Result) AppendJSON(dst []byte) []byte {
	return append(r.appendFields(dst), '}')
}

// AppendPendingJSON appends the 202 response body of a batch that is in
// the write-ahead log but not yet in storage: AppendJSON's fields and
// "stored":false with message, the reason.
func (r *Result) AppendPendingJSON(dst []byte, message string) []byte {
	dst = append(r.appendFields(dst), `,"stored":false,"message":`...)
	dst = logline.AppendQuoted(dst, []byte(message))
	return append(dst, '}')
}

// appendFields appends AppendJSON's object without its closing brace.
func (r *Result) appendFields(dst []byte) []byte {
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
	return append(dst, ']')
}

// Defaults fill in what an event does not say.
type Defaults struct {
	Service []byte // service of events without one; empty means "default"
	Now     int64  // Unix nanoseconds for events without a time; 0 means time.Now()
	// MaxRows caps the rows of the body, accepted or rejected: past it,
	// parsing ends with group.TooManyEvents (0: no cap).
	MaxRows int
}

var defaultService = []byte("default")

// Parser holds the reusable state of one request: scratch buffers, the id
// generator and the event handed to emit. It is not safe for concurrent use.
// Take one with GetParser and return it with PutParser; after warm-up,
// parsing NDJSON allocates nothing per event.
type Parser struct {
	ev logline.Event
	lg login.Attempt

	attrs   []byte // the event's attrs object
	message []byte // a non-string message rendered as JSON
	svc     []byte // service/user given as a number
	host    []byte // host/ip given as a number
	id      []byte // id given as a number, or generated
	ua      []byte // ua given as a number
	num     []byte // a number's text
	res     []byte // OTLP resource attributes, each after a comma
	key     []byte // a key with escapes, unescaped
	ids     IDs
	spans   []span        // array element bounds
	idx     jsonstr.Index // where the strings of the line being read end

	// The pending run of attribute members to copy into attrs as written:
	// runLine[runStart:runEnd] of the line being read; runEnd 0 when none.
	runLine          []byte
	runStart, runEnd int

	otlp *otlpJSON // the messages of the OTLP JSON form, once needed

	service []byte // resolved default service of this request
	now     int64  // resolved default time of this request
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
	for _, b := range []*[]byte{&p.attrs, &p.message, &p.svc, &p.host, &p.id, &p.ua, &p.num, &p.res, &p.key} {
		if cap(*b) > retainBytes {
			*b = nil
		}
	}
	if cap(p.spans) > retainBytes/8 {
		p.spans = nil
	}
	p.ev.Reset()
	p.lg = login.Attempt{}
	p.beginAttrs(nil) // keep no body alive from the pool
	p.idx.Release(retainBytes)
	p.service = nil
	p.otlp = nil // message trees of the last request's sizes
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
	p.ids.Reset()
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
	// By length first: this runs for every field of every event.
	switch len(key) {
	case 2:
		switch string(key) {
		case "ts":
			return fieldTime
		case "id":
			return fieldID
		}
	case 3:
		switch string(key) {
		case "msg", "log":
			return fieldMessage
		}
	case 4:
		switch string(key) {
		case "time", "date":
			return fieldTime
		case "host":
			return fieldHost
		}
	case 5:
		if string(key) == "level" {
			return fieldLevel
		}
	case 7:
		switch string(key) {
		case "message":
			return fieldMessage
		case "service":
			return fieldService
		}
	case 8:
		if string(key) == "severity" {
			return fieldLevel
		}
	case 9:
		if string(key) == "timestamp" {
			return fieldTime
		}
	case 10:
		if string(key) == "@timestamp" {
			return fieldTime
		}
	}
	return fieldAttr
}

// eventFromLine fills p.ev from one JSON object (a line or an array
// element). It returns "" on success or why the line is rejected.
func (p *Parser) eventFromLine(b []byte) string {
	p.ev.Reset()
	p.beginAttrs(b)
	var seen seenFields
	bad := p.walkObject(b, func(key, rawKey []byte, keyFlags jsonstr.Flags, start, i int) (int, string) {
		if end, reason, taken := p.eventFieldAt(b, key, i, &seen); taken {
			return end, reason
		}
		return p.attrAt(b, rawKey, keyFlags, start, i)
	})
	if bad != "" {
		return bad
	}
	if !seen.message {
		return "line has no message, msg or log field"
	}
	p.finishEvent(seen.time, seen.id)
	return ""
}

// seenFields records which of an event's own fields a line has set: the
// first occurrence wins, a repeat is kept as an attribute.
type seenFields struct{ time, level, message, id, service, host bool }

// eventFieldAt reads the value at b[i] into p.ev when key names one of the
// event's own fields and the value fits it; taken is false for everything
// that stays an attribute (other keys, repeats, an unknown level, a
// service that is an object...).
func (p *Parser) eventFieldAt(b, key []byte, i int, seen *seenFields) (end int, reason string, taken bool) {
	ev := &p.ev
	switch eventField(key) {
	case fieldTime:
		if !seen.time {
			seen.time = true
			ev.Time, end, reason = p.timeAt(b, i, key)
			return end, reason, true
		}
	case fieldLevel:
		if !seen.level {
			if l, end, ok := p.levelAt(b, i); ok {
				ev.Level, seen.level = l, true
				return end, "", true
			}
		}
	case fieldService:
		if !seen.service {
			if s, end, ok := p.textAt(b, i, &p.svc); ok {
				ev.Service, seen.service = s, true // empty: the default applies
				return end, "", true
			}
		}
	case fieldHost:
		if !seen.host {
			if s, end, ok := p.textAt(b, i, &p.host); ok {
				ev.Host, seen.host = s, true
				return end, "", true
			}
		}
	case fieldID:
		if !seen.id {
			if s, end, ok := p.textAt(b, i, &p.id); ok {
				ev.ID, seen.id = s, len(s) > 0 // empty: one is generated
				return end, "", true
			}
		}
	case fieldMessage:
		if !seen.message {
			seen.message = true
			end, reason = p.messageAt(b, i)
			return end, reason, true
		}
	}
	return i, "", false
}

// messageAt sets the event's message from the value at b[i]: a string's
// text (a sub-slice of b when it has no escapes), any other value as its
// JSON text.
func (p *Parser) messageAt(b []byte, i int) (end int, reason string) {
	ev := &p.ev
	ev.Message, end, ev.MessagePlain, reason = p.idx.Text(i, 0, &p.message)
	return end, reason
}

// finishEvent applies the defaults and closes the attrs object.
func (p *Parser) finishEvent(haveTime, haveID bool) {
	ev := &p.ev
	if len(ev.Service) == 0 {
		ev.Service = p.service
	}
	p.finishRecord(haveTime, haveID, &ev.Time, &ev.ID, &ev.Attrs)
}

// finishRecord fills in what an event or a login attempt did not carry (the
// request's time, a generated id) and closes the object of its other fields.
func (p *Parser) finishRecord(haveTime, haveID bool, t *int64, id, attrs *[]byte) {
	if !haveTime {
		*t = p.now
	}
	if !haveID {
		p.id = p.ids.Next(p.id[:0], p.now)
		*id = p.id
	}
	p.flushRun()
	if len(p.attrs) > 0 {
		p.attrs = append(p.attrs, '}')
		*attrs = p.attrs
	}
}

// beginAttrs starts the attrs object of line b.
func (p *Parser) beginAttrs(b []byte) {
	p.attrs = p.attrs[:0]
	p.runLine, p.runStart, p.runEnd = b, 0, 0
}

// attrAt adds the member whose key starts at b[start] and whose value is
// at b[i] to the attrs object being built, and returns the index after the
// value. A member already written the way attrs need it ("key":value,
// compact, nothing to escape) joins the pending run of such members, which
// is copied in one piece; the others are re-written.
func (p *Parser) attrAt(b, rawKey []byte, keyFlags jsonstr.Flags, start, i int) (int, string) {
	if i == start+len(rawKey)+3 && (keyFlags == 0 || jsonstr.Verbatim(rawKey, keyFlags)) { // "key": then the value
		if end := p.idx.CompactEnd(i, 0); end >= 0 {
			if p.runEnd > 0 && start == p.runEnd+1 && b[p.runEnd] == ',' {
				p.runEnd = end
			} else {
				p.flushRun()
				p.runStart, p.runEnd = start, end
			}
			return end, ""
		}
	}
	p.flushRun()
	p.attrs = p.attrKey(p.attrs, rawKey, keyFlags)
	var end int
	var reason string
	p.attrs, end, reason = jsonstr.AppendValue(p.attrs, b, i, 0)
	return end, reason
}

// flushRun appends the pending run of members to attrs.
func (p *Parser) flushRun() {
	if p.runEnd == 0 {
		return
	}
	if len(p.attrs) == 0 {
		p.attrs = append(p.attrs, '{')
	} else {
		p.attrs = append(p.attrs, ',')
	}
	p.attrs = append(p.attrs, p.runLine[p.runStart:p.runEnd]...)
	p.runEnd = 0
}

// attrKey opens the object or adds a comma, then appends the key (raw
// JSON string contents) and a colon.
func (p *Parser) attrKey(dst, rawKey []byte, keyFlags jsonstr.Flags) []byte {
	if len(dst) == 0 {
		dst = append(dst, '{')
	} else {
		dst = append(dst, ',')
	}
	dst = jsonstr.AppendRaw(dst, rawKey, keyFlags)
	return append(dst, ':')
}

// textAt reads a string's text or a number's digits at b[i] (a string
// with escapes is unescaped into *buf); ok is false for other values,
// which stay attributes. b is the indexed line.
func (p *Parser) textAt(b []byte, i int, buf *[]byte) (s []byte, end int, ok bool) {
	return p.idx.Scalar(i, buf)
}

// levelAt maps a level field at b[i]; ok is false for spellings and values
// it does not know, which the caller keeps as attributes.
func (p *Parser) levelAt(b []byte, i int) (logline.Level, int, bool) {
	s, end, ok := p.textAt(b, i, &p.num)
	if !ok {
		return logline.LevelNone, i, false
	}
	if b[i] != '"' {
		n, ok := smallInt(s)
		if !ok {
			return logline.LevelNone, i, false
		}
		l, ok := logline.LevelFromNumber(n)
		return l, end, ok
	}
	l, ok := parseLevel(s)
	return l, end, ok
}

// parseLevel is logline.ParseLevel with the usual spellings first, which
// spares the common case a map lookup.
func parseLevel(s []byte) (logline.Level, bool) {
	switch string(s) {
	case "info", "INFO":
		return logline.LevelInfo, true
	case "debug", "DEBUG":
		return logline.LevelDebug, true
	case "warn", "WARN", "warning", "WARNING":
		return logline.LevelWarn, true
	case "error", "ERROR":
		return logline.LevelError, true
	case "trace", "TRACE":
		return logline.LevelTrace, true
	case "fatal", "FATAL":
		return logline.LevelFatal, true
	}
	return logline.ParseLevel(s)
}

// timeAt parses the timestamp field key at b[i]; reason says why it cannot.
func (p *Parser) timeAt(b []byte, i int, key []byte) (t int64, end int, reason string) {
	text, end, ok := p.textAt(b, i, &p.num)
	if !ok {
		if _, end, reason := jsonstr.AppendValue(p.num[:0], b, i, 0); reason != "" {
			return 0, end, reason
		}
		return 0, end, fmt.Sprintf("cannot parse field %q: the timestamp is %s, want a string or a number", key, jsonstr.Kind(b[i]))
	}
	t, err := ParseTimestamp(text)
	if err != nil {
		return 0, end, fmt.Sprintf("cannot parse field %q: %q %v", key, clip(text), err)
	}
	return t, end, ""
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
