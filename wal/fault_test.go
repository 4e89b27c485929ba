package wal

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// faultFile is a real segment file whose writes, fsyncs and truncations
// fail on demand, the way a full, failing or read-only disk fails them.
type faultFile struct {
	segmentFile
	mu           sync.Mutex
	writeErr     error // returned by Write, after writing partial bytes of the buffer
	partial      int
	syncErr      error
	truncateErr  error
	writes, sync int
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.writeErr != nil {
		n := min(f.partial, len(p))
		f.segmentFile.Write(p[:n]) // some bytes reach the file before the error
		return n, f.writeErr
	}
	return f.segmentFile.Write(p)
}

func (f *faultFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync++
	if f.syncErr != nil {
		return f.syncErr
	}
	return f.segmentFile.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.truncateErr != nil {
		return f.truncateErr
	}
	return f.segmentFile.Truncate(size)
}

func (f *faultFile) set(fn func(f *faultFile)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// openFaulty opens a log in dir whose segments are faultFiles; the last
// one created is returned by current.
func openFaulty(t *testing.T, dir string) (l *Log, current func() *faultFile) {
	t.Helper()
	l, err := Open(dir, Options{SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	replayAll(t, l)
	var mu sync.Mutex
	var last *faultFile
	create := l.create
	l.create = func(path string) (segmentFile, error) {
		f, err := create(path)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		last = &faultFile{segmentFile: f}
		return last, nil
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	return l, func() *faultFile { mu.Lock(); defer mu.Unlock(); return last }
}

// TestDiskFaults: a group whose write or fsync fails is refused whole, is
// never replayed, and the log takes records again as soon as the disk does.
func TestDiskFaults(t *testing.T) {
	enospc := fmt.Errorf("write wal-1.log: %w", syscall.ENOSPC)
	eio := fmt.Errorf("sync wal-1.log: %w", syscall.EIO)
	erofs := fmt.Errorf("truncate wal-1.log: %w", syscall.EROFS)
	cases := []struct {
		name    string
		fault   func(f *faultFile)
		want    string // in the error Append returns
		stuck   bool   // the cut fails too: the log refuses records until it is fixed
		wantErr error
	}{
		{"write fails part way (disk full)", func(f *faultFile) { f.writeErr, f.partial = enospc, 7 }, "no space left on device", false, syscall.ENOSPC},
		{"fsync fails after the write", func(f *faultFile) { f.syncErr = eio }, "cannot fsync the write-ahead log", false, syscall.EIO},
		{"write fails and the file cannot be cut (read-only)", func(f *faultFile) {
			f.writeErr, f.partial, f.truncateErr = enospc, 100, erofs
		}, "no space left on device", true, syscall.ENOSPC},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, file := openFaulty(t, dir)
			for i := range 3 {
				if _, err := l.Append([]byte(fmt.Sprintf("good-%d", i)), nil); err != nil {
					t.Fatal(err)
				}
			}
			f := file()
			f.set(tc.fault)
			ran := false
			_, err := l.Append([]byte("refused"), func(uint64) { ran = true })
			if err == nil || !errors.Is(err, ErrDisk) || !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Append on a failing disk = %v; want ErrDisk wrapping %v, saying %q", err, tc.wantErr, tc.want)
			}
			if ran {
				t.Error("onDurable ran for a record that failed")
			}
			if l.Err() == nil {
				t.Error("Err is nil right after a failed group")
			}
			if tc.stuck {
				// The write itself would work now, but the failed bytes are
				// still in the file: the log must refuse until it can cut them.
				f.set(func(f *faultFile) { f.writeErr = nil })
				if _, err := l.Append([]byte("refused-too"), nil); !errors.Is(err, ErrDisk) {
					t.Fatalf("Append while the failed records cannot be cut = %v, want ErrDisk", err)
				}
			}
			// The disk recovers: the next record goes through, no restart.
			f.set(func(f *faultFile) { f.writeErr, f.syncErr, f.truncateErr = nil, nil, nil })
			lsn, err := l.Append([]byte("after"), nil)
			if err != nil || lsn != 4 {
				t.Fatalf("Append after the disk recovered = %d, %v; want LSN 4 (the failed record's LSN is given again)", lsn, err)
			}
			if l.Err() != nil {
				t.Errorf("Err = %v after a good group", l.Err())
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			lsns, payloads := replayAll(t, l2)
			if got := strings.Join(payloads, ","); got != "good-0,good-1,good-2,after" {
				t.Fatalf("replayed %q (LSNs %v): a record whose Append failed must never come back", got, lsns)
			}
		})
	}
}

// TestSegmentCreateFails: a rotation that cannot create the next segment
// (read-only or full directory) refuses the group and keeps the current one.
func TestSegmentCreateFails(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{SegmentBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	replayAll(t, l)
	create := l.create
	var fail error
	var mu sync.Mutex
	l.create = func(path string) (segmentFile, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail != nil {
			return nil, fail
		}
		return create(path)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 80) // every record fills a segment
	if _, err := l.Append([]byte(big), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	fail = fmt.Errorf("open wal-2.log: %w", syscall.EROFS)
	mu.Unlock()
	if _, err := l.Append([]byte(big), nil); !errors.Is(err, ErrDisk) || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Append when no segment can be created = %v, want ErrDisk wrapping EROFS", err)
	}
	mu.Lock()
	fail = nil
	mu.Unlock()
	if _, err := l.Append([]byte("after"), nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, payloads := replayAll(t, l2)
	if len(payloads) != 2 || payloads[1] != "after" {
		t.Fatalf("replayed %d records, want the first and the one after", len(payloads))
	}
}

func TestBytes(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{SegmentBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	replayAll(t, l)
	l.Start()
	rec := []byte(strings.Repeat("y", 84)) // 100 bytes with its header: one per segment
	for range 5 {
		if _, err := l.Append(rec, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.Bytes(); got != 500 {
		t.Fatalf("Bytes = %d after five 100-byte records, want 500", got)
	}
	if n, err := l.Truncate(l.nextLSNForTest() - 1); err != nil || n != 4 {
		t.Fatalf("Truncate = %d, %v; want 4 segments", n, err)
	}
	if got := l.Bytes(); got != 100 {
		t.Fatalf("Bytes = %d after truncating four segments, want 100", got)
	}
	l.Close()
	l2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l2.Bytes(); got != 100 {
		t.Fatalf("Bytes after reopening = %d, want 100", got)
	}
}
