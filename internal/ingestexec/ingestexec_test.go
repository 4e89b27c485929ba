package ingestexec

import (
	"os"
	"testing"
	"time"
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
