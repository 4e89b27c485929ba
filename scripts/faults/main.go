// Command faults is the fault suite: it builds ingest, runs it on loopback
// against the embedded backend and a private Azurite, breaks it on purpose
// and prints what a user would see. Every run is bounded in time and stops
// by itself; the load is the load generator (package loadtest) in this
// process, with --verify reading everything back at the end.
//
//	kill9   kill -9 at random moments (--cycles, default 10) under load of logs
//	        and login attempts, then restart on the same data directory; for
//	        embedded and Azurite, --ack wal and --ack flush. Figures:
//	        acknowledged, lost, duplicated.
//	outage  Azurite stopped (SIGSTOP: blob and table service) for --outage
//	        (30 s) under steady load: lost, duplicated, longest answer, peak
//	        RSS against the memory budget, time to drain the backlog.
//	fleet   4 instances on one Azurite behind the load generator's
//	        round-robin, logs and login attempts (3,000 events/s, and one
//	        user attacked at 1,000 attempts/s) for 20 s: one stopped for
//	        good, one killed and restarted, one killed and its directory
//	        drained with ingest drain, then Azurite frozen for 10 s. Read back through the survivor: lost, duplicated,
//	        blobs holding two instances' events, the hottest
//	        partition-second, the stats table against the blobs
//	        (internal/fleetrun).
//	soak    --minutes (30) at half the measured capacity, printing RSS
//	        (anonymous, and file-backed apart), goroutines, open files, WAL
//	        bytes and the server's p99 every 10 s, and whether they stayed
//	        flat.
//
// The exit status is 1 when any run lost or duplicated an event, or a
// request went unanswered.
package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"ingest/blobsink"
	"ingest/internal/azurite"
	"ingest/internal/fleetrun"
	"ingest/internal/ingestexec"
	"ingest/loadtest"
	"ingest/query"
	"ingest/storage"
)

type options struct {
	quick   bool
	only    []string
	cycles  int
	outage  time.Duration
	minutes float64
	rate    float64
	keep    bool
	configs []string
}

// serverLogLevel is the servers' --log-level (their logs are kept with --keep).
var serverLogLevel = "warn"

