//go:build unix

package intake

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used. The
// benchmarks report per-event CPU time next to wall time because the
// machines they run on are shared: wall time swings with the neighbours'
// load, CPU time much less.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
