package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"ingest/internal/azurite"
	"ingest/loadtest"
)

// azurite is the row pair on one Azurite: a plain azblob client appending
// 4 MiB blocks, then ingest --storage fed by the load generator, both as
// MB/s of log bytes stored.
func (b *bench) azurite() {
	az, err := azurite.Start()
	if err != nil {
		fmt.Fprintf(stderr, "bench: skipping the Azurite rows: %v\n", err)
		return
	}
	defer az.Stop()
	conn := az.ConnString()
	// Azurite's own CPU per GB stored says whether ingest makes it work
	// harder for the same bytes (more requests, smaller blocks).
	cpu0 := cpuSeconds(az.PID())
	perGB := func(what string, stored float64) {
		cpu := cpuSeconds(az.PID())
		if stored > 0 {
			fmt.Fprintf(stderr, "bench:     Azurite CPU %.2f s per GB stored (%s)\n", (cpu-cpu0)/(stored/1e9), what)
		}
		cpu0 = cpu
	}
	raw := b.rawAppends(conn)
	perGB("raw appends", raw.stored)
	b.add("azurite: azblob 4 MiB appends", fmt.Sprintf("a plain azblob client, %d blobs at once, Azurite %s in memory", b.o.azWriters, "3.37.0"), raw)
	load, drain := b.ingestAzure(conn)
	perGB("ingest, under load and draining", load.stored+drain.stored)
	b.add("azurite: ingest --storage, under load", fmt.Sprintf("load generator (closed loop, batch 1000, %d conns) into ingest --ack wal --storage on the same Azurite; MB/s of lines appended (ingest_blob_appended_bytes_total) from the first flush to the end of the load", b.o.concurrency), load)
	b.add("azurite: ingest --storage, draining", "the same server right after the load: MB/s of lines appended while it empties its buffer with no client", drain)
}

func (b *bench) rawAppends(conn string) result {
	ctx := context.Background()
	client, err := azblob.NewClientFromConnectionString(conn, nil)
	check(err)
	const cont = "bench-raw"
	_, err = client.CreateContainer(ctx, cont, nil)
	check(err)
	defer func() { _, _ = client.DeleteContainer(ctx, cont, nil) }()
	line := lowCostBody(100, time.Now())
	block := bytes.Repeat(line, (4<<20)/len(line))
	var stored atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	deadline := start.Add(b.o.duration)
	var wg sync.WaitGroup
	for w := range b.o.azWriters {
		wg.Go(func() {
			ab := client.ServiceClient().NewContainerClient(cont).NewAppendBlobClient(fmt.Sprintf("raw/%d.log", w))
			if _, err := ab.Create(ctx, nil); err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			for time.Now().Before(deadline) {
				if _, err := ab.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(block)), nil); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				stored.Add(int64(len(block)))
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if err, _ := firstErr.Load().(error); err != nil {
		check(fmt.Errorf("cannot append to Azurite: %w", err))
	}
	return result{mbps: float64(stored.Load()) / secs / 1e6, stored: float64(stored.Load())}
}

// ingestAzure drives ingest --storage with the load generator, closed
// loop, and reads how fast its sink appended from the server's metrics:
// under load (from the first landed flush to the end of the load; the
// client and the server's intake share the cores with Azurite), then while
// it drains what it buffered with no client (the sink alone against
// Azurite, as the plain client was).
func (b *bench) ingestAzure(conn string) (underLoad, drain result) {
	data, err := os.MkdirTemp(b.dir, "data-")
	check(err)
	defer os.RemoveAll(data)
	srv, err := b.serve("--data-dir", data, "--storage", conn, "--container", "bench-ingest", "--ack", "wal", "--log-level", "warn")
	check(err)
	defer srv.Kill()
	cfg := loadtest.DefaultConfig()
	cfg.Target, cfg.Batch, cfg.Concurrency, cfg.Duration = srv.URL, 1000, b.o.concurrency, b.o.duration
	cfg.EventSize, cfg.LoginsRatio, cfg.Quiet = b.o.eventSize, 0, true
	pid := srv.Cmd.Process.Pid
	appended := func() float64 { return metric(srv.URL, "ingest_blob_appended_bytes_total") }

	cpu0 := cpuSeconds(pid)
	var first sample
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for first.v == 0 {
			select {
			case <-stop:
				return
			case <-tick.C:
				if v := appended(); v > 0 {
					first = sample{time.Now(), v}
				}
			}
		}
	}()
	rep, err := loadtest.Run(context.Background(), cfg, nil)
	check(err)
	loadEnd := sample{time.Now(), appended()}
	close(stop)
	<-sampled
	cpu := cpuSeconds(pid) - cpu0
	underLoad = result{answered: rep.EventsPerSec, rssMiB: peakRSSMiB(pid), p50: rep.Latency.P50, p99: rep.Latency.P99}
	if first.v > 0 && loadEnd.t.After(first.t) {
		underLoad.mbps = (loadEnd.v - first.v) / loadEnd.t.Sub(first.t).Seconds() / 1e6
	}
	underLoad.stored = loadEnd.v
	if rep.EventsAccepted > 0 {
		underLoad.cpuPerM = cpu / (float64(rep.EventsAccepted) / 1e6)
	}

	// Drain: until the counter has not moved for 2 s (at most 2 minutes).
	last := loadEnd
	for time.Since(last.t) < 2*time.Second && time.Since(loadEnd.t) < 2*time.Minute {
		time.Sleep(100 * time.Millisecond)
		if v := appended(); v != last.v {
			last = sample{time.Now(), v}
		}
	}
	if last.t.After(loadEnd.t) {
		drain.mbps = (last.v - loadEnd.v) / last.t.Sub(loadEnd.t).Seconds() / 1e6
	}
	drain.stored = last.v - loadEnd.v
	fmt.Fprintf(stderr, "bench:     drained %.0f MB in %.1f s\n", (last.v-loadEnd.v)/1e6, last.t.Sub(loadEnd.t).Seconds())

	_, err = srv.Stop(2 * time.Minute)
	check(err)
	return underLoad, drain
}

type sample struct {
	t time.Time
	v float64
}

// metric reads one unlabelled counter from a server's /metrics; 0 when
// it cannot (it runs in goroutines, where check cannot stop a section).
func metric(base, name string) float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0 // the server is gone: the section fails on its own
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}
