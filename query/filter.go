package query

import (
	"bytes"
	"regexp"

	"ingest/logline"
)

// filter decides whether a stored line matches a query.
type filter struct {
	from, to     int64 // [from, to), Unix ns
	fromT, toT   []byte
	level        logline.Level
	levels       logline.LevelSet
	host         func([]byte) bool
	keep         func([]byte) bool
	text         []byte
	textRawCheck bool // text can be looked for in the raw line first
	grep         *regexp.Regexp
	countOnly    bool // the histogram: time and level are all it needs
	ndjson       bool // hand out matching lines encoded (RunNDJSON)
}

// timeOff is where the time field starts in a line ("1.0;").
const timeOff = len(logline.Version) + 1

func newFilter(q *Query) filter {
	f := filter{
		from: q.From.UnixNano(), to: q.To.UnixNano(),
		level: q.Level, levels: q.Levels, host: q.Host, keep: q.Keep, grep: q.Grep,
	}
	// Stored times are multiples of 100 ns, so t >= from and t < to hold
	// exactly when they hold for from and to rounded up to 100 ns; in that
	// form the fixed-width time fields compare as bytes.
	f.fromT = logline.AppendTime(nil, ceil100(f.from))
	f.toT = logline.AppendTime(nil, ceil100(f.to))
	if q.Text != "" {
		f.text = []byte(q.Text)
		f.textRawCheck = rawSafe(f.text)
	}
	return f
}

// headOnly reports whether the time and level of a line are all that
// counting it needs (the histogram without a filter on other fields).
func (f *filter) headOnly() bool {
	return f.countOnly && f.text == nil && f.host == nil && f.keep == nil
}

func ceil100(ns int64) int64 {
	if r := ns % 100; r > 0 {
		return ns + 100 - r
	} else if r < 0 {
		return ns - r
	}
	return ns
}

// rawSafe reports whether s appears verbatim in any JSON string literal whose
// value contains it: true when s has no byte a JSON encoder might escape
// (quotes, backslash, controls, and the HTML-safe and non-ASCII escapes
// some encoders apply).
func rawSafe(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '/' || c == '<' || c == '>' || c == '&' || c == '\'' {
			return false
		}
	}
	return true
}

// prefilter rejects lines cheaply, before parsing: by the bytes of the time
// field, by the level field and, where safe, by the text on the raw line. It never rejects a
// well-formed matching line.
func (f *filter) prefilter(line []byte) bool {
	const end = timeOff + len(logline.TimeLayout)
	if len(line) > end {
		t := line[timeOff:end]
		if bytes.Compare(t, f.fromT) < 0 || bytes.Compare(t, f.toT) >= 0 {
			return false
		}
	}
	if (f.level != logline.LevelNone || f.levels != 0) && len(line) > end {
		// The level field follows the time: a line below the level, or
		// not of the levels, is rejected here, before its time is parsed.
		rest := line[end+1:]
		if i := bytes.IndexByte(rest, ';'); i >= 0 {
			if l, ok := levelOf(rest[:i]); ok && (l < f.level || f.levels != 0 && !f.levels.Has(l)) {
				return false
			}
		}
	}
	if f.textRawCheck && !bytes.Contains(line, f.text) {
		return false
	}
	return true
}

// match checks a scanned line against every filter; msg is its unescaped
// message (nil when only the time and level were read: headOnly).
func (f *filter) match(line []byte, li *lineInfo, msg []byte) bool {
	if li.t < f.from || li.t >= f.to {
		return false
	}
	if f.level != logline.LevelNone && li.level < f.level {
		return false
	}
	if f.levels != 0 && !f.levels.Has(li.level) {
		return false
	}
	if f.text != nil && !bytes.Contains(msg, f.text) {
		return false
	}
	if f.host != nil && !f.host(line[li.svcEnd+1:li.hostEnd]) {
		return false
	}
	if f.keep != nil && !f.keep(msg) {
		return false
	}
	if f.grep != nil && !f.grep.Match(trimNL(line)) {
		return false
	}
	return true
}
