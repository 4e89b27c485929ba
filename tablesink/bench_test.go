package tablesink

import (
	"context"
	"fmt"
	"testing"
	"time"

	"ingest/intake/login"
)

// benchRecords builds n attempts of today: "spread" over n/5 users (five
// each, so most transactions are small), or "hot": one user within one
// second, salted over every partition (full 100-entity transactions).
func benchRecords(b *testing.B, s *Sink, kind string, n int) (string, []byte) {
	var data []byte
	var key string
	for i := range n {
		user := fmt.Sprintf("user%05d@example.com", i%(n/5))
		if kind == "hot" {
			user = "victim@example.com"
		}
		a := login.Attempt{Time: day0.Add(time.Duration(i) * 50 * time.Microsecond).UnixNano(), User: []byte(user),
			ID: fmt.Appendf(nil, "id%07d", i), IP: []byte("203.0.113.7"), UA: []byte("Mozilla/5.0 (X11; Linux x86_64)"),
			HasSuccess: true, Props: []byte(`{"country":"fr","method":"password"}`)}
		var err error
		key, data, err = s.AppendRecord(data, &a)
		if err != nil {
			b.Fatal(err)
		}
	}
	return key, data
}

// BenchmarkFlush reports entities/s committed into each backend. Every
// iteration upserts the same records again (idempotent replays).
func BenchmarkFlush(b *testing.B) {
	for _, be := range backends {
		for _, kind := range []string{"spread", "hot"} {
			b.Run(be.name+"/"+kind, func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.Shard.HotRate = 100
				s := newTestSink(b, be.open(b), cfg)
				now := day0
				s.now = func() time.Time { now = now.Add(50 * time.Microsecond); return now }
				const n = 10000
				key, data := benchRecords(b, s, kind, n)
				s.now = func() time.Time { return day0 }
				if err := s.Write(context.Background(), key, data); err != nil { // creates the table
					b.Fatal(err)
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := s.Write(context.Background(), key, data); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "entities/s")
				b.ReportMetric(float64(n)/float64(len(buildBatches(s.parseRecordsOnly(key, data)))), "entities/txn")
			})
		}
	}
}

func (s *Sink) parseRecordsOnly(key string, data []byte) []Entity {
	ents, _ := s.parseRecords(key, data)
	return ents
}
