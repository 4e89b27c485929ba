package shard

import (
	"errors"
	"unicode/utf8"
)

const hexDigits = "0123456789ABCDEF"

// needsEscape reports the ASCII bytes EscapeKey rewrites: the characters
// Azure forbids in keys (/ \ # ? and control characters), '%' (the escape
// itself) and UserSep, the separator after the user in a RowKey. Bytes >= 0x80 are decided per rune.
var needsEscape = func() (t [128]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	for _, c := range "/\\#?%\x7f" {
		t[c] = true
	}
	t[UserSep] = true
	return t
}()

// EscapeKey appends s to dst in a form that is safe as (part of) an Azure
// table key and reversible with UnescapeKey: every byte Azure forbids, '%',
// '~', C1 control characters (U+0080..U+009F) and bytes that are not valid
// UTF-8 are written as %XX (upper-case hex); everything else is copied. The
// output is valid UTF-8 and never contains / \ # ? ~ or a control character.
func EscapeKey(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if needsEscape[c] {
				dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 || r >= 0x80 && r <= 0x9f {
			for _, b := range s[i : i+n] {
				dst = append(dst, '%', hexDigits[b>>4], hexDigits[b&15])
			}
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return dst
}

// ErrBadEscape reports a '%' not followed by two hex digits.
var ErrBadEscape = errors.New("cannot unescape key: '%' must be followed by two hex digits")

// UnescapeKey appends the original bytes of an EscapeKey output to dst.
func UnescapeKey(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			dst = append(dst, c)
			continue
		}
		if i+2 >= len(s) {
			return dst, ErrBadEscape
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return dst, ErrBadEscape
		}
		dst = append(dst, hi<<4|lo)
		i += 2
	}
	return dst, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// ValidKey reports whether s may be used as an Azure PartitionKey or RowKey:
// valid UTF-8, at most MaxKeyBytes once UTF-16 encoded (Azure sizes strings
// in UTF-16), none of / \ # ? and no control character (U+0000..U+001F,
// U+007F..U+009F). The table sinks check every key with it because Azurite
// accepts keys that Azure refuses.
func ValidKey(s string) bool {
	if len(s) > 2*MaxKeyBytes || !utf8.ValidString(s) {
		return false
	}
	units := 0
	for _, r := range s {
		switch {
		case r < 0x20, r >= 0x7f && r <= 0x9f, r == '/', r == '\\', r == '#', r == '?':
			return false
		case r >= 0x10000:
			units += 2
		default:
			units++
		}
	}
	return 2*units <= MaxKeyBytes
}

// MaxKeyBytes is Azure's limit on the size of a PartitionKey or RowKey:
// 1 KiB of UTF-16, 512 characters of the Basic Multilingual Plane.
const MaxKeyBytes = 1024
