package query

import (
	"bufio"
	"bytes"
	"io"
	"strings"
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
		// A scanner that parsed a time of the same hour first parses s
		// from its minute on.
		var sc lineScanner
		if len(s) >= 14 {
			sc.time([]byte(s[:14] + "00:00.0000000Z"))
		}
		got, ok = sc.time([]byte(s))
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("lineScanner.time(%q) = %d %v, logline.ParseTime = %d %v", s, got, ok, want, err)
		}
	})
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), uint8(2))
	f.Add([]byte("0123456789abcdefghijklmnopqrstuvwxyz\nshort\n0123456789abcdefghijklmnopqrstuvwxyz"), uint8(20))
	f.Add([]byte(strings.Repeat("x", 100)+"\n"), uint8(255))
	f.Fuzz(func(t *testing.T, in []byte, max uint8) {
		// A 16-byte read buffer makes every longer line take the long path.
		lr := &lineReader{br: bufio.NewReaderSize(bytes.NewReader(in), 16), max: int(max)}
		var want [][]byte
		var dropped int64
		for rest := in; len(rest) > 0; {
			i := bytes.IndexByte(rest, '\n')
			line := rest
			if i >= 0 {
				line = rest[:i+1]
			}
			rest = rest[len(line):]
			if len(line) > int(max) {
				dropped++
				continue
			}
			want = append(want, line)
		}
		var got [][]byte
		for {
			line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, bytes.Clone(line))
		}
		if len(got) != len(want) || lr.tooLong != dropped {
			t.Fatalf("got %d lines (%d too long), want %d (%d)", len(got), lr.tooLong, len(want), dropped)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d: got %q want %q", i, got[i], want[i])
			}
		}
	})
}
