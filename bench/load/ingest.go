package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// cmdIngest is the durable-ingest run: the same calls against the bare handler, then against
// serve, then the verification that every 2xx is stored and processed.
func cmdIngest(args []string) error {
	fs, c := newFlags("ingest")
	lf := addLoad(fs, loadFlags{n: 50000, conns: 64, sessions: 64, drain: 5 * time.Minute},
		"callbacks per second (0: as fast as the server answers)", "how long to wait for processing to finish")
	duration := fs.Duration("duration", 60*time.Second, "bound of the load phase")
	shape := fs.String("shape", shapeLive, "body: live, pre-1m or pre-2h")
	sinks := fs.String("sinks", "none", "serve's sinks: none, file, or file+hook")
	bare := fs.Bool("bare", true, "measure the bare Fiber handler with the same load first")
	sync := fs.String("sync", "full", "SQLite synchronous: full or normal")
	warm := fs.Int("warmup", 2000, "callbacks sent before the measured load (not measured)")
	_ = fs.Parse(args)

	r, err := c.setUp(runSpec{Calls: callSpec{*shape, lf.n, lf.sessions}, Warm: callSpec{*shape, *warm, lf.sessions}})
	if err != nil {
		return err
	}
	defer r.close()
	calls, warmCalls := r.calls, r.warm
	printMachine()
	fmt.Printf("load: %d %s callbacks (mean body %d bytes), %d connections, rate %s, bound %s, sinks %s, synchronous %s\n",
		len(calls), *shape, meanBody(calls), lf.conns, rateName(lf.rate), *duration, *sinks, *sync)
	spec := loadSpec{Path: callbackPath, Calls: calls, Rate: lf.rate, Conns: lf.conns, Duration: *duration}
	warmSpec := loadSpec{Path: callbackPath, Calls: warmCalls, Conns: lf.conns}

	var bareRes loadResult
	if *bare {
		b, err := startBare(r.dir)
		if err != nil {
			return err
		}
		warmSpec.Addr, spec.Addr = b.addr, b.addr
		runLoad(warmSpec)
		cpu := cpuMeter(b.Pid())
		bareRes = runLoad(spec)
		fmt.Printf("bare Fiber handler: %s; %s\n", describeLoad(bareRes), cpu(bareRes.OK))
		_ = b.Signal(syscall.SIGTERM, 10*time.Second) // its figures are printed: one killed after 10 s changes none
	}

	setup := serveSetup{Synchronous: *sync}
	var hook *hookReceiver
	switch *sinks {
	case "none":
	case "file":
		setup.FileSink = r.path("out")
	case "file+hook":
		setup.FileSink = r.path("out")
		if hook, err = r.startHook(); err != nil {
			return err
		}
		setup.HookURL = hook.url()
	default:
		return fmt.Errorf("-sinks %q: none, file or file+hook", *sinks)
	}
	srv, err := r.serve(setup)
	if err != nil {
		return err
	}
	warmSpec.Addr, spec.Addr = srv.addr, srv.addr
	runLoad(warmSpec)
	if _, _, err := waitDrained(srv.db, setup.FileSink != "", lf.drain); err != nil {
		return fmt.Errorf("after the warm-up: %w", err)
	}
	rssIdle, _, _ := memory(srv.Pid())
	prof := r.startProfile(srv, "ingest")
	sampler := sampleRSS(srv.Pid(), 50*time.Millisecond)
	cpu, cpuOf := cpuMeter(srv.Pid()), cpuPer(srv.Pid())
	first := time.Now() // the first call's send
	res := runLoad(spec)
	peakLoad := sampler.stop()
	fmt.Printf("serve: %s; %s\n", describeLoad(res), cpu(res.OK))
	sampler = sampleRSS(srv.Pid(), 50*time.Millisecond)
	left, waited, derr := waitDrained(srv.db, setup.FileSink != "", lf.drain)
	// The wait polls every 50 ms: the last row was applied at most that much before it saw so.
	applied := time.Since(first)
	peakDrain := sampler.stop()
	// Processing lags behind at high rates and finishes after the load: the cost of a delivery
	// is the CPU until everything is applied.
	fmt.Printf("serve, receipt and processing until drained: %s\n", cpu(res.OK))
	cpuDrained, _ := cpuOf(res.OK)
	prof.finish()
	_, hwm, _ := memory(srv.Pid())
	appliedRate := float64(res.OK) / applied.Seconds()
	fmt.Printf("processing: everything applied %s after the last ack (%d pending, %d failed, %d sink deliveries queued); %.0f rows/s acknowledged and applied, from the first call's send to the last row applied (%s)\n",
		waited.Round(time.Millisecond), left.Pending, left.Failed, left.SinkQueued, appliedRate, applied.Round(time.Millisecond))
	fmt.Printf("memory: RSS idle %s, peak during the load %s, peak while processing the backlog %s, VmHWM %s\n",
		mib(rssIdle), mib(peakLoad), mib(peakDrain), mib(hwm))
	ratio := ""
	if *bare && bareRes.throughput() > 0 {
		fmt.Printf("ratio serve / bare handler: %.2f (%.0f/s against %.0f/s)\n", res.throughput()/bareRes.throughput(), res.throughput(), bareRes.throughput())
		ratio = fmt.Sprintf(", %.2f× the bare handler (%.0f/s)", res.throughput()/bareRes.throughput(), bareRes.throughput())
	}
	figures(
		fmt.Sprintf("live callbacks acked, max rate: %.0f/s (ack p99 %s)%s   [target ≥ 10,000/s and ≥ 0.3×]", res.throughput(), ms(res.Lat.P99), ratio),
		fmt.Sprintf("acked and applied, first send to last row applied: %.0f/s (%d rows in %s)   [target ≥ 8,000/s]", appliedRate, res.OK, applied.Round(time.Millisecond)),
		fmt.Sprintf("serve CPU per 1,000 callbacks until drained: %s   [target ≤ 250 ms]", ms(cpuDrained)),
	)
	if derr != nil {
		return derr
	}
	if err := verifyOrFail(srv.db, calls, res.Out, "deliveries answered 2xx are not all stored and processed once"); err != nil {
		return err
	}
	if res.OK != res.Sent {
		return fmt.Errorf("%d of %d callbacks were not answered 2xx (%s; e.g. %s)", res.Sent-res.OK, res.Sent, res.statusLine(), res.FirstErr)
	}
	return srv.stop()
}

