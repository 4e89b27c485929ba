package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"ingest/admission"
	"ingest/buffer"
	"ingest/intake/group"
	"ingest/intake/syslog"
	"ingest/internal/httperr"
)

// Syslog listeners (--syslog-tcp, --syslog-udp) share the intake path of
// POST /v1/logs: messages are parsed into events, grouped by a Grouper
// under --max-inflight-bytes, added to the buffer (the write-ahead log)
// and shown to live tails. Syslog has no acknowledgement, so:
//
//   - TCP: what one read of a connection gave is in the buffer, as safe as
//     --ack says, before the connection is read again. A full buffer or
//     budget stops reading (the sender's TCP window fills), it never
//     drops. A connection that the server stops while it holds messages
//     not yet added (shutdown) loses nothing it read: they are added
//     first.
//   - UDP: best effort. One goroutine reads the socket while another
//     stores: what arrives while a batch is stored (the WAL's fsync) is
//     gathered into the next one, so the rate is not one datagram per
//     fsync. A datagram that finds the buffer, the budget or the gathering
//     batch full is dropped and counted, as are those the kernel dropped
//     when the socket's receive buffer overflowed.

// syslogReadBytes is a TCP connection's read buffer beside the longest
// message: what one read may bring, and what is added before the next.
const syslogReadBytes = 64 << 10

// udpBatchEvents bounds the messages gathered while a batch is stored:
// past it datagrams are dropped (storage is not keeping up).
const udpBatchEvents = 50_000

// syslogRetry bounds the wait between attempts to add a TCP connection's
// messages to a full buffer.
const syslogRetry = time.Second

// syslogListeners are the open syslog sockets of a server.
type syslogListeners struct {
	tcp   net.Listener
	udp   *net.UDPConn
	udpIn *udpIntake
	conns sync.WaitGroup
	mu    sync.Mutex
	open  map[net.Conn]struct{}
	stop  context.CancelFunc
	ctx   context.Context
}

// listenSyslog opens the configured syslog sockets (none: nothing to do).
func (s *Server) listenSyslog() error {
	c := s.cfg.Syslog
	if c.TCP == "" && c.UDP == "" {
		return nil
	}
	l := &syslogListeners{open: map[net.Conn]struct{}{}}
	l.ctx, l.stop = context.WithCancel(context.Background())
	if c.TCP != "" {
		ln, err := net.Listen("tcp", c.TCP)
		if err != nil {
			return fmt.Errorf("cannot listen for syslog on %s: %w", c.TCP, err)
		}
		if c.TLS {
			if s.certs == nil {
				ln.Close()
				return errors.New("cannot use --syslog-tls without --tls-cert and --tls-key")
			}
			ln = tls.NewListener(ln, s.certs.config())
		}
		l.tcp = ln
	}
	if c.UDP != "" {
		a, err := net.ResolveUDPAddr("udp", c.UDP)
		var pc *net.UDPConn
		if err == nil {
			pc, err = net.ListenUDP("udp", a)
		}
		if err != nil {
			if l.tcp != nil {
				l.tcp.Close()
			}
			return fmt.Errorf("cannot listen for syslog on %s/udp: %w", c.UDP, err)
		}
		l.udp = pc
		l.udpIn = &udpIntake{
			next:   s.newSyslogDatagrams(),
			ready:  make(chan struct{}, 1),
			closed: make(chan struct{}),
		}
	}
	s.syslog = l
	return nil
}

// SyslogAddrs are the bound syslog addresses (nil when not listening).
func (s *Server) SyslogAddrs() (tcp, udp net.Addr) {
	if s.syslog == nil {
		return nil, nil
	}
	if s.syslog.tcp != nil {
		tcp = s.syslog.tcp.Addr()
	}
	if s.syslog.udp != nil {
		udp = s.syslog.udp.LocalAddr()
	}
	return tcp, udp
}

// serveSyslog accepts syslog connections and datagrams until closeSyslog.
func (s *Server) serveSyslog() {
	l := s.syslog
	if l == nil {
		return
	}
	if l.tcp != nil {
		go s.acceptSyslog(l)
	}
	if l.udp != nil {
		u := l.udpIn
		l.conns.Add(1)
		go func() {
			defer l.conns.Done()
			s.storeSyslogUDP(l, u)
		}()
		go s.readSyslogUDP(l, u, syslog.NewUDPReader(l.udp, s.cfg.Syslog.UDPBufferBytes))
	}
}

