// Command cluster measures several ingest instances on one Azurite, on
// loopback, bounded in time, stopping by itself:
//
//   - tail: a tail client on the first of --tail-instances instances while
//     events are posted to all of them at --tail-rate; every event must
//     arrive once. Prints the acceptance-to-delivery latency (the event's
//     ts, set by the instance that accepted it, to the moment the tail
//     client reads it), the requests and bytes the tail cost between
//     instances, and the membership's storage requests per instance per
//     minute.
//
//   - hot: one user attacked at --hot-rate attempts/s spread evenly over
//     --hot-instances instances, other users beside; prints the busiest
//     (partition, second) read back from the day table, by the attempts'
//     Time and by the table's insert Timestamp.
//
//     go run ./scripts/cluster                       # both, defaults
//     go run ./scripts/cluster --only tail --tail-duration 2m
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/azurite"
	"ingest/internal/clusterload"
	"ingest/internal/ingestexec"
	"ingest/storage"
)

func main() {
	only := pflag.String("only", "tail,hot", "measurements to run: tail, hot")
	tailN := pflag.Int("tail-instances", 3, "instances of the tail measurement")
	tailRate := pflag.Float64("tail-rate", 300, "events/s posted, over all instances")
	tailDur := pflag.Duration("tail-duration", 60*time.Second, "how long events are posted while the tail follows")
	hotN := pflag.Int("hot-instances", 6, "instances of the hot-user measurement")
	hotRate := pflag.Float64("hot-rate", 2700, "the attacked user's attempts/s, over all instances")
	hotDur := pflag.Duration("hot-duration", 20*time.Second, "how long the attack lasts")
	pflag.Parse()

	dir, err := os.MkdirTemp("", "ingest-cluster-")
	check(err)
	defer os.RemoveAll(dir)
	bin, err := ingestexec.Build(dir, false)
	check(err)
	az, err := azurite.Start()
	check(err)
	defer az.Stop()
	fmt.Printf("ingest instances on one Azurite, loopback, %d CPUs shared by all\n\n", ingestexec.MachineCPUs())
	if strings.Contains(*only, "tail") {
		measureTail(bin, dir, az.ConnString(), *tailN, *tailRate, *tailDur)
	}
	if strings.Contains(*only, "hot") {
		measureHot(bin, dir, az.ConnString(), *hotN, *hotRate, *hotDur)
	}
}

