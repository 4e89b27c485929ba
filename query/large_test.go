package query

import (
	"context"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ingest/blobsink"
	"ingest/logline"
)

// writeLarge writes about size bytes of ~200-byte lines per hour, for each
// hour starting at first, spread round-robin over writers interleaved blobs,
// in flushes of about 4 MiB (one frame each when compressed). It returns
// the number of events.
func writeLarge(t testing.TB, s blobsink.Store, svc string, first time.Time, hours int, size int64, writers int, c blobsink.Compression) int64 {
	t.Helper()
	const lineSize = 200
	perHour := size / lineSize
	step := time.Hour / time.Duration(perHour)
	msg := []byte("GET /api/v1/orders/000000 completed with status 200 for user u-000000 in 000 ms via edge-0")
	var total int64
	for h := range hours {
		hour := first.Add(time.Duration(h) * time.Hour)
		type blob struct {
			name  string
			block []byte
			off   int64
			meta  blobsink.Meta
		}
		bs := make([]*blob, writers)
		for w := range bs {
			bs[w] = &blob{name: blobsink.BlobName(blobsink.HourPrefix(svc, hour), w+1, c)}
			if err := s.Create(context.Background(), bs[w].name, blobsink.Meta{}.Map()); err != nil {
				t.Fatal(err)
			}
		}
		flush := func(b *blob) {
			appendRaw(t, s, b.name, &b.off, encodeFrame(t, c, b.block))
			b.block = b.block[:0]
		}
		var id, attrs []byte
		for i := range perHour {
			b := bs[i%int64(writers)]
			id = strconv.AppendInt(append(id[:0], 'e'), total+i, 10)
			attrs = strconv.AppendInt(append(attrs[:0], `{"n":`...), i, 10)
			attrs = append(attrs, `,"route":"orders"}`...)
			copy(msg[19:25], strconv.AppendInt(nil, 100000+i%900000, 10))
			// Levels trace to error in turn, and one line in 100 fatal
			// (in every writer's blob).
			lvl := logline.Level(1 + i%5)
			if i%100 == 98+(i/100)%2 {
				lvl = logline.LevelFatal
			}
			e := logline.Event{Time: hour.Add(time.Duration(i) * step).UnixNano(), Level: lvl,
				Service: []byte(svc), Host: []byte("web-17"), ID: id, Message: msg, Attrs: attrs}
			b.block = logline.AppendLine(b.block, &e)
			b.meta = b.meta.Merge(blobsink.EventMeta(e.Time, e.Level))
			if len(b.block) >= 4<<20-1024 {
				flush(b)
			}
		}
		for _, b := range bs {
			if len(b.block) > 0 {
				flush(b)
			}
			if err := s.SetMetadata(context.Background(), b.name, b.meta.Map()); err != nil {
				t.Fatal(err)
			}
		}
		total += perHour
	}
	return total
}

// TestBoundedMemory queries 200 MiB (four hours, two interleaved writers
// each; two hours plain, two zstd) and checks the heap stays far below the
// data size.
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MiB")
	}
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	n := writeLarge(t, s, "big", first, 2, 56<<20, 2, blobsink.CompressNone) +
		writeLarge(t, s, "big", first.Add(2*time.Hour), 2, 56<<20, 2, blobsink.CompressZstd)

	var got, last int64
	ordered := true
	var st Stats
	peak, base := peakHeap(func(sample func()) {
		st, err = Run(context.Background(), s, Query{Services: []string{"big"}, From: first, To: first.Add(4 * time.Hour)},
			func(_ []byte, e *logline.Event) error {
				ordered = ordered && e.Time >= last
				last = e.Time
				if got++; got%8192 == 0 {
					sample()
				}
				return nil
			})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != n || !ordered {
		t.Fatalf("got %d of %d events, in order %v", got, n, ordered)
	}
	const limit = 64 << 20
	t.Logf("scanned %d MiB in %d blobs; peak HeapInuse %.1f MiB (%.1f MiB before the query)",
		st.BytesDecoded>>20, st.BlobsRead, float64(peak)/(1<<20), float64(base)/(1<<20))
	if peak > limit {
		t.Fatalf("peak HeapInuse %d MiB, want under %d MiB", peak>>20, limit>>20)
	}
}

// peakHeap runs fn, which calls sample now and then, and returns the peak
// HeapInuse seen (sampled every 5 ms too) and HeapInuse before fn.
func peakHeap(fn func(sample func())) (peak, base uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base = ms.HeapInuse
	var p atomic.Uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		for {
			old := p.Load()
			if ms.HeapInuse <= old || p.CompareAndSwap(old, ms.HeapInuse) {
				return
			}
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				sample()
			}
		}
	})
	fn(sample)
	close(done)
	wg.Wait()
	return p.Load(), base
}