// closeSyslog stops taking messages and waits for the open connections
// to add what they read (bounded by ctx).
func (s *Server) closeSyslog(ctx context.Context) {
	l := s.syslog
	if l == nil {
		return
	}
	if l.tcp != nil {
		l.tcp.Close()
	}
	if l.udp != nil {
		l.udp.Close()
	}
	l.mu.Lock()
	for c := range l.open {
		// Unblocks a read: a connection ends after adding what it has.
		c.SetReadDeadline(time.Now())
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { l.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	l.stop()
}

func (s *Server) acceptSyslog(l *syslogListeners) {
	for {
		c, err := l.tcp.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(50 * time.Millisecond) // out of descriptors, say: not a spin
			continue
		}
		l.mu.Lock()
		full := len(l.open) >= s.cfg.Syslog.MaxConns || s.closing.Load()
		if !full {
			l.open[c] = struct{}{}
			l.conns.Add(1)
		}
		l.mu.Unlock()
		if full {
			s.met.syslogRefused.Inc()
			c.Close()
			continue
		}
		go func() {
			defer func() {
				if p := recover(); p != nil {
					s.recoveredSyslog(p)
				}
				l.mu.Lock()
				delete(l.open, c)
				l.mu.Unlock()
				c.Close()
				l.conns.Done()
			}()
			s.serveSyslogConn(l, c)
		}()
	}
}

// serveSyslogConn reads one TCP connection: each read's whole messages are
// added to the buffer before the next read.
func (s *Server) serveSyslogConn(l *syslogListeners, c net.Conn) {
	s.met.syslogConns.Inc()
	defer s.met.syslogConns.Dec()
	max := s.cfg.Syslog.MaxMessageBytes
	buf := make([]byte, 0, syslogReadBytes+max)
	fr := syslog.Framer{Max: max}
	in := s.newSyslogIntake()
	defer in.hold.Release() // its memory, after a panic too
	for {
		c.SetReadDeadline(time.Now().Add(s.cfg.Syslog.IdleTimeout))
		n, rerr := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		off := 0
		for {
			msg, used, err := fr.Next(buf[off:])
			if used == 0 {
				break
			}
			off += used
			if err != nil {
				s.met.syslogDropped.WithLabelValues("too_long").Inc()
			}
			if msg != nil {
				in.add(msg)
			}
		}
		buf = buf[:copy(buf, buf[off:])]
		if rerr != nil {
			if rest := fr.Rest(buf); len(rest) > 0 {
				in.add(rest)
			}
		}
		if !in.store(l.ctx, true) || rerr != nil {
			return
		}
	}
}

// udpIntake is the batch the UDP reader gathers into while the previous
// one is stored.
type udpIntake struct {
	mu     sync.Mutex
	next   *syslogIntake
	ready  chan struct{} // next has messages (buffered: one signal is enough)
	closed chan struct{} // the socket is closed: store what is left and end
}

// add parses one datagram into the gathering batch, or drops it when the
// batch is full.
func (u *udpIntake) add(s *Server, msg []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.next.events >= udpBatchEvents {
		s.met.syslogDropped.WithLabelValues("buffer_full").Inc()
		return
	}
	u.next.add(msg)
	select {
	case u.ready <- struct{}{}:
	default:
	}
}

// readSyslogUDP reads datagrams, one message each, until the socket closes.
func (s *Server) readSyslogUDP(l *syslogListeners, u *udpIntake, r *syslog.UDPReader) {
	defer func() {
		if p := recover(); p != nil {
			s.recoveredSyslog(p)
			go s.readSyslogUDP(l, u, r) // the socket stays served
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, lost, err := r.Read(buf)
		if lost > 0 {
			s.met.syslogDropped.WithLabelValues("socket_full").Add(float64(lost))
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				close(u.closed)
				return
			}
			continue
		}
		if n > s.cfg.Syslog.MaxMessageBytes {
			s.met.syslogDropped.WithLabelValues("too_long").Inc()
			continue
		}
		u.add(s, buf[:n])
	}
}

// storeSyslogUDP stores the batches readSyslogUDP gathers, one at a time,
// until the socket is closed and the last batch stored.
func (s *Server) storeSyslogUDP(l *syslogListeners, u *udpIntake) {
	spare := s.newSyslogDatagrams()
	for {
		closed := false
		select {
		case <-u.ready:
		case <-u.closed:
			closed = true
		}
		u.mu.Lock()
		in := u.next
		u.next = spare
		u.mu.Unlock()
		spare = s.storeDatagrams(l.ctx, in)
		if closed {
			return
		}
	}
}

// storeDatagrams stores one gathered batch, or drops and counts it, and
// returns the intake to gather into next: a new one after a panic, which
// may have left in half done (its memory given back all the same).
func (s *Server) storeDatagrams(ctx context.Context, in *syslogIntake) (next *syslogIntake) {
	defer func() {
		if p := recover(); p != nil {
			s.recoveredSyslog(p)
			in.hold.Release()
			next = s.newSyslogDatagrams()
		}
	}()
	in.store(ctx, false)
	return in
}

func (s *Server) recoveredSyslog(p any) {
	s.panics.report("syslog", []byte("syslog"), httperr.NewPanic(p))
}

// syslogIntake gathers one read's messages (TCP) or the datagrams that
// arrive while the previous batch is stored (UDP) into a batch.
type syslogIntake struct {
	s       *Server
	p       syslog.Parser
	hold    admission.Hold // the batch's share of --max-inflight-bytes
	g       *group.Grouper
	pending []byte // TCP: messages not yet grouped, when grouping was refused
	drop    bool   // UDP: a message the budget refuses is dropped, not kept
	events  int
}

func (s *Server) newSyslogIntake() *syslogIntake {
	return &syslogIntake{s: s}
}

func (s *Server) newSyslogDatagrams() *syslogIntake {
	return &syslogIntake{s: s, drop: true}
}

// add parses msg into the current batch.
func (in *syslogIntake) add(msg []byte) {
	s := in.s
	if in.g == nil {
		in.hold.Begin(s.inflight, context.Background(), 0)
		in.g = s.groups.Get(&in.hold)
	}
	ev, err := in.p.Parse(msg, time.Now().UnixNano())
	if err != nil {
		s.met.syslog.rejected.Inc()
		s.met.eventsRejected.Inc()
		return
	}
	switch err := in.g.AddEvent(ev); {
	case err == nil:
		in.events++
	case group.IsRejected(err):
		s.met.syslog.rejected.Inc()
		s.met.eventsRejected.Inc()
	case in.drop:
		s.met.syslogDropped.WithLabelValues("buffer_full").Inc()
	default: // the budget: keep the message for the next batch
		in.pending = appendFramed(in.pending, msg)
	}
}

// appendFramed keeps msg octet-counted, to be read again by a Framer.
func appendFramed(dst, msg []byte) []byte {
	dst = fmt.Appendf(dst, "%d ", len(msg))
	return append(dst, msg...)
}

// store adds the batch to the buffer. On TCP (wait) a full buffer or
// budget is retried with backoff until ctx ends; on UDP what cannot be
// added now is dropped and counted. It returns false once ctx has ended.
func (in *syslogIntake) store(ctx context.Context, wait bool) bool {
	s := in.s
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, syslogRetry) {
		if in.g != nil && in.events > 0 {
			batch := in.g.Batch()
			err := s.addBatch(batch)
			if err == nil || errors.Is(err, buffer.ErrAckTimeout) {
				s.met.eventsAccepted.Add(float64(in.events))
				s.met.syslog.accepted.Add(float64(in.events))
				s.publishTail(batch)
			} else if wait && ctx.Err() == nil {
				in.wait(ctx, delay)
				continue // the same batch again
			} else {
				s.met.syslogDropped.WithLabelValues("buffer_full").Add(float64(in.events))
			}
		}
		in.release()
		if len(in.pending) == 0 || !wait {
			return ctx.Err() == nil
		}
		in.wait(ctx, delay)
		pending := in.pending
		in.pending = nil
		for fr, b := (syslog.Framer{Max: 1 << 30}), pending; len(b) > 0; {
			msg, used, _ := fr.Next(b)
			b = b[used:]
			in.add(msg)
		}
		if ctx.Err() != nil && in.events == 0 {
			return false
		}
	}
}

func (in *syslogIntake) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// release gives the batch's memory back.
func (in *syslogIntake) release() {
	if in.g != nil {
		in.s.groups.Put(in.g)
		in.g = nil
	}
	in.hold.Release()
	in.events = 0
}
