package intake

import (
	"fmt"
	"unicode/utf8"

	"ingest/logline"
)

// This file is a small JSON scanner built for the event hot path. It walks
// a line once, with no value tree and no copy of the input: strings without
// escapes are handed out as sub-slices of the body, and attribute values are
// re-emitted compactly straight into the attrs buffer. A general-purpose
// parser (fastjson was the first version) spent half its time building and
// resetting a tree the event then read once, and copied every line.
//
// It follows RFC 8259 with a few allowances real log shippers need: invalid
// UTF-8 and raw control characters inside strings are accepted (and written
// back out escaped or replaced by U+FFFD, so attrs are always valid JSON),
// unknown escapes are kept literally, and Python's NaN / Infinity /
// -Infinity become strings.

// String flags from scanString.
const (
	strEscape uint8 = 1 << iota // has a backslash escape
	strCtrl                     // has a raw control character
	strHigh                     // has a byte >= 0x80
)

// maxDepth bounds object and array nesting in a line.
const maxDepth = 128

// strClass classifies string bytes: 0 plain, else one of the flags or
// strQuote for the closing quote.
const strQuote = 1 << 7

var strClass = func() (t [256]uint8) {
	for c := 0; c < 0x20; c++ {
		t[c] = strCtrl
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = strHigh
	}
	t['"'] = strQuote
	t['\\'] = strEscape
	return t
}()

// scanString returns the index just past the closing quote of the string
// whose opening quote is b[i], and what kinds of bytes it holds; end is -1
// when the string is not terminated. A plain table-driven loop: word-at-a-
// time (SWAR) skipping measured slower on the short strings of log events.
func scanString(b []byte, i int) (end int, flags uint8) {
	j := i + 1
	for {
		for j < len(b) && strClass[b[j]] == 0 {
			j++
		}
		if j >= len(b) {
			return -1, flags
		}
		c := strClass[b[j]]
		if c == strQuote {
			return j + 1, flags
		}
		flags |= c
		if c == strEscape {
			j++ // the escaped byte, which may be a quote
		}
		j++
	}
}

// content returns the text of the string at b[i] (unescaped into *buf when
// it has escapes, else a sub-slice of b) and the index after it.
func content(b []byte, i int, buf *[]byte) (s []byte, end int, ok bool) {
	end, fl := scanString(b, i)
	if end < 0 {
		return nil, i, false
	}
	raw := b[i+1 : end-1]
	if fl&strEscape == 0 {
		return raw, end, true
	}
	*buf = unescape((*buf)[:0], raw)
	return *buf, end, true
}

// unescape appends the text of a string's raw contents to dst. Unknown or
// malformed escapes are kept as written; lone surrogates become U+FFFD.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			dst = append(dst, c)
			i++
			continue
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, n := decodeU(raw[i+2:])
			if n == 0 {
				dst = append(dst, '\\', 'u')
				i += 2
				continue
			}
			dst = utf8.AppendRune(dst, r)
			i += 2 + n
			continue
		default:
			dst = append(dst, '\\', e)
		}
		i += 2
	}
	return dst
}

// decodeU decodes the hex digits after `\u`, joining a surrogate pair
// written as two escapes. n is how many bytes it used (0: not hex).
func decodeU(b []byte) (r rune, n int) {
	r, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if r >= 0xD800 && r < 0xDC00 && len(b) >= 10 && b[4] == '\\' && b[5] == 'u' {
		if lo, ok := hex4(b[6:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, 10
		}
	}
	if r >= 0xD800 && r < 0xE000 {
		return utf8.RuneError, 4
	}
	return r, 4
}

func hex4(b []byte) (rune, bool) {
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

// appendString appends a string's raw contents (escapes as written) as a
// valid JSON string literal: escapes are kept when valid and the backslash
// itself escaped when not, control characters are escaped and invalid
// UTF-8 becomes U+FFFD.
func appendString(dst, raw []byte, flags uint8) []byte {
	dst = append(dst, '"')
	if flags == 0 {
		dst = append(dst, raw...)
		return append(dst, '"')
	}
	start := 0
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c >= 0x20 && c < 0x80 && c != '\\' && c != '"':
			i++
			continue
		case c == '\\':
			n := 0 // length of a valid escape
			if i+1 < len(raw) {
				switch raw[i+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					n = 2
				case 'u':
					if _, ok := hex4(raw[i+2:]); ok {
						n = 6
					}
				}
			}
			if n > 0 {
				i += n
				continue
			}
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', '\\')
			i++
			start = i
			continue
		case c < 0x20 || c == '"':
			dst = append(dst, raw[start:i]...)
			dst = logline.AppendEscape(dst, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, raw[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, raw[start:]...)
	return append(dst, '"')
}

// scanNumber returns the index after the JSON number at b[i], or -1 when
// it is not one.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - s
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return -1
		}
	}
	return i
}

