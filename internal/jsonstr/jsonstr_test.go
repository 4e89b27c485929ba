package jsonstr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanReference is Scan the plain way, the reference for the
// word-at-a-time version: find the closing quote a byte at a time (a
// backslash takes the next byte with it), then ask of the contents what
// each flag says.
func scanReference(b []byte, i int) (end int, flags Flags) {
	end = -1
	raw := b[i+1:]
	for j := i + 1; j < len(b); j++ {
		if b[j] == '\\' {
			j++
		} else if b[j] == '"' {
			end, raw = j+1, b[i+1:j]
			break
		}
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		flags |= Escape
	}
	if bytes.ContainsFunc(raw, func(r rune) bool { return r < 0x20 }) {
		flags |= Ctrl
	}
	if !utf8.Valid(raw) {
		flags |= BadUTF8
	}
	return end, flags
}

func TestScan(t *testing.T) {
	cases := []struct {
		in    string
		end   int
		flags Flags
	}{
		{`""`, 2, 0},
		{`"abc"`, 5, 0},
		{`"a quite long plain string over 8 bytes"x`, 40, 0},
		{`"ab\"cd"`, 8, Escape},
		{`"ab\\"cd"`, 6, Escape},
		{"\"tab\there\"", 10, Ctrl},
		{`"héllo, wörld and more"`, 25, 0},
		{"\"bad \xff utf-8\"", 13, BadUTF8},
		{"\"cut \xc3\"", 7, BadUTF8},                 // a rune's first byte, then the quote
		{"\"\xef\xbf\xbd\"", 5, 0},                   // U+FFFD itself is valid
		{"\"\xed\xa0\x80\"", 5, BadUTF8},             // a surrogate's encoding is not
		{"\"\\é\\\\é\\\xff\"", 11, Escape | BadUTF8}, // a rune after a backslash is read whole
		{`"never closed`, -1, 0},
		{`"ends in escape\"`, -1, Escape},
		{`"12345678\"12345678"`, 20, Escape},
	}
	for _, tc := range cases {
		end, fl := Scan([]byte(tc.in), 0)
		if end != tc.end || fl != tc.flags {
			t.Errorf("Scan(%q) = %d, %b; want %d, %b", tc.in, end, fl, tc.end, tc.flags)
		}
	}
}

// TestScanEveryByteAtEveryPlace puts each byte value at each place of the
// first word Scan reads, before and after a quote in that word, so every
// way out of the word loop meets every kind of byte (a quote taken from
// the word's bits must not be mistaken for a high or control byte).
func TestScanEveryByteAtEveryPlace(t *testing.T) {
	for c := 0; c < 256; c++ {
		for at := 0; at < 8; at++ {
			for _, tail := range []string{`"` + "abcdefghij", "abc\"xyz\"", "\xe2\x9c\x93\"rest of it"} {
				in := append([]byte(`"`+strings.Repeat("a", at)), byte(c))
				in = append(in, tail...)
				end, fl := Scan(in, 0)
				wantEnd, wantFl := scanReference(in, 0)
				if end != wantEnd || fl != wantFl {
					t.Fatalf("Scan(%q) = %d, %b; want %d, %b", in, end, fl, wantEnd, wantFl)
				}
			}
		}
	}
}

