package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"ingest/internal/ingestexec"
)

// runTailReaders opens --tail-readers tails that read their status line
// and nothing more, half of service tailx and half of every service, with
// receive buffers of 4 KiB, while two writers post batches of tailx for
// --duration. It passes when the server's peak RSS stayed under --max-rss,
// the writers' batches were still accepted and /healthz answers at the
// end.
func runTailReaders(r *runner) {
	p := r.startOrFail("for the tail readers")
	if p == nil {
		return
	}
	defer p.Kill()
	peak := watchPeak(p)
	addr := strings.TrimPrefix(p.URL, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// The status lines are read while the writers post: a build may send
	// a tail's headers only with its first event.
	tails := map[string]int{}
	var mu sync.Mutex
	var reading sync.WaitGroup
	deadline := time.Now().Add(r.o.duration + 10*time.Second)
	for i := range r.o.tailReaders {
		service := "tailx"
		if i%2 == 1 {
			service = "*"
		}
		c, err := openStalledTail(addr, service)
		if err != nil {
			mu.Lock()
			tails[shortError(err)]++
			mu.Unlock()
			continue
		}
		conns = append(conns, c)
		reading.Add(1)
		go func() {
			defer reading.Done()
			status := statusLine(c, deadline)
			mu.Lock()
			tails[status]++
			mu.Unlock()
		}()
	}
	cpu0, _ := ingestexec.CPUSeconds(p.Cmd.Process.Pid)
	writes := postFor(p.URL, 2, r.o.duration)
	cpu1, _ := ingestexec.CPUSeconds(p.Cmd.Process.Pid)
	reading.Wait()
	up, health := healthy(p)
	top := peak()
	sent := fmt.Sprintf("%d tails (service tailx and *) that never read, 2 writers posting tailx for %s", r.o.tailReaders, r.o.duration)
	r.judge(up && top > 0 && top <= r.o.maxRSS && writes["202"] > 0, sent,
		"tails answered %v; writes %v; %s; peak RSS %.0f MiB (at most %.0f MiB); CPU %.1f s",
		tails, writes, health, float64(top)/(1<<20), float64(r.o.maxRSS)/(1<<20), cpu1-cpu0)
}

// openStalledTail opens GET /v1/tail?service=service with a 4 KiB receive
// buffer.
func openStalledTail(addr, service string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := fmt.Fprintf(c, "GET /v1/tail?service=%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", service); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// statusLine reads the status of c's answer, and no more than a few bytes
// past it, by deadline; it returns the status, or the error.
func statusLine(c net.Conn, deadline time.Time) string {
	c.SetReadDeadline(deadline)
	line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil {
		return shortError(err)
	}
	if f := strings.Fields(line); len(f) >= 2 {
		return f[1]
	}
	return strings.TrimSpace(line)
}

// postFor has n writers post batches of 100 events of service tailx, 300
// bytes each, for d, and returns the statuses they got.
func postFor(base string, n int, d time.Duration) map[string]int {
	var body []byte
	filler := strings.Repeat("x", 250)
	for i := range 100 {
		body = fmt.Appendf(body, `{"service":"tailx","level":"info","msg":"tail event %d %s"}`+"\n", i, filler)
	}
	statuses := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second}
			for time.Now().Before(end) {
				status := send(client, base, post("application/x-ndjson", "", body))
				mu.Lock()
				statuses[status]++
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return statuses
}

// watchPeak reads p's VmHWM every 100 ms until p exits or the returned
// function is called, which returns the highest reading: a server that
// dies leaves its last one.
func watchPeak(p *ingestexec.Process) (stop func() int64) {
	var mu sync.Mutex
	var peak int64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			if v, ok := p.Status("VmHWM"); ok {
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
			select {
			case <-p.Exited():
				return
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
