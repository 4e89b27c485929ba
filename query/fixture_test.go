package query

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"ingest/blobsink"
	"ingest/logline"
)

// countingStore records which blobs were read (opened or read by range),
// and counts the bytes of ranged reads.
type countingStore struct {
	blobsink.Store
	mu     sync.Mutex
	opened []string
	ranged int64
}

// ReadRange forwards to the store's own ranged read.
func (c *countingStore) ReadRange(ctx context.Context, name string, offset int64, n int) ([]byte, error) {
	c.mu.Lock()
	c.ranged += int64(n)
	c.opened = append(c.opened, name)
	c.mu.Unlock()
	return c.Store.(RangeReader).ReadRange(ctx, name, offset, n)
}

func (c *countingStore) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	c.mu.Lock()
	c.opened = append(c.opened, name)
	c.mu.Unlock()
	return c.Store.Open(ctx, name)
}

func (c *countingStore) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.opened)
	c.opened = c.opened[:0]
	slices.Sort(out)
	return slices.Compact(out)
}

func mkEvent(svc string, t time.Time, lvl logline.Level, id, msg, attrs string) logline.Event {
	return logline.Event{Time: t.UnixNano(), Level: lvl, Service: []byte(svc), Host: []byte("h-" + svc),
		ID: []byte(id), Message: []byte(msg), Attrs: []byte(attrs)}
}

