package es

import (
	"bytes"
	"fmt"

	"ingest/internal/jsonstr"
)

// action is the operation of an action line.
type action uint8

const (
	actUnread action = iota // a line that cannot be read as an action
	actCreate
	actIndex
	actUpdate
	actDelete
	actOther // a well-formed action of another name
)

var actionNames = [...]string{"index", "create", "index", "update", "delete", "index"}

// String is the key of the action's item in the answer.
func (a action) String() string { return actionNames[a] }

func actionNamed(name []byte) action {
	switch string(name) {
	case "create":
		return actCreate
	case "index":
		return actIndex
	case "update":
		return actUpdate
	case "delete":
		return actDelete
	}
	return actOther
}

// hasDocument reports whether a document line follows the action: every
// action but delete has one, and one that cannot be read is assumed to,
// as an index or create would.
func (a action) hasDocument() bool { return a != actDelete }

// refused reports whether the action is answered with an error.
func (a action) refused() bool { return a != actCreate && a != actIndex }

// refusal is why the action at line n is refused.
func (d *Decoder) refusal(n int) string {
	switch d.op {
	case actUpdate, actDelete:
		return fmt.Sprintf("line %d: cannot %s a document: ingest stores logs append-only; send create or index", n, d.op)
	case actOther:
		return fmt.Sprintf("line %d: unknown action; send create or index", n)
	}
	return fmt.Sprintf("line %d: cannot read the action: %s", n, d.opReason)
}

// readAction reads an action line, {"create":{"_index":"logs","_id":"1"}},
// into d.op, d.index and d.id; d.op is actUnread, and d.opReason says why,
// when the line is not one.
func (d *Decoder) readAction(line []byte) {
	d.op, d.index, d.id, d.opReason = actUnread, nil, nil, ""
	if d.plainAction(line) {
		return
	}
	d.idx.Reset(line)
	i := jsonstr.SkipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		d.opReason = "the line is not a JSON object"
		return
	}
	ops := 0
	end, reason := d.idx.Object(i, &d.key, func(key, _ []byte, _ jsonstr.Flags, _, v int) (int, string) {
		if ops++; ops > 1 {
			return v, "the line names more than one action"
		}
		if line[v] != '{' {
			return v, "the action's metadata is " + jsonstr.Kind(line[v]) + ", not an object"
		}
		d.op = actionNamed(key)
		return d.idx.Object(v, &d.key, d.metadata)
	})
	switch {
	case reason == "" && ops == 0:
		reason = "the line names no action"
	case reason == "" && jsonstr.SkipSpace(line, end) < len(line):
		reason = jsonstr.SyntaxError(line, jsonstr.SkipSpace(line, end), "the end of the line")
	}
	if reason != "" {
		d.op, d.opReason = actUnread, reason
	}
}

// plainAction reads the action lines shippers write, compact with at
// most an _index of plain bytes ({"create":{"_index":"logs"}},
// {"index":{}}), without the JSON reader; it reports false, having set
// nothing, for any other line.
func (d *Decoder) plainAction(line []byte) bool {
	var op action
	var rest []byte
	switch {
	case bytes.HasPrefix(line, []byte(`{"create":{`)):
		op, rest = actCreate, line[len(`{"create":{`):]
	case bytes.HasPrefix(line, []byte(`{"index":{`)):
		op, rest = actIndex, line[len(`{"index":{`):]
	default:
		return false
	}
	if string(rest) == "}}" {
		d.op = op
		return true
	}
	const key = `"_index":"`
	if len(rest) < len(key)+len(`"}}`) || !bytes.HasPrefix(rest, []byte(key)) || !bytes.HasSuffix(rest, []byte(`"}}`)) {
		return false
	}
	index := rest[len(key) : len(rest)-3]
	for _, c := range index {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	d.op, d.index = op, index
	return true
}

// metadata reads one member of an action's metadata: _index and _id are
// kept, the others (routing, pipeline, require_alias...) skipped.
func (d *Decoder) metadata(key, _ []byte, _ jsonstr.Flags, _, v int) (int, string) {
	b := d.idx.Bytes()
	switch string(key) {
	case "_index":
		if s, end, ok := d.textAt(v, &d.indexBuf); ok {
			d.index = s
			return end, ""
		}
	case "_id":
		if s, end, ok := d.textAt(v, &d.idBuf); ok {
			d.id = s
			return end, ""
		}
	}
	return d.skip(b, v)
}

// textAt reads the string (unescaped into *buf when it has escapes) or the
// number at b[i] of the indexed line b; ok is false for other values.
func (d *Decoder) textAt(i int, buf *[]byte) (s []byte, end int, ok bool) {
	return d.idx.Scalar(i, buf)
}

// skip returns the index after the value at b[i], or why it is not JSON.
func (d *Decoder) skip(b []byte, i int) (int, string) {
	if end := d.idx.CompactEnd(i, 1); end >= 0 {
		return end, ""
	}
	var end int
	var reason string
	d.numBuf, end, reason = jsonstr.AppendValue(d.numBuf[:0], b, i, 1)
	return end, reason
}
