package jsonstr

// FrameEnd returns the index just past the value at b[i] as far as
// framing a sequence of values goes (the elements of a JSON array body):
// strings, escapes included, and brackets are matched; a scalar runs to
// the next ',', ']' or white space; nothing else is checked, so a
// malformed value is left whole for its reader to refuse alone. An empty
// value (',' or ']' at b[i]) ends at i. reason is "" or why no value can
// be framed: b ends first, or a string or container is not closed.
func FrameEnd(b []byte, i int) (end int, reason string) {
	const unterminated = "not terminated before the end of the body"
	if i >= len(b) {
		return i, "the body ends where an element should be"
	}
	switch b[i] {
	case '"':
		if end, _ = Scan(b, i); end < 0 {
			return len(b), unterminated
		}
		return end, ""
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				q, _ := Scan(b, j)
				if q < 0 {
					return j, unterminated
				}
				j = q - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, ""
				}
			}
		}
		return len(b), unterminated
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\r' && b[j] != '\n' {
		j++
	}
	return j, ""
}
