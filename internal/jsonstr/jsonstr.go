// Package jsonstr is the one codec for JSON string literals in ingest: it
// finds where a string ends (Scan, or Index for a reader of many strings
// of one line), unescapes its contents, and writes text or raw contents
// back out as a valid literal. The intake's event scanner, the
// array framer, the stored line format (logline) and every JSON answer use
// it, so a string is read and written by the same rules everywhere.
//
// It also holds the value reader the intake's decoders share (value.go):
// objects and arrays walked member by member through an Index, values
// copied as they came when they are already compact and valid, else
// rewritten (AppendValue).
//
// Two readings of escapes, for two kinds of input:
//
//   - Unescape is lenient, for what clients send: an unknown or malformed
//     escape is kept as written, a lone surrogate becomes U+FFFD.
//   - Unquote is strict, for stored lines this program wrote: anything but
//     a valid literal is an error.
//
// Writers always produce valid JSON: control characters are escaped and
// invalid UTF-8 becomes U+FFFD. Nothing here allocates beyond growing the
// caller's dst.
package jsonstr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// Flags say what kinds of bytes a string holds, from Scan.
type Flags uint8

const (
	Escape  Flags = 1 << iota // has a backslash escape
	Ctrl                      // has a raw control character (below 0x20)
	BadUTF8                   // has bytes that are not valid UTF-8
)

// quote and high mark, in class, the closing quote and a byte >= 0x80 (of
// a rune to check); they are not Flags values.
const (
	quote = 1 << 7
	high  = 1 << 6
)

// class sorts string bytes: 0 for a plain byte, else its flag, quote or high.
var class = func() (t [256]uint8) {
	for c := 0; c < 0x20; c++ {
		t[c] = uint8(Ctrl)
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = high
	}
	t['"'] = quote
	t['\\'] = uint8(Escape)
	return t
}()

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns a word with the high bit set in the lowest byte of w that
// is a quote, a backslash, a control character or >= 0x80 (bytes above it
// may be marked wrongly: a borrow only propagates up from a true hit).
func special(w uint64) uint64 {
	q := w ^ ('"' * ones)
	bs := w ^ ('\\' * ones)
	zeroQ := (q - ones) &^ q
	zeroBS := (bs - ones) &^ bs
	ctrl := (w - 0x20*ones) &^ w
	return (zeroQ | zeroBS | ctrl | w) & highs
}

// isQuote reports whether the byte of w whose high bit is bit at, the
// lowest that special marks, is a quote. It saves the common way out of
// Scan a load of the byte and of its class. The zero-byte test is exact
// at that byte: no lower byte of w is a quote, so no borrow reaches it.
func isQuote(w uint64, at int) bool {
	q := w ^ ('"' * ones)
	return ((q-ones)&^q)>>at&1 != 0
}

// skipPlain returns the index of the first byte from j on that special
// marks, or of one of the last 7 bytes of b (which it leaves to the caller).
func skipPlain(b []byte, j int) int {
	for ; j+8 <= len(b); j += 8 {
		if m := special(binary.LittleEndian.Uint64(b[j : j+8])); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	return j
}

// Scan returns the index just past the closing quote of the string whose
// opening quote is b[i], and what kinds of bytes it holds; end is -1 when
// the string is not terminated. It looks at 8 bytes at a time while they
// are plain, so a long message costs about a word's test per 8 bytes, and
// it checks each multi-byte rune as it passes it, so no caller reads the
// string again to know it is valid UTF-8: flags 0 means the contents are
// valid as they are.
func Scan(b []byte, i int) (end int, flags Flags) {
	return scanFrom(b, i+1)
}

// scanFrom is Scan of a string whose contents before b[j] are known to be
// plain bytes.
func scanFrom(b []byte, j int) (end int, flags Flags) {
	for {
		var c uint8
		for ; j+8 <= len(b); j += 8 {
			w := binary.LittleEndian.Uint64(b[j : j+8])
			if m := special(w); m != 0 {
				at := bits.TrailingZeros64(m)
				j += at >> 3
				if isQuote(w, at) {
					return j + 1, flags
				}
				c = class[b[j]]
				break
			}
		}
		for ; c == 0 && j < len(b); j++ {
			if c = class[b[j]]; c != 0 {
				break
			}
		}
		switch c {
		case 0:
			return -1, flags
		case quote:
			return j + 1, flags
		case high:
			if r, n := utf8.DecodeRune(b[j:]); r != utf8.RuneError || n > 1 {
				j += n
				continue
			}
			flags |= BadUTF8
		case uint8(Escape):
			flags |= Escape
			if j+1 < len(b) && (b[j+1] == '"' || b[j+1] == '\\') {
				j++ // escaped, so it neither ends the string nor escapes
			}
		default:
			flags |= Ctrl
		}
		j++
	}
}

// Unescape appends the text of a string's raw contents (between the
// quotes) to dst. Unknown or malformed escapes are kept as written; lone
// surrogates become U+FFFD.
func Unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			dst = append(dst, c)
			i++
			continue
		}
		e := raw[i+1]
		if e == 'u' {
			r, n := decodeU(raw[i+2:])
			if n == 0 {
				dst = append(dst, '\\', 'u')
				i += 2
				continue
			}
			dst = utf8.AppendRune(dst, r)
			i += 2 + n
			continue
		}
		if t, ok := simpleEscape(e); ok {
			dst = append(dst, t)
		} else {
			dst = append(dst, '\\', e)
		}
		i += 2
	}
	return dst
}

