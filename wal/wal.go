// Package wal is the write-ahead log: records appended by many goroutines at
// once are written and fsync'd together (group commit), so one fsync covers
// every request that arrived while the previous one ran.
//
// A record is framed as
//
//	length uint32 | crc32c uint32 | lsn uint64 | payload
//
// with the CRC over lsn and payload. LSNs (log sequence numbers) increase by
// one per record. Records live in segment files named by their first LSN;
// Truncate deletes whole segments once the caller says every record in them
// is no longer needed. On Open, Replay reads every record back in order; a
// torn record at the tail of the last segment (a crash mid-write) ends the
// log there and is cut off.
//
//	l, _ := wal.Open(dir, wal.Options{})
//	_ = l.Replay(func(lsn uint64, payload []byte) error { ...; return nil })
//	l.Start()
//	lsn, err := l.Append(payload, func(lsn uint64) { /* runs in LSN order once durable */ })
//
// A failed write or fsync fails every record of its group (their callers
// get the error; no onDurable runs) and the segment is cut back to the end
// of the last good group, so those records are never replayed: a client
// told "failed" may resend without a duplicate. Until the cut succeeds
// (the disk is failing or read-only) every Append fails at once with the
// cause; each Append retries the cut, so writes resume by themselves when
// the disk recovers. Err reports the failure while it lasts. The one window
// left: a crash while the cut cannot be made may replay the failed group.
//
// Performance: one writer goroutine owns the file. Appenders hand it their
// payload and wait; it writes everything queued, calls fdatasync once, then
// runs each record's onDurable callback in LSN order and wakes the appenders.
// AppendParts takes a payload in pieces, so a caller need not copy them
// together: the writer copies each piece once, into its 1 MiB write buffer
// (writev from the callers' memory measured slower: docs/performance.md).
//
// Segments are reused: Truncate renames a segment it no longer needs to a
// spare (up to Options.SpareSegments; the rest are deleted), and the next
// rotation renames a spare to the new segment's name and overwrites it.
// Deleting a 64 MiB file frees its blocks and cached pages and stalls the
// log's fdatasync meanwhile; overwriting blocks already allocated changes
// no metadata, so fdatasync writes only the data. A reused segment holds
// old records past
// what was written in it: they all carry lower LSNs, so Replay ends the
// log there as at a torn tail, and a rotation first cuts the segment it
// leaves to its records. Spares left by a previous process are deleted on
// Open: only this process's own old records are known to be below its LSNs.
package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ingest/internal/disk"
)

const headerLen = 16

// MaxRecordBytes bounds one record; a larger length in a header means damage.
const MaxRecordBytes = 1 << 30

