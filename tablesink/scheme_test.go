package tablesink

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"ingest/blobsink"
	"ingest/intake/login"
	"ingest/shard"
)

// writeLegacyTable writes attempts of user at times the way the first
// version did: a table created without a scheme marker, PartitionKey bucket
// "_" user (salted "~NN" for salt >= 0), RowKey inverted ticks "_" id, one
// transaction per partition.
func writeLegacyTable(t *testing.T, s *Sink, table, user string, salt int, times []time.Time, idPrefix string) {
	t.Helper()
	ctx := context.Background()
	if err := s.store.CreateTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	pk := string(s.keyer.AppendLegacyKey(nil, []byte(user), salt))
	var ents []Entity
	for i, ts := range times {
		id := fmt.Sprintf("%s%04d", idPrefix, i)
		ents = append(ents, Entity{PartitionKey: pk, RowKey: string(shard.LegacyRowKey(nil, ts.UnixNano(), []byte(id))),
			Props: map[string]any{"User": user, "Time": ts.UTC(), "ID": id, "IP": "10.0.0.1", "Success": false}})
	}
	for len(ents) > 0 {
		n := min(len(ents), maxBatchEntities)
		if err := s.store.Batch(ctx, table, ents[:n]); err != nil {
			t.Fatal(err)
		}
		ents = ents[n:]
	}
}

// TestLegacyTablesStayReadable: after an upgrade, attempts in tables of the
// first key scheme (and in the table being written at the upgrade, which
// then holds both) are still read, newest first, next to the new ones.
func TestLegacyTablesStayReadable(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		s := newTestSink(t, st, DefaultConfig())
		yesterday := tableName(s.prefix, dayOf(day0.UnixNano())-1)
		today := tableName(s.prefix, dayOf(day0.UnixNano()))
		var oldTimes, upgradeTimes, newTimes []time.Time
		for i := range 30 {
			oldTimes = append(oldTimes, day0.Add(-24*time.Hour+time.Duration(i)*time.Minute))
			upgradeTimes = append(upgradeTimes, day0.Add(-time.Hour+time.Duration(i)*time.Second))
			newTimes = append(newTimes, day0.Add(time.Duration(i)*time.Second))
		}
		writeLegacyTable(t, s, yesterday, "alice", -1, oldTimes[:20], "old")
		writeLegacyTable(t, s, yesterday, "alice", 3, oldTimes[20:], "oldsalted")
		writeLegacyTable(t, s, today, "alice", -1, upgradeTimes, "upgrade")
		// A record of the first version replayed from the write-ahead log
		// after the upgrade lands under the new keys.
		legacyRecord := fmt.Sprintf(`{"pk":%q,"rk":%q,"t":%d,"u":"alice","id":"replayed"}`+"\n",
			s.keyer.AppendLegacyKey(nil, []byte("alice"), -1), shard.LegacyRowKey(nil, day0.Add(-30*time.Minute).UnixNano(), []byte("replayed")),
			day0.Add(-30*time.Minute).UnixNano())
		recs := map[string][]byte{today: []byte(legacyRecord)}
		appendAttempts(t, s, recs, "alice", newTimes, "new")
		flushAll(t, s, recs)
		// Tomorrow's table, created by this version, holds only new keys.
		if err := s.ensureDayTable(context.Background(), tableName(s.prefix, dayOf(day0.UnixNano())+1)); err != nil {
			t.Fatal(err)
		}
		for table, want := range map[string]tableScheme{yesterday: schemeMixed, today: schemeMixed, tableName(s.prefix, dayOf(day0.UnixNano())+1): schemeBucketed} {
			if got, err := s.scheme(context.Background(), table); err != nil || got != want {
				t.Errorf("scheme of %s = %v, %v; want %v", table, got, err, want)
			}
		}

		got, err := s.Tail(context.Background(), "alice", 3, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 30+30+30+1 {
			t.Fatalf("Tail = %d attempts, want 91", len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i-1].Time < got[i].Time {
				t.Fatalf("not newest first at %d: %s then %s", i, got[i-1].ID, got[i].ID)
			}
		}
		if string(got[0].ID) != "new0029" || string(got[30].ID) != "replayed" || string(got[31].ID) != "upgrade0029" || string(got[90].ID) != "old0000" {
			t.Fatalf("order: %s %s %s %s", got[0].ID, got[30].ID, got[31].ID, got[90].ID)
		}
		// A limit cuts across both schemes.
		if got, _ := s.Tail(context.Background(), "alice", 3, 35); len(got) != 35 || string(got[34].ID) != "upgrade0026" {
			t.Fatalf("Tail limit 35: %d, last %s", len(got), got[len(got)-1].ID)
		}
	})
}

