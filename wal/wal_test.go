package wal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"ingest/internal/benchcpu"
)

func replayAll(t testing.TB, l *Log) (lsns []uint64, payloads []string) {
	t.Helper()
	err := l.Replay(func(lsn uint64, p []byte) error {
		lsns = append(lsns, lsn)
		payloads = append(payloads, string(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lsns, payloads
}

// openLog opens the log in dir or fails the test.
func openLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("cannot open the WAL: %v", err)
	}
	return l
}

// startLog opens the log in dir, replays it and starts it for appends.
func startLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l := openLog(t, dir, opts)
	replayAll(t, l)
	if err := l.Start(); err != nil {
		t.Fatalf("cannot start the WAL: %v", err)
	}
	return l
}

// mustAppend appends and waits for the fsync, or fails the test.
func mustAppend(t *testing.T, l *Log, payload []byte) uint64 {
	t.Helper()
	lsn, err := l.Append(payload, nil)
	if err != nil {
		t.Fatalf("cannot append: %v", err)
	}
	return lsn
}

func closeLog(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("cannot close the WAL: %v", err)
	}
}

func TestAppendReplay(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	replayAll(t, l)
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []uint64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Append([]byte(fmt.Sprintf("rec-%03d", i)), func(lsn uint64) {
				mu.Lock()
				order = append(order, lsn)
				mu.Unlock()
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(order); i++ {
		if order[i] != order[i-1]+1 {
			t.Fatalf("onDurable ran out of LSN order: %v", order)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]byte("x"), nil); err != ErrClosed {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}

	l2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lsns, payloads := replayAll(t, l2)
	if len(lsns) != 200 || lsns[0] != 1 || lsns[199] != 200 {
		t.Fatalf("replayed %d records, LSNs %v..", len(lsns), lsns[:1])
	}
	seen := map[string]bool{}
	for _, p := range payloads {
		seen[p] = true
	}
	if len(seen) != 200 {
		t.Fatalf("replay lost or duplicated payloads: %d distinct", len(seen))
	}
	if err := l2.Start(); err != nil {
		t.Fatal(err)
	}
	lsn, err := l2.Append([]byte("after restart"), nil)
	if err != nil || lsn != 201 {
		t.Fatalf("first LSN after restart = %d, %v; want 201", lsn, err)
	}
	closeLog(t, l2)
}

func TestTornTailIsCut(t *testing.T) {
	dir := t.TempDir()
	l := startLog(t, dir, Options{})
	for i := range 3 {
		mustAppend(t, l, []byte(fmt.Sprintf("good-%d", i)))
	}
	closeLog(t, l)
	seg := l.segments[len(l.segments)-1].path
	// A crash mid-write: half a record at the end.
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{40, 0, 0, 0, 1, 2, 3, 4, 9, 0, 0, 0, 0, 0, 0, 0, 'p', 'a', 'r'}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}

	l2 := openLog(t, dir, Options{})
	_, payloads := replayAll(t, l2)
	if len(payloads) != 3 || payloads[2] != "good-2" {
		t.Fatalf("replay after torn tail = %q", payloads)
	}
	after, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size()-19 {
		t.Fatalf("torn tail not cut: size %d -> %d", before.Size(), after.Size())
	}
}

func TestCorruptMiddleSegmentIsAnError(t *testing.T) {
	dir := t.TempDir()
	l := startLog(t, dir, Options{SegmentBytes: 64})
	for i := range 10 {
		mustAppend(t, l, bytes.Repeat([]byte{byte('a' + i)}, 50))
	}
	closeLog(t, l)
	if len(l.segments) < 3 {
		t.Fatalf("want several segments, got %d", len(l.segments))
	}
	first := l.segments[0].path
	b, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(first, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, Options{})
	if err := l2.Replay(func(uint64, []byte) error { return nil }); err == nil {
		t.Fatal("a damaged middle segment replayed without error")
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	l := startLog(t, dir, Options{SegmentBytes: 100})
	for range 10 {
		mustAppend(t, l, bytes.Repeat([]byte("x"), 60)) // 76 bytes framed: rotates every 2 records
	}
	n := l.Segments()
	removed, err := l.Truncate(5) // records 1..4 are no longer needed
	if err != nil {
		t.Fatal(err)
	}
	if removed != 2 || l.Segments() != n-2 {
		t.Fatalf("Truncate(5) removed %d of %d segments", removed, n)
	}
	if _, err := l.Truncate(1 << 60); err != nil {
		t.Fatal(err)
	}
	if l.Segments() != 1 {
		t.Fatalf("the segment being written was deleted or others kept: %d left", l.Segments())
	}
	closeLog(t, l)
	l2 := openLog(t, dir, Options{})
	lsns, _ := replayAll(t, l2)
	if len(lsns) == 0 || lsns[len(lsns)-1] != 10 {
		t.Fatalf("replayed LSNs %v after Truncate: want the last record, 10, kept", lsns)
	}
	for _, lsn := range lsns {
		if lsn < 5 {
			t.Fatalf("record %d survived Truncate(5)", lsn)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != l2.Segments() {
		t.Fatalf("files %d vs segments %d", len(files), l2.Segments())
	}
}

func FuzzReplay(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "wal-00000000000000000001.log"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Open(dir, Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		var last uint64
		if err := l.Replay(func(lsn uint64, p []byte) error {
			if lsn <= last {
				t.Fatalf("LSN %d after %d", lsn, last)
			}
			last = lsn
			return nil
		}); err != nil {
			t.Fatalf("a single damaged segment must replay up to the damage: %v", err)
		}
	})
}

func BenchmarkAppendParallel(b *testing.B) {
	l := startLog(b, b.TempDir(), Options{})
	defer l.Close()
	payload := bytes.Repeat([]byte("x"), 64<<10)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.SetParallelism(16)
	cpu := benchcpu.Start()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Append(payload, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	benchcpu.Report(b, cpu, 1, "record")
}

func TestAppliedLSNWaitsForCallbacks(t *testing.T) {
	l := startLog(t, t.TempDir(), Options{})
	defer l.Close()
	release := make(chan struct{})
	go l.Append([]byte("slow"), func(uint64) { <-release })
	deadline := time.Now().Add(5 * time.Second)
	for l.nextLSNForTest() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if l.nextLSNForTest() != 2 {
		t.Fatalf("the append did not take LSN 1 within 5s (next LSN %d)", l.nextLSNForTest())
	}
	if got := l.AppliedLSN(); got != 1 {
		t.Fatalf("AppliedLSN = %d while record 1's callback runs, want 1", got)
	}
	close(release)
	for l.AppliedLSN() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := l.AppliedLSN(); got != 2 {
		t.Fatalf("AppliedLSN = %d after the callback, want 2", got)
	}
}

// TestAppendPartsReplaysAsOnePayload: a record appended in pieces replays
// as their concatenation, beside whole-payload records of the same group,
// empty pieces and thousands of pieces included.
func TestAppendPartsReplaysAsOnePayload(t *testing.T) {
	dir := t.TempDir()
	l := startLog(t, dir, Options{})
	many := make([][]byte, 3000)
	var manyWant []byte
	for i := range many {
		many[i] = []byte(fmt.Sprintf("p%d,", i))
		if i%100 == 0 {
			many[i] = nil
		}
		manyWant = append(manyWant, many[i]...)
	}
	records := [][][]byte{
		{[]byte("head:"), []byte("lines\n"), nil, []byte("more\n")},
		many,
		{nil},
	}
	want := []string{"head:lines\nmore\n", string(manyWant), "", "whole"}
	var wg sync.WaitGroup
	lsns := make([]uint64, len(want))
	for i, parts := range records {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lsn, err := l.AppendParts(parts, nil)
			if err != nil {
				t.Errorf("cannot append record %d in parts: %v", i, err)
			}
			lsns[i] = lsn
		}()
	}
	wg.Wait()
	lsns[3] = mustAppend(t, l, []byte("whole"))
	closeLog(t, l)

	_, payloads := replayAll(t, openLog(t, dir, Options{}))
	byLSN := map[uint64]string{}
	for i, p := range payloads {
		byLSN[uint64(i)+1] = p
	}
	if len(payloads) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(payloads), len(want))
	}
	for i, w := range want {
		if got := byLSN[lsns[i]]; got != w {
			t.Errorf("record %d (LSN %d) replayed as %.60q (%d bytes), want %.60q (%d bytes)", i, lsns[i], got, len(got), w, len(w))
		}
	}
}

// inode is the file's inode number, to tell a reused file from a new one.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

// TestSpareSegmentsAreReused: Truncate keeps dropped segments as spares,
// rotations overwrite them, and a reopened log replays exactly the records
// written since, none of the old ones the reused files still hold.
func TestSpareSegmentsAreReused(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 150, SpareSegments: 4}
	l := startLog(t, dir, opts)
	for range 4 {
		mustAppend(t, l, bytes.Repeat([]byte("o"), 200)) // 216 bytes framed: one record per segment
	}
	if _, err := l.Truncate(4); err != nil { // records 1..3 go
		t.Fatal(err)
	}
	spares, _ := filepath.Glob(filepath.Join(dir, "spare-*.log"))
	if len(spares) != 3 {
		t.Fatalf("Truncate left %d spares, want 3: %v", len(spares), spares)
	}
	old := map[uint64]bool{}
	for _, p := range spares {
		old[inode(t, p)] = true
	}
	// 36 bytes framed: five records fill a segment to 180 bytes, short of
	// the 216 the reused file holds, so old bytes follow every segment's
	// records until the rotation cuts them.
	want := []uint64{4}
	for lsn := uint64(5); lsn <= 15; lsn++ {
		if got := mustAppend(t, l, []byte(fmt.Sprintf("new record %9d", lsn))); got != lsn {
			t.Fatalf("record got LSN %d, want %d", got, lsn)
		}
		want = append(want, lsn)
	}
	for _, first := range []int{5, 10, 15} {
		path := filepath.Join(dir, fmt.Sprintf("wal-%020d.log", first))
		if !old[inode(t, path)] {
			t.Fatalf("segment %s is a new file, want a reused spare", path)
		}
	}
	if spares, _ := filepath.Glob(filepath.Join(dir, "spare-*.log")); len(spares) != 0 {
		t.Fatalf("spares left unused: %v", spares)
	}
	closeLog(t, l) // wal-15 holds record 15, then the old record's bytes

	l2 := openLog(t, dir, opts)
	lsns, payloads := replayAll(t, l2)
	if fmt.Sprint(lsns) != fmt.Sprint(want) {
		t.Fatalf("replayed LSNs %v, want %v", lsns, want)
	}
	for i, p := range payloads[1:] {
		if w := fmt.Sprintf("new record %9d", want[i+1]); p != w {
			t.Fatalf("record %d replayed as %q, want %q", want[i+1], p, w)
		}
	}
	if err := l2.Start(); err != nil {
		t.Fatal(err)
	}
	if got := mustAppend(t, l2, []byte("after")); got != 16 {
		t.Fatalf("first record after reopening got LSN %d, want 16", got)
	}
	if _, err := l2.Truncate(16); err != nil {
		t.Fatal(err)
	}
	closeLog(t, l2)
	if spares, _ := filepath.Glob(filepath.Join(dir, "spare-*.log")); len(spares) == 0 {
		t.Fatal("Truncate kept no spare")
	}
	l3 := openLog(t, dir, opts)
	if spares, _ := filepath.Glob(filepath.Join(dir, "spare-*.log")); len(spares) != 0 {
		t.Fatalf("Open left a previous process's spares: %v", spares)
	}
	lsns, _ = replayAll(t, l3)
	if fmt.Sprint(lsns) != "[16]" {
		t.Fatalf("replayed LSNs %v after Truncate(16), want [16]", lsns)
	}
}

