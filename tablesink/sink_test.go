package tablesink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/spf13/pflag"

	"ingest/intake/login"
	"ingest/internal/httperr"
)

func TestConfig(t *testing.T) {
	c := DefaultConfig()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--login-retention-days", "7", "--partitions", "64",
		"--login-flush-interval", "30s", "--login-flush-quiet", "0"}); err != nil {
		t.Fatal(err)
	}
	if c.RetentionDays != 7 || c.Shard.Partitions != 64 || c.FlushInterval != 30*time.Second || c.FlushQuiet != 0 || c.Validate() != nil {
		t.Fatalf("parsed %+v: %v", c, c.Validate())
	}
	for _, mod := range []func(*Config){
		func(c *Config) { c.RetentionDays = 0 },
		func(c *Config) { c.Parallel = 0 },
		func(c *Config) { c.Retries = 0 },
		func(c *Config) { c.FlushInterval = 0 },
		func(c *Config) { c.FlushQuiet = -time.Second },
		func(c *Config) { c.FlushQuiet = c.FlushInterval + 1 },
		func(c *Config) { c.Shard.Partitions = 0 },
	} {
		c := DefaultConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("Validate(%+v): want an error", c)
		}
	}
}

func TestTableNames(t *testing.T) {
	day := dayOf(day0.UnixNano())
	if got := tableName(TablePrefix, day); got != "logins20261121" {
		t.Fatalf("TableName = %q", got)
	}
	if got := TableFor(day0.Add(-12*time.Hour - 1).UnixNano()); got != "logins20261120" {
		t.Fatalf("TableFor just before midnight = %q", got)
	}
	if d, ok := parseTableName(TablePrefix, "logins20261121"); !ok || d != day {
		t.Fatalf("ParseTableName = %d, %v", d, ok)
	}
	for _, bad := range []string{"logins2026112", "logins20261321", "stats", "logins2026112x", "xogins20261121"} {
		if _, ok := parseTableName(TablePrefix, bad); ok {
			t.Errorf("parseTableName(%q) accepted", bad)
		}
	}
	if dayOf(-1) != -1 || tableName(TablePrefix, -1) != "logins19691231" {
		t.Fatal("days before 1970")
	}
}

// attempts builds records for user at the given times (ids "<prefix><i>").
func appendAttempts(t testing.TB, s *Sink, recs map[string][]byte, user string, times []time.Time, idPrefix string) {
	t.Helper()
	for i, ts := range times {
		a := login.Attempt{Time: ts.UnixNano(), User: []byte(user), ID: []byte(fmt.Sprintf("%s%04d", idPrefix, i)), IP: []byte("10.0.0.1"), HasSuccess: true, Success: i%2 == 0}
		key, out, err := s.AppendRecord(recs[""], &a)
		if err != nil {
			t.Fatal(err)
		}
		recs[key] = append(recs[key], out[len(recs[""]):]...)
	}
}

