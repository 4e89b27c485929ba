package intake

import (
	"testing"

	"ingest/internal/httperr"
)

func TestDetectFormat(t *testing.T) {
	otlpJSON := `{"resourceLogs":[]}`
	tests := []struct {
		ct, body string
		otlp     bool
		want     Format
		status   int
	}{
		{"application/x-ndjson", `{"msg":"a"}`, true, FormatNDJSON, 0},
		{"application/x-ndjson; charset=utf-8", `{"msg":"a"}`, true, FormatNDJSON, 0},
		{"Application/JSONL", `{"msg":"a"}`, true, FormatNDJSON, 0},
		{"application/x-ndjson", `[{"msg":"a"}]`, true, FormatNDJSON, 0}, // the type is explicit
		{"application/json", `[{"msg":"a"}]`, true, FormatJSONArray, 0},
		{"application/json", "\n  [{\"msg\":\"a\"}]", true, FormatJSONArray, 0},
		{"application/json", `{"msg":"a"}`, true, FormatNDJSON, 0},
		{"application/json; charset=utf-8", otlpJSON, true, FormatOTLPJSON, 0},
		{"application/json", "{\n  \"resourceLogs\": []}", true, FormatOTLPJSON, 0},
		{"application/json", otlpJSON, false, 0, 415},
		{"application/json", `{"msg":"resourceLogs"}`, false, FormatNDJSON, 0},
		{"application/json", `"just a string"`, true, FormatNDJSON, 0}, // lines get rejected one by one
		{"text/plain", "hello\nworld", true, FormatText, 0},
		{"text/plain; charset=utf-8", `{"looks":"like json"}`, true, FormatText, 0},
		{"application/x-protobuf", "\x0a\x00", true, FormatOTLPProto, 0},
		{"application/protobuf", "\x0a\x00", true, FormatOTLPProto, 0},
		{"application/x-protobuf", "\x0a\x00", false, 0, 415},
		{"", `{"msg":"a"}`, true, FormatNDJSON, 0},
		{"", `[{"msg":"a"}]`, true, FormatJSONArray, 0},
		{"", otlpJSON, true, FormatOTLPJSON, 0},
		{"application/x-www-form-urlencoded", `{"msg":"a"}`, true, FormatNDJSON, 0}, // curl -d
		{"application/x-www-form-urlencoded", `{"user":"a"}`, false, FormatNDJSON, 0},
		{"multipart/form-data", `{"msg":"a"}`, true, 0, 415}, // a cross-site fetch can send this without asking
		{"Multipart/Form-Data; boundary=x", `{"user":"a"}`, false, 0, 415},
		{"text/plain", `{"user":"a"}`, false, 0, 415}, // logins are JSON: a cross-site form can send text/plain
		{"text/plain;charset=UTF-8", "[]", false, 0, 415},
		{"", "\xef\xbb\xbf{\"msg\":\"a\"}", true, FormatNDJSON, 0},
		{"", "", true, FormatNDJSON, 0},
		{"", "hello", true, 0, 415},
		{"application/xml", "<log/>", true, 0, 415},
		{"application/octet-stream", "\x00\x01", true, 0, 415},
	}
	for _, tt := range tests {
		got, err := DetectFormat(tt.ct, []byte(tt.body), tt.otlp)
		if httperr.StatusOf(err) != max(tt.status, 200) || got != tt.want {
			t.Errorf("DetectFormat(%q, %q, %v) = %v, %v; want %v, status %d", tt.ct, tt.body, tt.otlp, got, err, tt.want, tt.status)
		}
	}
}

func TestFormatString(t *testing.T) {
	if FormatOTLPJSON.String() != "otlp-json" || Format(99).String() != "unknown" {
		t.Fatal("Format.String")
	}
}
