// Command scaling measures 1, 2, 4 ... ingest instances writing one
// Azurite container, as a fleet writes one storage account: for each
// --instances count a fresh Azurite, that many servers each with a data
// directory of its own, and the load generator closed loop over all of
// them (round-robin) for --duration. The servers' --buffer-bytes is small
// (--buffer-bytes, 64 MiB), so that once it is full (after --settle)
// they answer only as fast as they store and the answered rate is the
// stored one. It prints per row, from --settle to the end of the load
// and from the servers' own counters: the events/s answered, the MB/s of
// lines appended to blobs, the login entities/s written, and the storage
// requests the servers sent per second, by kind. docs/scaling.md explains what a
// machine whose cores the servers, Azurite and the client share can and
// cannot show with it.
//
//	go run ./scripts/scaling --instances 1,2,4 --duration 20s
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/azurite"
	"ingest/internal/ingestexec"
	"ingest/loadtest"
)

// counters are the server metrics a row adds up over its instances.
var counters = []struct{ name, label string }{
	{"ingest_events_accepted_total", "events answered"},
	{"ingest_blob_appended_bytes_total", "line bytes"},
	{"ingest_login_entities_written_total", "login entities"},
	{"ingest_blob_blocks_total", "appends"},
	{"ingest_blob_metadata_writes_total", "metadata writes"},
	{"ingest_blobs_created_total", "creates"},
	{"ingest_blob_claim_conflicts_total", "failed creates"},
	{`ingest_flushes_total{stream="logs"}`, "stats upserts"}, // one per logs flush (and blob)
	{"ingest_login_write_requests_total", "login writes"},
}

func main() {
	instances := pflag.IntSlice("instances", []int{1, 2, 4}, "fleet sizes, one row each")
	duration := pflag.Duration("duration", 20*time.Second, "load per row")
	settle := pflag.Duration("settle", 5*time.Second, "measure the storage side from this long after the load starts (buffers filled)")
	conc := pflag.Int("concurrency", 16, "load generator connections in all")
	buffer := pflag.String("buffer-bytes", "64MiB", "each server's --buffer-bytes")
	logins := pflag.Float64("logins-ratio", 0.1, "share of the events that are login attempts")
	pflag.Parse()
	dir, err := os.MkdirTemp("", "ingest-scaling-")
	check(err)
	defer os.RemoveAll(dir)
	bin, err := ingestexec.Build(dir, false)
	check(err)
	fmt.Printf("%9s %12s %10s %12s | %s\n", "instances", "events/s", "MB/s", "logins/s", "storage requests/s in all (per instance)")
	for _, n := range *instances {
		row(bin, filepath.Join(dir, fmt.Sprint(n)), n, *duration, *settle, *conc, *buffer, *logins)
	}
}

// row measures one fleet size on a fresh Azurite.
func row(bin, dir string, n int, d, settle time.Duration, conc int, buffer string, logins float64) {
	az, err := azurite.Start()
	check(err)
	defer az.Stop()
	var urls []string
	var procs []*ingestexec.Process
	for i := range n {
		p, err := ingestexec.Serve(bin, 0, nil, "--data-dir", filepath.Join(dir, fmt.Sprint(i)), "--storage", az.ConnString(),
			"--container", "scaling", "--stats-instance", fmt.Sprintf("i%d", i), "--buffer-bytes", buffer, "--log-level", "warn")
		check(err)
		defer p.Kill()
		procs = append(procs, p)
		urls = append(urls, p.URL)
	}
	cfg := loadtest.DefaultConfig()
	cfg.Target, cfg.Duration, cfg.Concurrency, cfg.Batch, cfg.Quiet = strings.Join(urls, ","), d, conc, 1000, true
	cfg.LoginsRatio = logins
	done := make(chan *loadtest.Report, 1)
	go func() {
		rep, err := loadtest.Run(context.Background(), cfg, io.Discard)
		check(err)
		done <- rep
	}()
	time.Sleep(settle)
	before, t0 := scrape(procs), time.Now()
	rep := <-done
	after, secs := scrape(procs), time.Since(t0).Seconds()
	rate := func(i int) float64 { return (after[i] - before[i]) / secs }
	var reqs []string
	for i, c := range counters[3:] {
		reqs = append(reqs, fmt.Sprintf("%s %.1f (%.1f)", c.label, rate(i+3), rate(i+3)/float64(n)))
	}
	fmt.Printf("%9d %12.0f %10.1f %12.0f | %s; p99 %.0f ms\n", n, rate(0), rate(1)/1e6, rate(2), strings.Join(reqs, ", "), rep.Latency.P99)
	for _, p := range procs {
		if _, err := p.Stop(time.Minute); err != nil {
			fmt.Println("  ", err)
		}
	}
}

// scrape sums the counters over the servers.
func scrape(procs []*ingestexec.Process) []float64 {
	sums := make([]float64, len(counters))
	for _, p := range procs {
		resp, err := http.Get(p.URL + "/metrics")
		check(err)
		text, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		check(err)
		for i, c := range counters {
			v, _ := ingestexec.Metric(text, c.name)
			sums[i] += v
		}
	}
	return sums
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "scaling:", err)
		os.Exit(1)
	}
}
