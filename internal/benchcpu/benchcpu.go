// Package benchcpu reports a benchmark's CPU time per operation beside its wall time: on a
// shared machine (these have 2 cores and other work), the process's CPU time varies much less
// than the wall time of an op, so it is the figure docs/benchmarks.md compares across builds.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Meter holds the CPU time the process had used when it started.
type Meter struct {
	b     *testing.B
	start time.Duration
}

// Start notes the CPU time the process has used so far; call it where the benchmark's timer
// starts (after ResetTimer).
func Start(b *testing.B) Meter {
	b.Helper()
	return Meter{b: b, start: used(b)}
}

// Report reports the CPU time used since Start, divided by b.N, as the metric cpu-µs/op.
// It counts every thread of the process (user and system), the work of the goroutines the
// benchmark waits for included.
func (m Meter) Report() {
	m.b.Helper()
	m.b.ReportMetric(float64((used(m.b)-m.start).Microseconds())/float64(m.b.N), "cpu-µs/op")
}

// used is the process's user and system time so far.
func used(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
