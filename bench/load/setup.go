package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The set-up every subcommand shares, written once so that a change to it (a flag, how serve
// is built, what is stopped when a run ends) is one edit: the flags of every run, the work
// directory and the serve binary, the generated callbacks, and the processes a run starts,
// stopped and removed when it ends, however it ends. A subcommand keeps only what is its own:
// its flags, its load, its fault and its verdict.

// warmSeed is added to a run's seed for its warm-up calls: they must be other messages than
// the measured ones, or they would make the measured ones duplicates.
const warmSeed = 1_000_000

// common are the flags every run shares.
type common struct {
	bin  string
	dir  string
	keep bool
	seed uint64
	// pprof is where serve's profiles go (-pprof); empty: serve runs without its profiling
	// endpoint, as builds before debug.listen must.
	pprof string
}

// newFlags is a subcommand's flag set with the flags every run shares on it; a bad flag exits
// 2 and -h exits 0, as the scripts expect of every subcommand.
func newFlags(name string) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	c := &common{}
	c.register(fs)
	return fs, c
}

// flagGiven reports whether the command line gave the flag name: a subcommand whose default
// depends on other flags changes it only where the user left it.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.bin, "bin", "", "scribehook binary (default: go build ./cmd/scribehook into the work directory)")
	fs.StringVar(&c.dir, "dir", "", "work directory (default: a new temporary directory, removed afterwards unless -keep)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (database, sink outputs, serve logs)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the generated bodies and of random choices")
	fs.StringVar(&c.pprof, "pprof", "", "directory for serve's CPU and heap profiles of the measured phase, taken through debug.listen (the build must know the key)")
}

// loadFlags are the flags of the callbacks a run sends, on every subcommand that sends them:
// one name and one meaning everywhere. The defaults are the subcommand's, and so is what its
// rate and its drain bound are, which their help says.
type loadFlags struct {
	n, conns, sessions int
	rate               float64
	drain              time.Duration
}

// addLoad registers -n, -rate, -conns, -sessions and -drain on fs with def's values as their
// defaults. A run whose live sessions are fixed (def.sessions 0) has no -sessions.
func addLoad(fs *flag.FlagSet, def loadFlags, rateHelp, drainHelp string) *loadFlags {
	l := &loadFlags{}
	fs.IntVar(&l.n, "n", def.n, "callbacks to send")
	fs.Float64Var(&l.rate, "rate", def.rate, rateHelp)
	fs.IntVar(&l.conns, "conns", def.conns, "concurrent connections (each sends one callback at a time)")
	if def.sessions > 0 {
		fs.IntVar(&l.sessions, "sessions", def.sessions, "live sessions the messages are spread over")
	}
	fs.DurationVar(&l.drain, "drain", def.drain, drainHelp)
	return l
}

