package syslog

import "net"

// UDPReader reads a syslog UDP socket one datagram at a time and tells
// how many datagrams the kernel dropped before each one: a burst past the
// socket's receive buffer is lost before the server sees it, and an
// honest count of UDP losses must include those. Only Linux reports them
// (SO_RXQ_OVFL); elsewhere the count is always 0.
type UDPReader struct {
	c        *net.UDPConn
	oob      []byte
	overflow uint32 // the kernel's drop count at the last report
}

// NewUDPReader asks for a receive buffer of bufferBytes on c (the kernel
// caps it at net.core.rmem_max) and for the kernel's drop count.
func NewUDPReader(c *net.UDPConn, bufferBytes int) *UDPReader {
	_ = c.SetReadBuffer(bufferBytes) // best effort: the default buffer still works
	r := &UDPReader{c: c}
	r.oob = reportDrops(c)
	return r
}

// Read reads one datagram into p: its length, and the datagrams the
// kernel dropped since the last Read.
func (r *UDPReader) Read(p []byte) (n, dropped int, err error) {
	n, oobn, _, _, err := r.c.ReadMsgUDPAddrPort(p, r.oob)
	if err != nil {
		return 0, 0, err
	}
	if count, ok := dropCount(r.oob[:oobn]); ok {
		dropped = int(count - r.overflow) // counts wrap at 2^32
		r.overflow = count
	}
	return n, dropped, nil
}