// Options tune the log.
type Options struct {
	SegmentBytes int64 // rotate segments past this size (default 64 MiB)
	// NoSync skips fdatasync (tests of crash-free paths only).
	NoSync bool
	// OnSync, when set, observes each group commit: records written and time spent in fdatasync.
	OnSync func(records int, syncTime time.Duration)
	// SpareSegments is how many segments Truncate keeps for reuse instead
	// of deleting them (default 8; negative: none, every segment is new).
	SpareSegments int
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("cannot append to the write-ahead log: it is closed")

// ErrDisk is wrapped by the errors Append returns when the log's disk
// failed a write, fsync or file creation (full, read-only, failing): the
// record was not kept, and trying again later may succeed.
var ErrDisk = errors.New("the write-ahead log's disk failed")

// diskError is an ErrDisk with its cause, e.g. "no space left on device".
type diskError struct {
	what string
	err  error
}

func (e *diskError) Error() string { return "cannot " + e.what + ": " + e.err.Error() }
func (e *diskError) Is(target error) bool {
	return target == ErrDisk
}
func (e *diskError) Unwrap() error { return e.err }

type request struct {
	payload   []byte   // the payload, or
	parts     [][]byte // its pieces (AppendParts)
	onDurable func(lsn uint64)
	lsn       uint64
	err       error
	done      chan struct{}
}

// Log is an open write-ahead log.
type Log struct {
	dir  string
	opts Options

	mu       sync.Mutex // guards segments, spares, nextLSN and applied
	segments []segment  // oldest first; the last one is being written
	spares   []string   // paths of segments kept for reuse
	nextLSN  uint64
	applied  uint64 // every record below this LSN is durable and its onDurable has run
	closed   bool   // guarded by closeMu

	f       segmentFile
	w       *bufio.Writer
	segSize int64 // bytes of whole, durable records in the current segment
	reused  bool  // the current segment is a spare: old records may follow segSize
	// broken is the failure whose records may still be in the current
	// segment past segSize; nil when the segment ends at segSize.
	broken error
	// create opens a new segment file (tests inject faults through it).
	create func(path string) (segmentFile, error)

	lastErr atomic.Pointer[error] // the last group's failure; nil after a success
	bytes   atomic.Int64          // bytes of every segment on disk

	closeMu  sync.RWMutex // held for reading while sending to queue, for writing to close it
	queue    chan *request
	stopped  chan struct{}
	started  bool
	donePool sync.Pool
}

type segment struct {
	first uint64 // LSN of its first record (or of the next record when empty)
	path  string
	size  int64 // bytes, once it is no longer written
}

// segmentFile is what the log needs of a segment file.
type segmentFile interface {
	io.Writer
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
	Sync() error // fdatasync
	Close() error
}

// osFile is a segment file on disk.
type osFile struct {
	*os.File
	noSync bool
}

func (f osFile) Sync() error {
	if f.noSync {
		return nil
	}
	return syscall.Fdatasync(int(f.Fd()))
}

// Open opens (creating if needed) the log in dir. Call Replay, then Start.
func Open(dir string, opts Options) (*Log, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = 64 << 20
	}
	if opts.SpareSegments == 0 {
		opts.SpareSegments = 8
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create write-ahead log directory %s: %w", dir, err)
	}
	l := &Log{dir: dir, opts: opts, nextLSN: 1, queue: make(chan *request, 8192), stopped: make(chan struct{})}
	l.create = func(path string) (segmentFile, error) {
		// No O_TRUNC: a reused spare keeps its blocks (see rotate).
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		return osFile{f, opts.NoSync}, nil
	}
	l.donePool.New = func() any { return make(chan struct{}, 1) }
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "spare-") && strings.HasSuffix(name, ".log") {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("cannot delete spare write-ahead log segment %s: %w", name, err)
			}
			continue
		}
		if !strings.HasPrefix(name, "wal-") || !strings.HasSuffix(name, ".log") {
			continue
		}
		first, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "wal-"), ".log"), 10, 64)
		if err != nil {
			continue
		}
		var size int64
		if info, err := e.Info(); err == nil {
			size = info.Size()
		}
		l.segments = append(l.segments, segment{first: first, path: filepath.Join(dir, name), size: size})
		l.bytes.Add(size)
	}
	sort.Slice(l.segments, func(i, j int) bool { return l.segments[i].first < l.segments[j].first })
	return l, nil
}

// Replay calls fn for every record in LSN order. The payload is valid only
// during the call. It must be called before Start.
func (l *Log) Replay(fn func(lsn uint64, payload []byte) error) error {
	if l.started {
		return errors.New("cannot replay the write-ahead log after Start")
	}
	for i, seg := range l.segments {
		last := i == len(l.segments)-1
		end, err := replaySegment(seg, fn, &l.nextLSN)
		if err != nil {
			var te *tornError
			if !errors.As(err, &te) {
				return err
			}
			if !last {
				return fmt.Errorf("cannot replay the write-ahead log: segment %s is damaged at byte %d (%s) and later segments exist; move the damaged segment away to start", seg.path, te.offset, te.why)
			}
			// A crash mid-write leaves a partial record at the very end: cut it off.
			if err := os.Truncate(seg.path, end); err != nil {
				return fmt.Errorf("cannot cut the torn tail off %s: %w", seg.path, err)
			}
			l.bytes.Add(end - seg.size)
			l.segments[i].size = end
		}
	}
	return nil
}

