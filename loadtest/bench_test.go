package loadtest

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkRunLoopback measures the generator's own ceiling: closed loop
// against an in-process fasthttp server that reads each body and answers
// 202 without parsing, on the same cores. Run it alone:
//
//	go test -run '^$' -bench RunLoopback -benchtime 3000000x ./loadtest/
func BenchmarkRunLoopback(b *testing.B) {
	url := startServer(b, func(ctx *fasthttp.RequestCtx) {
		ctx.SetStatusCode(fasthttp.StatusAccepted)
	})
	for _, tc := range []struct {
		enc         string
		batch, conc int
	}{
		{"identity", 1000, 4},
		{"identity", 1000, 16},
		{"identity", 5000, 8},
		{"zstd", 1000, 8},
		{"gzip", 1000, 8},
	} {
		b.Run(fmt.Sprintf("%s/batch=%d/conc=%d", tc.enc, tc.batch, tc.conc), func(b *testing.B) {
			cfg := quickConfig(url)
			cfg.Encoding = tc.enc
			cfg.Batch = tc.batch
			cfg.Concurrency = tc.conc
			cfg.Events = int64(max(b.N, tc.batch))
			cfg.LoginsRatio = 0.1
			b.ReportAllocs()
			b.ResetTimer()
			rep, err := Run(context.Background(), cfg, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if rep.Errors > 0 {
				b.Fatalf("errors: %v", rep.Status)
			}
			b.SetBytes(rep.BytesRaw / max(1, rep.EventsSent))
			b.ReportMetric(rep.EventsPerSec, "events/s")
			b.ReportMetric(rep.MBPerSecRaw, "MB/s-raw")
			b.ReportMetric(rep.Latency.P99, "p99-ms")
		})
	}
}
