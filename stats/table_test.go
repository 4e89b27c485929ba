package stats

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"ingest/internal/azurite"
	"ingest/logline"
	"ingest/storage"
	"ingest/tablesink"
)

func TestMain(m *testing.M) { os.Exit(azurite.RunMain(m)) }

// forEachStore runs fn against the embedded and the Azure table store.
func forEachStore(t *testing.T, fn func(t *testing.T, st tablesink.Store)) {
	t.Run("bolt", func(t *testing.T) {
		s, err := tablesink.OpenBolt(filepath.Join(t.TempDir(), "tables.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
	t.Run("azure", func(t *testing.T) {
		svc, err := (&storage.Config{ConnString: azurite.ConnString(t)}).TableClient()
		if err != nil {
			t.Fatal(err)
		}
		fn(t, tablesink.NewAzureStore(svc))
	})
}

var nameSeq atomic.Int64

// uniqueService is a service no other test uses on the shared Azurite.
func uniqueService(prefix string) string {
	return fmt.Sprintf("%s%d-%d", prefix, nameSeq.Add(1), os.Getpid())
}

var day0 = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

// held is a Summary of events per level, in the order given: level,
// count, level, count...
func held(pairs ...any) logline.Summary {
	var s logline.Summary
	for i := 0; i < len(pairs); i += 2 {
		for range pairs[i+1].(int) {
			s.Add(day0.UnixNano(), pairs[i].(logline.Level))
		}
	}
	return s
}

func newTable(t *testing.T, st Store, instance string) *Table {
	t.Helper()
	tb, err := New(st, Config{Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestCountIsPerBlobAndIdempotent: a blob's entity holds what it was last
// told (a repeated Count changes nothing), blobs of every instance and the
// per-instance layout of earlier versions add up, and days and services
// stay apart.
func TestCountIsPerBlobAndIdempotent(t *testing.T) {
	forEachStore(t, func(t *testing.T, st tablesink.Store) {
		ctx := context.Background()
		svc := uniqueService("svc")
		a, b := newTable(t, st, "web-1"), newTable(t, st, "web/2")
		key16 := svc + "/2026/11/21/1600"
		count := func(tb *Table, key, blob string, h logline.Summary) {
			t.Helper()
			if err := tb.Count(ctx, key, key+"/"+blob, h); err != nil {
				t.Fatal(err)
			}
		}
		count(a, key16, "000001.log", held(logline.LevelInfo, 3))
		count(a, key16, "000001.log", held(logline.LevelInfo, 10, logline.LevelError, 2)) // the blob grew
		count(a, key16, "000001.log", held(logline.LevelInfo, 10, logline.LevelError, 2)) // a replay
		count(b, key16, "000042.log.zst", held(logline.LevelInfo, 5))
		count(b, svc+"/2026/11/21/0700", "000001.log", held(logline.LevelFatal, 4))
		count(a, svc+"/2026/11/21/2300", "000003.log", held(logline.LevelNone, 1))
		count(b, svc+"/2026/11/22/0000", "000001.log", held(logline.LevelWarn, 4)) // the next day
		count(a, svc+"-other/2026/11/21/0500", "000001.log", held(logline.LevelInfo, 100))
		// An entity of the per-instance layout adds up the same way.
		if err := st.Batch(ctx, TableName, []tablesink.Entity{{PartitionKey: partitionKey(svc, day0), RowKey: "old-instance",
			Props: map[string]any{"H16": int64(7), "H16_debug": int64(7)}}}); err != nil {
			t.Fatal(err)
		}

		got, err := a.ReadStats(ctx, svc, day0.Add(13*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var want [24]HourStats
		want[16].Levels[logline.LevelInfo], want[16].Levels[logline.LevelError], want[16].Levels[logline.LevelDebug], want[16].Total = 15, 2, 7, 24
		want[7].Levels[logline.LevelFatal], want[7].Total = 4, 4
		want[23].Levels[logline.LevelNone], want[23].Total = 1, 1
		if got != want {
			t.Fatalf("stats:\n got %v\nwant %v", got, want)
		}
		if next, err := Read(ctx, st, svc, day0.Add(24*time.Hour)); err != nil || next[0].Total != 4 || next[0].Levels[logline.LevelWarn] != 4 {
			t.Fatalf("next day: %+v, %v", next[0], err)
		}
		if o, err := Read(ctx, st, svc+"-other", day0); err != nil || o[5].Total != 100 {
			t.Fatalf("other service: %+v, %v", o[5], err)
		}
		if none, err := Read(ctx, st, "nothing-here", day0); err != nil || none != ([24]HourStats{}) {
			t.Fatalf("unknown service: %v, %v", none, err)
		}
		ents, err := st.Query(ctx, TableName, partitionKey(svc, day0), "1600~", "1600~\xff", 10)
		if err != nil || len(ents) != 2 || ents[1].Props[instanceProp] != "web/2" {
			t.Fatalf("hour 16's blob entities: %+v, %v; want two, the second written by web/2", ents, err)
		}
	})
}

func TestCountCreatesTheTable(t *testing.T) {
	st, err := tablesink.OpenBolt(filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if _, err := st.Query(ctx, TableName, "x", "", "", 1); !errors.Is(err, tablesink.ErrTableNotFound) {
		t.Fatalf("a fresh store has a stats table: %v", err)
	}
	if err := newTable(t, st, "i").Count(ctx, "api/2026/11/21/1600", "api/2026/11/21/1600/000001.log", held(logline.LevelInfo, 1)); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(ctx, st, "api", day0); err != nil || got[16].Total != 1 {
		t.Fatalf("after the first Count: %v, %v", got[16], err)
	}
}

func TestSplitLogKey(t *testing.T) {
	f := func(key, wantSvc string, wantHour time.Time, wantOK bool) {
		t.Helper()
		svc, hour, ok := splitLogKey(key)
		if ok != wantOK || (ok && (svc != wantSvc || !hour.Equal(wantHour))) {
			t.Fatalf("splitLogKey(%q) = %q, %v, %v; want %q, %v, %v", key, svc, hour, ok, wantSvc, wantHour, wantOK)
		}
	}
	h18 := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)
	f("api/2026/11/21/1800", "api", h18, true)
	f("a/b/2026/11/21/1800", "a/b", h18, true) // a service with a slash
	f(string(logline.HourPrefix([]byte("old/"), time.Date(1969, 12, 31, 23, 30, 0, 0, time.UTC).UnixNano())), "old", time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC), true)
	f("/2026/11/21/1800", "", time.Time{}, false)
	f("api/2026/11/21/18", "", time.Time{}, false)
	f("api/2026/11/21/1830", "", time.Time{}, false)
	f("api/2026-11-21/1800", "", time.Time{}, false)
	f("api/2026/1x/21/1800", "", time.Time{}, false)
	f("api/2026/11/21/2500", "", time.Time{}, false)
}

func TestKeys(t *testing.T) {
	h := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)
	if got := partitionKey("a/b~c", h); got != "a%2Fb%7Ec~20261121" {
		t.Errorf("partitionKey = %q", got)
	}
	if got := rowKey(h, "api/2026/11/21/1800/000012.log.zst"); got != "1800~000012.log.zst" {
		t.Errorf("rowKey = %q", got)
	}
}

func TestConfig(t *testing.T) {
	if err := (&Config{}).Validate(); err == nil {
		t.Error("an empty instance name validates")
	}
	if c := DefaultConfig(); c.Validate() != nil {
		t.Errorf("DefaultConfig %+v does not validate", c)
	}
}
