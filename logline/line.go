package logline

import (
	"bytes"
	"fmt"

	"ingest/internal/jsonstr"
)

// Version is the line format version, the first field of every line.
const Version = "1.0"

// MaxTokenLen caps service, host and id; longer values are truncated.
const MaxTokenLen = 256

// MaxServiceLen caps a service name (AppendService): the service is a blob
// path segment, and a segment must stay under every filesystem's NAME_MAX
// (255 bytes).
const MaxServiceLen = 200

// Event is one log event. Byte fields may point into a caller's buffer; an
// Event is meant to be reused (see Reset) so the hot path allocates nothing.
type Event struct {
	Time    int64 // Unix nanoseconds, UTC
	Level   Level
	Service []byte
	Host    []byte
	ID      []byte
	Message []byte // the text itself, not JSON-quoted
	Attrs   []byte // a compact JSON object, or empty for "{}"

	// MessagePlain promises that Message has nothing AppendQuoted would
	// change (no control character, '"' or '\\', and valid UTF-8), so
	// AppendLine copies it without looking for bytes to escape. A parser
	// that has already scanned the message sets it.
	MessagePlain bool
	// ServiceToken promises that Service is already a token (AppendService
	// or AppendToken wrote it), so AppendLine copies it as it is.
	ServiceToken bool

	scratch []byte // Parse unescapes the message here
}

// Reset clears the event for reuse, keeping its scratch space.
func (e *Event) Reset() {
	scratch := e.scratch[:0]
	*e = Event{scratch: scratch}
}

// AppendLine appends e as one '\n'-terminated line. An Encoder does the
// same faster when many events share a minute.
func AppendLine(dst []byte, e *Event) []byte {
	var enc Encoder
	return enc.AppendLine(dst, e)
}

// Encoder appends lines like AppendLine, remembering the last time stamp
// it wrote: events of the same minute (most of a batch) reuse its date,
// hour and minute and format only the seconds and ticks. The zero value is
// ready; an Encoder is not safe for concurrent use.
type Encoder struct {
	minute int64 // Unix minute of stamp, valid when ok
	ok     bool
	stamp  [timeLen]byte
}

// AppendLine appends e as one '\n'-terminated line.
func (enc *Encoder) AppendLine(dst []byte, e *Event) []byte {
	dst = append(dst, Version+";"...)
	dst = enc.AppendTime(dst, e.Time)
	dst = append(dst, ';')
	dst = append(dst, e.Level.String()...)
	dst = append(dst, ';')
	if e.ServiceToken {
		dst = append(dst, e.Service...)
	} else {
		dst = AppendToken(dst, e.Service)
	}
	dst = append(dst, ';')
	dst = AppendToken(dst, e.Host)
	dst = append(dst, ';')
	dst = AppendToken(dst, e.ID)
	dst = append(dst, ';')
	if e.MessagePlain {
		dst = append(dst, '"')
		dst = append(dst, e.Message...)
		dst = append(dst, '"')
	} else {
		dst = AppendQuoted(dst, e.Message)
	}
	dst = append(dst, ';')
	if len(e.Attrs) == 0 {
		dst = append(dst, "{}"...)
	} else {
		dst = append(dst, e.Attrs...)
	}
	return append(dst, '\n')
}

// tokenByte marks the bytes allowed in a token as themselves.
var tokenByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "._:@-" {
		t[c] = true
	}
	return t
}()

// notToken is tokenByte inverted as a number, for IsToken's loop without
// branches.
var notToken = func() (t [256]uint8) {
	for c, ok := range tokenByte {
		if !ok {
			t[c] = 1
		}
	}
	return t
}()

// AppendToken appends src with every byte outside [A-Za-z0-9._:@-] replaced
// by '_', truncated to MaxTokenLen. A token of dots only ("." or "..") has
// its dots replaced too, so a service name is always a safe path segment.
func AppendToken(dst, src []byte) []byte {
	if len(src) > MaxTokenLen {
		src = src[:MaxTokenLen]
	}
	if IsToken(src) { // the common case: one copy, no per-byte append
		return append(dst, src...)
	}
	start := len(dst)
	for _, c := range src {
		if !tokenByte[c] {
			c = '_'
		}
		dst = append(dst, c)
	}
	if onlyDots(dst[start:]) {
		for i := start; i < len(dst); i++ {
			dst[i] = '_'
		}
	}
	return dst
}