// startCluster starts n instances named {name}0.. on container, with the
// default cluster timing, and waits until each lists them all.
func startCluster(bin, dir, conn, name string, n int) []*ingestexec.Process {
	var ps []*ingestexec.Process
	for i := range n {
		data, err := os.MkdirTemp(dir, name)
		check(err)
		p, err := ingestexec.Serve(bin, 0, nil, "--data-dir", data, "--storage", conn, "--container", name,
			"--stats-instance", fmt.Sprintf("%s%d", name, i))
		check(err)
		ps = append(ps, p)
	}
	deadline := time.Now().Add(time.Minute)
	for _, p := range ps {
		for metric(p, "ingest_cluster_instances") != float64(n) {
			if time.Now().After(deadline) {
				fail("the instances did not see each other within a minute")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return ps
}

func stopAll(ps []*ingestexec.Process) {
	for _, p := range ps {
		p.Stop(time.Minute)
	}
}

// measureTail follows instance 0's tail while events go to every instance.
func measureTail(bin, dir, conn string, n int, rate float64, d time.Duration) {
	ps := startCluster(bin, dir, conn, "tailbench", n)
	defer stopAll(ps)
	before, t0 := snapshot(ps), time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ps[0].URL+"/v1/tail?service=tailbench", nil)
	resp, err := http.DefaultClient.Do(req)
	check(err)
	defer resp.Body.Close()
	for _, p := range ps {
		for metric(p, "ingest_tail_readers") != 1 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var lat []time.Duration
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e struct{ ID, TS string }
			if json.Unmarshal(sc.Bytes(), &e) != nil || e.ID == "" {
				continue
			}
			ts, err := time.Parse(time.RFC3339Nano, e.TS)
			now := time.Now()
			mu.Lock()
			seen[e.ID]++
			if err == nil {
				lat = append(lat, now.Sub(ts))
			}
			mu.Unlock()
		}
	}()
	start := time.Now()
	posted := postEvents(ps, rate, d)
	took := time.Since(start)
	time.Sleep(3 * time.Second) // the last events arrive
	after, window := snapshot(ps), time.Since(t0)
	if os.Getenv("DEBUG") != "" {
		for _, p := range ps {
			for _, l := range strings.Split(string(scrape(p)), "\n") {
				if strings.HasPrefix(l, "ingest_tail") || strings.Contains(l, "get_tail") {
					fmt.Println(p.URL, l)
				}
			}
		}
	}

	mu.Lock()
	defer mu.Unlock()
	missing, dup := 0, 0
	for _, id := range posted {
		switch seen[id] {
		case 0:
			if os.Getenv("DEBUG") != "" {
				fmt.Println("missing", id)
			}
			missing++
		case 1:
		default:
			dup++
		}
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration {
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(100 * time.Microsecond)
	}
	fmt.Printf("tail: %d instances, %.0f events/s posted to all of them for %v, one tail client on the first\n", n, rate, d)
	fmt.Printf("  events posted %d, seen by the tail %d, missing %d, seen twice or more %d\n", len(posted), len(lat), missing, dup)
	if len(lat) > 0 {
		fmt.Printf("  acceptance to delivery: p50 %v, p90 %v, p99 %v, max %v\n", q(0.5), q(0.9), q(0.99), lat[len(lat)-1].Round(100*time.Microsecond))
	}
	var peerReqs float64
	for i := 1; i < n; i++ {
		peerReqs += after[i].tailRequests - before[i].tailRequests
	}
	fmt.Printf("  cost of the tail client: %d streams from the other instances, %.0f requests to them in all (opened once, none during the %v of posting), %.1f KB/s received from them, 0 storage requests\n",
		int(after[0].peerStreams), peerReqs, took.Round(time.Second), (after[0].peerBytes-before[0].peerBytes)/took.Seconds()/1000)
	var book float64
	for i := range ps {
		book += after[i].clusterRequests - before[i].clusterRequests
	}
	fmt.Printf("  membership: %.1f storage requests per instance per minute (--cluster-heartbeat 10s)\n\n", book/float64(n)/window.Minutes())
}

// counters are the metrics the tail measurement reads before and after.
type counters struct{ tailRequests, peerStreams, peerBytes, clusterRequests float64 }

func snapshot(ps []*ingestexec.Process) []counters {
	var out []counters
	for _, p := range ps {
		text := scrape(p)
		m := func(name string) float64 { v, _ := ingestexec.Metric(text, name); return v }
		out = append(out, counters{m(`ingest_http_requests_total{route="get_tail",status="2xx"}`), m("ingest_tail_peer_streams"),
			m("ingest_tail_peer_bytes_total"), m("ingest_cluster_storage_requests_total")})
	}
	return out
}

// postEvents posts events of service tailbench without a time (the
// accepting instance stamps them) to every instance in turn, rate per
// second in all, for d; it returns the acknowledged ids.
func postEvents(ps []*ingestexec.Process, rate float64, d time.Duration) []string {
	var mu sync.Mutex
	var acked []string
	var seq atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range ps {
		wg.Go(func() {
			sent := 0
			for t := time.NewTicker(20 * time.Millisecond); time.Since(start) < d; <-t.C {
				due := int(rate / float64(len(ps)) * time.Since(start).Seconds())
				var body strings.Builder
				var ids []string
				for ; sent < due; sent++ {
					id := fmt.Sprintf("e%d-%d", i, seq.Add(1))
					ids = append(ids, id)
					fmt.Fprintf(&body, `{"service":"tailbench","level":"info","id":%q,"msg":"tail latency probe"}`+"\n", id)
				}
				if len(ids) == 0 {
					continue
				}
				resp, err := http.Post(p.URL+"/v1/logs", "application/x-ndjson", strings.NewReader(body.String()))
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					mu.Lock()
					acked = append(acked, ids...)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return acked
}

// measureHot attacks one user over every instance and reads the table back.
func measureHot(bin, dir, conn string, n int, rate float64, d time.Duration) {
	ps := startCluster(bin, dir, conn, "hotbench", n)
	var urls []string
	for _, p := range ps {
		urls = append(urls, p.URL)
	}
	prefix := fmt.Sprintf("hb%d", time.Now().UnixNano()%1e9)
	user := prefix + "-victim@example.com"
	from := time.Now()
	acked, err := clusterload.Load{URLs: urls, User: user, UserRate: rate, OtherRate: 100, Users: 10000, Duration: d, Prefix: prefix}.Run(context.Background())
	check(err)
	stopAll(ps) // SIGTERM: every buffer is flushed
	svc, err := (&storage.Config{ConnString: conn}).TableClient()
	check(err)
	rb, err := clusterload.ReadBack(context.Background(), svc, clusterload.Tables(from, time.Now()), prefix, user)
	check(err)
	lost, dup := 0, 0
	for _, id := range acked {
		switch rb.IDs[id] {
		case 0:
			lost++
		case 1:
		default:
			dup++
		}
	}
	fmt.Printf("hot user: %d instances, one user at %.0f attempts/s spread evenly for %v, 100 attempts/s of 10,000 other users per instance\n", n, rate, d)
	fmt.Printf("  attempts accepted %d, stored once %d, lost %d, duplicated %d\n", len(acked), len(acked)-lost-dup, lost, dup)
	fmt.Printf("  the user: busiest second %d attempts, over %d partitions\n", rb.UserPeak, rb.UserPartitions)
	fmt.Printf("  busiest partition-second by Time (acceptance): %d entities (%s at %s)\n", rb.ByTime.Entities, rb.ByTime.PartitionKey, rb.ByTime.Second.Format(time.TimeOnly))
	fmt.Printf("  busiest partition-second by insert Timestamp:  %d entities (%s at %s)\n\n", rb.ByInserted.Entities, rb.ByInserted.PartitionKey, rb.ByInserted.Second.Format(time.TimeOnly))
}

func scrape(p *ingestexec.Process) []byte {
	resp, err := http.Get(p.URL + "/metrics")
	check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	check(err)
	return b
}

func metric(p *ingestexec.Process, name string) float64 {
	v, _ := ingestexec.Metric(scrape(p), name)
	return v
}

func check(err error) {
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "cluster:", msg)
	os.Exit(1)
}