func main() {
	var o options
	pflag.BoolVar(&o.quick, "quick", false, "the short variant: 3 kill cycles, a 10 s outage, a 2-minute soak")
	only := pflag.String("only", "kill9,outage,fleet,soak", "which runs, comma separated: kill9, outage, fleet, soak")
	pflag.IntVar(&o.cycles, "cycles", 10, "kill -9 cycles per configuration")
	pflag.DurationVar(&o.outage, "outage", 30*time.Second, "how long Azurite is stopped")
	pflag.Float64Var(&o.minutes, "minutes", 30, "soak length in minutes")
	pflag.Float64Var(&o.rate, "rate", 5000, "events/s of the kill -9 and outage load (open loop)")
	pflag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (data, logs) for inspection")
	configs := pflag.String("kill9-configs", "embedded-wal,embedded-flush,azurite-wal,azurite-flush", "kill -9 configurations: backend-ack")
	pflag.StringVar(&serverLogLevel, "server-log-level", serverLogLevel, "--log-level of the servers under test")
	pflag.Parse()
	if o.quick {
		if !pflag.CommandLine.Changed("cycles") {
			o.cycles = 3
		}
		if !pflag.CommandLine.Changed("outage") {
			o.outage = 10 * time.Second
		}
		if !pflag.CommandLine.Changed("minutes") {
			o.minutes = 2
		}
	}
	o.only = strings.Split(*only, ",")
	o.configs = strings.Split(*configs, ",")
	for _, r := range o.only {
		if r != "kill9" && r != "outage" && r != "fleet" && r != "soak" {
			fail(fmt.Errorf("cannot run %q: --only takes kill9, outage, fleet and soak", r))
		}
	}

	dir, err := os.MkdirTemp("", "ingest-faults-")
	check(err)
	if o.keep {
		fmt.Println("keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	fmt.Printf("ingest fault suite: %d CPUs, build %s\n", ingestexec.MachineCPUs(), gitDescribe())
	bin, err := ingestexec.Build(dir, false)
	check(err)

	ok := true
	if slices.Contains(o.only, "kill9") {
		ok = runKill9(bin, dir, o) && ok
	}
	if slices.Contains(o.only, "outage") {
		ok = runOutage(bin, dir, o) && ok
	}
	if slices.Contains(o.only, "fleet") {
		ok = runFleet(bin, dir, o) && ok
	}
	if slices.Contains(o.only, "soak") {
		ok = runSoak(bin, dir, o) && ok
	}
	if !ok {
		fmt.Println("\nFAILED: see the runs above")
		if !o.keep {
			os.RemoveAll(dir)
		}
		os.Exit(1)
	}
	fmt.Println("\nall runs: 0 lost, 0 duplicated, every request answered")
}

// server is one configuration of ingest that can be started again on the
// same port and data directory after a kill.
type server struct {
	bin, data string
	port      int
	args      []string
	log       *os.File
	p         *ingestexec.Process
}

func newServer(bin, dir, name string, args ...string) *server {
	data := filepath.Join(dir, name)
	check(os.MkdirAll(data, 0o755))
	port, err := ingestexec.FreePort()
	check(err)
	log, err := os.Create(filepath.Join(dir, name+".log"))
	check(err)
	return &server{bin: bin, data: data, port: port, log: log,
		args: append([]string{"--data-dir", data, "--log-level", serverLogLevel}, args...)}
}

func (s *server) start() {
	p, err := ingestexec.Serve(s.bin, s.port, s.log, s.args...)
	check(err)
	s.p = p
}

func (s *server) url() string { return "http://127.0.0.1:" + strconv.Itoa(s.port) }

// stop sends SIGTERM and reports an unclean exit.
func (s *server) stop() bool {
	code, err := s.p.Stop(2 * time.Minute)
	if err != nil || code != 0 {
		fmt.Printf("  ingest did not stop cleanly: exit %d, %v (log: %s)\n", code, err, s.log.Name())
		return false
	}
	return true
}

// verdict prints the verification line of a run and says whether it holds.
func verdict(rep *loadtest.Report) (ok bool, v *loadtest.VerifyReport) {
	v = rep.Verify
	if v == nil {
		fmt.Printf("  NOT VERIFIED: %s\n", rep.VerifyErr)
		return false, nil
	}
	ok = v.Lost == 0 && v.Duplicated == 0 && v.Foreign == 0 && len(v.Failed) == 0 && v.Accepted > 0
	hung := rep.Status["transport: timeout"]
	if hung > 0 {
		ok = false
		fmt.Printf("  %d requests got no answer within 60 s\n", hung)
	}
	if !ok {
		fmt.Printf("  VERIFY FAILED: lost %d (logs %d, logins %d; e.g. %v), duplicated %d (e.g. %v), corrupted %d, failed queries %v\n",
			v.Lost, v.Logs.Lost, v.Logins.Lost, v.LostSample, v.Duplicated, v.DupSample, v.Foreign, v.Failed)
	}
	return ok, v
}

func statusSummary(st map[string]int64) string {
	var keys []string
	merged := map[string]int64{}
	for k, n := range st {
		if strings.Contains(k, "broken p") {
			k = "transport: broken pipe"
		}
		merged[k] += n
	}
	st = merged
	for k := range st {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, st[k]))
	}
	return strings.Join(parts, " ")
}

