package loadtest

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 µs to 60 s with three
// significant digits, the usual HDR setting: 0.1% error at any scale.
const (
	histMinUs = 1
	histMaxUs = 60_000_000
	histSig   = 3
)

func newHist() *hdr.Histogram { return hdr.New(histMinUs, histMaxUs, histSig) }

// outcome is what one batch came to, after any 429/503 retries.
type outcome struct {
	events    int           // events in the batch
	accepted  int           // events the server accepted
	rejected  int           // events the server refused (bad lines, 4xx)
	status    int           // final HTTP status, 0 on a transport error
	errText   string        // transport error class, when status is 0
	latency   time.Duration // from the intended send time to the final answer
	rawBytes  int           // uncompressed body
	wireBytes int           // bytes of every attempt's body on the wire
	retries   int           // 429/503 answers honoured
	retry429  int
	retry503  int
}

// stats aggregates outcomes; workers record under one mutex, a few
// thousand times a second, which costs far less than the requests.
type stats struct {
	mu     sync.Mutex
	all    *hdr.Histogram
	lag    *hdr.Histogram // open loop: how late each request was sent
	sec    *hdr.Histogram // the current second
	cur    SecondStats
	series []SecondStats
	status map[string]int64
	totals totals
}

type totals struct {
	requests, events, accepted, rejected, failed int64
	raw, wire                                    int64
	retry429, retry503                           int64
	errors                                       int64 // batches not answered 2xx
}

func newStats() *stats {
	return &stats{all: newHist(), lag: newHist(), sec: newHist(), status: map[string]int64{}}
}

func latencyUs(d time.Duration) int64 {
	us := d.Microseconds()
	return max(histMinUs, min(us, histMaxUs))
}

func (s *stats) record(o *outcome) {
	us := latencyUs(o.latency)
	key := statusKey(o.status, o.errText)
	ok := o.status >= 200 && o.status < 300
	s.mu.Lock()
	s.all.RecordValue(us)
	s.sec.RecordValue(us)
	s.status[key]++
	t := &s.totals
	t.requests++
	t.events += int64(o.events)
	t.accepted += int64(o.accepted)
	t.rejected += int64(o.rejected)
	t.failed += int64(o.events - o.accepted - o.rejected)
	t.raw += int64(o.rawBytes)
	t.wire += int64(o.wireBytes)
	t.retry429 += int64(o.retry429)
	t.retry503 += int64(o.retry503)
	s.cur.Requests++
	s.cur.Events += int64(o.accepted)
	s.cur.Retries += int64(o.retries)
	if !ok {
		t.errors++
		s.cur.Errors++
	}
	s.mu.Unlock()
}

// sendLag records how late an open-loop request went out: its workers were
// all busy at its scheduled time.
func (s *stats) sendLag(d time.Duration) {
	us := latencyUs(d)
	s.mu.Lock()
	s.lag.RecordValue(us)
	s.mu.Unlock()
}

func statusKey(status int, errText string) string {
	if status == 0 {
		return "transport: " + errText
	}
	return fmt.Sprint(status)
}

// rotate closes the current one-second bucket, starting at second t of the
// run, and returns it.
func (s *stats) rotate(t float64, dur time.Duration) SecondStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cur
	c.T = t
	if dur > 0 && dur != time.Second {
		// A partial last second is scaled so the chart shows a rate.
		c.EventsPerSec = float64(c.Events) / dur.Seconds()
	} else {
		c.EventsPerSec = float64(c.Events)
	}
	if s.sec.TotalCount() > 0 {
		c.P50Ms = usToMs(s.sec.ValueAtQuantile(50))
		c.P99Ms = usToMs(s.sec.ValueAtQuantile(99))
		c.MaxMs = usToMs(s.sec.Max())
	}
	s.series = append(s.series, c)
	s.cur = SecondStats{}
	s.sec.Reset()
	return c
}

func usToMs(us int64) float64 { return float64(us) / 1000 }

// snapshot returns the totals so far and the overall p99.
func (s *stats) snapshot() (totals, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals, usToMs(s.all.ValueAtQuantile(99))
}

// Latency summarises a latency distribution in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

func latencySummary(h *hdr.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1000,
		P50:   usToMs(h.ValueAtQuantile(50)),
		P90:   usToMs(h.ValueAtQuantile(90)),
		P99:   usToMs(h.ValueAtQuantile(99)),
		P999:  usToMs(h.ValueAtQuantile(99.9)),
		Max:   usToMs(h.Max()),
	}
}

// HistBucket is one bar of the latency histogram: requests whose latency
// was in (previous bucket's UpToMs, UpToMs].
type HistBucket struct {
	UpToMs float64 `json:"up_to_ms"`
	Count  int64   `json:"count"`
}

// logBuckets regroups h into log-scaled buckets, four per decade
// (1, 1.8, 3.2, 5.6, 10, ...), from the first to the last non-empty one.
func logBuckets(h *hdr.Histogram) []HistBucket {
	if h.TotalCount() == 0 {
		return nil
	}
	const perDecade = 4
	var bounds []float64 // µs
	for e := 0; ; e++ {
		b := math.Pow(10, float64(e)/perDecade)
		bounds = append(bounds, b)
		if b >= histMaxUs {
			break
		}
	}
	counts := make([]int64, len(bounds))
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		v := float64(bar.From) // the bar's lowest equivalent value: a recorded 100 ms stays in the "≤ 100 ms" bucket
		i := sort.SearchFloat64s(bounds, v)
		if i >= len(bounds) {
			i = len(bounds) - 1
		}
		counts[i] += bar.Count
	}
	lo, hi := -1, -1
	for i, c := range counts {
		if c > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	out := make([]HistBucket, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		out = append(out, HistBucket{UpToMs: bounds[i] / 1000, Count: counts[i]})
	}
	return out
}