// AppendService appends the service name src as the blob path segment it is
// stored under: AppendToken's bytes, at most MaxServiceLen of them, and a
// leading '.' replaced by '_' (no hidden, "." or ".." segment), so that any
// name a client sends ("../../etc", "a/b", 1,000 bytes) is a name every
// store accepts. The intake, the query and the tail all name services so.
func AppendService(dst, src []byte) []byte {
	if len(src) > MaxServiceLen {
		src = src[:MaxServiceLen]
	}
	start := len(dst)
	dst = AppendToken(dst, src)
	if len(dst) > start && dst[start] == '.' {
		dst[start] = '_'
	}
	return dst
}

// IsToken reports whether s would be written unchanged by AppendToken.
func IsToken(s []byte) bool {
	if len(s) > MaxTokenLen {
		return false
	}
	// One OR of a table entry per byte and no branch: this runs for every
	// event's host and id (BenchmarkEncoderAppendLine 4% faster than
	// testing each byte, and 4% faster again 8 bytes a step in two chains
	// of ORs, whose lookups overlap).
	var bad, bad2 uint8
	r := s
	for len(r) >= 8 {
		bad |= notToken[r[0]] | notToken[r[1]] | notToken[r[2]] | notToken[r[3]]
		bad2 |= notToken[r[4]] | notToken[r[5]] | notToken[r[6]] | notToken[r[7]]
		r = r[8:]
	}
	for _, c := range r {
		bad |= notToken[c]
	}
	return bad|bad2 == 0 && (len(s) == 0 || s[0] != '.' || !onlyDots(s))
}

// onlyDots reports whether s is all dots.
func onlyDots(s []byte) bool {
	for _, c := range s {
		if c != '.' {
			return false
		}
	}
	return true
}

// AppendQuoted appends s as a JSON string literal. Invalid UTF-8 becomes
// U+FFFD, so the output is always valid JSON.
func AppendQuoted(dst, s []byte) []byte { return jsonstr.AppendQuoted(dst, s) }

// UnquoteAppend decodes the JSON string literal at the start of b, appends
// its text to dst and returns the bytes after the closing quote.
func UnquoteAppend(dst, b []byte) (out, rest []byte, err error) { return jsonstr.Unquote(dst, b) }

// ParseError says what is wrong with a stored line.
type ParseError struct{ Msg string }

func (e *ParseError) Error() string { return "cannot parse line: " + e.Msg }

// Parse fills e from one line (with or without its trailing '\n'). Byte
// fields point into line, except Message, which lives in e's scratch space
// until the next Parse or Reset.
func Parse(line []byte, e *Event) error {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	var f [6][]byte
	rest := line
	for i := range f {
		j := bytes.IndexByte(rest, ';')
		if j < 0 {
			return &ParseError{fmt.Sprintf("has %d fields before the message, want 6", i)}
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	if string(f[0]) != Version {
		return &ParseError{fmt.Sprintf("version %q, want %q", f[0], Version)}
	}
	t, err := ParseTime(f[1])
	if err != nil {
		return &ParseError{err.Error()}
	}
	lvl, ok := ParseLevel(f[2])
	if !ok {
		return &ParseError{fmt.Sprintf("unknown level %q", f[2])}
	}
	msg, rest, err := UnquoteAppend(e.scratch[:0], rest)
	if err != nil {
		return &ParseError{err.Error()}
	}
	if len(rest) < 3 || rest[0] != ';' || rest[1] != '{' || rest[len(rest)-1] != '}' {
		return &ParseError{"attrs are not a JSON object after the message"}
	}
	e.scratch = msg
	e.Time, e.Level = t, lvl
	e.Service, e.Host, e.ID = f[3], f[4], f[5]
	e.Message = msg
	e.Attrs = rest[1:]
	if len(e.Attrs) == 2 {
		e.Attrs = e.Attrs[:0]
	}
	return nil
}
