package intake

import "ingest/internal/jsonstr"

// The event hot path reads JSON with internal/jsonstr's value reader: it
// walks a line once, with no value tree and no copy of the input. Strings
// without escapes are handed out as sub-slices of the body, attribute
// members that are already compact valid JSON are copied into the attrs
// buffer whole (a run of neighbours at a time), and only the others are
// rewritten (jsonstr.AppendValue). walkObject indexes the line first
// (jsonstr.Index: its quotes, and the bytes a string reader must look at
// closely, marked 64 at a time), and the Parser methods that read strings
// of the line through that index take that line as b.

// walkObject walks the members of the JSON object that is the whole of b,
// calling fn with each (see jsonstr.MemberFunc); it returns "" or why the
// line is bad.
func (p *Parser) walkObject(b []byte, fn jsonstr.MemberFunc) string {
	p.idx.Reset(b)
	i := jsonstr.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		if _, end, reason := jsonstr.AppendValue(p.num[:0], b, i, 0); reason == "" && jsonstr.SkipSpace(b, end) == len(b) {
			return "line is not a JSON object: it is " + jsonstr.Kind(b[i])
		}
		return jsonstr.SyntaxError(b, i, "'{'")
	}
	i, reason := p.idx.Object(i, &p.key, fn)
	if reason != "" {
		return reason
	}
	if i = jsonstr.SkipSpace(b, i); i < len(b) {
		return jsonstr.SyntaxError(b, i, "the end of the line after the object")
	}
	return ""
}