// literal returns the index after word at b[i], or -1.
func literal(b []byte, i int, word string) int {
	if len(b)-i >= len(word) && string(b[i:i+len(word)]) == word {
		return i + len(word)
	}
	return -1
}

// syntaxError describes a JSON syntax error at b[i].
func syntaxError(b []byte, i int, want string) string {
	if i >= len(b) {
		return "cannot parse JSON: the line ends where " + want + " should be"
	}
	return fmt.Sprintf("cannot parse JSON: unexpected %q at byte %d, want %s", b[i], i+1, want)
}

// appendValue appends the JSON value at b[i] to dst, compact and valid,
// and returns the index after it. err is "" or why the value is not JSON.
func appendValue(dst, b []byte, i, depth int) (out []byte, end int, err string) {
	if i >= len(b) {
		return dst, i, syntaxError(b, i, "a value")
	}
	switch c := b[i]; {
	case c == '"':
		end, fl := scanString(b, i)
		if end < 0 {
			return dst, i, "cannot parse JSON: a string is not terminated"
		}
		return appendString(dst, b[i+1:end-1], fl), end, ""
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return dst, i, fmt.Sprintf("cannot parse JSON: nested deeper than %d levels", maxDepth)
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		dst = append(dst, c)
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == closer {
			return append(dst, closer), i + 1, ""
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return dst, i, syntaxError(b, i, "a quoted key")
				}
				kend, fl := scanString(b, i)
				if kend < 0 {
					return dst, i, "cannot parse JSON: a key is not terminated"
				}
				dst = appendString(dst, b[i+1:kend-1], fl)
				i = skipWS(b, kend)
				if i >= len(b) || b[i] != ':' {
					return dst, i, syntaxError(b, i, "':'")
				}
				dst = append(dst, ':')
				i = skipWS(b, i+1)
			}
			dst, i, err = appendValue(dst, b, i, depth+1)
			if err != "" {
				return dst, i, err
			}
			i = skipWS(b, i)
			switch {
			case i < len(b) && b[i] == ',':
				dst = append(dst, ',')
				i = skipWS(b, i+1)
			case i < len(b) && b[i] == closer:
				return append(dst, closer), i + 1, ""
			default:
				return dst, i, syntaxError(b, i, "',' or '"+string(closer)+"'")
			}
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, w := range [...]string{"true", "false", "null"} {
			if end := literal(b, i, w); end >= 0 {
				return append(dst, w...), end, ""
			}
		}
	case c == 'N' || c == 'I':
		for _, w := range [...]string{"NaN", "Infinity"} {
			if end := literal(b, i, w); end >= 0 {
				return append(append(append(dst, '"'), w...), '"'), end, ""
			}
		}
	case c == '-' && literal(b, i, "-Infinity") >= 0:
		return append(dst, `"-Infinity"`...), i + len("-Infinity"), ""
	case c == '-' || c >= '0' && c <= '9':
		if end := scanNumber(b, i); end >= 0 {
			return append(dst, b[i:end]...), end, ""
		}
		return dst, i, syntaxError(b, i, "a number")
	}
	return dst, i, syntaxError(b, i, "a value")
}

// walkObject walks the members of the JSON object that is the whole of b,
// calling fn with each key (unescaped), the key's raw text and flags (to
// copy it into attrs), and the index of the value. fn consumes the value
// and returns the index after it, or why the line is bad.
func (p *Parser) walkObject(b []byte, fn func(key, rawKey []byte, keyFlags uint8, i int) (int, string)) string {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		if _, end, msg := appendValue(p.num[:0], b, i, 0); msg == "" && skipWS(b, end) == len(b) {
			return "line is not a JSON object: it is " + jsonKind(b[i])
		}
		return syntaxError(b, i, "'{'")
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return syntaxError(b, i, "a quoted key")
			}
			end, fl := scanString(b, i)
			if end < 0 {
				return "cannot parse JSON: a key is not terminated"
			}
			rawKey := b[i+1 : end-1]
			key := rawKey
			if fl&strEscape != 0 {
				p.key = unescape(p.key[:0], rawKey)
				key = p.key
			}
			i = skipWS(b, end)
			if i >= len(b) || b[i] != ':' {
				return syntaxError(b, i, "':'")
			}
			if i = skipWS(b, i+1); i >= len(b) {
				return syntaxError(b, i, "a value")
			}
			var msg string
			if i, msg = fn(key, rawKey, fl, i); msg != "" {
				return msg
			}
			i = skipWS(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return syntaxError(b, i, "',' or '}'")
		}
	}
	if i = skipWS(b, i); i < len(b) {
		return syntaxError(b, i, "the end of the line after the object")
	}
	return ""
}
