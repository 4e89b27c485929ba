package loki

import (
	"strings"
	"unicode/utf8"

	"ingest/logline"
)

// label is one label of a stream; value points into the body or, when it
// had escapes, into stream.buf (off, and value set once parsing is done).
type label struct {
	name, value []byte
	off, n      int
	inBuf       bool
}

// stream is what every entry of a stream shares.
type stream struct {
	labels  []label
	buf     []byte // label values with escapes, unescaped
	service []byte
	host    []byte
	level   logline.Level
	attrs   []byte // {"name":"value",...} of the other labels, or empty
}

var defaultService = []byte("default")

func (s *stream) reset() {
	s.labels, s.buf = s.labels[:0], s.buf[:0]
	s.service, s.host, s.level = nil, nil, logline.LevelNone
	s.attrs = s.attrs[:0]
}

// add appends a label whose value is in the body.
func (s *stream) add(name, value []byte) {
	s.labels = append(s.labels, label{name: name, value: value})
}

// addUnescaped appends a label whose value was unescaped into s.buf from
// off on.
func (s *stream) addUnescaped(name []byte, off int) {
	s.labels = append(s.labels, label{name: name, off: off, n: len(s.buf) - off, inBuf: true})
}

// parseLabels reads a Prometheus label set, {a="b", c="d"}, into s: names
// of [A-Za-z0-9_:.-], values quoted with Go's escapes. It returns "" or why
// the text is not one.
func (s *stream) parseLabels(text []byte) string {
	i := skipSpace(text, 0)
	if i >= len(text) || text[i] != '{' {
		return "the labels do not start with '{'"
	}
	i = skipSpace(text, i+1)
	for i < len(text) && text[i] != '}' {
		start := i
		for i < len(text) && isNameByte(text[i]) {
			i++
		}
		if i == start {
			return "a label name is missing or has a byte other than [A-Za-z0-9_:.-]"
		}
		name := text[start:i]
		if i = skipSpace(text, i); i >= len(text) || text[i] != '=' {
			return "a label name is not followed by '='"
		}
		if i = skipSpace(text, i+1); i >= len(text) || text[i] != '"' {
			return "a label value is not quoted"
		}
		end, escaped := quotedEnd(text, i)
		if end < 0 {
			return "a label value is not terminated"
		}
		if !escaped {
			s.add(name, text[i+1:end-1])
		} else {
			off := len(s.buf)
			var ok bool
			if s.buf, ok = unquoteGo(s.buf, text[i+1:end-1]); !ok {
				return "a label value has a bad escape"
			}
			s.addUnescaped(name, off)
		}
		if i = skipSpace(text, end); i < len(text) && text[i] == ',' {
			i = skipSpace(text, i+1)
		} else if i >= len(text) || text[i] != '}' {
			return "the labels are not separated by ','"
		}
	}
	if i >= len(text) {
		return "the labels do not end with '}'"
	}
	if skipSpace(text, i+1) != len(text) {
		return "there is text after the labels' '}'"
	}
	return ""
}

// resolve sets the stream's service, host, level and attributes from its
// labels.
func (s *stream) resolve(serviceLabels []string) {
	for k := range s.labels {
		if l := &s.labels[k]; l.inBuf {
			l.value = s.buf[l.off : l.off+l.n]
		}
	}
	svc := s.find(serviceLabels...)
	lvl := -1
	for _, name := range [...]string{"level", "detected_level"} {
		if k := s.find(name); k >= 0 {
			if l, ok := logline.ParseLevel(s.labels[k].value); ok && l != logline.LevelNone {
				lvl, s.level = k, l
				break
			}
		}
	}
	host := s.find("host", "hostname")
	s.service = defaultService
	if svc >= 0 {
		s.service = s.labels[svc].value
	}
	if host >= 0 {
		s.host = s.labels[host].value
	}
	for k, l := range s.labels {
		if k == svc || k == lvl || k == host {
			continue
		}
		s.attrs = appendPair(s.attrs, l.name, l.value)
	}
	if len(s.attrs) > 0 {
		s.attrs = append(s.attrs, '}')
	}
}

// find returns the index of the first of names the stream has with a
// non-empty value, or -1.
func (s *stream) find(names ...string) int {
	for _, name := range names {
		for k := range s.labels {
			if string(s.labels[k].name) == name && len(s.labels[k].value) > 0 {
				return k
			}
		}
	}
	return -1
}

// appendPair appends "name":"value" to an attributes object being built
// (opening it, or adding a comma).
func appendPair(dst, name, value []byte) []byte {
	if len(dst) == 0 {
		dst = append(dst, '{')
	} else {
		dst = append(dst, ',')
	}
	dst = append(logline.AppendQuoted(dst, name), ':')
	return logline.AppendQuoted(dst, value)
}

// isNameByte reports whether c may be in a label name.
func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == ':' || c == '.' || c == '-'
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// quotedEnd returns the index after the closing quote of the Go string
// literal opened at b[i], or -1, and whether it has escapes.
func quotedEnd(b []byte, i int) (end int, escaped bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, escaped
}

// goEscapes pairs each one-letter escape of a Go string literal with the
// byte it stands for.
const goEscapes = "a\ab\bf\fn\nr\rt\tv\v\\\\\"\"''"

// unquoteGo appends the text of a Go string literal's contents (as
// strconv.Quote writes them) to dst; ok is false for a bad escape.
func unquoteGo(dst, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return dst, false
		}
		e := raw[i+1]
		i += 2
		if k := strings.IndexByte(goEscapes, e); k >= 0 && k%2 == 0 {
			dst = append(dst, goEscapes[k+1])
			continue
		}
		switch e {
		case 'x', 'u', 'U':
			n := 2
			if e == 'u' {
				n = 4
			} else if e == 'U' {
				n = 8
			}
			v, ok := hexValue(raw, i, n)
			if !ok {
				return dst, false
			}
			if e == 'x' {
				dst = append(dst, byte(v))
			} else {
				dst = utf8.AppendRune(dst, rune(v))
			}
			i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			if i+1 >= len(raw) || raw[i] < '0' || raw[i] > '7' || raw[i+1] < '0' || raw[i+1] > '7' {
				return dst, false
			}
			dst = append(dst, (e-'0')<<6|(raw[i]-'0')<<3|(raw[i+1]-'0'))
			i += 2
		default:
			return dst, false
		}
	}
	return dst, true
}

// hexValue reads n hex digits at raw[i:].
func hexValue(raw []byte, i, n int) (uint32, bool) {
	if i+n > len(raw) {
		return 0, false
	}
	var v uint32
	for _, c := range raw[i : i+n] {
		v <<= 4
		switch {
		case '0' <= c && c <= '9':
			v |= uint32(c - '0')
		case 'a' <= c && c <= 'f':
			v |= uint32(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			v |= uint32(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}
