package query

import (
	"strconv"

	"ingest/internal/jsonstr"
	"ingest/logline"
)

// Answer lines carry events and, now and then, a control line: the
// in-band error that ends an answer whose headers were already sent, the
// scan figures of stats=1, a live tail's note of dropped events. A control
// line is an object whose first key is ControlKey, with its kind as the
// value; an event line never has that key at its top level (an attribute
// of that name is written "attr.@ingest", as a fixed field's name is), so a
// reader tells them apart without looking at any other field:
//
//	{"@ingest":"error","error":"cannot read blob ...: ..."}
//	{"@ingest":"stats","stats":{"prefixes":2,...}}
//	{"@ingest":"dropped","dropped":12,"message":"tail reader too slow: events dropped"}
//
// The kind's own key (error, stats, dropped) holds what the line says.

// ControlKey is the reserved key of control lines.
const ControlKey = "@ingest"

// The kinds of control lines.
const (
	ControlError   = "error"
	ControlStats   = "stats"
	ControlDropped = "dropped"
)

// appendControlStart appends the start of a control line of kind, up to
// its kind's own key and colon: {"@ingest":"kind","kind":
func appendControlStart(dst []byte, kind string) []byte {
	dst = append(dst, `{"`+ControlKey+`":"`...)
	dst = append(dst, kind...)
	dst = append(dst, `","`...)
	dst = append(dst, kind...)
	return append(dst, `":`...)
}

// AppendErrorLine appends the control line reporting msg, the error that
// ended an answer already under way.
func AppendErrorLine(dst []byte, msg string) []byte {
	dst = appendControlStart(dst, ControlError)
	dst = logline.AppendQuoted(dst, []byte(msg))
	return append(dst, '}', '\n')
}

// AppendStatsLine appends the control line with the scan figures of a
// query (GET /v1/logs?stats=1).
func AppendStatsLine(dst []byte, st *Stats) []byte {
	dst = appendControlStart(dst, ControlStats)
	for i, f := range [...]struct {
		k string
		v int64
	}{
		{"prefixes", int64(st.Prefixes)}, {"listings", int64(st.Listings)}, {"blobs_listed", int64(st.BlobsListed)}, {"blobs_skipped", int64(st.BlobsSkipped)},
		{"blobs_read", int64(st.BlobsRead)}, {"lines_scanned", st.LinesScanned}, {"lines_matched", st.LinesMatched},
		{"lines_out_of_order", st.LinesOutOfOrder},
	} {
		if i == 0 {
			dst = append(dst, '{', '"')
		} else {
			dst = append(dst, ',', '"')
		}
		dst = append(dst, f.k...)
		dst = append(dst, '"', ':')
		dst = strconv.AppendInt(dst, f.v, 10)
	}
	return append(dst, '}', '}', '\n')
}

// AppendDroppedLine appends the live tail's control line saying that n
// events were dropped at this point of the stream (the reader fell
// behind).
func AppendDroppedLine(dst []byte, n int64) []byte {
	dst = appendControlStart(dst, ControlDropped)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, `,"message":"tail reader too slow: events dropped"}`+"\n"...)
}

// ControlKind returns the kind of a control line (its ControlKey value),
// or "" for an event line or anything that is not a JSON object. It
// looks at the first key only: the server writes ControlKey first, and an
// event never has it.
func ControlKind(line []byte) string {
	i := jsonstr.SkipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return ""
	}
	i = jsonstr.SkipSpace(line, i+1)
	if i >= len(line) || line[i] != '"' {
		return ""
	}
	end, _ := jsonstr.Scan(line, i)
	if end < 0 || string(line[i:end]) != `"`+ControlKey+`"` {
		return ""
	}
	i = jsonstr.SkipSpace(line, end)
	if i >= len(line) || line[i] != ':' {
		return ""
	}
	i = jsonstr.SkipSpace(line, i+1)
	if i >= len(line) || line[i] != '"' {
		return ""
	}
	kind, _, err := logline.UnquoteAppend(nil, line[i:])
	if err != nil {
		return ""
	}
	return string(kind)
}
