package query

import (
	"encoding/binary"
	"unicode/utf8"

	"ingest/internal/jsonstr"
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

// appendAttrs appends ,"key":value for each member of the JSON object a,
// compact, with the keys reservedName names written "attr.<key>". ok is
// false when a is not a well-formed object; dst is then partial. Values are
// read and written by jsonstr's rules, so what it writes is valid JSON.
func appendAttrs(dst, a []byte) ([]byte, bool) {
	i := jsonstr.SkipSpace(a, 0)
	if i >= len(a) || a[i] != '{' {
		return dst, false
	}
	i = jsonstr.SkipSpace(a, i+1)
	if i < len(a) && a[i] == '}' {
		return dst, jsonstr.SkipSpace(a, i+1) == len(a)
	}
	for {
		dst = append(dst, ',')
		var ok bool
		if dst, i, ok = appendMember(dst, a, i, true); !ok {
			return dst, false
		}
		i = jsonstr.SkipSpace(a, i)
		if i >= len(a) {
			return dst, false
		}
		switch a[i] {
		case ',':
			i = jsonstr.SkipSpace(a, i+1)
		case '}':
			return dst, jsonstr.SkipSpace(a, i+1) == len(a)
		default:
			return dst, false
		}
	}
}

// appendMember appends the member "key":value of the object a that starts
// at a[i], compact, its key written "attr.<key>" when reservedName(fixed)
// names it, and returns the index after the value. ok is false when it is
// not a well-formed member; dst is then partial.
func appendMember(dst, a []byte, i int, fixed bool) (out []byte, end int, ok bool) {
	if i >= len(a) || a[i] != '"' {
		return dst, i, false
	}
	kEnd, fl := jsonstr.Scan(a, i)
	if kEnd < 0 {
		return dst, i, false
	}
	raw := a[i+1 : kEnd-1]
	if reservedName(raw, fl, fixed) {
		dst = append(dst, `"attr.`...)
		q := len(dst)
		dst = jsonstr.AppendRaw(dst, raw, fl)
		dst = append(dst[:q], dst[q+1:]...) // drop AppendRaw's opening quote
	} else {
		dst = jsonstr.AppendRaw(dst, raw, fl)
	}
	i = jsonstr.SkipSpace(a, kEnd)
	if i >= len(a) || a[i] != ':' {
		return dst, i, false
	}
	dst = append(dst, ':')
	dst, i, reason := jsonstr.AppendValue(dst, a, jsonstr.SkipSpace(a, i+1), 1)
	return dst, i, reason == ""
}

// reservedName reports whether the key, raw contents with flags from
// jsonstr.Scan, is ControlKey or, with fixed, names one of the fields
// AppendNDJSON writes itself: such a key of an attribute is written
// "attr.<key>".
func reservedName(raw []byte, fl jsonstr.Flags, fixed bool) bool {
	k := raw
	if fl&jsonstr.Escape != 0 {
		var buf [16]byte
		k = jsonstr.Unescape(buf[:0], raw)
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
// well-formed obj is appended compact, its members read and written by
// jsonstr's rules; one that is not well-formed is appended as is (the
// reader will fail to parse it, not misread it).
func AppendDataObject(dst, obj []byte) []byte {
	mark := len(dst)
	i := jsonstr.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return append(dst, obj...)
	}
	dst = append(dst, '{')
	i = jsonstr.SkipSpace(obj, i+1)
	for first := true; i < len(obj) && obj[i] != '}'; first = false {
		if !first {
			if obj[i] != ',' {
				return append(dst[:mark], obj...)
			}
			i = jsonstr.SkipSpace(obj, i+1)
			dst = append(dst, ',')
		}
		var ok bool
		if dst, i, ok = appendMember(dst, obj, i, false); !ok {
			return append(dst[:mark], obj...)
		}
		i = jsonstr.SkipSpace(obj, i)
	}
	if i >= len(obj) {
		return append(dst[:mark], obj...)
	}
	return append(dst, obj[i:]...) // "}" and whatever follows it
}
