package blobsink

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"ingest/logline"
)

// timedLines is one line per time, in the order given (seconds after hour).
func timedLines(secs ...int) []byte {
	var out []byte
	for i, s := range secs {
		e := logline.Event{Time: hour.Add(time.Duration(s) * time.Second).UnixNano(), Level: logline.LevelInfo,
			Service: []byte("m"), Host: []byte("h1"), ID: []byte{'a' + byte(i%26)}, Message: []byte("x")}
		out = logline.AppendLine(out, &e)
	}
	return out
}

func TestMetaLateness(t *testing.T) {
	sec := int64(time.Second)
	for _, tc := range []struct {
		name  string
		meta  Meta
		late  int64
		known bool
	}{
		{"in order", scanMeta(timedLines(1, 2, 2, 5)), 0, true},
		{"one late line", scanMeta(timedLines(1, 9, 3, 10)), 6 * sec, true},
		{"the most late counts", scanMeta(timedLines(5, 4, 20, 12, 19, 2, 30)), 18 * sec, true},
		{"late against an earlier block", scanMeta(timedLines(1, 8)).Merge(scanMeta(timedLines(3, 9))), 5 * sec, true},
		{"a later block in order", scanMeta(timedLines(1, 8)).Merge(scanMeta(timedLines(8, 9))), 0, true},
		{"events one by one", EventMeta(10*sec, logline.LevelInfo).Merge(EventMeta(4*sec, logline.LevelInfo)).Merge(EventMeta(7*sec, logline.LevelInfo)), 6 * sec, true},
		{"an empty block changes nothing", scanMeta(timedLines(4, 1)).Merge(scanMeta(nil)), 3 * sec, true},
		{"a block of unknown lateness", scanMeta(timedLines(1, 2)).Merge(Meta{Start: hour.UnixNano(), End: hour.UnixNano(), Count: 1}), 0, false},
		{"times as lines store them (100 ns)", EventMeta(100, logline.LevelInfo).Merge(EventMeta(99, logline.LevelInfo)), 100, true},
		{"under a millisecond", EventMeta(1500, logline.LevelInfo).Merge(EventMeta(0, logline.LevelInfo)), 1500, true},
		{"a newest time that is not one", scanMeta([]byte("1.0;2026-99-99T99:99:99.9999999Z;info;m;h;i;\"x\";{}\n" + string(timedLines(3, 1)))), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.meta.LateKnown != tc.known || tc.known && tc.meta.Late != tc.late {
				t.Fatalf("Late = %v (known %v), want %v (known %v)", time.Duration(tc.meta.Late), tc.meta.LateKnown, time.Duration(tc.late), tc.known)
			}
			for k, v := range tc.meta.Map() {
				for _, c := range []byte(v) {
					if c < ' ' || c > '~' {
						t.Fatalf("metadata %s=%q is not printable ASCII, as an HTTP header must be", k, v)
					}
				}
			}
			back, ok := ParseMeta(tc.meta.Map())
			if !ok || back.LateKnown != tc.known || tc.known && back.Late != tc.meta.Late {
				t.Fatalf("through blob metadata %v: %+v, %v", tc.meta.Map(), back, ok)
			}
		})
	}
}

// TestScanMetaLatenessMatchesDefinition checks scanMeta's lateness, which
// parses as few times as it can, against the definition on random orders.
func TestScanMetaLatenessMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		secs := make([]int, 1+rng.IntN(40))
		for i := range secs {
			secs[i] = rng.IntN(3600)
		}
		var want, newest int
		for i, s := range secs {
			if i == 0 || s > newest {
				newest = s
			}
			want = max(want, newest-s)
		}
		m := scanMeta(timedLines(secs...))
		if !m.LateKnown || m.Late != int64(want)*int64(time.Second) {
			t.Fatalf("%v: Late = %v (known %v), want %ds", secs, time.Duration(m.Late), m.LateKnown, want)
		}
	}
}

func TestMetaWithoutLatenessIsUnknown(t *testing.T) {
	md := scanMeta(timedLines(1, 2)).Map()
	delete(md, MetaLateness)
	if m, ok := ParseMeta(md); !ok || m.LateKnown {
		t.Fatalf("metadata without %s: %+v, %v; want lateness unknown", MetaLateness, m, ok)
	}
}