type tornError struct {
	offset int64
	why    string
}

func (e *tornError) Error() string { return fmt.Sprintf("torn record at byte %d: %s", e.offset, e.why) }

// replaySegment returns the offset just past the last good record.
func replaySegment(seg segment, fn func(uint64, []byte) error, nextLSN *uint64) (int64, error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var hdr [headerLen]byte
	var payload []byte
	// A segment's records start at the LSN its name gives: older ones in it
	// are a reused spare's, past the records written in it this time.
	*nextLSN = max(*nextLSN, seg.first)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return off, nil
			}
			return off, &tornError{off, "short header"}
		}
		n := binary.LittleEndian.Uint32(hdr[0:4])
		sum := binary.LittleEndian.Uint32(hdr[4:8])
		lsn := binary.LittleEndian.Uint64(hdr[8:16])
		if n > MaxRecordBytes {
			return off, &tornError{off, "impossible record length"}
		}
		if cap(payload) < int(n) {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			return off, &tornError{off, "short payload"}
		}
		crc := crc32.Update(crc32.Checksum(hdr[8:16], disk.Castagnoli), disk.Castagnoli, payload)
		if crc != sum {
			return off, &tornError{off, "checksum mismatch"}
		}
		if lsn < *nextLSN {
			return off, &tornError{off, fmt.Sprintf("LSN %d goes backwards (want >= %d)", lsn, *nextLSN)}
		}
		if err := fn(lsn, payload); err != nil {
			return off, err
		}
		*nextLSN = lsn + 1
		off += headerLen + int64(n)
	}
}

// AppliedLSN is the LSN below which every record is durable and has had
// its onDurable callback run. Truncate must not be given more: a record
// written but not yet applied lives nowhere else.
func (l *Log) AppliedLSN() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applied
}

// Start opens a fresh segment and starts the writer goroutine.
func (l *Log) Start() error {
	l.applied = l.nextLSN
	if err := l.rotate(); err != nil {
		return err
	}
	l.started = true
	go l.run()
	return nil
}

// rotate starts a new segment, reusing a spare when there is one. The
// current one holds only whole, durable records (every group ends with an
// fsync), so it is simply closed, and only once the new one exists: a
// failure leaves the log as it was. A reused current segment is first cut
// to its records, durably: Replay takes old records past the end of any
// segment but the last for damage.
func (l *Log) rotate() error {
	if l.reused {
		if err := l.f.Truncate(l.segSize); err != nil {
			return &diskError{"cut a reused write-ahead log segment to its records", err}
		}
		if err := l.f.Sync(); err != nil {
			return &diskError{"cut a reused write-ahead log segment to its records", err}
		}
		l.reused = false
	}
	path := filepath.Join(l.dir, fmt.Sprintf("wal-%020d.log", l.nextLSN))
	reused := false
	l.mu.Lock()
	if n := len(l.spares); n > 0 {
		spare := l.spares[n-1]
		l.spares = l.spares[:n-1]
		l.mu.Unlock()
		// A spare that cannot be renamed is left to the next Open.
		reused = os.Rename(spare, path) == nil
	} else {
		l.mu.Unlock()
	}
	f, err := l.create(path)
	if err != nil {
		if reused {
			_ = os.Remove(path)
		}
		return &diskError{"create a write-ahead log segment", err}
	}
	// The new name must be durable before records acknowledged in it are:
	// fdatasync of the file does not write its directory entry.
	if err := disk.SyncDir(l.dir); err != nil {
		_ = f.Close()
		return &diskError{"create a write-ahead log segment", err}
	}
	l.mu.Lock()
	if l.f != nil {
		_ = l.f.Close() // written and synced: a close error loses nothing
		l.segments[len(l.segments)-1].size = l.segSize
	}
	if n := len(l.segments); n > 0 && l.segments[n-1].path == path {
		// Start after a segment left empty: it is the one reopened, and
		// listing it twice would let Truncate drop the file being written.
		l.segments = l.segments[:n-1]
	}
	l.segments = append(l.segments, segment{first: l.nextLSN, path: path})
	l.mu.Unlock()
	l.f, l.segSize, l.reused = f, 0, reused
	if l.w == nil {
		l.w = bufio.NewWriterSize(f, 1<<20)
	} else {
		l.w.Reset(f)
	}
	return nil
}

