package tablesink

import (
	"fmt"
	"testing"
	"time"

	"ingest/buffer"
	"ingest/logline"
)

func TestSplitLogKey(t *testing.T) {
	f := func(key, wantSvc string, wantHour int64, wantOK bool) {
		t.Helper()
		svc, hour, ok := splitLogKey([]byte(key))
		if ok != wantOK || (ok && (string(svc) != wantSvc || hour != wantHour)) {
			t.Fatalf("splitLogKey(%q) = %q, %d, %v; want %q, %d, %v", key, svc, hour, ok, wantSvc, wantHour, wantOK)
		}
	}
	for _, ts := range []time.Time{day0, day0.Add(23*time.Hour + 59*time.Minute), time.Date(1969, 12, 31, 23, 30, 0, 0, time.UTC), time.Date(2261, 1, 1, 5, 0, 0, 0, time.UTC)} {
		key := logline.HourPrefix([]byte("api/"), ts.UnixNano())
		hour := ts.Unix() / 3600
		if ts.Unix() < 0 && ts.Unix()%3600 != 0 {
			hour--
		}
		f(string(key), "api", hour, true)
	}
	f("a/b/2026/11/21/1800", "a/b", time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC).Unix()/3600, true) // a service with a slash
	f("/2026/11/21/1800", "", 0, false)
	f("api/2026/11/21/18", "", 0, false)
	f("api/2026/11/21/1830", "", 0, false)
	f("api/2026-11-21/1800", "", 0, false)
	f("api/2026/1x/21/1800", "", 0, false)
}

// TestObserveCountsLikeAdd: a group's per-level tally, observed, counts
// what the same events counted one call of Add per level would.
func TestObserveCountsLikeAdd(t *testing.T) {
	added, observed := newCounters(t), newCounters(t)
	at := day0.Add(18*time.Hour + 4*time.Minute)
	var batch buffer.Batch
	for _, tc := range []struct {
		svc   string
		at    time.Time
		level logline.Level
		n     int
	}{
		{"api", at, logline.LevelInfo, 5}, {"api", at, logline.LevelError, 2}, {"api", at.Add(time.Hour), logline.LevelNone, 1},
		{"web", at, logline.LevelWarn, 3},
	} {
		added.Add([]byte(tc.svc), tc.at.UnixNano(), tc.level, tc.n)
		g := batch.Group(buffer.StreamLogs, logline.HourPrefix([]byte(tc.svc+"/"), tc.at.UnixNano()))
		g.Tally[tc.level] += tc.n
	}
	for _, g := range batch.Groups() {
		observed.Observe(&g)
	}
	if a, o := fmt.Sprint(added.drain()), fmt.Sprint(observed.drain()); a != o || a == "map[]" {
		t.Fatalf("observed %s, want %s", o, a)
	}
	g := &batch.Groups()[0]
	if n := testing.AllocsPerRun(1000, func() { observed.Observe(g) }); n != 0 {
		t.Fatalf("Observe allocates %v times per group", n)
	}
}
