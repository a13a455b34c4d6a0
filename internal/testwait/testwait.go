// Package testwait polls a condition until it holds, for the tests of several packages that
// wait on work done in other goroutines or processes (the sinks' dispatcher, the kit, the
// command's servers).
package testwait

import (
	"testing"
	"time"
)

// maxPoll bounds the pause between two checks: a condition that reads a store or calls a
// server is not run in a tight loop, and one that holds soon is seen within a millisecond or
// two.
const maxPoll = 25 * time.Millisecond

// For checks cond until it holds and fails the test, naming what it waited for, when it
// still does not after timeout. The pause between checks starts at a millisecond and
// doubles up to maxPoll.
func For(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, maxPoll) {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pause)
	}
}
