package loki

import (
	"fmt"
	"net/http"

	"ingest/intake"
	"ingest/internal/httperr"
	"ingest/internal/jsonstr"
	"ingest/logline"
)

// jsonState is the JSON reader's scratch space.
type jsonState struct {
	idx  jsonstr.Index
	key  []byte
	meta []byte // an entry's structured metadata as attributes
	skip []byte // a value skipped that had to be rewritten to be read
	err  error  // emit's error, carried out of a walk
}

// stopped is the reason a walk ends with when emit failed.
const stopped = "stopped"

func badJSON(reason string) error {
	return httperr.New(http.StatusBadRequest, "cannot decode the JSON push body: %s; send {\"streams\":[{\"stream\":{...},\"values\":[[\"<ns>\",\"<line>\"]]}]}", reason)
}

// decodeJSON reads {"streams":[{"stream":{labels},"values":[[ts, line(, metadata)]]}]}.
func (d *Decoder) decodeJSON(body []byte, emit func(*logline.Event) error) error {
	j := &d.json
	j.err = nil
	j.idx.Reset(body)
	i := jsonstr.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return badJSON("it is not a JSON object")
	}
	n := 0
	end, reason := j.idx.Object(i, &j.key, func(key, _ []byte, _ jsonstr.Flags, _, v int) (int, string) {
		if string(key) != "streams" {
			return d.skipJSON(v)
		}
		if body[v] != '[' {
			return v, "streams is " + jsonstr.Kind(body[v]) + ", not an array"
		}
		return j.idx.Array(v, func(s int) (int, string) {
			n++
			return d.jsonStream(s, n, emit)
		})
	})
	if reason == stopped {
		return errStop{j.err}
	}
	if reason == "" && jsonstr.SkipSpace(body, end) < len(body) {
		reason = jsonstr.SyntaxError(body, jsonstr.SkipSpace(body, end), "the end of the body")
	}
	if reason != "" {
		return badJSON(reason)
	}
	return nil
}

// skipJSON returns the index after the value at b[i], or why it is bad.
func (d *Decoder) skipJSON(i int) (int, string) {
	j := &d.json
	if end := j.idx.CompactEnd(i, 1); end >= 0 {
		return end, ""
	}
	var end int
	var reason string
	j.skip, end, reason = jsonstr.AppendValue(j.skip[:0], j.idx.Bytes(), i, 1)
	return end, reason
}

// jsonStream reads the n-th stream, the object at b[s].
func (d *Decoder) jsonStream(s, n int, emit func(*logline.Event) error) (int, string) {
	j := &d.json
	b := j.idx.Bytes()
	if b[s] != '{' {
		return s, fmt.Sprintf("stream %d is %s, not an object", n, jsonstr.Kind(b[s]))
	}
	labels, values := -1, -1 // where the members are: "values" may come first
	end, reason := j.idx.Object(s, &j.key, func(key, _ []byte, _ jsonstr.Flags, _, v int) (int, string) {
		switch string(key) {
		case "stream":
			labels = v
		case "values":
			values = v
		}
		return d.skipJSON(v)
	})
	if reason != "" {
		return end, reason
	}
	if values < 0 {
		return end, ""
	}
	if b[values] != '[' {
		return values, fmt.Sprintf("stream %d: values is %s, not an array", n, jsonstr.Kind(b[values]))
	}
	d.stream.reset()
	bad := ""
	if labels >= 0 {
		bad = d.jsonLabels(labels)
	}
	if bad == "" {
		d.stream.resolve(d.labels)
	}
	if _, reason := j.idx.Array(values, func(e int) (int, string) {
		d.entry++
		if bad != "" {
			d.res.reject(d.entry, fmt.Sprintf("stream %d: cannot read its labels: %s", n, bad))
			return d.skipJSON(e)
		}
		return d.jsonEntry(e, n, emit)
	}); reason != "" {
		return values, reason
	}
	return end, ""
}

// jsonLabels reads the labels object at b[i] into d.stream; it returns ""
// or why they cannot be labels.
func (d *Decoder) jsonLabels(i int) string {
	j := &d.json
	b := j.idx.Bytes()
	if b[i] != '{' {
		return "stream is " + jsonstr.Kind(b[i]) + ", not an object"
	}
	bad := ""
	j.idx.Object(i, &j.key, func(_, rawKey []byte, keyFlags jsonstr.Flags, _, v int) (int, string) {
		if b[v] != '"' || keyFlags != 0 {
			if bad == "" {
				bad = fmt.Sprintf("label %q is not a plain name with a string value", clip(rawKey))
			}
			return d.skipJSON(v)
		}
		end, fl := j.idx.Scan(v)
		if end < 0 {
			return v, "cannot parse JSON: a string is not terminated"
		}
		raw := b[v+1 : end-1]
		if fl&jsonstr.Escape == 0 {
			d.stream.add(rawKey, raw)
		} else {
			off := len(d.stream.buf)
			d.stream.buf = jsonstr.Unescape(d.stream.buf, raw)
			d.stream.addUnescaped(rawKey, off)
		}
		return end, ""
	})
	return bad
}

