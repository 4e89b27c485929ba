package blobsink

import (
	"bytes"
	"ingest/logline"
)

// scanMeta computes a block's metadata from its lines without parsing them
// whole: the time field has a fixed width and sorts as text. A time is
// parsed only for a line older than the block's lateness so far allows
// (see Meta.Late) and not in the newest line's minute, so lines in time
// order cost text comparisons alone, and lines of concurrent requests,
// which interleave within a minute, a few digits each. The lines are
// this program's (the buffer's chunks): every time is valid.
//
// Flush needs it only for a piece the buffer handed without its Summary:
// lines replayed from the WAL after a restart, the rest of a piece a
// failed flush stored in part, a piece a block boundary cuts, or a
// compressed block.
func scanMeta(raw []byte) Meta {
	m := Meta{LateKnown: true}
	var minT, maxT []byte
	var late lateScan
	const timeAt, timeEnd = len(logline.Version) + 1, len(logline.Version) + 1 + len(logline.TimeLayout)
	for len(raw) > 0 {
		nl := bytes.IndexByte(raw, '\n')
		line := raw
		if nl >= 0 {
			line, raw = raw[:nl], raw[nl+1:]
		} else {
			raw = nil
		}
		if len(line) <= timeEnd {
			continue
		}
		t := line[timeAt:timeEnd]
		if minT == nil || bytes.Compare(t, minT) < 0 {
			minT = t
		}
		switch c := bytes.Compare(t, maxT); {
		case maxT == nil || c > 0:
			maxT = t
			late.newMax()
		case c < 0:
			late.older(t, maxT)
		}
		rest := line[timeEnd+1:]
		level := logline.LevelNone
		if i := bytes.IndexByte(rest, ';'); i > 0 {
			if l, ok := logline.ParseLevel(rest[:i]); ok {
				level = l
				m.Levels = m.Levels.Add(l)
			}
		}
		m.ByLevel[level]++
		m.Count++
	}
	if m.Count > 0 {
		m.Start, _ = logline.ParseTime(minT)
		m.End, _ = logline.ParseTime(maxT)
		m.Late, m.LateKnown = late.late, !late.unknown
	}
	return m
}

// lateScan finds the most a line is older than the newest line before it,
// parsing times only when that could grow.
type lateScan struct {
	late     int64
	max      int64  // the newest time so far, once parsed
	floor    []byte // the text of max-late: an older line raises late
	hasMax   bool   // max is the newest time's value
	hasFloor bool
	unknown  bool // the newest time is not one: nothing is known
}

// newMax notes that a newer time than every earlier one came.
func (l *lateScan) newMax() { l.hasMax, l.hasFloor = false, false }

// older notes the time t of a line older than maxT, the newest so far.
func (l *lateScan) older(t, maxT []byte) {
	if l.hasFloor && bytes.Compare(t, l.floor) >= 0 {
		return // no later than the lateness so far
	}
	if d, ok := sameMinute(maxT, t); ok {
		// Lines of concurrent requests interleave within a minute: the
		// usual case costs two short digit runs, not two full parses.
		if d > l.late {
			l.late, l.hasFloor = d, false
		}
		return
	}
	if !l.hasMax {
		v, err := logline.ParseTime(maxT)
		if err != nil {
			l.unknown = true
			return
		}
		l.max, l.hasMax, l.hasFloor = v, true, false
	}
	if !l.hasFloor {
		l.floor, l.hasFloor = logline.AppendTime(l.floor[:0], l.max-l.late), true
	}
	if bytes.Compare(t, l.floor) >= 0 {
		return
	}
	if v, err := logline.ParseTime(t); err == nil {
		l.late, l.hasFloor = l.max-v, false
	}
}

// minuteLen is the length of a line time's text up to its seconds,
// "2006-01-02T15:04:".
const minuteLen = len("2006-01-02T15:04:")

// sameMinute returns a-b in ns when the line times a and b (TimeLayout
// text) share their minute, reading only their seconds and ticks.
func sameMinute(a, b []byte) (int64, bool) {
	if string(a[:minuteLen]) != string(b[:minuteLen]) {
		return 0, false
	}
	x, ok1 := secondTicks(a[minuteLen:])
	y, ok2 := secondTicks(b[minuteLen:])
	return (x - y) * 100, ok1 && ok2
}

// secondTicks reads "05.1234567" (seconds and 100 ns ticks) as ticks.
func secondTicks(b []byte) (int64, bool) {
	if b[2] != '.' {
		return 0, false
	}
	var v int64
	for i, c := range b[:len("05.1234567")] {
		if i == 2 {
			continue
		}
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		v = v*10 + int64(d)
	}
	return v, true
}
