package httpapi

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/buffer"
	"ingest/internal/benchcpu"
	"ingest/logline"
)

// ndjsonBody is n events of about 200 bytes of one service and hour.
func ndjsonBody(n int) []byte {
	var body []byte
	for i := range n {
		body = fmt.Appendf(body, `{"ts":"2026-11-21T16:04:05.%03dZ","service":"checkout","host":"web-17","level":"info","msg":"user u%d paid order %d with card ending 4242 in 87 ms","user":"u%d","status":200,"path":"/api/pay"}`+"\n", i%1000, i, i*7, i)
	}
	return body
}

// TestIngestPathAllocsPerEvent guards the steady state of the whole request
// path (read the body, parse, encode lines, group, add to the buffer and
// the write-ahead log, answer): a request allocates a few objects of its
// own, never one per event. A request of 1,000 events must allocate no
// more than one of 10 events; one allocation per event would add 990.
func TestIngestPathAllocsPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, ack := range []buffer.AckMode{buffer.AckMemory, buffer.AckWAL} {
		t.Run(string(ack), func(t *testing.T) {
			// No flush while measuring: flush workers allocate on their own
			// goroutines, and the counts are process-wide.
			bcfg := buffer.Config{Ack: ack, FlushInterval: time.Hour, FlushBytes: 64 << 20, BufferBytes: 1 << 30, FlushWorkers: 1, BudgetWait: time.Second}
			f := newFixture(t, Config{}, bcfg)
			var ctx fasthttp.RequestCtx
			post := func(body []byte) func() {
				return func() { postNDJSON(t, f, &ctx, body) }
			}
			small, large := post(ndjsonBody(10)), post(ndjsonBody(1000))
			for range 5 { // warm up pools and scratch buffers
				large()
				small()
			}
			perSmall := testing.AllocsPerRun(20, small)
			perLarge := testing.AllocsPerRun(20, large)
			t.Logf("--ack %s: %.0f allocations per request of 10 events, %.0f per request of 1,000", ack, perSmall, perLarge)
			// The slack covers a key's chunk growing now and then (amortized
			// over many requests), not a per-event cost.
			if perLarge > perSmall+3 {
				t.Fatalf("a request of 1,000 events allocates %.0f times, one of 10 events %.0f: the path allocates per event", perLarge, perSmall)
			}
		})
	}
}

// BenchmarkIngestPathServices is BenchmarkIngestPath with the events of a
// request spread over 8 services, one after another, the way the load
// generator sends them: the per-event cost of finding the event's group.
func BenchmarkIngestPathServices(b *testing.B) { benchIngestPath(b, 8) }

// BenchmarkAddEvent encodes 1,000 parsed events of 8 services, one after
// another, into a request's batch: line encoding and finding each event's
// group, without parsing or the buffer.
func BenchmarkAddEvent(b *testing.B) {
	events := make([]logline.Event, 1000)
	t0 := time.Date(2026, 11, 21, 16, 4, 5, 0, time.UTC).UnixNano()
	for i := range events {
		events[i] = logline.Event{Time: t0 + int64(i)*1e6, Level: logline.LevelInfo, Service: fmt.Appendf(nil, "svc-%d", i%8),
			Host: []byte("web-17"), ID: []byte("01JDQ8ZK3M9X2V7B4N6P8R0T2W"), Message: fmt.Appendf(nil, "user u%d paid order %d with card ending 4242 in 87 ms", i, i*7),
			MessagePlain: true, Attrs: []byte(`{"user":"u123","status":200,"path":"/api/pay"}`)}
	}
	var s *Server // addEvent uses only the request's state
	st := new(reqState)
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		st.reset()
		for i := range events {
			e := events[i] // addEvent rewrites Service
			s.addEvent(st, &e)
		}
	}
	benchcpu.Report(b, cpu, len(events), "event")
}

// TestEventsFindTheirGroup: every event's line lands in the group of its
// own service and hour, whether its service is found by its slot, shares
// the slot with others (same length and first, middle and last bytes), is
// past maxSeen (its key encoded each time) or comes back after others.
func TestEventsFindTheirGroup(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 16, 59, 59, 0, time.UTC).UnixNano()
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s *Server // addEvent uses only the request's state
			st := new(reqState)
			want := map[string][]string{} // group key -> ids
			for i := range 3 * len(tc.services) * tc.hours {
				svc := tc.services[(i*7)%len(tc.services)]
				when := t0 + int64(i%tc.hours)*int64(time.Second) // 16:59:59 or 17:00:00
				id := fmt.Sprintf("id%05d", i)
				key := string(logline.HourPrefix(append(logline.AppendService(nil, []byte(svc)), '/'), when))
				want[key] = append(want[key], id)
				e := logline.Event{Time: when, Level: logline.LevelInfo, Service: []byte(svc), Host: []byte("h"),
					ID: []byte(id), Message: []byte("m"), MessagePlain: true}
				s.addEvent(st, &e)
			}
			got := map[string][]string{}
			for _, g := range st.batch.Groups() {
				for _, line := range strings.Split(strings.TrimSuffix(string(g.Data), "\n"), "\n") {
					f := strings.Split(line, ";")
					got[string(g.Key)] = append(got[string(g.Key)], f[5])
				}
				if g.Events != len(got[string(g.Key)]) {
					t.Errorf("group %s counts %d events, holds %d lines", g.Key, g.Events, len(got[string(g.Key)]))
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("lines by group:\n got %v\nwant %v", got, want)
			}
		})
	}
}
