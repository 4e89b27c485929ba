package blobsink

import (
	"bytes"
	"ingest/logline"
)

// scanMeta computes a block's metadata from its lines without parsing them
// whole: the time field has a fixed width and sorts as text.
func scanMeta(raw []byte) Meta {
	var m Meta
	var minT, maxT []byte
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
		if maxT == nil || bytes.Compare(t, maxT) > 0 {
			maxT = t
		}
		rest := line[timeEnd+1:]
		if i := bytes.IndexByte(rest, ';'); i > 0 {
			if l, ok := logline.ParseLevel(rest[:i]); ok {
				m.Levels = m.Levels.Add(l)
			}
		}
		m.Count++
	}
	if m.Count > 0 {
		m.Start, _ = logline.ParseTime(minT)
		m.End, _ = logline.ParseTime(maxT)
	}
	return m
}
