package tablesink

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	bolt "go.etcd.io/bbolt"

	"ingest/intake/login"
)

// writeZipfAttempts writes n login attempts of 100,000 users (Zipf 1.1, as
// the load generator draws them, 12,500 a second) through s, flushing
// every flushBytes of records, and returns the day table's name.
func writeZipfAttempts(tb testing.TB, s *Sink, n, flushBytes int) string {
	tb.Helper()
	uas := []string{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36", "okhttp/4.12.0", "curl/8.11.0"}
	var data []byte
	var key string
	eachZipfAttempt(s, n, func(i int) string { return uas[i%len(uas)] }, func(i int, a *login.Attempt) {
		var err error
		key, data, err = s.AppendRecord(data, a)
		if err != nil {
			tb.Fatal(err)
		}
		if len(data) >= flushBytes || i == n-1 {
			if err := s.Write(context.Background(), key, data); err != nil {
				tb.Fatal(err)
			}
			data = data[:0]
		}
	})
	return key
}

// leafStats returns the bytes of entities in table's leaf pages and the
// bytes of those pages.
func leafStats(tb testing.TB, st *BoltStore, table string) (inuse, alloc int) {
	tb.Helper()
	err := st.db.View(func(tx *bolt.Tx) error {
		stats := tx.Bucket(bucketName(table)).Stats()
		inuse, alloc = stats.LeafInuse, stats.LeafAlloc+stats.BranchAlloc
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return inuse, alloc
}

// TestBoltLoginPagesFill: login attempts, which land anywhere in their
// bucket, leave the table's pages mostly full (half full with bolt's
// default split).
func TestBoltLoginPagesFill(t *testing.T) {
	st, err := OpenBolt(filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := newTestSink(t, st, DefaultConfig())
	table := writeZipfAttempts(t, s, 20000, 2<<20)
	inuse, alloc := leafStats(t, st, table)
	if fill := float64(inuse) / float64(alloc); fill < 0.7 {
		t.Fatalf("the login table's pages are %.0f%% full, want at least 70%%", fill*100)
	}
}

// BenchmarkBoltDisk writes login attempts through the sink into the
// embedded store in --login-flush-bytes flushes and reports the database
// file's bytes per attempt, the table's (its pages), the entities' and how
// full the pages are, and the transactions per 1,000 attempts a table
// service would get for such full flushes. LOGIN_DISK_ATTEMPTS sets the attempts per iteration
// (default 200,000).
//
//	LOGIN_DISK_ATTEMPTS=1000000 go test ./tablesink -run X -bench BoltDisk -benchtime 1x
func BenchmarkBoltDisk(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("LOGIN_DISK_ATTEMPTS")); err == nil && v > 0 {
		n = v
	}
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "tables.db")
		st, err := OpenBolt(path)
		if err != nil {
			b.Fatal(err)
		}
		cfg := DefaultConfig()
		s := newTestSink(b, st, cfg)
		// The day's table exists ahead of its day (Run), as in service.
		if err := st.CreateTable(context.Background(), tableName(s.prefix, dayOf(day0.UnixNano()))); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		table := writeZipfAttempts(b, s, n, int(cfg.FlushBytes))
		elapsed := time.Since(start)
		inuse, alloc := leafStats(b, st, table)
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fi.Size())/float64(n), "file-bytes/attempt")
		b.ReportMetric(float64(alloc)/float64(n), "table-bytes/attempt")
		b.ReportMetric(float64(inuse)/float64(n), "entity-bytes/attempt")
		b.ReportMetric(float64(inuse)/float64(alloc), "page-fill")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "attempts/s")
		b.ReportMetric(1000*testutil.ToFloat64(s.m.requests)/float64(n), "requests/1000-attempts")
	}
}
