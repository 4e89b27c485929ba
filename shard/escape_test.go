package shard

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapeKey(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		got := string(EscapeKey(nil, []byte(in)))
		if got != want {
			t.Fatalf("EscapeKey(%q) = %q, want %q", in, got, want)
		}
		back, err := UnescapeKey(nil, []byte(got))
		if err != nil || string(back) != in {
			t.Fatalf("UnescapeKey(%q) = %q, %v; want %q", got, back, err, in)
		}
	}
	f("", "")
	f("alice@example.com", "alice@example.com")
	f("a_b-c.d+e", "a_b-c.d+e")
	f("a/b", "a%2Fb")
	f(`a\b`, "a%5Cb")
	f("a#b?c", "a%23b%3Fc")
	f("100%", "100%25")
	f("x~01", "x%7E01")
	f("tab\there\nnl\x00\x7f", "tab%09here%0Anl%00%7F")
	f("héllo 日本", "héllo 日本")
	f("c1\u0085x", "c1%C2%85x")
	f("bad\xffutf8\xc3", "bad%FFutf8%C3")
	f("'quote'", "'quote'")
}

func TestUnescapeKeyErrors(t *testing.T) {
	for _, in := range []string{"%", "%4", "a%zz", "%G0", "ab%"} {
		if _, err := UnescapeKey(nil, []byte(in)); err == nil {
			t.Errorf("UnescapeKey(%q): want an error", in)
		}
	}
	if got, err := UnescapeKey(nil, []byte("%2f%2F")); err != nil || string(got) != "//" {
		t.Errorf("lower-case hex: got %q, %v", got, err)
	}
}

func TestValidKey(t *testing.T) {
	for in, want := range map[string]bool{
		"0a1f_alice":             true,
		"a/b":                    false,
		`a\b`:                    false,
		"a#":                     false,
		"?":                      false,
		"a\x01":                  false,
		"a\u0085":                false,
		"bad\xff":                false,
		strings.Repeat("x", 512): true,
		strings.Repeat("x", 513): false,
		strings.Repeat("é", 512): true,
		strings.Repeat("😀", 256): true,
		strings.Repeat("😀", 257): false,
	} {
		if got := ValidKey(in); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", in, got, want)
		}
	}
}

// forbidden reports a character EscapeKey must never emit.
func forbidden(s []byte) bool {
	if !utf8.Valid(s) {
		return true
	}
	for _, r := range string(s) {
		if r < 0x20 || r >= 0x7f && r <= 0x9f || strings.ContainsRune(`/\#?~`, r) {
			return true
		}
	}
	return false
}

func FuzzEscapeKey(f *testing.F) {
	for _, s := range []string{"", "alice@example.com", "a/b\\c#d?e~f%g", "\x00\x1f\x7f", "\xc2\x85", "\xff\xfe", "日本", "%41"} {
		f.Add([]byte(s), []byte("x"))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ea := EscapeKey(nil, a)
		if forbidden(ea) {
			t.Fatalf("EscapeKey(%q) = %q contains a forbidden character", a, ea)
		}
		back, err := UnescapeKey(nil, ea)
		if err != nil || !bytes.Equal(back, a) {
			t.Fatalf("round trip of %q: %q, %v", a, back, err)
		}
		eb := EscapeKey(nil, b)
		if !bytes.Equal(a, b) && bytes.Equal(ea, eb) {
			t.Fatalf("%q and %q escape to the same %q", a, b, ea)
		}
		// Compound keys: different (user, salt) and (time, id) never collide.
		k := NewKeyer(DefaultConfig())
		for _, sa := range []int{-1, 0, 7} {
			pk := k.AppendKey(nil, a, sa)
			if !ValidKey(string(pk)) && len(pk) <= MaxKeyBytes/2 {
				t.Fatalf("PartitionKey %q is not a valid key", pk)
			}
			u, salt, err := SplitPartitionKey(nil, pk)
			if err != nil || salt != sa || !bytes.Equal(u, a) {
				t.Fatalf("SplitPartitionKey(%q) = %q, %d, %v; want %q, %d", pk, u, salt, err, a, sa)
			}
			for _, sb := range []int{-1, 0, 7} {
				if (sa != sb || !bytes.Equal(a, b)) && bytes.Equal(pk, k.AppendKey(nil, b, sb)) {
					t.Fatalf("(%q,%d) and (%q,%d) share PartitionKey %q", a, sa, b, sb, pk)
				}
			}
		}
		rk := RowKey(nil, 1e18, a)
		ts, id, err := ParseRowKey(nil, rk)
		if err != nil || ts != 1e18 || !bytes.Equal(id, a) {
			t.Fatalf("ParseRowKey(%q) = %d, %q, %v", rk, ts, id, err)
		}
		if !bytes.Equal(a, b) && bytes.Equal(rk, RowKey(nil, 1e18, b)) {
			t.Fatalf("ids %q and %q share RowKey %q", a, b, rk)
		}
	})
}
