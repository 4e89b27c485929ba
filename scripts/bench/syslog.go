package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Syslog has no answer per message: the rows measure what the server says
// it accepted (a counter on its /metrics) from the first write until that
// counter reaches every message sent, or stops moving (UDP: what was lost
// on the way is the row's errors).

// syslogSeverity is the RFC 5424 severity of each level the low-cost
// events carry.
var syslogSeverity = map[string]int{"debug": 7, "info": 6, "warn": 4, "error": 3}

// syslogMessages is evs as RFC 5424 messages: facility user, the level as
// the severity, the host as the hostname, the service as the app name, no
// structured data.
func syslogMessages(evs []lowEvent) [][]byte {
	out := make([][]byte, len(evs))
	for i, e := range evs {
		out[i] = fmt.Appendf(nil, "<%d>1 %s %s %s - - - %s", 1<<3|syslogSeverity[e.level],
			e.ts.Format("2006-01-02T15:04:05.000000Z"), e.host, e.service, e.msg)
	}
	return out
}

// syslogBody is evs as octet-counted messages (RFC 6587), for TCP.
func syslogBody(evs []lowEvent) []byte {
	var b []byte
	for _, msg := range syslogMessages(evs) {
		b = strconv.AppendInt(b, int64(len(msg)), 10)
		b = append(b, ' ')
		b = append(b, msg...)
	}
	return b
}

// syslogLoad is what the syslog client sends, and where the server counts
// what it accepted.
type syslogLoad struct {
	addr     string   // the server's syslog listener
	udp      [][]byte // over UDP, these messages one per datagram; else body over TCP
	metrics  string   // the base URL of its /metrics
	accepted string   // the counter of messages accepted, labels as /metrics prints them
	body     []byte
	events   int // messages per body
	conns    int
	duration time.Duration
}

// syslogIdle is how long the accepted counter may stand still below the
// messages sent before the row gives up waiting and counts the rest as
// errors.
const syslogIdle = 5 * time.Second

// measureSyslog sends l to process pid and waits until it accepted every
// message: its rate from the first write to the last acceptance seen, its
// CPU per million messages, the MB/s written to dev meanwhile and its
// peak RSS.
func measureSyslog(l syslogLoad, pid int, dev blockDevice) result {
	before := metric(l.metrics, l.accepted)
	cpu0, disk0 := cpuSeconds(pid), dev.written()
	start := time.Now()
	sent, err := sendSyslog(l)
	check(err)
	want := before + float64(sent)
	got, last := before, time.Now()
	for got < want && time.Since(last) < syslogIdle {
		time.Sleep(10 * time.Millisecond)
		if n := metric(l.metrics, l.accepted); n != got {
			got, last = n, time.Now()
		}
	}
	secs := last.Sub(start).Seconds()
	cpu, disk := cpuSeconds(pid)-cpu0, dev.written()-disk0
	accepted := min(got, want) - before
	out := result{
		answered: accepted / secs,
		mbps:     accepted * float64(len(l.body)) / float64(l.events) / secs / 1e6,
		diskMBps: disk / secs / 1e6,
		rssMiB:   peakRSSMiB(pid),
		errors:   int64(want - before - accepted),
	}
	if accepted > 0 {
		out.cpuPerM = cpu / (accepted / 1e6)
	}
	if out.errors > 0 {
		fmt.Fprintf(stderr, "bench:     %d of %d syslog messages sent were not accepted after %s without progress\n", out.errors, sent, syslogIdle)
	}
	return out
}

