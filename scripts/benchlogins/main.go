// Command benchlogins measures the login table path on Azurite, in one run
// on one machine, as row pairs: first Azurite's own rate for 100-entity
// entity group transactions sent by a plain aztables client (the ceiling),
// then the rate at which login attempts posted to ingest (on the same
// Azurite, --storage) are stored, with the write requests per 1,000
// attempts from the server's metrics. Then the p50/p99 of
// GET /v1/logins/{user}?limit=20 for a user with 10,000 attempts today, and
// the load generator's partition report with one user under attack.
//
//	go run ./scripts/benchlogins                       # 60,000 attempts per row, 1 pair
//	go run ./scripts/benchlogins --runs 3 --login-flush-bytes 32MiB
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/spf13/pflag"

	"ingest/internal/azurite"
	"ingest/internal/ingestexec"
	"ingest/loadtest"
	"ingest/shard"
	"ingest/storage"
	"ingest/tablesink"
)

func main() {
	attempts := pflag.Int("attempts", 60000, "login attempts (and raw entities) per row")
	runs := pflag.Int("runs", 1, "row pairs; the summary shows the medians")
	users := pflag.Int("users", 100000, "distinct users (Zipf 1.1)")
	parallel := pflag.Int("parallel", 16, "transactions in flight, for the raw client and the server's --login-flush-parallel")
	tailAttempts := pflag.Int("tail-attempts", 10000, "attempts of the user whose latest 20 are read")
	tailReads := pflag.Int("tail-reads", 500, "GET /v1/logins/{user}?limit=20 requests (0: measure the row pairs only)")
	tailOthers := pflag.Int("tail-others", 50000, "other users' attempts in the day table during the reads (Azurite scans the whole table for every query)")
	flushBytes := pflag.String("login-flush-bytes", "", "the server's --login-flush-bytes (default: its own)")
	before := pflag.String("before", "", "another ingest binary (an earlier version) measured as a third row of each run")
	curve := pflag.IntSlice("tail-curve", nil, "table sizes (entities, ascending) at which to time the range query of GET /v1/logins/{user}?limit=20 straight on Azurite, e.g. 10000,100000,1000000; then exit")
	pflag.Parse()
	var serverArgs []string
	if *flushBytes != "" {
		serverArgs = append(serverArgs, "--login-flush-bytes", *flushBytes)
	}

	az, err := azurite.Start()
	check(err)
	defer az.Stop()
	conn := az.ConnString()
	dir, err := os.MkdirTemp("", "ingest-benchlogins-")
	check(err)
	defer os.RemoveAll(dir)
	bin, err := ingestexec.Build(dir, false)
	check(err)
	svc, err := (&storage.Config{ConnString: conn}).TableClient()
	check(err)

	if len(*curve) > 0 {
		tailCurve(svc, *curve, *tailAttempts, *parallel)
		return
	}
	fmt.Printf("login tables on Azurite: %d CPUs (Azurite, client and server share them), %d attempts per row, %d users Zipf 1.1, %d transactions in flight\n\n",
		ingestexec.MachineCPUs(), *attempts, *users, *parallel)
	const rowFormat = "%-5s %-34s %12s %10s %16s\n"
	fmt.Printf(rowFormat, "run", "row", "entities/s", "ratio", "requests/1,000")
	var raws, ingests, ratios, reqs []float64
	for r := range *runs {
		raw := rawRate(svc, fmt.Sprintf("raw%d", r), *attempts, *parallel)
		fmt.Printf(rowFormat, strconv.Itoa(r+1), "aztables, 100-entity transactions", fmt.Sprintf("%.0f", raw), "1.00", "10.0")
		dropDayTables(svc)
		rate, perK := ingestRate(bin, dir, conn, *attempts, *users, append(serverArgs, "--login-flush-parallel", strconv.Itoa(*parallel)))
		fmt.Printf(rowFormat, strconv.Itoa(r+1), "ingest, POST /v1/logins -> table", fmt.Sprintf("%.0f", rate), fmt.Sprintf("%.2f", rate/raw), fmt.Sprintf("%.1f", perK))
		raws, ingests, ratios, reqs = append(raws, raw), append(ingests, rate), append(ratios, rate/raw), append(reqs, perK)
		if *before != "" {
			dropDayTables(svc)
			rate, _ := ingestRate(*before, dir, conn, *attempts, *users, append(serverArgs, "--login-flush-parallel", strconv.Itoa(*parallel)))
			fmt.Printf(rowFormat, strconv.Itoa(r+1), "--before binary, same load", fmt.Sprintf("%.0f", rate), fmt.Sprintf("%.2f", rate/raw), "")
		}
	}
	fmt.Printf("\nmedians: aztables %.0f entities/s, ingest %.0f entities/s, ratio %.2f, %.1f write requests per 1,000 attempts\n\n",
		median(raws), median(ingests), median(ratios), median(reqs))

	if *tailReads > 0 { // 0: the row pairs only
		dropDayTables(svc) // the day table holds what the reads' description says, not the last row's attempts too
		tailLatency(bin, dir, conn, *tailAttempts, *tailOthers, *tailReads)
		attackReport(bin, dir, conn)
	}
}

