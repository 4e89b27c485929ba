// Package benchcpu reports the CPU time a benchmark used next to its wall
// time. The machines the benchmarks run on are shared: wall time swings
// with the neighbours' load, the process's CPU time much less, so the
// per-event CPU time is the number to compare between two versions.
package benchcpu

import (
	"testing"
	"time"
)

// Start returns the CPU time (user + system, all threads) the process has
// used so far, to pass to Report; 0 where the platform does not say.
func Start() time.Duration { return processCPU() }

// Report adds "cpu-ns/<unit>": the CPU time used since start divided by
// b.N*perOp. It reports nothing where the platform gives no CPU time.
func Report(b *testing.B, start time.Duration, perOp int, unit string) {
	used := processCPU() - start
	if start == 0 || used <= 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(used.Nanoseconds())/(float64(b.N)*float64(perOp)), "cpu-ns/"+unit)
}
