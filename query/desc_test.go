package query

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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

// testDescReadsTheEnd: a newest-first query with a limit reads each blob
// backwards from its end and stops once nothing unread can be newer than
// the events found, under the reorder bound: plain, zstd and gzip blobs of
// two interleaved writers, with events stored up to 100 lines (under 32
// KiB) away from their place in time order both ways, are read for a small
// part of their size, and the answer is exactly the brute-force one.
func testDescReadsTheEnd(t *testing.T, cs *countingStore) {
	hour := at(16, 0, 0)
	f := &fixture{hour0: hour}
	for _, c := range []blobsink.Compression{blobsink.CompressNone, blobsink.CompressZstd, blobsink.CompressGzip} {
		writeReordered(t, cs.Store, f, "end"+string(c), hour, 12000, c)
	}
	for _, c := range []struct {
		name  string
		q     Query
		whole bool // fewer matches than the limit: every blob is read whole
	}{
		{"Newest100", Query{Limit: 100}, false},
		{"Fatal100", Query{Limit: 100, Level: logline.LevelFatal}, false},
		{"Newest3000", Query{Limit: 3000}, false},
		{"RareText", Query{Limit: 1000, Text: "rare"}, true},
	} {
		for _, comp := range []blobsink.Compression{blobsink.CompressNone, blobsink.CompressZstd, blobsink.CompressGzip} {
			t.Run(c.name+"/"+string(comp)+"x", func(t *testing.T) {
				q := c.q
				q.Services = []string{"end" + string(comp)}
				q.From, q.To = hour, hour.Add(time.Hour)
				q.Config.ReorderBytes = 32 << 10
				asc := q
				asc.Limit = 0
				want := f.want(asc)
				slices.Reverse(want)
				want = want[:min(len(want), q.Limit)]
				var size int64
				for w := range 2 {
					info, err := cs.Store.Stat(context.Background(), blobsink.BlobName(blobsink.HourPrefix(q.Services[0], hour), w+1, comp))
					if err != nil {
						t.Fatal(err)
					}
					size += info.Size
				}
				q.Desc = true
				cs.take()
				cs.ranged = 0
				got, st := collect(t, cs, q)
				if len(want) == 0 || !slices.Equal(got, want) {
					t.Fatalf("got %d events, want %d\n got %v\nwant %v", len(got), len(want), head(got), head(want))
				}
				if st.BytesRead != cs.ranged || st.BlobsRead != 2 || st.BlobsDamaged != 0 || st.LinesBad != 0 {
					t.Fatalf("stats %+v, %d bytes read by range", st, cs.ranged)
				}
				if c.whole && st.BytesRead != size {
					t.Fatalf("read %d of %d bytes: a blob with fewer matches than the limit must be read whole", st.BytesRead, size)
				}
				if !c.whole && c.q.Limit == 100 && st.BytesRead > size/3 {
					t.Fatalf("read %d of %d stored bytes for the newest %d: the blobs were not read from their end", st.BytesRead, size, c.q.Limit)
				}
				t.Logf("read %d of %d stored bytes (%d lines scanned)", st.BytesRead, size, st.LinesScanned)
			})
		}
	}
}

// writeReordered writes two interleaved writers' blobs of perBlob lines of
// about 250 bytes (one line every 100 ms between them, from hour on) for
// svc, with every 50th line stored 100 lines late and every 70th 100 lines
// early (under 32 KiB from its place in time order), in flushes of 300
// lines; one message in 37 holds "rare". The events go to f.all.
func writeReordered(t *testing.T, s blobsink.Store, f *fixture, svc string, hour time.Time, perBlob int, c blobsink.Compression) {
	t.Helper()
	rnd := uint64(1)
	hex := func() string {
		rnd = rnd*6364136223846793005 + 1442695040888963407
		return fmt.Sprintf("%016x%016x", rnd, rnd*0x9e3779b97f4a7c15)
	}
	for w := range 2 {
		type placed struct {
			e   logline.Event
			pos float64
		}
		var evs []placed
		for i := range perBlob {
			n := 2*i + w
			msg := fmt.Sprintf("request %d took %s", n, hex())
			if n%37 == 0 {
				msg += " rare"
			}
			e := mkEvent(svc, hour.Add(time.Duration(n)*100*time.Millisecond), logline.Level(n%7), fmt.Sprintf("%s-%05d", svc, n), msg, `{"k":1}`)
			f.all = append(f.all, e)
			pos := float64(i)
			switch {
			case i%50 == 0:
				pos += 100.5 // late: stored after newer events
			case i%70 == 0:
				pos -= 100.5 // ahead of its time (a clock running fast)
			}
			evs = append(evs, placed{e, pos})
		}
		slices.SortFunc(evs, func(a, b placed) int { return cmp.Compare(a.pos, b.pos) })
		var flushes [][]logline.Event
		for i, p := range evs {
			if i%300 == 0 {
				flushes = append(flushes, nil)
			}
			flushes[len(flushes)-1] = append(flushes[len(flushes)-1], p.e)
		}
		writeBlob(t, s, blobsink.BlobName(blobsink.HourPrefix(svc, hour), w+1, c), flushes, true)
	}
}

