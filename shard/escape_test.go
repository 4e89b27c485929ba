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
		// Compound RowKeys: different (user, time, id) never collide, the
		// user's range holds its keys and no other user's, and they parse back.
		for _, ts := range []int64{1e18, 1e18 + 100} {
			rk := RowKey(nil, a, ts, b)
			if !ValidKey(string(rk)) && len(rk) <= MaxKeyBytes/2 {
				t.Fatalf("RowKey %q is not a valid key", rk)
			}
			u, got, id, err := ParseRowKey(rk)
			if err != nil || got != ts || !bytes.Equal(u, a) || !bytes.Equal(id, b) {
				t.Fatalf("ParseRowKey(%q) = %q, %d, %q, %v", rk, u, got, id, err)
			}
			from, to := UserRange(a)
			if string(rk) < from || string(rk) >= to {
				t.Fatalf("RowKey %q of %q is outside its range [%q, %q)", rk, a, from, to)
			}
			if !bytes.Equal(a, b) {
				if rkb := RowKey(nil, b, ts, b); string(rkb) >= from && string(rkb) < to {
					t.Fatalf("RowKey %q of %q is inside the range of %q", rkb, b, a)
				}
				if bytes.Equal(rk, RowKey(nil, b, ts, a)) {
					t.Fatalf("(%q,%q) and (%q,%q) share RowKey %q", a, b, b, a, rk)
				}
			}
		}
		lrk := LegacyRowKey(nil, 1e18, a)
		ts, id, err := ParseLegacyRowKey(lrk)
		if err != nil || ts != 1e18 || !bytes.Equal(id, a) {
			t.Fatalf("ParseLegacyRowKey(%q) = %d, %q, %v", lrk, ts, id, err)
		}
	})
}
