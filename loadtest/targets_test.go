package loadtest

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// TestRunAcrossTargets: with several targets the batches go round-robin;
// a batch answered 503 goes to the next target, and one whose connection
// is refused (an instance gone) too, so nothing is lost to the fleet's
// churn; the read-back through the first target verifies every instance's
// events, and TargetOf names the instance that took each event.
func TestRunAcrossTargets(t *testing.T) {
	q := &querySink{sink: newSink(t), t: t, lose: func(string) bool { return false }, dup: func(string) bool { return false }}
	var mu sync.Mutex
	took := map[string]int{} // id -> target index
	posts := map[int]int{}
	handler := func(target int, refuseEvery int) fasthttp.RequestHandler {
		n := 0
		return func(ctx *fasthttp.RequestCtx) {
			if string(ctx.Path()) == "/metrics" { // everything taken is stored
				ctx.SetBodyString("ingest_buffer_bytes 0\n")
				return
			}
			if !ctx.IsPost() {
				q.handle(ctx)
				return
			}
			mu.Lock()
			n++
			refuse := refuseEvery > 0 && n%refuseEvery == 0
			mu.Unlock()
			if refuse {
				ctx.Response.Header.Set("Retry-After", "0")
				ctx.Error("shutting down", fasthttp.StatusServiceUnavailable)
				return
			}
			body := decode(t, string(ctx.Request.Header.Peek("Content-Encoding")), ctx.PostBody())
			var p fastjson.Parser
			mu.Lock()
			posts[target]++
			for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
				if v, err := p.ParseBytes(line); err == nil {
					took[string(v.GetStringBytes("id"))] = target
				}
			}
			mu.Unlock()
			q.handle(ctx)
		}
	}
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneURL := "http://" + gone.Addr().String()
	gone.Close() // an instance that went away: connections are refused
	targets := []string{startServer(t, handler(0, 0)), startServer(t, handler(1, 2)), goneURL}
	cfg := quickConfig(strings.Join(targets, ","))
	cfg.Events = 6000
	cfg.LoginsRatio = 0.3
	cfg.Verify = true
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Verify
	if v == nil || rep.VerifyErr != "" {
		t.Fatalf("verify: %+v, %s", v, rep.VerifyErr)
	}
	if v.Accepted != cfg.Events || v.Lost != 0 || v.Duplicated != 0 || rep.Errors != 0 {
		t.Fatalf("accepted %d of %d, lost %d, duplicated %d, errors %v", v.Accepted, cfg.Events, v.Lost, v.Duplicated, rep.Status)
	}
	if posts[0] == 0 || posts[1] == 0 {
		t.Fatalf("posts per target %v: want both live targets used", posts)
	}
	if posts[0] <= posts[1] {
		t.Errorf("posts per target %v: the first should take the gone one's share and the refused ones", posts)
	}
	for id, target := range took {
		if got, ok := rep.TargetOf([]byte(id)); !ok || got != target {
			t.Fatalf("TargetOf(%s) = %d, %v; target %d took it", id, got, ok, target)
		}
	}
	if _, ok := rep.TargetOf([]byte("someone-else-m000000000001")); ok {
		t.Error("TargetOf knows an id of another run")
	}
	if s := rep.Partitions.Schemes[0].Description; !strings.Contains(s, "over 3 instances") {
		t.Errorf("partition report %q: want it to model the three targets", s)
	}
}

// TestHashedSchemeModelsReplicas: one user attacked at 2,700 attempts/s
// spread evenly over 6 instances, 450/s each: with --hot-user-rate 500
// shared by the 6 the user is salted and no partition-second reaches
// 2,000; modelled as one instance seeing each share at the full rate (the
// per-instance rule) it is never salted and one partition takes it all.
func TestHashedSchemeModelsReplicas(t *testing.T) {
	const secs, rate, replicas = 5, 2700, 6
	feed := attack(secs, rate, replicas)
	shared := partitionReport(defaultSchemes(0, 500, replicas), secs, feed).Schemes[0]
	if shared.Partitions < 2 || shared.PeakRate >= AzurePartitionTarget {
		t.Errorf("rate shared by %d instances: %d partitions, busiest second %g; want salted under %d", replicas, shared.Partitions, shared.PeakRate, AzurePartitionTarget)
	}
	perInstance := partitionReport(defaultSchemes(0, 500*replicas, replicas), secs, feed).Schemes[0]
	if perInstance.Partitions != 1 || perInstance.PeakRate < rate-1 {
		t.Errorf("each instance at the full rate: %d partitions, busiest second %g; want the attack unsalted in one", perInstance.Partitions, perInstance.PeakRate)
	}
}
