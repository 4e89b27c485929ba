package intake

import (
	"fmt"

	"ingest/internal/jsonstr"
)

// This file is a small JSON scanner built for the event hot path. It walks
// a line once, with no value tree and no copy of the input: strings without
// escapes are handed out as sub-slices of the body, attribute members that
// are already compact valid JSON are copied into the attrs buffer whole (a
// run of neighbours at a time), and only the others are re-emitted. A
// general-purpose parser (fastjson was the first version) spent half its
// time building and resetting a tree the event then read once, and copied
// every line.
//
// walkObject indexes the line first (jsonstr.Index: its quotes, and the
// bytes a string reader must look at closely, marked 64 at a time), and
// the Parser methods below that read strings of the line through that
// index take that line as b. appendValue, the slow path that rewrites a
// value, and the array framer read strings with jsonstr.Scan.
//
// It follows RFC 8259 with a few allowances real log shippers need: invalid
// UTF-8 and raw control characters inside strings are accepted (and written
// back out escaped or replaced by U+FFFD, so attrs are always valid JSON),
// unknown escapes are kept literally, and Python's NaN / Infinity /
// -Infinity become strings.

// maxDepth bounds object and array nesting in a line.
const maxDepth = 128

// content returns the text of the string at b[i] (unescaped into *buf when
// it has escapes, else a sub-slice of b) and the index after it; b is the
// indexed line.
func (p *Parser) content(b []byte, i int, buf *[]byte) (s []byte, end int, ok bool) {
	end, fl := p.idx.Scan(i)
	if end < 0 {
		return nil, i, false
	}
	raw := b[i+1 : end-1]
	if fl&jsonstr.Escape == 0 {
		return raw, end, true
	}
	*buf = jsonstr.Unescape((*buf)[:0], raw)
	return *buf, end, true
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
		end, fl := jsonstr.Scan(b, i)
		if end < 0 {
			return dst, i, "cannot parse JSON: a string is not terminated"
		}
		return jsonstr.AppendRaw(dst, b[i+1:end-1], fl), end, ""
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
				kend, fl := jsonstr.Scan(b, i)
				if kend < 0 {
					return dst, i, "cannot parse JSON: a key is not terminated"
				}
				dst = jsonstr.AppendRaw(dst, b[i+1:kend-1], fl)
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

// compactEnd returns the index after the JSON value at b[i] when
// appendValue would copy it unchanged: compact (no whitespace), strings
// jsonstr.Verbatim (nothing to escape or replace), no NaN or Infinity. Otherwise, and for
// anything malformed, it returns -1, and the caller reads the value again
// with appendValue, which rewrites it or says what is wrong. It costs a
// string a Scan and a number one pass, the same reading appendValue does,
// but nothing is appended byte by byte: the caller copies whole members.
// b is the indexed line.
func (p *Parser) compactEnd(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		end, fl := p.idx.Scan(i)
		if end < 0 || fl != 0 && !jsonstr.Verbatim(b[i+1:end-1], fl) {
			return -1
		}
		return end
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return -1
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i++
		if i < len(b) && b[i] == closer {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				kend, fl := p.idx.Scan(i)
				if kend < 0 || kend >= len(b) || b[kend] != ':' || fl != 0 && !jsonstr.Verbatim(b[i+1:kend-1], fl) {
					return -1
				}
				i = kend + 1
			}
			if i = p.compactEnd(b, i, depth+1); i < 0 || i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i++
			case closer:
				return i + 1
			default:
				return -1
			}
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		if literal(b, i, "-Infinity") >= 0 {
			return -1
		}
		return scanNumber(b, i)
	}
	return -1
}

// walkObject walks the members of the JSON object that is the whole of b,
// calling fn with each key (unescaped), the key's raw text and flags (to
// copy it into attrs), the index of the key's opening quote and the index
// of the value. fn consumes the value and returns the index after it, or
// why the line is bad.
func (p *Parser) walkObject(b []byte, fn func(key, rawKey []byte, keyFlags jsonstr.Flags, start, i int) (int, string)) string {
	p.idx.Reset(b)
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		if _, end, reason := appendValue(p.num[:0], b, i, 0); reason == "" && skipWS(b, end) == len(b) {
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
			start := i
			end, fl := p.idx.Scan(i)
			if end < 0 {
				return "cannot parse JSON: a key is not terminated"
			}
			rawKey := b[i+1 : end-1]
			key := rawKey
			if fl&jsonstr.Escape != 0 {
				p.key = jsonstr.Unescape(p.key[:0], rawKey)
				key = p.key
			}
			i = skipWS(b, end)
			if i >= len(b) || b[i] != ':' {
				return syntaxError(b, i, "':'")
			}
			if i = skipWS(b, i+1); i >= len(b) {
				return syntaxError(b, i, "a value")
			}
			var reason string
			if i, reason = fn(key, rawKey, fl, start, i); reason != "" {
				return reason
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
