package query

import (
	"testing"

	"ingest/logline"
)

func FuzzParseTimeField(f *testing.F) {
	for _, s := range []string{"2026-11-21T18:04:05.1234567Z", "1970-01-01T00:00:00.0000000Z", "2024-02-29T23:59:60.9999999Z",
		"2026-02-31T00:00:00.0000000Z", "1678-01-01T00:00:00.0000000Z", "2261-12-31T23:59:59.9999999Z", "1969-12-31T23:59:59.0000001Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := logline.ParseTime([]byte(s))
		got, ok := parseTime([]byte(s))
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("parseTime(%q) = %d %v, logline.ParseTime = %d %v", s, got, ok, want, err)
		}
	})
}
