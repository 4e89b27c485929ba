package syslog

import (
	"bytes"
	"errors"
)

// ErrTooLong reports a message over the framer's Max, dropped as its bytes
// arrive (never held whole).
var ErrTooLong = errors.New("message over --syslog-max-message-bytes: dropped")

// Framer cuts a TCP stream into messages (RFC 6587): octet-counted
// ("LEN SP MSG") when a frame starts with a digit followed by digits and a
// space, else newline-framed. It keeps the state of a message being
// dropped across reads, so its caller never holds more than Max bytes of
// one message.
type Framer struct {
	Max      int  // the longest message kept
	skip     int  // bytes left of an octet-counted message being dropped
	skipLine bool // dropping a newline-framed message until its newline
}

// Next returns the next message at the start of buf and how many bytes of
// buf it used. used == 0 means buf holds no whole message yet: read more,
// keeping buf. A message may be nil with used > 0 (a blank line, bytes of
// a message being dropped); err is ErrTooLong once per dropped message.
func (f *Framer) Next(buf []byte) (msg []byte, used int, err error) {
	switch {
	case len(buf) == 0:
		return nil, 0, nil
	case f.skip > 0:
		n := min(f.skip, len(buf))
		f.skip -= n
		return nil, n, nil
	case f.skipLine:
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil, len(buf), nil
		}
		f.skipLine = false
		return nil, i + 1, nil
	}
	if n, j, ok := octetCount(buf); ok {
		switch {
		case n > f.Max:
			f.skip = n
			return nil, j, ErrTooLong
		case len(buf)-j < n:
			return nil, 0, nil
		}
		return buf[j : j+n], j + n, nil
	} else if j == len(buf) && j < 10 {
		return nil, 0, nil // digits so far: a length or a message, tell with more
	}
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		if len(buf) > f.Max {
			f.skipLine = true
			return nil, len(buf), ErrTooLong
		}
		return nil, 0, nil
	}
	if i > f.Max {
		return nil, i + 1, ErrTooLong
	}
	return bytes.TrimRight(buf[:i], "\r"), i + 1, nil
}

// Rest is what is left at the end of a stream: a last newline-framed
// message without its newline.
func (f *Framer) Rest(buf []byte) []byte {
	if f.skip > 0 || f.skipLine || len(buf) > f.Max {
		return nil
	}
	return bytes.TrimRight(buf, "\r")
}

// octetCount reads "LEN SP" at the start of buf: the length, the index of
// the message, and whether buf starts so. j is how far the digits went.
func octetCount(buf []byte) (n, j int, ok bool) {
	for j < len(buf) && j < 10 && buf[j] >= '0' && buf[j] <= '9' {
		n = n*10 + int(buf[j]-'0')
		j++
	}
	if j == 0 || buf[0] == '0' || j >= len(buf) || buf[j] != ' ' {
		return 0, j, false
	}
	return n, j + 1, true
}