// TestRecordsBelowASegmentsFirstLSNAreNotReplayed: a spare renamed to the
// next segment's name just before a crash holds only old records; they are
// not the log's.
func TestRecordsBelowASegmentsFirstLSNAreNotReplayed(t *testing.T) {
	dir := t.TempDir()
	l := startLog(t, dir, Options{})
	for range 3 {
		mustAppend(t, l, []byte("old"))
	}
	closeLog(t, l)
	if err := os.Rename(filepath.Join(dir, fmt.Sprintf("wal-%020d.log", 1)), filepath.Join(dir, fmt.Sprintf("wal-%020d.log", 10))); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, Options{})
	if lsns, _ := replayAll(t, l2); len(lsns) != 0 {
		t.Fatalf("replayed old records %v from segment 10", lsns)
	}
	if err := l2.Start(); err != nil {
		t.Fatal(err)
	}
	if got := mustAppend(t, l2, []byte("new")); got != 10 {
		t.Fatalf("first record got LSN %d, want 10", got)
	}
	closeLog(t, l2)
	l3 := openLog(t, dir, Options{})
	if lsns, _ := replayAll(t, l3); fmt.Sprint(lsns) != "[10]" {
		t.Fatalf("replayed %v, want [10]", lsns)
	}
}

// TestGroupsOfAnySizeReplay: records that end anywhere in a page, fill
// whole pages or outgrow the 1 MiB write buffer replay byte for byte,
// alone in their group or sharing it, after a crash and after Close.
func TestGroupsOfAnySizeReplay(t *testing.T) {
	const page, buffer = 4096, 1 << 20
	sizes := []int{1, page - headerLen, page, 5000, 3, buffer - 3, buffer + 5000, 17, 3*buffer + 1, 0, 100}
	record := func(i, n int) []byte {
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(i*31 + j*7)
		}
		return p
	}
	dir := t.TempDir()
	l := startLog(t, dir, Options{SegmentBytes: 1 << 30})
	var want [][]byte
	var total int64
	for i, n := range sizes {
		want = append(want, record(i, n))
		mustAppend(t, l, want[i]) // one group per record
		total += headerLen + int64(n)
	}
	// Several records in one group too: each append waits for its own
	// fsync, so concurrent ones share groups.
	var wg sync.WaitGroup
	var mu sync.Mutex
	byLSN := map[uint64][]byte{}
	for i, n := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := record(100+i, n)
			lsn := mustAppend(t, l, p)
			mu.Lock()
			byLSN[lsn] = p
			mu.Unlock()
		}()
		total += headerLen + int64(n)
	}
	wg.Wait()
	check := func(stage string) {
		t.Helper()
		lsns, payloads := replayAll(t, openLog(t, dir, Options{}))
		if len(payloads) != 2*len(sizes) {
			t.Fatalf("%s: replayed %d records, want %d", stage, len(payloads), 2*len(sizes))
		}
		for i, p := range payloads {
			w := byLSN[lsns[i]]
			if i < len(sizes) {
				w = want[i]
			}
			if !bytes.Equal([]byte(p), w) {
				t.Fatalf("%s: record %d (LSN %d) replayed as %d bytes, want %d bytes as appended", stage, i, lsns[i], len(p), len(w))
			}
		}
		info, err := os.Stat(filepath.Join(dir, fmt.Sprintf("wal-%020d.log", 1)))
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		if info.Size() != total {
			t.Fatalf("%s: segment holds %d bytes, want its records' %d", stage, info.Size(), total)
		}
	}
	check("after a crash") // the log still open, as a crash leaves it
	closeLog(t, l)
	check("after Close")
}

// BenchmarkAppendFresh appends records as the server does: each appender
// first writes its payload (as a request encodes its batch, 256 KiB here)
// and then appends it in pieces, so the payload's bytes sit in the
// appender's cache, not the writer's. NoSync leaves the disk out.
func BenchmarkAppendFresh(b *testing.B) {
	l := startLog(b, b.TempDir(), Options{NoSync: true})
	defer l.Close()
	const size, pieces = 256 << 10, 4
	b.SetBytes(size)
	b.SetParallelism(4)
	cpu := benchcpu.Start()
	b.RunParallel(func(pb *testing.PB) {
		payload := make([]byte, size)
		parts := make([][]byte, pieces)
		for k := range parts {
			parts[k] = payload[k*size/pieces : (k+1)*size/pieces]
		}
		template := bytes.Repeat([]byte("2026-11-27T09:00:00.000Z;INFO;svc;host;id;a log line\n"), size/50+1)
		var n int
		for pb.Next() {
			n = (n + 1) % 50
			copy(payload, template[n:])
			if _, err := l.AppendParts(parts, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	benchcpu.Report(b, cpu, 1, "record")
}
