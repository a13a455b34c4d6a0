// Command load measures scribehook's serve on loopback and breaks it on purpose: the load
// runs, the fan-out latency run, the 2-hour result run and the fault scenarios behind
// docs/benchmarks.md and scripts/fault-*.sh.
//
//	go run ./bench/load ingest   [flags]   durable ingest against a bare Fiber handler
//	go run ./bench/load fanout   [flags]   receipt → webhook sink latency (-sustain: the sink's sustained rate)
//	go run ./bench/load big      [flags]   a 2-hour pre-recorded result: memory and times
//	go run ./bench/load fault kill|webhook-down|diskfull|slow [flags]
//	go run ./bench/load replicas -scenario steady|kill|broker-restart -bus redisstream|nats [flags]
//
// Each run builds cmd/scribehook (or takes -bin), starts `scribehook serve` as a subprocess
// with a generated configuration in a temporary directory, and checks afterwards, in serve's
// SQLite file opened read-only, that every delivery answered 2xx is stored and processed. With
// -pprof DIR, ingest, fanout and big save serve's CPU and heap profiles of their measured phase
// in DIR, taken through serve's debug.listen. Each ends with its "figures" lines: the figures
// of docs/benchmarks.md with their targets and the load average.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
)

// command is one subcommand: what runs it and its line of the usage ("" keeps it out).
type command struct {
	name, help string
	run        func(args []string) error
}

// commands are the subcommands in the order usage lists them.
var commands = []command{
	{"ingest", "durable ingest of callbacks, side by side with a bare Fiber handler", cmdIngest},
	{"fanout", "latency from receipt to the webhook sink; -sustain: its sustained rate, rate rising step by step", cmdFanout},
	{"big", "a 2-hour pre-recorded result stored, subtitled and fanned out: memory", cmdBig},
	{"fault", "kill | webhook-down | diskfull | slow", cmdFault},
	{"replicas", "serve replicas on PostgreSQL and a broker: -scenario steady | kill | broker-restart, -bus redisstream | nats", cmdReplicas},
	{"bare", "", cmdBare}, // the bare Fiber handler, started by ingest as a process of its own
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	switch name {
	case "-h", "-help", "--help", "help":
		usage()
		return
	}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		fmt.Fprintf(os.Stderr, "load: unknown command %q\n", name)
		usage()
		os.Exit(2)
	}
	if name != "bare" {
		// The bare handler stops itself on SIGTERM; every other command owns child processes.
		go killChildrenOnSignal()
	}
	if err := commands[i].run(args); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: load <command> [flags]   (load <command> -h for its flags)")
	for _, c := range commands {
		if c.help != "" {
			fmt.Fprintf(os.Stderr, "  %-8s %s\n", c.name, c.help)
		}
	}
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
