package ingestexec

import (
	"os"
	"testing"
	"time"
)

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
