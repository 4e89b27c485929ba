package es

import (
	"bytes"
	"strconv"
	"time"

	"ingest/logline"
)

// answer builds a bulk answer: one item per action, in order.
type answer struct {
	items           []byte // the items, comma separated
	stored, refused int
	keep            kept
	// The item of a stored document around its _id, for the action and
	// index of the last one: a run of actions alike (every shipper's)
	// copies them instead of writing every field.
	cacheOp          action
	cacheIndex       []byte
	cacheOK          bool
	withID           bool // the item has an _id, between head and tail
	head, tail, item []byte
}

// kept is what a filter_path keeps of the answer.
type kept struct {
	took, errors, items bool
	fields              [len(actionNames)]itemFields // by action
}

// itemFields is a set of an item's fields.
type itemFields uint8

const (
	fieldIndex itemFields = 1 << iota
	fieldID
	fieldVersion
	fieldResult
	fieldStatus
	fieldError
)

var itemFieldNames = [...]string{"_index", "_id", "_version", "result", "status", "error"}

// begin starts the answer of a request with filter_path fp.
func (a *answer) begin(fp []byte) {
	a.items = a.items[:0]
	a.stored, a.refused = 0, 0
	a.cacheOK = false
	a.keep = kept{took: wants(fp, "took"), errors: wants(fp, "errors"), items: wants(fp, "items")}
	for op := range a.keep.fields {
		for i, f := range itemFieldNames {
			if wants(fp, "items", actionNames[op], f) {
				a.keep.fields[op] |= 1 << i
			}
		}
	}
}

// created answers an action that stored its document.
func (a *answer) created(op action, index, id []byte) {
	a.stored++
	if !a.keep.items {
		return
	}
	if !a.cacheOK || op != a.cacheOp || !bytes.Equal(index, a.cacheIndex) {
		a.cacheItem(op, index)
	}
	if len(a.items) > 0 {
		a.items = append(a.items, ',')
	}
	a.items = append(a.items, a.head...)
	if a.withID {
		a.items = logline.AppendQuoted(a.items, id)
	}
	a.items = append(a.items, a.tail...)
}

// idMark stands for the _id while an item is cached: a NUL, which
// AppendQuoted writes as below, and which the _index before it cannot
// hide (the last one is the _id's).
const idMark = `"\u0000"`

// cacheItem renders the item of a document stored by op into index, cut
// around its _id.
func (a *answer) cacheItem(op action, index []byte) {
	items := a.items
	a.items = a.item[:0]
	a.itemTo(op, index, []byte{0}, 201, "", "")
	a.item, a.items = a.items, items
	a.cacheOp, a.cacheIndex, a.cacheOK = op, append(a.cacheIndex[:0], index...), true
	i := bytes.LastIndex(a.item, []byte(idMark))
	if a.withID = i >= 0; a.withID {
		a.head, a.tail = a.item[:i], a.item[i+len(idMark):]
	} else {
		a.head, a.tail = a.item, nil
	}
}

// refuse answers an action with a 400 error of type kind.
func (a *answer) refuse(op action, index, id []byte, kind, reason string) {
	a.refused++
	if len(a.items) > 0 && a.keep.items {
		a.items = append(a.items, ',')
	}
	a.itemTo(op, index, id, 400, kind, reason)
}

// itemTo appends {"op":{"_index":..,"_id":..,...,"status":N[,"error":{...}]}}
// with the fields the filter keeps to the items.
func (a *answer) itemTo(op action, index, id []byte, status int, kind, reason string) {
	keep := a.keep.fields[op]
	if !a.keep.items {
		return
	}
	b := a.items
	b = append(append(append(b, `{"`...), op.String()...), `":{`...)
	mark := len(b)
	field := func(name string) {
		if len(b) > mark {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), name...), `":`...)
	}
	if keep&fieldIndex != 0 && len(index) > 0 {
		field("_index")
		b = logline.AppendQuoted(b, index)
	}
	if keep&fieldID != 0 {
		field("_id")
		if len(id) > 0 {
			b = logline.AppendQuoted(b, id)
		} else {
			b = append(b, "null"...)
		}
	}
	if status == 201 {
		if keep&fieldVersion != 0 {
			field("_version")
			b = append(b, '1')
		}
		if keep&fieldResult != 0 {
			field("result")
			b = append(b, `"created"`...)
		}
	}
	if keep&fieldStatus != 0 {
		field("status")
		b = strconv.AppendInt(b, int64(status), 10)
	}
	if reason != "" && keep&fieldError != 0 {
		field("error")
		b = append(append(append(b, `{"type":"`...), kind...), `","reason":`...)
		b = append(logline.AppendQuoted(b, []byte(reason)), '}')
	}
	a.items = append(b, "}}"...)
}

// appendTo appends the whole answer.
func (a *answer) appendTo(dst []byte, took time.Duration) []byte {
	dst = append(dst, '{')
	sep := func() {
		if dst[len(dst)-1] != '{' {
			dst = append(dst, ',')
		}
	}
	if a.keep.took {
		dst = strconv.AppendInt(append(dst, `"took":`...), took.Milliseconds(), 10)
	}
	if a.keep.errors {
		sep()
		dst = strconv.AppendBool(append(dst, `"errors":`...), a.refused > 0)
	}
	if a.keep.items {
		sep()
		dst = append(append(append(dst, `"items":[`...), a.items...), ']')
	}
	return append(dst, '}')
}

// wants reports whether the filter_path fp (Elasticsearch's: comma
// separated dotted paths, '*' matching within a name, "**" any depth,
// a leading '-' excluding) keeps the answer's field at path, or something
// inside it. An empty fp keeps everything. Exclusions are ignored: they
// only ever drop what the answer can do without.
func wants(fp []byte, path ...string) bool {
	if len(bytes.TrimSpace(fp)) == 0 {
		return true
	}
	for len(fp) > 0 {
		var p []byte
		p, fp, _ = bytes.Cut(fp, []byte{','})
		p = bytes.TrimSpace(p)
		if len(p) == 0 || p[0] == '-' {
			continue
		}
		if patternWants(p, path) {
			return true
		}
	}
	return false
}

// patternWants matches one dotted pattern against path: it wants the
// path when they agree on every name both have.
func patternWants(p []byte, path []string) bool {
	for _, name := range path {
		if len(p) == 0 {
			return true // the pattern keeps a field path is inside
		}
		var seg []byte
		seg, p, _ = bytes.Cut(p, []byte{'.'})
		if string(seg) == "**" {
			return true
		}
		if !glob(seg, name) {
			return false
		}
	}
	return true // path is the pattern's field, or holds it
}

// glob matches name against pattern, where '*' stands for any run of bytes.
func glob(pattern []byte, name string) bool {
	star, back := -1, 0 // the last '*' seen, and where name resumes after it
	for i, j := 0, 0; j < len(name) || i < len(pattern); {
		switch {
		case i < len(pattern) && pattern[i] == '*':
			star, back = i, j
			i++
		case i < len(pattern) && j < len(name) && pattern[i] == name[j]:
			i++
			j++
		case star >= 0 && back < len(name):
			back++
			i, j = star+1, back
		default:
			return false
		}
	}
	return true
}
