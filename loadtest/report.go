package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Report is the outcome of a run. It marshals to the --report JSON.
type Report struct {
	RunID       string    `json:"run_id"` // prefix of every event id of the run
	Target      string    `json:"target"`
	Mode        string    `json:"mode"` // "open loop at N events/s" or "closed loop"
	Rate        float64   `json:"rate"`
	Concurrency int       `json:"concurrency"`
	Batch       int       `json:"batch"`
	Encoding    string    `json:"encoding"`
	EventSize   int       `json:"event_size"`
	Seed        int64     `json:"seed"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Seconds     float64   `json:"seconds"`
	Interrupted bool      `json:"interrupted,omitempty"`

	Requests       int64   `json:"requests"`
	EventsSent     int64   `json:"events_sent"`
	EventsAccepted int64   `json:"events_accepted"`
	EventsRejected int64   `json:"events_rejected"` // refused by the server: bad lines, 4xx
	EventsFailed   int64   `json:"events_failed"`   // 5xx, transport errors, retries given up
	LoginsSent     int64   `json:"logins_sent"`
	AttackSent     int64   `json:"attack_sent"`
	EventsPerSec   float64 `json:"events_per_sec"` // accepted events per second
	BytesRaw       int64   `json:"bytes_raw"`      // uncompressed bodies, once per batch
	BytesWire      int64   `json:"bytes_wire"`     // encoded bodies, every attempt
	MBPerSecRaw    float64 `json:"mb_per_sec_raw"`
	MBPerSecWire   float64 `json:"mb_per_sec_wire"`

	Latency   Latency          `json:"latency"`  // per request, from the intended send time
	SendLag   Latency          `json:"send_lag"` // open loop: how late requests went out (every worker busy at their time)
	Histogram []HistBucket     `json:"histogram"`
	Status    map[string]int64 `json:"status"` // final answers by status ("202", "transport: timeout")
	Errors    int64            `json:"errors"` // requests not answered 2xx
	Retry429  int64            `json:"retry_429"`
	Retry503  int64            `json:"retry_503"`

	Series     []SecondStats    `json:"series"`
	Partitions *PartitionReport `json:"partitions,omitempty"`
	Verify     *VerifyReport    `json:"verify,omitempty"`
	VerifyErr  string           `json:"verify_error,omitempty"`

	targetOf func(id []byte) (int, bool)
}

// TargetOf tells which target (its index in the --target list) took the
// event of this run with the given id, for a run with Verify (which
// records every batch): a harness reading the blobs back can check that
// each holds one instance's events. ok is false for any other id.
func (r *Report) TargetOf(id []byte) (target int, ok bool) {
	if r.targetOf == nil {
		return 0, false
	}
	return r.targetOf(id)
}

// SecondStats is one second of the run.
type SecondStats struct {
	T            float64 `json:"t"` // seconds since the start
	Requests     int64   `json:"requests"`
	Events       int64   `json:"events"` // accepted
	EventsPerSec float64 `json:"events_per_sec"`
	Errors       int64   `json:"errors"`
	Retries      int64   `json:"retries"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	MaxMs        float64 `json:"max_ms"`
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeFile writes a file through fn, reporting the path on failure.
func writeFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cannot write report: %w", err)
	}
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("cannot write report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write report %s: %w", path, err)
	}
	return nil
}

// WriteText writes the end-of-run report for a person.
func (r *Report) WriteText(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("loadtest %s -> %s, %s, %d workers, batch %d, %s\n", r.RunID, r.Target, r.Mode, r.Concurrency, r.Batch, r.Encoding)
	if r.Interrupted {
		p("  (interrupted)\n")
	}
	p("  duration       %.2fs\n", r.Seconds)
	p("  events         sent %s  accepted %s  rejected %s  failed %s", human(r.EventsSent), human(r.EventsAccepted), human(r.EventsRejected), human(r.EventsFailed))
	if r.LoginsSent > 0 {
		p("  (logins %s", human(r.LoginsSent))
		if r.AttackSent > 0 {
			p(", attack %s", human(r.AttackSent))
		}
		p(")")
	}
	p("\n")
	p("  throughput     %s events/s  %.1f MB/s raw  %.1f MB/s on the wire  %s requests\n", human(int64(r.EventsPerSec)), r.MBPerSecRaw, r.MBPerSecWire, human(r.Requests))
	l := r.Latency
	from := "from the intended send time"
	if r.Rate <= 0 {
		from = "closed loop: from the send time"
	}
	p("  latency        p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (%s)\n", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max), from)
	if r.Rate > 0 {
		g := r.SendLag
		p("  schedule       sent late by p50 %s  p99 %s  max %s  (every one of the %d workers busy at the scheduled time; counted in the latency)\n", ms(g.P50), ms(g.P99), ms(g.Max), r.Concurrency)
	}
	p("  status        ")
	for _, k := range sortedKeys(r.Status) {
		p(" %s: %s", k, human(r.Status[k]))
	}
	p("\n")
	p("  backpressure   429 honoured %d  503 honoured %d\n", r.Retry429, r.Retry503)
	if pr := r.Partitions; pr != nil {
		pr.writeText(w)
	}
	if v := r.Verify; v != nil {
		v.writeText(w)
	}
	if r.VerifyErr != "" {
		p("  verify         %s\n", r.VerifyErr)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// human formats a count with thousands separators.
func human(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ms formats milliseconds with a unit that keeps three significant digits.
func ms(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return fmt.Sprintf("%.0fµs", v*1000)
	case v < 10:
		return fmt.Sprintf("%.2fms", v)
	case v < 1000:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.2fs", v/1000)
	}
}
