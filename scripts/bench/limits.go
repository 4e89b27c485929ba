package main

import (
	"fmt"
	"os"
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
	out, _ := measure(l, p.pid())
	b.add("limit: fasthttp, read and discard", "a bare fasthttp server (scripts/bench) reading each body and answering 202, with the low-cost client", out)

	b.add("limit: memcpy", fmt.Sprintf("one core copying the low-cost body (%d B) over and over", len(body)), memcpyRate(body, l.events, min(b.o.duration, 3*time.Second)))

	d := min(b.o.duration, 5*time.Second)
	r, err := diskAppendRate(b.dir, d)
	check(err)
	b.add("limit: disk, 4 MiB appends", fmt.Sprintf("the embedded store's pattern: one writer appending to a new file, %d MiB at a time, each write followed by fsync", appendSize>>20), r)
	r, err = diskOverwriteRate(b.dir, d)
	check(err)
	b.add("limit: disk, 1 MiB overwrites", fmt.Sprintf("the log's pattern: one writer overwriting a %d MiB file in place, %d KiB at a time, each write followed by fdatasync", overwriteFile>>20, overwriteSize>>10), r)
}

// The disk rows time the two kinds of durable write that --ack wal makes:
// the log overwrites its reused segments, whose blocks are allocated and
// written before, and the embedded store appends blocks to new files. The
// first can be much the faster: on a virtual disk whose host allocates
// space on first write (and gets it back on discard), only appends pay
// for that.
const (
	overwriteSize = 1 << 20  // about a group of the log's records under the low-cost client
	overwriteFile = 64 << 20 // a log segment
	appendSize    = 4 << 20  // a store block at the default --flush-bytes
)

// pattern is bytes that are neither zeros (which a virtual disk may not
// store at all) nor one page repeated.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>12)
	}
	return b
}

// diskOverwriteRate is the MB/s of overwriteSize writes, each followed by
// fdatasync, round a file that is filled and synced first, untimed.
func diskOverwriteRate(dir string, d time.Duration) (result, error) {
	buf := pattern(overwriteFile)
	return timeWrites(dir, d, func(f *os.File) error {
		if _, err := f.Write(buf); err != nil {
			return err
		}
		return f.Sync()
	}, func(f *os.File, n int64) error {
		off := n % overwriteFile
		if _, err := f.WriteAt(buf[off:off+overwriteSize], off); err != nil {
			return err
		}
		return syscall.Fdatasync(int(f.Fd()))
	}, overwriteSize)
}

// diskAppendRate is the MB/s of appendSize appends to a new file, each
// followed by fsync.
func diskAppendRate(dir string, d time.Duration) (result, error) {
	buf := pattern(appendSize)
	return timeWrites(dir, d, nil, func(f *os.File, _ int64) error {
		if _, err := f.Write(buf); err != nil {
			return err
		}
		return f.Sync()
	}, appendSize)
}

// timeWrites creates a file in dir, calls prepare on it untimed, then write
// (given the bytes written so far; each call writes size bytes) for d, and
// removes the file. The result holds the MB/s in diskMBps.
func timeWrites(dir string, d time.Duration, prepare func(*os.File) error, write func(*os.File, int64) error, size int64) (result, error) {
	f, err := os.CreateTemp(dir, "disk-")
	if err != nil {
		return result{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if prepare != nil {
		if err := prepare(f); err != nil {
			return result{}, err
		}
	}
	var n int64
	start := time.Now()
	for time.Since(start) < d {
		if err := write(f, n); err != nil {
			return result{}, err
		}
		n += size
	}
	return result{diskMBps: float64(n) / time.Since(start).Seconds() / 1e6}, nil
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