// runKill9 kills ingest -9 at random moments under load, restarting it
// each time, for each backend and ack mode.
func runKill9(bin, dir string, o options) bool {
	fmt.Printf("\n== kill -9: %d cycles per configuration, load %.0f events/s (20%% login attempts), restart at once ==\n", o.cycles, o.rate)
	az, err := azurite.Start()
	check(err)
	defer az.Stop()
	fmt.Printf("%-9s %-5s %7s %12s %10s %6s %10s %16s %12s\n", "backend", "ack", "kills", "acknowledged", "found", "lost", "duplicated", "unacked-found", "max answer")
	ok := true
	for _, backend := range []string{"embedded", "azurite"} {
		for _, ack := range []string{"wal", "flush"} {
			if !slices.Contains(o.configs, backend+"-"+ack) {
				continue
			}
			name := fmt.Sprintf("kill9-%s-%s", backend, ack)
			args := []string{"--ack", ack, "--flush-interval", "200ms", "--flush-bytes", "256KiB", "--wal-segment-bytes", "4MiB", "--ack-timeout", "10s"}
			if backend == "azurite" {
				args = append(args, "--storage", az.ConnString(), "--container", strings.ReplaceAll(name, "-", ""), "--storage-try-timeout", "5s")
			}
			s := newServer(bin, dir, name, args...)
			s.start()
			// Kill times, uniformly spread over the run, at least 1.5 s
			// apart so that each restart serves a while before the next.
			const gap = 1500 * time.Millisecond
			d := time.Duration(o.cycles+2) * gap * 2
			var at []time.Duration
			for i := range o.cycles {
				at = append(at, time.Duration(i+1)*2*gap+time.Duration(rand.Int64N(int64(gap))))
			}
			done := make(chan *loadtest.Report, 1)
			go func() {
				rep, err := loadtest.Run(context.Background(), fleetrun.LoadConfig(s.url(), o.rate, d), io.Discard)
				check(err)
				done <- rep
			}()
			begin := time.Now()
			for _, t := range at {
				time.Sleep(time.Until(begin.Add(t)))
				s.p.Kill()
				s.start()
			}
			rep := <-done
			good, v := verdict(rep)
			if v != nil && v.Lost > 0 {
				explainLost(s, az, backend, v.LostSample)
			}
			if !s.stop() {
				good = false
			}
			ok = ok && good
			if v != nil {
				fmt.Printf("%-9s %-5s %7d %12d %10d %6d %10d %16d %10.0fms\n", backend, ack, len(at), v.Accepted, v.Found, v.Lost, v.Duplicated, v.Unacked, rep.Latency.Max)
			}
			fmt.Printf("          answers: %s\n", statusSummary(rep.Status))
		}
	}
	return ok
}

