package sandboxtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BuildProgram builds the main package in dir into out with the go on PATH (under `go test`,
// the test's own toolchain, which it puts first on PATH).
func BuildProgram(dir, out string, flags ...string) error {
	build := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, ".")...)
	build.Dir = dir
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, b)
	}
	return nil
}

// EnvWithout is this process's environment without the variables that start with one of
// prefixes, so that a developer's own settings cannot change what a subprocess does.
func EnvWithout(prefixes ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}

// Program is a subprocess whose standard output is kept line by line as it comes and whose
// standard error is kept whole, for a test to look at while it runs and after.
type Program struct {
	cmd    *exec.Cmd
	stderr Buffer
	exited chan error
	done   bool // exited has been received from

	mu    sync.Mutex
	lines []string
}

// StartProgram starts bin with args in env.
func StartProgram(bin string, args, env []string) (*Program, error) {
	p := &Program{cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	p.cmd.Env = env
	p.cmd.Stderr = &p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout of %s: %w", bin, err)
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
	}()
	// Wait only after the output is read: it closes the pipe, and lines would be lost.
	go func() {
		<-read
		p.exited <- p.cmd.Wait()
	}()
	return p, nil
}

// Lines is what the program has printed so far, a line an element.
func (p *Program) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Stderr is what the program has written to its standard error so far.
func (p *Program) Stderr() string { return p.stderr.String() }

// ErrTimeout is wrapped by the error of a wait that ran out of time.
var ErrTimeout = errors.New("timed out")

// WaitFor polls the program's lines until find reports what it looks for, for at most d.
func (p *Program) WaitFor(what string, d time.Duration, find func(lines []string) (string, bool)) (string, error) {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if v, ok := find(p.Lines()); ok {
			return v, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no %s within %v: %w", what, d, ErrTimeout)
		}
	}
}

// FirstLine waits at most d for the first line the program prints, such as a launcher's line of
// JSON or a server's address.
func (p *Program) FirstLine(d time.Duration) (string, error) {
	return p.WaitFor("first line", d, func(lines []string) (string, bool) {
		if len(lines) == 0 {
			return "", false
		}
		return lines[0], true
	})
}

// Stop sends SIGTERM and waits at most d for the program to exit; it returns the exit's error
// (nil for exit status 0).
func (p *Program) Stop(d time.Duration) error {
	if p.done {
		return errors.New("the program has already exited")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM: %w", err)
	}
	select {
	case err := <-p.exited:
		p.done = true
		if err != nil {
			return fmt.Errorf("exit after SIGTERM: %w", err)
		}
		return nil
	case <-time.After(d):
		return fmt.Errorf("still running %v after SIGTERM: %w", d, ErrTimeout)
	}
}

// Kill kills the program if it has not exited yet, and waits for it.
func (p *Program) Kill() {
	if p.done {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.done = true
}
