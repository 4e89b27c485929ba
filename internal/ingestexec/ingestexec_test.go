package ingestexec

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestStatCPUSeconds(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	for _, c := range []struct {
		stat string
		want float64
		ok   bool
	}{
		{"4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0", 3.25, true},
		{"17 (ingest) R 1 17 17 0 -1 4194560 9 0 0 0 1 2 0 0 20 0 9 0", 0.03, true},
		{"garbage", 0, false},
		{"17 (ingest) R 1 17", 0, false},
		{"17 (ingest) R 1 17 17 0 -1 4194560 9 0 0 0 x 2 0 0 20 0 9 0", 0, false},
	} {
		got, err := statCPUSeconds(c.stat)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("statCPUSeconds(%q) = %v, %v; want %v, ok %v", c.stat, got, err, c.want, c.ok)
		}
	}
}

func TestCPUSeconds(t *testing.T) {
	before, err := CPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has charged at least one more tick (10 ms).
	deadline := time.Now().Add(10 * time.Second)
	after := before
	for after <= before && time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			_ = i * i
		}
		if after, err = CPUSeconds(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before {
		t.Fatalf("CPU time stayed at %.2f s while spinning", before)
	}
	if _, err := CPUSeconds(-1); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}

// A thread that burns CPU shows it in ThreadCPUSeconds, as the kernel's
// own count for that thread (getrusage) does, and an idle thread of the
// same process does not.
func TestThreadCPUSeconds(t *testing.T) {
	pid := os.Getpid()
	// threadCPU runs f on a thread of its own and returns what
	// ThreadCPUSeconds counted for that thread meanwhile.
	threadCPU := func(f func() error) (float64, error) {
		type reading struct {
			secs float64
			err  error
		}
		done := make(chan reading)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid := unix.Gettid()
			before, err := ThreadCPUSeconds(pid, tid)
			if err == nil {
				err = f()
			}
			after, err2 := ThreadCPUSeconds(pid, tid)
			done <- reading{after - before, errors.Join(err, err2)}
		}()
		r := <-done
		return r.secs, r.err
	}
	burnStarted, burnDone := make(chan struct{}), make(chan struct{})
	idleErr := make(chan error, 1)
	var idle float64
	go func() {
		var err error
		idle, err = threadCPU(func() error {
			close(burnStarted)
			<-burnDone
			return nil
		})
		idleErr <- err
	}()
	<-burnStarted
	busy, err := threadCPU(func() error {
		used := func() (float64, error) {
			var ru unix.Rusage
			err := unix.Getrusage(unix.RUSAGE_THREAD, &ru)
			return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6, err
		}
		start, err := used()
		for x := 0; err == nil; x++ { // until the kernel has counted 0.3 s more for this thread
			if x%(1<<20) != 0 {
				continue
			}
			var now float64
			if now, err = used(); now-start >= 0.3 {
				break
			}
		}
		return err
	})
	close(burnDone)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-idleErr; err != nil {
		t.Fatal(err)
	}
	if busy < 0.2 {
		t.Errorf("ThreadCPUSeconds counted %.2f s for a thread that used at least 0.3 s", busy)
	}
	if idle > 0.1 {
		t.Errorf("ThreadCPUSeconds counted %.2f s for a thread that waited while another used 0.3 s", idle)
	}
	if _, err := ThreadCPUSeconds(pid, 1<<30); err == nil {
		t.Error("ThreadCPUSeconds of a thread that does not exist: want an error")
	}
}