func flushAll(t testing.TB, s *Sink, recs map[string][]byte) {
	t.Helper()
	for key, data := range recs {
		if key == "" {
			continue
		}
		if err := s.Write(context.Background(), key, data); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFlushAndTail(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		cfg := DefaultConfig()
		cfg.Shard.HotRate = 20 // so that 500 attempts within a second are salted
		s := newTestSink(t, st, cfg)
		recs := map[string][]byte{}
		// Yesterday: 50 attempts, one a minute, then today 500 in one burst
		// (salted over every partition) and a quieter user.
		var yesterday, burst []time.Time
		for i := range 50 {
			yesterday = append(yesterday, day0.Add(-24*time.Hour+time.Duration(i)*time.Minute))
		}
		for i := range 500 {
			burst = append(burst, day0.Add(-time.Hour+time.Duration(i)*time.Millisecond))
		}
		appendAttempts(t, s, recs, "alice@example.com", yesterday, "y")
		appendAttempts(t, s, recs, "alice@example.com", burst, "b")
		appendAttempts(t, s, recs, "bob", burst[:3], "bob")
		if len(recs) != 2 {
			t.Fatalf("records for %d tables, want 2", len(recs))
		}
		flushAll(t, s, recs)

		got, err := s.Tail(context.Background(), "alice@example.com", 2, 520)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 520 {
			t.Fatalf("Tail returned %d attempts, want 520", len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i-1].Time < got[i].Time {
				t.Fatalf("attempt %d (%s) is older than attempt %d", i-1, time.Unix(0, got[i-1].Time).UTC(), i)
			}
		}
		if string(got[0].ID) != "b0499" || string(got[499].ID) != "b0000" || string(got[500].ID) != "y0049" || string(got[519].ID) != "y0030" {
			t.Fatalf("order: %s %s %s %s", got[0].ID, got[499].ID, got[500].ID, got[519].ID)
		}
		if string(got[0].User) != "alice@example.com" || !got[0].HasSuccess || string(got[0].IP) != "10.0.0.1" {
			t.Fatalf("fields: %+v", got[0])
		}
		// Limited to one day, and a small limit.
		if got, err := s.Tail(context.Background(), "alice@example.com", 1, 1000); err != nil || len(got) != 500 {
			t.Fatalf("one day: %d attempts, %v", len(got), err)
		}
		if got, err := s.Tail(context.Background(), "alice@example.com", 2, 3); err != nil || len(got) != 3 || string(got[2].ID) != "b0497" {
			t.Fatalf("limit 3: %d attempts, %v", len(got), err)
		}
		if got, err := s.Tail(context.Background(), "bob", 30, 100); err != nil || len(got) != 3 {
			t.Fatalf("bob: %d attempts, %v", len(got), err)
		}
		if got, err := s.Tail(context.Background(), "nobody", 30, 100); len(got) != 0 || err != nil {
			t.Fatalf("nobody: %d attempts, %v", len(got), err)
		}
	})
}

// TestTailReadsTomorrowFirst: attempts in tomorrow's table (a client's
// clock ahead) come before today's, and fill a small limit alone (today's
// table is read at the same time, its attempts left out).
func TestTailReadsTomorrowFirst(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		s := newTestSink(t, st, DefaultConfig())
		recs := map[string][]byte{}
		var today, ahead []time.Time
		for i := range 5 {
			today = append(today, day0.Add(time.Duration(i)*time.Minute))
			ahead = append(ahead, day0.Add(13*time.Hour+time.Duration(i)*time.Minute)) // tomorrow 01:00
		}
		appendAttempts(t, s, recs, "carol", today, "t")
		appendAttempts(t, s, recs, "carol", ahead[:3], "a")
		if len(recs) != 2 {
			t.Fatalf("records for %d tables, want today's and tomorrow's", len(recs))
		}
		flushAll(t, s, recs)
		var ids []string
		for _, limit := range []int{100, 4, 2} {
			got, err := s.Tail(context.Background(), "carol", 1, limit)
			if err != nil {
				t.Fatal(err)
			}
			ids = ids[:0]
			for _, a := range got {
				ids = append(ids, string(a.ID))
			}
			all := []string{"a0002", "a0001", "a0000", "t0004", "t0003", "t0002", "t0001", "t0000"}
			want := fmt.Sprint(all[:min(limit, len(all))])
			if fmt.Sprint(ids) != want {
				t.Fatalf("Tail(limit %d) = %v, want %s", limit, ids, want)
			}
		}
	})
}

func TestFlushReplayDuplicatesNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		s := newTestSink(t, st, DefaultConfig())
		recs := map[string][]byte{}
		var times []time.Time
		for i := range 250 {
			times = append(times, day0.Add(time.Duration(i)*time.Second))
		}
		appendAttempts(t, s, recs, "carol", times, "c")
		key := s.dayTable(dayOf(day0.UnixNano()))
		data := recs[key]
		twice := append(append([]byte{}, data...), data...) // a replay inside one flush
		for _, d := range [][]byte{data, data, twice} {
			if err := s.Write(context.Background(), key, d); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.Tail(context.Background(), "carol", 1, 1000); err != nil || len(got) != 250 {
			t.Fatalf("after replays: %d attempts, %v; want 250", len(got), err)
		}
	})
}

