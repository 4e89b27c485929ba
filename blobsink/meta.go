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
)

// Meta is a blob's metadata in typed form.
type Meta struct {
	Start, End int64 // earliest and latest event time, Unix ns
	Levels     logline.LevelSet
	Count      int64
}

// Merge widens m to cover o.
func (m Meta) Merge(o Meta) Meta {
	if o.Count == 0 {
		return m
	}
	if m.Count == 0 {
		return o
	}
	m.Start = min(m.Start, o.Start)
	m.End = max(m.End, o.End)
	m.Levels |= o.Levels
	m.Count += o.Count
	return m
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
	return m, true
}

// Overlaps reports whether the blob may hold events in [from, to).
func (m Meta) Overlaps(from, to time.Time) bool {
	return m.End >= from.UnixNano() && m.Start < to.UnixNano()
}