// jsonEntry reads the entry at b[e], [ts, line] or [ts, line, {metadata}],
// of stream n.
func (d *Decoder) jsonEntry(e, n int, emit func(*logline.Event) error) (int, string) {
	j := &d.json
	b := j.idx.Bytes()
	if b[e] != '[' {
		d.res.reject(d.entry, fmt.Sprintf("stream %d: the entry is %s, want [\"<ns>\", \"<line>\"]", n, jsonstr.Kind(b[e])))
		return d.skipJSON(e)
	}
	var t int64
	var line []byte
	plain := false
	bad := ""
	k := 0
	j.meta = j.meta[:0]
	end, reason := j.idx.Array(e, func(v int) (int, string) {
		k++
		switch {
		case bad != "":
		case k == 1:
			t, bad = jsonTime(b, v, &j.idx)
		case k == 2 && b[v] == '"':
			var fl jsonstr.Flags
			var end int
			if line, fl, end = d.jsonString(v); end < 0 {
				return v, "cannot parse JSON: a string is not terminated"
			}
			plain = fl == 0
			return end, ""
		case k == 3 && b[v] == '{':
			return d.jsonMeta(v, &bad)
		default:
			bad = "the entry is not [\"<ns>\", \"<line>\"] or [\"<ns>\", \"<line>\", {metadata}]"
		}
		return d.skipJSON(v)
	})
	if reason != "" {
		return end, reason
	}
	if bad == "" && k < 2 {
		bad = "the entry has no line"
	}
	if bad != "" {
		d.res.reject(d.entry, fmt.Sprintf("stream %d: %s", n, bad))
		return end, ""
	}
	meta := j.meta
	if len(meta) > 0 {
		meta = meta[1:] // jsonMeta opened the object
	}
	if err := d.emitEntry(t, line, plain, meta, emit); err != nil {
		j.err = err.(errStop).err
		return end, stopped
	}
	return end, ""
}

// jsonString returns the text of the string at b[v] (unescaped into
// d.scratch when it has escapes), its flags and the index after it (-1:
// not terminated).
func (d *Decoder) jsonString(v int) ([]byte, jsonstr.Flags, int) {
	j := &d.json
	b := j.idx.Bytes()
	end, fl := j.idx.Scan(v)
	if end < 0 {
		return nil, 0, end
	}
	raw := b[v+1 : end-1]
	if fl&jsonstr.Escape == 0 {
		return raw, fl, end
	}
	d.scratch = jsonstr.Unescape(d.scratch[:0], raw)
	return d.scratch, fl, end
}

// jsonMeta reads an entry's structured metadata, an object of strings, into
// j.meta as attributes; *bad says why it cannot.
func (d *Decoder) jsonMeta(v int, bad *string) (int, string) {
	j := &d.json
	b := j.idx.Bytes()
	return j.idx.Object(v, &j.key, func(_, rawKey []byte, keyFlags jsonstr.Flags, _, w int) (int, string) {
		if b[w] != '"' {
			*bad = fmt.Sprintf("structured metadata %q is %s, want a string", clip(rawKey), jsonstr.Kind(b[w]))
			return d.skipJSON(w)
		}
		end, fl := j.idx.Scan(w)
		if end < 0 {
			return w, "cannot parse JSON: a string is not terminated"
		}
		if len(j.meta) == 0 {
			j.meta = append(j.meta, '{')
		} else {
			j.meta = append(j.meta, ',')
		}
		j.meta = append(jsonstr.AppendRaw(j.meta, rawKey, keyFlags), ':')
		j.meta = jsonstr.AppendRaw(j.meta, b[w+1:end-1], fl)
		return end, ""
	})
}

// jsonTime reads an entry's timestamp at b[v]: nanoseconds since the
// epoch, as a string (what Loki documents) or a number.
func jsonTime(b []byte, v int, idx *jsonstr.Index) (int64, string) {
	var digits []byte
	switch {
	case b[v] == '"':
		end, _ := idx.Scan(v)
		if end < 0 {
			return 0, "the entry's timestamp is not terminated"
		}
		digits = b[v+1 : end-1]
	case b[v] >= '0' && b[v] <= '9':
		end := jsonstr.NumberEnd(b, v)
		if end < 0 {
			return 0, "the entry's timestamp is not a number"
		}
		digits = b[v:end]
	default:
		return 0, "the entry's timestamp is " + jsonstr.Kind(b[v]) + ", want a string of nanoseconds"
	}
	if len(digits) == 0 || len(digits) > 19 {
		return 0, fmt.Sprintf("the entry's timestamp %q is not nanoseconds since 1970", clip(digits))
	}
	var t int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Sprintf("the entry's timestamp %q is not nanoseconds since 1970", clip(digits))
		}
		t = t*10 + int64(c-'0')
	}
	if t < 0 || !intake.TimeInRange(t) {
		return 0, fmt.Sprintf("the entry's timestamp %q is outside the years 1678..2261", clip(digits))
	}
	return t, ""
}
