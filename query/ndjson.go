package query

import (
	"encoding/binary"
	"unicode/utf8"

	"ingest/logline"
)

// AppendNDJSON appends e as one JSON object and a '\n':
//
//	{"ts":"2026-11-21T18:04:05.1234567Z","level":"error","service":"api","host":"web-1","id":"01JDQ8","message":"disk full","code":507}
//
// ts has the line's seven fractional digits. Every attribute is merged in at
// the top level, in stored order; an attribute whose key is one of the fixed
// names, or ControlKey (reserved for control lines), is written as
// "attr.<key>". Attributes that are not a well-formed
// JSON object (never written by this project) are kept whole as the string
// field "attrs", so the output is always valid JSON. It allocates nothing.
func AppendNDJSON(dst []byte, e *logline.Event) []byte {
	dst = append(dst, `{"ts":"`...)
	dst = logline.AppendTime(dst, e.Time)
	dst = append(dst, `","level":"`...)
	dst = append(dst, e.Level.String()...)
	dst = append(dst, `","service":`...)
	dst = logline.AppendQuoted(dst, e.Service)
	dst = append(dst, `,"host":`...)
	dst = logline.AppendQuoted(dst, e.Host)
	dst = append(dst, `,"id":`...)
	dst = logline.AppendQuoted(dst, e.ID)
	dst = append(dst, `,"message":`...)
	dst = logline.AppendQuoted(dst, e.Message)
	return appendAttrsEnd(dst, e.Attrs)
}

// appendAttrsEnd appends the attributes a and closes the object.
func appendAttrsEnd(dst, a []byte) []byte {
	if len(a) > 0 {
		mark := len(dst)
		var ok bool
		if dst, ok = appendAttrs(dst, a); !ok {
			dst = append(dst[:mark], `,"attrs":`...)
			dst = logline.AppendQuoted(dst, a)
		}
	}
	return append(dst, '}', '\n')
}

// lineEncoder writes stored lines as AppendNDJSON writes their events,
// copying what a line already holds in the answer's form: its time field
// once a time of the same hour formatted to the same bytes, a message
// without escapes that is valid UTF-8, and plain service, host and id.
// One per goroutine.
type lineEncoder struct {
	hour [14]byte // a stored "2026-11-21T18:" that AppendTime writes alike; valid when ok
	ok   bool
}

// append appends line's event, encoded; li is what scan recorded and msg
// the message it returned.
func (en *lineEncoder) append(dst, line []byte, li *lineInfo, msg []byte) []byte {
	line = trimNL(line)
	dst = append(dst, `{"ts":"`...)
	ts := line[timeOff : timeOff+len(logline.TimeLayout)]
	// Seconds under 60 (60 carries into the next minute) and a known
	// hour: AppendTime would write the stored bytes.
	le := binary.LittleEndian
	if ts[17] <= '5' && en.ok && le.Uint64(ts) == le.Uint64(en.hour[:]) && le.Uint64(ts[6:]) == le.Uint64(en.hour[6:]) {
		dst = append(dst, ts...)
	} else {
		at := len(dst)
		dst = logline.AppendTime(dst, li.t)
		if ts[17] <= '5' && string(dst[at:]) == string(ts) {
			copy(en.hour[:], ts)
			en.ok = true
		}
	}
	dst = append(dst, `","level":"`...)
	dst = append(dst, li.level.String()...)
	dst = append(dst, `","service":`...)
	dst = appendQuotedShort(dst, line[li.lvlEnd+1:li.svcEnd])
	dst = append(dst, `,"host":`...)
	dst = appendQuotedShort(dst, line[li.svcEnd+1:li.hostEnd])
	dst = append(dst, `,"id":`...)
	dst = appendQuotedShort(dst, line[li.hostEnd+1:li.idEnd])
	dst = append(dst, `,"message":`...)
	if !li.escaped && utf8.Valid(msg) {
		// scan found no quote, backslash or control character in it:
		// the stored literal is what AppendQuoted would write.
		dst = append(dst, line[li.idEnd+1:li.msgEnd]...)
	} else {
		dst = logline.AppendQuoted(dst, msg)
	}
	attrs := line[li.msgEnd+1:]
	if len(attrs) == 2 {
		attrs = attrs[:0]
	}
	return appendAttrsEnd(dst, attrs)
}

