package testinfra

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server that never gets ready is killed when its start gives up; one that serves is
// stopped, and started again with a log of its own.
func TestProcessLifecycle(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip(err)
	}
	ready := errors.New("not yet")
	p := &Process{
		Name: "sleeper", Dir: t.TempDir(), Within: 100 * time.Millisecond,
		Command: func() *exec.Cmd { return exec.Command("sleep", "60") },
		Ready:   func() error { return ready },
	}
	err := p.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "sleeper not ready after 100ms (not yet)") {
		t.Fatalf("Start of a server never ready = %v", err)
	}
	if p.Running() {
		t.Fatal("the server that was never ready still runs")
	}

	ready = nil
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("second Start = %v", err)
	}
	if !p.Running() || p.Pid() == 0 {
		t.Fatalf("after Start: running %v, pid %d", p.Running(), p.Pid())
	}
	if err := p.Start(context.Background()); err == nil {
		t.Error("Start of a running server succeeded")
	}
	if got, want := p.Log(), filepath.Join(p.Dir, "sleeper-2.log"); got != want {
		t.Errorf("Log = %s, want %s", got, want)
	}
	if _, err := os.Stat(p.Log()); err != nil {
		t.Error(err)
	}
	if err := p.Signal(syscall.SIGTERM, 5*time.Second); err != nil {
		t.Fatalf("Signal = %v", err)
	}
	if p.Running() || p.ExitErr() == nil {
		t.Errorf("after SIGTERM: running %v, exit %v (want stopped by the signal)", p.Running(), p.ExitErr())
	}
	if err := p.Signal(syscall.SIGTERM, time.Second); err != nil {
		t.Errorf("Signal to a stopped server = %v, want nil", err)
	}
}