// TestReadAheadBudget merges 64 interleaved blobs of one hour: with a small
// --query-read-ahead-bytes the blobs share it instead of each reading three
// batches ahead, and the peak heap is far lower than with a budget so large
// that every blob reads fully ahead.
func TestReadAheadBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	n := writeLarge(t, s, "many", hour, 1, 64<<20, 64, blobsink.CompressNone)
	defer debug.SetGCPercent(debug.SetGCPercent(10)) // HeapInuse close to what is live
	measure := func(budget int) uint64 {
		var got int64
		peak, base := peakHeap(func(sample func()) {
			q := Query{Services: []string{"many"}, From: hour, To: hour.Add(time.Hour),
				Config: Config{SortBytes: 1 << 20, ReadAheadBytes: budget}}
			_, err = Run(context.Background(), s, q, func(_ []byte, e *logline.Event) error {
				if got++; got%1024 == 0 {
					sample()
				}
				return nil
			})
		})
		if err != nil || got != n {
			t.Fatalf("budget %d: got %d of %d events: %v", budget, got, n, err)
		}
		t.Logf("64 blobs, read-ahead budget %d MiB: peak HeapInuse %.1f MiB over %.1f MiB before", budget>>20,
			float64(peak-min(peak, base))/(1<<20), float64(base)/(1<<20))
		return peak - min(peak, base)
	}
	small, _, full := measure(1<<20), measure(DefaultReadAhead), measure(1<<30)
	if small > full*3/4 {
		t.Fatalf("a 1 MiB read-ahead budget peaked at %d KiB, not well below %d KiB with every blob reading ahead", small>>10, full>>10)
	}
}

// BenchmarkScan queries one large hour (QUERY_BENCH_MIB, default 256 MiB of
// ~200-byte lines in two interleaved blobs) from the FileStore, its pages
// cached ("read" only reads and decompresses the blobs, the floor of the
// rest): every line
// is read, parsed and filtered; "all" also sorts and hands out every line,
// "ndjson" too and writes each encoded as the HTTP answer does (RunNDJSON), "errors" hands out
// about one in five (level error and up), "fatal1pct" and "text1pct" one in
// 100 (by level, by message text). MB/s is decoded line bytes.
func BenchmarkScan(b *testing.B) {
	size := int64(256 << 20)
	if v, err := strconv.ParseInt(os.Getenv("QUERY_BENCH_MIB"), 10, 64); err == nil && v > 0 {
		size = v << 20
	}
	hour := time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC)
	for _, c := range []blobsink.Compression{blobsink.CompressNone, blobsink.CompressZstd} {
		name := "plain"
		if c != blobsink.CompressNone {
			name = string(c)
		}
		b.Run(name, func(b *testing.B) {
			s, err := blobsink.NewFileStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			n := writeLarge(b, s, "bench", hour, 1, size, 2, c)
			// The FileStore drops appended pages from the page cache: read
			// the blobs once, so that every case measures the scan, not
			// the disk.
			readAll(b, s)
			b.Run("read", func(b *testing.B) { benchRead(b, s) })
			isHost := func(h string) func([]byte) bool { return func(v []byte) bool { return string(v) == h } }
			completed := regexp.MustCompile("77 completed")
			for _, sub := range []struct {
				name   string
				level  logline.Level
				text   string
				ndjson bool
				levels logline.LevelSet
				host   func([]byte) bool
				keep   func([]byte) bool
			}{
				{name: "all"}, {name: "ndjson", ndjson: true},
				{name: "errors", level: logline.LevelError}, {name: "fatal1pct", level: logline.LevelFatal},
				{name: "text1pct", text: "77 completed"},
				// The selections of a Loki query: an exact level set, the
				// host, and a message function instead of Text.
				{name: "levelsFatal1pct", levels: logline.LevelSet(0).Add(logline.LevelFatal)},
				{name: "hostFatal1pct", level: logline.LevelFatal, host: isHost("web-17")},
				{name: "hostNone", host: isHost("web-99")},
				{name: "keep1pct", keep: completed.Match},
			} {
				b.Run(sub.name, func(b *testing.B) {
					q := Query{Services: []string{"bench"}, From: hour, To: hour.Add(time.Hour), Level: sub.level, Text: sub.text,
						Levels: sub.levels, Host: sub.host, Keep: sub.keep}
					var st Stats
					var first time.Duration // summed time to the first event
					b.ReportAllocs()
					cpu0 := cpuTime()
					for b.Loop() {
						start, got := time.Now(), false
						if sub.ndjson {
							st, err = RunNDJSON(context.Background(), s, q, writerFunc(func(p []byte) (int, error) {
								if !got {
									got = true
									first += time.Since(start)
								}
								return len(p), nil
							}))
						} else {
							st, err = Run(context.Background(), s, q, func([]byte, *logline.Event) error {
								if !got {
									got = true
									first += time.Since(start)
								}
								return nil
							})
						}
						if err != nil || st.LinesScanned != n {
							b.Fatalf("scanned %d of %d lines: %v", st.LinesScanned, n, err)
						}
					}
					b.SetBytes(st.BytesDecoded)
					cpu := (cpuTime() - cpu0).Seconds()
					b.ReportMetric(float64(st.LinesScanned)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
					// The machine may be shared: lines per second of this
					// process's CPU time (all threads, GC included) does not
					// depend on how much of the CPU the benchmark got.
					b.ReportMetric(float64(st.LinesScanned)*float64(b.N)/cpu, "lines/cpu-s")
					b.ReportMetric(float64(st.BytesDecoded)*float64(b.N)/cpu/1e6, "MB/cpu-s")
					b.ReportMetric(float64(st.BytesRead)/float64(st.BytesDecoded), "stored/decoded")
					b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "ms-to-first")
				})
			}
		})
	}
}