// appendQuotedShort is logline.AppendQuoted for short fields that are
// usually printable ASCII without quotes or backslashes: those are copied.
func appendQuotedShort(dst, s []byte) []byte {
	for _, c := range s {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return logline.AppendQuoted(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendAttrs appends ,"key":value for each member of the JSON object a.
// ok is false when a is not a well-formed object; dst is then partial.
func appendAttrs(dst, a []byte) ([]byte, bool) {
	i := skipWS(a, 0)
	if i >= len(a) || a[i] != '{' {
		return dst, false
	}
	i = skipWS(a, i+1)
	if i < len(a) && a[i] == '}' {
		return dst, skipWS(a, i+1) == len(a)
	}
	for {
		if i >= len(a) || a[i] != '"' {
			return dst, false
		}
		kEnd, ok := skipString(a, i)
		if !ok {
			return dst, false
		}
		key := a[i:kEnd]
		i = skipWS(a, kEnd)
		if i >= len(a) || a[i] != ':' {
			return dst, false
		}
		i = skipWS(a, i+1)
		vEnd, ok := skipValue(a, i, 0)
		if !ok {
			return dst, false
		}
		dst = append(dst, ',')
		if reservedName(key, true) {
			dst = append(dst, `"attr.`...)
			dst = append(dst, key[1:]...)
		} else {
			dst = append(dst, key...)
		}
		dst = append(dst, ':')
		dst = appendCompact(dst, a[i:vEnd])
		i = skipWS(a, vEnd)
		if i >= len(a) {
			return dst, false
		}
		switch a[i] {
		case ',':
			i = skipWS(a, i+1)
		case '}':
			return dst, skipWS(a, i+1) == len(a)
		default:
			return dst, false
		}
	}
}

// appendCompact appends the well-formed JSON value v without whitespace
// outside strings, so a value spread over lines cannot break the NDJSON line.
func appendCompact(dst, v []byte) []byte {
	if !hasSpace(v) {
		return append(dst, v...)
	}
	inStr, esc := false, false
	for _, c := range v {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// hasSpace reports whether v holds a byte up to ' ': in a well-formed JSON
// value (no raw control characters in its strings) only whitespace, inside
// or outside strings. Cheaper than bytes.ContainsAny on short values.
func hasSpace(v []byte) bool {
	for _, c := range v {
		if c <= ' ' {
			return true
		}
	}
	return false
}

// reservedName reports whether the quoted JSON key is ControlKey or, with
// fixed, names one of the fields AppendNDJSON writes itself: such a key of
// an attribute is written "attr.<key>".
func reservedName(quoted []byte, fixed bool) bool {
	k := quoted[1 : len(quoted)-1]
	for _, c := range k {
		if c == '\\' {
			var buf [16]byte
			out, _, err := logline.UnquoteAppend(buf[:0], quoted)
			if err != nil {
				return false
			}
			k = out
			break
		}
	}
	switch string(k) {
	case ControlKey:
		return true
	case "ts", "level", "service", "host", "id", "message":
		return fixed
	}
	return false
}

// AppendDataObject appends obj, a JSON object of user data (a login
// attempt's answer line), with ControlKey at its top level renamed
// "attr.@ingest", so that it can never be taken for a control line. A
// well-formed obj without that key is appended as is; one that is not
// well-formed is appended as is too (the reader will fail to parse it,
// not misread it).
func AppendDataObject(dst, obj []byte) []byte {
	mark := len(dst)
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return append(dst, obj...)
	}
	dst = append(dst, '{')
	i = skipWS(obj, i+1)
	for first := true; i < len(obj) && obj[i] != '}'; first = false {
		if !first {
			if obj[i] != ',' {
				return append(dst[:mark], obj...)
			}
			i = skipWS(obj, i+1)
			dst = append(dst, ',')
		}
		if i >= len(obj) || obj[i] != '"' {
			return append(dst[:mark], obj...)
		}
		kEnd, ok := skipString(obj, i)
		if !ok {
			return append(dst[:mark], obj...)
		}
		if reservedName(obj[i:kEnd], false) {
			dst = append(dst, `"attr.`...)
			dst = append(dst, obj[i+1:kEnd]...)
		} else {
			dst = append(dst, obj[i:kEnd]...)
		}
		v := skipWS(obj, kEnd)
		if v >= len(obj) || obj[v] != ':' {
			return append(dst[:mark], obj...)
		}
		v = skipWS(obj, v+1)
		vEnd, ok := skipValue(obj, v, 0)
		if !ok {
			return append(dst[:mark], obj...)
		}
		dst = append(dst, ':')
		dst = append(dst, obj[v:vEnd]...)
		i = skipWS(obj, vEnd)
	}
	if i >= len(obj) {
		return append(dst[:mark], obj...)
	}
	return append(dst, obj[i:]...) // "}" and whatever follows it
}

func skipWS(a []byte, i int) int {
	for i < len(a) && (a[i] == ' ' || a[i] == '\t' || a[i] == '\n' || a[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the JSON string starting at a[i].
func skipString(a []byte, i int) (int, bool) {
	for j := i + 1; j < len(a); {
		switch c := a[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\':
			if j+1 >= len(a) {
				return 0, false
			}
			switch a[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(a) {
					return 0, false
				}
				for _, h := range a[j+2 : j+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, false
					}
				}
				j += 6
			default:
				return 0, false
			}
		case c < 0x20:
			return 0, false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(a[j:])
			if r == utf8.RuneError && n == 1 {
				return 0, false // invalid UTF-8 would make the output invalid JSON
			}
			j += n
		default:
			j++
		}
	}
	return 0, false
}

// maxDepth bounds nesting so hostile attributes cannot exhaust the stack.
const maxDepth = 64

// skipValue returns the index after the JSON value starting at a[i].
func skipValue(a []byte, i, depth int) (int, bool) {
	if i >= len(a) || depth > maxDepth {
		return 0, false
	}
	switch c := a[i]; {
	case c == '"':
		return skipString(a, i)
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = skipWS(a, i+1)
		if i < len(a) && a[i] == end {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i >= len(a) || a[i] != '"' {
					return 0, false
				}
				k, ok := skipString(a, i)
				if !ok {
					return 0, false
				}
				i = skipWS(a, k)
				if i >= len(a) || a[i] != ':' {
					return 0, false
				}
				i = skipWS(a, i+1)
			}
			v, ok := skipValue(a, i, depth+1)
			if !ok {
				return 0, false
			}
			i = skipWS(a, v)
			if i >= len(a) {
				return 0, false
			}
			if a[i] == end {
				return i + 1, true
			}
			if a[i] != ',' {
				return 0, false
			}
			i = skipWS(a, i+1)
		}
	case c == 't':
		return literal(a, i, "true")
	case c == 'f':
		return literal(a, i, "false")
	case c == 'n':
		return literal(a, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return skipNumber(a, i)
	}
	return 0, false
}

func literal(a []byte, i int, lit string) (int, bool) {
	if len(a)-i < len(lit) || string(a[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// skipNumber follows the JSON number grammar.
func skipNumber(a []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(a) && '0' <= a[i] && a[i] <= '9' {
			i++
		}
		return i
	}
	if a[i] == '-' {
		i++
	}
	switch {
	case i < len(a) && a[i] == '0':
		i++
	case i < len(a) && '1' <= a[i] && a[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(a) && a[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(a) && (a[i] == 'e' || a[i] == 'E') {
		i++
		if i < len(a) && (a[i] == '+' || a[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}
