package httpapi

import (
	"fmt"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/buffer"
)

// ndjsonBody is n events of about 200 bytes of one service and hour.
func ndjsonBody(n int) []byte {
	var body []byte
	for i := range n {
		body = fmt.Appendf(body, `{"ts":"2026-11-21T16:04:05.%03dZ","service":"checkout","host":"web-17","level":"info","msg":"user u%d paid order %d with card ending 4242 in 87 ms","user":"u%d","status":200,"path":"/api/pay"}`+"\n", i%1000, i, i*7, i)
	}
	return body
}

// esBulkBody is n create actions and their documents, as Filebeat sends
// them.
func esBulkBody(n int) []byte {
	var body []byte
	for i := range n {
		body = fmt.Appendf(body, `{"create":{"_index":"logs-checkout"}}`+"\n"+
			`{"@timestamp":"2026-11-21T16:04:05.%03dZ","service":{"name":"checkout"},"host":{"name":"web-17"},"log":{"level":"info"},"message":"user u%d paid order %d","user":"u%d"}`+"\n", i%1000, i, i*7, i)
	}
	return body
}

// lokiLines is n log lines for one Loki stream.
func lokiLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("user u%d paid order %d with card ending 4242 in 87 ms", i, i*7)
	}
	return lines
}

// TestIngestPathAllocsPerEvent guards the steady state of the whole request
// path (read the body, parse, encode lines, group, add to the buffer and
// the write-ahead log, answer) of /v1/logs and of the shippers' protocols:
// a request allocates a few objects of its own, never one per event. A
// request of 1,000 events must allocate no more than one of 10 events;
// one allocation per event would add 990.
func TestIngestPathAllocsPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	at := time.Date(2026, 11, 21, 16, 4, 5, 0, time.UTC)
	for _, p := range []struct {
		name, uri, contentType string
		status                 int
		body                   func(n int) []byte
	}{
		{"ndjson", "/v1/logs", "application/x-ndjson", 202, ndjsonBody},
		{"es_bulk", "/v1/es/_bulk", "application/x-ndjson", 200, esBulkBody},
		{"loki_protobuf", "/loki/api/v1/push", "application/x-protobuf", 204, func(n int) []byte {
			return lokiProto(`{service_name="checkout", host="web-17", level="info"}`, at, lokiLines(n)...)
		}},
	} {
		for _, ack := range []buffer.AckMode{buffer.AckMemory, buffer.AckWAL} {
			t.Run(p.name+"/"+string(ack), func(t *testing.T) {
				// No flush while measuring: flush workers allocate on their own
				// goroutines, and the counts are process-wide.
				bcfg := buffer.Config{Ack: ack, FlushInterval: time.Hour, FlushBytes: 64 << 20, BufferBytes: 1 << 30, FlushWorkers: 1, BudgetWait: time.Second}
				f := newFixture(t, Config{}, bcfg)
				var ctx fasthttp.RequestCtx
				post := func(body []byte) func() {
					return func() {
						ctx.Request.Reset()
						ctx.Response.Reset()
						ctx.Request.Header.SetMethod("POST")
						ctx.Request.SetRequestURI(p.uri)
						ctx.Request.Header.SetContentType(p.contentType)
						ctx.Request.SetBody(body)
						f.srv.handle(&ctx)
						if ctx.Response.StatusCode() != p.status {
							t.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
						}
					}
				}
				small, large := post(p.body(10)), post(p.body(1000))
				for range 5 { // warm up pools and scratch buffers
					large()
					small()
				}
				perSmall := testing.AllocsPerRun(20, small)
				perLarge := testing.AllocsPerRun(20, large)
				t.Logf("%s, --ack %s: %.0f allocations per request of 10 events, %.0f per request of 1,000", p.name, ack, perSmall, perLarge)
				// The slack covers a key's chunk growing now and then (amortized
				// over many requests), not a per-event cost.
				if perLarge > perSmall+3 {
					t.Fatalf("a request of 1,000 events allocates %.0f times, one of 10 events %.0f: the path allocates per event", perLarge, perSmall)
				}
			})
		}
	}
}

// BenchmarkIngestPathServices is BenchmarkIngestPath with the events of a
// request spread over 8 services, one after another, the way the load
// generator sends them: the per-event cost of finding the event's group.
func BenchmarkIngestPathServices(b *testing.B) { benchIngestPath(b, 8) }
