package tablesink

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"ingest/logline"
)

func TestStatsSumAcrossInstances(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		ctx := context.Background()
		svc := uniqueName("svc")
		other := svc + "-other"
		newC := func(inst string) *Counters {
			c, err := NewCounters(st, inst, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.now = func() time.Time { return day0 }
			return c
		}
		a, b := newC("web-1"), newC("web/2") // an instance name that needs escaping
		h := func(hour int) int64 {
			return day0.Truncate(24 * time.Hour).Add(time.Duration(hour)*time.Hour + time.Minute).UnixNano()
		}

		a.Add([]byte(svc), h(0), logline.LevelInfo, 10)
		a.Add([]byte(svc), h(0), logline.LevelError, 2)
		a.Add([]byte(svc), h(23), logline.LevelNone, 1)
		a.Add([]byte(other), h(5), logline.LevelInfo, 100)
		b.Add([]byte(svc), h(0), logline.LevelInfo, 5)
		b.Add([]byte(svc), h(7), logline.LevelFatal, 3)
		b.Add([]byte(svc), h(24), logline.LevelWarn, 4) // the next day
		for _, c := range []*Counters{a, b} {
			if err := c.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// A second round merges into the existing entities.
		a.Add([]byte(svc), h(0), logline.LevelInfo, 1)
		b.Add([]byte(svc), h(7), logline.LevelFatal, 1)
		for _, c := range []*Counters{a, b} {
			if err := c.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		got, err := a.ReadStats(ctx, svc, day0)
		if err != nil {
			t.Fatal(err)
		}
		var want [24]HourStats
		want[0].Levels[logline.LevelInfo], want[0].Levels[logline.LevelError], want[0].Total = 16, 2, 18
		want[7].Levels[logline.LevelFatal], want[7].Total = 4, 4
		want[23].Levels[logline.LevelNone], want[23].Total = 1, 1
		if got != want {
			t.Fatalf("stats:\n got %v\nwant %v", got, want)
		}
		next, err := ReadStats(ctx, st, svc, day0.Add(24*time.Hour))
		if err != nil || next[0].Total != 4 || next[0].Levels[logline.LevelWarn] != 4 {
			t.Fatalf("next day: %+v, %v", next[0], err)
		}
		if o, err := ReadStats(ctx, st, other, day0); err != nil || o[5].Total != 100 {
			t.Fatalf("other service: %+v, %v", o[5], err)
		}
		if none, err := ReadStats(ctx, st, "nothing-here", day0); err != nil || none != ([24]HourStats{}) {
			t.Fatalf("unknown service: %v, %v", none, err)
		}
	})
}

// TestStatsConcurrentWriters makes two Counters share one instance name, as
// an instance and its restarted successor would: the ETag retry loop must
// keep every count.
func TestStatsConcurrentWriters(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		ctx := context.Background()
		svc := uniqueName("race")
		var cs []*Counters
		for range 2 {
			c, err := NewCounters(st, "same", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.now = func() time.Time { return day0 }
			cs = append(cs, c)
		}
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Go(func() {
				for range 5 {
					c.Add([]byte(svc), day0.UnixNano(), logline.LevelInfo, 1)
					if err := c.Flush(ctx); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		got, err := ReadStats(ctx, st, svc, day0)
		if err != nil || got[12].Total != 10 || got[12].Levels[logline.LevelInfo] != 10 {
			t.Fatalf("hour 12: %+v, %v", got[12], err)
		}
	})
}

func TestStatsFlushFailureKeepsCounts(t *testing.T) {
	st := backends[0].open(t)
	c, err := NewCounters(failingGet{st}, "x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return day0 }
	c.Add([]byte("svc"), day0.UnixNano(), logline.LevelWarn, 7)
	if err := c.Flush(context.Background()); err == nil {
		t.Fatal("Flush succeeded on a failing store")
	}
	c.store = st
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStats(context.Background(), st, "svc", day0)
	if err != nil || got[12].Levels[logline.LevelWarn] != 7 || got[12].Total != 7 {
		t.Fatalf("after a failed then a good flush: %+v, %v", got[12], err)
	}
}

type failingGet struct{ Store }

func (failingGet) Get(context.Context, string, string, string) (Entity, error) {
	return Entity{}, errTestDown
}

var errTestDown = &testError{"storage down"}

type testError struct{ s string }

func (e *testError) Error() string { return e.s }

// newCounters is NewCounters without a store (Add only) or fails the test.
func newCounters(t testing.TB) *Counters {
	t.Helper()
	c, err := NewCounters(nil, "x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCountersAddAllocs(t *testing.T) {
	c := newCounters(t)
	svc := []byte("api")
	c.Add(svc, day0.UnixNano(), logline.LevelInfo, 1)
	n := testing.AllocsPerRun(1000, func() { c.Add(svc, day0.UnixNano(), logline.LevelInfo, 1) })
	if n != 0 {
		t.Fatalf("Add allocates %v times per call", n)
	}
}

func TestCountersBoundServices(t *testing.T) {
	c := newCounters(t)
	for i := range maxServices + 50 {
		c.Add([]byte(uniqueName("s")+string(rune('a'+i%26))), day0.UnixNano(), logline.LevelInfo, 1)
	}
	if len(c.svcs) != maxServices+1 || c.svcs[OtherService] == nil {
		t.Fatalf("%d services tracked", len(c.svcs))
	}
}

func BenchmarkCountersAdd(b *testing.B) {
	c := newCounters(b)
	svcs := [][]byte{[]byte("api"), []byte("web"), []byte("auth"), []byte("billing")}
	now := time.Now().UnixNano()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			c.Add(svcs[i&3], now, logline.Level(i%7), 1)
		}
	})
}

// TestStatsLostAnswers writes through a store that can let a write land and
// then answer with an error, as a timeout or the SDK's resend of a landed
// write (412, 409) does: every count must be merged exactly once.
func TestStatsLostAnswers(t *testing.T) {
	lost := fmt.Errorf("%w: answer lost", ErrTransient)
	for _, tc := range []struct {
		name   string
		prime  bool    // the entity exists, so the write is a Merge (else an Insert)
		land   bool    // the faulty writes land before failing
		faults []error // answers of the next writes
		fails  bool    // the first Flush reports an error
	}{
		{name: "merge landed, timeout", prime: true, land: true, faults: []error{lost}},
		{name: "merge landed, 412 on resend", prime: true, land: true, faults: []error{ErrPrecondition}},
		{name: "merge landed, timeout then 412", prime: true, land: true, faults: []error{lost, ErrPrecondition}},
		{name: "insert landed, 409 on resend", land: true, faults: []error{ErrExists}},
		{name: "insert landed, timeout", land: true, faults: []error{lost}},
		{name: "merge landed, then gives up", prime: true, land: true, faults: []error{errTestDown}, fails: true},
		{name: "insert landed, then gives up", land: true, faults: []error{errTestDown}, fails: true},
		{name: "merge lost, then gives up", prime: true, faults: []error{errTestDown}, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, st Store) {
				ctx := context.Background()
				svc := uniqueName("lost")
				fs := &faultyWrites{Store: st}
				c, err := NewCounters(fs, "x", nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				c.now = func() time.Time { return day0 }
				c.retry.Min, c.retry.Max = time.Microsecond, 10*time.Microsecond
				want := int64(0)
				add := func(n int) {
					c.Add([]byte(svc), day0.UnixNano(), logline.LevelInfo, n)
					want += int64(n)
				}
				if tc.prime {
					add(1)
					if err := c.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				}
				add(30)
				fs.arm(tc.land, tc.faults...)
				if err := c.Flush(ctx); (err != nil) != tc.fails {
					t.Fatalf("first Flush: %v, want failure %v", err, tc.fails)
				}
				add(5)
				if err := c.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if err := c.Flush(ctx); err != nil { // nothing left to merge twice
					t.Fatal(err)
				}
				got, err := ReadStats(ctx, st, svc, day0)
				if err != nil || got[12].Total != want || got[12].Levels[logline.LevelInfo] != want {
					t.Fatalf("hour 12: %+v, %v; want %d", got[12], err, want)
				}
			})
		})
	}
}

// faultyWrites answers the next Inserts and Merges with faults, after
// performing them on the real store if land is set.
type faultyWrites struct {
	Store
	mu     sync.Mutex
	land   bool
	faults []error
}

func (f *faultyWrites) arm(land bool, faults ...error) {
	f.mu.Lock()
	f.land, f.faults = land, faults
	f.mu.Unlock()
}

func (f *faultyWrites) next() (land bool, fault error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.faults) == 0 {
		return true, nil
	}
	fault, f.faults = f.faults[0], f.faults[1:]
	return f.land, fault
}

func (f *faultyWrites) Insert(ctx context.Context, table string, e Entity) (string, error) {
	land, fault := f.next()
	if !land {
		return "", fault
	}
	etag, err := f.Store.Insert(ctx, table, e)
	if err != nil {
		return "", err
	}
	return etag, fault
}

func (f *faultyWrites) Merge(ctx context.Context, table string, e Entity, etag string) (string, error) {
	land, fault := f.next()
	if !land {
		return "", fault
	}
	etag, err := f.Store.Merge(ctx, table, e, etag)
	if err != nil {
		return "", err
	}
	return etag, fault
}
