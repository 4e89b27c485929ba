// Command bench measures the whole server: it builds ingest, starts it on the
// embedded default in a temporary directory on 127.0.0.1, runs the load
// generator (package loadtest, in this process) against it for each
// configuration, and prints one table. Each configuration gets a fresh
// server, so peak RSS and CPU are its own. With --runs N every row is the
// median of N runs.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/ingestexec"
	"ingest/loadtest"
)

func main() {
	duration := pflag.Duration("duration", 10*time.Second, "load per run")
	runs := pflag.Int("runs", 1, "runs per row; the row shows the median")
	batches := pflag.String("batches", "100,1000,5000", "batch sizes (events per request)")
	acks := pflag.String("acks", "wal,memory", "--ack modes")
	eventSize := pflag.Int("event-size", 60, "mean message bytes (60 gives events of about 250-300 bytes as sent)")
	concurrency := pflag.Int("concurrency", 8, "load generator connections")
	logins := pflag.Float64("logins-ratio", 0, "share of login attempts")
	pflag.Parse()

	dir, err := os.MkdirTemp("", "ingest-bench-")
	check(err)
	defer os.RemoveAll(dir)
	bin, err := ingestexec.Build(dir, false)
	check(err)

	fmt.Printf("ingest bench: %d CPUs, load generator in the same machine, %s per run, median of %d, event-size %d, concurrency %d, closed loop\n\n",
		cpus(), *duration, *runs, *eventSize, *concurrency)
	const rowFormat = "%-7s %6v %10v %7v %7v %7v %13v %17v %7v\n"
	fmt.Printf(rowFormat, "ack", "batch", "events/s", "MB/s", "p50 ms", "p99 ms", "peak RSS MiB", "CPU s / M events", "errors")
	for _, ack := range strings.Split(*acks, ",") {
		for _, bs := range strings.Split(*batches, ",") {
			batch, err := strconv.Atoi(bs)
			check(err)
			var rows []row
			for range *runs {
				rows = append(rows, run(bin, dir, ack, batch, *eventSize, *concurrency, *logins, *duration))
			}
			r := median(rows)
			fmt.Printf(rowFormat, ack, batch, fmt.Sprintf("%.0f", r.eps), fmt.Sprintf("%.1f", r.mbps), fmt.Sprintf("%.1f", r.p50),
				fmt.Sprintf("%.1f", r.p99), fmt.Sprintf("%.0f", r.rssMiB), fmt.Sprintf("%.2f", r.cpuPerM), r.errors)
		}
	}
}

type row struct {
	eps, mbps, p50, p99, rssMiB, cpuPerM float64
	errors                               int64
}

// median takes each column's median independently.
func median(rows []row) row {
	col := func(f func(r row) float64) float64 {
		v := make([]float64, len(rows))
		for i, r := range rows {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return row{
		eps: col(func(r row) float64 { return r.eps }), mbps: col(func(r row) float64 { return r.mbps }),
		p50: col(func(r row) float64 { return r.p50 }), p99: col(func(r row) float64 { return r.p99 }),
		rssMiB: col(func(r row) float64 { return r.rssMiB }), cpuPerM: col(func(r row) float64 { return r.cpuPerM }),
		errors: int64(col(func(r row) float64 { return float64(r.errors) })),
	}
}

func run(bin, dir, ack string, batch, eventSize, concurrency int, logins float64, d time.Duration) row {
	data, err := os.MkdirTemp(dir, "data-")
	check(err)
	defer os.RemoveAll(data)
	srv, err := ingestexec.Serve(bin, 0, os.Stderr, "--data-dir", data, "--ack", ack, "--log-level", "warn")
	check(err)
	url := srv.URL

	cfg := loadtest.DefaultConfig()
	cfg.Target, cfg.Batch, cfg.Concurrency, cfg.Duration = url, batch, concurrency, d
	cfg.EventSize, cfg.LoginsRatio, cfg.Quiet = eventSize, logins, true
	cpuBefore := cpuSeconds(srv.Cmd.Process.Pid)
	rep, err := loadtest.Run(context.Background(), cfg, nil)
	check(err)
	cpuAfter := cpuSeconds(srv.Cmd.Process.Pid)
	rss, _ := srv.Status("VmHWM")
	_, err = srv.Stop(time.Minute)
	check(err)
	return row{
		eps: rep.EventsPerSec, mbps: rep.MBPerSecRaw, p50: rep.Latency.P50, p99: rep.Latency.P99,
		rssMiB: float64(rss) / (1 << 20), cpuPerM: (cpuAfter - cpuBefore) / (float64(rep.EventsAccepted) / 1e6),
		errors: rep.Errors,
	}
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

func cpus() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