// workdir makes the run's directory and returns a cleanup.
func (c *common) workdir() (string, func(), error) {
	if c.dir != "" {
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("work directory: %w", err)
		}
		return c.dir, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "scribehook-bench-")
	if err != nil {
		return "", nil, fmt.Errorf("work directory: %w", err)
	}
	return dir, func() {
		if c.keep {
			fmt.Printf("work directory kept: %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}, nil
}

// callSpec describes generated callbacks: n of a shape, live ones spread over sessions.
type callSpec struct {
	Shape       string
	N, Sessions int
}

// runSpec is what a run needs before its own part starts.
type runSpec struct {
	Calls callSpec // the measured calls, from the run's seed; none when Shape is empty
	Warm  callSpec // the warm-up calls, from the seed plus warmSeed; none when Shape is empty
	Hook  bool     // the webhook sink's target, the tool's receiver
	Words int      // words of each measured pre-recorded result; 0: the shape's
	// Unknown adds members scribehook does not know to the words of the measured results.
	Unknown bool
}

// rig is a run's set-up: its work directory, the serve binary, its calls, and what it started.
// close undoes it all, the last started first, so that a failed run leaves no process holding
// a port and no directory behind (but the one -keep asks for).
type rig struct {
	*common
	dir   string
	bin   string
	calls []callback
	warm  []callback
	hook  *hookReceiver
	undo  []func()
}

// setUp makes the work directory, builds serve (unless -bin), generates the calls and starts
// the webhook receiver, as spec asks.
func (c *common) setUp(spec runSpec) (_ *rig, err error) {
	dir, cleanup, err := c.workdir()
	if err != nil {
		return nil, err
	}
	r := &rig{common: c, dir: dir, undo: []func(){cleanup}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.bin, err = buildServe(c.bin, dir); err != nil {
		return nil, err
	}
	if spec.Calls.Shape != "" {
		if spec.Words > 0 || spec.Unknown {
			r.calls, err = preRecordedWords(c.seed, spec.Calls.N, spec.Calls.Shape, spec.Words, spec.Unknown)
		} else {
			r.calls, err = makeCallbacks(c.seed, spec.Calls.Shape, spec.Calls.N, spec.Calls.Sessions)
		}
		if err != nil {
			return nil, err
		}
	}
	if spec.Warm.Shape != "" {
		if r.warm, err = makeCallbacks(c.seed+warmSeed, spec.Warm.Shape, spec.Warm.N, spec.Warm.Sessions); err != nil {
			return nil, err
		}
	}
	if spec.Hook {
		if _, err = r.startHook(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// onClose adds f to what close undoes.
func (r *rig) onClose(f func()) { r.undo = append(r.undo, f) }

// close undoes the set-up in the reverse order it was made.
func (r *rig) close() {
	for i := len(r.undo) - 1; i >= 0; i-- {
		r.undo[i]()
	}
	r.undo = nil
}

// path is name in the work directory.
func (r *rig) path(name string) string { return filepath.Join(r.dir, name) }

// startHook starts the webhook receiver, taken down when the run ends.
func (r *rig) startHook() (*hookReceiver, error) {
	h, err := newHookReceiver()
	if err != nil {
		return nil, err
	}
	r.hook = h
	r.onClose(h.down)
	return h, nil
}

// serve starts serve with setup (in the work directory unless setup.Dir names another) and
// waits until it is ready. It is killed when the run ends unless the run stopped it: the kill
// is registered before the start, so that a serve that never got ready does not outlive the run.
func (r *rig) serve(setup serveSetup) (*serveProc, error) {
	if setup.Dir == "" {
		setup.Dir = r.dir
	}
	if r.pprof != "" && setup.DebugListen == "" {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		setup.DebugListen = addr
	}
	srv, err := newServe(r.bin, setup)
	if err != nil {
		return nil, err
	}
	r.onClose(func() { _ = srv.kill9() })
	if err := srv.Start(context.Background()); err != nil {
		return nil, err
	}
	return srv, nil
}

// startServe is setUp, then serve with the setup that setup returns for the rig (its work
// directory, its webhook receiver), then the machine line every report starts with: the
// whole set-up of a run of one serve. On an error, what was set up is undone.
func (c *common) startServe(spec runSpec, setup func(r *rig) serveSetup) (*rig, *serveProc, error) {
	r, err := c.setUp(spec)
	if err != nil {
		return nil, nil, err
	}
	srv, err := r.serve(setup(r))
	if err != nil {
		r.close()
		return nil, nil, err
	}
	printMachine()
	return r, srv, nil
}

// bothSinks is serve with a file sink in the work directory and a webhook sink to the tool's
// receiver.
func bothSinks(r *rig) serveSetup { return serveSetup{FileSink: r.path("out"), HookURL: r.hook.url()} }

// printMachine prints where the figures come from: they mean nothing without it.
func printMachine() { fmt.Printf("machine: %s\n", machine()) }

// machine describes the machine, the kernel, Go and the load average.
func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	kernel := "unknown kernel"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d CPU (%s), Linux %s, %s, load average %s", runtime.NumCPU(), model, kernel, runtime.Version(), loadAvg())
}

// loadAvg is the 1, 5 and 15-minute load average; "?" when unknown.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
