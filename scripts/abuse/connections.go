package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ingest/internal/ingestexec"
)

// runConnections is the connection abuse: stalled uploads, slowloris and
// header floods at once while a normal client posts; it fails if the
// normal client got anything but 202.
func runConnections(r *runner) bool {
	o := r.o
	srv := r.serve()
	defer srv.Stop(time.Minute)
	addr := strings.TrimPrefix(srv.URL, "http://")

	a := &abuser{addr: addr, stop: make(chan struct{})}
	defer a.closeConns()
	a.stallUploads(o.stalled)
	a.slowloris(o.loris, o.lorisIPs)
	stopTicker := a.headerFloods(o.floods, o.floodRate)
	defer stopTicker()
	time.Sleep(time.Second) // let the abuse settle in

	pid := srv.Cmd.Process.Pid
	cpuBefore := cpuSeconds(pid)
	res := normalClient(addr, o.batch, o.duration)
	cpu := cpuSeconds(pid) - cpuBefore
	lorisLeft := a.lorisOpen.Load()
	close(a.stop)

	fmt.Printf("abuse: %d stalled 16 MiB uploads, %d slowloris connections from %d addresses (%d still open at the end), %d header-flood loops at %d/s, %s\n",
		o.stalled, o.loris, o.lorisIPs, lorisLeft, o.floods, o.floodRate, o.duration)
	a.floodAnswers.Range(func(k, v any) bool {
		fmt.Printf("  header floods answered %q: %d\n", k, v.(*atomic.Int64).Load())
		return true
	})
	res.print()
	fmt.Printf("server peak RSS: %.0f MiB, CPU %.1f s in %s\n", float64(peakRSS(srv))/(1<<20), cpu, o.duration)
	if len(res.statuses) != 1 || res.statuses["202"] == 0 {
		fmt.Println("FAIL: the normal client got something other than 202")
		return false
	}
	return true
}

// cpuSeconds is the CPU time process pid has used so far.
func cpuSeconds(pid int) float64 {
	s, err := ingestexec.CPUSeconds(pid)
	check(err)
	return s
}

// abuser holds the abusive connections; closing stop ends their loops.
type abuser struct {
	addr         string
	stop         chan struct{}
	mu           sync.Mutex
	conns        []net.Conn
	lorisOpen    atomic.Int64
	floodAnswers sync.Map // status line -> *atomic.Int64
}

func (a *abuser) keep(c net.Conn) {
	a.mu.Lock()
	a.conns = append(a.conns, c)
	a.mu.Unlock()
}

func (a *abuser) closeConns() {
	for _, c := range a.conns {
		c.Close()
	}
}

// stallUploads opens n uploads that declare 16 MiB, send 300 KB and stall.
func (a *abuser) stallUploads(n int) {
	line := []byte(`{"msg":"stalled upload filler line"}` + "\n")
	filler := bytes.Repeat(line, 300_000/len(line))
	for range n {
		c, err := net.Dial("tcp", a.addr)
		check(err)
		a.keep(c)
		fmt.Fprintf(c, "POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", 16<<20)
		c.Write(filler)
	}
}

// slowloris opens n connections from ips loopback addresses, each sending
// a request line, then a header byte every 5 s.
func (a *abuser) slowloris(n, ips int) {
	for i := range n {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+i%ips))}}
		c, err := d.Dial("tcp", a.addr)
		if err != nil {
			continue
		}
		a.keep(c)
		a.lorisOpen.Add(1)
		go func() {
			defer a.lorisOpen.Add(-1)
			io.WriteString(c, "POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
			for {
				select {
				case <-a.stop:
					return
				case <-time.After(5 * time.Second):
				}
				if _, err := io.WriteString(c, "X"); err != nil {
					return
				}
			}
		}()
	}
}

// headerFloods starts n loops flooding headers, again and again, at rate
// floods a second all together (0: as fast as they go). The returned
// function stops the rate ticker.
func (a *abuser) headerFloods(n, rate int) (stopTicker func()) {
	stopTicker = func() {}
	var tick <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Second / time.Duration(rate))
		stopTicker = t.Stop
		tick = t.C
	}
	for range n {
		go func() {
			for {
				if tick != nil {
					select {
					case <-a.stop:
						return
					case <-tick:
					}
				}
				select {
				case <-a.stop:
					return
				default:
				}
				count(&a.floodAnswers, flood(a.addr))
			}
		}()
	}
	return stopTicker
}

// clientResult is what the normal client saw.
type clientResult struct {
	statuses map[string]int
	lat      []time.Duration // sorted
}

// normalClient posts batches of n events from 127.0.0.2 for d.
func normalClient(addr string, n int, d time.Duration) clientResult {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	var body []byte
	for i := range n {
		body = fmt.Appendf(body, `{"service":"normal","level":"info","msg":"normal client event %d"}`+"\n", i)
	}
	r := clientResult{statuses: map[string]int{}}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		start := time.Now()
		resp, err := client.Post("http://"+addr+"/v1/logs", "application/x-ndjson", bytes.NewReader(body))
		if err != nil {
			r.statuses["error: "+err.Error()]++
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.lat = append(r.lat, time.Since(start))
		r.statuses[strconv.Itoa(resp.StatusCode)]++
	}
	slices.Sort(r.lat)
	return r
}

func (r clientResult) print() {
	pct := func(p float64) float64 {
		if len(r.lat) == 0 {
			return 0
		}
		return float64(r.lat[min(len(r.lat)-1, int(float64(len(r.lat))*p))].Microseconds()) / 1000
	}
	fmt.Printf("normal client: %d requests, statuses %v\n", len(r.lat), r.statuses)
	fmt.Printf("normal client latency ms: p50 %.2f  p99 %.2f  max %.2f\n", pct(0.50), pct(0.99), pct(1))
}

// floodRequest is a request line and 1 MiB of headers.
var floodRequest = append([]byte("POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\n"),
	bytes.Repeat([]byte("X-Flood: "+strings.Repeat("a", 100)+"\r\n"), (1<<20)/111)...)

// flood sends headers past any sane limit and returns the server's status
// line, or "closed".
func flood(addr string) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "dial error"
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	go c.Write(floodRequest) // one write: the flood's cost should be the server's, not this process's
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "closed"
	}
	return strings.TrimSpace(status)
}

func count(m *sync.Map, k string) {
	v, _ := m.LoadOrStore(k, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}
