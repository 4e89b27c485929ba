package main

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// serveDiscard is the bare receiver the limits row measures: fasthttp reads
// each whole body, the handler drops it and answers 202. It runs in a
// process of its own (this binary re-executed) so its CPU is its own.
func serveDiscard(addr string) {
	s := &fasthttp.Server{
		Handler:            func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(fasthttp.StatusAccepted) },
		MaxRequestBodySize: 64 << 20,
		Name:               "discard",
	}
	check(s.ListenAndServe(addr))
}

// limits measures what this machine allows for the low-cost body: the bare
// receiver with the same client, one core copying the bytes, and the disk
// taking durable writes.
func (b *bench) limits() {
	body := lowCostBody(b.o.lowEvents, time.Now())
	self, err := os.Executable()
	check(err)
	addr := freeAddr()
	p, err := startProc(nil, self, "--discard-server", addr)
	check(err)
	defer p.stop()
	check(p.waitHTTP("http://"+addr+"/", false))
	l := load{addr: addr, uri: "http://" + addr + "/v1/logs", body: body, events: b.o.lowEvents, conns: b.o.lowConns, duration: b.o.duration}
	out, _ := measure(l, p.pid(), b.disk)
	b.add("limit: fasthttp, read and discard", "a bare fasthttp server (scripts/bench) reading each body and answering 202, with the low-cost client", out)

	b.add("limit: memcpy", fmt.Sprintf("one core copying the low-cost body (%d B) over and over", len(body)), memcpyRate(body, l.events, min(b.o.duration, 3*time.Second)))

	d := min(b.o.duration, 5*time.Second)
	rows := []struct {
		name, note string
		kinds      []func(string) (*diskWriter, error)
	}{
		{"limit: disk, 4 MiB appends", fmt.Sprintf("the embedded store's pattern: one writer appending to a new file, %d MiB at a time, each write followed by fsync", appendSize>>20), []func(string) (*diskWriter, error){newAppender}},
		{"limit: disk, 1 MiB overwrites", fmt.Sprintf("the log's pattern: one writer overwriting a %d MiB file written before, %d MiB at a time, each write followed by fdatasync", overwriteFile>>20, overwriteSize>>20), []func(string) (*diskWriter, error){newOverwriter}},
		{diskBothRow, "the two writers above at once, kept to equal bytes as the log and the store take the same lines: their sum", []func(string) (*diskWriter, error){newAppender, newOverwriter}},
	}
	for _, row := range rows {
		r, err := diskRate(b.dir, d, row.kinds...)
		check(err)
		b.add(row.name, row.note, r)
	}
}

// diskBothRow is the disk's durable write rate for the mix --ack wal makes
// on the embedded store.
const diskBothRow = "limit: disk, both at once"

// The disk rows time the two kinds of durable write --ack wal makes: the
// log overwrites its reused segments, whose blocks were written before,
// and the embedded store appends blocks to new files. The first can be
// much the faster: on a virtual disk whose host allocates space on first
// write (and takes it back on discard), only appends pay for that.
const (
	appendSize    = 4 << 20  // a store block at the default --flush-bytes
	overwriteSize = 1 << 20  // about a group of the log's records under the low-cost client
	overwriteFile = 64 << 20 // a log segment
)

// diskWriter makes one durable write of size bytes per step, into a file
// of its own.
type diskWriter struct {
	f    *os.File
	size int64
	step func() error
}

// pattern is bytes that are neither zeros (which a virtual disk may not
// store at all) nor one page repeated.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>12)
	}
	return b
}

// newAppender appends appendSize blocks to a new file, each followed by
// fsync, as the embedded store does.
func newAppender(dir string) (*diskWriter, error) {
	f, err := os.CreateTemp(dir, "disk-append-")
	if err != nil {
		return nil, err
	}
	buf := pattern(appendSize)
	return &diskWriter{f: f, size: appendSize, step: func() error {
		if _, err := f.Write(buf); err != nil {
			return err
		}
		return f.Sync()
	}}, nil
}

// newOverwriter writes overwriteSize pieces round a file of overwriteFile
// bytes, each followed by fdatasync, as the log does in a reused segment.
// The file is written and synced first, so that the steps change no
// metadata.
func newOverwriter(dir string) (*diskWriter, error) {
	f, err := os.CreateTemp(dir, "disk-overwrite-")
	if err != nil {
		return nil, err
	}
	buf := pattern(overwriteFile)
	if _, err := f.Write(buf); err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	var off int64
	return &diskWriter{f: f, size: overwriteSize, step: func() error {
		if _, err := f.WriteAt(buf[off:off+overwriteSize], off); err != nil {
			return err
		}
		off = (off + overwriteSize) % overwriteFile
		return syscall.Fdatasync(int(f.Fd()))
	}}, nil
}

// diskRate makes one writer of each kind in dir and runs them at once for
// d, none more than appendSize bytes ahead of another (no writer's step
// is larger), then removes their files. The result's diskMBps is the
// bytes of all of them per second.
func diskRate(dir string, d time.Duration, kinds ...func(string) (*diskWriter, error)) (result, error) {
	var ws []*diskWriter
	defer func() {
		for _, w := range ws {
			w.f.Close()
			os.Remove(w.f.Name())
		}
	}()
	for _, newWriter := range kinds {
		w, err := newWriter(dir)
		if err != nil {
			return result{}, err
		}
		ws = append(ws, w)
	}
	var (
		mu       sync.Mutex
		turn     = sync.NewCond(&mu)
		written  = make([]int64, len(ws))
		stop     bool
		firstErr error
	)
	// ahead tells writer i to wait while its next step would take it more
	// than appendSize past another. The others' steps meanwhile only
	// shrink its lead, so the bound holds while they write at once.
	ahead := func(i int) bool { // with mu held
		for _, n := range written {
			if written[i]+ws[i].size-n > appendSize {
				return true
			}
		}
		return false
	}
	end := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		stop = true
		turn.Broadcast()
		mu.Unlock()
	}
	start := time.Now()
	timer := time.AfterFunc(d, func() { end(nil) })
	defer timer.Stop()
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				for !stop && ahead(i) {
					turn.Wait()
				}
				if stop {
					mu.Unlock()
					return
				}
				mu.Unlock()
				if err := w.step(); err != nil {
					end(err)
					return
				}
				mu.Lock()
				written[i] += w.size
				turn.Broadcast()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if firstErr != nil {
		return result{}, firstErr
	}
	var total int64
	for _, n := range written {
		total += n
	}
	return result{diskMBps: float64(total) / secs / 1e6}, nil
}

// memcpyRate copies body into a buffer as often as it can for d and
// returns the events per second that makes.
func memcpyRate(body []byte, events int, d time.Duration) result {
	dst := make([]byte, len(body))
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		for range 64 {
			copy(dst, body)
		}
		n += 64
	}
	secs := time.Since(start).Seconds()
	return result{answered: float64(n) * float64(events) / secs, mbps: float64(n) * float64(len(body)) / secs / 1e6}
}
