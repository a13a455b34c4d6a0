// Package testwait polls a condition until it holds, for the tests of several packages that
// wait on work done in other goroutines or processes (the sinks' dispatcher, the kit, the
// command's servers); and checks that a call waits for what the test holds back (Held).
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

// Held calls f in another goroutine and fails the test, naming what (the call and what it must
// wait for), when f returns within hold; then it calls release, which lets f finish, and
// returns f's result.
func Held(tb testing.TB, what string, hold time.Duration, f func() error, release func()) error {
	tb.Helper()
	res := make(chan error, 1)
	go func() { res <- f() }()
	select {
	case err := <-res:
		tb.Fatalf("%s returned (%v) within %s", what, err, hold)
	case <-time.After(hold):
	}
	release()
	return <-res
}
