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
	"golang.org/x/sys/unix"

	"ingest/internal/azurite"
	"ingest/internal/ingestexec"
	"ingest/loadtest"
)

// azurite is the row pairs, as MB/s of log bytes stored: ingest --storage
// fed by the load generator and then draining its buffer with no client,
// against a plain azblob client appending 4 MiB blocks under the same load
// and then alone.
//
// Each side has an Azurite of its own, fresh, and goes through the same
// sequence: Azurite grows dearer per GB the more it has taken since it
// started (its in-memory store: 15 CPU-s per GB of plain appends in its
// first 1-2 GB, 18 after, deleted containers or not), so rows run one
// after another on one Azurite would charge the earlier rows' bytes to the
// later ones.
//
// Under load the two cores are shared by Azurite (CPU-bound on one core),
// the load generator and the server taking the events in. Comparing ingest
// under that load with the plain client alone on the machine would charge
// the load generator's CPU to ingest's uploads; so the plain client's
// under-load row runs while the load generator sends the same events at
// the rate ingest took them to an ingest on the embedded store (the same
// intake work, its lines written to files): the only difference left is
// who uploads to Azurite. That server keeps its data in memory (memDir):
// on disk its store gives back the page cache of every block it writes
// (internal/pagecache), and on a VM memory freed just before makes
// Azurite's page faults cheap: the plain client's Azurite would pay less
// system CPU per GB than ingest's, which frees nothing as it runs (its log
// reuses its segments, its buffer its chunks). In memory the server's log syncs
// cost less than on disk, which leaves the plain client more CPU, not
// less. The server also stays up, idle, through the plain client's alone
// row, as ingest holds its memory while it drains, rather than freeing
// its memory just before the row.
func (b *bench) azurite() {
	load, drain, drainTime, ok := b.ingestAzure()
	if !ok {
		return
	}
	rawLoad, raw := b.rawAzure(load.answered, drainTime)
	b.add("azurite: azblob 4 MiB appends", fmt.Sprintf("a plain azblob client, %d blobs at once, alone right after its row under load (the load's server idle), for as long as ingest drained; Azurite %s in memory, fresh for each side", b.o.azWriters, "3.37.0"), raw)
	b.add("azurite: ingest --storage, draining", "the same server right after the load: MB/s of lines appended while it empties its buffer with no client", drain)
	b.add("azurite: azblob 4 MiB appends, under load", fmt.Sprintf("the plain client while the load generator (open loop at the events/s of the next row, batch 1000) feeds ingest --ack wal on the embedded store, its data in memory (tmpfs); MB/s appended from %s after the load starts for %s", settleTime, b.o.duration), rawLoad)
	b.add("azurite: ingest --storage, under load", fmt.Sprintf("load generator (closed loop, batch 1000, %d conns) into ingest --ack wal --storage on its own Azurite; MB/s of lines appended (ingest_blob_appended_bytes_total) and events/s taken from %s after the load starts (its buffer full) to its end; latency over the whole load", b.o.concurrency, settleTime), load)
}

// freshAzurite starts an Azurite for one side of the rows, and a function
// that prints its CPU seconds per GB stored since the last call: whether
// a side makes it work harder for the same bytes (more requests, smaller
// blocks). ok is false, with the reason printed, when Azurite cannot start.
func freshAzurite() (az *azurite.Server, perGB func(what string, stored float64), ok bool) {
	az, err := azurite.Start()
	if err != nil {
		fmt.Fprintf(stderr, "bench: skipping the Azurite rows: %v\n", err)
		return nil, nil, false
	}
	// Its main thread runs every request and sets its pace, most of it
	// computing a CRC-64 of each appended block in JavaScript; the rest of
	// its CPU is helper threads (garbage collection, I/O). It keeps what it
	// takes in fresh memory, a page fault per page, and on a VM that
	// reports free memory to its host a fault costs up to three times as
	// much on memory that was not freed just before: the main thread's
	// system time per GB tells whether a side paid for that.
	mainThread := func() ingestexec.Usage {
		u, _ := ingestexec.ThreadUsage(az.PID(), az.PID())
		return u
	}
	cpu0, main0 := cpuSeconds(az.PID()), mainThread()
	return az, func(what string, stored float64) {
		cpu, main1 := cpuSeconds(az.PID()), mainThread()
		if stored > 0 {
			gb := stored / 1e9
			fmt.Fprintf(stderr, "bench:     Azurite CPU %.2f s per GB stored, %.2f of them its main thread's (%.2f user, %.2f system, %.0f page faults) (%s)\n",
				(cpu-cpu0)/gb, (main1.CPU()-main0.CPU())/gb, (main1.User-main0.User)/gb, (main1.System-main0.System)/gb, float64(main1.MinorFaults-main0.MinorFaults)/gb, what)
		}
		cpu0, main0 = cpu, main1
	}, true
}

