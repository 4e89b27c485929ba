package query

import (
	"bytes"
	"testing"

	"ingest/logline"
)

// FuzzScanLine: scanLine accepts exactly the lines logline.Parse accepts,
// and lineInfo.event gives the same event.
func FuzzScanLine(f *testing.F) {
	for _, s := range []string{
		"1.0;2026-11-21T18:04:05.1234567Z;error;api;web-1;01JDQ8;\"disk \\\"/var\\\" full; retrying\";{\"user\":\"u1\",\"code\":507}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;;;;;\"\";{}",
		"1.0;2026-11-21T18:04:05.1234567Z;WARNING;a;b;c;\"tab\there\";{}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;info;a;b;c;\"caf\\u00e9 \\ud83d\\ude00\";{\"k\":1}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;info;a;b;c;\"no close;{}\n",
		"1.0;2026-02-30T25:04:05.1234567Z;info;a;b;c;\"m\";{}\n",
		"1.0;2026-11-21T18:04:05.1234567Z;7;a;b;c;\"m\";{\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var want logline.Event
		wantErr := logline.Parse(line, &want)
		var li lineInfo
		var scratch, msgBuf []byte
		msg, ok := scanLine(line, &li, &scratch)
		if ok != (wantErr == nil) {
			t.Fatalf("scanLine ok=%v, logline.Parse: %v", ok, wantErr)
		}
		if !ok {
			return
		}
		if !bytes.Equal(msg, want.Message) {
			t.Fatalf("scanLine message %q, want %q", msg, want.Message)
		}
		var got logline.Event
		li.event(line, &got, &msgBuf)
		if got.Time != want.Time || got.Level != want.Level || !bytes.Equal(got.Service, want.Service) ||
			!bytes.Equal(got.Host, want.Host) || !bytes.Equal(got.ID, want.ID) || !bytes.Equal(got.Message, want.Message) ||
			!bytes.Equal(got.Attrs, want.Attrs) || len(got.Attrs) != len(want.Attrs) {
			t.Fatalf("event\n got %+v\nwant %+v", got, want)
		}
	})
}

func TestHasControl(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"", false}, {"plain text that is long enough", false}, {"caf\xc3\xa9 \xff\x80 text", false},
		{"\x1f", true}, {"12345678\x00", true}, {"abc\ndef ghijkl", true}, {"\x7f\x20\x20\x20\x20\x20\x20\x20", false},
	} {
		if got := hasControl([]byte(c.s)); got != c.want {
			t.Errorf("hasControl(%q) = %v", c.s, got)
		}
	}
}
