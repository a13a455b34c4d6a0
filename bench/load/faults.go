package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// cmdFault runs one fault scenario; each exits non-zero with the reason when scribehook does
// not keep its promise, and prints its figures either way.
func cmdFault(args []string) error {
	if len(args) == 0 {
		return errors.New("fault: name one of kill, webhook-down, diskfull, slow")
	}
	switch name, rest := args[0], args[1:]; name {
	case "kill":
		return faultKill(rest)
	case "webhook-down":
		return faultWebhookDown(rest)
	case "diskfull":
		return faultDiskFull(rest)
	case "slow":
		return faultSlow(rest)
	default:
		return fmt.Errorf("fault: unknown scenario %q (kill, webhook-down, diskfull, slow)", name)
	}
}

// faultKill kills serve with SIGKILL at random moments of a load, restarts it each time, and
// then checks that every delivery answered 2xx is stored and processed, that every event
// reached the file sink and the webhook sink, and that no delivery was applied twice.
func faultKill(args []string) error {
	fs, c := newFlags("fault kill")
	lf := addLoad(fs, loadFlags{n: 20000, rate: 2000, conns: 32, sessions: 64, drain: 4 * time.Minute},
		"callbacks per second offered", "bound of the wait for processing and sinks after the load")
	kills := fs.Int("kills", 3, "how many times serve is killed during the load")
	_ = fs.Parse(args)

	r, srv, err := c.startServe(runSpec{Calls: callSpec{shapeLive, lf.n, lf.sessions}, Hook: true}, bothSinks)
	if err != nil {
		return err
	}
	defer r.close()
	calls, hook := r.calls, r.hook

	// Each kill happens when a random share of the calls has been acknowledged, one in each
	// equal slice of 10–90 %, plus a random delay under 50 ms: a moment chosen by the load's
	// progress, not by the clock, so a slow machine still kills during the load.
	rng := rand.New(rand.NewPCG(c.seed, 7))
	at := make([]int, *kills)
	for i := range at {
		lo := 0.1 + 0.8*float64(i)/float64(*kills)
		at[i] = int((lo + rng.Float64()*0.8/float64(*kills)) * float64(lf.n))
	}
	fmt.Printf("load: %d live callbacks at %.0f/s over %d connections, retried on failure as the service does; kill -9 after %v acknowledgements (seed %d)\n",
		lf.n, lf.rate, lf.conns, at, c.seed)
	var acked atomic.Int64
	done := make(chan loadResult, 1)
	start := time.Now()
	go func() {
		done <- runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: calls, Rate: lf.rate, Conns: lf.conns,
			Retry: true, RetryFor: 3 * time.Minute, Timeout: 20 * time.Second, Acked: &acked})
	}()
	var downs []time.Duration
	for i, threshold := range at {
		for acked.Load() < int64(threshold) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		killed := time.Now()
		if err := srv.kill9(); err != nil {
			return err
		}
		fmt.Printf("kill %d: SIGKILL at %s, %d acknowledged\n", i+1, time.Since(start).Round(time.Millisecond), acked.Load())
		if err := srv.Start(context.Background()); err != nil {
			return fmt.Errorf("restart after kill %d: %w", i+1, err)
		}
		downs = append(downs, time.Since(killed))
	}
	res := <-done
	fmt.Printf("load: %s\n", describeLoad(res))
	fmt.Printf("restarts: serve ready again %v after each kill\n", roundAll(downs))
	if res.OK != len(calls) {
		return fmt.Errorf("%d of %d callbacks never got a 2xx despite retries (%s; e.g. %s)", len(calls)-res.OK, len(calls), res.statusLine(), res.FirstErr)
	}
	retried := 0
	for _, o := range res.Out {
		if o.Attempts > 1 {
			retried++
		}
	}
	begin := time.Now()
	left, _, derr := waitDrained(srv.db, true, lf.drain)
	fmt.Printf("drain: inbox and sink queues empty %s after the load (%d pending, %d failed, %d queued, %d dead); %d callbacks needed more than one attempt\n",
		time.Since(begin).Round(time.Millisecond), left.Pending, left.Failed, left.SinkQueued, left.SinkDead, retried)
	if derr != nil {
		return derr
	}
	var problems findings
	check, err := verifyStore(srv.db, calls, res.Out)
	if err != nil {
		return err
	}
	problems.check("store", check)
	if left.Failed > 0 || left.SinkDead > 0 {
		problems.add("%d inbox rows failed, %d sink deliveries dead", left.Failed, left.SinkDead)
	}
	keys := keysOf(calls)
	scan, err := scanFileSink(srv.setup.FileSink)
	if err != nil {
		return err
	}
	fileMissing, fileTwice := scan.keyCounts(keys)
	fmt.Printf("file sink: %d event files, %d ids with more than one file, %d messages missing, %d messages under two event ids\n",
		scan.Files, scan.dupIDs(), fileMissing, fileTwice)
	if fileMissing+fileTwice+scan.dupIDs() > 0 || scan.Files != len(keys) {
		problems.add("file sink: %d files for %d events, %d missing, %d twice", scan.Files, len(keys), fileMissing, fileTwice)
	}
	hookMissing := hook.waitKeys(keys, 5*time.Second)
	st := hook.stats()
	fmt.Printf("webhook: %d events, %d deliveries (%d event ids delivered more than once: allowed, at least once), %d missing, %d messages under two event ids, %d bad signatures\n",
		st.Distinct, st.Total, st.Dups, hookMissing, st.KeysTwice, st.Bad)
	if hookMissing > 0 || st.KeysTwice > 0 || st.Bad > 0 {
		problems.add("webhook: %d missing, %d under two ids, %d bad signatures", hookMissing, st.KeysTwice, st.Bad)
	}
	if err := problems.pass("kill -9 lost or repeated work", "every acknowledged delivery stored and processed once; every event at both sinks"); err != nil {
		return err
	}
	return srv.stop()
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// faultWebhookDown takes the webhook sink's target down during a load and brings it back:
// nothing may be lost, and the file sink beside it must keep its latency meanwhile.
func faultWebhookDown(args []string) error {
	fs, c := newFlags("fault webhook-down")
	// Well under what processing sustains on a small machine with two sinks, so that the
	// file sink's latency before the outage is a steady state to compare with.
	lf := addLoad(fs, loadFlags{n: 3000, rate: 100, conns: 8, drain: 3 * time.Minute},
		"callbacks per second", "bound of the wait for the webhook to catch up")
	downAt := fs.Duration("down-at", 8*time.Second, "when the target goes down, after the load starts")
	downFor := fs.Duration("down-for", 10*time.Second, "how long it stays down")
	_ = fs.Parse(args)

	r, srv, err := c.startServe(runSpec{Calls: callSpec{shapeLive, lf.n, 32}, Hook: true}, bothSinks)
	if err != nil {
		return err
	}
	defer r.close()
	calls, hook := r.calls, r.hook
	fmt.Printf("load: %d live callbacks at %.0f/s; file sink and webhook sink; the webhook's port closed from %s to %s\n",
		lf.n, lf.rate, *downAt, *downAt+*downFor)
	var wentDown, cameUp time.Time
	start := time.Now()
	outage := make(chan error, 1)
	go func() {
		time.Sleep(time.Until(start.Add(*downAt)))
		hook.down()
		wentDown = time.Now()
		time.Sleep(time.Until(start.Add(*downAt + *downFor)))
		err := hook.up()
		cameUp = time.Now()
		outage <- err
	}()
	res := runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: calls, Rate: lf.rate, Conns: lf.conns})
	if err := <-outage; err != nil {
		return err
	}
	fmt.Printf("ingest: %s\n", describeLoad(res))
	keys := keysOf(calls)
	missing := hook.waitKeys(keys, lf.drain)
	caughtUp := time.Since(cameUp)
	left, _, derr := waitDrained(srv.db, true, lf.drain)
	st := hook.stats()
	fmt.Printf("webhook: every event delivered %s after the target came back (%d missing); %d events, %d deliveries, %d dead letters, %d bad signatures\n",
		caughtUp.Round(time.Millisecond), missing, st.Distinct, st.Total, left.SinkDead, st.Bad)
	scan, err := scanFileSink(srv.setup.FileSink)
	if err != nil {
		return err
	}
	var before, during, after []time.Duration
	for i, recv := range scan.RecvAt {
		switch {
		case recv.Before(wentDown):
			before = append(before, scan.Lat[i])
		case recv.Before(cameUp):
			during = append(during, scan.Lat[i])
		default:
			after = append(after, scan.Lat[i])
		}
	}
	b, d, a := summarise(before), summarise(during), summarise(after)
	fmt.Printf("file sink latency, callbacks received before the outage: %s\n", b)
	fmt.Printf("file sink latency, received while the webhook was down:  %s\n", d)
	fmt.Printf("file sink latency, received after it came back:          %s\n", a)
	var problems findings
	if derr != nil {
		problems = append(problems, derr.Error())
	}
	if missing > 0 || left.SinkDead > 0 || st.Bad > 0 {
		problems.add("webhook: %d events missing, %d dead letters, %d bad signatures", missing, left.SinkDead, st.Bad)
	}
	if scan.Files != len(keys) {
		problems.add("file sink: %d event files for %d events", scan.Files, len(keys))
	}
	// "Unchanged" on a shared machine: the median may not double and the tail may not grow by
	// more than 3× (plus a little for noise). A file sink waiting behind the dead webhook would
	// show seconds.
	if d.N == 0 || b.N == 0 {
		problems = append(problems, "file sink: no events before or during the outage to compare")
	} else if d.P50 > 2*b.P50+20*time.Millisecond || d.P99 > 3*b.P99+100*time.Millisecond {
		problems.add("file sink slowed down during the outage: p50 %s → %s, p99 %s → %s", ms(b.P50), ms(d.P50), ms(b.P99), ms(d.P99))
	}
	check, err := verifyStore(srv.db, calls, res.Out)
	if err != nil {
		return err
	}
	problems.check("store", check)
	if res.OK != len(calls) {
		problems.add("%d callbacks not acknowledged (%s)", len(calls)-res.OK, res.statusLine())
	}
	if err := problems.pass("webhook outage", "nothing lost while the webhook target was down; the file sink kept its latency"); err != nil {
		return err
	}
	return srv.stop()
}