// rawRate sends n entities shaped like login attempts as 100-entity
// transactions over 256 partitions, parallel at a time, and returns
// entities/s.
func rawRate(svc *aztables.ServiceClient, table string, n, parallel int) float64 {
	ctx := context.Background()
	_, err := svc.CreateTable(ctx, table, nil)
	check(err)
	client := svc.NewClient(table)
	txns := (n + 99) / 100
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range parallel {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for i := next.Add(1) - 1; i < int64(txns); i = next.Add(1) - 1 {
				pk := fmt.Sprintf("%04x", i%256)
				actions := make([]aztables.TransactionAction, 100)
				for j := range actions {
					user := fmt.Sprintf("user%d@example.com", r.IntN(100000))
					id := fmt.Sprintf("%d-%d", i, j)
					rk := shard.RowKey(nil, []byte(user), time.Now().UnixNano(), []byte(id))
					actions[j] = aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: fmt.Appendf(nil,
						`{"PartitionKey":%q,"RowKey":%q,"User":%q,"Time@odata.type":"Edm.DateTime","Time":%q,"Success":false,"IP":"198.51.100.7","UA":"Mozilla/5.0 (X11; Linux x86_64)","ID":%q}`,
						pk, rk, user, time.Now().UTC().Format(time.RFC3339Nano), id)}
				}
				_, err := client.SubmitTransaction(ctx, actions, nil)
				check(err)
			}
		})
	}
	wg.Wait()
	rate := float64(txns*100) / time.Since(start).Seconds()
	_, err = svc.DeleteTable(ctx, table, nil)
	check(err)
	return rate
}

// dropDayTables deletes today's and tomorrow's day tables, so that every
// ingest row, like every aztables row, writes into an empty table:
// Azurite's inserts slow down as a table grows (each one splices its
// position into LokiJS's sorted index arrays on PartitionKey and RowKey,
// as long as the table), so a day table that kept the previous rows'
// attempts made later ingest rows slower than their aztables rows for
// Azurite's sake alone.
func dropDayTables(svc *aztables.ServiceClient) {
	now := time.Now()
	for _, t := range []string{tablesink.TableFor(now.UnixNano()), tablesink.TableFor(now.Add(24 * time.Hour).UnixNano())} {
		_, err := svc.DeleteTable(context.Background(), t, nil)
		if re := (*azcore.ResponseError)(nil); errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			continue
		}
		check(err)
	}
}

