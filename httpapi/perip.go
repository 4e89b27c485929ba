package httpapi

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// perIPListener enforces --max-conns-per-ip at accept time: it counts the
// open connections of each remote IP in a mutex-guarded map and refuses a new
// connection past the limit; a connection's slot is freed by its first Close.
//
// It replaces fasthttp's Server.MaxConnsPerIP, whose connection wrapper
// races at shutdown (fasthttp v1.74.0: perIPConn.Close, called when the
// server closes idle connections, writes fields a worker's Read reads).
// Here Read and Write go straight to the wrapped connection and Close
// touches only the listener's map, under its mutex, once.
//
// It wraps the TCP listener, beneath TLS: a refused connection costs no
// handshake. refuse answers it (a plain-HTTP 429) and closes it; with TLS
// there is no way to answer before the handshake, so refuse only closes.
type perIPListener struct {
	net.Listener
	limit   int
	refuse  func(net.Conn) // answers and closes a refused connection, off the accept loop
	refused func()         // counts a refused connection (a metric)

	mu   sync.Mutex
	open map[netip.Addr]int
}

func newPerIPListener(ln net.Listener, limit int, refuse func(net.Conn), refused func()) *perIPListener {
	return &perIPListener{Listener: ln, limit: limit, refuse: refuse, refused: refused, open: make(map[netip.Addr]int)}
}

// Accept returns the next connection within the limit; the ones past it are
// handed to refuse and never returned.
func (l *perIPListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		if l.acquire(ip) {
			return &perIPConn{Conn: c, l: l, ip: ip}, nil
		}
		if l.refused != nil {
			l.refused()
		}
		go l.refuse(c)
	}
}

func (l *perIPListener) acquire(ip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip] >= l.limit {
		return false
	}
	l.open[ip]++
	return true
}

func (l *perIPListener) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip] <= 1 {
		delete(l.open, ip) // the map holds only addresses with open connections
		return
	}
	l.open[ip]--
}

// openConns is how many connections ip has open.
func (l *perIPListener) openConns(ip netip.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[ip]
}

// remoteIP is the address c comes from, IPv4-mapped IPv6 as IPv4 so both
// spellings share one count; the zero Addr when it has none (one count for
// all such connections, as in-memory listeners in tests give).
func remoteIP(c net.Conn) netip.Addr {
	switch a := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	case nil:
		return netip.Addr{}
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.Addr{}
		}
		return ap.Addr().Unmap()
	}
}

// perIPConn frees its slot in the listener on its first Close.
type perIPConn struct {
	net.Conn
	l    *perIPListener
	ip   netip.Addr
	once sync.Once
}

func (c *perIPConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}

// CloseWrite half-closes the wrapped connection when it can: the lingering
// close after a refused body (linger.go) needs it through this wrapper.
func (c *perIPConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// tooManyConnsResponse is the answer to a plain-HTTP connection past
// --max-conns-per-ip.
var tooManyConnsResponse = func() string {
	const body = "too many open connections from your address (--max-conns-per-ip); retry later\n"
	return "HTTP/1.1 429 Too Many Requests\r\n" +
		"Server: ingest\r\n" +
		"Content-Type: text/plain\r\n" +
		"Connection: close\r\n" +
		"Retry-After: 1\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"\r\n" + body
}()

// refuseLinger bounds how long a refused connection is kept to answer it.
const refuseLinger = time.Second

// refuseHTTP answers 429 and closes. It reads what the client sent (bounded
// in bytes and time) after the answer, so the close does not reset the
// connection under the client before it reads the answer.
func refuseHTTP(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refuseLinger))
	if _, err := io.WriteString(c, tooManyConnsResponse); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// refuseClose closes without an answer (TLS: nothing can be said before the
// handshake).
func refuseClose(c net.Conn) { c.Close() }
