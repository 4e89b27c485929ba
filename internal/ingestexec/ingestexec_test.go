package ingestexec

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	for _, c := range []struct {
		stat string
		want Usage
		ok   bool
	}{
		{"4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0", Usage{User: 2.5, System: 0.75, MinorFaults: 100}, true},
		{"17 (ingest) R 1 17 17 0 -1 4194560 9 3 0 0 1 2 0 0 20 0 9 0", Usage{User: 0.01, System: 0.02, MinorFaults: 9}, true},
		{"garbage", Usage{}, false},
		{"17 (ingest) R 1 17", Usage{}, false},
		{"17 (ingest) R 1 17 17 0 -1 4194560 9 0 0 0 x 2 0 0 20 0 9 0", Usage{}, false},
		{"17 (ingest) R 1 17 17 0 -1 4194560 y 0 0 0 1 2 0 0 20 0 9 0", Usage{}, false},
	} {
		got, err := parseStat(c.stat)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, ok %v", c.stat, got, err, c.want, c.ok)
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

// A thread that burns CPU and touches fresh memory shows both in
// ThreadUsage, as the kernel's own count for that thread (getrusage) does,
// and an idle thread of the same process shows neither.
func TestThreadUsage(t *testing.T) {
	pid := os.Getpid()
	// threadUsage runs f on a thread of its own and returns what
	// ThreadUsage counted for that thread meanwhile.
	threadUsage := func(f func() error) (Usage, error) {
		type reading struct {
			u   Usage
			err error
		}
		done := make(chan reading)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid := unix.Gettid()
			before, err := ThreadUsage(pid, tid)
			if err == nil {
				err = f()
			}
			after, err2 := ThreadUsage(pid, tid)
			done <- reading{Usage{after.User - before.User, after.System - before.System, after.MinorFaults - before.MinorFaults}, errors.Join(err, err2)}
		}()
		r := <-done
		return r.u, r.err
	}
	const pages = 4096 // touched once each by the busy thread
	burnStarted, burnDone := make(chan struct{}), make(chan struct{})
	idleErr := make(chan error, 1)
	var idle Usage
	go func() {
		var err error
		idle, err = threadUsage(func() error {
			close(burnStarted)
			<-burnDone
			return nil
		})
		idleErr <- err
	}()
	<-burnStarted
	busy, err := threadUsage(func() error {
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
		if err != nil {
			return err
		}
		size := pages * os.Getpagesize()
		mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			return err
		}
		defer unix.Munmap(mem)
		// One fault per page, even where transparent huge pages are on.
		if err := unix.Madvise(mem, unix.MADV_NOHUGEPAGE); err != nil {
			return err
		}
		for i := 0; i < size; i += os.Getpagesize() {
			mem[i] = 1
		}
		return nil
	})
	close(burnDone)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-idleErr; err != nil {
		t.Fatal(err)
	}
	// The loop runs in user space: its time is User, not System.
	if busy.User < 0.2 {
		t.Errorf("ThreadUsage counted %.2f s of user time for a thread that spun for at least 0.3 s (%+v)", busy.User, busy)
	}
	if busy.MinorFaults < pages {
		t.Errorf("ThreadUsage counted %d page faults for a thread that touched %d fresh pages", busy.MinorFaults, pages)
	}
	if idle.CPU() > 0.1 || idle.MinorFaults >= pages/4 {
		t.Errorf("ThreadUsage counted %+v for a thread that waited while another worked", idle)
	}
	if _, err := ThreadUsage(pid, 1<<30); err == nil {
		t.Error("ThreadUsage of a thread that does not exist: want an error")
	}
}

// TestEnvIsClean: the binary never inherits a setting of ingest from the
// caller's shell (INGEST_<FLAG>, AZURE_*, GOMEMLIMIT), keeps the rest, and
// takes extra last, so an extra setting such as the bench's GOMAXPROCS
// wins over an inherited one.
func TestEnvIsClean(t *testing.T) {
	t.Setenv("INGEST_LISTEN", ":1")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true")
	t.Setenv("GOMEMLIMIT", "1MiB")
	t.Setenv("GOMAXPROCS", "3")
	t.Setenv("INGESTEXEC_KEPT", "yes")
	env := Env("GOMAXPROCS=1")
	last := map[string]string{}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		last[name] = value
	}
	for _, name := range []string{"INGEST_LISTEN", "AZURE_STORAGE_CONNECTION_STRING", "GOMEMLIMIT"} {
		if v, ok := last[name]; ok {
			t.Errorf("Env passes %s=%s from the caller", name, v)
		}
	}
	if last["INGESTEXEC_KEPT"] != "yes" || last["PATH"] != os.Getenv("PATH") {
		t.Errorf("Env dropped a variable that configures nothing of ingest: %q", env)
	}
	if last["GOMAXPROCS"] != "1" {
		t.Errorf("GOMAXPROCS in Env(\"GOMAXPROCS=1\") reads %q last: the extra setting must win", last["GOMAXPROCS"])
	}
	if cmd := Command("ingest"); !slices.Equal(cmd.Env, Env()) {
		t.Error("Command does not run with Env")
	}
}

// TestProcStatus: VmHWM of this process is in bytes (the kernel writes
// kB), at least what a touched 64 MiB slice holds; a gone process is not
// ok.
func TestProcStatus(t *testing.T) {
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	v, ok := ProcStatus(os.Getpid(), "VmHWM")
	if !ok || v < int64(len(b)) {
		t.Fatalf("VmHWM = %d (ok %v), want at least %d bytes", v, ok, len(b))
	}
	runtime.KeepAlive(b)
	if _, ok := ProcStatus(1<<30, "VmHWM"); ok {
		t.Fatal("a process that does not exist has a VmHWM")
	}
}