// tailCurve fills today's day table step by step to each of sizes
// entities (a user with attempts entities in its bucket, the rest other
// users' over 256 buckets, written as 100-entity transactions) and after
// each step, with nothing else writing, times the lookup of
// GET /v1/logins/{user}?limit=20 three ways, in turn: Azurite's own answer
// to its one range query (PartitionKey eq, RowKey range, $top 21) asked by
// a plain aztables client, the same query through tablesink's store, and
// the whole lookup (tablesink's Tail: tomorrow's and today's tables).
func tailCurve(svc *aztables.ServiceClient, sizes []int, attempts, parallel int) {
	ctx := context.Background()
	store := tablesink.NewAzureStore(svc)
	sink, err := tablesink.New(tablesink.DefaultConfig(), store, nil, nil)
	check(err)
	_, err = sink.Maintain(ctx, false) // today's and tomorrow's tables, as a server creates them
	check(err)
	table := tablesink.TableFor(time.Now().UnixNano())
	client := svc.NewClient(table)
	keyer := shard.NewKeyer(shard.DefaultConfig())
	user := []byte("tail-user@example.com")
	home := string(keyer.AppendKey(nil, user, -1))
	write := func(pk func(txn int) string, name func(txn, j int) string, txns int) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(txns); i = next.Add(1) - 1 {
					actions := make([]aztables.TransactionAction, 100)
					for j := range actions {
						u := name(int(i), j)
						rk := shard.RowKey(nil, []byte(u), time.Now().UnixNano(), fmt.Appendf(nil, "%d-%d", i, j))
						actions[j] = aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: fmt.Appendf(nil,
							`{"PartitionKey":%q,"RowKey":%q,"User":%q,"Time@odata.type":"Edm.DateTime","Time":%q,"Success":false,"IP":"198.51.100.7","UA":"Mozilla/5.0 (X11; Linux x86_64)"}`,
							pk(int(i)), rk, u, time.Now().UTC().Format(time.RFC3339Nano))}
					}
					_, err := client.SubmitTransaction(ctx, actions, nil)
					check(err)
				}
			})
		}
		wg.Wait()
	}
	write(func(int) string { return home }, func(int, int) string { return string(user) }, attempts/100)
	from, to := shard.UserRange(user)
	filter := fmt.Sprintf("PartitionKey eq '%s' and RowKey ge '%s' and RowKey lt '%s'", home, from, to)
	ways := []struct {
		name string
		want int // entities or attempts found
		read func() int
	}{
		{"aztables", 21, func() int {
			page, err := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter, Top: to32(21)}).NextPage(ctx)
			check(err)
			return len(page.Entities)
		}},
		{"store", 21, func() int {
			ents, err := store.Query(ctx, table, home, from, to, 21)
			check(err)
			return len(ents)
		}},
		{"Tail", 20, func() int {
			got, err := sink.Tail(ctx, string(user), 1, 20)
			check(err)
			return len(got)
		}},
	}
	fmt.Printf("GET /v1/logins/{user}?limit=20 on Azurite, a user with %d attempts, nothing else writing; ms:\n", attempts)
	fmt.Printf("  aztables: Azurite's answer to the one range query (PartitionKey eq, RowKey range, $top 21), plain aztables client\n")
	fmt.Printf("  store:    the same query through tablesink's AzureStore\n")
	fmt.Printf("  Tail:     the whole lookup without HTTP (tomorrow's and today's day tables)\n")
	fmt.Printf("%10s %7s | %8s %8s | %8s %8s | %8s %8s\n", "entities", "reads", "aztables", "p99", "store", "p99", "Tail", "p99")
	have := attempts
	for _, size := range sizes {
		if size > have {
			txns := (size - have + 99) / 100
			write(func(txn int) string { return fmt.Sprintf("%04x", txn%256) },
				func(txn, j int) string { return fmt.Sprintf("user%d@example.com", (txn*100+j)%100000) }, txns)
			have += txns * 100
		}
		reads := max(20, min(200, 20000000/have)) // about a minute per step
		lat := make([][]float64, len(ways))
		for i := range reads {
			for k := range ways {
				w := ways[(i+k)%len(ways)] // each way goes first in turn
				t := time.Now()
				if n := w.read(); n != w.want {
					check(fmt.Errorf("the %s read found %d, want %d", w.name, n, w.want))
				}
				lat[(i+k)%len(ways)] = append(lat[(i+k)%len(ways)], float64(time.Since(t).Microseconds())/1000)
			}
		}
		fmt.Printf("%10d %7d", have, reads)
		for _, l := range lat {
			sort.Float64s(l)
			fmt.Printf(" | %8.1f %8.1f", l[len(l)/2], l[len(l)*99/100])
		}
		fmt.Println()
	}
}

