package main

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"ingest/internal/ingestexec"
)

// TestTailReadersThatNeverRead: tail readers that never read (small
// receive buffers) while two 3.5 MB batches arrive keep the server's peak
// RSS (VmHWM) under 512 MiB with the default flags, for 100 readers and
// for 300 (past --max-tail-readers, 256: the rest get 429).
func TestTailReadersThatNeverRead(t *testing.T) {
	for _, readers := range []int{100, 300} {
		t.Run(fmt.Sprint(readers), func(t *testing.T) {
			s := start(t, t.TempDir())
			conns := openStalledTails(t, s, readers)
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			open := min(readers, 256)
			waitTailReaders(t, s, open)
			for i := range 2 {
				if code, body := s.post("/v1/logs", "application/x-ndjson", "", bigBatch(i, 3_500_000)); code != 202 {
					t.Fatalf("POST 3.5 MB = %d %.200s", code, body)
				}
			}
			// The readers take what they can and block; give them time to.
			time.Sleep(3 * time.Second)
			hwm, ok := s.Status("VmHWM")
			if !ok {
				t.Fatal("cannot read VmHWM")
			}
			t.Logf("%d never-reading tail readers (%d admitted), two 3.5 MB posts: peak RSS %d MiB", readers, open, hwm>>20)
			if hwm > 512<<20 {
				t.Errorf("peak RSS %d MiB, want under 512 MiB", hwm>>20)
			}
			_, text := s.get("/metrics")
			refused, _ := ingestexec.Metric([]byte(text), `ingest_http_requests_total{route="get_tail",status="429"}`)
			if int(refused) != readers-open {
				t.Errorf("%v tails refused with 429, want %d", refused, readers-open)
			}
		})
	}
}

// openStalledTails opens n connections that ask for GET /v1/tail?service=*
// with a 4 KiB receive buffer and never read.
func openStalledTails(t *testing.T, s *server, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	addr := strings.TrimPrefix(s.url, "http://")
	var conns []net.Conn
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(c, "GET /v1/tail?service=* HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

// bigBatch is about size bytes of NDJSON events with 1 KiB messages.
func bigBatch(seed, size int) []byte {
	var b bytes.Buffer
	msg := strings.Repeat("m", 1024)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `{"service":"mem","level":"info","id":"b%d-%d","msg":"%s"}`+"\n", seed, i, msg)
	}
	return b.Bytes()
}
