package main

import (
	"context"
	"fmt"
	"time"

	"ingest/loadtest"
)

// loadGen runs the load generator closed loop for each --acks and
// --batches, then open loop at half the fastest --ack wal rate of this
// round.
func (b *bench) loadGen() {
	best := 0.0
	bestBatch := b.o.batches[0]
	for _, ack := range b.o.acks {
		for _, batch := range b.o.batches {
			if !b.o.sections["loadgen"] && !(ack == "wal" && batch == b.o.batches[0]) {
				continue
			}
			r := b.loadRun(ack, batch, b.o.concurrency, 0, 0)
			b.add(fmt.Sprintf("loadgen: ingest --ack %s, batch %d", ack, batch),
				fmt.Sprintf("load generator, closed loop, %d conns, --event-size %d", b.o.concurrency, b.o.eventSize), r)
			if ack == "wal" && r.answered > best {
				best, bestBatch = r.answered, batch
			}
		}
	}
	if !b.o.sections["openloop"] || best == 0 {
		return
	}
	rate := best / 2
	r := b.loadRun("wal", bestBatch, b.o.openConns, rate, 0)
	b.add(fmt.Sprintf("openloop: ingest --ack wal, batch %d", bestBatch),
		fmt.Sprintf("load generator, open loop at half the closed-loop --ack wal rate of the same round (here %.0f events/s), %d conns, after %s at that rate unmeasured; latency from each request's scheduled time", rate, b.o.openConns, openWarmUp), r)
}

// openWarmUp is how long the open-loop row sends at its rate, unmeasured,
// before its measured run on the same server.
const openWarmUp = 3 * time.Second

// coresRow names the cores section's rows: ingest --ack wal under the
// load generator with the server's GOMAXPROCS set to procs.
func coresRow(procs int) string {
	return fmt.Sprintf("cores: ingest --ack wal, GOMAXPROCS=%d", procs)
}

// cores runs the closed-loop --ack wal row with the server's GOMAXPROCS
// at 1, then at 2, one after the other so that both meet the same
// machine: how much more CPU per event a second core costs.
func (b *bench) cores() {
	batch := b.o.batches[0]
	for _, procs := range []int{1, 2} {
		r := b.loadRun("wal", batch, b.o.concurrency, 0, procs)
		b.add(coresRow(procs), fmt.Sprintf("load generator, closed loop, batch %d, %d conns, --event-size %d; the server's GOMAXPROCS=%d", batch, b.o.concurrency, b.o.eventSize, procs), r)
	}
}

// loadRun starts a fresh ingest on the embedded store, its GOMAXPROCS
// set to procs unless 0, and drives it with the load generator; rate 0 is
// closed loop.
func (b *bench) loadRun(ack string, batch, conns int, rate float64, procs int) result {
	var env []string
	if procs > 0 {
		env = []string{fmt.Sprintf("GOMAXPROCS=%d", procs)}
	}
	srv, cleanup := b.serveFreshIn(b.dir, env, "--ack", ack)
	defer cleanup()
	if procs > 0 {
		if got := metric(srv.URL, "go_sched_gomaxprocs_threads"); got != float64(procs) {
			check(fmt.Errorf("the server runs with GOMAXPROCS %g, not the %d asked", got, procs))
		}
	}

	cfg := loadtest.DefaultConfig()
	cfg.Target, cfg.Batch, cfg.Concurrency, cfg.Duration, cfg.Rate = srv.URL, batch, conns, b.o.duration, rate
	cfg.EventSize, cfg.LoginsRatio, cfg.Quiet = b.o.eventSize, 0, true
	if rate > 0 {
		// The first second of a fresh server (connections, buffers, the
		// heap growing) is slower; the latency row is about steady state.
		warm := cfg
		warm.Duration = openWarmUp
		_, err := loadtest.Run(context.Background(), warm, nil)
		check(err)
	}
	pid := srv.Cmd.Process.Pid
	cpu0, disk0, start := cpuSeconds(pid), b.disk.written(), time.Now()
	rep, err := loadtest.Run(context.Background(), cfg, nil)
	check(err)
	cpu, disk, secs := cpuSeconds(pid)-cpu0, b.disk.written()-disk0, time.Since(start).Seconds()
	if rate > 0 {
		fmt.Fprintf(stderr, "bench:     open loop: requests sent late by p99 %.1f ms, max %.1f ms\n", rep.SendLag.P99, rep.SendLag.Max)
	}
	out := result{
		answered: rep.EventsPerSec, mbps: rep.MBPerSecRaw, diskMBps: disk / secs / 1e6, rssMiB: peakRSSMiB(pid),
		p50: rep.Latency.P50, p99: rep.Latency.P99, p999: rep.Latency.P999, errors: rep.Errors,
	}
	if rep.EventsAccepted > 0 {
		out.cpuPerM = cpu / (float64(rep.EventsAccepted) / 1e6)
	}
	_, err = srv.Stop(time.Minute)
	check(err)
	return out
}
