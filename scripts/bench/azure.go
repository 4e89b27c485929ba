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
	"ingest/internal/ingestexec"
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
	raw := b.rawAppends(conn)
	b.add("azurite: azblob 4 MiB appends", fmt.Sprintf("a plain azblob client, %d blobs at once, Azurite %s in memory", b.o.azWriters, "3.37.0"), raw)
	b.add("azurite: ingest --storage", fmt.Sprintf("load generator (closed loop, batch 1000, %d conns) into ingest --ack wal --storage on the same Azurite; MB/s of lines appended (ingest_blob_appended_bytes_total) while it ran", b.o.concurrency), b.ingestAzure(conn))
	b.addRatio("ingest --storage / azblob 4 MiB appends (MB/s into Azurite)", "azurite: ingest --storage", "azurite: azblob 4 MiB appends", true)
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
	return result{mbps: float64(stored.Load()) / secs / 1e6}
}

// ingestAzure drives ingest --storage with the load generator and reads
// how fast its sink appended from the server's metrics.
func (b *bench) ingestAzure(conn string) result {
	data, err := os.MkdirTemp(b.dir, "data-")
	check(err)
	defer os.RemoveAll(data)
	srv, err := ingestexec.Serve(b.bin, 0, os.Stderr, "--data-dir", data, "--storage", conn, "--container", "bench-ingest", "--ack", "wal", "--log-level", "warn")
	check(err)
	defer srv.Kill()
	cfg := loadtest.DefaultConfig()
	cfg.Target, cfg.Batch, cfg.Concurrency, cfg.Duration = srv.URL, 1000, b.o.concurrency, b.o.duration
	cfg.EventSize, cfg.LoginsRatio, cfg.Quiet = b.o.eventSize, 0, true
	pid := srv.Cmd.Process.Pid
	cpu0 := cpuSeconds(pid)
	// The sink's rate from its first landed flush to the end of the load:
	// the first seconds only fill the buffers.
	done := make(chan struct{})
	rate := make(chan float64, 1)
	go func() {
		var t0 time.Time
		var b0, b1 float64
		var t1 time.Time
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				if t1.After(t0) && !t0.IsZero() {
					rate <- (b1 - b0) / t1.Sub(t0).Seconds()
				} else {
					rate <- 0
				}
				return
			case <-tick.C:
				v := metric(srv.URL, "ingest_blob_appended_bytes_total")
				if v > 0 && t0.IsZero() {
					t0, b0 = time.Now(), v
				}
				t1, b1 = time.Now(), v
			}
		}
	}()
	rep, err := loadtest.Run(context.Background(), cfg, nil)
	check(err)
	close(done)
	stored := <-rate
	cpu := cpuSeconds(pid) - cpu0
	out := result{answered: rep.EventsPerSec, mbps: stored / 1e6, rssMiB: peakRSSMiB(pid), p50: rep.Latency.P50, p99: rep.Latency.P99}
	if rep.EventsAccepted > 0 {
		out.cpuPerM = cpu / (float64(rep.EventsAccepted) / 1e6)
	}
	_, err = srv.Stop(2 * time.Minute)
	check(err)
	return out
}

// metric reads one unlabelled counter from a server's /metrics.
func metric(base, name string) float64 {
	resp, err := http.Get(base + "/metrics")
	check(err)
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