func TestUnescape(t *testing.T) {
	cases := []struct{ raw, want string }{
		{`plain`, "plain"},
		{`a\"b\\c\/d\b\f\n\r\t`, "a\"b\\c/d\b\f\n\r\t"},
		{`\u00e9\u20AC`, "é€"},
		{`\ud83d\ude00`, "😀"},
		{`\ud83d`, "\ufffd"},
		{`\ude00x`, "\ufffdx"},
		{`\x\u12`, `\x\u12`}, // unknown and short escapes stay as written
		{`end\`, `end\`},
	}
	for _, tc := range cases {
		if got := Unescape(nil, []byte(tc.raw)); string(got) != tc.want {
			t.Errorf("Unescape(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

func TestUnquoteErrors(t *testing.T) {
	cases := map[string]string{
		`x`:          "not a JSON string",
		`"abc`:       "no closing quote",
		`"abc\`:      "ends inside an escape",
		`"a\u12"`:    `bad \u escape`,
		`"a\x"`:      `unknown escape \x`,
		"\"a\x01b\"": "raw control character",
	}
	for in, want := range cases {
		if _, _, err := Unquote(nil, []byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Unquote(%q) = %v, want an error with %q", in, err, want)
		}
	}
	out, rest, err := Unquote(nil, []byte(`"a\tb \u00e9 a long plain tail"; rest`))
	if err != nil || string(out) != "a\tb é a long plain tail" || string(rest) != "; rest" {
		t.Fatalf("Unquote = %q, %q, %v", out, rest, err)
	}
}

func TestAppendRaw(t *testing.T) {
	cases := []struct{ raw, want string }{
		{`plain`, `"plain"`},
		{`a\nb\u00e9`, `"a\nb\u00e9"`},
		{`bad \x escape`, `"bad \\x escape"`},
		{"ctrl\x01", `"ctrl\u0001"`},
		{"bad utf8 \xff", "\"bad utf8 \ufffd\""},
	}
	for _, tc := range cases {
		_, fl := Scan([]byte(`"`+tc.raw+`"`), 0)
		if got := AppendRaw(nil, []byte(tc.raw), fl); string(got) != tc.want {
			t.Errorf("AppendRaw(%q) = %s, want %s", tc.raw, got, tc.want)
		}
	}
}

// FuzzStrings checks the codec against a byte-at-a-time scan and against
// encoding/json: what the writers produce is valid JSON that decodes to
// what the readers return.
func TestVerbatim(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{"plain", true}, {"café → ✓", true}, {`a\"b\n\u00e9\/`, true}, {`\ud83d`, true},
		{`bad \x`, false}, {`end\`, false}, {`\u12`, false}, {"tab\there", false}, {"utf8 \xff", false},
		{`ok \t then \q`, false},
	} {
		_, fl := Scan([]byte(`"`+tc.raw+`"`), 0)
		if got := Verbatim([]byte(tc.raw), fl); got != tc.want {
			t.Errorf("Verbatim(%q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

func FuzzStrings(f *testing.F) {
	for _, s := range []string{`plain`, `a\"b`, `\ud83d\ude00`, `\ud83d`, `bad \x`, "ctrl\x01", "utf8 \xff é", `end\`, `12345678"tail`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		lit := append(append([]byte{'"'}, raw...), '"')
		end, fl := Scan(lit, 0)
		if wantEnd, wantFl := scanReference(lit, 0); end != wantEnd || fl != wantFl {
			t.Fatalf("Scan(%q) = %d, %b; the plain way %d, %b", lit, end, fl, wantEnd, wantFl)
		}
		// Quoting text and reading it back is the identity on valid UTF-8.
		quoted := AppendQuoted(nil, raw)
		if !json.Valid(quoted) {
			t.Fatalf("AppendQuoted(%q) = %s, not valid JSON", raw, quoted)
		}
		back, rest, err := Unquote(nil, quoted)
		if err != nil || len(rest) != 0 {
			t.Fatalf("Unquote(%s) = %v, rest %q", quoted, err, rest)
		}
		if utf8.Valid(raw) && !bytes.Equal(back, raw) {
			t.Fatalf("Unquote(AppendQuoted(%q)) = %q", raw, back)
		}
		if end != len(lit) {
			return // raw holds a closing quote: not the contents of one string
		}
		// Re-emitting raw contents gives valid JSON meaning what Unescape reads.
		out := AppendRaw(nil, raw, fl)
		var s string
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("AppendRaw(%q) = %s: %v", raw, out, err)
		}
		if utf8.Valid(raw) && fl&Ctrl == 0 && s != string(Unescape(nil, raw)) {
			t.Fatalf("AppendRaw(%q) = %s decodes to %q, Unescape gives %q", raw, out, s, Unescape(nil, raw))
		}
		if fl == 0 && !bytes.Equal(out[1:len(out)-1], raw) {
			t.Fatalf("AppendRaw changed a plain string: %q -> %s", raw, out)
		}
		// Verbatim says exactly when AppendRaw copies raw as it is, and then
		// text without escapes is quoted unchanged too.
		if v, same := Verbatim(raw, fl), bytes.Equal(out[1:len(out)-1], raw); v != same {
			t.Fatalf("Verbatim(%q) = %v, but AppendRaw gives %s", raw, v, out)
		}
		if Verbatim(raw, fl) && fl&Escape == 0 && !bytes.Equal(AppendQuoted(nil, raw), out) {
			t.Fatalf("Verbatim(%q) without escapes, but AppendQuoted gives %s", raw, AppendQuoted(nil, raw))
		}
	})
}

// BenchmarkScan compares Scan with the byte-at-a-time loop on a key, a
// log message and a long value.
func BenchmarkScan(b *testing.B) {
	for _, s := range []string{"checkout", "user u123 logged in from 10.0.1.2 via password", strings.Repeat("x", 160)} {
		lit := []byte(`"` + s + `",`)
		for _, impl := range []struct {
			name string
			scan func([]byte, int) (int, Flags)
		}{{"words", Scan}, {"reference", scanReference}} {
			b.Run(fmt.Sprintf("%s/%d", impl.name, len(s)), func(b *testing.B) {
				b.SetBytes(int64(len(lit)))
				for b.Loop() {
					if end, _ := impl.scan(lit, 0); end != len(lit)-1 {
						b.Fatal(end)
					}
				}
			})
		}
	}
}
