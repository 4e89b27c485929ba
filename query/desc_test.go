package query

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"ingest/blobsink"
	"ingest/logline"
)

func TestDesc(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: s}
	f := writeFixture(t, s)
	for _, c := range []struct {
		name string
		q    Query
	}{
		{"AllHours", Query{Services: []string{"api", "web"}, From: at(13, 30, 0), To: at(18, 30, 0)}},
		{"Window", Query{Services: []string{"*"}, From: at(16, 4, 0), To: at(16, 6, 0)}},
		{"LevelText", Query{Services: []string{"*"}, From: at(14, 0, 0), To: at(18, 0, 0), Level: logline.LevelWarn, Text: "timeout"}},
		{"Limit", Query{Services: []string{"api", "web"}, From: at(14, 30, 0), To: at(17, 0, 0), Limit: 7}},
		{"LimitOverHours", Query{Services: []string{"*"}, From: at(12, 0, 0), To: at(19, 0, 0), Limit: 5000, Level: logline.LevelInfo}},
	} {
		t.Run(c.name, func(t *testing.T) {
			asc := c.q
			asc.Limit = 0
			want := f.want(asc)
			slices.Reverse(want)
			if c.q.Limit > 0 {
				want = want[:c.q.Limit]
			}
			q := c.q
			q.Desc = true
			cs.take()
			got, st := collect(t, cs, q)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Fatalf("got %d events, want %d\n got %v\nwant %v", len(got), len(want), head(got), head(want))
			}
			opened := cs.take()
			if c.name == "Limit" && (len(opened) != 2 || st.BlobsRead != 2) {
				// The 16:40-16:59 writer's blob of each service holds the 7
				// newest: the older blobs of the hour are never opened.
				t.Fatalf("limit 7 newest first opened %v, want only the two newest blobs", opened)
			}
		})
	}
}

// TestDescSplitsBusyHour makes an hour's matches far larger than the sort
// buffer: newest first must still be exact, with bounded memory.
func TestDescSplitsBusyHour(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC)
	n := writeLarge(t, s, "busy", hour, 1, 5<<20, 2, blobsink.CompressNone)
	q := Query{Services: []string{"busy"}, From: hour, To: hour.Add(time.Hour), Config: Config{SortBytes: 1 << 20}}
	asc, _ := collect(t, s, q)
	q.Desc = true
	desc, st := collect(t, s, q)
	slices.Reverse(asc)
	if int64(len(desc)) != n || !slices.Equal(desc, asc) {
		t.Fatalf("newest first gave %d of %d events, or not the reverse of oldest first", len(desc), n)
	}
	if st.LinesScanned <= n {
		t.Fatalf("scanned %d lines for %d: the hour should have been split", st.LinesScanned, n)
	}
}

func TestHistogram(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := writeFixture(t, s)
	q := Query{Services: []string{"*"}, From: at(15, 30, 30), To: at(16, 10, 0), Text: "timeout"}
	h, st, err := RunHistogram(context.Background(), s, q, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !h.From.Equal(at(15, 30, 0)) || len(h.Counts) != 40 {
		t.Fatalf("histogram from %v with %d buckets, want 15:30 and 40", h.From, len(h.Counts))
	}
	want := make([][7]int64, 40)
	var total int64
	for _, e := range f.all {
		if (e.Time >= q.From.UnixNano() && e.Time < q.To.UnixNano()) && slices.Contains([]string{"api", "web", "db"}, string(e.Service)) &&
			strings.Contains(string(e.Message), "timeout") {
			want[(e.Time-h.From.UnixNano())/int64(time.Minute)][e.Level]++
			total++
		}
	}
	if total == 0 || !slices.Equal(h.Counts, want) {
		t.Fatalf("counts differ from brute force (%d events)\n got %v\nwant %v", total, h.Counts, want)
	}
	if st.LinesMatched != total || st.BlobsSkipped == 0 {
		t.Fatalf("stats %+v: want %d matched and blobs outside the range skipped", st, total)
	}
	js := string(h.AppendJSON(nil))
	if want := `{"from":"2026-11-21T15:30:00.0000000Z","to":"2026-11-21T16:10:00.0000000Z","interval_seconds":60,"buckets":[{"ts":"2026-11-21T15:30:00.0000000Z","total":`; js[:len(want)] != want {
		t.Fatalf("JSON %.200s", js)
	}
	if _, _, err := RunHistogram(context.Background(), s, q, time.Millisecond); err == nil {
		t.Fatal("a sub-second interval was accepted")
	}
	q.From = at(0, 0, 0).AddDate(-1, 0, 0)
	if _, _, err := RunHistogram(context.Background(), s, q, time.Second); err == nil {
		t.Fatal("a histogram of millions of buckets was accepted")
	}
}
