package es

import (
	"bytes"
	"fmt"
	"time"

	"ingest/intake"
	"ingest/intake/group"
	"ingest/internal/jsonstr"
	"ingest/logline"
)

// Request is what a bulk request says besides its body.
type Request struct {
	Index      []byte // the index of the path (/{index}/_bulk), for actions without _index
	Now        int64  // Unix nanoseconds: events without a time, generated ids; 0: time.Now()
	FilterPath []byte // the filter_path query parameter, "" for the whole answer
}

// Decoder decodes bulk bodies. The zero value is ready; a Decoder is not
// safe for concurrent use. Reuse one (pool it) so its scratch space is
// reused too.
type Decoder struct {
	ev   logline.Event
	idx  jsonstr.Index
	ids  intake.IDs
	now  int64
	path []byte // the index of the request's path

	// the action being read
	op       action
	opReason string // why the line is not an action (op actUnread)
	index    []byte // its _index
	id       []byte // its _id
	indexBuf []byte // _index or _id with escapes, unescaped
	idBuf    []byte

	// the document being read
	key      []byte // a key with escapes, unescaped
	rawPath  []byte // the dotted key of the member being read, raw
	keyPath  []byte // the same, unescaped
	attrs    []byte
	text     []byte // message, service, host or level with escapes, unescaped
	svcBuf   []byte
	hostBuf  []byte
	numBuf   []byte // a time or level given as a number, or a value skipped
	genID    []byte // a generated event id
	seen     seen
	fallback [2]fallback // the time and message a document may give under a second name

	answer answer
}

// Decode reads the bulk body (decompressed) and calls emit once for every
// document stored, in body order; the event and its bytes are valid only
// during the call. A non-nil error from emit ends decoding and is
// returned; the answer is then not to be sent. Bad actions and documents
// are not errors: they are answered with a 400 item each.
func (d *Decoder) Decode(body []byte, r Request, emit func(*logline.Event) error) error {
	d.now = r.Now
	if d.now == 0 {
		d.now = time.Now().UnixNano()
	}
	d.path = r.Index
	d.ids.Reset()
	d.answer.begin(r.FilterPath)
	n := 0 // line number
	for len(body) > 0 {
		line := nextLine(&body, &n)
		if line == nil {
			continue
		}
		d.readAction(line)
		if !d.op.hasDocument() {
			d.answer.refuse(d.op, d.index, d.id, "illegal_argument_exception", d.refusal(n))
			continue
		}
		doc := nextLine(&body, &n)
		for doc == nil && len(body) > 0 {
			doc = nextLine(&body, &n)
		}
		if err := d.store(doc, n, emit); err != nil {
			return err
		}
	}
	return nil
}

// store answers the action just read with its document line doc (nil at
// the end of the body), emitting the event when the action stores one.
func (d *Decoder) store(doc []byte, n int, emit func(*logline.Event) error) error {
	switch {
	case doc == nil:
		d.answer.refuse(d.op, d.index, d.id, "action_request_validation_exception",
			fmt.Sprintf("line %d: the action has no document line after it", n))
		return nil
	case d.op.refused():
		d.answer.refuse(d.op, d.index, d.id, "illegal_argument_exception", d.refusal(n))
		return nil
	case len(doc) > intake.MaxLineBytes:
		d.answer.refuse(d.op, d.index, d.id, "document_parsing_exception",
			fmt.Sprintf("line %d: the document is %d bytes, longer than the %d byte limit", n, len(doc), intake.MaxLineBytes))
		return nil
	}
	if reason := d.document(doc); reason != "" {
		d.answer.refuse(d.op, d.index, d.id, "document_parsing_exception", fmt.Sprintf("line %d: %s", n, reason))
		return nil
	}
	if err := emit(&d.ev); group.IsRejected(err) {
		// A cap on this document alone (a service past the request's or
		// the hour's limit): the others are kept.
		d.answer.refuse(d.op, d.index, d.id, "illegal_argument_exception", fmt.Sprintf("line %d: %s", n, err))
		return nil
	} else if err != nil {
		return err
	}
	d.answer.created(d.op, d.index, d.ev.ID)
	return nil
}

// nextLine cuts the next line off *body and counts it in *n; it returns
// nil for a blank line. A trailing '\r' is dropped.
func nextLine(body *[]byte, n *int) []byte {
	*n++
	b := *body
	line := b
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		line, *body = b[:i], b[i+1:]
	} else {
		*body = nil
	}
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) > 0 && line[0] > ' ' { // the common case: a line starting with '{'
		return line
	}
	if len(bytes.TrimLeft(line, " \t")) == 0 {
		return nil
	}
	return line
}

// AppendAnswer appends the answer to the request just decoded,
// {"took":T,"errors":E,"items":[...]} (or what its filter_path keeps),
// where took is how long the request took. The items say 201 for every
// document emitted: send it only once those events are stored.
func (d *Decoder) AppendAnswer(dst []byte, took time.Duration) []byte {
	return d.answer.appendTo(dst, took)
}

// Stored and Refused count the actions of the request just decoded that
// stored a document and that were answered with an error.
func (d *Decoder) Stored() int  { return d.answer.stored }
func (d *Decoder) Refused() int { return d.answer.refused }

// AnswerBytes is about the size of the answer to the request just decoded.
func (d *Decoder) AnswerBytes() int { return len(d.answer.items) + 64 }

// Release drops scratch space grown past keep bytes, for a Decoder kept
// in a pool, and forgets the last body.
func (d *Decoder) Release(keep int) {
	for _, b := range []*[]byte{&d.indexBuf, &d.idBuf, &d.key, &d.rawPath, &d.keyPath, &d.attrs, &d.text, &d.svcBuf, &d.hostBuf, &d.numBuf, &d.genID, &d.answer.items} {
		if cap(*b) > keep {
			*b = nil
		}
	}
	d.idx.Release(keep)
	d.ev.Reset()
	d.index, d.id, d.path = nil, nil, nil
	d.fallback = [2]fallback{}
}
