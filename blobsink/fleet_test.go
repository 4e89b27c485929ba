package blobsink_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/prometheus/client_golang/prometheus"

	"ingest/blobsink"
	"ingest/buffer"
	"ingest/internal/azurite"
	"ingest/logline"
	"ingest/query"
)

// fleetResult is what one run of claimFleet measured.
type fleetResult struct {
	instances, boundaries int
	failed                float64       // failed conditional creates, in all
	slowest               time.Duration // the longest first flush of an hour, claim included
	store                 blobsink.Store
	hours                 []time.Time
}

// perBoundary is the failed creates per instance per hour boundary.
func (r fleetResult) perBoundary() float64 {
	return r.failed / float64(r.instances*r.boundaries)
}

// fleetSink is one instance of a fleet: a sink with a blob client, a
// connection pool and metrics of its own, as a process of its own has.
// All of them share one container of one Azurite.
type fleetSink struct {
	sink  *blobsink.Sink
	store blobsink.Store
	reg   *prometheus.Registry
}

func newFleetSink(tb testing.TB, conn, container string) fleetSink {
	tb.Helper()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	client, err := azblob.NewClientFromConnectionString(conn, &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: transport},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(transport.CloseIdleConnections)
	store, err := blobsink.NewAzureStore(context.Background(), client, container)
	if err != nil {
		tb.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	sink, err := blobsink.NewSink(store, blobsink.DefaultConfig(), reg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return fleetSink{sink, store, reg}
}

// claimFleet starts n instances on one container and makes the first
// flush of each of boundaries hours fall at the same moment on all of
// them: each flush is one instance's first of its hour, so it lists the
// hour's prefix and claims a blob, as every instance does at an hour
// boundary. It returns the failed creates and the slowest of those
// flushes.
func claimFleet(tb testing.TB, n, boundaries int) fleetResult {
	tb.Helper()
	conn := azurite.ConnString(tb)
	container := uniqueContainer(tb)
	fleet := make([]fleetSink, n)
	for i := range fleet {
		fleet[i] = newFleetSink(tb, conn, container)
	}
	res := fleetResult{instances: n, boundaries: boundaries, store: newFleetSink(tb, conn, container).store}
	base := time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC)
	for b := range boundaries {
		hour := base.Add(time.Duration(b) * time.Hour)
		res.hours = append(res.hours, hour)
		key := blobsink.HourPrefix("fleet", hour)
		took := make([]time.Duration, n)
		errs := make([]error, n)
		var ready, done sync.WaitGroup
		release := make(chan struct{})
		for i, f := range fleet {
			data := fleetLines(i, b, hour)
			ready.Add(1)
			done.Go(func() {
				ready.Done()
				<-release
				start := time.Now()
				_, errs[i] = f.sink.Flush(context.Background(), buffer.FlushRequest{Key: key, Data: [][]byte{data}, Summaries: nil, Sums: nil, Journal: func([]byte) error { return nil }})
				took[i] = time.Since(start)
			})
		}
		ready.Wait()
		close(release)
		done.Wait()
		for i, err := range errs {
			if err != nil {
				tb.Fatalf("instance %d, hour %d: %v", i, b, err)
			}
		}
		res.slowest = max(res.slowest, slices.Max(took))
	}
	for _, f := range fleet {
		res.failed += counterValue(tb, f.reg, "ingest_blob_claim_conflicts_total")
	}
	return res
}

// counterValue reads a counter from a registry.
func counterValue(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	tb.Fatalf("no metric %s", name)
	return 0
}

// fleetEvents is how many events each instance flushes per hour.
const fleetEvents = 20

// fleetLines are instance i's events of boundary b: host "i<i>", ids
// "i<i>-b<b>-<k>".
func fleetLines(i, b int, hour time.Time) []byte {
	var out []byte
	for k := range fleetEvents {
		e := logline.Event{Time: hour.Add(time.Duration(k) * time.Second).UnixNano(), Level: logline.LevelInfo,
			Service: []byte("fleet"), Host: fmt.Appendf(nil, "i%d", i), ID: fmt.Appendf(nil, "i%d-b%d-%d", i, b, k), Message: []byte("m")}
		out = logline.AppendLine(out, &e)
	}
	return out
}

// TestClaimsAtFleetSize: 32 instances whose first flush of an hour falls
// at the same moment, three hours in a row, fail at most 1.5 conditional
// creates per instance per hour boundary on average (trying the next
// number after each taken one fails about N/2 times each); every instance
// gets a blob of its own, and a query finds every event once across the
// numbering's gaps.
func TestClaimsAtFleetSize(t *testing.T) {
	const n, boundaries = 32, 3
	res := claimFleet(t, n, boundaries)
	t.Logf("%d instances, %d hour boundaries: %.0f failed creates, %.2f per instance per boundary; slowest first flush of an hour %v",
		n, boundaries, res.failed, res.perBoundary(), res.slowest.Round(time.Millisecond))
	if got := res.perBoundary(); got > 1.5 {
		t.Errorf("%.2f failed creates per instance per hour boundary, want at most 1.5", got)
	}
	ctx := context.Background()
	for b, hour := range res.hours {
		var names []string
		err := res.store.List(ctx, blobsink.HourPrefix("fleet", hour)+"/", func(bi blobsink.BlobInfo) error {
			names = append(names, bi.Name)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != n {
			t.Fatalf("hour %d has %d blobs, want one per instance (%d): %v", b, len(names), n, names)
		}
		seen := map[string]int{}
		q := query.Query{Services: []string{"fleet"}, From: hour, To: hour.Add(time.Hour)}
		_, err = query.Run(ctx, res.store, q, func(_ []byte, e *logline.Event) error {
			seen[string(e.ID)]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			for k := range fleetEvents {
				if id := fmt.Sprintf("i%d-b%d-%d", i, b, k); seen[id] != 1 {
					t.Fatalf("hour %d: event %s found %d times, want once", b, id, seen[id])
				}
			}
		}
		if len(seen) != n*fleetEvents {
			t.Fatalf("hour %d: %d events found, want %d", b, len(seen), n*fleetEvents)
		}
		checkOneWriterPerBlob(t, res.store, names)
	}
}

// checkOneWriterPerBlob fails the test when a blob holds lines of two
// hosts: each instance writes its own host.
func checkOneWriterPerBlob(t *testing.T, store blobsink.Store, names []string) {
	t.Helper()
	for _, name := range names {
		rc, err := store.Open(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		hosts := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			f := strings.SplitN(line, ";", 6)
			if len(f) < 6 {
				t.Fatalf("blob %s holds a malformed line %q", name, line)
			}
			hosts[f[4]] = true
		}
		if len(hosts) != 1 {
			t.Errorf("blob %s holds lines of %d instances, want one", name, len(hosts))
		}
	}
}

// BenchmarkClaimsAtFleetSize reports, for fleets of 4, 16 and 32
// instances whose first flush of an hour coincides (three hours each),
// the failed creates per instance per hour boundary and the slowest such
// first flush (claim included), in ms.
func BenchmarkClaimsAtFleetSize(b *testing.B) {
	for _, n := range []int{4, 16, 32} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			var failed, slowest float64
			for range b.N {
				res := claimFleet(b, n, 3)
				failed += res.perBoundary()
				slowest = max(slowest, float64(res.slowest.Milliseconds()))
			}
			b.ReportMetric(failed/float64(b.N), "failed/instance/boundary")
			b.ReportMetric(slowest, "slowest-first-flush-ms")
		})
	}
}
