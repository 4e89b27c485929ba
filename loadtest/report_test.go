package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sampleReport runs a short load with every section present.
func sampleReport(t *testing.T) (*Report, string) {
	t.Helper()
	q := &querySink{sink: newSink(t), t: t, lose: func(string) bool { return false }, dup: func(string) bool { return false }}
	cfg := quickConfig(startServer(t, q.handle))
	cfg.Rate = 40_000
	cfg.Duration = 1200 * time.Millisecond
	cfg.AttackUser = "victim"
	cfg.AttackRate = 2500
	cfg.Verify = true
	dir := t.TempDir()
	cfg.Report = filepath.Join(dir, "r.json")
	cfg.HTML = filepath.Join(dir, "r.html")
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return rep, dir
}

func TestReportFiles(t *testing.T) {
	rep, dir := sampleReport(t)

	raw, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("report JSON: %v", err)
	}
	if back.RunID != rep.RunID || back.EventsAccepted != rep.EventsAccepted || back.Latency != rep.Latency ||
		len(back.Series) != len(rep.Series) || len(back.Histogram) == 0 || back.Partitions == nil || back.Verify == nil {
		t.Errorf("JSON round trip lost data:\n%s", raw)
	}
	for _, key := range []string{`"p99_9_ms"`, `"events_per_sec"`, `"retry_429"`, `"schemes"`, `"lost"`, `"duplicated"`, `"series"`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("report JSON lacks %s", key)
		}
	}
	if rep.Verify.Lost != 0 || rep.Verify.Found != rep.EventsAccepted {
		t.Errorf("verify: %+v", rep.Verify)
	}

	page, err := os.ReadFile(filepath.Join(dir, "r.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if n := strings.Count(html, "<svg"); n < 4 {
		t.Errorf("%d charts, want throughput, latency, histogram and partitions", n)
	}
	for _, want := range []string{"Throughput", "Latency over time", "Latency distribution", "Login table partitions", "Read-back verification", "Summary", rep.RunID, "<polyline", "<rect"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// Self-contained: nothing to load.
	for _, bad := range []string{"<script", "src=", "href=", "@import", "url(http"} {
		if strings.Contains(html, bad) {
			t.Errorf("HTML contains %q: it must render offline", bad)
		}
	}
}

// TestReportEmpty: a run that sent nothing still renders.
func TestReportEmpty(t *testing.T) {
	rep := &Report{RunID: "lt0", Target: "http://127.0.0.1:1", Mode: "closed loop", Status: map[string]int64{}}
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<svg") || !strings.Contains(b.String(), "no requests") {
		t.Errorf("empty report HTML:\n%s", b.String())
	}
	b.Reset()
	rep.WriteText(&b)
	if !strings.Contains(b.String(), "lt0") {
		t.Errorf("text: %s", b.String())
	}
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
}

func TestLogBuckets(t *testing.T) {
	h := newHist()
	for _, us := range []int64{900, 1000, 1100, 5000, 5000, 100_000} {
		h.RecordValue(us)
	}
	bs := logBuckets(h)
	var total int64
	for i, b := range bs {
		total += b.Count
		if i > 0 && b.UpToMs <= bs[i-1].UpToMs {
			t.Fatalf("buckets not increasing: %v", bs)
		}
	}
	if total != 6 || bs[0].UpToMs != 1 || bs[0].Count != 2 || bs[len(bs)-1].UpToMs != 100 {
		t.Errorf("buckets %v", bs)
	}
}

func TestFormatters(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := human(in); got != want {
			t.Errorf("human(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{0.25: "250µs", 3.14159: "3.14ms", 42.42: "42.4ms", 1500: "1.50s"} {
		if got := ms(in); got != want {
			t.Errorf("ms(%g) = %q, want %q", in, got, want)
		}
	}
}
