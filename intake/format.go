package intake

import (
	"bytes"
	"net/http"
	"strings"
)

// Format is the shape of a request body.
type Format uint8

// The body formats DetectFormat recognises.
const (
	FormatNDJSON    Format = iota + 1 // one JSON object per line
	FormatJSONArray                   // one JSON array of objects
	FormatText                        // one message per line
	FormatOTLPProto                   // OTLP/HTTP ExportLogsServiceRequest, protobuf
	FormatOTLPJSON                    // OTLP/HTTP ExportLogsServiceRequest, JSON
)

var formatNames = [...]string{"", "ndjson", "json-array", "text", "otlp-protobuf", "otlp-json"}

// String returns a short lower-case name, for logs and metrics labels.
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "unknown"
}

// DetectFormat decides a body's format from its Content-Type header (any
// parameters such as "; charset=utf-8" are ignored) and the body's first
// non-space byte:
//
//   - application/x-ndjson, application/jsonl (and their x-/jsonlines
//     variants): NDJSON.
//   - application/json: a JSON array when the body starts with '[', OTLP JSON
//     when it is an object whose first key is "resourceLogs", else NDJSON.
//   - text/plain: one message per line.
//   - application/x-protobuf (or application/protobuf): OTLP protobuf.
//   - multipart/form-data: a 415, whatever the body: what a browser
//     posts from a form of any site without asking first.
//   - no or any other content type: '{' means NDJSON (or OTLP JSON as above),
//     '[' a JSON array; anything else is a 415. This includes
//     application/x-www-form-urlencoded, what curl -d sends by default.
//
// With otlpAllowed false (the logins endpoint) OTLP bodies and text/plain
// are a 415: logins are JSON only. The body must already be decompressed.
func DetectFormat(contentType string, body []byte, otlpAllowed bool) (Format, error) {
	if err := CheckContentType(contentType, otlpAllowed); err != nil {
		return 0, err
	}
	mt := mediaType(contentType)
	first := firstByte(body)
	var f Format
	switch {
	case eqAny(mt, "application/x-ndjson", "application/ndjson", "application/jsonl",
		"application/x-jsonl", "application/jsonlines", "application/x-jsonlines", "application/json-seq"):
		f = FormatNDJSON
	case eqAny(mt, "application/json"):
		f = sniffJSON(body, first)
		if f == 0 {
			f = FormatNDJSON // every line will be rejected with its number
		}
	case eqAny(mt, "text/plain"):
		f = FormatText
	case eqAny(mt, "application/x-protobuf", "application/protobuf"):
		f = FormatOTLPProto
	default:
		f = sniffJSON(body, first)
	}
	switch {
	case f == 0 && blank(body):
		f = FormatNDJSON // an empty body holds no events, whatever its type
	case f == 0:
		return 0, errorf(http.StatusUnsupportedMediaType,
			"cannot detect body format: Content-Type %q and a body that starts with neither '{' nor '['; "+
				"send application/x-ndjson, application/json, text/plain or application/x-protobuf (OTLP)", contentType)
	case !otlpAllowed && (f == FormatOTLPProto || f == FormatOTLPJSON):
		return 0, errorf(http.StatusUnsupportedMediaType,
			"cannot accept an OTLP body here: this endpoint takes NDJSON or a JSON array")
	}
	return f, nil
}

// CheckContentType refuses (415) the content types a body is refused for
// whatever it holds, so a server can answer before reading it:
// multipart/form-data, and text/plain where otlpAllowed is false (logins).
func CheckContentType(contentType string, otlpAllowed bool) error {
	mt := mediaType(contentType)
	if !eqAny(mt, "multipart/form-data") && (otlpAllowed || !eqAny(mt, "text/plain")) {
		return nil
	}
	accepted := "application/x-ndjson, application/json, text/plain or application/x-protobuf (OTLP)"
	if !otlpAllowed {
		accepted = "application/x-ndjson or application/json"
	}
	return errorf(http.StatusUnsupportedMediaType, "cannot accept a %s body here: send %s", mt, accepted)
}

// mediaType is a Content-Type without its parameters.
func mediaType(contentType string) string {
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	return strings.TrimSpace(contentType)
}

func eqAny(s string, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(s, n) {
			return true
		}
	}
	return false
}

// sniffJSON tells the JSON shapes apart by the first byte, or returns 0.
func sniffJSON(body []byte, first byte) Format {
	switch first {
	case '[':
		return FormatJSONArray
	case '{':
		if isOTLPJSON(body) {
			return FormatOTLPJSON
		}
		return FormatNDJSON
	}
	return 0
}

// isOTLPJSON reports whether body is an object whose first key is
// "resourceLogs" (or "resource_logs"), which is how every OTLP exporter
// writes an ExportLogsServiceRequest. Looking at the first key only keeps an
// NDJSON line that merely mentions the word from being taken for OTLP.
func isOTLPJSON(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	return bytes.HasPrefix(b, []byte(`"resourceLogs"`)) || bytes.HasPrefix(b, []byte(`"resource_logs"`))
}

// blank reports whether body holds nothing but white space.
func blank(body []byte) bool {
	return len(bytes.TrimLeft(bytes.TrimPrefix(body, []byte(bom)), " \t\r\n")) == 0
}

// firstByte returns the first byte that is not JSON white space (or a UTF-8
// byte order mark), or 0 for an empty body.
func firstByte(b []byte) byte {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}
