package syslog

import (
	"bytes"
	"testing"
)

// frames cuts stream into messages, fed in pieces of step bytes, as a
// connection's reads would.
func frames(stream []byte, step, max int) (msgs []string, dropped int) {
	fr := Framer{Max: max}
	var buf []byte
	for i := 0; i < len(stream); i += step {
		buf = append(buf, stream[i:min(i+step, len(stream))]...)
		for {
			msg, used, err := fr.Next(buf)
			if used == 0 {
				break
			}
			buf = buf[used:]
			if err != nil {
				dropped++
			}
			if msg != nil && len(msg) > 0 {
				msgs = append(msgs, string(msg))
			}
		}
	}
	if rest := fr.Rest(buf); len(rest) > 0 {
		msgs = append(msgs, string(rest))
	}
	return msgs, dropped
}

func TestFramer(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 600)
	cases := []struct {
		name    string
		stream  string
		want    []string
		dropped int
	}{
		{"newline", "<1>a\n<2>b\r\n\n<3>c", []string{"<1>a", "<2>b", "<3>c"}, 0},
		{"octet counted", "4 <1>a5 <2>bc", []string{"<1>a", "<2>bc"}, 0},
		{"octet counted with newlines inside", "7 <1>a\nb\n3 <2>", []string{"<1>a\nb\n", "<2>"}, 0},
		{"mixed", "3 <1>\n<2>b\n", []string{"<1>", "<2>b"}, 0},
		{"digits then not a length", "2026-11-28 text\n", []string{"2026-11-28 text"}, 0},
		{"long newline message dropped", "<1>" + string(long) + "\n<2>ok\n", []string{"<2>ok"}, 1},
		{"long octet-counted message dropped", "603 <1>" + string(long) + "4 <2>k", []string{"<2>k"}, 1},
	}
	for _, c := range cases {
		for _, step := range []int{1, 3, 7, 1 << 20} {
			got, dropped := frames([]byte(c.stream), step, 512)
			if len(got) != len(c.want) || dropped != c.dropped {
				t.Errorf("%s, read %d at a time: %q (%d dropped), want %q (%d dropped)", c.name, step, got, dropped, c.want, c.dropped)
				continue
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("%s, read %d at a time: %q, want %q", c.name, step, got, c.want)
					break
				}
			}
		}
	}
}

// FuzzFramer: whatever the stream and however it is cut, no message over
// Max comes out, and the framer always makes progress.
func FuzzFramer(f *testing.F) {
	f.Add([]byte("4 <1>a5 <2>bc<3>d\n"), 3)
	f.Add([]byte("99999999999 x\n"), 1)
	f.Fuzz(func(t *testing.T, stream []byte, step int) {
		if step <= 0 || step > 1<<16 {
			step = 1
		}
		msgs, _ := frames(stream, step, 64)
		for _, m := range msgs {
			if len(m) > 64 {
				t.Fatalf("a message of %d bytes came out of a framer of max 64", len(m))
			}
		}
	})
}
