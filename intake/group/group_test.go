package group

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"ingest/admission"
	"ingest/buffer"
	"ingest/intake/login"
	"ingest/internal/benchcpu"
	"ingest/internal/httperr"
	"ingest/logline"
)

// budget is a request's share of a budget of limit bytes: the real
// admission.Hold, whose Held tells what was reserved.
func budget(limit int64) *admission.Hold {
	var h admission.Hold
	h.Begin(admission.New(limit, "test bytes", "--test-bytes"), context.Background(), 0)
	return &h
}

func newPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	p, err := NewPool(cfg, dayTables{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var t0 = time.Date(2026, 11, 21, 16, 59, 59, 0, time.UTC).UnixNano()

func event(svc string, when int64, id string) logline.Event {
	return logline.Event{Time: when, Level: logline.LevelInfo, Service: []byte(svc), Host: []byte("h"),
		ID: []byte(id), Message: []byte("m"), MessagePlain: true}
}

// linesByGroup is the ids of each group's lines, by key.
func linesByGroup(t *testing.T, b *buffer.Batch) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for _, g := range b.Groups() {
		for _, line := range strings.Split(strings.TrimSuffix(string(g.Data), "\n"), "\n") {
			got[string(g.Key)] = append(got[string(g.Key)], strings.Split(line, ";")[5])
		}
		if g.Events != len(got[string(g.Key)]) {
			t.Errorf("group %s counts %d events, holds %d lines", g.Key, g.Events, len(got[string(g.Key)]))
		}
	}
	return got
}

// TestEventsFindTheirGroup: every event's line lands in the group of its
// own service and hour, whether its service is found by its slot, shares
// the slot with others (same length and first, middle and last bytes), is
// past maxSeen (found by key) or comes back after others, and whether the
// Grouper is fresh or pooled.
func TestEventsFindTheirGroup(t *testing.T) {
	cases := []struct {
		name     string
		services []string
		hours    int
	}{
		{"one service", []string{"checkout"}, 1},
		{"eight services, two hours", []string{"api", "cart", "auth", "search", "checkout", "payments", "inventory", "web"}, 2},
		{"names that share a slot", func() (s []string) {
			for i := range 20 {
				s = append(s, fmt.Sprintf("s%02d-mid-z", i)) // same length, s[0], s[4], s[8]
			}
			return s
		}(), 2},
		{"more services than maxSeen", func() (s []string) {
			for i := range maxSeen + 30 {
				s = append(s, fmt.Sprintf("svc-%d", i))
			}
			return s
		}(), 1},
		{"the same name sent two ways", []string{"a/b", "a_b", "a/b"}, 1},
		{"the same name sent two ways, past maxSeen", func() (s []string) {
			for i := range maxSeen + 2 {
				s = append(s, fmt.Sprintf("x%d", i))
			}
			return append(s, "a/b", "a_b")
		}(), 1},
	}
	pool := newPool(t, DefaultConfig())
	for _, tc := range cases {
		for _, pooled := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, pooled %v", tc.name, pooled), func(t *testing.T) {
				g := pool.Get(budget(1 << 30))
				defer pool.Put(g)
				want := map[string][]string{} // group key -> ids
				for i := range 3 * len(tc.services) * tc.hours {
					svc := tc.services[(i*7)%len(tc.services)]
					when := t0 + int64(i%tc.hours)*int64(time.Second) // 16:59:59 or 17:00:00
					id := fmt.Sprintf("id%05d", i)
					key := string(logline.HourPrefix(append(logline.AppendService(nil, []byte(svc)), '/'), when))
					want[key] = append(want[key], id)
					e := event(svc, when, id)
					if err := g.AddEvent(&e); err != nil {
						t.Fatal(err)
					}
				}
				if got := linesByGroup(t, g.Batch()); !reflect.DeepEqual(got, want) {
					t.Errorf("lines by group:\n got %v\nwant %v", got, want)
				}
				if g.Events() != 3*len(tc.services)*tc.hours {
					t.Errorf("Events = %d", g.Events())
				}
			})
		}
	}
}

