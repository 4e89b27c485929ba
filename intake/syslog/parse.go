// Package syslog reads syslog messages into log events: RFC 5424 and RFC
// 3164 (the BSD format, as rsyslog, syslog-ng and network gear send it),
// framed on a stream as RFC 6587 says (octet-counted or newline-framed,
// told apart per message), one message per datagram on UDP.
//
// The mapping: the app name (RFC 3164: the tag) is the service ("syslog"
// when there is none), the severity the level (emerg, alert and crit are
// fatal, err error, warning warn, notice and info info, debug debug), the
// hostname the host, the message the message (a UTF-8 byte-order mark
// before an RFC 5424 message is dropped). The facility, the proc id, the
// msg id and every structured-data parameter (as "SD-ID.PARAM") are
// attributes. An RFC 3164 time has no year and no zone: it is read as UTC,
// in the current year, or the previous one when that would put it more
// than a day ahead of now. A message without a time takes the time it was
// read.
//
// A Parser reuses its memory: after warm-up, parsing a message allocates
// nothing. An event it returns is valid until the next call.
package syslog

import (
	"bytes"
	"errors"
	"time"

	"ingest/intake"
	"ingest/logline"
)

// DefaultService names the events of a message without an app name.
const DefaultService = "syslog"

// Parser turns messages into events, reusing its memory.
type Parser struct {
	ev    logline.Event
	attrs []byte
	tmp   []byte // an unescaped structured-data value
	id    []byte
	ids   intake.IDs
}

var (
	errEmpty    = errors.New("empty message")
	errPriority = errors.New("bad priority: want <0> to <191>")
	errHeader   = errors.New("bad RFC 5424 header")
	errSD       = errors.New("bad RFC 5424 structured data")
)

var facilities = [...]string{"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
	"uucp", "cron", "authpriv", "ftp", "ntp", "security", "console", "solaris-cron",
	"local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}

var levels = [8]logline.Level{logline.LevelFatal, logline.LevelFatal, logline.LevelFatal,
	logline.LevelError, logline.LevelWarn, logline.LevelInfo, logline.LevelInfo, logline.LevelDebug}

// Parse reads one message (without its framing) into an event; now is the
// time it was read, in Unix nanoseconds.
func (p *Parser) Parse(msg []byte, now int64) (*logline.Event, error) {
	msg = bytes.TrimRight(msg, "\r\n\x00")
	if len(bytes.TrimSpace(msg)) == 0 {
		return nil, errEmpty
	}
	ev := &p.ev
	ev.Reset()
	p.attrs = append(p.attrs[:0], '{')
	pri, rest, err := priority(msg)
	if err != nil {
		return nil, err
	}
	ev.Level = levels[pri&7]
	p.attr("facility", []byte(facilities[pri>>3]))
	if len(rest) > 1 && rest[0] >= '1' && rest[0] <= '9' && (rest[1] == ' ' || (len(rest) > 2 && rest[1] >= '0' && rest[1] <= '9' && rest[2] == ' ')) {
		err = p.rfc5424(rest[bytes.IndexByte(rest, ' ')+1:], now)
	} else {
		p.rfc3164(rest, now)
	}
	if err != nil {
		return nil, err
	}
	if len(ev.Service) == 0 {
		ev.Service = []byte(DefaultService)
	}
	if ev.Time == 0 {
		ev.Time = now
	}
	if len(p.attrs) > 1 {
		ev.Attrs = append(p.attrs, '}')
	}
	p.id = p.ids.Next(p.id[:0], now)
	ev.ID = p.id
	return ev, nil
}

// priority reads "<N>"; a message without one is user.notice (RFC 3164).
func priority(b []byte) (int, []byte, error) {
	if b[0] != '<' {
		return 1<<3 | 5, b, nil
	}
	n, i := 0, 1
	for ; i < len(b) && i <= 4 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if i == 1 || i >= len(b) || b[i] != '>' || n > 191 {
		return 0, nil, errPriority
	}
	return n, b[i+1:], nil
}

// rfc5424 reads TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD [MSG].
func (p *Parser) rfc5424(b []byte, now int64) error {
	ev := &p.ev
	var f [5][]byte
	for i := range f {
		sp := bytes.IndexByte(b, ' ')
		if sp <= 0 {
			if i == 4 && len(b) > 0 { // MSGID ends the message: no SD at all
				f[i], b = b, nil
				break
			}
			return errHeader
		}
		f[i], b = b[:sp], b[sp+1:]
	}
	if !nil5424(f[0]) {
		t, ok := parseRFC3339(f[0])
		if !ok {
			return errHeader
		}
		ev.Time = t
	}
	if !nil5424(f[1]) {
		ev.Host = f[1]
	}
	if !nil5424(f[2]) {
		ev.Service = f[2]
	}
	if !nil5424(f[3]) {
		p.attr("procid", f[3])
	}
	if !nil5424(f[4]) {
		p.attr("msgid", f[4])
	}
	rest, err := p.structuredData(b)
	if err != nil {
		return err
	}
	if len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	ev.Message = bytes.TrimPrefix(rest, []byte("\xef\xbb\xbf"))
	return nil
}

func nil5424(b []byte) bool { return len(b) == 1 && b[0] == '-' }

// structuredData reads "-" or one or more [SD-ID PARAM="VALUE" ...]
// elements into attributes, and returns what follows.
func (p *Parser) structuredData(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return b, nil
	}
	if b[0] == '-' {
		return b[1:], nil
	}
	if b[0] != '[' {
		return nil, errSD
	}
	for len(b) > 0 && b[0] == '[' {
		end := sdName(b, 1)
		if end == 1 {
			return nil, errSD
		}
		id := b[1:end]
		i := end
		for i < len(b) && b[i] == ' ' {
			j := sdName(b, i+1)
			if j == i+1 || j+1 >= len(b) || b[j] != '=' || b[j+1] != '"' {
				return nil, errSD
			}
			name := b[i+1 : j]
			k := j + 2
			start := k
			escaped := false
			for ; k < len(b) && b[k] != '"'; k++ {
				if b[k] == '\\' && k+1 < len(b) {
					k++
					escaped = true
				}
			}
			if k >= len(b) {
				return nil, errSD
			}
			p.sdParam(id, name, b[start:k], escaped)
			i = k + 1
		}
		if i >= len(b) || b[i] != ']' {
			return nil, errSD
		}
		b = b[i+1:]
	}
	return b, nil
}

