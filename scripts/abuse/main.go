// Command abuse measures what connection abuse costs a normal client. It
// builds ingest, starts it with its default limits on 127.0.0.1 in a
// temporary directory, then at once: uploads that declare 16 MiB, send
// 300 KB and stall; slowloris connections that send one header byte every
// few seconds and never finish (spread over several loopback source
// addresses, so --max-conns-per-ip does not simply refuse them); and
// connections that flood headers past --max-header-bytes, over and over.
// Meanwhile a normal client (from its own loopback address) posts small
// batches one after another, and the command prints its status counts and
// latency percentiles, how many abusive connections the server held, and
// the server's peak RSS. It exits 1 if the normal client got anything but
// 202.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/ingestexec"
)

// options are the command's flags.
type options struct {
	duration                                    time.Duration
	stalled, loris, lorisIPs, floods, floodRate int
	batch                                       int
}

func parseOptions() options {
	var o options
	pflag.DurationVar(&o.duration, "duration", 20*time.Second, "how long the normal client posts under abuse")
	pflag.IntVar(&o.stalled, "stalled", 8, "uploads that declare 16 MiB, send 300 KB and stall")
	pflag.IntVar(&o.loris, "slowloris", 2000, "slowloris connections")
	pflag.IntVar(&o.lorisIPs, "slowloris-ips", 8, "loopback source addresses the slowloris connections come from (127.0.1.1 ...)")
	pflag.IntVar(&o.floods, "floods", 8, "connections flooding headers, each reconnecting when refused")
	pflag.IntVar(&o.floodRate, "flood-rate", 500, "header floods per second, all flooding connections together (0: as fast as they go)")
	pflag.IntVar(&o.batch, "batch", 10, "events per normal request")
	pflag.Parse()
	return o
}

func main() {
	o := parseOptions()
	dir, err := os.MkdirTemp("", "ingest-abuse-")
	check(err)
	defer os.RemoveAll(dir)
	srv, addr := startServer(dir)
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()

	a := &abuser{addr: addr, stop: make(chan struct{})}
	defer a.closeConns()
	a.stallUploads(o.stalled)
	a.slowloris(o.loris, o.lorisIPs)
	stopTicker := a.headerFloods(o.floods, o.floodRate)
	defer stopTicker()
	time.Sleep(time.Second) // let the abuse settle in

	cpuBefore := cpuSeconds(srv.Process.Pid)
	res := normalClient(addr, o.batch, o.duration)
	cpu := cpuSeconds(srv.Process.Pid) - cpuBefore
	lorisLeft := a.lorisOpen.Load()
	close(a.stop)

	fmt.Printf("abuse: %d stalled 16 MiB uploads, %d slowloris connections from %d addresses (%d still open at the end), %d header-flood loops at %d/s, %s\n",
		o.stalled, o.loris, o.lorisIPs, lorisLeft, o.floods, o.floodRate, o.duration)
	a.floodAnswers.Range(func(k, v any) bool {
		fmt.Printf("  header floods answered %q: %d\n", k, v.(*atomic.Int64).Load())
		return true
	})
	res.print()
	fmt.Printf("server peak RSS: %.0f MiB, CPU %.1f s in %s\n", float64(peakRSS(srv.Process.Pid))/(1<<20), cpu, o.duration)
	if len(res.statuses) != 1 || res.statuses["202"] == 0 {
		fmt.Println("FAIL: the normal client got something other than 202")
		os.Exit(1)
	}
}

// startServer builds the binary into dir and starts it on a free loopback
// port with its data under dir; it returns once the server is healthy.
func startServer(dir string) (*exec.Cmd, string) {
	bin, err := ingestexec.Build(dir, false)
	check(err)
	port, err := ingestexec.FreePort()
	check(err)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	srv := ingestexec.Command(bin, "--listen", addr, "--data-dir", filepath.Join(dir, "data"), "--log-level", "error")
	srv.Stderr = os.Stderr
	check(srv.Start())
	waitHealthy("http://" + addr)
	return srv, addr
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
		fmt.Fprintf(c, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", 16<<20)
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
			io.WriteString(c, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\n")
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
var floodRequest = append([]byte("POST /v1/logs HTTP/1.1\r\nHost: ingest\r\n"),
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

func waitHealthy(url string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	check(fmt.Errorf("server at %s not healthy after 30s", url))
}

// peakRSS reads VmHWM (the resident set's high-water mark) from /proc.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuSeconds is the CPU time process pid has used so far.
func cpuSeconds(pid int) float64 {
	s, err := ingestexec.CPUSeconds(pid)
	check(err)
	return s
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(1)
	}
}
