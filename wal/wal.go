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
// Performance: one writer goroutine owns the file. Appenders hand it their
// payload and wait; it writes everything queued, calls fdatasync once, then
// runs each record's onDurable callback in LSN order and wakes the appenders.
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
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const headerLen = 16

// MaxRecordBytes bounds one record; a larger length in a header means damage.
const MaxRecordBytes = 1 << 30

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Options tune the log.
type Options struct {
	SegmentBytes int64 // rotate segments past this size (default 64 MiB)
	// NoSync skips fdatasync (tests of crash-free paths only).
	NoSync bool
	// OnSync, when set, observes each group commit: records written and time spent in fdatasync.
	OnSync func(records int, syncTime time.Duration)
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("cannot append to the write-ahead log: it is closed")

type request struct {
	payload   []byte
	onDurable func(lsn uint64)
	lsn       uint64
	err       error
	done      chan struct{}
}

// Log is an open write-ahead log.
type Log struct {
	dir  string
	opts Options

	mu       sync.Mutex // guards segments, nextLSN and applied
	segments []segment  // oldest first; the last one is being written
	nextLSN  uint64
	applied  uint64 // every record below this LSN is durable and its onDurable has run
	closed   bool   // guarded by closeMu

	f       *os.File
	w       *bufio.Writer
	segSize int64

	closeMu  sync.RWMutex // held for reading while sending to queue, for writing to close it
	queue    chan *request
	stopped  chan struct{}
	started  bool
	donePool sync.Pool
}

type segment struct {
	first uint64 // LSN of its first record (or of the next record when empty)
	path  string
}

// Open opens (creating if needed) the log in dir. Call Replay, then Start.
func Open(dir string, opts Options) (*Log, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = 64 << 20
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create write-ahead log directory %s: %w", dir, err)
	}
	l := &Log{dir: dir, opts: opts, nextLSN: 1, queue: make(chan *request, 8192), stopped: make(chan struct{})}
	l.donePool.New = func() any { return make(chan struct{}, 1) }
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "wal-") || !strings.HasSuffix(name, ".log") {
			continue
		}
		first, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "wal-"), ".log"), 10, 64)
		if err != nil {
			continue
		}
		l.segments = append(l.segments, segment{first: first, path: filepath.Join(dir, name)})
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
		crc := crc32.Update(crc32.Checksum(hdr[8:16], crcTable), crcTable, payload)
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

// NextLSN is the LSN the next appended record gets.
func (l *Log) NextLSN() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nextLSN
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

func (l *Log) rotate() error {
	if l.f != nil {
		if err := l.w.Flush(); err != nil {
			return err
		}
		if err := l.sync(); err != nil {
			return err
		}
		if err := l.f.Close(); err != nil {
			return err
		}
	}
	path := filepath.Join(l.dir, fmt.Sprintf("wal-%020d.log", l.nextLSN))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create write-ahead log segment: %w", err)
	}
	d, err := os.Open(l.dir)
	if err == nil {
		_ = d.Sync()
		d.Close()
	}
	l.f, l.segSize = f, 0
	if l.w == nil {
		l.w = bufio.NewWriterSize(f, 1<<20)
	} else {
		l.w.Reset(f)
	}
	l.mu.Lock()
	l.segments = append(l.segments, segment{first: l.nextLSN, path: path})
	l.mu.Unlock()
	return nil
}

func (l *Log) sync() error {
	if l.opts.NoSync {
		return nil
	}
	return syscall.Fdatasync(int(l.f.Fd()))
}

// Append writes payload as one record and returns once it is on disk, after
// onDurable (if not nil) has run. onDurable calls run one at a time, in LSN
// order, on the writer goroutine: keep them short.
func (l *Log) Append(payload []byte, onDurable func(lsn uint64)) (uint64, error) {
	if len(payload) > MaxRecordBytes {
		return 0, fmt.Errorf("cannot append a %d-byte record to the write-ahead log: the limit is %d", len(payload), MaxRecordBytes)
	}
	req := &request{payload: payload, onDurable: onDurable, done: l.donePool.Get().(chan struct{})}
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
		for _, r := range group {
			if err == nil && r.onDurable != nil {
				r.onDurable(r.lsn)
			}
		}
		if err == nil {
			l.mu.Lock()
			l.applied = group[len(group)-1].lsn + 1
			l.mu.Unlock()
		}
		for _, r := range group {
			r.err = err
			r.done <- struct{}{}
		}
	}
}

func (l *Log) writeGroup(group []*request) error {
	var hdr [headerLen]byte
	for _, r := range group {
		if l.segSize >= l.opts.SegmentBytes {
			if err := l.rotate(); err != nil {
				return err
			}
		}
		r.lsn = l.nextLSN
		binary.LittleEndian.PutUint32(hdr[0:4], uint32(len(r.payload)))
		binary.LittleEndian.PutUint64(hdr[8:16], r.lsn)
		crc := crc32.Update(crc32.Checksum(hdr[8:16], crcTable), crcTable, r.payload)
		binary.LittleEndian.PutUint32(hdr[4:8], crc)
		if _, err := l.w.Write(hdr[:]); err != nil {
			return fmt.Errorf("cannot write to the write-ahead log: %w", err)
		}
		if _, err := l.w.Write(r.payload); err != nil {
			return fmt.Errorf("cannot write to the write-ahead log: %w", err)
		}
		l.segSize += headerLen + int64(len(r.payload))
		l.mu.Lock()
		l.nextLSN++
		l.mu.Unlock()
	}
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("cannot write to the write-ahead log: %w", err)
	}
	start := time.Now()
	if err := l.sync(); err != nil {
		return fmt.Errorf("cannot fsync the write-ahead log: %w", err)
	}
	if l.opts.OnSync != nil {
		l.opts.OnSync(len(group), time.Since(start))
	}
	return nil
}

// Truncate deletes every segment all of whose records have LSNs below keep.
// The segment being written is never deleted.
func (l *Log) Truncate(keep uint64) (removed int, err error) {
	l.mu.Lock()
	var drop []segment
	for len(l.segments) > 1 && l.segments[1].first <= keep {
		drop = append(drop, l.segments[0])
		l.segments = l.segments[1:]
	}
	l.mu.Unlock()
	for _, s := range drop {
		if e := os.Remove(s.path); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = e
		}
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
	if err := l.w.Flush(); err != nil {
		return err
	}
	if err := l.sync(); err != nil {
		return err
	}
	return l.f.Close()
}