// TestScanMetaLatenessMatchesEvents checks the lateness scanMeta reads from
// the text of lines against the events' times merged one by one, for runs
// that interleave within a minute (the digit shortcut) and across minutes
// and hours (full parses).
func TestScanMetaLatenessMatchesEvents(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	spans := []time.Duration{time.Millisecond, time.Second, 3 * time.Minute, 2 * time.Hour}
	for run := range 400 {
		span := spans[run%len(spans)]
		var data []byte
		var want Meta
		for i := range 1 + r.IntN(60) {
			ts := hour.Add(time.Duration(r.Int64N(int64(span)))).UnixNano()
			e := logline.Event{Time: ts, Level: logline.LevelInfo, Service: []byte("m"), Host: []byte("h"), ID: []byte{'a' + byte(i%26)}, Message: []byte("x")}
			data = logline.AppendLine(data, &e)
			want = want.Merge(EventMeta(ts, logline.LevelInfo))
		}
		if got := scanMeta(data); got != want {
			t.Fatalf("run %d (times within %v): scanMeta = %+v, events merged = %+v\n%s", run, span, got, want, data)
		}
	}
}

// FuzzSummaryMatchesLines checks that the Summary the producer keeps as it
// writes lines (logline.Summary.Add, which the blob's metadata takes
// instead of reading the lines) says what reading the lines back says:
// any times the intake accepts (years 1678..2261), in any order, any
// levels. Each 9 bytes of the input are one line: a time (Unix ns,
// little-endian) and a level. The times are brought into a window of 250
// years inside those (the first line's time places it): a blob's lines
// share an hour, and times further apart than int64 nanoseconds span
// would overflow the lateness either way.
func FuzzSummaryMatchesLines(f *testing.F) {
	line := func(t int64, l logline.Level) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, uint64(t)), byte(l))
	}
	h := hour.UnixNano()
	f.Add(line(h, logline.LevelInfo))
	f.Add(bytes.Join([][]byte{line(h+2e9, logline.LevelWarn), line(h+1e9+50, logline.LevelNone), line(h+3e9, logline.LevelError)}, nil))
	lo := time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	hi := time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() // exclusive
	f.Add(bytes.Join([][]byte{line(lo, logline.LevelFatal), line(hi-1, logline.LevelTrace), line(-1, logline.LevelDebug)}, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		var data []byte
		var sum logline.Summary
		var enc logline.Encoder
		const window = 250 * 365 * 24 * int64(time.Hour)
		var base int64
		for i := 0; i+9 <= len(in) && i < 9*200; i += 9 {
			ts := int64(binary.LittleEndian.Uint64(in[i:]))
			if i == 0 {
				base = lo + int64(uint64(ts)%uint64(hi-window-lo))
			}
			ts = base + int64(uint64(ts)%uint64(window))
			e := logline.Event{Time: ts, Level: logline.Level(in[i+8] % 7),
				Service: []byte("m"), Host: []byte("h"), ID: []byte("i"), Message: []byte("x")}
			data = enc.AppendLine(data, &e)
			sum.Add(e.Time, e.Level)
		}
		if sum.Count == 0 {
			return
		}
		if got := scanMeta(data); got != Meta(sum) {
			t.Fatalf("lines read back: %+v, summary kept while writing: %+v\n%s", got, sum, data)
		}
	})
}

// BenchmarkScanMetaInterleaved reads the metadata of lines the way the
// load generator's requests leave them in a chunk: rising times, a third
// of them sent as Unix milliseconds (so a little older than the line
// before), each request starting before the newest time of the one
// before.
func BenchmarkScanMetaInterleaved(b *testing.B) {
	var data []byte
	var want Meta
	for req := range 30 {
		start := hour.Add(time.Duration(req) * 700 * time.Microsecond)
		for i := range 1000 {
			ts := start.Add(time.Duration(i) * time.Microsecond)
			if i%3 == 0 {
				ts = ts.Truncate(time.Millisecond)
			}
			e := logline.Event{Time: ts.UnixNano(), Level: logline.LevelInfo,
				Service: []byte("bench"), Host: []byte("h1"), ID: []byte("id"), Message: []byte("a message of some length")}
			data = logline.AppendLine(data, &e)
			want = want.Merge(EventMeta(e.Time, e.Level))
		}
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if m := scanMeta(data); m != want {
			b.Fatalf("scanMeta = %+v, want %+v", m, want)
		}
	}
}