// Append writes payload as one record and returns once it is on disk, after
// onDurable (if not nil) has run. onDurable calls run one at a time, in LSN
// order, on the writer goroutine: keep them short.
func (l *Log) Append(payload []byte, onDurable func(lsn uint64)) (uint64, error) {
	return l.append(&request{payload: payload, onDurable: onDurable}, len(payload))
}

// AppendParts is Append of the payload that parts make one after another.
// The log reads parts until AppendParts returns.
func (l *Log) AppendParts(parts [][]byte, onDurable func(lsn uint64)) (uint64, error) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return l.append(&request{parts: parts, onDurable: onDurable}, n)
}

func (l *Log) append(req *request, size int) (uint64, error) {
	if size > MaxRecordBytes {
		return 0, fmt.Errorf("cannot append a %d-byte record to the write-ahead log: the limit is %d", size, MaxRecordBytes)
	}
	req.done = l.donePool.Get().(chan struct{})
	l.closeMu.RLock()
	if l.closed || !l.started {
		l.closeMu.RUnlock()
		return 0, ErrClosed
	}
	l.queue <- req
	l.closeMu.RUnlock()
	<-req.done
	l.donePool.Put(req.done)
	return req.lsn, req.err
}

func (l *Log) run() {
	var group []*request
	for {
		req, ok := <-l.queue
		if !ok {
			close(l.stopped)
			return
		}
		group = append(group[:0], req)
	drain:
		for len(group) < 4096 {
			select {
			case r, ok := <-l.queue:
				if !ok {
					break drain
				}
				group = append(group, r)
			default:
				break drain
			}
		}
		err := l.writeGroup(group)
		if err != nil {
			l.lastErr.Store(&err)
		} else {
			l.lastErr.Store(nil)
			for _, r := range group {
				if r.onDurable != nil {
					r.onDurable(r.lsn)
				}
			}
			l.mu.Lock()
			l.applied = group[len(group)-1].lsn + 1
			l.mu.Unlock()
		}
		for _, r := range group {
			r.err = err
			r.done <- struct{}{}
		}
		if len(l.queue) > 0 {
			// The appenders just answered are runnable on this
			// goroutine's P. The next group's write and fdatasync would
			// hold that P in a system call until the runtime's sysmon
			// took it back, and every such take keeps sysmon waking each
			// 20 us, a context switch each time. Let them run first.
			runtime.Gosched()
		}
	}
}

