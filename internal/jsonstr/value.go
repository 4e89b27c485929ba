package jsonstr

import "fmt"

// The value reader: one pass over JSON a client sent, with no value tree
// and no copy of the input. Objects and arrays are walked member by member
// (Index.Object, Index.Array) with the strings read through the Index;
// CompactEnd tells a value that can be copied as it came from one that
// AppendValue must rewrite. Every protocol's decoder reads its JSON with
// these, so a value is accepted, rewritten or refused by the same rules
// everywhere.
//
// It follows RFC 8259 with the allowances real log shippers need: invalid
// UTF-8 and raw control characters inside strings are accepted (and
// written back out escaped or replaced by U+FFFD, so what AppendValue
// writes is always valid JSON), unknown escapes are kept literally, and
// Python's NaN / Infinity / -Infinity become strings.
//
// Errors are reasons, "cannot parse JSON: ...", for a decoder to report
// with the line or record they concern; they cost nothing until a value is
// bad.

// MaxDepth bounds object and array nesting.
const MaxDepth = 128

// SkipSpace returns the index of the first byte from i on that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	// One comparison settles the usual case, a token right away: every
	// whitespace byte is <= ' ', no token's first byte is.
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// NumberEnd returns the index after the JSON number at b[i], or -1 when
// it is not one.
func NumberEnd(b []byte, i int) int {
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

// LiteralEnd returns the index after word at b[i], or -1.
func LiteralEnd(b []byte, i int, word string) int {
	if len(b)-i >= len(word) && string(b[i:i+len(word)]) == word {
		return i + len(word)
	}
	return -1
}

// SyntaxError describes a JSON syntax error at b[i]; want is what should
// have been there.
func SyntaxError(b []byte, i int, want string) string {
	if i >= len(b) {
		return "cannot parse JSON: the line ends where " + want + " should be"
	}
	return fmt.Sprintf("cannot parse JSON: unexpected %q at byte %d, want %s", b[i], i+1, want)
}

// Kind names the kind of JSON value starting with c, for messages.
func Kind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '"':
		return "a string"
	}
	return "a number"
}

// AppendValue appends the JSON value at b[i] to dst, compact and valid,
// and returns the index after it; depth is the nesting b[i] is at. reason
// is "" or why the value is not JSON.
func AppendValue(dst, b []byte, i, depth int) (out []byte, end int, reason string) {
	if i >= len(b) {
		return dst, i, SyntaxError(b, i, "a value")
	}
	switch c := b[i]; {
	case c == '"':
		end, fl := Scan(b, i)
		if end < 0 {
			return dst, i, "cannot parse JSON: a string is not terminated"
		}
		return AppendRaw(dst, b[i+1:end-1], fl), end, ""
	case c == '{' || c == '[':
		return appendContainer(dst, b, i, depth)
	case c == 't' || c == 'f' || c == 'n':
		for _, w := range [...]string{"true", "false", "null"} {
			if end := LiteralEnd(b, i, w); end >= 0 {
				return append(dst, w...), end, ""
			}
		}
	case c == 'N' || c == 'I':
		for _, w := range [...]string{"NaN", "Infinity"} {
			if end := LiteralEnd(b, i, w); end >= 0 {
				return append(append(append(dst, '"'), w...), '"'), end, ""
			}
		}
	case c == '-' && LiteralEnd(b, i, "-Infinity") >= 0:
		return append(dst, `"-Infinity"`...), i + len("-Infinity"), ""
	case c == '-' || c >= '0' && c <= '9':
		if end := NumberEnd(b, i); end >= 0 {
			return append(dst, b[i:end]...), end, ""
		}
		return dst, i, SyntaxError(b, i, "a number")
	}
	return dst, i, SyntaxError(b, i, "a value")
}

// appendContainer is AppendValue of the object or array at b[i].
func appendContainer(dst, b []byte, i, depth int) (out []byte, end int, reason string) {
	if depth >= MaxDepth {
		return dst, i, fmt.Sprintf("cannot parse JSON: nested deeper than %d levels", MaxDepth)
	}
	c := b[i]
	closer := byte('}')
	if c == '[' {
		closer = ']'
	}
	dst = append(dst, c)
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == closer {
		return append(dst, closer), i + 1, ""
	}
	for {
		if c == '{' {
			if i >= len(b) || b[i] != '"' {
				return dst, i, SyntaxError(b, i, "a quoted key")
			}
			kend, fl := Scan(b, i)
			if kend < 0 {
				return dst, i, "cannot parse JSON: a key is not terminated"
			}
			dst = AppendRaw(dst, b[i+1:kend-1], fl)
			i = SkipSpace(b, kend)
			if i >= len(b) || b[i] != ':' {
				return dst, i, SyntaxError(b, i, "':'")
			}
			dst = append(dst, ':')
			i = SkipSpace(b, i+1)
		}
		dst, i, reason = AppendValue(dst, b, i, depth+1)
		if reason != "" {
			return dst, i, reason
		}
		i = SkipSpace(b, i)
		switch {
		case i < len(b) && b[i] == ',':
			dst = append(dst, ',')
			i = SkipSpace(b, i+1)
		case i < len(b) && b[i] == closer:
			return append(dst, closer), i + 1, ""
		default:
			return dst, i, SyntaxError(b, i, "',' or '"+string(closer)+"'")
		}
	}
}