// sendSyslog writes l's body over and over on each of its connections
// until its duration has passed, then closes them; the messages written.
func sendSyslog(l syslogLoad) (int64, error) {
	var sent atomic.Int64
	var mu sync.Mutex
	var first error
	deadline := time.Now().Add(l.duration)
	var wg sync.WaitGroup
	for range l.conns {
		wg.Go(func() {
			wrote := func() { sent.Add(int64(l.events)) }
			var err error
			if l.udp != nil {
				err = sendDatagramsUntil(l.addr, l.udp, deadline, wrote)
			} else {
				err = writeUntil(l.addr, l.body, deadline, wrote)
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return sent.Load(), first
}

// writeUntil writes body on one connection to addr until deadline,
// calling wrote after each whole body.
func writeUntil(addr string, body []byte, deadline time.Time, wrote func()) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return fmt.Errorf("cannot connect to syslog on %s: %w", addr, err)
	}
	defer c.Close()
	for time.Now().Before(deadline) {
		// A server that stops reading for a minute has failed the row.
		_ = c.SetWriteDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write(body); err != nil {
			return fmt.Errorf("cannot write syslog to %s: %w", addr, err)
		}
		wrote()
	}
	return nil
}

// sendDatagramsUntil sends msgs, one per datagram, over and over to addr
// until deadline, calling wrote after each pass. A datagram the kernel
// could not queue on the way out is sent again: what the row loses is
// what the server did not read.
func sendDatagramsUntil(addr string, msgs [][]byte, deadline time.Time, wrote func()) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return fmt.Errorf("cannot send syslog to %s: %w", addr, err)
	}
	defer c.Close()
	for time.Now().Before(deadline) {
		for _, m := range msgs {
			for {
				_, err := c.Write(m)
				if err == nil {
					break
				}
				// Refused (ICMP after a lost datagram) or out of buffers:
				// again, until the deadline; a server gone for good fails
				// the row instead of holding it.
				if !errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.ECONNREFUSED) || !time.Now().Before(deadline) {
					return fmt.Errorf("cannot send syslog to %s: %w", addr, err)
				}
			}
		}
		wrote()
	}
	return nil
}

// udpSenders is how many clients send datagrams at once: two keep the
// server's socket full on this machine's two cores.
const udpSenders = 2

// syslogRows runs the syslog loads, over TCP and UDP, against ingest and,
// when given, VictoriaLogs.
func (b *bench) syslogRows(evs []lowEvent) {
	body := syslogBody(evs)
	l := syslogLoad{body: body, events: len(evs), conns: b.o.lowConns, duration: b.o.duration}
	per := fmt.Sprintf("%d conns x %d octet-counted RFC 5424 messages, %d B/message, written for %s", b.o.lowConns, len(evs), len(body)/len(evs), b.o.duration)
	b.add("lowcost: ingest syslog tcp", per+"; events/s from the first write until ingest_protocol_events_total{protocol=\"syslog\",result=\"accepted\"} counts every message (in the fsync'd WAL)", b.syslogIngest(l, "--syslog-tcp"))
	if b.o.victoriaLogs != "" {
		b.add("lowcost: victoria-logs syslog tcp", "-syslog.listenAddr.tcp, the same messages, until vl_rows_ingested_total{type=\"syslog_tcp\"} counts every one (in its memory buffers, no fsync)", b.syslogVictoria(l, "tcp"))
	}
	u := syslogLoad{udp: syslogMessages(evs), body: body, events: len(evs), conns: udpSenders, duration: b.o.duration}
	per = fmt.Sprintf("%d senders x the same messages, one per datagram, sent flat out for %s", udpSenders, b.o.duration)
	b.add("lowcost: ingest syslog udp", per+"; events/s accepted (in the fsync'd WAL) until the counter stops; errors: datagrams lost (ingest counts them in ingest_syslog_messages_dropped_total)", b.syslogIngest(u, "--syslog-udp"))
	if b.o.victoriaLogs != "" {
		b.add("lowcost: victoria-logs syslog udp", "-syslog.listenAddr.udp, the same datagrams, until vl_rows_ingested_total{type=\"syslog_udp\"} stops", b.syslogVictoria(u, "udp"))
	}
}

// syslogIngest measures l against a fresh ingest listening with flag
// (--syslog-tcp or --syslog-udp).
func (b *bench) syslogIngest(l syslogLoad, flag string) result {
	l.addr = freeAddr()
	srv, cleanup := b.serveFresh("--ack", "wal", flag, l.addr)
	defer cleanup()
	l.metrics = srv.URL
	l.accepted = `ingest_protocol_events_total{protocol="syslog",result="accepted"}`
	out := measureSyslog(l, srv.Cmd.Process.Pid, b.disk)
	if rejected := metric(srv.URL, `ingest_protocol_events_total{protocol="syslog",result="rejected"}`); rejected > 0 {
		check(fmt.Errorf("ingest rejected %.0f syslog messages of the bench", rejected))
	}
	_, err := srv.Stop(time.Minute)
	check(err)
	return out
}

// syslogVictoria measures l against a fresh VictoriaLogs listening on
// network (tcp or udp).
func (b *bench) syslogVictoria(l syslogLoad, network string) result {
	l.addr = freeAddr()
	p, addr, stop := b.startVictoria("-syslog.listenAddr."+network, l.addr)
	defer stop()
	l.metrics = "http://" + addr
	l.accepted = `vl_rows_ingested_total{type="syslog_` + network + `"}`
	return measureSyslog(l, p.pid(), b.disk)
}
