package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
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
	return syslogFixtureWith(t, buffer.AckWAL, 256<<10)
}

// syslogFixtureWith is syslogFixture with the given --ack and buffer size,
// and the least UDP receive buffer (64 KiB asked, 128 KiB given).
func syslogFixtureWith(t *testing.T, ack buffer.AckMode, bufferBytes int64) (*fixture, net.Addr, net.Addr) {
	t.Helper()
	cfg := Config{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxInflightBytes: 64 << 20, ReadTimeout: 10 * time.Second}
	cfg.Syslog = syslog.DefaultConfig()
	cfg.Syslog.TCP, cfg.Syslog.UDP, cfg.Syslog.MaxConns, cfg.Syslog.IdleTimeout, cfg.Syslog.UDPBufferBytes = "127.0.0.1:0", "127.0.0.1:0", 16, time.Minute, 64<<10
	bcfg := buffer.Config{Ack: ack, FlushInterval: 50 * time.Millisecond, FlushBytes: 64 << 10, BufferBytes: bufferBytes, FlushWorkers: 2, BudgetWait: 10 * time.Millisecond}
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

// TestSyslogUDPGathersWhileStoring: while a UDP batch waits to be stored
// (--ack flush, storage held), the socket is still read: the datagrams
// that arrive meanwhile, far more than the socket's receive buffer holds,
// are gathered into the next batch, and every one is stored once storage
// is back, none dropped.
func TestSyslogUDPGathersWhileStoring(t *testing.T) {
	f, _, udpAddr := syslogFixtureWith(t, buffer.AckFlush, 32<<20)
	hold := make(chan struct{})
	f.setGate(hold)
	var once sync.Once
	release := func() { once.Do(func() { f.setGate(nil); close(hold) }) }
	t.Cleanup(release)
	u, err := net.Dial("udp", udpAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	const n = 3_000 // about 1.5 MB of socket buffer as the kernel counts it: ten times what it holds
	msg := "<14>1 2026-11-28T10:00:00Z h app - - - " + strings.Repeat("x", 100)
	in := f.srv.syslog.udpIn
	gathered := func() int {
		in.mu.Lock()
		defer in.mu.Unlock()
		return in.next.events
	}
	// The first datagram is a batch of its own, held in storing; the rest
	// go at the reader's pace (a chunk the socket holds, then a wait until
	// it is gathered), so that none is dropped because the reader is slow.
	fmt.Fprint(u, msg)
	time.Sleep(200 * time.Millisecond)
	for sent := 1; sent < n; {
		for range min(50, n-sent) {
			if _, err := fmt.Fprint(u, msg); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		waitFor(t, func() bool { return gathered() >= sent-1 })
	}
	release()
	accepted := func() float64 { return testutil.ToFloat64(f.srv.met.syslog.accepted) }
	waitFor(t, func() bool { return accepted() >= n })
	for _, reason := range []string{"buffer_full", "socket_full", "too_long"} {
		if got := testutil.ToFloat64(f.srv.met.syslogDropped.WithLabelValues(reason)); got != 0 {
			t.Errorf("%v datagrams dropped (%s), want none", got, reason)
		}
	}
	if got := accepted(); got != n {
		t.Fatalf("accepted %v, want %d", got, n)
	}
}

// TestSyslogUDPCountsKernelDrops: datagrams the kernel drops while the
// reader is held (the socket's receive buffer full) are counted, so that
// what was accepted and what was dropped add up to what was sent. The
// kernel reports its count with the next datagram it queues: one more is
// sent once the reader has caught up.
func TestSyslogUDPCountsKernelDrops(t *testing.T) {
	f, _, udpAddr := syslogFixtureWith(t, buffer.AckWAL, 32<<20)
	in := f.srv.syslog.udpIn
	in.mu.Lock() // the reader stops at its first datagram
	u, err := net.Dial("udp", udpAddr.String())
	if err != nil {
		in.mu.Unlock()
		t.Fatal(err)
	}
	defer u.Close()
	const n = 3_000
	msg := "<14>1 2026-11-28T10:00:00Z h app - - - " + strings.Repeat("x", 100)
	for range n {
		fmt.Fprint(u, msg)
	}
	in.mu.Unlock()
	accepted := func() float64 { return testutil.ToFloat64(f.srv.met.syslog.accepted) }
	dropped := func() float64 {
		return testutil.ToFloat64(f.srv.met.syslogDropped.WithLabelValues("socket_full"))
	}
	last := -1.0
	waitFor(t, func() bool { // the queue is read once nothing more comes
		got := accepted()
		done := got > 0 && got == last
		last = got
		time.Sleep(100 * time.Millisecond)
		return done
	})
	fmt.Fprint(u, msg)
	waitFor(t, func() bool { return accepted()+dropped() >= n+1 })
	if dropped() == 0 || accepted()+dropped() != n+1 {
		t.Fatalf("accepted %v, dropped by the kernel %v: want some dropped, and %d in all", accepted(), dropped(), n+1)
	}
}

// TestSyslogConnectionLimits: past --syslog-max-conns a new TCP connection
// is closed at once and counted; one silent for --syslog-idle-timeout is
// closed, which gives its place back.
func TestSyslogConnectionLimits(t *testing.T) {
	cfg := Config{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxInflightBytes: 64 << 20, ReadTimeout: 10 * time.Second}
	cfg.Syslog = syslog.DefaultConfig()
	cfg.Syslog.TCP, cfg.Syslog.MaxConns, cfg.Syslog.IdleTimeout = "127.0.0.1:0", 2, 500*time.Millisecond
	f := newFixture(t, cfg, buffer.Config{Ack: buffer.AckWAL, FlushInterval: 50 * time.Millisecond, FlushBytes: 64 << 10, BufferBytes: 1 << 20, FlushWorkers: 2})
	t.Cleanup(func() { f.srv.closeSyslog(context.Background()) })
	addr, _ := f.srv.SyslogAddrs()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// closedWithin reports whether the server closes c within d.
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		_, err := c.Read(make([]byte, 1))
		return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
	}
	a, b := dial(), dial()
	waitFor(t, func() bool { return testutil.ToFloat64(f.srv.met.syslogConns) == 2 })
	refused := dial()
	if !closedWithin(refused, 5*time.Second) || testutil.ToFloat64(f.srv.met.syslogRefused) != 1 {
		t.Fatalf("a third connection past --syslog-max-conns 2: want it closed at once and counted (refused %v)", testutil.ToFloat64(f.srv.met.syslogRefused))
	}
	// a keeps talking, b is silent: b is closed, a is not.
	done := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(done) {
		if _, err := fmt.Fprint(a, "<14>1 - h app - - - alive\n"); err != nil {
			t.Fatalf("a connection that sends every 100ms was closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !closedWithin(b, 5*time.Second) {
		t.Fatal("a connection silent past --syslog-idle-timeout (500ms) is still open")
	}
	// b's place is free again.
	waitFor(t, func() bool { return testutil.ToFloat64(f.srv.met.syslogConns) == 1 })
	c := dial()
	if closedWithin(c, 200*time.Millisecond) {
		t.Fatal("a new connection after the idle one was closed is refused")
	}
}