func to32(n int) *int32 { v := int32(n); return &v }

// server is one running ingest on Azurite.
type server struct {
	p   *ingestexec.Process
	url string
}

func startServer(bin, dir, conn string, args ...string) *server {
	data, err := os.MkdirTemp(dir, "data-")
	check(err)
	port, err := ingestexec.FreePort()
	check(err)
	args = append([]string{"--data-dir", data, "--storage", conn, "--container", fmt.Sprintf("bench%d", port), "--log-level", "error"}, args...)
	p, err := ingestexec.Serve(bin, port, os.Stderr, args...)
	check(err)
	return &server{p: p, url: p.URL}
}

func (s *server) stop() {
	if _, err := s.p.Stop(time.Minute); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// metric reads one counter or gauge from /metrics (0 when absent); name
// may carry labels, as in ingest_flushes_total{stream="logins"}.
func (s *server) metric(name string) float64 {
	resp, err := http.Get(s.url + "/metrics")
	check(err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	v, _ := ingestexec.Metric(b, name)
	return v
}

// waitStored waits until the server has written n login entities. It
// asks every 50 ms, not more often: rendering /metrics costs the server CPU
// that Azurite shares, and the row must measure the writes, not the
// polling.
func (s *server) waitStored(n float64) {
	deadline := time.Now().Add(10 * time.Minute)
	for s.metric("ingest_login_entities_written_total") < n {
		if time.Now().After(deadline) {
			check(fmt.Errorf("only %v of %v login attempts stored after 10 minutes", s.metric("ingest_login_entities_written_total"), n))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ingestRate posts n login attempts from users (Zipf 1.1) to a fresh server
// on Azurite and returns the attempts stored per second, from the first
// request to the last entity written, and the write requests per 1,000.
// It prints the run's timeline: when the posting ended, when the first
// entity was written, and the login flushes it took.
func ingestRate(bin, dir, conn string, n, users int, args []string) (rate, requestsPerK float64) {
	s := startServer(bin, dir, conn, args...)
	defer s.stop()
	cfg := loadtest.DefaultConfig()
	cfg.Target, cfg.Events, cfg.LoginsRatio, cfg.Users, cfg.Quiet = s.url, int64(n), 1, users, true
	cfg.Concurrency, cfg.Batch = 8, 1000
	start := time.Now()
	firstRequest, firstWrite := make(chan time.Duration, 1), make(chan time.Duration, 1)
	go func() {
		for s.metric("ingest_login_write_requests_total") == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		firstRequest <- time.Since(start)
		for s.metric("ingest_login_entities_written_total") == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		firstWrite <- time.Since(start)
	}()
	rep, err := loadtest.Run(context.Background(), cfg, nil)
	check(err)
	posted := time.Since(start)
	// Markers of salted users are entities too: count the attempts only.
	s.waitStored(float64(rep.EventsAccepted))
	elapsed := time.Since(start)
	written, requests := s.metric("ingest_login_entities_written_total"), s.metric("ingest_login_write_requests_total")
	fmt.Printf("      (posted in %.1f s, first write request at %.1f s, first entity written at %.1f s, all at %.1f s, %.0f login flushes, %.0f buffered bytes an attempt)\n",
		posted.Seconds(), (<-firstRequest).Seconds(), (<-firstWrite).Seconds(), elapsed.Seconds(), s.metric(`ingest_flushes_total{stream="logins"}`),
		s.metric(`ingest_flushed_bytes_total{stream="logins"}`)/float64(rep.EventsAccepted))
	return float64(rep.EventsAccepted) / elapsed.Seconds(), requests / written * 1000
}

// tailLatency posts tail attempts of one user (under --hot-user-rate, so
// the user stays in one bucket, and again fast, so the user is salted) and
// reports the latency of GET /v1/logins/{user}?limit=20.
func tailLatency(bin, dir, conn string, attempts, others, reads int) {
	s := startServer(bin, dir, conn)
	defer s.stop()
	post := func(user string, n, perSecond int) {
		for i := 0; i < n; i += 100 {
			start := time.Now()
			var body bytes.Buffer
			for j := i; j < min(i+100, n); j++ {
				fmt.Fprintf(&body, `{"user":%q,"success":false,"ip":"198.51.100.7","ua":"Mozilla/5.0 (X11; Linux x86_64)","id":"%s-%d"}`+"\n", user, user, j)
			}
			resp, err := http.Post(s.url+"/v1/logins", "application/x-ndjson", &body)
			check(err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 202 {
				check(fmt.Errorf("POST /v1/logins = %d", resp.StatusCode))
			}
			if perSecond > 0 {
				// Paced from each post, never catching up on a schedule: a
				// loaded machine that delays posts must not send the next
				// ones in a burst over --hot-user-rate (500/s), which would
				// salt the user meant to stay in one bucket. 200/s in posts
				// of 100 stays under it even when a second holds one post
				// more than its share.
				time.Sleep(time.Until(start.Add(100 * time.Second / time.Duration(perSecond))))
			}
		}
	}
	// Other users' attempts share the buckets, as in production.
	if others > 0 {
		cfg := loadtest.DefaultConfig()
		cfg.Target, cfg.Events, cfg.LoginsRatio, cfg.Users, cfg.Quiet = s.url, int64(others), 1, 100000, true
		_, err := loadtest.Run(context.Background(), cfg, nil)
		check(err)
	}
	post("tail-cold", attempts, 200)
	post("tail-hot", attempts, 0)
	s.waitStored(float64(others + 2*attempts))
	fmt.Printf("GET /v1/logins/{user}?limit=20, %d attempts of the user today, %d of other users, %d sequential reads:\n", attempts, others, reads)
	for _, user := range []string{"tail-cold", "tail-hot"} {
		lat := make([]float64, 0, reads)
		for range reads {
			t := time.Now()
			resp, err := http.Get(s.url + "/v1/logins/" + user + "?limit=20")
			check(err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || bytes.Count(b, []byte("\n")) != 20 {
				check(fmt.Errorf("GET /v1/logins/%s = %d with %d lines", user, resp.StatusCode, bytes.Count(b, []byte("\n"))))
			}
			lat = append(lat, float64(time.Since(t).Microseconds())/1000)
		}
		sort.Float64s(lat)
		what := "posted at 200/s: one bucket, one range query"
		if user == "tail-hot" {
			what = "posted as fast as possible: salted, a range query per salted bucket"
		}
		fmt.Printf("  %-10s p50 %5.1f ms  p99 %5.1f ms  max %5.1f ms  (%s)\n", user, lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], what)
	}
	fmt.Println()
}

// attackReport runs the load generator with one user under attack through
// a server on Azurite and prints its partition report.
func attackReport(bin, dir, conn string) {
	s := startServer(bin, dir, conn)
	defer s.stop()
	cfg := loadtest.DefaultConfig()
	cfg.Target, cfg.Duration, cfg.LoginsRatio, cfg.Users, cfg.Quiet = s.url, 10*time.Second, 1, 100000, true
	cfg.Rate, cfg.AttackUser, cfg.AttackRate = 5000, "victim", 5000
	rep, err := loadtest.Run(context.Background(), cfg, nil)
	check(err)
	fmt.Printf("partition report, %d attempts in %.0f s (5,000/s from 100,000 users + 5,000/s on one user):\n", rep.Partitions.Attempts, rep.Partitions.Seconds)
	for _, sc := range rep.Partitions.Schemes {
		fmt.Printf("  %-7s %6d partitions, hottest %-20s %7.0f/s over the run, busiest second of any partition %7.0f (x%.2f of Azure's 2,000/s)\n",
			sc.Name, sc.Partitions, sc.HottestKey, sc.HottestRate, sc.PeakRate, sc.PeakVsTarget)
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchlogins:", err)
		os.Exit(1)
	}
}