// gatedStore serves the first gate bytes of each blob it opens, and the
// rest only once the gate opens.
type gatedStore struct {
	blobsink.Store
	gate   int64
	opened chan struct{}
}

func (g *gatedStore) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := g.Store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return &gatedReader{ReadCloser: rc, left: g.gate, opened: g.opened}, nil
}

type gatedReader struct {
	io.ReadCloser
	left   int64
	opened chan struct{}
}

func (r *gatedReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		<-r.opened
		return r.ReadCloser.Read(p)
	}
	n, err := r.ReadCloser.Read(p[:min(int64(len(p)), r.left)])
	r.left -= int64(n)
	return n, err
}

// testFirstBeforeTheEnd: oldest first, a selective query hands its first
// events out as soon as no blob can still hold an older match, not at the
// end of the hour. The store serves only the first 512 KiB of each 2.9 MB
// blob until the first event is out (or, failing that, until 20 s have
// passed, so a query that waits for the whole hour fails instead of
// hanging); with events stored up to 32 KiB from their place in time
// order, the answer is still exactly in time order.
func testFirstBeforeTheEnd(t *testing.T, s blobsink.Store) {
	hour := at(16, 0, 0)
	f := &fixture{hour0: hour}
	writeReordered(t, s, f, "first", hour, 12000, blobsink.CompressNone)
	for _, c := range []struct {
		name  string
		level logline.Level
		text  string
	}{{"Text", logline.LevelNone, "rare"}, {"Level", logline.LevelFatal, ""}} {
		t.Run(c.name, func(t *testing.T) {
			q := Query{Services: []string{"first"}, From: hour, To: hour.Add(time.Hour), Level: c.level, Text: c.text,
				Config: Config{ReorderBytes: 64 << 10}}
			if !runGated(t, s, f, q, 20*time.Second) {
				t.Fatal("the first event waited for more than the first 512 KiB of each blob")
			}
		})
	}
}

