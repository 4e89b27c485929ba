package syslog

import (
	"encoding/binary"
	"net"
	"syscall"
)

// reportDrops turns on SO_RXQ_OVFL: a datagram read after drops carries
// the socket's drop count so far. It returns the room for that message
// (nil when the option cannot be set: no counts then).
func reportDrops(c *net.UDPConn) []byte {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, 1)
	}); err != nil || serr != nil {
		return nil
	}
	return make([]byte, syscall.CmsgSpace(4))
}

// dropCount reads the drop count from a datagram's control message: the
// only one asked for, so it is first when present (the kernel adds it only
// once the socket has dropped something).
func dropCount(oob []byte) (uint32, bool) {
	if len(oob) < syscall.CmsgLen(4) {
		return 0, false
	}
	// struct cmsghdr: the length (a size_t), then the level and the type.
	at := syscall.SizeofCmsghdr - 8
	level := int32(binary.NativeEndian.Uint32(oob[at:]))
	typ := int32(binary.NativeEndian.Uint32(oob[at+4:]))
	if level != syscall.SOL_SOCKET || typ != syscall.SO_RXQ_OVFL {
		return 0, false
	}
	return binary.NativeEndian.Uint32(oob[syscall.CmsgLen(0):]), true
}