// benchRead is the floor a scan cannot go below: the blobs of the store
// read (and decompressed) into a 64 KiB buffer and dropped, each on a
// goroutine of its own as a query reads them.
func benchRead(b *testing.B, s Store) {
	var total int64
	cpu0 := cpuTime()
	for b.Loop() {
		total = readAll(b, s)
	}
	b.SetBytes(total)
	b.ReportMetric(float64(total)*float64(b.N)/(cpuTime()-cpu0).Seconds()/1e6, "MB/cpu-s")
}

// readAll reads and decompresses every blob of s, each on a goroutine of
// its own, and returns the bytes decoded.
func readAll(b *testing.B, s Store) int64 {
	var names []string
	if err := s.List(context.Background(), "", func(bi blobsink.BlobInfo) error {
		names = append(names, bi.Name)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			rc, err := OpenBlob(context.Background(), s, name)
			if err != nil {
				b.Error(err)
				return
			}
			defer rc.Close()
			buf := make([]byte, readBufSize)
			for {
				n, err := rc.Read(buf)
				total.Add(int64(n))
				if err == io.EOF {
					return
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return total.Load()
}

// writerFunc is an io.Writer.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDescLimit asks for the newest 100 events of a day of 24 hours
// of QUERY_BENCH_DESC_MIB (default 64) each, two interleaved writers per
// hour. Only the newest hour is written out; the 23 before it are sparse
// blobs of the same size carrying the metadata of full hours (a query that
// read them would count their zero bytes as bad lines, and the benchmark
// fails). "ranged" reads the newest blobs backwards from their end through
// the store's ReadRange; "whole" hides ReadRange, so they are read from the
// start, as before ranged reads.
func BenchmarkDescLimit(b *testing.B) {
	size := int64(64 << 20)
	if v, err := strconv.ParseInt(os.Getenv("QUERY_BENCH_DESC_MIB"), 10, 64); err == nil && v > 0 {
		size = v << 20
	}
	day := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	s, err := blobsink.NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for h := range 23 {
		hour := day.Add(time.Duration(h) * time.Hour)
		meta := blobsink.Meta{Start: hour.UnixNano(), End: hour.Add(time.Hour - time.Microsecond).UnixNano(),
			Levels: logline.LevelSet(0).Add(logline.LevelInfo), Count: size / 200}
		for w := range 2 {
			name := blobsink.BlobName(blobsink.HourPrefix("bench", hour), w+1, blobsink.CompressNone)
			if err := s.Create(ctx, name, meta.Map()); err != nil {
				b.Fatal(err)
			}
			if err := s.Truncate(ctx, name, size/2); err != nil {
				b.Fatal(err)
			}
		}
	}
	writeLarge(b, s, "bench", day.Add(23*time.Hour), 1, size, 2, blobsink.CompressNone)
	q := Query{Services: []string{"bench"}, From: day, To: day.Add(24 * time.Hour), Limit: 100, Desc: true}
	for _, c := range []struct {
		name  string
		store Store
	}{{"ranged", s}, {"whole", struct{ Store }{s}}} {
		b.Run(c.name, func(b *testing.B) {
			var st Stats
			cpu0 := cpuTime()
			for b.Loop() {
				st, err = Run(ctx, c.store, q, func([]byte, *logline.Event) error { return nil })
				if err != nil || st.LinesReturned != 100 || st.LinesBad != 0 {
					b.Fatalf("returned %d, %d bad lines: %v", st.LinesReturned, st.LinesBad, err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(st.BlobsRead), "blobs-read")
			b.ReportMetric(float64(st.BytesRead)/(1<<20), "MiB-read")
		})
	}
}
