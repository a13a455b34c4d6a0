package testinfra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Process is a server run as a child process that may be stopped, killed and started again,
// as the brokers here and bench/load's serve and bare handler are: each start logs to a file
// of its own, waits until the server answers, and reports an early exit with the end of that
// log. Where it listens and keeps its data is its command's business, the same for every start.
type Process struct {
	Name    string           // the server, in errors
	LogName string           // its logs are Dir/LogName-N.log, N counting starts (default Name)
	Dir     string           // working directory and logs
	Command func() *exec.Cmd // the command of one start; Start sets its Dir, Stdout and Stderr
	Ready   func() error     // nil once the server serves
	Within  time.Duration    // how long a start may wait for Ready before it kills the server
	// Started and Exited, when set, are told of each server process, so that a tool can kill
	// what it started when it is interrupted.
	Started, Exited func(*os.Process)

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	err     error         // how the last process exited
	starts  int
	logPath string // the current (or last) process's log
}

// Start runs the server and waits until Ready answers nil. It fails if the server runs
// already, exits first, is not ready within Within (it is killed then), or ctx ends.
func (p *Process) Start(ctx context.Context) error {
	if p.Running() {
		return fmt.Errorf("%s already running", p.Name)
	}
	logName := p.LogName
	if logName == "" {
		logName = p.Name
	}
	p.mu.Lock()
	p.starts++
	logPath := filepath.Join(p.Dir, fmt.Sprintf("%s-%d.log", logName, p.starts))
	p.logPath = logPath
	p.mu.Unlock()
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("%s log: %w", p.Name, err)
	}
	cmd := p.Command()
	cmd.Dir = p.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	if p.Started != nil {
		p.Started(cmd.Process)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.err = cmd, exited, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		if p.Exited != nil {
			p.Exited(cmd.Process)
		}
		logf.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(exited)
	}()
	deadline := time.Now().Add(p.Within)
	for {
		select {
		case <-exited:
			return fmt.Errorf("%s exited during start (%v); log %s:\n%s", p.Name, p.ExitErr(), logPath, Tail(logPath, 2000))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		err := p.Ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			p.Kill()
			return fmt.Errorf("%s not ready after %s (%w); log %s:\n%s", p.Name, p.Within, err, logPath, Tail(logPath, 2000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Signal sends sig and waits for the server to exit; after wait it kills it and says so. A
// server that is not running is left alone. How it exited is ExitErr's.
func (p *Process) Signal(sig syscall.Signal, wait time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if !p.Running() {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", p.Name, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%s did not stop within %s of %s: killed", p.Name, wait, signalName(sig))
	}
}

// signalName is how the signals a test sends are written (syscall's String is "terminated").
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return sig.String()
}

// Kill ends the server at once, if it runs, and waits for it.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if !p.Running() {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Running reports whether the server's process runs.
func (p *Process) Running() bool {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Pid is the current (or last) process's id; 0 before the first start.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Log is the path of the current (or last) process's log.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logPath
}

// ExitErr is how the last process exited: nil for status 0, or while it runs.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