// sdName returns the end of the SD-NAME starting at i: printable ASCII but
// '=', ' ', ']' and '"'.
func sdName(b []byte, i int) int {
	for i < len(b) && b[i] > ' ' && b[i] < 127 && b[i] != '=' && b[i] != ']' && b[i] != '"' {
		i++
	}
	return i
}

// sdParam adds the attribute "ID.NAME", its value unescaped (\" \\ \]).
func (p *Parser) sdParam(id, name, v []byte, escaped bool) {
	p.sep()
	// Names are printable ASCII without '"': only '\\' needs escaping.
	p.attrs = append(p.attrs, '"')
	p.attrs = appendNamePart(p.attrs, id)
	p.attrs = append(p.attrs, '.')
	p.attrs = appendNamePart(p.attrs, name)
	p.attrs = append(p.attrs, '"', ':')
	if escaped {
		p.tmp = p.tmp[:0]
		for r := 0; r < len(v); r++ {
			if v[r] == '\\' && r+1 < len(v) && (v[r+1] == '"' || v[r+1] == '\\' || v[r+1] == ']') {
				r++
			}
			p.tmp = append(p.tmp, v[r])
		}
		v = p.tmp
	}
	p.attrs = logline.AppendQuoted(p.attrs, v)
}

func appendNamePart(dst, s []byte) []byte {
	for _, c := range s {
		if c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}

// attr adds a string attribute.
func (p *Parser) attr(name string, v []byte) {
	p.sep()
	p.attrs = append(p.attrs, '"')
	p.attrs = append(p.attrs, name...)
	p.attrs = append(p.attrs, '"', ':')
	p.attrs = logline.AppendQuoted(p.attrs, v)
}

func (p *Parser) sep() {
	if len(p.attrs) > 1 {
		p.attrs = append(p.attrs, ',')
	}
}

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// rfc3164 reads [TIMESTAMP] [HOSTNAME] [TAG[PID]:] MSG, leniently: what is
// not recognised is part of the message.
func (p *Parser) rfc3164(b []byte, now int64) {
	ev := &p.ev
	if t, n, ok := bsdTime(b, now); ok {
		ev.Time, b = t, b[n:]
	} else if sp := bytes.IndexByte(b, ' '); sp > 0 {
		if t, ok := parseRFC3339(b[:sp]); ok { // rsyslog's high-precision form
			ev.Time, b = t, b[sp+1:]
		}
	}
	// HOSTNAME, unless the first word is already the tag ("app[1]:", "app:").
	if sp := bytes.IndexByte(b, ' '); sp > 0 && !isTag(b[:sp]) {
		if next := b[sp+1:]; len(next) > 0 {
			if sp2 := bytes.IndexByte(next, ' '); sp2 > 0 && isTag(next[:sp2]) || isTag(next) {
				ev.Host, b = b[:sp], next
			}
		}
	}
	if sp := bytes.IndexByte(b, ' '); sp > 0 && isTag(b[:sp]) || sp < 0 && isTag(b) {
		tag := b
		if sp > 0 {
			tag, b = b[:sp], b[sp+1:]
		} else {
			b = nil
		}
		tag = tag[:len(tag)-1] // the ':'
		if i := bytes.IndexByte(tag, '['); i > 0 && tag[len(tag)-1] == ']' {
			p.attr("procid", tag[i+1:len(tag)-1])
			tag = tag[:i]
		}
		ev.Service = tag
	}
	ev.Message = b
}

// isTag reports whether w is "TAG:" or "TAG[PID]:".
func isTag(w []byte) bool {
	if len(w) < 2 || w[len(w)-1] != ':' {
		return false
	}
	for _, c := range w[:len(w)-1] {
		if c <= ' ' || c == ':' || c >= 127 {
			return false
		}
	}
	return true
}

// bsdTime reads "Mmm dd hh:mm:ss " (the day padded with a space or a
// zero), in UTC and the year that puts it at most a day after now.
func bsdTime(b []byte, now int64) (int64, int, bool) {
	if len(b) < 16 || b[3] != ' ' || b[6] != ' ' || b[9] != ':' || b[12] != ':' || b[15] != ' ' {
		return 0, 0, false
	}
	mon := -1
	for i, m := range months {
		if string(b[:3]) == m {
			mon = i
		}
	}
	d1 := b[4]
	if d1 == ' ' {
		d1 = '0'
	}
	day, ok1 := digits2(d1, b[5])
	hh, ok2 := digits2(b[7], b[8])
	mm, ok3 := digits2(b[10], b[11])
	ss, ok4 := digits2(b[13], b[14])
	if mon < 0 || !ok1 || !ok2 || !ok3 || !ok4 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60 {
		return 0, 0, false
	}
	year := time.Unix(0, now).UTC().Year()
	t := time.Date(year, time.Month(mon+1), day, hh, mm, ss, 0, time.UTC)
	if t.UnixNano() > now+int64(24*time.Hour) {
		t = t.AddDate(-1, 0, 0)
	}
	return t.UnixNano(), 16, true
}

func digits2(a, b byte) (int, bool) {
	if a < '0' || a > '9' || b < '0' || b > '9' {
		return 0, false
	}
	return int(a-'0')*10 + int(b-'0'), true
}

// parseRFC3339 reads YYYY-MM-DDThh:mm:ss[.frac](Z|+hh:mm|-hh:mm), the
// timestamp of RFC 5424, without allocating.
func parseRFC3339(b []byte) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't') || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	y1, ok1 := digits2(b[0], b[1])
	y2, ok2 := digits2(b[2], b[3])
	mo, ok3 := digits2(b[5], b[6])
	d, ok4 := digits2(b[8], b[9])
	h, ok5 := digits2(b[11], b[12])
	mi, ok6 := digits2(b[14], b[15])
	s, ok7 := digits2(b[17], b[18])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 {
		return 0, false
	}
	i, nanos := 19, 0
	if b[i] == '.' {
		i++
		scale := 100_000_000
		start := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			nanos += int(b[i]-'0') * scale
			scale /= 10
		}
		if i == start || i-start > 9 {
			return 0, false
		}
	}
	off := 0
	switch {
	case i == len(b)-1 && (b[i] == 'Z' || b[i] == 'z'):
	case i == len(b)-6 && (b[i] == '+' || b[i] == '-') && b[i+3] == ':':
		oh, ok1 := digits2(b[i+1], b[i+2])
		om, ok2 := digits2(b[i+4], b[i+5])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, false
		}
		off = (oh*60 + om) * 60
		if b[i] == '-' {
			off = -off
		}
	default:
		return 0, false
	}
	t := time.Date(y1*100+y2, time.Month(mo), d, h, mi, s, nanos, time.UTC).Add(-time.Duration(off) * time.Second)
	if t.Year() < 1678 || t.Year() > 2261 {
		return 0, false
	}
	return t.UnixNano(), true
}