// simpleEscape is the byte a one-letter escape \e stands for.
func simpleEscape(e byte) (byte, bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// Unquote decodes the JSON string literal at the start of b, appends its
// text to dst and returns the bytes after the closing quote. It accepts
// only a valid literal (lone surrogates become U+FFFD) and names the first
// thing wrong.
func Unquote(dst, b []byte) (out, rest []byte, err error) {
	if len(b) == 0 || b[0] != '"' {
		return dst, b, errors.New("message is not a JSON string")
	}
	start := 1
	for i := 1; ; {
		if i = skipPlain(b, i); i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			return append(dst, b[start:i]...), b[i+1:], nil
		case c == '\\':
			dst = append(dst, b[start:i]...)
			if i+1 >= len(b) {
				return dst, nil, errors.New("message ends inside an escape")
			}
			e := b[i+1]
			i += 2
			if e == 'u' {
				r, n := decodeU(b[i:])
				if n == 0 {
					return dst, nil, errors.New(`message has a bad \u escape`)
				}
				dst = utf8.AppendRune(dst, r)
				i += n
			} else if t, ok := simpleEscape(e); ok {
				dst = append(dst, t)
			} else {
				return dst, nil, fmt.Errorf("message has an unknown escape \\%c", e)
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

const hexDigits = "0123456789abcdef"

// AppendQuoted appends text s as a JSON string literal.
func AppendQuoted(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; ; {
		if i = skipPlain(s, i); i >= len(s) {
			break
		}
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

// AppendRaw appends a string's raw contents (escapes as written, flags from
// Scan) as a valid JSON string literal: valid escapes are copied, the
// backslash of an invalid one is escaped, control characters are escaped
// and invalid UTF-8 becomes U+FFFD. With no flags it is a plain copy.
func AppendRaw(dst, raw []byte, flags Flags) []byte {
	dst = append(dst, '"')
	if flags == 0 {
		dst = append(dst, raw...)
		return append(dst, '"')
	}
	start := 0
	for i := 0; ; {
		if i = skipPlain(raw, i); i >= len(raw) {
			break
		}
		c := raw[i]
		switch {
		case c >= 0x20 && c < 0x80 && c != '\\' && c != '"':
			i++
			continue
		case c == '\\':
			if n := validEscape(raw[i:]); n > 0 {
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
			dst = AppendEscape(dst, c)
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

// Verbatim reports whether AppendRaw writes raw (a string's contents, with
// flags from Scan) back unchanged between its quotes: no control
// character, every escape valid, valid UTF-8. A caller can then copy the
// string as it came, quotes included. For text without escapes it also
// means AppendQuoted writes it unchanged.
func Verbatim(raw []byte, flags Flags) bool {
	if flags&(Ctrl|BadUTF8) != 0 {
		return false
	}
	if flags&Escape != 0 {
		for i := 0; i < len(raw); {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				break
			}
			n := validEscape(raw[i+j:])
			if n == 0 {
				return false
			}
			i += j + n
		}
	}
	return true
}

// validEscape is the length of the valid escape at the start of b (a
// backslash), or 0.
func validEscape(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	if b[1] == 'u' {
		if _, ok := hex4(b[2:]); ok {
			return 6
		}
		return 0
	}
	if _, ok := simpleEscape(b[1]); ok {
		return 2
	}
	return 0
}