func TestFlushRetriesTransientErrors(t *testing.T) {
	for _, b := range backends[:1] {
		cs := newCounting(b.open(t))
		reg := prometheus.NewRegistry()
		s, err := New(DefaultConfig(), cs, reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.now = func() time.Time { return day0 }
		fastRetries(s)
		recs := map[string][]byte{}
		appendAttempts(t, s, recs, "dave", []time.Time{day0, day0.Add(time.Second)}, "d")
		key := tableName(TablePrefix, dayOf(day0.UnixNano()))

		busy := fmt.Errorf("503 ServerBusy: %w", ErrTransient)
		cs.failBatch = []error{busy, busy}
		if err := s.Write(context.Background(), key, recs[key]); err != nil {
			t.Fatalf("Flush with two transient errors: %v", err)
		}
		// Two transient errors, then a missing table (created), then success.
		if n := s.retryMetrics.Count("write_login_transaction"); n != 2 {
			t.Fatalf("transient retries %v, want 2", n)
		}
		if n := testutil.ToFloat64(s.m.created); n != 1 || cs.n("CreateTable") != 1 {
			t.Fatalf("tables created %v, CreateTable %d", n, cs.n("CreateTable"))
		}
		if testutil.ToFloat64(s.m.entities) != 2 {
			t.Fatalf("entities written %v", testutil.ToFloat64(s.m.entities))
		}

		// Too many transient errors: Flush fails, the caller retries later.
		cs.failBatch = []error{busy, busy, busy, busy, busy}
		err = s.Write(context.Background(), key, recs[key])
		if !isTransient(err) || !strings.Contains(err.Error(), "cannot flush 1 of 1 transactions") {
			t.Fatalf("Flush after 5 transient errors: %v", err)
		}
		// A permanent error is not retried.
		calls := cs.n("Batch")
		cs.failBatch = []error{errors.New("400 InvalidInput")}
		if err := s.Write(context.Background(), key, recs[key]); err == nil || cs.n("Batch") != calls+1 {
			t.Fatalf("permanent error: %v after %d tries", err, cs.n("Batch")-calls)
		}
		// Bad records are skipped and counted.
		if err := s.Write(context.Background(), key, []byte("not json\n{\"pk\":\"a/b\",\"rk\":\"x\"}\n")); err != nil {
			t.Fatal(err)
		}
		if n := testutil.ToFloat64(s.m.dropped.WithLabelValues("bad_record")); n != 2 {
			t.Fatalf("bad records counted %v", n)
		}
	}
}

func TestRetention(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		cs := newCounting(st)
		s := newTestSink(t, cs, DefaultConfig())
		ctx := context.Background()
		today := dayOf(day0.UnixNano())
		for _, d := range []int64{-90, -61, -60, -1, 0} {
			if err := st.CreateTable(ctx, tableName(s.prefix, today+d)); err != nil {
				t.Fatal(err)
			}
		}
		// 1,000 entities in the oldest table.
		old := tableName(s.prefix, today-90)
		for b := range 10 {
			var ents []Entity
			for i := range 100 {
				ents = append(ents, Entity{PartitionKey: fmt.Sprint("p", b), RowKey: fmt.Sprint(i), Props: map[string]any{"A": "x"}})
			}
			if err := st.Batch(ctx, old, ents); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.CreateTable(ctx, s.prefix+"x"); err != nil { // not a day table: left alone
			t.Fatal(err)
		}

		if dry, err := s.Maintain(ctx, true); err != nil || len(dry) != 2 || cs.n("DeleteTable") != 0 {
			t.Fatalf("dry run: %v, %v, %d deletes", dry, err, cs.n("DeleteTable"))
		}
		deleted, err := s.Maintain(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{old, tableName(s.prefix, today-61)}; fmt.Sprint(deleted) != fmt.Sprint(want) {
			t.Fatalf("deleted %v, want %v", deleted, want)
		}
		if n := cs.n("DeleteTable"); n != 2 {
			t.Fatalf("%d DeleteTable calls for 2 tables (one holding 1,000 entities), want exactly 2", n)
		}
		names, err := st.ListTables(ctx, s.prefix)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{tableName(s.prefix, today-60), tableName(s.prefix, today-1), tableName(s.prefix, today), tableName(s.prefix, today+1), s.prefix + "x"}
		if fmt.Sprint(names) != fmt.Sprint(want) {
			t.Fatalf("tables left %v, want %v (tomorrow's created ahead)", names, want)
		}

		// A past-retention table is never created again: not by Flush...
		expired := tableName(s.prefix, today-61)
		rec := fmt.Appendf(nil, `{"pk":"0000_u","rk":"%s","t":%d,"u":"u"}`+"\n", strings.Repeat("1", 19)+"_x", day0.AddDate(0, 0, -61).UnixNano())
		creates := cs.n("CreateTable")
		if err := s.Write(ctx, expired, rec); err != nil {
			t.Fatal(err)
		}
		if err := s.createTable(ctx, expired); err == nil || !strings.Contains(err.Error(), "never reused") {
			t.Fatalf("createTable of an expired day: %v", err)
		}
		if cs.n("CreateTable") != creates || cs.n("Batch") != 0 {
			t.Fatalf("an expired table was written: %d creates, %d batches", cs.n("CreateTable")-creates, cs.n("Batch"))
		}
		if names, err := st.ListTables(ctx, expired); err != nil || len(names) != 0 {
			t.Fatalf("expired table recreated: %v, %v", names, err)
		}
		// ...and the clock moving on makes today-60 expire at the next run.
		s.now = func() time.Time { return day0.Add(24 * time.Hour) }
		if deleted, err := s.Maintain(ctx, false); err != nil || len(deleted) != 1 || deleted[0] != tableName(s.prefix, today-60) {
			t.Fatalf("next day: %v, %v", deleted, err)
		}
	})
}

func TestRunMaintainsAtStart(t *testing.T) {
	s := newTestSink(t, backends[0].open(t), DefaultConfig())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx, time.Hour); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		names, _ := s.store.ListTables(ctx, s.prefix)
		if len(names) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run did not create today's and tomorrow's tables: %v", names)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// rejectingStore refuses, as the service does with HTTP 400, every
// transaction holding an entity whose RowKey contains bad.
type rejectingStore struct {
	Store
	bad string
}

func (r *rejectingStore) Batch(ctx context.Context, table string, ents []Entity) error {
	for _, e := range ents {
		if strings.Contains(e.RowKey, r.bad) {
			return fmt.Errorf("400 InvalidInput: %w", errRejected)
		}
	}
	return r.Store.Batch(ctx, table, ents)
}

// TestRejectedEntityIsIsolated: one entity the service will never take does
// not hold up, nor take down, the others of its transaction.
func TestRejectedEntityIsIsolated(t *testing.T) {
	st := &rejectingStore{Store: backends[0].open(t), bad: "poison"}
	s, err := New(DefaultConfig(), st, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return day0 }
	recs := map[string][]byte{}
	times := []time.Time{day0, day0.Add(time.Second), day0.Add(2 * time.Second)}
	appendAttempts(t, s, recs, "erin", times, "ok")
	appendAttempts(t, s, recs, "erin", times[:1], "poison")
	key := tableName(TablePrefix, dayOf(day0.UnixNano()))
	if err := s.Write(context.Background(), key, recs[key]); err != nil {
		t.Fatalf("Flush with one rejected entity: %v", err)
	}
	got, err := s.Tail(context.Background(), "erin", 1, 100)
	if err != nil || len(got) != 3 {
		t.Fatalf("Tail = %d attempts, %v; want the 3 good ones", len(got), err)
	}
	if n := testutil.ToFloat64(s.m.dropped.WithLabelValues("rejected")); n != 1 {
		t.Fatalf("rejected entities counted %v, want 1", n)
	}
}

// panickingQueries panics on a query of one table, like a bug reached by
// what that table holds.
type panickingQueries struct {
	Store
	table string
}

func (p panickingQueries) Query(ctx context.Context, table, pk, rowFrom, rowTo string, top int) ([]Entity, error) {
	if table == p.table {
		panic("bug reached by a row")
	}
	return p.Store.Query(ctx, table, pk, rowFrom, rowTo, top)
}

// TestTailPanic: a panic while reading a user's attempts, in the caller's
// goroutine (yesterday's table) or in the one reading today's table, is
// returned as an error; the process goes on.
func TestTailPanic(t *testing.T) {
	st := backends[0].open(t)
	s := newTestSink(t, st, DefaultConfig())
	recs := map[string][]byte{}
	appendAttempts(t, s, recs, "carol", []time.Time{day0, day0.Add(-24 * time.Hour)}, "c")
	flushAll(t, s, recs)
	for _, d := range []int64{-1, 0} { // yesterday, today
		s.store = panickingQueries{st, tableName(s.prefix, dayOf(day0.UnixNano())+d)}
		_, err := s.Tail(context.Background(), "carol", 2, 10)
		if e, ok := httperr.PanicOf(err); !ok || e.Value != "bug reached by a row" {
			t.Fatalf("day %+d: err %v, want the recovered panic", d, err)
		}
	}
}
