package query

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	"ingest/blobsink"
	"ingest/logline"
)

// TestLevelsHostKeep: the level set, the host and message functions select
// the same events in both orders and in the histogram as a brute-force pass
// over the fixture, and the level set skips blobs by their LogType.
func TestLevelsHostKeep(t *testing.T) {
	fs, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: fs}
	f := writeFixture(t, fs)
	timeout := regexp.MustCompile(`timeout|"full"`)
	for _, c := range []struct {
		name string
		q    Query
	}{
		{"levels", Query{Levels: logline.LevelSet(0).Add(logline.LevelError).Add(logline.LevelNone)}},
		{"host", Query{Host: func(h []byte) bool { return string(h) == "h-web" }}},
		{"keep", Query{Keep: func(m []byte) bool { return timeout.Match(m) }}},
		{"all", Query{Levels: logline.LevelSet(0).Add(logline.LevelWarn).Add(logline.LevelDebug), Text: "event",
			Host: func(h []byte) bool { return !bytes.Equal(h, []byte("h-db")) }, Keep: func(m []byte) bool { return !timeout.Match(m) }}},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := c.q
			q.Services, q.From, q.To = []string{"*"}, at(14, 30, 0), at(17, 10, 0)
			want := f.want(q)
			if len(want) == 0 || len(want) == len(f.want(Query{Services: q.Services, From: q.From, To: q.To})) {
				t.Fatalf("the filter selects %d events: the test would prove nothing", len(want))
			}
			got, _ := collect(t, cs, q)
			if !slices.Equal(got, want) {
				t.Fatalf("got %d events, want %d", len(got), len(want))
			}
			q.Desc, q.Limit = true, 50
			got, _ = collect(t, cs, q)
			slices.Reverse(want)
			if !slices.Equal(got, want[:50]) {
				t.Fatalf("newest first: got %v, want %v", head(got), head(want))
			}
			h, _, err := RunHistogram(context.Background(), cs, q, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, b := range h.Counts {
				for _, c := range b {
					n += c
				}
			}
			if n != int64(len(want)) {
				t.Fatalf("histogram counts %d, want %d", n, len(want))
			}
		})
	}
	// A set without LevelNone skips the blobs whose LogType lists none of
	// its levels; one with LevelNone reads them (LogType leaves it out).
	var evs []logline.Event
	for i := range 6 {
		evs = append(evs, mkEvent("lv", at(16, 1, i), logline.Level(1+i%3), "t", "m", "")) // trace, debug, info
	}
	writeBlob(t, fs, "lv/2026/11/21/1600/000001.log", [][]logline.Event{evs}, true)
	for set, skipped := range map[logline.LevelSet]int{
		logline.LevelSet(0).Add(logline.LevelError):                        1,
		logline.LevelSet(0).Add(logline.LevelDebug):                        0,
		logline.LevelSet(0).Add(logline.LevelError).Add(logline.LevelNone): 0,
	} {
		_, st := collect(t, cs, Query{Services: []string{"lv"}, From: at(16, 0, 0), To: at(17, 0, 0), Levels: set})
		if st.BlobsSkipped != skipped {
			t.Errorf("levels %v: skipped %d blobs, want %d", set, st.BlobsSkipped, skipped)
		}
	}
}

// TestEstimate: the blobs a query would read, from listings alone, pruned
// by time and levels, none opened.
func TestEstimate(t *testing.T) {
	fs, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: fs}
	writeFixture(t, fs)
	est, st, err := EstimateOf(context.Background(), cs, Query{Services: []string{"*"}, From: at(16, 4, 0), To: at(16, 6, 0)})
	if err != nil {
		t.Fatal(err)
	}
	// As in the Window case: two writers' 16:00 blobs of api and web,
	// and the db blob without metadata (no count).
	if est.Services != 3 || est.Blobs != 5 || est.Bytes == 0 || est.Events < 4*500 || est.Events > 4*700 || len(cs.take()) != 0 || st.Listings == 0 {
		t.Fatalf("estimate %+v, stats %+v", est, st)
	}
	est, _, err = EstimateOf(context.Background(), cs, Query{Services: []string{"api"}, From: at(16, 4, 0), To: at(16, 6, 0), Levels: logline.LevelSet(0).Add(logline.LevelFatal)})
	if err != nil || est.Blobs != 2 || est.Services != 1 {
		t.Fatalf("estimate %+v %v", est, err)
	}
	if _, _, err := EstimateOf(context.Background(), cs, Query{From: at(16, 4, 0), To: at(16, 6, 0)}); err == nil {
		t.Fatal("no service: want an error")
	}
}