// encodeFrame compresses one flush as an independent frame.
func encodeFrame(t testing.TB, c blobsink.Compression, block []byte) []byte {
	t.Helper()
	switch c {
	case blobsink.CompressZstd:
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(block, nil)
	case blobsink.CompressGzip:
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(block)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	return block
}

// writeBlob writes flushes (each a list of events, written in the given
// order) to name as the sink would: create, one append per flush (one frame
// each when compressed), then the metadata. withMeta=false leaves the blob
// with no metadata at all, as a crashed writer might.
func writeBlob(t testing.TB, s blobsink.Store, name string, flushes [][]logline.Event, withMeta bool) {
	t.Helper()
	ctx := context.Background()
	var meta map[string]string
	if withMeta {
		meta = blobsink.Meta{}.Map()
	}
	if err := s.Create(ctx, name, meta); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	var m blobsink.Meta
	var off int64
	c := blobsink.CompressionOf(name)
	for _, fl := range flushes {
		var block []byte
		for i := range fl {
			block = logline.AppendLine(block, &fl[i])
			m = m.Merge(blobsink.EventMeta(fl[i].Time, fl[i].Level))
		}
		appendRaw(t, s, name, &off, encodeFrame(t, c, block))
	}
	if withMeta {
		if err := s.SetMetadata(ctx, name, m.Map()); err != nil {
			t.Fatal(err)
		}
	}
}

// appendRaw appends bytes in blocks of at most MaxAppendBytes.
func appendRaw(t testing.TB, s blobsink.Store, name string, off *int64, b []byte) {
	t.Helper()
	for len(b) > 0 {
		n := min(len(b), blobsink.MaxAppendBytes)
		if err := s.Append(context.Background(), name, *off, b[:n]); err != nil {
			t.Fatalf("append %s: %v", name, err)
		}
		*off += int64(n)
		b = b[n:]
	}
}

// fixture is several hours of two services, two interleaved writers each,
// plus a third writer that only covers minutes 40-59 of each hour, with late
// events that land in a later flush than their time says, and a "db" blob
// without metadata.
type fixture struct {
	all   []logline.Event // every event written
	hour0 time.Time
}

var fixHour0 = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

func fixtureName(svc string, hour time.Time, writer int) string {
	c := []blobsink.Compression{blobsink.CompressNone, blobsink.CompressZstd, blobsink.CompressGzip}[(hour.Hour()+writer)%3]
	return blobsink.BlobName(blobsink.HourPrefix(svc, hour), writer+1, c)
}

func writeFixture(t testing.TB, s blobsink.Store) *fixture {
	t.Helper()
	f := &fixture{hour0: fixHour0}
	type key struct {
		svc    string
		hour   time.Time
		writer int
	}
	blobs := map[key][]logline.Event{}
	late := map[string]bool{}
	add := func(e logline.Event, writer int) {
		k := key{string(e.Service), time.Unix(0, e.Time).UTC().Truncate(time.Hour), writer}
		blobs[k] = append(blobs[k], e)
		f.all = append(f.all, e)
	}
	svcs := []string{"api", "web"}
	for i := 0; ; i++ {
		ts := fixHour0.Add(time.Duration(i) * 997 * time.Millisecond)
		if !ts.Before(fixHour0.Add(4 * time.Hour)) {
			break
		}
		msg := fmt.Sprintf("event %d", i)
		if i%11 == 0 {
			msg += " upstream timeout after 3s"
		}
		if i%13 == 0 {
			msg += ` disk "full"`
		}
		e := mkEvent(svcs[i%2], ts, logline.Level(i%7), fmt.Sprintf("e%06d", i), msg, fmt.Sprintf(`{"n":%d,"id":"dup"}`, i))
		writer := (i / 2) % 2
		if ts.Minute() >= 40 {
			writer = 2
		}
		if i%97 == 0 && writer < 2 {
			late[string(e.ID)] = true
		}
		add(e, writer)
	}
	// Boundaries of the 16:04-16:06 window, and the last tick inside it.
	add(mkEvent("api", time.Date(2026, 11, 21, 16, 4, 0, 0, time.UTC), logline.LevelInfo, "from-edge", "at from", ""), 0)
	add(mkEvent("web", time.Date(2026, 11, 21, 16, 6, 0, 0, time.UTC), logline.LevelInfo, "to-edge", "at to", ""), 1)
	add(mkEvent("web", time.Date(2026, 11, 21, 16, 5, 59, 999999900, time.UTC), logline.LevelInfo, "last-tick", "just before to", ""), 0)

	for k, evs := range blobs {
		slices.SortStableFunc(evs, func(a, b logline.Event) int { return cmpInt(a.Time, b.Time) })
		// Flushes of 120 events; a late event is held back to the next flush,
		// and each flush is sorted, as a writer sorts what it buffered.
		const flushLen = 120
		var flushes [][]logline.Event
		var held []logline.Event
		for start := 0; start < len(evs); start += flushLen {
			var fl []logline.Event
			fl = append(fl, held...)
			held = held[:0]
			for _, e := range evs[start:min(start+flushLen, len(evs))] {
				if late[string(e.ID)] && start+flushLen < len(evs) {
					held = append(held, e)
					continue
				}
				fl = append(fl, e)
			}
			slices.SortStableFunc(fl, func(a, b logline.Event) int { return cmpInt(a.Time, b.Time) })
			flushes = append(flushes, fl)
		}
		writeBlob(t, s, fixtureName(k.svc, k.hour, k.writer), flushes, true)
	}
	// A blob whose writer never set metadata: it must be read.
	var db []logline.Event
	for i := range 5 {
		db = append(db, mkEvent("db", time.Date(2026, 11, 21, 16, 5, i, 0, time.UTC), logline.LevelWarn, fmt.Sprintf("db%d", i), "slow query", `{"ms":900}`))
	}
	f.all = append(f.all, db...)
	writeBlob(t, s, "db/2026/11/21/1600/000001.log", [][]logline.Event{db}, false)
	return f
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// want computes the expected ids of q by brute force.
func (f *fixture) want(q Query) []string {
	svcs := map[string]bool{}
	for _, s := range q.Services {
		svcs[s] = true
	}
	var sel []logline.Event
	for _, e := range f.all {
		line := logline.AppendLine(nil, &e)
		if (svcs["*"] || svcs[string(e.Service)]) && e.Time >= q.From.UnixNano() && e.Time < q.To.UnixNano() &&
			(q.Level == logline.LevelNone || e.Level >= q.Level) && bytes.Contains(e.Message, []byte(q.Text)) &&
			(q.Levels == 0 || q.Levels.Has(e.Level)) && (q.Host == nil || q.Host(e.Host)) && (q.Keep == nil || q.Keep(e.Message)) &&
			(q.Grep == nil || q.Grep.Match(bytes.TrimSuffix(line, []byte("\n")))) {
			sel = append(sel, e)
		}
	}
	slices.SortStableFunc(sel, func(a, b logline.Event) int { return cmpInt(a.Time, b.Time) })
	if q.Limit > 0 && len(sel) > q.Limit {
		sel = sel[:q.Limit]
	}
	ids := make([]string, len(sel))
	for i, e := range sel {
		ids[i] = string(e.ID)
	}
	return ids
}

// collect runs q and returns the ids in output order, checking that every
// line handed out parses to the event handed with it, and that RunNDJSON
// writes exactly those events, encoded.
func collect(t *testing.T, s blobsink.Store, q Query) ([]string, Stats) {
	t.Helper()
	var ids []string
	var want []byte
	st, err := Run(context.Background(), s, q, func(line []byte, e *logline.Event) error {
		if line[len(line)-1] != '\n' {
			t.Fatalf("line without its newline: %q", line)
		}
		var again logline.Event
		if err := logline.Parse(line, &again); err != nil || again.Time != e.Time || !bytes.Equal(again.ID, e.ID) {
			t.Fatalf("line %q does not match event %+v (%v)", line, e, err)
		}
		ids = append(ids, string(e.ID))
		want = AppendNDJSON(want, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got bytes.Buffer
	ns := s
	if c, ok := s.(*countingStore); ok {
		ns = c.Store // the caller checks which blobs Run opened
	}
	nst, err := RunNDJSON(context.Background(), ns, q, &got)
	if err != nil {
		t.Fatalf("RunNDJSON: %v", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("RunNDJSON wrote %d bytes (%d lines), Run's events encode to %d (%d lines)",
			got.Len(), bytes.Count(got.Bytes(), []byte{'\n'}), len(want), len(ids))
	}
	if nst.LinesReturned != st.LinesReturned {
		t.Fatalf("RunNDJSON returned %d lines, Run %d", nst.LinesReturned, st.LinesReturned)
	}
	return ids, st
}
