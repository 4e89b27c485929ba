package query

import (
	"bytes"
	"encoding/binary"
	"math/bits"

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

// lineScanner checks stored lines and records their fields, for one
// goroutine: it keeps the scratch space escaped messages are unquoted into,
// and the hour of the last time field it parsed (a blob's lines nearly all
// share it, so most times parse from their minute on).
type lineScanner struct {
	scratch []byte
	hour    [14]byte // "2026-11-21T18:" of a valid time field, or zero
	base    int64    // that hour's start, Unix ns
}

// trimNL drops line's trailing '\n', if any (bytes.TrimSuffix compares
// through a call per line).
func trimNL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		return line[:n-1]
	}
	return line
}

// scan checks line (with or without its '\n') exactly as logline.Parse does
// and records its fields in li. When the message has escapes it is unquoted
// into the scanner's scratch space (valid until the next scan) to check
// them; msg is the message's text either way (a sub-slice of line when it
// has no escapes).
func (sc *lineScanner) scan(line []byte, li *lineInfo) (msg []byte, ok bool) {
	line = trimNL(line)
	const end = timeOff + len(logline.TimeLayout)
	if len(line) <= end || string(line[:timeOff]) != logline.Version+";" || line[end] != ';' {
		return nil, false
	}
	t, ok := sc.time(line[timeOff:end])
	if !ok {
		return nil, false
	}
	// The level, service, host and id fields are short: one loop over
	// them costs less than a bytes.IndexByte call each.
	pos := end + 1
	var ends [4]int32
	n := 0
	for i := pos; i < len(line); i++ {
		if line[i] == ';' {
			ends[n] = int32(i)
			if n++; n == len(ends) {
				pos = i + 1
				break
			}
		}
	}
	if n < len(ends) {
		return nil, false
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
	if i := special(q[1:]); i >= 0 && q[1+i] == '"' {
		// No escape and no raw control character before the closing quote.
		msg, rest = q[1:1+i], q[2+i:]
	} else {
		// An escape, a raw control character (which the unquoting
		// rejects) or no closing quote.
		var err error
		if msg, rest, err = logline.UnquoteAppend(sc.scratch[:0], q); err != nil {
			return nil, false
		}
		sc.scratch = msg
		escaped = true
	}
	if len(rest) < 3 || rest[0] != ';' || rest[1] != '{' || rest[len(rest)-1] != '}' {
		return nil, false
	}
	*li = lineInfo{t: t, level: l, escaped: escaped, lvlEnd: ends[0], svcEnd: ends[1], hostEnd: ends[2], idEnd: ends[3],
		msgEnd: int32(len(line) - len(rest))}
	return msg, true
}

// special returns the index of the first '"', '\\' or byte below 0x20 in
// b, or -1, looking at eight bytes at a time.
func special(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// A byte equal to zero borrows in v-ones while its top bit is
		// clear; so does a byte below 0x20 in x-0x20 each. A borrow only
		// marks bytes above the first true one: the lowest mark is exact.
		qt, bs := x^(ones*'"'), x^(ones*'\\')
		if m := ((qt-ones)&^qt | (bs-ones)&^bs | (x-ones*0x20)&^x) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return -1
}

// head reads a line's version, time and level, enough to filter, order and
// count it.
func (sc *lineScanner) head(line []byte, li *lineInfo) bool {
	const end = timeOff + len(logline.TimeLayout)
	if len(line) <= end || string(line[:timeOff]) != logline.Version+";" || line[end] != ';' {
		return false
	}
	t, ok := sc.time(line[timeOff:end])
	if !ok {
		return false
	}
	rest := line[end+1:]
	i := bytes.IndexByte(rest, ';')
	if i < 0 {
		return false
	}
	l, ok := levelOf(rest[:i])
	if !ok {
		return false
	}
	li.t, li.level = t, l
	return true
}

// time is parseTime, from the minute on when b is in the same hour as the
// last valid time it parsed.
func (sc *lineScanner) time(b []byte) (int64, bool) {
	if len(b) != len(logline.TimeLayout) {
		return 0, false
	}
	le := binary.LittleEndian
	if sc.base != 0 && le.Uint64(b) == le.Uint64(sc.hour[:]) && le.Uint64(b[6:]) == le.Uint64(sc.hour[6:]) {
		if b[16] != ':' || b[19] != '.' || b[27] != 'Z' {
			return 0, false
		}
		ok := true
		mi, s, f := digits(b[14:16], &ok), digits(b[17:19], &ok), digits(b[20:27], &ok)
		if !ok || mi > 59 || s > 60 {
			return 0, false
		}
		return sc.base + (mi*60+s)*1e9 + f*100, true
	}
	t, ok := parseTime(b)
	if ok {
		var valid bool // checked by parseTime
		mi, s, f := digits(b[14:16], &valid), digits(b[17:19], &valid), digits(b[20:27], &valid)
		if base := t - (mi*60+s)*1e9 - f*100; base != 0 {
			copy(sc.hour[:], b)
			sc.base = base
		}
	}
	return t, ok
}

// digits is the decimal number s; *ok is cleared if s holds a non-digit.
func digits(s []byte, ok *bool) int64 {
	var n int64
	for _, c := range s {
		c -= '0'
		if c > 9 {
			*ok = false
		}
		n = n*10 + int64(c)
	}
	return n
}

// parseTime is logline.ParseTime without time.Date: the same checks and
// the same result (out-of-range days and leap seconds carry over the same
// way), at a fraction of the cost on the scan path.
func parseTime(b []byte) (int64, bool) {
	if len(b) != len(logline.TimeLayout) || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' ||
		b[16] != ':' || b[19] != '.' || b[27] != 'Z' {
		return 0, false
	}
	ok := true
	y, mo, d := digits(b[0:4], &ok), digits(b[5:7], &ok), digits(b[8:10], &ok)
	h, mi, s, f := digits(b[11:13], &ok), digits(b[14:16], &ok), digits(b[17:19], &ok), digits(b[20:27], &ok)
	if !ok || y < 1678 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 {
		return 0, false
	}
	// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
	if mo <= 2 {
		y--
	}
	era := y / 400 // y >= 1677: never negative
	yoe := y - era*400
	mp := (mo + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := era*146097 + doe - 719468
	return ((days*86400+h*3600+mi*60+s)*1e9 + f*100), true
}

// levelOf is ParseLevel with a fast path for the names lines are written
// with.
func levelOf(b []byte) (logline.Level, bool) {
	switch string(b) {
	case "":
		return logline.LevelNone, true
	case "trace":
		return logline.LevelTrace, true
	case "debug":
		return logline.LevelDebug, true
	case "info":
		return logline.LevelInfo, true
	case "warn":
		return logline.LevelWarn, true
	case "error":
		return logline.LevelError, true
	case "fatal":
		return logline.LevelFatal, true
	}
	return logline.ParseLevel(b)
}

// event fills e from a line scan accepted (without its '\n'), as
// logline.Parse would; an escaped message is unquoted into *scratch.
func (li *lineInfo) event(line []byte, e *logline.Event, scratch *[]byte) {
	e.Time, e.Level = li.t, li.level
	e.Service = line[li.lvlEnd+1 : li.svcEnd]
	e.Host = line[li.svcEnd+1 : li.hostEnd]
	e.ID = line[li.hostEnd+1 : li.idEnd]
	q := line[li.idEnd+1 : li.msgEnd]
	if li.escaped {
		*scratch, _, _ = logline.UnquoteAppend((*scratch)[:0], q) // checked by scan
		e.Message = *scratch
	} else {
		e.Message = q[1 : len(q)-1]
	}
	e.Attrs = line[li.msgEnd+1:]
	if len(e.Attrs) == 2 {
		e.Attrs = e.Attrs[:0]
	}
}
