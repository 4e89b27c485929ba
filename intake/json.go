package intake

import (
	"bytes"
	"fmt"
	"net/http"

	"ingest/internal/jsonstr"
	"ingest/logline"
)

// ParseLogs parses a decompressed body of format f and calls emit for every
// valid event, in body order. The event and its byte slices are valid only
// during the call: they point into body and into p's scratch space, and are
// overwritten by the next event.
//
// A bad line is counted in Result.Rejected, listed with its number (the
// first MaxErrors of them) and skipped; it never sinks the batch. An error
// from emit that group.IsRejected rejects that event the same way; any
// other error from emit ends parsing and is returned. A problem with the
// whole body (an unterminated JSON array, an undecodable OTLP request)
// returns a *httperr.Error before emit is called.
func (p *Parser) ParseLogs(body []byte, f Format, d Defaults, emit func(*logline.Event) error) (Result, error) {
	p.begin(&d)
	body = bytes.TrimPrefix(body, []byte(bom))
	r := Result{maxRows: d.MaxRows}
	// object takes the n-th JSON object of the body (a line or an element).
	object := func(n int, obj []byte) error {
		if reason := p.eventFromLine(obj); reason != "" {
			r.reject(n, reason)
			return nil
		}
		return r.emit(n, emit, &p.ev)
	}
	var err error
	switch f {
	case FormatNDJSON:
		var done bool
		if done, err = p.prettyObject(body, &r, emit); !done {
			err = forEachLine(body, &r, object)
		}
	case FormatJSONArray:
		if err := p.scanArray(body); err != nil {
			return r, err
		}
		err = p.forEachElement(body, &r, object)
	case FormatText:
		err = p.parseText(body, &r, emit)
	case FormatOTLPProto, FormatOTLPJSON:
		return p.parseOTLP(body, f == FormatOTLPJSON, d.MaxRows, emit)
	default:
		return r, errorf(http.StatusUnsupportedMediaType, "cannot parse body: unknown format %d", f)
	}
	return r, err
}

const bom = "\xef\xbb\xbf"

// prettyObject accepts a body that is one JSON object spread over several
// lines (curl -d @event.json with an indented file), which line-by-line
// parsing would reject line after line. It costs NDJSON one look at the
// end of the first line, and reports false to leave everything else to the
// line parser, errors included.
func (p *Parser) prettyObject(body []byte, r *Result, emit func(*logline.Event) error) (bool, error) {
	b := bytes.TrimLeft(body, " \t\r\n")
	i := bytes.IndexByte(b, '\n')
	if i < 0 || len(b) == 0 || b[0] != '{' {
		return false, nil
	}
	if first := bytes.TrimRight(b[:i], " \t\r"); len(first) > 0 && first[len(first)-1] == '}' {
		return false, nil // a complete line: NDJSON
	}
	if len(b) > MaxLineBytes || p.eventFromLine(b) != "" {
		return false, nil
	}
	return true, r.emit(1, emit, &p.ev)
}

// forEachLine calls fn for every line of body that is not blank, with its
// 1-based number, until fn returns an error; a trailing '\r' is dropped.
// Blank lines still count in the numbering. Lines longer than
// MaxLineBytes are rejected in r.
func forEachLine(body []byte, r *Result, fn func(n int, line []byte) error) error {
	n := 0
	for len(body) > 0 {
		n++
		var line []byte
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			line, body = body, nil
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if isBlank(line) {
			continue
		}
		var err error
		if len(line) > MaxLineBytes {
			r.reject(n, tooLong("line", len(line)))
		} else {
			err = fn(n, line)
		}
		if err == nil {
			err = r.full()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func tooLong(what string, n int) string {
	return fmt.Sprintf("cannot accept %s: it is %d bytes, longer than the %d byte limit; split the event", what, n, MaxLineBytes)
}

func isBlank(b []byte) bool {
	if len(b) > 0 && b[0] > ' ' { // the common case: a line starting with '{'
		return false
	}
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// span is the bounds of one array element in the body.
type span struct{ start, end int }

// scanArray records the bounds of every element of the JSON array in body.
// It only frames: strings and brackets are matched, the elements are
// checked later one by one, so one malformed element is rejected alone. A
// framing error concerns the whole body and is a 400.
func (p *Parser) scanArray(body []byte) error {
	p.spans = p.spans[:0]
	fail := func(format string, args ...any) error {
		return errorf(http.StatusBadRequest, "cannot parse JSON array: "+format, args...)
	}
	i := jsonstr.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '[' {
		return fail("the body does not start with '['")
	}
	i = jsonstr.SkipSpace(body, i+1)
	if i < len(body) && body[i] == ']' {
		i++
	} else {
		for {
			end, reason := jsonstr.FrameEnd(body, i)
			if reason != "" {
				return fail("element %d: %s", len(p.spans)+1, reason)
			}
			p.spans = append(p.spans, span{i, end})
			i = jsonstr.SkipSpace(body, end)
			if i >= len(body) {
				return fail("the array is not closed with ']' after element %d", len(p.spans))
			}
			if body[i] == ']' {
				i++
				break
			}
			if body[i] != ',' {
				return fail("missing ',' after element %d", len(p.spans))
			}
			i = jsonstr.SkipSpace(body, i+1)
		}
	}
	if i = jsonstr.SkipSpace(body, i); i < len(body) {
		return fail("unexpected data after the closing ']'")
	}
	return nil
}

// forEachElement calls fn for every element scanArray found, until fn
// returns an error.
func (p *Parser) forEachElement(body []byte, r *Result, fn func(n int, elem []byte) error) error {
	for k, s := range p.spans {
		elem := body[s.start:s.end]
		switch {
		case len(elem) == 0:
			r.reject(k+1, "cannot parse JSON: empty array element")
		case len(elem) > MaxLineBytes:
			r.reject(k+1, tooLong("array element", len(elem)))
		default:
			if err := fn(k+1, elem); err != nil {
				return err
			}
		}
		if err := r.full(); err != nil {
			return err
		}
	}
	return nil
}
