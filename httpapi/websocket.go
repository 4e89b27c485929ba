package httpapi

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
)

// The server side of RFC 6455 WebSockets, over a connection fasthttp hands
// over (ctx.Hijack), for the Loki tail: the opening handshake, text frames
// out, pings out, the client's pings answered and its close echoed. The
// frame headers are gobwas/ws's. A client's data frames are read and
// dropped, never buffered: the tail takes no messages.

// wsGUID is what RFC 6455 appends to the client's key.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsWriteStall is how long one frame may take to go out before the
// connection is given up: a client that does not read is dropped.
const wsWriteStall = 30 * time.Second

// wsHandshake checks that the request opens a WebSocket (RFC 6455 section
// 4.2.1) and comes from no browser page of another origin (Grafana's proxy
// sends no Origin; a page elsewhere must not read logs through a browser's
// credentials), and returns the Sec-WebSocket-Accept value. A refusal is an
// *httperr.Error.
func wsHandshake(ctx *fasthttp.RequestCtx) (string, error) {
	h := &ctx.Request.Header
	switch {
	case !headerHasToken(h.Peek("Upgrade"), "websocket") || !headerHasToken(h.Peek("Connection"), "upgrade"):
		return "", &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "cannot tail: this is a WebSocket endpoint; open it with Upgrade: websocket"}
	case string(h.Peek("Sec-WebSocket-Version")) != "13":
		ctx.Response.Header.Set("Sec-WebSocket-Version", "13")
		return "", &httperr.Error{Status: fasthttp.StatusUpgradeRequired, Msg: "cannot tail: WebSocket version 13 only"}
	}
	key := bytes.TrimSpace(h.Peek("Sec-WebSocket-Key"))
	if raw, err := base64.StdEncoding.DecodeString(string(key)); err != nil || len(raw) != 16 {
		return "", &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "cannot tail: bad Sec-WebSocket-Key"}
	}
	if origin := h.Peek("Origin"); len(origin) > 0 && !sameHost(origin, h.Host()) {
		return "", &httperr.Error{Status: fasthttp.StatusForbidden, Msg: fmt.Sprintf("cannot tail for a page of another origin (%s): connect from this server's origin, or through Grafana's proxy", origin)}
	}
	sum := sha1.Sum(append(key, wsGUID...))
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// headerHasToken reports whether a comma-separated header value holds
// token, in any case.
func headerHasToken(v []byte, token string) bool {
	for part := range bytes.SplitSeq(v, []byte{','}) {
		if bytes.EqualFold(bytes.TrimSpace(part), []byte(token)) {
			return true
		}
	}
	return false
}

// sameHost reports whether an Origin ("scheme://host[:port]") names host.
func sameHost(origin, host []byte) bool {
	_, rest, ok := bytes.Cut(origin, []byte("://"))
	return ok && bytes.EqualFold(rest, host)
}

// wsAnswer sets the 101 answer with accept; the caller then hijacks the
// connection.
func wsAnswer(ctx *fasthttp.RequestCtx, accept string) {
	ctx.SetStatusCode(fasthttp.StatusSwitchingProtocols)
	ctx.Response.Header.Set("Upgrade", "websocket")
	ctx.Response.Header.Set("Connection", "Upgrade")
	ctx.Response.Header.Set("Sec-WebSocket-Accept", accept)
}

// wsConn is an open WebSocket, server side. Frames go out one at a time
// (mu); read reads the client's frames until it closes or the connection
// fails, then closes gone.
type wsConn struct {
	c    net.Conn
	mu   sync.Mutex
	bw   *bufio.Writer
	gone chan struct{}
	once sync.Once
}

func newWSConn(c net.Conn) *wsConn {
	c.SetDeadline(time.Time{}) // the server's request timeouts do not apply to a tail
	return &wsConn{c: c, bw: bufio.NewWriterSize(c, 4<<10), gone: make(chan struct{})}
}

// write sends one unfragmented frame.
func (w *wsConn) write(op ws.OpCode, p []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.c.SetWriteDeadline(time.Now().Add(wsWriteStall))
	if err := ws.WriteHeader(w.bw, ws.Header{Fin: true, OpCode: op, Length: int64(len(p))}); err != nil {
		return err
	}
	if _, err := w.bw.Write(p); err != nil {
		return err
	}
	return w.bw.Flush()
}

// close sends a close frame with code and reason (once), then closes the
// connection.
func (w *wsConn) close(code ws.StatusCode, reason string) {
	w.once.Do(func() {
		w.write(ws.OpClose, ws.NewCloseFrameBody(code, reason))
		w.c.Close()
	})
}

// read reads the client's frames: a ping is answered with a pong, a close
// is echoed and ends the connection, data is dropped. A protocol error (an
// unmasked frame, a reserved opcode, a long or fragmented control frame)
// closes with 1002. It returns when the connection ends.
func (w *wsConn) read() {
	defer close(w.gone)
	br := bufio.NewReaderSize(w.c, 512)
	var ctl [125]byte
	for {
		h, err := ws.ReadHeader(br)
		if err != nil {
			return
		}
		if !h.Masked || h.OpCode.IsReserved() || h.OpCode.IsControl() && (h.Length > int64(len(ctl)) || !h.Fin) {
			w.close(ws.StatusProtocolError, "bad frame")
			return
		}
		if !h.OpCode.IsControl() {
			if _, err := io.CopyN(io.Discard, br, h.Length); err != nil {
				return
			}
			continue
		}
		p := ctl[:h.Length]
		if _, err := io.ReadFull(br, p); err != nil {
			return
		}
		ws.Cipher(p, h.Mask, 0)
		switch h.OpCode {
		case ws.OpPing:
			if w.write(ws.OpPong, p) != nil {
				return
			}
		case ws.OpClose:
			w.close(ws.StatusNormalClosure, "")
			return
		}
	}
}