// TestSaltedUserRead: a hot user's attempts spread over many buckets are all
// read back, while a cold user costs one range query per day table.
func TestSaltedUserRead(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		cs := newCounting(st)
		cfg := DefaultConfig()
		cfg.Shard.HotRate = 50
		s := newTestSink(t, cs, cfg)
		now := day0
		s.now = func() time.Time { return now }
		recs := map[string][]byte{}
		var hot []time.Time
		for i := range 1500 {
			hot = append(hot, day0.Add(time.Duration(i)*time.Millisecond))
		}
		appendAttempts(t, s, recs, "victim", hot, "v")
		appendAttempts(t, s, recs, "bob", hot[:5], "b")
		flushAll(t, s, recs)

		got, err := s.Tail(context.Background(), "victim", 1, 10000)
		if err != nil || len(got) != 1500 {
			t.Fatalf("hot user: Tail = %d, %v; want 1500", len(got), err)
		}
		if string(got[0].ID) != "v1499" || string(got[1499].ID) != "v0000" {
			t.Fatalf("hot user order: %s ... %s", got[0].ID, got[1499].ID)
		}
		if got, _ := s.Tail(context.Background(), "victim", 1, 20); len(got) != 20 || string(got[19].ID) != "v1480" {
			t.Fatalf("hot user latest 20: %d, last %s", len(got), got[len(got)-1].ID)
		}
		before := cs.n("Query")
		got, err = s.Tail(context.Background(), "bob", 1, 100)
		if err != nil || len(got) != 5 {
			t.Fatalf("cold user: Tail = %d, %v", len(got), err)
		}
		if n := cs.n("Query") - before; n != 1 {
			t.Fatalf("cold user read with %d queries, want 1", n)
		}
	})
}

