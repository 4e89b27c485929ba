package httpapi

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Refusing a body that is still arriving (413 over --max-body-bytes) must
// not reset the connection. Closing a socket with the client's bytes
// unread makes the kernel answer them with a reset, and the reset
// discards the 413 waiting in the client's socket: a client that sends its
// whole body before reading (Python's urllib, many shippers) saw a
// "connection reset" and no reason. So the answer goes out with
// Connection: close, the server half-closes its side (the client reads the
// answer, then end of stream), and reads and drops what still comes, the
// way a lingering close does, within bounds: a client cannot hold the
// connection or the CPU longer than that, and past maxLingering such
// connections at once the rest are closed as before.
const (
	lingerTime   = 5 * time.Second // at most this long after the answer
	lingerIdle   = time.Second     // or this long without a byte
	lingerBytes  = 64 << 20        // or this much read and dropped
	maxLingering = 64
)

// answerThenLinger makes the server send ctx's answer itself, once the
// handler has set it, and linger on the connection as above.
func (s *Server) answerThenLinger(ctx *fasthttp.RequestCtx) {
	conn := ctx.Conn() // the connection itself: the hijacked one hides CloseWrite
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		defer s.recoverStream("linger")
		// fasthttp releases ctx after this function returns, not before.
		ctx.Response.Header.SetConnectionClose()
		_ = conn.SetWriteDeadline(time.Now().Add(lingerIdle))
		if _, err := ctx.Response.WriteTo(conn); err != nil {
			return
		}
		if s.lingering.Add(1) > maxLingering {
			s.lingering.Add(-1)
			return
		}
		defer s.lingering.Add(-1)
		if hc, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = hc.CloseWrite()
		}
		dropRest(c)
	})
}

// refuseThenLinger answers err and closes the connection the same way:
// a refusal that leaves the body unread (503 while shutting down) would
// otherwise leave the rest of the body to be read as the next request on a
// keep-alive connection.
func (s *Server) refuseThenLinger(ctx *fasthttp.RequestCtx, err error) {
	writeError(ctx, err)
	s.answerThenLinger(ctx)
}

// dropRest reads and drops what the client still sends, until it closes
// or a bound is reached.
func dropRest(c net.Conn) {
	buf := make([]byte, 32<<10)
	end := time.Now().Add(lingerTime)
	for read := 0; read < lingerBytes; {
		deadline := time.Now().Add(lingerIdle)
		if deadline.After(end) {
			deadline = end
		}
		_ = c.SetReadDeadline(deadline)
		n, err := c.Read(buf)
		read += n
		if err != nil {
			return
		}
	}
}
