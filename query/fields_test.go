package query

import (
	"bytes"
	"testing"

	"ingest/logline"
)

// FuzzScanLine: scan accepts exactly the lines logline.Parse accepts,
// lineInfo.event gives the same event, and lineEncoder writes what
// AppendNDJSON writes for it (with a fresh encoder and with one that has
// seen the line before).
func FuzzScanLine(f *testing.F) {
	for _, s := range []string{
		"1.0;2026-11-21T18:04:05.1234567Z;error;api;web-1;01JDQ8;\"disk \\\"/var\\\" full; retrying\";{\"user\":\"u1\",\"code\":507}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;;;;;\"\";{}",
		"1.0;2026-11-21T18:04:05.1234567Z;WARNING;a;b;c;\"tab\there\";{}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;info;a;b;c;\"caf\\u00e9 \\ud83d\\ude00\";{\"k\":1}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;info;a;b;c;\"no close;{}\n",
		"1.0;2026-02-30T25:04:05.1234567Z;info;a;b;c;\"m\";{}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;7;a;b;c;\"m\";{\n",
		"1.0;2024-12-31T23:59:60.5000000Z;info;a;b;c;\"leap\";{}\n",
		"1.0;2026-02-30T10:00:00.0000000Z;info;a;b;c;\"feb 30\";{}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;info;a\x7f;b\"q;c\\;\"bad \xff utf8 <&>\";{\"ts\": 1, \"a\" : [1, \"x y\"]}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;info;a;b;c;\"m\";{\"k\":1,}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var want logline.Event
		wantErr := logline.Parse(line, &want)
		var li lineInfo
		var sc lineScanner
		var msgBuf []byte
		msg, ok := sc.scan(line, &li)
		if ok != (wantErr == nil) {
			t.Fatalf("scan ok=%v, logline.Parse: %v", ok, wantErr)
		}
		if !ok {
			return
		}
		if !bytes.Equal(msg, want.Message) {
			t.Fatalf("scan message %q, want %q", msg, want.Message)
		}
		var got logline.Event
		li.event(trimNL(line), &got, &msgBuf)
		if got.Time != want.Time || got.Level != want.Level || !bytes.Equal(got.Service, want.Service) ||
			!bytes.Equal(got.Host, want.Host) || !bytes.Equal(got.ID, want.ID) || !bytes.Equal(got.Message, want.Message) ||
			!bytes.Equal(got.Attrs, want.Attrs) || len(got.Attrs) != len(want.Attrs) {
			t.Fatalf("event\n got %+v\nwant %+v", got, want)
		}
		wantJSON := AppendNDJSON(nil, &want)
		var en lineEncoder
		for range 2 {
			if gotJSON := en.append(nil, line, &li, msg); !bytes.Equal(gotJSON, wantJSON) {
				t.Fatalf("lineEncoder wrote\n%s\nAppendNDJSON\n%s", gotJSON, wantJSON)
			}
		}
	})
}

func TestSpecial(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"", -1}, {"plain text that is long enough", -1}, {"caf\xc3\xa9 \xff\x80 text and more", -1},
		{"\x1f", 0}, {"12345678\x00", 8}, {"abc\ndef ghijkl", 3}, {"\x7f\x20\x20\x20\x20\x20\x20\x20", -1},
		{"disk full\" rest", 9}, {"a\\\"", 1}, {"0123456\"\"", 7}, {"\xff\xfe\xfd\xfc\x21\x5b\x5d\x1f", 7},
		{"01234567\x01\x00\"", 8}, {"\"\x00", 0},
	} {
		if got := special([]byte(c.s)); got != c.want {
			t.Errorf("special(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}
