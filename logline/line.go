package logline

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
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

	// MessagePlain promises that Message holds only printable ASCII other
	// than '"' and '\\', so AppendLine copies it without looking for bytes
	// to escape. A parser that has already scanned the message sets it.
	MessagePlain bool

	scratch []byte // Parse unescapes the message here
}

// Reset clears the event for reuse, keeping its scratch space.
func (e *Event) Reset() {
	scratch := e.scratch[:0]
	*e = Event{scratch: scratch}
}

// AppendLine appends e as one '\n'-terminated line.
func AppendLine(dst []byte, e *Event) []byte {
	dst = append(dst, Version...)
	dst = append(dst, ';')
	dst = AppendTime(dst, e.Time)
	dst = append(dst, ';')
	dst = append(dst, e.Level.String()...)
	dst = append(dst, ';')
	dst = AppendToken(dst, e.Service)
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

// AppendToken appends src with every byte outside [A-Za-z0-9._:@-] replaced
// by '_', truncated to MaxTokenLen. A token of dots only ("." or "..") has
// its dots replaced too, so a service name is always a safe path segment.
func AppendToken(dst, src []byte) []byte {
	if len(src) > MaxTokenLen {
		src = src[:MaxTokenLen]
	}
	start := len(dst)
	onlyDots := len(src) > 0
	for _, c := range src {
		if !tokenByte[c] {
			c = '_'
		}
		if c != '.' {
			onlyDots = false
		}
		dst = append(dst, c)
	}
	if onlyDots {
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
	onlyDots := len(s) > 0
	for _, c := range s {
		if !tokenByte[c] {
			return false
		}
		if c != '.' {
			onlyDots = false
		}
	}
	return !onlyDots
}

const hexDigits = "0123456789abcdef"

// AppendQuoted appends s as a JSON string literal. Invalid UTF-8 becomes
// U+FFFD, so the output is always valid JSON.
func AppendQuoted(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = AppendEscape(dst, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendEscape appends the JSON escape of c: a control character (below
// 0x20), '"' or '\\'.
func AppendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// UnquoteAppend decodes the JSON string literal at the start of b, appends
// its text to dst and returns the bytes after the closing quote.
func UnquoteAppend(dst, b []byte) (out, rest []byte, err error) {
	if len(b) == 0 || b[0] != '"' {
		return dst, b, errors.New("message is not a JSON string")
	}
	i := 1
	start := 1
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			dst = append(dst, b[start:i]...)
			return dst, b[i+1:], nil
		case c == '\\':
			dst = append(dst, b[start:i]...)
			if i+1 >= len(b) {
				return dst, nil, errors.New("message ends inside an escape")
			}
			esc := b[i+1]
			i += 2
			switch esc {
			case '"', '\\', '/':
				dst = append(dst, esc)
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'u':
				r, n, ok := decodeU(b[i:])
				if !ok {
					return dst, nil, errors.New(`message has a bad \u escape`)
				}
				i += n
				dst = utf8.AppendRune(dst, r)
			default:
				return dst, nil, fmt.Errorf("message has an unknown escape \\%c", esc)
			}
			start = i
		case c < 0x20:
			return dst, nil, errors.New("message has a raw control character")
		default:
			i++
		}
	}
	return dst, nil, errors.New("message has no closing quote")
}

// decodeU decodes the four hex digits after `\u` (and a following low
// surrogate escape when the first is a high surrogate).
func decodeU(b []byte) (r rune, n int, ok bool) {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 4 {
			return 0, false
		}
		var v rune
		for _, c := range b[:4] {
			v <<= 4
			switch {
			case '0' <= c && c <= '9':
				v |= rune(c - '0')
			case 'a' <= c && c <= 'f':
				v |= rune(c - 'a' + 10)
			case 'A' <= c && c <= 'F':
				v |= rune(c - 'A' + 10)
			default:
				return 0, false
			}
		}
		return v, true
	}
	r, ok = hex4(b)
	if !ok {
		return 0, 0, false
	}
	if r >= 0xD800 && r < 0xDC00 {
		if len(b) >= 10 && b[4] == '\\' && b[5] == 'u' {
			if lo, ok2 := hex4(b[6:]); ok2 && lo >= 0xDC00 && lo < 0xE000 {
				return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, 10, true
			}
		}
		return utf8.RuneError, 4, true
	}
	if r >= 0xDC00 && r < 0xE000 {
		return utf8.RuneError, 4, true
	}
	return r, 4, true
}

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