// runOutage stops Azurite under steady load and measures the answers, the
// memory and the time to drain after it continues.
func runOutage(bin, dir string, o options) bool {
	fmt.Printf("\n== Azurite stopped %v (SIGSTOP, blob and table service) under %.0f events/s (20%% login attempts), --ack wal ==\n", o.outage, o.rate)
	az, err := azurite.Start()
	check(err)
	defer az.Stop()
	const bufferBytes, inflightBytes = 256 << 20, 64 << 20
	s := newServer(bin, dir, "outage", "--storage", az.ConnString(), "--container", "outage", "--flush-interval", "1s")
	s.start()
	pre, post := 10*time.Second, 20*time.Second
	if o.quick {
		pre, post = 5*time.Second, 10*time.Second
	}
	done := make(chan *loadtest.Report, 1)
	go func() {
		rep, err := loadtest.Run(context.Background(), fleetrun.LoadConfig(s.url(), o.rate, pre+o.outage+post), io.Discard)
		check(err)
		done <- rep
	}()
	// The buffer's level in steady state, then during and after the outage.
	var steady []float64
	for end := time.Now().Add(pre); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if v, err := scrape(s.url(), "ingest_buffer_bytes"); err == nil {
			steady = append(steady, v)
		}
	}
	sort.Float64s(steady)
	level := steady[len(steady)*9/10] // the 90th percentile of the steady state
	check(az.Pause())
	pausedAt := time.Now()
	var peakBuffer float64
	for time.Since(pausedAt) < o.outage {
		if v, err := scrape(s.url(), "ingest_buffer_bytes"); err == nil {
			peakBuffer = max(peakBuffer, v)
		}
		time.Sleep(200 * time.Millisecond)
	}
	check(az.Resume())
	resumed := time.Now()
	drain := time.Duration(-1)
	for time.Since(resumed) < post+2*time.Minute {
		v, err := scrape(s.url(), "ingest_buffer_bytes")
		if err == nil {
			peakBuffer = max(peakBuffer, v)
			if v <= max(level, 1<<20) {
				drain = time.Since(resumed)
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	rep := <-done
	peakRSS, _ := s.p.Status("VmHWM")
	good, v := verdict(rep)
	if !s.stop() {
		good = false
	}
	if drain < 0 {
		good = false
		fmt.Println("  the backlog did not drain within 2 minutes of recovery")
	}
	budget := int64(bufferBytes + inflightBytes + 96<<20)
	if v != nil {
		fmt.Printf("  acknowledged %d (logins %d), found %d, lost %d, duplicated %d, unacked-but-found %d\n", v.Accepted, v.Logins.Accepted, v.Found, v.Lost, v.Duplicated, v.Unacked)
	}
	fmt.Printf("  answers: %s; retried after 429: %d, after 503: %d\n", statusSummary(rep.Status), rep.Retry429, rep.Retry503)
	fmt.Printf("  longest answer %.0f ms (p99 %.0f ms, from the intended send time, Retry-After waits included)\n", rep.Latency.Max, rep.Latency.P99)
	fmt.Printf("  buffer: steady %.1f MiB, peak %.1f MiB; drained back to steady %.1f s after Azurite continued\n", level/(1<<20), peakBuffer/(1<<20), drain.Seconds())
	fmt.Printf("  peak RSS %d MiB; budget %d MiB (--buffer-bytes + --max-inflight-bytes + 96 MiB soft-limit headroom)\n", peakRSS>>20, budget>>20)
	if peakRSS > budget {
		fmt.Println("  PEAK RSS OVER THE BUDGET")
		good = false
	}
	return good
}

// runFleet runs four instances on one Azurite through the fleet's faults
// (internal/fleetrun) and prints what reading back found.
func runFleet(bin, dir string, o options) bool {
	// Four servers, Azurite and the load generator share the machine: a
	// lighter load than the single server's runs.
	const load, freeze, rate, attack = 20 * time.Second, 10 * time.Second, 3000, 1000
	fmt.Printf("\n== fleet: %d instances on one Azurite, round-robin, %d events/s (20%% login attempts) + %d attempts/s on one user for %v; Azurite frozen %v ==\n",
		fleetrun.Instances, rate, attack, load, freeze)
	az, err := azurite.Start()
	check(err)
	defer az.Stop()
	fleetDir := filepath.Join(dir, "fleet")
	check(os.MkdirAll(fleetDir, 0o755))
	res, err := fleetrun.Run(context.Background(), fleetrun.Config{Bin: bin, Dir: fleetDir, Azurite: az, Load: load, Freeze: freeze,
		Rate: rate, Attack: attack, Log: os.Stdout})
	if err != nil {
		fmt.Printf("  FLEET RUN FAILED: %v\n", err)
		return false
	}
	res.Print(os.Stdout)
	fmt.Printf("  answers: %s\n", statusSummary(res.Report.Status))
	if !res.OK() {
		fmt.Println("  FLEET RUN BROKE A PROMISE")
		return false
	}
	return true
}

// runSoak runs at half the measured capacity and samples the server every
// 10 s.
func runSoak(bin, dir string, o options) bool {
	d := time.Duration(o.minutes * float64(time.Minute))
	fmt.Printf("\n== soak: %v at half capacity (embedded backend, --ack wal, 10%% login attempts) ==\n", d)
	s := newServer(bin, dir, "soak", "--flush-interval", "2s")
	s.start()
	rate := halfCapacity(s)
	cfg := fleetrun.LoadConfig(s.url(), rate, d)
	cfg.LoginsRatio = 0.1
	cfg.Batch = 500
	done := make(chan *loadtest.Report, 1)
	go func() {
		rep, err := loadtest.Run(context.Background(), cfg, io.Discard)
		check(err)
		done <- rep
	}()
	samples, final := sampleSoak(s, d, done)
	printReadBackRSS(s)
	good, v := verdict(final)
	if !s.stop() {
		good = false
	}
	if v != nil {
		fmt.Printf("  acknowledged %d, found %d, lost %d, duplicated %d; client p99 %.0f ms, longest answer %.0f ms; answers: %s\n",
			v.Accepted, v.Found, v.Lost, v.Duplicated, final.Latency.P99, final.Latency.Max, statusSummary(final.Status))
	}
	return flat(samples) && good
}

// halfCapacity measures the server's capacity with a 10 s closed-loop run
// and returns half of it, in events/s.
func halfCapacity(s *server) float64 {
	probe := loadtest.DefaultConfig()
	probe.Target, probe.Quiet, probe.Duration, probe.Concurrency, probe.Batch = s.url(), true, 10*time.Second, 8, 500
	rep, err := loadtest.Run(context.Background(), probe, io.Discard)
	check(err)
	rate := math.Floor(rep.EventsPerSec / 2)
	fmt.Printf("capacity %.0f events/s (10 s closed loop, p99 %.0f ms); soak at %.0f events/s\n", rep.EventsPerSec, rep.Latency.P99, rate)
	return rate
}

// soakSample is one 10 s sample of the server under the soak.
type soakSample struct{ rss, goroutines, fds, wal float64 }

// sampleSoak prints and keeps a sample every 10 s while the load runs (for
// d), and returns them with the load's report once it is done.
//
// RSS is judged on its anonymous part (the heap, stacks, buffers): the
// file-backed part is mostly bbolt's memory map of the login tables, which
// grows with the data and is given back to the page cache under pressure,
// so it is shown but not held to "flat".
func sampleSoak(s *server, d time.Duration, done <-chan *loadtest.Report) ([]soakSample, *loadtest.Report) {
	fmt.Printf("%6s %9s %9s %10s %10s %10s %12s %12s\n", "t s", "anon MiB", "file MiB", "goroutines", "open files", "WAL MiB", "p99 ms post", "events/s")
	var samples []soakSample
	var prev []byte
	begin := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	loadEnd := begin.Add(d)
	for {
		select {
		case final := <-done:
			return samples, final
		case <-tick.C:
		}
		if time.Now().After(loadEnd) {
			continue // reading back (--verify): not the load being soaked
		}
		text, err := get(s.url() + "/metrics")
		if err != nil {
			fmt.Printf("  cannot read /metrics: %v\n", err)
			continue
		}
		rss, _ := s.p.Status("RssAnon")
		fileRSS, _ := s.p.Status("RssFile")
		fds, _ := s.p.OpenFiles()
		g, _ := ingestexec.Metric(text, "go_goroutines")
		wal := dirBytes(filepath.Join(s.data, "wal"))
		p99, eps := windowStats(prev, text)
		prev = text
		samples = append(samples, soakSample{float64(rss), g, float64(fds), float64(wal)})
		fmt.Printf("%6.0f %9.1f %9.1f %10.0f %10d %10.1f %12.1f %12.0f\n", time.Since(begin).Seconds(), float64(rss)/(1<<20), float64(fileRSS)/(1<<20), g, fds, float64(wal)/(1<<20), p99*1000, eps)
	}
}

// printReadBackRSS prints the peak RSS and the RSS after the read-back.
// RSS counts the pages of tables.db that bbolt maps and the logins
// read-back touches: clean page cache the kernel can take back, not heap.
// Split it so a large figure is not read as the Go heap.
func printReadBackRSS(s *server) {
	peak, _ := s.p.Status("VmHWM")
	fmt.Printf("  peak RSS %.0f MiB, including the read-back of every event (GET /v1/logs, limit=0, and GET /v1/logins)\n", float64(peak)/(1<<20))
	anon, _ := s.p.Status("RssAnon")
	file, _ := s.p.Status("RssFile")
	fmt.Printf("  RSS after the read-back: %.0f MiB anonymous (Go heap and stacks), %.0f MiB file-backed (bbolt's mmap of tables.db)\n",
		float64(anon)/(1<<20), float64(file)/(1<<20))
}

// flat reports whether the samples stayed flat: the last third of the run
// is not above the first third (after the first minute of warm-up) by more
// than half, or a small absolute slack. Fewer than 6 samples pass.
func flat(samples []soakSample) bool {
	n := len(samples)
	if n < 6 {
		return true
	}
	third := n / 3
	first, last := samples[1:1+third], samples[n-third:]
	avg := func(ss []soakSample, f func(soakSample) float64) float64 {
		var t float64
		for _, s := range ss {
			t += f(s)
		}
		return t / float64(len(ss))
	}
	good := true
	for _, c := range []struct {
		name  string
		f     func(soakSample) float64
		slack float64
	}{
		{"anon RSS", func(s soakSample) float64 { return s.rss }, 32 << 20},
		{"goroutines", func(s soakSample) float64 { return s.goroutines }, 20},
		{"open files", func(s soakSample) float64 { return s.fds }, 10},
		{"WAL bytes", func(s soakSample) float64 { return s.wal }, 64 << 20},
	} {
		a, b := avg(first, c.f), avg(last, c.f)
		ok := b <= a*1.5+c.slack
		fmt.Printf("  %-10s first third %.0f, last third %.0f: %s\n", c.name, a, b, map[bool]string{true: "flat", false: "GROWING"}[ok])
		good = good && ok
	}
	return good
}

// windowStats computes the server-side p99 of POST /v1/logs and the events
// accepted per second between two scrapes of /metrics, 10 s apart.
func windowStats(prev, cur []byte) (p99, eps float64) {
	if prev == nil {
		return math.NaN(), math.NaN()
	}
	a, _ := ingestexec.Metric(prev, "ingest_events_accepted_total")
	b, _ := ingestexec.Metric(cur, "ingest_events_accepted_total")
	eps = (b - a) / 10
	le := regexp.MustCompile(`le="([^"]+)"`)
	buckets := func(text []byte) map[float64]float64 {
		m := map[float64]float64{}
		for _, line := range strings.Split(string(text), "\n") {
			if !strings.HasPrefix(line, "ingest_http_request_duration_seconds_bucket{") || !strings.Contains(line, `route="post_logs"`) {
				continue
			}
			g := le.FindStringSubmatch(line)
			f := strings.Fields(line)
			if g == nil || len(f) < 2 {
				continue
			}
			bound, _ := strconv.ParseFloat(g[1], 64)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			m[bound] = n
		}
		return m
	}
	pb, cb := buckets(prev), buckets(cur)
	var bounds []float64
	for k := range cb {
		bounds = append(bounds, k)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return math.NaN(), eps
	}
	total := cb[bounds[len(bounds)-1]] - pb[bounds[len(bounds)-1]]
	if total <= 0 {
		return math.NaN(), eps
	}
	for _, k := range bounds {
		if cb[k]-pb[k] >= 0.99*total {
			return k, eps // the bucket's upper bound: p99 is at most this
		}
	}
	return math.Inf(1), eps
}

func scrape(base, name string) (float64, error) {
	text, err := get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	return ingestexec.Metric(text, name)
}

var client = &http.Client{Timeout: 10 * time.Second}

func get(url string) ([]byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

func dirBytes(dir string) int64 {
	var n int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n
}

func gitDescribe() string {
	out, err := exec.Command("git", "log", "-1", "--format=%h %s").Output()
	if err != nil {
		return "unknown"
	}
	s := strings.TrimSpace(string(out))
	if len(s) > 72 {
		s = s[:72] + "..."
	}
	return s
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "faults:", err)
	os.Exit(2)
}

// explainLost looks for lost ids in the blobs themselves, to tell an event
// that was never stored from one the query did not find.
func explainLost(s *server, az *azurite.Server, backend string, ids []string) {
	var store blobsink.Store
	var err error
	if backend == "azurite" {
		var c *azblob.Client
		c, err = (&storage.Config{ConnString: az.ConnString()}).BlobClient()
		if err == nil {
			for _, a := range s.args {
				if strings.HasPrefix(a, "kill9") {
					store, err = blobsink.NewAzureStore(context.Background(), c, a)
				}
			}
		}
	} else {
		store, err = blobsink.NewFileStore(filepath.Join(s.data, "blobs", "logs"))
	}
	if err != nil || store == nil {
		fmt.Printf("  cannot open the store to look for lost ids: %v\n", err)
		return
	}
	ctx := context.Background()
	var blobs []blobsink.BlobInfo
	_ = store.List(ctx, "", func(b blobsink.BlobInfo) error { blobs = append(blobs, b); return nil })
	fmt.Printf("  %d blobs in the store\n", len(blobs))
	for _, id := range ids {
		where := "in no blob"
		for _, b := range blobs {
			rc, err := query.OpenBlob(ctx, store, b.Name)
			if err != nil {
				continue
			}
			data, _ := io.ReadAll(rc)
			rc.Close()
			if i := strings.Index(string(data), ";"+id+";"); i >= 0 {
				line := string(data[strings.LastIndex(string(data[:i]), "\n")+1 : i])
				where = fmt.Sprintf("in %s (size %d, metadata %v), line starts %q", b.Name, b.Size, b.Metadata, line)
				break
			}
		}
		fmt.Printf("  lost %s: %s\n", id, where)
	}
}
