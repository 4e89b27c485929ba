package blobsink

import (
	"strconv"
	"strings"
	"time"

	"ingest/logline"
)

// Metadata keys, as Storage Analytics names them.
const (
	MetaLogVersion = "LogVersion"
	MetaStartTime  = "StartTime"
	MetaEndTime    = "EndTime"
	MetaLogType    = "LogType"
	MetaEventCount = "EventCount"
	// MetaLateness is ours, not Storage Analytics': see Meta.Late.
	MetaLateness = "Lateness"
)

// Meta is a blob's metadata in typed form: the Summary of its lines (see
// logline.Summary for each field; Late is what the Lateness key holds).
type Meta logline.Summary

// EventMeta is the metadata of one event of time t and level l, as its
// line stores it: t truncated to 100 ns.
func EventMeta(t int64, l logline.Level) Meta {
	var s logline.Summary
	s.Add(t, l)
	return Meta(s)
}

// Merge widens m to cover o, stored after m's events.
func (m Meta) Merge(o Meta) Meta {
	return Meta(logline.Summary(m).Merge(logline.Summary(o)))
}

// Map renders m as blob metadata.
func (m Meta) Map() map[string]string {
	out := map[string]string{
		MetaLogVersion: logline.Version,
		MetaEventCount: strconv.FormatInt(m.Count, 10),
		MetaLogType:    m.Levels.String(),
	}
	if m.Count > 0 {
		out[MetaStartTime] = string(logline.AppendTime(nil, m.Start))
		out[MetaEndTime] = string(logline.AppendTime(nil, m.End))
		if m.LateKnown {
			// ASCII, as HTTP headers need: "us", not "µs".
			out[MetaLateness] = strings.Replace(time.Duration(m.Late).String(), "µs", "us", 1)
		}
	}
	return out
}

// MetaValue reads a metadata key case-insensitively: Azure returns keys lower
// case in listings and canonical case from Get Properties.
func MetaValue(md map[string]string, key string) (string, bool) {
	if v, ok := md[key]; ok {
		return v, true
	}
	for k, v := range md {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// ParseMeta reads blob metadata back. ok is false when StartTime/EndTime are
// missing or malformed (a blob created but never appended to, or not ours).
func ParseMeta(md map[string]string) (m Meta, ok bool) {
	s, ok1 := MetaValue(md, MetaStartTime)
	e, ok2 := MetaValue(md, MetaEndTime)
	if !ok1 || !ok2 {
		return m, false
	}
	var err1, err2 error
	m.Start, err1 = logline.ParseTime([]byte(s))
	m.End, err2 = logline.ParseTime([]byte(e))
	if err1 != nil || err2 != nil {
		return Meta{}, false
	}
	if lt, ok := MetaValue(md, MetaLogType); ok {
		m.Levels = logline.ParseLevelSet(lt)
	}
	if c, ok := MetaValue(md, MetaEventCount); ok {
		m.Count, _ = strconv.ParseInt(c, 10, 64)
	}
	if l, ok := MetaValue(md, MetaLateness); ok {
		if d, err := time.ParseDuration(l); err == nil && d >= 0 {
			m.Late, m.LateKnown = int64(d), true
		}
	}
	return m, true
}

// Overlaps reports whether the blob may hold events in [from, to).
func (m Meta) Overlaps(from, to time.Time) bool {
	return m.End >= from.UnixNano() && m.Start < to.UnixNano()
}
