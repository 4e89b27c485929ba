package es

import (
	"fmt"

	"ingest/intake"
	"ingest/internal/jsonstr"
	"ingest/logline"
)

// seen records which of the event's own fields a document has set: the
// first occurrence wins, a repeat stays an attribute.
type seen struct{ time, message, service, host, level bool }

// fallback is a field under its second name (a top-level timestamp, msg or
// log string), written to the attributes as it is read and moved to the
// event when the document lacks the first name.
type fallback struct {
	raw        []byte // the string's raw contents
	flags      jsonstr.Flags
	start, end int // the member in d.attrs, from its separator on
	ok         bool
}

const (
	fallbackTime = iota
	fallbackMessage
)

var defaultService = []byte("default")

// document fills d.ev from one document line; it returns "" or why the
// document is refused. The action's _index and _id are d.index and d.id.
func (d *Decoder) document(line []byte) string {
	d.ev.Reset()
	d.attrs = d.attrs[:0]
	d.rawPath, d.keyPath = d.rawPath[:0], d.keyPath[:0]
	d.seen = seen{}
	d.fallback = [2]fallback{}
	d.idx.Reset(line)
	i := jsonstr.SkipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return "the document is not a JSON object"
	}
	end, reason := d.object(i, 0, 0)
	if reason != "" {
		return reason
	}
	if i = jsonstr.SkipSpace(line, end); i < len(line) {
		return jsonstr.SyntaxError(line, i, "the end of the line after the document")
	}
	d.finish()
	return ""
}

// object walks the members of the object at b[i], whose dotted key (empty
// at the top) is d.rawPath and d.keyPath; flags are those of the key's
// parts.
func (d *Decoder) object(i, depth int, flags jsonstr.Flags) (int, string) {
	if depth >= jsonstr.MaxDepth {
		return i, fmt.Sprintf("cannot parse JSON: nested deeper than %d levels", jsonstr.MaxDepth)
	}
	rawLen, keyLen := len(d.rawPath), len(d.keyPath)
	return d.idx.Object(i, &d.key, func(key, rawKey []byte, fl jsonstr.Flags, _, v int) (int, string) {
		if depth == 0 { // the common case: the key is the whole name
			return d.member(key, rawKey, fl, v, depth)
		}
		d.rawPath = append(append(d.rawPath[:rawLen], '.'), rawKey...)
		d.keyPath = append(append(d.keyPath[:keyLen], '.'), key...)
		return d.member(d.keyPath, d.rawPath, flags|fl, v, depth)
	})
}

// member reads the value at b[v] of the member named name (dotted,
// unescaped; raw and flags to write it): one of the event's own fields, a
// nested object to flatten, or an attribute.
func (d *Decoder) member(name, raw []byte, flags jsonstr.Flags, v, depth int) (int, string) {
	if end, reason, taken := d.field(name, v, depth); taken {
		return end, reason
	}
	b := d.idx.Bytes()
	if b[v] == '{' {
		if j := jsonstr.SkipSpace(b, v+1); j < len(b) && b[j] != '}' {
			if depth == 0 {
				d.rawPath = append(d.rawPath[:0], raw...)
				d.keyPath = append(d.keyPath[:0], name...)
			}
			return d.object(v, depth+1, flags)
		}
	}
	return d.attr(name, raw, flags, v, depth)
}

// field reads the value at b[v] into the event when name is one of its own
// fields and the value fits it; taken is false for everything that stays
// an attribute.
func (d *Decoder) field(name []byte, v, depth int) (end int, reason string, taken bool) {
	ev := &d.ev
	if len(name) < 4 || len(name) > 12 { // none of the names below: most attributes
		return v, "", false
	}
	switch string(name) {
	case "@timestamp":
		if !d.seen.time {
			d.seen.time = true
			ev.Time, end, reason = d.timeAt(v)
			return end, reason, true
		}
	case "message":
		if !d.seen.message {
			d.seen.message = true
			end, reason = d.messageAt(v, depth)
			return end, reason, true
		}
	case "service.name", "service":
		if !d.seen.service && d.idx.Bytes()[v] == '"' {
			if s, end, ok := d.textAt(v, &d.svcBuf); ok {
				ev.Service, d.seen.service = s, len(s) > 0
				return end, "", true
			}
		}
	case "host.name", "host":
		if !d.seen.host && d.idx.Bytes()[v] == '"' {
			if s, end, ok := d.textAt(v, &d.hostBuf); ok {
				ev.Host, d.seen.host = s, true
				return end, "", true
			}
		}
	case "log.level", "level":
		if !d.seen.level {
			if l, end, ok := d.levelAt(v); ok {
				ev.Level, d.seen.level = l, true
				return end, "", true
			}
		}
	}
	return v, "", false
}

