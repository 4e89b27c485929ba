// Stored text on an operator's terminal. Events and login attempts come
// from end users: a user agent of "\x1b[2J" clears the screen of whoever
// lists it, and other escape sequences can retitle the window, rewrite
// what was printed before or, on some terminals, answer with text typed
// into the shell. Every command that prints stored data prints it through
// this file.
//
// appendTermSafe writes text with every byte or character a terminal may
// act on written as a visible escape instead:
//
//   - ASCII control characters and DEL: \t, \n, \r, or \xNN;
//   - bytes that are not valid UTF-8 (a lone 0x9b is CSI on 8-bit
//     terminals): \xNN;
//   - C1 control characters (U+0080..U+009F, some terminals obey them in
//     UTF-8 too), Unicode format characters (bidirectional overrides and
//     isolates that reorder what is shown, zero-width characters, the byte
//     order mark) and the line and paragraph separators: \uXXXX (or
//     \UXXXXXXXX beyond U+FFFF: the tag characters).
//
// Everything else, backslashes included, is printed as it is, so ordinary
// text, JSON and stored log lines read the same; the escapes are for
// reading, not for parsing (ask for NDJSON for the exact bytes).
//
// Tables for humans always escape their fields (termSafe). Streams of
// lines (cat, query, tail) escape only on a terminal: termLines wraps
// standard output so that a pipe or a file gets the exact bytes.
//
// Cost: one pass over the text; text of printable ASCII only is copied as
// it is, without per-character work beyond one comparison.

package main

import (
	"bytes"
	"io"
	"os"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

const hexDigits = "0123456789abcdef"

// appendTermSafe appends s to dst with every character a terminal may act on
// escaped (see the package comment).
func appendTermSafe(dst, s []byte) []byte {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			dst = append(dst, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = appendASCIIControl(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		case unsafeRune(r):
			dst = appendRuneEscape(dst, r)
		default:
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return dst
}

// termSafe returns s with every character a terminal may act on escaped.
func termSafe(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return string(appendTermSafe(nil, []byte(s)))
		}
	}
	return s
}

func appendASCIIControl(dst []byte, c byte) []byte {
	switch c {
	case '\t':
		return append(dst, '\\', 't')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	}
	return append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
}

// appendRuneEscape appends \uXXXX, or \UXXXXXXXX beyond U+FFFF.
func appendRuneEscape(dst []byte, r rune) []byte {
	digits := 4
	dst = append(dst, '\\', 'u')
	if r > 0xffff {
		digits = 8
		dst[len(dst)-1] = 'U'
	}
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[r>>shift&15])
	}
	return dst
}

// unsafeRune reports whether a valid non-ASCII character is one a terminal
// may act on (C1 controls) or one that changes how the text around it is
// shown (format characters, line and paragraph separators).
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// termLines returns f itself when it is not a terminal, else a writer
// that escapes each line written to it (keeping the line ends) before it
// reaches f. Call Flush on the result (a no-op for f itself) to write a
// last line that has no line end.
func termLines(f *os.File) flusher {
	if !isTerminal(f) {
		return nopFlusher{f}
	}
	return &lineWriter{w: f}
}

// flusher is a writer that may hold back an unfinished line until Flush.
type flusher interface {
	io.Writer
	Flush() error
}

type nopFlusher struct{ io.Writer }

func (nopFlusher) Flush() error { return nil }

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// lineWriter escapes whole lines: a character split across two writes is
// only judged once both halves are in.
type lineWriter struct {
	w       io.Writer
	pending []byte // the unfinished line
	out     []byte
}

// Write escapes every complete line of pending+p and writes it; the rest
// waits for its line end or Flush.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.pending = append(l.pending, p...)
	end := bytes.LastIndexByte(l.pending, '\n')
	if end < 0 {
		return len(p), nil
	}
	l.out = l.out[:0]
	for line := range bytes.Lines(l.pending[:end+1]) {
		l.out = append(appendTermSafe(l.out, line[:len(line)-1]), '\n')
	}
	l.pending = append(l.pending[:0], l.pending[end+1:]...)
	if _, err := l.w.Write(l.out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the unfinished line, escaped.
func (l *lineWriter) Flush() error {
	if len(l.pending) == 0 {
		return nil
	}
	l.out = appendTermSafe(l.out[:0], l.pending)
	l.pending = l.pending[:0]
	_, err := l.w.Write(l.out)
	return err
}
