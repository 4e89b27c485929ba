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
			r := b.loadRun(ack, batch, b.o.concurrency, 0, nil)
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
	r := b.loadRun("wal", bestBatch, b.o.openConns, rate, nil)
	b.add(fmt.Sprintf("openloop: ingest --ack wal, batch %d", bestBatch),
		fmt.Sprintf("load generator, open loop at half the closed-loop --ack wal rate of the same round (here %.0f events/s), %d conns, after %s at that rate unmeasured; latency from each request's scheduled time", rate, b.o.openConns, openWarmUp), r)
}

// openWarmUp is how long the open-loop row sends at its rate, unmeasured,
// before its measured run on the same server.
const openWarmUp = 3 * time.Second

// loadRun starts a fresh ingest (embedded, or on Azure storage with
// extra args) and drives it with the load generator; rate 0 is closed loop.
func (b *bench) loadRun(ack string, batch, conns int, rate float64, extra []string) result {
	srv, cleanup := b.serveFresh(append([]string{"--ack", ack}, extra...)...)
	defer cleanup()

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
