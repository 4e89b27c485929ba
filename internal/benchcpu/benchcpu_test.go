package benchcpu

import (
	"testing"
	"time"
)

func TestStartCounts(t *testing.T) {
	start := Start()
	if start == 0 {
		t.Skip("no process CPU time on this platform")
	}
	deadline := time.Now().Add(50 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	if used := Start() - start; used <= 0 {
		t.Fatalf("50 ms of spinning (%d turns) used %v of CPU time, want > 0", x, used)
	}
}
