package tablesink

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"ingest/intake/login"
	"ingest/internal/benchcpu"
)

// nullStore stands for a table service that is never called.
type nullStore struct{ Store }

// sinkJSON keeps the benchmark's encodings alive.
var sinkJSON []byte

// BenchmarkBuildFlush is the CPU a login flush spends on its own, without
// the table service: 60,000 attempts of 100,000 users (Zipf 1.1), as one
// flush gets them, parsed into entities (before the first request goes
// out), grouped into transactions, then each transaction checked and its
// entities' JSON made for the request, as AzureStore.Batch does.
func BenchmarkBuildFlush(b *testing.B) {
	const n = 60000
	s := newTestSink(b, nullStore{}, DefaultConfig())
	key, data := zipfRecords(b, s, n)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		ents, _ := s.parseRecords(key, data)
		for _, txn := range buildBatches(s.withSaltedMarkers(ents)) {
			if err := checkBatch(txn); err != nil {
				b.Fatal(err)
			}
			for i := range txn {
				sinkJSON = entityJSON(&txn[i])
			}
		}
	}
	benchcpu.Report(b, cpu, n, "attempt")
}

// zipfRecords returns the records of n attempts of 100,000 users (Zipf
// 1.1, as the load generator draws them, 12,500 a second) and their key.
func zipfRecords(tb testing.TB, s *Sink, n int) (string, []byte) {
	tb.Helper()
	var data []byte
	var key string
	eachZipfAttempt(s, n, func(int) string { return "Mozilla/5.0 (X11; Linux x86_64)" }, func(_ int, a *login.Attempt) {
		var err error
		key, data, err = s.AppendRecord(data, a)
		if err != nil {
			tb.Fatal(err)
		}
	})
	return key, data
}

// eachZipfAttempt calls fn with n login attempts of 100,000 users (Zipf
// 1.1, 12,500 a second from day0, user agents from ua), the sink's clock
// set to each one's time.
func eachZipfAttempt(s *Sink, n int, ua func(i int) string, fn func(i int, a *login.Attempt)) {
	now := day0
	s.now = func() time.Time { return now }
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, 99999)
	for i := range n {
		now = day0.Add(time.Duration(i) * 80 * time.Microsecond)
		rank := zipf.Uint64()
		a := login.Attempt{Time: now.UnixNano(), User: fmt.Appendf(nil, "user%d@example.com", rank),
			ID: fmt.Appendf(nil, "01JDQ8%020d", i), IP: fmt.Appendf(nil, "203.0.%d.%d", rank>>8&255, rank&255),
			UA: []byte(ua(i)), HasSuccess: true, Success: i%13 != 0,
			Props: []byte(`{"method":"password"}`)}
		fn(i, &a)
	}
}

// BenchmarkParseRecords is the parse alone, the part of a flush before
// its first request.
func BenchmarkParseRecords(b *testing.B) {
	const n = 60000
	s := newTestSink(b, nullStore{}, DefaultConfig())
	key, data := zipfRecords(b, s, n)
	b.SetBytes(int64(len(data)))
	cpu := benchcpu.Start()
	for b.Loop() {
		s.parseRecords(key, data)
	}
	benchcpu.Report(b, cpu, n, "attempt")
}
