package buffer

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkAddManyKeys adds 1,000-event batches spread over 8 keys (services
// of one hour) with --ack memory and a short --flush-interval, so chunks
// are flushed before they are full: the shape of a server under load from
// several services, where a key's next chunk starts after a flush.
func BenchmarkAddManyKeys(b *testing.B) {
	cfg := testConfig(AckMemory)
	cfg.BufferBytes = 512 << 20
	cfg.FlushBytes = 4 << 20
	cfg.FlushInterval = 20 * time.Millisecond
	buf, err := Open(context.Background(), cfg, b.TempDir(), streamsOf(discardSink{}), nil, quiet)
	if err != nil {
		b.Fatal(err)
	}
	line := []byte(`1.0;2026-11-21T18:04:05.1234567Z;info;checkout;web-17;01JDQ8ZK3M9X2V7B4N6P8R0T2W;"user 123 paid order 456 with card ending 4242 in 87 ms";{"user":"u123","status":200,"path":"/api/pay"}` + "\n")
	var keys [8][]byte
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "svc%d/2026/11/21/1800", i)
	}
	const events = 1000
	b.SetBytes(int64(len(line) * events))
	b.ReportAllocs()
	var batch Batch
	for b.Loop() {
		batch.Reset(1 << 30)
		for i := range events {
			g := batch.Group(0, keys[i%len(keys)])
			g.Data = append(g.Data, line...)
			g.Events++
		}
		if err := buf.Add(context.Background(), &batch); err != nil {
			b.Fatal(err)
		}
	}
	buf.Close(context.Background())
}
