package query

import (
	"bytes"
	"encoding/binary"

	"ingest/logline"
)

// lineInfo is what the read-ahead learnt about a stored line: its time and
// level, and where its other fields end, so that handing the line out needs
// no second parse (the full parse of every handed-out line on the merging
// goroutine was most of a query's serial work). Offsets are from the start
// of the line.
type lineInfo struct {
	t       int64
	level   logline.Level
	escaped bool  // the message has escapes: unquote it when handing out
	lvlEnd  int32 // the ';' after the level
	svcEnd  int32 // the ';' after the service
	hostEnd int32 // the ';' after the host
	idEnd   int32 // the ';' after the id
	msgEnd  int32 // the ';' after the message's closing quote
}

// scanLine checks line (with or without its '\n') exactly as logline.Parse
// does and records its fields in li. When the message has escapes it is
// unquoted into *scratch (which grows as needed) to check them; msg is the
// message's text either way (a sub-slice of line when it has no escapes).
func scanLine(line []byte, li *lineInfo, scratch *[]byte) (msg []byte, ok bool) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	const end = timeOff + len(logline.TimeLayout)
	if len(line) <= end || string(line[:timeOff]) != logline.Version+";" || line[end] != ';' {
		return nil, false
	}
	t, ok := parseTime(line[timeOff:end])
	if !ok {
		return nil, false
	}
	pos := end + 1
	var ends [4]int32 // level, service, host, id
	for i := range ends {
		j := bytes.IndexByte(line[pos:], ';')
		if j < 0 {
			return nil, false
		}
		ends[i] = int32(pos + j)
		pos += j + 1
	}
	l, ok := levelOf(line[end+1 : ends[0]])
	if !ok {
		return nil, false
	}
	// The message: a JSON string literal, then ";{...}".
	q := line[pos:]
	if len(q) == 0 || q[0] != '"' {
		return nil, false
	}
	escaped := false
	var rest []byte
	if close := bytes.IndexByte(q[1:], '"') + 1; close > 0 && bytes.IndexByte(q[1:close], '\\') < 0 {
		if hasControl(q[1:close]) {
			return nil, false // logline.Parse: a raw control character
		}
		msg, rest = q[1:close], q[close+1:]
	} else {
		var err error
		if msg, rest, err = logline.UnquoteAppend((*scratch)[:0], q); err != nil {
			return nil, false
		}
		*scratch = msg
		escaped = true
	}
	if len(rest) < 3 || rest[0] != ';' || rest[1] != '{' || rest[len(rest)-1] != '}' {
		return nil, false
	}
	*li = lineInfo{t: t, level: l, escaped: escaped, lvlEnd: ends[0], svcEnd: ends[1], hostEnd: ends[2], idEnd: ends[3],
		msgEnd: int32(len(line) - len(rest))}
	return msg, true
}

// hasControl reports whether b holds a byte below 0x20, eight bytes at a
// time.
func hasControl(b []byte) bool {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20 borrows in x-lo while its top bit is clear.
		if (x-lo)&^x&hi != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// event fills e from a line scanLine accepted, as logline.Parse would;
// an escaped message is unquoted into *scratch.
func (li *lineInfo) event(line []byte, e *logline.Event, scratch *[]byte) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	e.Time, e.Level = li.t, li.level
	e.Service = line[li.lvlEnd+1 : li.svcEnd]
	e.Host = line[li.svcEnd+1 : li.hostEnd]
	e.ID = line[li.hostEnd+1 : li.idEnd]
	q := line[li.idEnd+1 : li.msgEnd]
	if li.escaped {
		*scratch, _, _ = logline.UnquoteAppend((*scratch)[:0], q) // checked by scanLine
		e.Message = *scratch
	} else {
		e.Message = q[1 : len(q)-1]
	}
	e.Attrs = line[li.msgEnd+1:]
	if len(e.Attrs) == 2 {
		e.Attrs = e.Attrs[:0]
	}
}