// TestFlushFillsTransactions: many users' attempts share the 256 buckets,
// so transactions carry tens of entities, not one or two. (Batching does
// not depend on the store; the Azurite figures are in the bench.)
func TestFlushFillsTransactions(t *testing.T) {
	func(t *testing.T, st Store) {
		reg := prometheus.NewRegistry()
		s, err := New(DefaultConfig(), st, reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.prefix = uniqueName("t") + "logins"
		s.now = func() time.Time { return day0 }
		if _, err := s.Maintain(context.Background(), false); err != nil { // tables exist ahead of their day
			t.Fatal(err)
		}
		recs := map[string][]byte{}
		const n = 25000
		for i := range n {
			a := login.Attempt{Time: day0.Add(time.Duration(i) * time.Millisecond).UnixNano(), User: fmt.Appendf(nil, "user%d@example.com", i%10000), ID: fmt.Appendf(nil, "%d", i)}
			key, out, err := s.AppendRecord(recs[""], &a)
			if err != nil {
				t.Fatal(err)
			}
			recs[key] = append(recs[key], out...)
		}
		flushAll(t, s, recs)
		// The fewest transactions possible: per bucket, ceil(attempts/100).
		perBucket := map[string]int{}
		for _, e := range s.parseRecordsOnly("", recs[tableName(s.prefix, dayOf(day0.UnixNano()))]) {
			perBucket[e.PartitionKey]++
		}
		fewest := 0
		for _, c := range perBucket {
			fewest += (c + maxBatchEntities - 1) / maxBatchEntities
		}
		if got := testutil.ToFloat64(s.m.transactions); got != float64(fewest) {
			t.Errorf("%v transactions, want the fewest possible, %d", got, fewest)
		}
		entities, requests := testutil.ToFloat64(s.m.entities), testutil.ToFloat64(s.m.requests)
		t.Logf("%v entities in %v write requests: %.1f per 1,000 attempts", entities, requests, requests/entities*1000)
		if entities != n || requests/entities*1000 > 15 {
			t.Fatalf("%v entities in %v requests: over 15 requests per 1,000 attempts", entities, requests)
		}
	}(t, backends[0].open(t))
}

// TestThrottlingBacksOff: ServerBusy is waited out beyond
// --login-flush-retries, with growing backoff.
func TestThrottlingBacksOff(t *testing.T) {
	cs := newCounting(backends[0].open(t))
	s := newTestSink(t, cs, DefaultConfig())
	recs := map[string][]byte{}
	appendAttempts(t, s, recs, "dave", []time.Time{day0}, "d")
	busy := fmt.Errorf("503 ServerBusy: %w: %w", errThrottled, ErrTransient)
	cs.failBatch = []error{busy, busy, busy, busy, busy, busy, busy, busy}
	flushAll(t, s, recs)
	if n := s.retryMetrics.Count("write_login_transaction_throttled"); n != 8 {
		t.Fatalf("throttled retries %v, want 8", n)
	}
	if d := defaultThrottleBackoff(t, 8); d < 5*time.Second {
		t.Fatalf("backoff cap after 8 throttled tries is %v: not backing off", d)
	}
	cs.failBatch = make([]error, maxThrottledTries)
	for i := range cs.failBatch {
		cs.failBatch[i] = busy
	}
	if err := s.Write(context.Background(), tableName(s.prefix, dayOf(day0.UnixNano())), recs[tableName(s.prefix, dayOf(day0.UnixNano()))]); err == nil {
		t.Fatal("Flush succeeded through endless throttling: want an error for the buffer to retry later")
	}
}

// defaultThrottleBackoff is the throttle backoff bound of try n with the defaults.
func defaultThrottleBackoff(t *testing.T, n int) time.Duration {
	s, err := New(DefaultConfig(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.throttleRetry.Backoff(n)
}

// TestDeadLetters: what the service refuses on its own goes to a
// dead-letter blob with the reason; the flush moves on.
func TestDeadLetters(t *testing.T) {
	st := &rejectingStore{Store: backends[0].open(t), bad: "poison"}
	blobs, err := blobsink.NewFileStore(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	s := newTestSink(t, st, DefaultConfig())
	s.SetDeadLetters(blobs)
	recs := map[string][]byte{}
	times := []time.Time{day0, day0.Add(time.Second), day0.Add(2 * time.Second)}
	appendAttempts(t, s, recs, "erin", times, "ok")
	appendAttempts(t, s, recs, "erin", times[:1], "poison")
	key := tableName(s.prefix, dayOf(day0.UnixNano()))
	recs[key] = append(recs[key], "not a record\n"...)
	for range 2 {
		if err := s.Write(context.Background(), key, recs[key]); err != nil {
			t.Fatalf("Flush with one rejected entity: %v", err)
		}
	}
	if got, err := s.Tail(context.Background(), "erin", 1, 100); err != nil || len(got) != 3 {
		t.Fatalf("Tail = %d attempts, %v; want the 3 good ones", len(got), err)
	}
	if n := testutil.ToFloat64(s.m.deadLetters.WithLabelValues("rejected")); n != 2 {
		t.Fatalf("rejected dead letters %v, want 2 (one per flush)", n)
	}
	if n := testutil.ToFloat64(s.m.deadLetters.WithLabelValues("bad_record")); n != 2 {
		t.Fatalf("bad_record dead letters %v, want 2", n)
	}
	var names []string
	blobs.List(context.Background(), deadLetterPrefix+"/", func(b blobsink.BlobInfo) error { names = append(names, b.Name); return nil })
	if len(names) != 4 {
		t.Fatalf("dead-letter blobs %v, want 4 (two per flush)", names)
	}
	r, err := blobs.Open(context.Background(), "_deadletter/logins/2026/11/21/1200/000002.log")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r)
	r.Close()
	if !strings.Contains(string(body), `"reason":"rejected"`) || !strings.Contains(string(body), "poison0000") || !strings.Contains(string(body), "InvalidInput") {
		t.Fatalf("dead letter: %s", body)
	}
}
