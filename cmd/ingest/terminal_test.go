package main

import (
	"bytes"
	"io"
	"os"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTermSafe(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := string(appendTermSafe(nil, []byte(in))); got != want {
			t.Errorf("appendTermSafe(%q) = %q, want %q", in, got, want)
		}
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
	f("", "")
	f("Mozilla/5.0 (X11; Linux x86_64)", "Mozilla/5.0 (X11; Linux x86_64)")
	f("\x1b[2J\x1b]0;owned\x07", `\x1b[2J\x1b]0;owned\x07`)
	f("a\tb\nc\rd\x00e\x7f", `a\tb\nc\rd\x00e\x7f`)
	f(`back\slash "quoted"`, `back\slash "quoted"`)
	f("caf\u00e9 \u65e5\u672c \U0001F600", "caf\u00e9 \u65e5\u672c \U0001F600") // printable UTF-8 stays
	f("\u009b2J\u0085", `\u009b2J\u0085`)                                       // C1 controls, as UTF-8
	f("\x9b2J", `\x9b2J`)                                                       // a lone C1 byte: invalid UTF-8
	f("\xff\xfe\xc3", `\xff\xfe\xc3`)
	f("user\u202egnp.exe", `user\u202egnp.exe`) // right-to-left override
	f("a\u200bb\ufeff\u2028\u2029", `a\u200bb\ufeff\u2028\u2029`)
	f("tag\U000E0041", `tag\U000e0041`)
}

// FuzzTermSafe: whatever the input, the output is valid UTF-8 without a
// control, format or separator character, and input without any is kept
// as it is.
func FuzzTermSafe(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "\u009b", "\xff", "\u202e", "a\nb", "\U000E0041"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := appendTermSafe(nil, in)
		if !utf8.Valid(out) {
			t.Fatalf("appendTermSafe(%q) = %q: not valid UTF-8", in, out)
		}
		clean := utf8.Valid(in)
		for _, r := range string(in) {
			if unsafeRune(r) || r < 0x20 || r == 0x7f {
				clean = false
			}
		}
		for _, r := range string(out) {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("appendTermSafe(%q) = %q: holds %U", in, out, r)
			}
		}
		if clean && !bytes.Equal(out, in) {
			t.Fatalf("appendTermSafe(%q) = %q: changed text with nothing to escape", in, out)
		}
	})
}

func TestTermLinesEscapesWholeLines(t *testing.T) {
	var out bytes.Buffer
	w := &lineWriter{w: &out}
	// A UTF-8 C1 control split across two writes, a line without an end.
	for _, p := range []string{"one \xc2", "\x9b2J\ntwo\x1b", "[0m\nthree\x07"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "one \\u009b2J\ntwo\\x1b[0m\n"; got != want {
		t.Fatalf("before Flush: %q, want %q", got, want)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "one \\u009b2J\ntwo\\x1b[0m\nthree\\x07"; got != want {
		t.Fatalf("after Flush: %q, want %q", got, want)
	}
}

func TestTermLinesKeepsPipesExact(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) {
		t.Fatal("a pipe is taken for a terminal")
	}
	lw := termLines(w)
	lw.Write([]byte("\x1b[2J\n"))
	lw.Flush()
	w.Close()
	out, _ := io.ReadAll(r)
	if string(out) != "\x1b[2J\n" {
		t.Fatalf("through a pipe: %q, want the exact bytes", out)
	}
}

func BenchmarkTermSafeASCII(b *testing.B) {
	line := []byte(`1.0;2026-11-21T18:04:05.1234567Z;error;api;web-1;01JDQ8;"disk full; retrying";{"user":"u1","code":507}`)
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		dst = appendTermSafe(dst[:0], line)
	}
}