// CompactEnd returns the index after the JSON value at b[i] (b of the last
// Reset) when AppendValue would copy it unchanged: compact (no white
// space), strings Verbatim, no NaN or Infinity. Otherwise, and for
// anything malformed, it returns -1, and the caller reads the value again
// with AppendValue, which rewrites it or says what is wrong. It costs a
// string a Scan and a number one pass, the same reading AppendValue does,
// but nothing is appended byte by byte: the caller copies whole members.
func (x *Index) CompactEnd(i, depth int) int {
	b := x.b
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		end, fl := x.Scan(i)
		if end < 0 || fl != 0 && !Verbatim(b[i+1:end-1], fl) {
			return -1
		}
		return end
	case c == '{' || c == '[':
		return x.compactContainerEnd(i, depth)
	case c == 't':
		return LiteralEnd(b, i, "true")
	case c == 'f':
		return LiteralEnd(b, i, "false")
	case c == 'n':
		return LiteralEnd(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		if LiteralEnd(b, i, "-Infinity") >= 0 {
			return -1
		}
		return NumberEnd(b, i)
	}
	return -1
}

// compactContainerEnd is CompactEnd of the object or array at b[i].
func (x *Index) compactContainerEnd(i, depth int) int {
	b := x.b
	if depth >= MaxDepth {
		return -1
	}
	c := b[i]
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
			kend, fl := x.Scan(i)
			if kend < 0 || kend >= len(b) || b[kend] != ':' || fl != 0 && !Verbatim(b[i+1:kend-1], fl) {
				return -1
			}
			i = kend + 1
		}
		if i = x.CompactEnd(i, depth+1); i < 0 || i >= len(b) {
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
}

// Scalar returns the text of the string or the number at b[i] (b of the
// last Reset): a string's contents are a sub-slice of b, or when it has
// escapes its text unescaped into *buf. ok is false for any other value,
// and for a string not terminated.
func (x *Index) Scalar(i int, buf *[]byte) (s []byte, end int, ok bool) {
	switch c := x.b[i]; {
	case c == '"':
		end, fl := x.Scan(i)
		if end < 0 {
			return nil, i, false
		}
		raw := x.b[i+1 : end-1]
		if fl&Escape == 0 {
			return raw, end, true
		}
		*buf = Unescape((*buf)[:0], raw)
		return *buf, end, true
	case c == '-' || c >= '0' && c <= '9':
		if end := NumberEnd(x.b, i); end >= 0 {
			return x.b[i:end], end, true
		}
	}
	return nil, i, false
}

// Text returns the value at b[i] (b of the last Reset, at nesting depth)
// as text: a string's contents as Scalar gives them, any other value as
// its compact JSON written into *buf. plain reports a string with nothing
// a writer must escape or replace (AppendQuoted copies it as it is).
// reason is "" or why the value is not JSON.
func (x *Index) Text(i, depth int, buf *[]byte) (text []byte, end int, plain bool, reason string) {
	b := x.b
	if b[i] != '"' {
		*buf, end, reason = AppendValue((*buf)[:0], b, i, depth)
		return *buf, end, false, reason
	}
	end, fl := x.Scan(i)
	if end < 0 {
		return nil, i, false, "cannot parse JSON: a string is not terminated"
	}
	raw := b[i+1 : end-1]
	if fl&Escape == 0 {
		return raw, end, fl == 0, ""
	}
	*buf = Unescape((*buf)[:0], raw)
	return *buf, end, false, ""
}

// MemberFunc takes one member of an object: its key (unescaped), the key's
// raw contents and flags (to copy it), the index of the key's opening
// quote and the index of the value. It consumes the value and returns the
// index after it, or why the object is bad.
type MemberFunc func(key, rawKey []byte, keyFlags Flags, keyStart, value int) (end int, reason string)

// Object walks the members of the object at b[i] (b of the last Reset;
// b[i] is '{'), calling fn for each, and returns the index after the
// closing brace. A key with escapes is unescaped into *key.
func (x *Index) Object(i int, key *[]byte, fn MemberFunc) (end int, reason string) {
	b := x.b
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, ""
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, SyntaxError(b, i, "a quoted key")
		}
		start := i
		end, fl := x.Scan(i)
		if end < 0 {
			return i, "cannot parse JSON: a key is not terminated"
		}
		rawKey := b[i+1 : end-1]
		k := rawKey
		if fl&Escape != 0 {
			*key = Unescape((*key)[:0], rawKey)
			k = *key
		}
		i = SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, SyntaxError(b, i, "':'")
		}
		if i = SkipSpace(b, i+1); i >= len(b) {
			return i, SyntaxError(b, i, "a value")
		}
		if i, reason = fn(k, rawKey, fl, start, i); reason != "" {
			return i, reason
		}
		i = SkipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, ""
		}
		return i, SyntaxError(b, i, "',' or '}'")
	}
}

// Array walks the elements of the array at b[i] (b of the last Reset;
// b[i] is '['), calling fn with the index of each, and returns the index
// after the closing bracket. fn consumes the element and returns the index
// after it, or why the array is bad.
func (x *Index) Array(i int, fn func(value int) (end int, reason string)) (end int, reason string) {
	b := x.b
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, ""
	}
	for {
		if i >= len(b) {
			return i, SyntaxError(b, i, "a value")
		}
		if i, reason = fn(i); reason != "" {
			return i, reason
		}
		i = SkipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, ""
		}
		return i, SyntaxError(b, i, "',' or ']'")
	}
}

// Bytes returns the buffer of the last Reset.
func (x *Index) Bytes() []byte { return x.b }
