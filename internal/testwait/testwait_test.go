package testwait_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/testwait"
)

func TestForChecksUntilTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	testwait.For(t, "the fifth check", time.Minute, func() bool { return n.Add(1) == 5 })
	if got := n.Load(); got != 5 {
		t.Errorf("%d checks, want 5", got)
	}
}

// recorder is a testing.TB that keeps what Fatalf said; its Fatalf ends the goroutine, as
// testing.T's does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestForFailsAtTheDeadline(t *testing.T) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		testwait.For(r, "nothing", 50*time.Millisecond, func() bool { return false })
	}()
	<-done
	if r.msg != "timed out waiting for nothing" {
		t.Errorf("Fatalf said %q, want %q", r.msg, "timed out waiting for nothing")
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 5*time.Second {
		t.Errorf("failed after %s, want soon after 50ms", d)
	}
}

func TestHeldReturnsAfterTheRelease(t *testing.T) {
	gate := make(chan struct{})
	var released atomic.Bool
	err := testwait.Held(t, "the wait", 10*time.Millisecond, func() error {
		<-gate
		if !released.Load() {
			return errors.New("let go before the release")
		}
		return errors.New("done")
	}, func() {
		released.Store(true)
		close(gate)
	})
	if err == nil || err.Error() != "done" {
		t.Errorf("Held = %v, want f's own error, done", err)
	}
}

func TestHeldFailsWhenTheCallDoesNotWait(t *testing.T) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = testwait.Held(r, "Close with work in flight", time.Minute, func() error { return nil }, func() {})
	}()
	<-done
	if want := "Close with work in flight returned (<nil>) within 1m0s"; r.msg != want {
		t.Errorf("Fatalf said %q, want %q", r.msg, want)
	}
}