// The limits: past --max-events-per-request the request ends with a 413;
// past --max-service-hours-per-request, or --max-new-services-per-hour,
// the event of a further key or service is rejected alone (IsRejected)
// and the others still go in.
func TestLimits(t *testing.T) {
	cfg := Config{MaxEventsPerRequest: 10, MaxServiceHoursPerRequest: 3, MaxNewServicesPerHour: 4}
	pool := newPool(t, cfg)
	clock := t0
	pool.now = func() int64 { return clock }
	add := func(g *Grouper, svc string, when int64) error {
		e := event(svc, when, "i")
		return g.AddEvent(&e)
	}

	g := pool.Get(budget(1 << 30))
	for i := range cfg.MaxEventsPerRequest {
		if err := add(g, "a", t0); err != nil {
			t.Fatalf("event %d: %v", i+1, err)
		}
	}
	err := add(g, "a", t0)
	if httperr.StatusOf(err) != 413 || IsRejected(err) || !strings.Contains(err.Error(), "--max-events-per-request") {
		t.Fatalf("event past the cap: %v, want a 413 naming --max-events-per-request", err)
	}
	pool.Put(g)

	// Three keys: two services, one of them in two hours; a fourth key is
	// rejected, a known one still taken.
	g = pool.Get(budget(1 << 30))
	for _, k := range []struct {
		svc  string
		when int64
	}{{"a", t0}, {"b", t0}, {"a", t0 + int64(time.Hour)}} {
		if err := add(g, k.svc, k.when); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []struct {
		svc  string
		when int64
	}{{"c", t0}, {"a", t0 + 2*int64(time.Hour)}} {
		if err := add(g, k.svc, k.when); !IsRejected(err) || !strings.Contains(err.Error(), "--max-service-hours-per-request") {
			t.Fatalf("a fourth key %s: %v, want a rejection naming --max-service-hours-per-request", k.svc, err)
		}
	}
	if err := add(g, "b", t0); err != nil {
		t.Fatalf("a known key after rejections: %v", err)
	}
	if n := len(g.Batch().Groups()); n != 3 {
		t.Fatalf("%d groups, want 3", n)
	}
	pool.Put(g)

	// New services this hour: a and b so far, c and d make four; e is one
	// too many, whatever the request. Next hour, all four are known (seen
	// last hour) and e is new; the hour after, only those seen then are.
	g = pool.Get(budget(1 << 30))
	for _, s := range []string{"c", "d"} {
		if err := add(g, s, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := add(g, "e", t0); !IsRejected(err) || !strings.Contains(err.Error(), "--max-new-services-per-hour") {
		t.Fatalf("a fifth new service: %v, want a rejection naming --max-new-services-per-hour", err)
	}
	pool.Put(g)
	clock += int64(time.Hour)
	g = pool.Get(budget(1 << 30))
	for _, s := range []string{"a", "b", "e"} {
		if err := add(g, s, clock); err != nil {
			t.Fatalf("next hour, service %s: %v", s, err)
		}
	}
	pool.Put(g)
	if pool.services.added != 1 {
		t.Fatalf("%d new services counted in the next hour, want 1 (e)", pool.services.added)
	}
}

// Every byte of a group's lines is reserved before it is written, from a
// fresh or a pooled Grouper; a budget too small for the request ends it
// with the budget's refusal before more is allocated.
func TestReservesGroupData(t *testing.T) {
	pool := newPool(t, DefaultConfig())
	for run := range 3 { // fresh, then pooled twice
		mem := budget(1 << 30)
		g := pool.Get(mem)
		for i := range 5000 {
			e := event(fmt.Sprintf("svc-%d", i%7), t0, fmt.Sprintf("id%d", i))
			e.Message = bytes.Repeat([]byte("x"), 100)
			if err := g.AddEvent(&e); err != nil {
				t.Fatal(err)
			}
		}
		data, capacity := 0, 0
		for _, gr := range g.Batch().Groups() {
			data += len(gr.Data)
			capacity += cap(gr.Data)
		}
		if mem.Held() < int64(data) || run == 0 && mem.Held() < int64(capacity) {
			t.Errorf("run %d: %d bytes reserved for %d bytes of lines in %d of capacity", run, mem.Held(), data, capacity)
		}
		pool.Put(g)
	}
	mem := budget(100 << 10)
	g := newPool(t, DefaultConfig()).Get(mem) // fresh: nothing pooled
	var err error
	for i := 0; err == nil && i < 10000; i++ {
		e := event("a", t0, "id")
		e.Message = bytes.Repeat([]byte("x"), 100)
		err = g.AddEvent(&e)
	}
	if !errors.Is(err, admission.ErrRefused) {
		t.Fatalf("lines past the budget: %v, want the budget's refusal", err)
	}
	if c := cap(g.Batch().Groups()[0].Data); c > 100<<10 {
		t.Fatalf("a group grew to %d bytes with a budget of %d", c, 100<<10)
	}
}

// dayTables is a login sink with a table per UTC day of the attempt; it
// refuses users named "refused".
type dayTables struct{}

func (dayTables) AppendRecord(dst []byte, a *login.Attempt) (string, []byte, error) {
	if string(a.User) == "refused" {
		return "", dst, errors.New("cannot accept login attempt: refused")
	}
	dst = fmt.Appendf(dst, "%s %s\n", a.User, a.ID)
	return time.Unix(0, a.Time).UTC().Format("logins20060102"), dst, nil
}

// Login attempts land in their day's group, in order, whichever day came
// before; one the sink refuses is rejected alone.
func TestAddLogin(t *testing.T) {
	pool := newPool(t, DefaultConfig())
	day := int64(24 * time.Hour)
	for range 2 { // fresh and pooled
		g := pool.Get(budget(1 << 30))
		want := map[string]string{}
		for i, d := range []int64{0, 0, 1, 0, -1, -1, 1} {
			a := login.Attempt{Time: t0 + d*day, User: []byte("u"), ID: fmt.Appendf(nil, "%d", i)}
			table := time.Unix(0, a.Time).UTC().Format("logins20060102")
			want[table] += fmt.Sprintf("u %d\n", i)
			if err := g.AddLogin(&a); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.AddLogin(&login.Attempt{Time: t0, User: []byte("refused")}); !IsRejected(err) || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("an attempt the sink refuses: %v, want its error as a rejection", err)
		}
		got := map[string]string{}
		events := 0
		for _, gr := range g.Batch().Groups() {
			if gr.Stream != buffer.StreamLogins {
				t.Errorf("group %s in stream %d", gr.Key, gr.Stream)
			}
			got[string(gr.Key)] = string(gr.Data)
			events += gr.Events
		}
		if !reflect.DeepEqual(got, want) || events != 7 {
			t.Fatalf("records by table (%d events):\n got %q\nwant %q", events, got, want)
		}
		pool.Put(g)
	}
}

// After warm-up, adding an event allocates nothing.
func TestAddEventAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	pool := newPool(t, DefaultConfig())
	events := benchEvents(1000)
	run := func() {
		g := pool.Get(budget(1 << 40))
		for i := range events {
			e := events[i]
			if err := g.AddEvent(&e); err != nil {
				t.Fatal(err)
			}
		}
		pool.Put(g)
	}
	for range 3 {
		run()
	}
	if allocs := testing.AllocsPerRun(20, run); allocs > 2 {
		t.Fatalf("%.0f allocations per request of 1,000 events", allocs)
	}
}

// benchEvents is n parsed events of 8 services, one after another.
func benchEvents(n int) []logline.Event {
	events := make([]logline.Event, n)
	for i := range events {
		events[i] = logline.Event{Time: t0 + int64(i)*1e6, Level: logline.LevelInfo, Service: fmt.Appendf(nil, "svc-%d", i%8),
			Host: []byte("web-17"), ID: []byte("01JDQ8ZK3M9X2V7B4N6P8R0T2W"), Message: fmt.Appendf(nil, "user u%d paid order %d with card ending 4242 in 87 ms", i, i*7),
			MessagePlain: true, Attrs: []byte(`{"user":"u123","status":200,"path":"/api/pay"}`)}
	}
	return events
}

// BenchmarkAddEvent encodes 1,000 parsed events of 8 services, one after
// another, into a request's batch: line encoding and finding each event's
// group, without parsing or the buffer.
func BenchmarkAddEvent(b *testing.B) {
	pool := newPool(b, DefaultConfig())
	events := benchEvents(1000)
	inflight := admission.New(1<<40, "test bytes", "--test-bytes")
	var hold admission.Hold
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		hold.Begin(inflight, context.Background(), 0)
		g := pool.Get(&hold)
		for i := range events {
			e := events[i] // AddEvent rewrites Service
			if err := g.AddEvent(&e); err != nil {
				b.Fatal(err)
			}
		}
		pool.Put(g)
		hold.Release()
	}
	benchcpu.Report(b, cpu, len(events), "event")
}