// rawAppends appends 4 MiB blocks to --azurite-writers blobs at once in
// container cont for d, with a plain azblob client.
func (b *bench) rawAppends(conn, cont string, d time.Duration) result {
	ctx := context.Background()
	client, err := azblob.NewClientFromConnectionString(conn, nil)
	check(err)
	_, err = client.CreateContainer(ctx, cont, nil)
	check(err)
	defer func() { _, _ = client.DeleteContainer(ctx, cont, nil) }()
	line := lowCostBody(100, time.Now())
	block := bytes.Repeat(line, (4<<20)/len(line))
	var stored atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	deadline := start.Add(d)
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

// rawAzure is the plain client's side on an Azurite of its own: first
// rawAppends while the load generator sends rate events/s, open loop, to a
// fresh ingest --ack wal on the embedded store in memDir (the load ingest
// --storage took in under load, with the same intake work, but its lines
// written to files instead of Azurite), then rawAppends alone, that server
// idle, for as long as ingest took to drain, as ingest's drain followed
// its load.
func (b *bench) rawAzure(rate float64, alone time.Duration) (underLoad, raw result) {
	if rate <= 0 {
		check(fmt.Errorf("cannot run the plain client under load: ingest --storage took no events under load"))
	}
	az, perGB, ok := freshAzurite()
	if !ok {
		check(fmt.Errorf("cannot start the plain client's Azurite"))
	}
	defer az.Stop()
	srv, cleanup := b.serveFreshIn(b.mem, nil, "--ack", "wal")
	defer cleanup()
	cfg := loadtest.DefaultConfig()
	cfg.Target, cfg.Batch, cfg.Concurrency, cfg.Rate = srv.URL, 1000, b.o.openConns, rate
	cfg.Duration = settleTime + b.o.duration + time.Second
	cfg.EventSize, cfg.LoginsRatio, cfg.Quiet = b.o.eventSize, 0, true
	done := make(chan error, 1)
	var rep *loadtest.Report
	go func() {
		var err error
		rep, err = loadtest.Run(context.Background(), cfg, nil)
		done <- err
	}()
	// What the plain client stores while the load settles is not in the
	// row, but Azurite has taken it, as it took ingest's fill.
	settle := b.rawAppends(az.ConnString(), "bench-raw-settle", settleTime)
	perGB("raw appends while the load settles", settle.stored)
	underLoad = b.rawAppends(az.ConnString(), "bench-raw-load", b.o.duration)
	perGB("raw appends under load", underLoad.stored)
	check(<-done)
	underLoad.answered = rep.EventsPerSec
	fmt.Fprintf(stderr, "bench:     load beside the plain client: %.0f events/s asked, %.0f answered\n", rate, rep.EventsPerSec)
	if rep.EventsPerSec < 0.95*rate {
		// The machine could not generate the load: the plain client had
		// less to compete with than ingest did, and this round's ratio
		// reads low.
		fmt.Fprintf(stderr, "bench:     warning: the load fell %.0f%% short of ingest's; this round's under-load ratio is unfavourable to ingest\n", 100*(1-rep.EventsPerSec/rate))
	}
	raw = b.rawAppends(az.ConnString(), "bench-raw", alone)
	perGB("raw appends alone", raw.stored)
	_, err := srv.Stop(time.Minute)
	check(err)
	return underLoad, raw
}

// memDir makes a directory in memory (tmpfs) for the data of the plain
// side's load server, or returns fallback, with a warning, where there is
// none with room for it: the load's lines, about 1 GB per round here, and
// the log's segments. (A container's /dev/shm is often 64 MiB.)
func memDir(fallback string) string {
	const shm, room = "/dev/shm", 4 << 30
	var st unix.Statfs_t
	if err := unix.Statfs(shm, &st); err == nil && st.Type == unix.TMPFS_MAGIC && int64(st.Bavail)*st.Bsize >= room {
		if dir, err := os.MkdirTemp(shm, "ingest-bench-"); err == nil {
			return dir
		}
	}
	fmt.Fprintf(stderr, "bench: warning: no %s with %d GiB free: the plain client's load server in the Azurite rows keeps its data on disk, and their ratios read unfavourable to ingest (see docs/benchmarks.md, Into Azurite)\n", shm, room>>30)
	return fallback
}

// settleTime is how long the load runs before either under-load row is
// measured. Into ingest --storage the closed-loop client sends faster than
// Azurite stores, so the first seconds fill the buffer to --buffer-bytes
// (a few seconds, at up to a core of the server's CPU), and every chunk
// and write-ahead log page in them is memory touched for the first time, a
// page fault each. A server that has run for a while has that memory; the
// row is its steady
// state, the buffer full and taking events as fast as the sink stores
// them. The plain client's row waits as long, its embedded ingest past
// its own first, slower second.
const settleTime = 5 * time.Second

// ingestAzure is ingest's side on an Azurite of its own: it drives
// ingest --storage with the load generator, closed loop, and reads how fast
// its sink appended from the server's metrics: under load (from settleTime
// to the end of the load; the client and the server's intake share the
// cores with Azurite), then while it drains what it buffered with no
// client (the sink alone against Azurite), for drainTime. ok is false when
// Azurite cannot start.
func (b *bench) ingestAzure() (underLoad, drain result, drainTime time.Duration, ok bool) {
	az, perGB, ok := freshAzurite()
	if !ok {
		return result{}, result{}, 0, false
	}
	defer az.Stop()
	srv, cleanup := b.serveFresh("--storage", az.ConnString(), "--container", "bench-ingest", "--ack", "wal")
	defer cleanup()
	cfg := loadtest.DefaultConfig()
	cfg.Target, cfg.Batch, cfg.Concurrency, cfg.Duration = srv.URL, 1000, b.o.concurrency, settleTime+b.o.duration
	cfg.EventSize, cfg.LoginsRatio, cfg.Quiet = b.o.eventSize, 0, true
	pid := srv.Cmd.Process.Pid
	appended := func() float64 { return metric(srv.URL, "ingest_blob_appended_bytes_total") }
	accepted := func() float64 { return metric(srv.URL, "ingest_events_accepted_total") }

	// The fill, then the measured window, both sampled from the metrics
	// while the load runs.
	type mark struct {
		sample
		events, cpu float64
	}
	at := func() mark {
		return mark{sample{time.Now(), appended()}, accepted(), cpuSeconds(pid)}
	}
	start := at()
	filled := make(chan mark, 1)
	go func() {
		time.Sleep(settleTime)
		m := at()
		perGB("ingest, filling its buffer", m.v-start.v)
		filled <- m
	}()
	rep, err := loadtest.Run(context.Background(), cfg, nil)
	check(err)
	loadEnd := at()
	from := <-filled
	perGB("ingest, under load", loadEnd.v-from.v)
	secs := loadEnd.t.Sub(from.t).Seconds()
	underLoad = result{answered: (loadEnd.events - from.events) / secs, rssMiB: peakRSSMiB(pid), p50: rep.Latency.P50, p99: rep.Latency.P99,
		mbps: (loadEnd.v - from.v) / secs / 1e6, stored: loadEnd.v}
	if n := loadEnd.events - from.events; n > 0 {
		underLoad.cpuPerM = (loadEnd.cpu - from.cpu) / (n / 1e6)
	}
	if n := from.events - start.events; n > 0 {
		fillSecs := from.t.Sub(start.t).Seconds()
		fmt.Fprintf(stderr, "bench:     filling the buffer (the first %.0f s, not in the row): %.1f MB/s appended, %.0f events/s, %.2f CPU-s per million events\n",
			fillSecs, (from.v-start.v)/fillSecs/1e6, n/fillSecs, (from.cpu-start.cpu)/(n/1e6))
	}

	// Drain: until the counter has not moved for 2 s (at most 2 minutes).
	last := loadEnd.sample
	for time.Since(last.t) < 2*time.Second && time.Since(loadEnd.t) < 2*time.Minute {
		time.Sleep(100 * time.Millisecond)
		if v := appended(); v != last.v {
			last = sample{time.Now(), v}
		}
	}
	drainTime = last.t.Sub(loadEnd.t)
	if drainTime > 0 {
		drain.mbps = (last.v - loadEnd.v) / drainTime.Seconds() / 1e6
	}
	drain.stored = last.v - loadEnd.v
	fmt.Fprintf(stderr, "bench:     drained %.0f MB in %.1f s\n", drain.stored/1e6, drainTime.Seconds())
	perGB("ingest, draining", drain.stored)
	// The requests Azurite served for those bytes: each costs it a few ms
	// of CPU besides the bytes themselves.
	if gb := last.v / 1e9; gb > 0 {
		blocks := metric(srv.URL, "ingest_blob_blocks_total")
		fmt.Fprintf(stderr, "bench:     per GB stored: %.0f appends (%.2f MiB each), %.0f metadata writes, %.0f blobs created\n",
			blocks/gb, last.v/blocks/(1<<20), metric(srv.URL, "ingest_blob_metadata_writes_total")/gb, metric(srv.URL, "ingest_blobs_created_total")/gb)
	}

	_, err = srv.Stop(2 * time.Minute)
	check(err)
	// A drain too short to time (the sink kept up with the load) still
	// leaves the plain client a window of its own.
	return underLoad, drain, max(drainTime, 2*time.Second), true
}

type sample struct {
	t time.Time
	v float64
}

// metric reads one counter from a server's /metrics, named with its labels
// as the page prints them; 0 when it cannot (it runs in goroutines, where
// check cannot stop a section).
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
