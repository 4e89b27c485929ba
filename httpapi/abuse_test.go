package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"ingest/buffer"
)

// stalledUpload opens a connection that declares a body of declared bytes
// (chunked when declared < 0), sends sent bytes of it and stalls.
func stalledUpload(t *testing.T, addr string, declared, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	line := []byte(`{"msg":"stalled upload filler line"}` + "\n")
	body := bytes.Repeat(line, sent/len(line)+1)[:sent]
	if declared < 0 {
		fmt.Fprintf(c, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", sent)
	} else {
		fmt.Fprintf(c, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", declared)
	}
	if _, err := c.Write(body); err != nil {
		t.Fatal(err)
	}
	return c
}

// Eight uploads that declare 16 MiB each (or send chunks), send 300 KB and
// stall hold only what they sent: the 64 MiB --max-inflight-bytes budget
// stays open to everyone else. (Reserving the declared length, or the whole
// --max-body-bytes for a chunked body, four of them used up the budget and
// every other client got 429 until --read-timeout.)
func TestStalledUploadsDoNotStarveOthers(t *testing.T) {
	cfg := Config{MaxBodyBytes: 16 << 20, MaxDecompressedBytes: 64 << 20, MaxInflightBytes: 64 << 20, ReadTimeout: time.Minute}
	f := newTCPFixture(t, cfg, buffer.Config{})
	const stalled, sent = 8, 300_000
	for i := range stalled {
		declared := 16 << 20
		if i%2 == 1 {
			declared = -1
		}
		stalledUpload(t, f.addr, declared, sent)
	}
	// Wait until the server has read (nearly) what every stalled upload
	// sent: a chunked body's last piece may stay in fasthttp's reader until
	// the chunk's end arrives, so each upload may hold one step less.
	deadline := time.Now().Add(20 * time.Second)
	for least := int64(stalled * (sent - readStep)); f.srv.inflight.Used() < least; {
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %d bytes for the stalled uploads, want at least %d", f.srv.inflight.Used(), least)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if used, most := f.srv.inflight.Used(), int64(stalled*(sent+2*readStep)); used > most {
		t.Errorf("stalled uploads hold %d bytes of --max-inflight-bytes, want at most %d (what they sent)", used, most)
	}
	ndjson := map[string]string{"Content-Type": "application/x-ndjson"}
	for i := range 20 {
		status, _, body := f.do(t, "POST", "/v1/logs", ndjson, []byte(fmt.Sprintf(`{"msg":"normal client %d"}`, i)))
		if status != 202 {
			t.Fatalf("normal request %d beside %d stalled uploads: %d %s", i, stalled, status, body)
		}
	}
	// A large body still fits beside them.
	big := []byte(strings.Repeat(`{"msg":"a large batch from a normal client"}`+"\n", 200_000)) // ~9 MB
	if status, _, body := f.do(t, "POST", "/v1/logs", ndjson, big); status != 202 {
		t.Fatalf("9 MB request beside the stalled uploads: %d %s", status, body)
	}
}

// slowloris opens a connection that sends a request line and then one
// header byte every interval, never finishing its headers. It returns a
// channel closed when the server closes the connection.
func slowloris(t *testing.T, addr string, interval time.Duration) <-chan struct{} {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	closed := make(chan struct{})
	go func() { // reads until the server closes
		io.Copy(io.Discard, c)
		close(closed)
	}()
	go func() {
		if _, err := io.WriteString(c, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\n"); err != nil {
			return
		}
		for {
			select {
			case <-closed:
				return
			case <-time.After(interval):
			}
			if _, err := io.WriteString(c, "X"); err != nil {
				return
			}
		}
	}()
	return closed
}

// headerFlood sends a request whose headers go on past size bytes and
// returns the server's answer (its status line), or "closed".
func headerFlood(t *testing.T, addr string, size int) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		io.WriteString(c, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\n")
		line := []byte("X-Flood: " + strings.Repeat("a", 100) + "\r\n")
		for sent := 0; sent < size; sent += len(line) {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	}()
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "closed"
	}
	return strings.TrimSpace(status)
}

// Abusive connections all at once (stalled 16 MiB uploads, slowloris
// connections that never finish their headers, header floods) cost their
// own connections: a normal client keeps getting 202, a flood gets 431, and
// every slowloris connection is closed once --read-timeout passes. The full
// size (2,000 slowloris connections) and its latency figures are
// scripts/abuse.sh.
func TestConnectionAbuse(t *testing.T) {
	cfg := Config{MaxBodyBytes: 16 << 20, MaxDecompressedBytes: 64 << 20, MaxInflightBytes: 64 << 20,
		ReadTimeout: 4 * time.Second, IdleTimeout: 4 * time.Second, MaxHeaderBytes: 16 << 10}
	f := newTCPFixture(t, cfg, buffer.Config{})
	const stalled, loris, floods = 8, 300, 20
	for range stalled {
		stalledUpload(t, f.addr, 16<<20, 300_000)
	}
	closed := make([]<-chan struct{}, loris)
	for i := range closed {
		closed[i] = slowloris(t, f.addr, 500*time.Millisecond)
	}
	answers := make(chan string, floods)
	for range floods {
		go func() { answers <- headerFlood(t, f.addr, 1<<20) }()
	}

	ndjson := map[string]string{"Content-Type": "application/x-ndjson"}
	for i := range 30 {
		status, _, body := f.do(t, "POST", "/v1/logs", ndjson, []byte(fmt.Sprintf(`{"msg":"normal client %d"}`, i)))
		if status != 202 {
			t.Fatalf("normal request %d under abuse: %d %s", i, status, body)
		}
	}
	refused := 0
	for range floods {
		switch a := <-answers; {
		case strings.HasPrefix(a, "HTTP/1.1 431 "):
			refused++
		case a != "closed":
			t.Errorf("header flood answered %q, want 431 or a closed connection", a)
		}
	}
	if refused == 0 {
		t.Error("no header flood got 431")
	}
	deadline := time.After(cfg.ReadTimeout + 30*time.Second)
	for i, c := range closed {
		select {
		case <-c:
		case <-deadline:
			t.Fatalf("slowloris connection %d still open long after --read-timeout", i)
		}
	}
}

// A client that sends its whole body before reading the answer (as
// Python's urllib does) gets the 413 for a body far over --max-body-bytes,
// declared or chunked, not a reset connection: the server answers with
// Connection: close, half-closes, and reads and drops the rest of the body.
// Closing with the body unread made the kernel reset the connection, and
// the reset discarded the answer waiting in the client's socket.
func TestFarOversizedBodyGets413NotReset(t *testing.T) {
	f := newTCPFixture(t, Config{MaxBodyBytes: 64 << 10, MaxDecompressedBytes: 1 << 20, MaxInflightBytes: 8 << 20, ReadTimeout: 30 * time.Second}, buffer.Config{})
	line := []byte(`{"msg":"far over the limit"}` + "\n")
	body := bytes.Repeat(line, (16<<20)/len(line)) // 16 MiB: 256x the limit, more than the sockets buffer
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			w := bufio.NewWriterSize(c, 64<<10)
			if chunked {
				fmt.Fprintf(w, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")
				for rest := body; len(rest) > 0; {
					n := min(len(rest), 64<<10)
					fmt.Fprintf(w, "%x\r\n", n)
					w.Write(rest[:n])
					w.WriteString("\r\n")
					rest = rest[n:]
				}
				w.WriteString("0\r\n\r\n")
			} else {
				fmt.Fprintf(w, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", len(body))
				w.Write(body)
			}
			if err := w.Flush(); err != nil {
				t.Fatalf("sending the body: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("reading the answer after sending the body: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 413 || !strings.Contains(string(b), "max-body-bytes") || !resp.Close {
				t.Fatalf("answer %d (Connection: close %v) %s, want 413 naming --max-body-bytes, closing the connection", resp.StatusCode, resp.Close, b)
			}
		})
	}
}

// A keep-alive client that posts a large body to an instance shutting
// down gets exactly one 503, with Connection: close, and then a clean end
// of stream: the body it sent is read and dropped, never parsed as a next
// request (which answered 400 and then reset the connection).
func TestShutdownRefusalClosesCleanly(t *testing.T) {
	f := newTCPFixture(t, Config{MaxBodyBytes: 16 << 20, MaxDecompressedBytes: 64 << 20, MaxInflightBytes: 64 << 20, ReadTimeout: 30 * time.Second}, buffer.Config{})
	f.srv.Drain(context.Background())
	line := []byte(`{"msg":"sent while the server shuts down"}` + "\n")
	body := bytes.Repeat(line, 360_000/len(line)) // 360 KB, more than the sockets buffer
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			w := bufio.NewWriterSize(c, 64<<10)
			if chunked {
				fmt.Fprintf(w, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", len(body))
				w.Write(body)
				w.WriteString("\r\n0\r\n\r\n")
			} else {
				fmt.Fprintf(w, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", len(body))
				w.Write(body)
			}
			// And a second request on the same connection, as a keep-alive
			// client sends its next batch.
			fmt.Fprintf(w, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Length: 11\r\n\r\n{\"msg\":\"x\"}")
			if err := w.Flush(); err != nil {
				t.Fatalf("sending the body: %v", err)
			}
			oneAnswerThenEnd(t, c, 503)
		})
	}
}

// The same for a body refused halfway for memory (429 while others hold
// --max-inflight-bytes): one answer, then a clean end of stream.
func TestMemoryRefusalMidBodyClosesCleanly(t *testing.T) {
	f := newTCPFixture(t, Config{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 1 << 20, MaxInflightBytes: 1 << 20, ReadTimeout: 30 * time.Second}, buffer.Config{})
	stalledUpload(t, f.addr, 1<<20, 900_000) // holds most of the budget
	deadline := time.Now().Add(10 * time.Second)
	for f.srv.inflight.Used() < 800_000 {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled upload holds %d bytes", f.srv.inflight.Used())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	body := bytes.Repeat([]byte(`{"msg":"refused halfway"}`+"\n"), 500_000/26)
	w := bufio.NewWriter(c)
	fmt.Fprintf(w, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Length: %d\r\n\r\n", len(body))
	w.Write(body)
	fmt.Fprintf(w, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Length: 11\r\n\r\n{\"msg\":\"x\"}")
	if err := w.Flush(); err != nil {
		t.Fatalf("sending the body: %v", err)
	}
	oneAnswerThenEnd(t, c, 429)
}

// oneAnswerThenEnd reads the answer on c: status, with Connection: close
// and Retry-After, then a clean end of stream (no answer to what followed
// on the connection, no reset).
func oneAnswerThenEnd(t *testing.T, c net.Conn, status int) {
	t.Helper()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != status || !resp.Close || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("answer %d (Connection: close %v, Retry-After %q), want %d closing the connection", resp.StatusCode, resp.Close, resp.Header.Get("Retry-After"), status)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
		t.Fatalf("after the %d: %q, %v; want a clean end of stream", status, rest, err)
	}
}
