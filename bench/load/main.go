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
  fanout   latency from receipt to the webhook sink; -sustain: its sustained rate, rate rising step by step
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