// writeGroup writes and fsyncs a group of records, all or none: on a
// failure the segment is cut back to where the group began.
func (l *Log) writeGroup(group []*request) error {
	if l.broken != nil {
		if err := l.cutBack(); err != nil {
			return err
		}
	}
	if l.segSize >= l.opts.SegmentBytes {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	var hdr [headerLen]byte
	lsn := l.nextLSN
	var n int64
	for _, r := range group {
		r.lsn = lsn
		lsn++
		binary.LittleEndian.PutUint64(hdr[8:16], r.lsn)
		size := len(r.payload)
		crc := crc32.Update(crc32.Checksum(hdr[8:16], disk.Castagnoli), disk.Castagnoli, r.payload)
		for _, p := range r.parts {
			size += len(p)
			crc = crc32.Update(crc, disk.Castagnoli, p)
		}
		binary.LittleEndian.PutUint32(hdr[0:4], uint32(size))
		binary.LittleEndian.PutUint32(hdr[4:8], crc)
		if _, err := l.w.Write(hdr[:]); err != nil {
			return l.fail(&diskError{"write to the write-ahead log", err})
		}
		if _, err := l.w.Write(r.payload); err != nil {
			return l.fail(&diskError{"write to the write-ahead log", err})
		}
		for _, p := range r.parts {
			if _, err := l.w.Write(p); err != nil {
				return l.fail(&diskError{"write to the write-ahead log", err})
			}
		}
		n += headerLen + int64(size)
	}
	if err := l.w.Flush(); err != nil {
		return l.fail(&diskError{"write to the write-ahead log", err})
	}
	start := time.Now()
	if err := l.f.Sync(); err != nil {
		return l.fail(&diskError{"fsync the write-ahead log", err})
	}
	if l.opts.OnSync != nil {
		l.opts.OnSync(len(group), time.Since(start))
	}
	l.segSize += n
	l.bytes.Add(n)
	l.mu.Lock()
	l.nextLSN = lsn
	l.mu.Unlock()
	return nil
}

// fail handles a failed group: its LSNs are given again to the next one,
// and the segment is cut back to its last good record.
func (l *Log) fail(err error) error {
	l.broken = err
	if cerr := l.cutBack(); cerr != nil {
		return cerr
	}
	return err
}

// cutBack drops whatever a failed group left past segSize: buffered bytes,
// and bytes in the file, durably. Until it succeeds the log stays broken
// and refuses every group.
func (l *Log) cutBack() error {
	l.w.Reset(l.f)
	if err := l.f.Truncate(l.segSize); err != nil {
		return fmt.Errorf("%w (and cannot cut the failed records off: %v)", l.broken, err)
	}
	if _, err := l.f.Seek(l.segSize, io.SeekStart); err != nil {
		return fmt.Errorf("%w (and cannot cut the failed records off: %v)", l.broken, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("%w (and cannot cut the failed records off: %v)", l.broken, err)
	}
	l.broken = nil
	return nil
}

// Err is the failure of the last group written, while it lasts: nil once
// a group went through again. Readiness checks report it.
func (l *Log) Err() error {
	if p := l.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Bytes is the size of every segment on disk: records not yet truncated.
func (l *Log) Bytes() int64 { return l.bytes.Load() }

// Truncate drops every segment all of whose records have LSNs below keep:
// up to Options.SpareSegments are kept as spares for reuse, the rest
// deleted. The segment being written is never dropped.
func (l *Log) Truncate(keep uint64) (removed int, err error) {
	l.mu.Lock()
	var drop []segment
	for len(l.segments) > 1 && l.segments[1].first <= keep {
		drop = append(drop, l.segments[0])
		l.segments = l.segments[1:]
	}
	spares := len(l.spares)
	l.mu.Unlock()
	for _, s := range drop {
		if spares < l.opts.SpareSegments {
			spare := filepath.Join(l.dir, fmt.Sprintf("spare-%020d.log", s.first))
			if os.Rename(s.path, spare) == nil {
				spares++
				l.mu.Lock()
				l.spares = append(l.spares, spare)
				l.mu.Unlock()
				l.bytes.Add(-s.size)
				continue
			}
		}
		if e := os.Remove(s.path); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = e
			continue
		}
		l.bytes.Add(-s.size)
	}
	return len(drop), err
}

// Segments is the number of segment files.
func (l *Log) Segments() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.segments)
}

// Close waits for queued records to be written and closes the file. Appends
// after Close fail with ErrClosed.
func (l *Log) Close() error {
	l.closeMu.Lock()
	if l.closed {
		l.closeMu.Unlock()
		return nil
	}
	l.closed = true
	if l.started {
		close(l.queue)
	}
	l.closeMu.Unlock()
	if !l.started {
		return nil
	}
	<-l.stopped
	// Every group ended with an fsync or was cut off: nothing is buffered.
	return l.f.Close()
}