// cpuMeter starts counting the CPU time of a process and of the load tool itself; the returned
// function reports both per 1,000 deliveries.
func cpuMeter(pid int) func(n int) string {
	per := cpuPer(pid)
	return func(n int) string {
		server, tool := per(n)
		if n == 0 {
			return "no deliveries"
		}
		return fmt.Sprintf("CPU per 1,000: server %s, load tool %s", ms(server), ms(tool))
	}
}

// cpuPer starts counting the CPU time of a process and of the load tool itself; the returned
// function gives both per 1,000 deliveries (0 for none).
func cpuPer(pid int) func(n int) (server, tool time.Duration) {
	self := os.Getpid()
	p0, _ := cpuTime(pid)
	s0, _ := cpuTime(self)
	return func(n int) (time.Duration, time.Duration) {
		p1, _ := cpuTime(pid)
		s1, _ := cpuTime(self)
		if n == 0 {
			return 0, 0
		}
		return (p1 - p0) * 1000 / time.Duration(n), (s1 - s0) * 1000 / time.Duration(n)
	}
}

// figures prints the lines of a run that docs/benchmarks.md's tables take (issue 16's
// figures, each with its target), together and with the load average at the end of the run:
// the figures of a run on a shared machine mean little without it.
func figures(lines ...string) {
	fmt.Printf("figures (load average %s):\n", loadAvg())
	for _, l := range lines {
		fmt.Println("  " + l)
	}
}

func rateName(r float64) string {
	if r <= 0 {
		return "as fast as possible"
	}
	return fmt.Sprintf("%.0f/s", r)
}

func describeLoad(r loadResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sent, %d answered 2xx in %s: %.0f/s; ack %s", r.Sent, r.OK, r.Elapsed.Round(time.Millisecond), r.throughput(), r.Lat)
	if r.OK != r.Sent {
		fmt.Fprintf(&b, "; answers %s; e.g. %s", r.statusLine(), r.FirstErr)
	}
	return b.String()
}