// attr writes the member named name (raw, flags) with the value at b[v]
// to the attributes, noting a fallback field's place.
func (d *Decoder) attr(name, raw []byte, flags jsonstr.Flags, v, depth int) (int, string) {
	b := d.idx.Bytes()
	start := len(d.attrs)
	if start == 0 {
		d.attrs = append(d.attrs, '{')
	} else {
		d.attrs = append(d.attrs, ',')
	}
	d.attrs = append(jsonstr.AppendRaw(d.attrs, raw, flags), ':')
	end := d.idx.CompactEnd(v, depth+1)
	if end >= 0 {
		d.attrs = append(d.attrs, b[v:end]...)
	} else {
		var reason string
		if d.attrs, end, reason = jsonstr.AppendValue(d.attrs, b, v, depth+1); reason != "" {
			return end, reason
		}
	}
	if depth == 0 && b[v] == '"' {
		d.noteFallback(name, v, start)
	}
	return end, ""
}

// noteFallback remembers the string at b[v], just written to the
// attributes from start on, when name is a second name of the time or the
// message.
func (d *Decoder) noteFallback(name []byte, v, start int) {
	k := -1
	switch string(name) {
	case "timestamp":
		k = fallbackTime
	case "msg", "log":
		k = fallbackMessage
	}
	if k < 0 || d.fallback[k].ok {
		return
	}
	end, fl := d.idx.Scan(v)
	d.fallback[k] = fallback{raw: d.idx.Bytes()[v+1 : end-1], flags: fl, start: start, end: len(d.attrs), ok: true}
}

// finish takes the fallback fields the document needs, applies the
// defaults and closes the attributes.
func (d *Decoder) finish() {
	ev := &d.ev
	var cut [2]*fallback
	if f := &d.fallback[fallbackTime]; !d.seen.time && f.ok {
		text := f.raw
		if f.flags&jsonstr.Escape != 0 {
			d.numBuf = jsonstr.Unescape(d.numBuf[:0], f.raw)
			text = d.numBuf
		}
		if t, err := intake.ParseTimestamp(text); err == nil {
			ev.Time, d.seen.time, cut[0] = t, true, f
		}
	}
	if f := &d.fallback[fallbackMessage]; !d.seen.message && f.ok {
		ev.Message, ev.MessagePlain = f.raw, f.flags == 0
		if f.flags&jsonstr.Escape != 0 {
			d.text = jsonstr.Unescape(d.text[:0], f.raw)
			ev.Message = d.text
		}
		cut[1] = f
	}
	if cut[0] != nil && cut[1] != nil && cut[0].start < cut[1].start {
		cut[0], cut[1] = cut[1], cut[0] // the later member first: the earlier one's place stays true
	}
	for _, f := range cut {
		if f != nil {
			d.cutAttr(f.start, f.end)
		}
	}
	if len(d.attrs) > 0 {
		d.attrs = append(d.attrs, '}')
		ev.Attrs = d.attrs
	}
	if !d.seen.time {
		ev.Time = d.now
	}
	switch {
	case d.seen.service:
	case len(d.index) > 0:
		ev.Service = d.index
	case len(d.path) > 0:
		ev.Service = d.path
	default:
		ev.Service = defaultService
	}
	ev.ID = d.id
	if len(ev.ID) == 0 {
		d.genID = d.ids.Next(d.genID[:0], d.now)
		ev.ID = d.genID
	}
}

// cutAttr removes the member written at attrs[start:end] (its separator
// included) from the open attributes object.
func (d *Decoder) cutAttr(start, end int) {
	a := d.attrs
	if start > 0 { // ",member": drop it whole
		d.attrs = append(a[:start], a[end:]...)
		return
	}
	if end == len(a) { // "{member" alone: nothing left
		d.attrs = a[:0]
		return
	}
	d.attrs = append(a[:1], a[end+1:]...) // "{member,next...": keep '{', drop the next one's comma
}

// timeAt parses the time at b[v].
func (d *Decoder) timeAt(v int) (t int64, end int, reason string) {
	b := d.idx.Bytes()
	text, end, ok := d.textAt(v, &d.numBuf)
	if !ok {
		if _, end, reason := jsonstr.AppendValue(d.numBuf[:0], b, v, 1); reason != "" {
			return 0, end, reason
		}
		return 0, end, "cannot parse field \"@timestamp\": it is " + jsonstr.Kind(b[v]) + ", want a string or a number"
	}
	t, err := intake.ParseTimestamp(text)
	if err != nil {
		return 0, end, fmt.Sprintf("cannot parse field \"@timestamp\": %q %v", clip(text), err)
	}
	return t, end, ""
}

// messageAt sets the message from the value at b[v]: a string's text, any
// other value as its JSON text.
func (d *Decoder) messageAt(v, depth int) (end int, reason string) {
	ev := &d.ev
	ev.Message, end, ev.MessagePlain, reason = d.idx.Text(v, depth+1, &d.text)
	return end, reason
}

// levelAt maps the level at b[v]; ok is false for a spelling or value it
// does not know, which stays an attribute.
func (d *Decoder) levelAt(v int) (logline.Level, int, bool) {
	b := d.idx.Bytes()
	s, end, ok := d.textAt(v, &d.numBuf)
	if !ok {
		return logline.LevelNone, v, false
	}
	if b[v] != '"' {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' || n > 100 {
				return logline.LevelNone, v, false
			}
			n = n*10 + int(c-'0')
		}
		l, ok := logline.LevelFromNumber(n)
		return l, end, ok
	}
	l, ok := logline.ParseLevel(s)
	return l, end, ok && l != logline.LevelNone
}

// clip shortens a value quoted in a reason.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
