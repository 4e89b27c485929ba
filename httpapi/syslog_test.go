package httpapi

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"ingest/buffer"
	"ingest/intake/syslog"
)

// syslogFixture serves syslog on loopback TCP and UDP over a buffer of
// 256 KiB whose blob flushes can be held (the fixture's gate).
func syslogFixture(t *testing.T) (*fixture, net.Addr, net.Addr) {
	t.Helper()
	cfg := Config{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxInflightBytes: 64 << 20, ReadTimeout: 10 * time.Second}
	cfg.Syslog = syslog.Config{TCP: "127.0.0.1:0", UDP: "127.0.0.1:0", MaxMessageBytes: 64 << 10, MaxConns: 16, IdleTimeout: time.Minute}
	bcfg := buffer.Config{Ack: buffer.AckWAL, FlushInterval: 50 * time.Millisecond, FlushBytes: 64 << 10, BufferBytes: 256 << 10, FlushWorkers: 2, BudgetWait: 10 * time.Millisecond}
	f := newFixture(t, cfg, bcfg)
	t.Cleanup(func() { f.srv.closeSyslog(context.Background()) })
	tcp, udp := f.srv.SyslogAddrs()
	return f, tcp, udp
}

// TestSyslogFullBufferStopsTCPAndDropsUDP: while storage holds every flush
// and the buffer is full, a TCP sender is not read (nothing dropped) and a
// UDP datagram is dropped and counted; once storage is back, every TCP
// message is stored.
func TestSyslogFullBufferStopsTCPAndDropsUDP(t *testing.T) {
	f, tcpAddr, udpAddr := syslogFixture(t)
	hold := make(chan struct{})
	f.setGate(hold)
	var once sync.Once
	release := func() { once.Do(func() { f.setGate(nil); close(hold) }) }
	t.Cleanup(release) // runs before the fixture's: its Close waits for flushes
	const n = 20_000   // about 9 MiB: far past the buffer and the socket buffers
	msg := "<14>1 2026-11-28T10:00:00Z h app - - - " + strings.Repeat("x", 420)
	c, err := net.Dial("tcp", tcpAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < n && err == nil; i++ {
			_, err = fmt.Fprintf(c, "%d %s", len(msg), msg)
		}
		sent <- err
	}()
	accepted := func() float64 { return testutil.ToFloat64(f.srv.met.syslog.accepted) }
	dropped := func(reason string) float64 {
		return testutil.ToFloat64(f.srv.met.syslogDropped.WithLabelValues(reason))
	}
	// The buffer is full once nothing more is accepted for a while.
	last := -1.0
	waitFor(t, func() bool {
		got := accepted()
		if got > 0 && got == last {
			return true
		}
		last = got
		time.Sleep(300 * time.Millisecond)
		return false
	})
	if got := accepted(); got >= n || dropped("buffer_full") != 0 {
		t.Fatalf("with the buffer full: %v of %d accepted, %v dropped; want fewer than all, none dropped", got, n, dropped("buffer_full"))
	}
	u, err := net.Dial("udp", udpAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	// Datagrams fill what room the TCP batches left, then are dropped.
	udpSent := 0
	waitFor(t, func() bool {
		for range 10 {
			fmt.Fprint(u, msg)
		}
		udpSent += 10
		return dropped("buffer_full") > 0
	})

	release()
	if err := <-sent; err != nil {
		t.Fatalf("the TCP sender failed: %v", err)
	}
	waitFor(t, func() bool { return accepted() >= n })
	if got := accepted(); got > float64(n+udpSent) {
		t.Fatalf("accepted %v, want the %d TCP messages (and what UDP got in), each once", got, n)
	}
}