// runGated runs q on s gated at 512 KiB a blob until the first event is
// out or wait has passed, checks the answer is f's, exactly in time order,
// and reports whether the first event came through the gate.
func runGated(t *testing.T, s blobsink.Store, f *fixture, q Query, wait time.Duration) (early bool) {
	t.Helper()
	g := &gatedStore{Store: s, gate: 512 << 10, opened: make(chan struct{})}
	timer := time.AfterFunc(wait, func() { close(g.opened) })
	var got []string
	st, err := Run(context.Background(), g, q, func(_ []byte, e *logline.Event) error {
		if len(got) == 0 && timer.Stop() {
			early = true
			close(g.opened)
		}
		got = append(got, string(e.ID))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := f.want(q); len(want) == 0 || !slices.Equal(got, want) || st.LinesOutOfOrder != 0 {
		t.Fatalf("got %d events (%d out of order), want %d\n got %v\nwant %v", len(got), st.LinesOutOfOrder, len(want), head(got), head(want))
	}
	return early
}

// testFirstByLateness: a blob's Lateness metadata proves how far back in
// time a later line can be, so an unfiltered query hands out its first
// events after the first 512 KiB of each 2.9 MB blob although the reorder
// bound (16 MiB) and the sort buffer (16 MiB) hold the whole hour, and the
// answer stays exactly in time order with events stored late, even with a
// sort buffer much smaller than the hour; newest first, the newest 100
// are found at the blobs' ends. Without the
// metadata (blobs written before it was recorded) the first event waits
// for the end of the blobs.
func testFirstByLateness(t *testing.T, s blobsink.Store) {
	hour := at(17, 0, 0)
	f := &fixture{hour0: hour}
	writeReordered(t, s, f, "late", hour, 12000, blobsink.CompressNone)
	q := Query{Services: []string{"late"}, From: hour, To: hour.Add(time.Hour)}
	run := func(t *testing.T, wait time.Duration) bool { return runGated(t, s, f, q, wait) }
	if !run(t, 20*time.Second) {
		t.Fatal("with Lateness metadata, the first event waited for more than the first 512 KiB of each blob")
	}
	// A sort buffer of a fifth of the hour holds what the lateness needs:
	// still exact, where a full buffer would be handed out whole.
	q.Config.SortBytes = 1 << 20
	run(t, 20*time.Second)
	q.Config.SortBytes = 0
	// Newest first, the same bound keeps the newest 100 to the blobs' ends.
	newest := func() (read int64) {
		d := q
		d.Desc, d.Limit = true, 100
		want := f.want(q)
		slices.Reverse(want)
		got, st := collect(t, s, d)
		if !slices.Equal(got, want[:100]) {
			t.Fatalf("newest 100: got %v, want %v", head(got), head(want[:100]))
		}
		return st.BytesRead
	}
	size := int64(0)
	for i := range 2 {
		info, err := s.Stat(context.Background(), blobsink.BlobName(blobsink.HourPrefix("late", hour), i+1, blobsink.CompressNone))
		if err != nil {
			t.Fatal(err)
		}
		size += info.Size
	}
	if read := newest(); read > size/8 {
		t.Fatalf("the newest 100 read %d of %d bytes with Lateness metadata", read, size)
	}
	for i := range 2 {
		name := blobsink.BlobName(blobsink.HourPrefix("late", hour), i+1, blobsink.CompressNone)
		info, err := s.Stat(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		md := maps.Clone(info.Metadata)
		if _, ok := blobsink.MetaValue(md, blobsink.MetaLateness); !ok {
			t.Fatalf("blob %s has no %s metadata: %v", name, blobsink.MetaLateness, md)
		}
		for k := range md {
			if strings.EqualFold(k, blobsink.MetaLateness) {
				delete(md, k)
			}
		}
		if err := s.SetMetadata(context.Background(), name, md); err != nil {
			t.Fatal(err)
		}
	}
	if run(t, time.Second) {
		t.Fatal("without Lateness metadata, the first event came before the end of the blobs: the test proves nothing")
	}
	if read := newest(); read != size {
		t.Fatalf("without Lateness metadata, the newest 100 read %d of %d bytes, not the whole blobs (under the reorder bound)", read, size)
	}
}

// appendOnOpen is a store where a writer appends block to a blob the
// moment a query opens it: after the query listed the blob.
type appendOnOpen struct {
	blobsink.Store
	t     *testing.T
	block []byte
	done  bool
}

func (a *appendOnOpen) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if !a.done {
		a.done = true
		info, err := a.Store.Stat(ctx, name)
		if err != nil {
			return nil, err
		}
		appendRaw(a.t, a.Store, name, &info.Size, a.block)
	}
	return a.Store.Open(ctx, name)
}

// testLatenessCoversTheListing: a blob's Lateness holds for the bytes
// listed with it. Lines appended after the listing may be later than it
// allows, so a query does not read past the listed size of a blob whose
// Lateness it goes by.
func testLatenessCoversTheListing(t *testing.T, s blobsink.Store) {
	hour := at(15, 0, 0)
	var evs [2][]logline.Event
	for i := range 20000 {
		evs[i%2] = append(evs[i%2], mkEvent("listed", hour.Add(time.Duration(i)*100*time.Millisecond), logline.LevelInfo, fmt.Sprintf("e%05d", i), "in order", `{}`))
	}
	for w := range 2 {
		writeBlob(t, s, blobsink.BlobName(blobsink.HourPrefix("listed", hour), w+1, blobsink.CompressNone), [][]logline.Event{evs[w]}, true)
	}
	late := mkEvent("listed", hour.Add(1500*time.Millisecond), logline.LevelInfo, "late", "appended after the listing", `{}`)
	a := &appendOnOpen{Store: s, t: t, block: logline.AppendLine(nil, &late)}
	q := Query{Services: []string{"listed"}, From: hour, To: hour.Add(time.Hour)}
	var got int
	st, err := Run(context.Background(), a, q, func(_ []byte, e *logline.Event) error {
		got++
		return nil
	})
	if err != nil || !a.done {
		t.Fatalf("query: %v (appended: %v)", err, a.done)
	}
	if got != 20000 || st.LinesOutOfOrder != 0 {
		t.Fatalf("%d events, %d out of order; want the 20000 listed, in order", got, st.LinesOutOfOrder)
	}
}

// TestFarRanges: events a few hours, days, years and centuries apart,
// read over ranges that cut them at every kind of boundary, oldest and
// newest first, with and without a limit: the answer is the brute-force
// one, and a range over centuries costs a probe per empty block and a
// listing per day of the months with data, not a listing per hour (newest
// first used to list every hour of the range: 2 million listings for
// now..2261).
func TestFarRanges(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{}
	for i, ts := range []string{
		"1678-01-01T00:00:00Z", "1999-12-31T23:59:59Z", "2026-11-21T16:00:00Z", "2026-11-21T16:30:00Z",
		"2026-11-22T00:30:00Z", "2027-02-01T05:00:00Z", "2100-06-15T12:00:00Z", "2261-12-31T23:59:59Z",
	} {
		tm, err := time.Parse(time.RFC3339, ts)
		if err != nil {
			t.Fatal(err)
		}
		for _, svc := range []string{"api", "web"} {
			e := mkEvent(svc, tm.Add(time.Duration(len(svc))*time.Millisecond), logline.LevelInfo, fmt.Sprintf("%s%d", svc, i), "far", "")
			f.all = append(f.all, e)
			writeBlob(t, s, blobsink.BlobName(blobsink.HourPrefix(svc, tm), i+1, blobsink.CompressNone), [][]logline.Event{{e}}, true)
		}
	}
	date := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, c := range []struct{ from, to string }{
		{"1000-01-01T00:00:00Z", "9999-01-01T00:00:00Z"},
		{"1678-01-01T00:00:00Z", "2262-01-01T00:00:00Z"},
		{"2026-11-21T16:10:00Z", "2261-12-31T00:00:00Z"}, // now..2261 as the report had it
		{"2026-11-21T16:00:00Z", "2026-11-22T01:00:00Z"}, // across midnight, no whole day
		{"2026-11-20T23:30:00Z", "2027-02-01T05:00:00Z"}, // to exclusive
		{"1999-12-31T23:00:00Z", "2100-06-15T12:00:00.002Z"},
		{"2027-01-01T00:00:00Z", "2100-01-01T00:00:00Z"},
	} {
		for _, desc := range []bool{false, true} {
			for _, limit := range []int{0, 1, 3} {
				q := Query{Services: []string{"api", "web"}, From: date(c.from), To: date(c.to), Limit: limit, Desc: desc}
				all := q
				all.Limit = 0
				clampRange(&all)
				want := f.want(all)
				if desc {
					slices.Reverse(want)
				}
				if limit > 0 && len(want) > limit {
					want = want[:limit]
				}
				got, st := collect(t, s, q)
				if !slices.Equal(got, want) {
					t.Errorf("%s..%s desc=%v limit=%d: got %v, want %v", c.from, c.to, desc, limit, got, want)
				}
				// A probe per empty block and a listing per day of a month
				// with data: about 330 per service for 1678..2261 here.
				if st.Listings > 2*400 {
					t.Errorf("%s..%s desc=%v limit=%d: %d listings, want a few hundred, not one per hour or day", c.from, c.to, desc, limit, st.Listings)
				}
			}
		}
	}
}

// TestHistogramBounds: the range, the interval and the bucket count are
// checked before any arithmetic on them. A histogram from 1700 to now by
// the hour used to overflow a time.Duration into a negative bucket count,
// and make panicked.
func TestHistogramBounds(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := writeFixture(t, s)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	y := func(year int) time.Time { return time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		name     string
		from, to time.Time
		iv       time.Duration
		err      string // "" for success
	}{
		{"1700ByHour", y(1700), now, time.Hour, "at most 100000"},
		{"1700ByWeek", y(1700), now, 168 * time.Hour, ""},
		{"EveryTimeByMonth", y(2), y(9999), MaxInterval, ""},
		{"YearTwoToNow", y(2), now, time.Second, "at most 100000"},
		{"Beyond", y(3000), y(4000), time.Hour, ""},
		{"Before", y(1000), y(1500), time.Hour, ""},
		{"TooLong", y(2026), now, MaxInterval + time.Hour, "from 1s to 744h"},
		{"Fraction", y(2026), now, 1500 * time.Millisecond, "whole number of seconds"},
		{"Negative", y(2026), now, -time.Hour, "from 1s to 744h"},
		{"LastBucket", y(2026), y(2026).Add(MaxBuckets * time.Second), time.Second, ""},
		{"OneOver", y(2026), y(2026).Add(MaxBuckets*time.Second + 1), time.Second, "at most 100000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := Query{Services: []string{"*"}, From: c.from, To: c.to}
			h, _, err := RunHistogram(context.Background(), s, q, c.iv)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The buckets that cover the clamped range, counted one by one.
			want := 0
			for b := h.From; b.Before(h.To); b = b.Add(c.iv) {
				want++
			}
			if len(h.Counts) != want || c.name == "LastBucket" && want != MaxBuckets {
				t.Fatalf("%d buckets, want %d", len(h.Counts), want)
			}
			var total int64
			for _, b := range h.Counts {
				for _, n := range b {
					total += n
				}
			}
			all := q
			clampRange(&all)
			if want := len(f.want(all)); total != int64(want) {
				t.Fatalf("%d events counted, want %d", total, want)
			}
			js := h.AppendJSON(nil)
			if !json.Valid(js) {
				t.Fatalf("invalid JSON %.300s", js)
			}
			for i := range h.Counts {
				if b := h.Bucket(i); b.Before(h.From) || !b.Before(h.To.Add(h.Interval)) {
					t.Fatalf("bucket %d starts at %v, outside %v..%v", i, b, h.From, h.To)
				}
			}
		})
	}
}
