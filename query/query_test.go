package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"ingest/blobsink"
	"ingest/internal/httperr"
	"ingest/logline"
)

func TestFileStore(t *testing.T) {
	runSuite(t, func(t *testing.T) blobsink.Store {
		s, err := blobsink.NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func at(hh, mm, ss int) time.Time { return time.Date(2026, 11, 21, hh, mm, ss, 0, time.UTC) }

// runSuite runs every backend-independent test against stores from newStore
// (a fresh, empty store per call).
func runSuite(t *testing.T, newStore func(t *testing.T) blobsink.Store) {
	t.Run("Fixture", func(t *testing.T) {
		cs := &countingStore{Store: newStore(t)}
		f := writeFixture(t, cs.Store)
		testFixture(t, cs, f)
	})
	t.Run("BadLines", func(t *testing.T) { testBadLines(t, newStore(t)) })
	t.Run("LevelSkip", func(t *testing.T) { testLevelSkip(t, &countingStore{Store: newStore(t)}) })
	t.Run("MergeWithoutSortBuffer", func(t *testing.T) { testMergeOrder(t, newStore(t)) })
	t.Run("DamagedFrame", func(t *testing.T) { testDamagedFrame(t, newStore(t)) })
	t.Run("OpenBlob", func(t *testing.T) { testOpenBlob(t, newStore(t)) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, newStore(t)) })
	t.Run("DescReadsTheEnd", func(t *testing.T) { testDescReadsTheEnd(t, &countingStore{Store: newStore(t)}) })
	t.Run("FirstBeforeTheEnd", func(t *testing.T) { testFirstBeforeTheEnd(t, newStore(t)) })
	t.Run("FirstByLateness", func(t *testing.T) { testFirstByLateness(t, newStore(t)) })
	t.Run("LatenessCoversTheListing", func(t *testing.T) { testLatenessCoversTheListing(t, newStore(t)) })
}

func testFixture(t *testing.T, cs *countingStore, f *fixture) {
	check := func(t *testing.T, q Query) ([]string, Stats) {
		t.Helper()
		cs.take()
		got, st := collect(t, cs, q)
		want := f.want(q)
		if len(want) == 0 {
			t.Fatal("the fixture selects nothing: the test would prove nothing")
		}
		if !slices.Equal(got, want) {
			t.Fatalf("got %d events, want %d\n got %v\nwant %v", len(got), len(want), head(got), head(want))
		}
		if st.LinesReturned != int64(len(got)) || st.LinesBad != 0 || st.LinesTooLong != 0 || st.BlobsDamaged != 0 {
			t.Fatalf("stats %+v", st)
		}
		return got, st
	}

	t.Run("Window", func(t *testing.T) {
		q := Query{Services: []string{"api", "web"}, From: at(16, 4, 0), To: at(16, 6, 0)}
		got, st := check(t, q)
		if got[0] != "from-edge" || got[len(got)-1] != "last-tick" || slices.Contains(got, "to-edge") {
			t.Fatalf("from must be inclusive and to exclusive: first %s last %s", got[0], got[len(got)-1])
		}
		// Only the two interleaved writers' 16:00 blobs overlap; the 16:40-16:59
		// writer's blobs are skipped by metadata, other hours never listed.
		opened := cs.take()
		wantOpened := []string{fixtureName("api", at(16, 0, 0), 0), fixtureName("api", at(16, 0, 0), 1),
			fixtureName("web", at(16, 0, 0), 0), fixtureName("web", at(16, 0, 0), 1)}
		slices.Sort(wantOpened)
		if !slices.Equal(opened, wantOpened) {
			t.Fatalf("opened %v, want %v", opened, wantOpened)
		}
		if st.Prefixes != 2 || st.Listings != 2 || st.BlobsListed != 6 || st.BlobsSkipped != 2 || st.BlobsRead != 4 {
			t.Fatalf("stats %+v", st)
		}
		if st.LinesScanned <= st.LinesMatched || st.BytesRead == 0 || st.BytesDecoded <= st.BytesRead {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("AllServicesReadsBlobWithoutMetadata", func(t *testing.T) {
		got, _ := check(t, Query{Services: []string{"*"}, From: at(16, 4, 0), To: at(16, 6, 0)})
		if !slices.Contains(got, "db3") {
			t.Fatal("the blob without metadata was not read")
		}
		if !slices.Contains(cs.take(), "db/2026/11/21/1600/000001.log") {
			t.Fatal("the blob without metadata was not opened")
		}
	})
	t.Run("CommaList", func(t *testing.T) {
		check(t, Query{Services: ParseServices("web, db,web"), From: at(16, 0, 0), To: at(17, 0, 0)})
	})
	t.Run("Level", func(t *testing.T) {
		got, _ := check(t, Query{Services: []string{"*"}, From: at(15, 30, 0), To: at(16, 30, 0), Level: logline.LevelError})
		for _, id := range got {
			if n := idNum(id); n%7 != int(logline.LevelError) && n%7 != int(logline.LevelFatal) {
				t.Fatalf("%s has a level below error", id)
			}
		}
	})
	t.Run("TextRawSafe", func(t *testing.T) {
		check(t, Query{Services: []string{"api", "web"}, From: at(14, 0, 0), To: at(15, 0, 0), Text: "timeout after"})
	})
	t.Run("TextEscaped", func(t *testing.T) {
		check(t, Query{Services: []string{"api"}, From: at(14, 0, 0), To: at(15, 0, 0), Text: `disk "full"`})
	})
	t.Run("Grep", func(t *testing.T) {
		check(t, Query{Services: []string{"*"}, From: at(14, 0, 0), To: at(18, 0, 0), Grep: regexp.MustCompile(`;error;.*"n":1[0-9]{3},`)})
	})
	t.Run("LevelTextGrep", func(t *testing.T) {
		check(t, Query{Services: []string{"*"}, From: at(14, 0, 0), To: at(18, 0, 0), Level: logline.LevelWarn, Text: "timeout", Grep: regexp.MustCompile(`^1\.0;2026-11-21T1[45]`)})
	})
	t.Run("Limit", func(t *testing.T) {
		got, st := check(t, Query{Services: []string{"api", "web"}, From: at(14, 30, 0), To: at(17, 0, 0), Limit: 7})
		if len(got) != 7 || st.BlobsRead > 3*2 {
			t.Fatalf("limit 7 read %d blobs for %d events", st.BlobsRead, len(got))
		}
	})
	t.Run("AllHoursLateEventsInOrder", func(t *testing.T) {
		got, st := check(t, Query{Services: []string{"api", "web"}, From: at(13, 30, 0), To: at(18, 30, 0)})
		if len(got) < 14000 || st.Prefixes != 2*6 || st.BlobsSkipped != 0 {
			t.Fatalf("%d events, stats %+v", len(got), st)
		}
	})
	t.Run("LateEventsNeedTheSortBuffer", func(t *testing.T) {
		// With a sort buffer of a few lines, the late events come out where
		// their flush put them: the same events, not in time order. This is
		// what the default buffer fixes in AllHoursLateEventsInOrder.
		q := Query{Services: []string{"api", "web"}, From: at(14, 0, 0), To: at(18, 0, 0)}
		var st Stats
		var got []string
		var times []int64
		r := newRunner(cs, &q, func(_ []byte, e *logline.Event) error {
			got = append(got, string(e.ID))
			times = append(times, e.Time)
			return nil
		}, &st)
		r.sort = newSorter(4 << 10)
		if err := r.run(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := f.want(q)
		if slices.IsSorted(times) || len(got) != len(want) {
			t.Fatalf("%d events, sorted %v: the fixture has no late events", len(got), slices.IsSorted(times))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatal("small sort buffer changed the set of events")
		}
	})
	t.Run("WholeDaysListedOnce", func(t *testing.T) {
		_, st := check(t, Query{Services: []string{"api", "web", "db"}, From: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)})
		if st.Listings != 3*3 || st.Prefixes != 3*72 {
			t.Fatalf("three whole days of three services: %d listings for %d prefixes", st.Listings, st.Prefixes)
		}
		_, st = check(t, Query{Services: []string{"api"}, From: time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)})
		if st.Listings != 3 || st.Prefixes != 26 {
			t.Fatalf("1 hour + 1 day + 1 hour: %d listings for %d prefixes", st.Listings, st.Prefixes)
		}
	})
	t.Run("YearsAndMonthsProbed", func(t *testing.T) {
		date := func(y, m, d int) time.Time { return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC) }
		// Seven whole years: 7 year probes per service, 12 month probes in
		// 2026, then November's 30 days listed one day at a time.
		_, st := check(t, Query{Services: []string{"api", "web", "db"}, From: date(2020, 1, 1), To: date(2027, 1, 1)})
		if st.Listings != 3*(7+12+30) {
			t.Fatalf("%d listings, want %d", st.Listings, 3*(7+12+30))
		}
		// Months only: October, December, January and February are probed
		// and found empty.
		_, st = check(t, Query{Services: []string{"api"}, From: date(2026, 10, 1), To: date(2027, 3, 1)})
		if st.Listings != 5+30 || st.Prefixes != int(date(2027, 3, 1).Sub(date(2026, 10, 1))/time.Hour) {
			t.Fatalf("%d listings for %d prefixes", st.Listings, st.Prefixes)
		}
	})
	t.Run("NothingThere", func(t *testing.T) {
		n := 0
		cs.take()
		st, err := Run(context.Background(), cs, Query{Services: []string{"nosuch", "api"}, From: at(10, 0, 0), To: at(12, 0, 0)},
			func([]byte, *logline.Event) error { n++; return nil })
		if err != nil || n != 0 || st.BlobsListed != 0 || len(cs.take()) != 0 {
			t.Fatalf("n=%d err=%v stats %+v", n, err, st)
		}
	})
	t.Run("AllServicesOnTheStoreItself", func(t *testing.T) {
		// cs hides the store's type; the bare store takes the FileStore
		// directory path (or TopLister) where it has one.
		q := Query{Services: []string{"*"}, From: at(16, 4, 0), To: at(16, 6, 0)}
		got, _ := collect(t, cs.Store, q)
		if want := f.want(q); !slices.Equal(got, want) {
			t.Fatalf("got %d events, want %d", len(got), len(want))
		}
	})
	t.Run("CallbackError", func(t *testing.T) {
		stop := errors.New("client went away")
		n := 0
		_, err := Run(context.Background(), cs, Query{Services: []string{"*"}, From: at(14, 0, 0), To: at(18, 0, 0)},
			func([]byte, *logline.Event) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Fatalf("err=%v after %d events", err, n)
		}
	})
}

func idNum(id string) int {
	var n int
	fmt.Sscanf(id, "e%d", &n)
	return n
}

func head(s []string) []string {
	if len(s) > 12 {
		return append(slices.Clone(s[:12]), "...")
	}
	return s
}

// testBadLines: garbage and torn lines are skipped and counted, long lines
// are returned whole up to the limit and skipped beyond it.
func testBadLines(t *testing.T, s blobsink.Store) {
	ctx := context.Background()
	name := "bad/2026/11/21/1600/000001.log"
	if err := s.Create(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	var b []byte
	ev := func(sec int, msg string) {
		e := mkEvent("bad", at(16, 0, sec), logline.LevelInfo, fmt.Sprintf("b%d", sec), msg, "")
		b = logline.AppendLine(b, &e)
	}
	ev(1, "ok")
	b = append(b, "this is not a log line\n"...)
	ev(2, strings.Repeat("x", 200<<10)) // longer than the read buffer, under the limit
	ev(3, strings.Repeat("y", 3<<20))   // over the 1 MiB limit below
	b = append(b, "\n"...)              // an empty line
	ev(4, "ok")
	b = append(b, "1.0;2026-11-21T16:00:05.0000000Z;info;bad;h;b5;\"torn ta"...) // torn tail: no attrs, no newline
	var off int64
	appendRaw(t, s, name, &off, b)
	// A second blob of the same hour ending in a valid line without '\n'.
	name2 := "bad/2026/11/21/1600/000002.log"
	if err := s.Create(ctx, name2, nil); err != nil {
		t.Fatal(err)
	}
	b = b[:0]
	ev(6, "no newline at the end")
	off = 0
	appendRaw(t, s, name2, &off, b[:len(b)-1])

	q := Query{Services: []string{"bad"}, From: at(16, 0, 0), To: at(17, 0, 0), Config: Config{MaxLineBytes: 1 << 20}}
	var got []string
	var lens []int
	st, err := Run(ctx, s, q, func(line []byte, e *logline.Event) error {
		got = append(got, string(e.ID))
		lens = append(lens, len(e.Message))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"b1", "b2", "b4", "b6"}) || lens[1] != 200<<10 {
		t.Fatalf("got %v (message lengths %v)", got, lens)
	}
	if st.LinesBad != 3 || st.LinesTooLong != 1 || st.LinesScanned != 7 {
		t.Fatalf("want 3 bad lines (garbage, empty, torn) and 1 too long, 7 scanned: %+v", st)
	}
	// Newest first with a limit reads the blobs backwards (ranged reads
	// of 64 KiB and more, which cut the long lines): the same lines,
	// reversed, the same counts.
	q.Desc, q.Limit = true, 10
	var desc []string
	lens = lens[:0]
	st, err = Run(ctx, s, q, func(line []byte, e *logline.Event) error {
		if line[len(line)-1] != '\n' {
			t.Fatalf("line without its newline: %q", line)
		}
		desc = append(desc, string(e.ID))
		lens = append(lens, len(e.Message))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(desc, []string{"b6", "b4", "b2", "b1"}) || lens[2] != 200<<10 {
		t.Fatalf("newest first: got %v (message lengths %v)", desc, lens)
	}
	if st.LinesBad != 3 || st.LinesTooLong != 1 || st.LinesScanned != 7 {
		t.Fatalf("newest first: want 3 bad lines and 1 too long, 7 scanned: %+v", st)
	}
}

// testLevelSkip: a blob whose LogType has no level at or above the asked one
// is not opened.
func testLevelSkip(t *testing.T, cs *countingStore) {
	var evs []logline.Event
	for i := range 10 {
		evs = append(evs, mkEvent("lv", at(16, 1, i), logline.Level(1+i%3), fmt.Sprint(i), "m", "")) // trace, debug, info
	}
	writeBlob(t, cs.Store, "lv/2026/11/21/1600/000001.log", [][]logline.Event{evs}, true)
	evs = evs[:0]
	for i := range 10 {
		evs = append(evs, mkEvent("lv", at(16, 2, i), logline.Level(1+i%5), fmt.Sprint(100+i), "m", "")) // up to error
	}
	writeBlob(t, cs.Store, "lv/2026/11/21/1600/000002.log", [][]logline.Event{evs}, true)
	got, st := collect(t, cs, Query{Services: []string{"lv"}, From: at(16, 0, 0), To: at(17, 0, 0), Level: logline.LevelWarn})
	if !slices.Equal(got, []string{"103", "104", "108", "109"}) || st.BlobsSkipped != 1 {
		t.Fatalf("got %v stats %+v", got, st)
	}
	if opened := cs.take(); !slices.Equal(opened, []string{"lv/2026/11/21/1600/000002.log"}) {
		t.Fatalf("opened %v", opened)
	}
}

// testMergeOrder: with a sort buffer far smaller than the hour, the k-way
// merge alone keeps two interleaved writers' sorted blobs in order, across
// services too.
func testMergeOrder(t *testing.T, s blobsink.Store) {
	var want []string
	for w, svc := range []string{"m1", "m2"} {
		for blob := range 2 {
			var flushes [][]logline.Event
			for f := range 10 {
				var fl []logline.Event
				for i := range 30 {
					n := ((f*30+i)*2+blob)*2 + w // four interleaved sequences
					fl = append(fl, mkEvent(svc, at(16, 0, 0).Add(time.Duration(n)*time.Millisecond), logline.LevelInfo, fmt.Sprintf("%05d", n), "merge", ""))
				}
				flushes = append(flushes, fl)
			}
			writeBlob(t, s, blobsink.BlobName(blobsink.HourPrefix(svc, at(16, 0, 0)), blob+1, blobsink.CompressZstd), flushes, true)
		}
	}
	for n := range 1200 {
		want = append(want, fmt.Sprintf("%05d", n))
	}
	q := Query{Services: []string{"m1", "m2"}, From: at(16, 0, 0), To: at(17, 0, 0)}
	var st Stats
	var got []string
	r := newRunner(s, &q, func(_ []byte, e *logline.Event) error { got = append(got, string(e.ID)); return nil }, &st)
	r.sort = newSorter(4 << 10) // about 40 lines per sorted chunk
	if err := r.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("merge order broken: got %v", head(got))
	}
}

// testDamagedFrame: a truncated zstd frame ends that blob (counted); the
// lines of its complete frames are returned, other blobs are unaffected.
func testDamagedFrame(t *testing.T, s blobsink.Store) {
	name := "dz/2026/11/21/1600/000001.log.zst"
	var evs [][]logline.Event
	for f := range 3 {
		var fl []logline.Event
		for i := range 20 {
			fl = append(fl, mkEvent("dz", at(16, f, i), logline.LevelInfo, fmt.Sprintf("%d-%d", f, i), "frame", ""))
		}
		evs = append(evs, fl)
	}
	writeBlob(t, s, name, evs[:2], false)
	st, err := s.Stat(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	off := st.Size
	frame := encodeFrame(t, blobsink.CompressZstd, logline.AppendLine(nil, &evs[2][0]))
	appendRaw(t, s, name, &off, frame[:len(frame)/2])
	writeBlob(t, s, "dz/2026/11/21/1600/000002.log.gz", [][]logline.Event{{mkEvent("dz", at(16, 59, 0), logline.LevelInfo, "gz", "ok", "")}}, true)
	got, stats := collect(t, s, Query{Services: []string{"dz"}, From: at(16, 0, 0), To: at(17, 0, 0)})
	if len(got) != 41 || got[40] != "gz" || stats.BlobsDamaged != 1 || stats.BlobsRead != 2 {
		t.Fatalf("got %d events (%v), stats %+v", len(got), head(got), stats)
	}
	// Read backwards, the torn frame is dropped and the frames before it
	// are found.
	desc, stats := collect(t, s, Query{Services: []string{"dz"}, From: at(16, 0, 0), To: at(17, 0, 0), Desc: true, Limit: 100})
	slices.Reverse(desc)
	if !slices.Equal(desc, got) || stats.BlobsDamaged != 1 {
		t.Fatalf("newest first: got %d events (%v), stats %+v", len(desc), head(desc), stats)
	}
}

// testOpenBlob: `ingest cat` sees the decoded lines of every frame.
func testOpenBlob(t *testing.T, s blobsink.Store) {
	ctx := context.Background()
	for _, c := range []blobsink.Compression{blobsink.CompressNone, blobsink.CompressZstd, blobsink.CompressGzip} {
		name := blobsink.BlobName("cat/2026/11/21/1600", 1+len(c), c)
		var want []byte
		var flushes [][]logline.Event
		for f := range 3 {
			var fl []logline.Event
			for i := range 5 {
				e := mkEvent("cat", at(16, f, i), logline.LevelDebug, "x", "m", "")
				want = logline.AppendLine(want, &e)
				fl = append(fl, e)
			}
			flushes = append(flushes, fl)
		}
		writeBlob(t, s, name, flushes, true)
		rc, err := OpenBlob(ctx, s, name)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		_, err = got.ReadFrom(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%s: err %v, got %d bytes want %d", name, err, got.Len(), len(want))
		}
		// An empty blob (created, never appended) has no lines.
		empty := blobsink.BlobName("cat/2026/11/21/1700", 1+len(c), c)
		if err := s.Create(ctx, empty, nil); err != nil {
			t.Fatal(err)
		}
		rc, err = OpenBlob(ctx, s, empty)
		if err != nil {
			t.Fatalf("%s: %v", empty, err)
		}
		got.Reset()
		_, err = got.ReadFrom(rc)
		rc.Close()
		if err != nil || got.Len() != 0 {
			t.Fatalf("%s: %v, %d bytes", empty, err, got.Len())
		}
	}
	if _, err := OpenBlob(ctx, s, "cat/2026/11/21/1600/000009.log"); !errors.Is(err, blobsink.ErrNotFound) {
		t.Fatalf("missing blob: %v", err)
	}
}

// testCancel: a cancelled context stops the query with its error.
func testCancel(t *testing.T, s blobsink.Store) {
	var evs []logline.Event
	for i := range 5000 {
		evs = append(evs, mkEvent("c", at(16, 0, 0).Add(time.Duration(i)*time.Millisecond), logline.LevelInfo, fmt.Sprint(i), "m", ""))
	}
	writeBlob(t, s, "c/2026/11/21/1600/000001.log", [][]logline.Event{evs}, true)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := Run(ctx, s, Query{Services: []string{"c"}, From: at(16, 0, 0), To: at(17, 0, 0)}, func([]byte, *logline.Event) error {
		n++
		if n == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n > 1024+10 {
		t.Fatalf("err %v after %d events", err, n)
	}
}

func TestValidate(t *testing.T) {
	ok := Query{Services: []string{"a"}, From: at(1, 0, 0), To: at(2, 0, 0)}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []Query{
		{From: at(1, 0, 0), To: at(2, 0, 0)},
		{Services: []string{""}, From: at(1, 0, 0), To: at(2, 0, 0)},
		{Services: []string{"a"}, From: at(2, 0, 0), To: at(2, 0, 0)},
		{Services: []string{"a"}, To: at(2, 0, 0)},
		{Services: []string{"a"}, From: at(1, 0, 0), To: at(2, 0, 0), Limit: -1},
		{Services: []string{"a"}, From: at(1, 0, 0), To: at(2, 0, 0), Config: Config{SortBytes: 10}},
		{Services: strings.Split(strings.Repeat("s,", MaxServices)+"last", ","), From: at(1, 0, 0), To: at(2, 0, 0)},
	} {
		if err := q.Validate(); err == nil || !strings.HasPrefix(err.Error(), "cannot ") {
			t.Errorf("Validate(%+v) = %v", q, err)
		}
	}
}

func TestParseServices(t *testing.T) {
	f := func(in string, want ...string) {
		t.Helper()
		if got := ParseServices(in); !slices.Equal(got, want) {
			t.Fatalf("ParseServices(%q) = %q, want %q", in, got, want)
		}
	}
	f("api", "api")
	f(" api, web ,api,,", "api", "web")
	f("api,*", "*")
	f("")
	many := make([]string, 5000)
	for i := range many {
		many[i] = fmt.Sprint(i % 2500)
	}
	if got := ParseServices(strings.Join(many, ",")); len(got) != 2500 || got[2499] != "2499" {
		t.Fatalf("5000 names, 2500 distinct: got %d", len(got))
	}
}

// panickingReader panics at its read number at (from 1), like a bug
// reached by a blob's bytes.
type panickingReader struct {
	io.ReadCloser
	at, reads int
}

func (p *panickingReader) Read(b []byte) (int, error) {
	if p.reads++; p.reads >= p.at {
		panic("bug reached by a blob")
	}
	return p.ReadCloser.Read(b)
}

type panickingStore struct {
	blobsink.Store
	at int
}

func (p panickingStore) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := p.Store.Open(ctx, name)
	return &panickingReader{ReadCloser: rc, at: p.at}, err
}

// TestQueryPanic: a panic while a query runs, in the caller's goroutine
// (the first read, which tells the compression) or in a blob's read-ahead
// goroutine (every later read), ends the query with an internal error, and
// the process goes on.
func TestQueryPanic(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFixture(t, s)
	q := Query{Services: []string{"api"}, From: at(14, 0, 0), To: at(15, 0, 0)}
	for _, at := range []int{1, 2} {
		for _, desc := range []bool{false, true} {
			q.Desc = desc
			_, err := RunNDJSON(context.Background(), panickingStore{s, at}, q, io.Discard)
			if e, ok := httperr.PanicOf(err); !ok || e.Value != "bug reached by a blob" {
				t.Fatalf("read %d, desc=%v: err %v, want the recovered panic", at, desc, err)
			}
		}
		_, _, err := RunHistogram(context.Background(), panickingStore{s, at}, q, time.Minute)
		if _, ok := httperr.PanicOf(err); !ok {
			t.Fatalf("histogram, read %d: err %v, want the recovered panic", at, err)
		}
	}
}

func TestHourIndex(t *testing.T) {
	f := func(name, prefix string, n, want int, wantOK bool) {
		t.Helper()
		if i, ok := hourIndex(name, prefix, n); i != want || ok != wantOK {
			t.Fatalf("hourIndex(%q, %q) = %d %v", name, prefix, i, ok)
		}
	}
	f("a/2026/11/21/1600/000001.log", "a/2026/11/21/1600/", 1, 0, true)
	f("a/2026/11/21/1600/000001.log.zst", "a/2026/11/21/", 24, 16, true)
	f("a/2026/11/21/2300/000002.log.gz", "a/2026/11/21/", 24, 23, true)
	f("a/2026/11/21/2400/000002.log.gz", "a/2026/11/21/", 24, 0, false)
	f("a/2026/11/21/1630/000001.log", "a/2026/11/21/", 24, 0, false)
	f("a/2026/11/21/1600/x/000001.log", "a/2026/11/21/1600/", 1, 0, false)
	f("a/2026/11/21/1600/notes.txt", "a/2026/11/21/1600/", 1, 0, false)
}

// failingStore breaks reads after some bytes, or listings, like a storage
// outage.
type failingStore struct {
	blobsink.Store
	readErr, listErr error
}

func (f *failingStore) List(ctx context.Context, prefix string, fn func(blobsink.BlobInfo) error) error {
	if f.listErr != nil {
		return f.listErr
	}
	return f.Store.List(ctx, prefix, fn)
}

func (f *failingStore) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := f.Store.Open(ctx, name)
	if err != nil || f.readErr == nil {
		return rc, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, 1000), iotest.ErrReader(f.readErr)), rc}, nil
}

// TestStorageErrors: a storage failure while reading (plain or compressed)
// or listing is returned, not mistaken for a damaged blob.
func TestStorageErrors(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFixture(t, s)
	outage := errors.New("connection reset")
	for _, svc := range []string{"api", "web"} { // 16:00 holds plain, zstd and gzip blobs of both
		_, err = Run(context.Background(), &failingStore{Store: s, readErr: outage}, Query{Services: []string{svc}, From: at(16, 0, 0), To: at(17, 0, 0)},
			func([]byte, *logline.Event) error { return nil })
		if !errors.Is(err, outage) || !strings.HasPrefix(err.Error(), "cannot read blob ") {
			t.Fatalf("read outage: %v", err)
		}
	}
	_, err = Run(context.Background(), &failingStore{Store: s, listErr: outage}, Query{Services: []string{"*"}, From: at(16, 0, 0), To: at(17, 0, 0)},
		func([]byte, *logline.Event) error { return nil })
	if !errors.Is(err, outage) || !strings.HasPrefix(err.Error(), "cannot list ") {
		t.Fatalf("list outage: %v", err)
	}
}

// TestWholeTimeRange: a range beyond what Unix nanoseconds can hold is
// clamped, and costs one probe per empty millennium, century, decade, year
// or month wholly inside it.
func TestWholeTimeRange(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := writeFixture(t, s)
	q := Query{Services: []string{"web"}, From: time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	got, st := collect(t, s, q)
	all := q
	all.From, all.To = at(0, 0, 0), at(23, 0, 0) // want() needs times Unix ns can hold
	if want := f.want(all); !slices.Equal(got, want) || len(want) == 0 {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	// Probes of the empty blocks wholly inside 1678..2261, largest first:
	// years 1678-1679, decades 1680-1690, centuries 1700-1900, century
	// 2000 (found), decades 2000-2020 (2020 found), years 2020-2026 (2026
	// found), 12 months (November found), then 30 days listed, years
	// 2027-2029, decades 2030-2090, century 2100, decades 2200-2250, years
	// 2260-2261.
	want := 2 + 2 + 3 + 1 + 3 + 7 + 12 + 30 + 3 + 7 + 1 + 6 + 2
	if st.Listings != want {
		t.Fatalf("%d listings, want %d", st.Listings, want)
	}
}
