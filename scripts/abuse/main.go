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

func main() {
	duration := pflag.Duration("duration", 20*time.Second, "how long the normal client posts under abuse")
	stalled := pflag.Int("stalled", 8, "uploads that declare 16 MiB, send 300 KB and stall")
	loris := pflag.Int("slowloris", 2000, "slowloris connections")
	lorisIPs := pflag.Int("slowloris-ips", 8, "loopback source addresses the slowloris connections come from (127.0.1.1 ...)")
	floods := pflag.Int("floods", 8, "connections flooding headers, each reconnecting when refused")
	floodRate := pflag.Int("flood-rate", 500, "header floods per second, all flooding connections together (0: as fast as they go)")
	batch := pflag.Int("batch", 10, "events per normal request")
	pflag.Parse()

	dir, err := os.MkdirTemp("", "ingest-abuse-")
	check(err)
	defer os.RemoveAll(dir)
	bin, err := ingestexec.Build(dir, false)
	check(err)
	port := freePort()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	srv := ingestexec.Command(bin, "--listen", addr, "--data-dir", filepath.Join(dir, "data"), "--log-level", "error")
	srv.Stderr = os.Stderr
	check(srv.Start())
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	waitHealthy("http://" + addr)

	stop := make(chan struct{})
	var conns []net.Conn
	var mu sync.Mutex
	keep := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	// Stalled uploads.
	line := []byte(`{"msg":"stalled upload filler line"}` + "\n")
	filler := bytes.Repeat(line, 300_000/len(line))
	for range *stalled {
		c, err := net.Dial("tcp", addr)
		check(err)
		keep(c)
		fmt.Fprintf(c, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", 16<<20)
		c.Write(filler)
	}
	// Slowloris: a request line, then a header byte every 5 s.
	var lorisOpen atomic.Int64
	for i := range *loris {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+i%*lorisIPs))}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			continue
		}
		keep(c)
		lorisOpen.Add(1)
		go func() {
			defer lorisOpen.Add(-1)
			io.WriteString(c, "POST /v1/logs HTTP/1.1\r\nHost: ingest\r\n")
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Second):
				}
				if _, err := io.WriteString(c, "X"); err != nil {
					return
				}
			}
		}()
	}
	// Header floods, again and again.
	var floodAnswers sync.Map // status line -> *atomic.Int64
	var floodTick <-chan time.Time
	if *floodRate > 0 {
		t := time.NewTicker(time.Second / time.Duration(*floodRate))
		defer t.Stop()
		floodTick = t.C
	}
	for range *floods {
		go func() {
			for {
				if floodTick != nil {
					select {
					case <-stop:
						return
					case <-floodTick:
					}
				}
				select {
				case <-stop:
					return
				default:
				}
				count(&floodAnswers, flood(addr))
			}
		}()
	}
	time.Sleep(time.Second) // let the abuse settle in
	cpuBefore := cpuSeconds(srv.Process.Pid)

	// The normal client, from 127.0.0.2.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	var body []byte
	for i := range *batch {
		body = fmt.Appendf(body, `{"service":"normal","level":"info","msg":"normal client event %d"}`+"\n", i)
	}
	statuses := map[string]int{}
	var lat []time.Duration
	end := time.Now().Add(*duration)
	for time.Now().Before(end) {
		start := time.Now()
		resp, err := client.Post("http://"+addr+"/v1/logs", "application/x-ndjson", bytes.NewReader(body))
		if err != nil {
			statuses["error: "+err.Error()]++
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		statuses[strconv.Itoa(resp.StatusCode)]++
	}
	cpu := cpuSeconds(srv.Process.Pid) - cpuBefore
	lorisLeft := lorisOpen.Load()
	close(stop)
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds()) / 1000
	}
	fmt.Printf("abuse: %d stalled 16 MiB uploads, %d slowloris connections from %d addresses (%d still open at the end), %d header-flood loops at %d/s, %s\n",
		*stalled, *loris, *lorisIPs, lorisLeft, *floods, *floodRate, *duration)
	floodAnswers.Range(func(k, v any) bool {
		fmt.Printf("  header floods answered %q: %d\n", k, v.(*atomic.Int64).Load())
		return true
	})
	fmt.Printf("normal client: %d requests, statuses %v\n", len(lat), statuses)
	fmt.Printf("normal client latency ms: p50 %.2f  p99 %.2f  max %.2f\n", pct(0.50), pct(0.99), pct(1))
	fmt.Printf("server peak RSS: %.0f MiB, CPU %.1f s in %s\n", float64(peakRSS(srv.Process.Pid))/(1<<20), cpu, *duration)
	if len(statuses) != 1 || statuses["202"] == 0 {
		fmt.Println("FAIL: the normal client got something other than 202")
		os.Exit(1)
	}
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

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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

// cpuSeconds reads utime+stime of a process from /proc (clock ticks of 1/100 s).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(1)
	}
}
