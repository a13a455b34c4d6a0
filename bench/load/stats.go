package main

import (
	"fmt"
	"slices"
	"time"
)

// latencies summarises a set of durations with exact percentiles (every sample is kept: the
// runs are bounded, and exact tails are the point).
type latencies struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

func summarise(ds []time.Duration) latencies {
	if len(ds) == 0 {
		return latencies{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return latencies{N: len(s), P50: quantile(s, 0.50), P90: quantile(s, 0.90), P99: quantile(s, 0.99), Max: s[len(s)-1]}
}

// quantile is the nearest-rank quantile of sorted samples: the smallest sample with at least
// q of the samples at or below it.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted)) + 0.999999999)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func (l latencies) String() string {
	if l.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %s  p90 %s  p99 %s  max %s  (n=%d)", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max), l.N)
}

// ms prints a duration in milliseconds with a precision that suits its size.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f < 10:
		return fmt.Sprintf("%.2f ms", f)
	case f < 100:
		return fmt.Sprintf("%.1f ms", f)
	}
	return fmt.Sprintf("%.0f ms", f)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
