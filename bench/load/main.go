// Command load measures scribehook's serve on loopback and breaks it on purpose: the load
// runs, the fan-out latency run, the 2-hour result run and the fault scenarios behind
// docs/benchmarks.md and scripts/fault-*.sh.
//
//	go run ./bench/load ingest   [flags]   durable ingest against a bare Fiber handler
//	go run ./bench/load fanout   [flags]   receipt → webhook sink latency
//	go run ./bench/load big      [flags]   a 2-hour pre-recorded result: memory and times
//	go run ./bench/load fault kill|webhook-down|diskfull|slow [flags]
//	go run ./bench/load replicas -scenario steady|kill|broker-restart -bus redisstream|nats [flags]
//
// Each run builds cmd/scribehook (or takes -bin), starts `scribehook serve` as a subprocess
// with a generated configuration in a temporary directory, and checks afterwards, in serve's
// SQLite file opened read-only, that every delivery answered 2xx is stored and processed.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	if os.Args[1] != "bare" {
		// The bare handler stops itself on SIGTERM; every other command owns child processes.
		go killChildrenOnSignal()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "ingest":
		err = cmdIngest(args)
	case "fanout":
		err = cmdFanout(args)
	case "big":
		err = cmdBig(args)
	case "fault":
		err = cmdFault(args)
	case "replicas":
		err = cmdReplicas(args)
	case "bare":
		err = cmdBare(args)
	case "-h", "-help", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "load: unknown command %q\n", cmd)
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: load <command> [flags]   (load <command> -h for its flags)
  ingest   durable ingest of callbacks, side by side with a bare Fiber handler
  fanout   latency from receipt to the webhook sink
  big      a 2-hour pre-recorded result stored, subtitled and fanned out: memory
  fault    kill | webhook-down | diskfull | slow
  replicas serve replicas on PostgreSQL and a broker: -scenario steady | kill | broker-restart, -bus redisstream | nats
`)
}

// children are the processes the tool started (serve, the bare handler): an interrupted run
// must not leave them running, holding ports and CPU.
var children sync.Map // *os.Process → struct{}

func track(p *os.Process)   { children.Store(p, struct{}{}) }
func untrack(p *os.Process) { children.Delete(p) }

func killChildrenOnSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	sig := <-ch
	children.Range(func(k, _ any) bool {
		_ = k.(*os.Process).Kill()
		return true
	})
	fmt.Fprintf(os.Stderr, "load: %s: stopped\n", sig)
	os.Exit(130)
}

// common are the flags every run shares.
type common struct {
	bin  string
	dir  string
	keep bool
	seed uint64
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.bin, "bin", "", "scribehook binary (default: go build ./cmd/scribehook into the work directory)")
	fs.StringVar(&c.dir, "dir", "", "work directory (default: a new temporary directory, removed afterwards unless -keep)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (database, sink outputs, serve logs)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the generated bodies and of random choices")
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

// machine describes where the figures come from: they mean nothing without it.
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
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("%d CPU (%s), Linux %s, %s, load average %s", runtime.NumCPU(), model, kernel, runtime.Version(), load)
}
