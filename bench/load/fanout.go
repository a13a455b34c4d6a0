package main

import (
	"fmt"
	"time"
)

// cmdFanout is the fan-out latency run: callbacks in at a fixed rate, the webhook sink out to
// the tool's own receiver; the latency is from serve receiving a callback (the event's
// created_at) to the event's first arrival at the receiver. With -sustain the rate rises step
// by step instead, until the webhook's delivered rate stops following it (sustain.go).
func cmdFanout(args []string) error {
	fs, c := newFlags("fanout")
	lf := addLoad(fs, loadFlags{n: 20000, rate: 1000, conns: 16, sessions: 64, drain: 3 * time.Minute},
		"callbacks per second", "how long to wait for every event to arrive")
	withFile := fs.Bool("file", false, "also a file sink beside the webhook sink")
	ordered := fs.Bool("ordered", false, "the webhook sink delivers in order per session (ordered: true); the run checks the order of arrival")
	sustain := fs.Bool("sustain", false, "raise the offered rate step by step (-rates, -step) until the webhook's delivered rate stops following it; -n and -rate are not used")
	rates := fs.String("rates", "500,1000,2000,3000,4000,5000,6000", "with -sustain: the offered rates, one step each, rising")
	step := fs.Duration("step", 5*time.Second, "with -sustain: how long each rate is offered")
	_ = fs.Parse(args)

	var ladder []float64
	n, warmRate := lf.n, lf.rate
	if *sustain {
		var err error
		if ladder, err = parseRates(*rates); err != nil {
			return err
		}
		n, warmRate = 0, ladder[0]
		for _, rate := range ladder {
			n += stepCalls(rate, *step)
		}
		if !flagGiven(fs, "conns") {
			lf.conns = 64 // a few thousand a second need more than 16 connections at a few ms each
		}
	}
	spec := runSpec{Calls: callSpec{shapeLive, n, lf.sessions}, Warm: callSpec{shapeLive, 500, lf.sessions}, Hook: true}
	r, srv, err := c.startServe(spec, func(r *rig) serveSetup {
		setup := serveSetup{HookURL: r.hook.url(), HookEvents: "live.*", HookOrdered: *ordered}
		if *withFile {
			setup.FileSink = r.path("out")
		}
		return setup
	})
	if err != nil {
		return err
	}
	defer r.close()
	calls, warmCalls, hook := r.calls, r.warm, r.hook
	sinkNote := map[bool]string{true: ", and a file sink", false: ""}[*withFile] + map[bool]string{true: "; ordered", false: ""}[*ordered]
	if *sustain {
		fmt.Printf("load: live callbacks at %s/s, %s each, over %d connections; webhook sink (events live.*) to a loopback receiver%s\n",
			*rates, *step, lf.conns, sinkNote)
	} else {
		fmt.Printf("load: %d live callbacks at %.0f/s over %d connections; webhook sink (events live.*) to a loopback receiver%s\n",
			lf.n, lf.rate, lf.conns, sinkNote)
	}

	warm := runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: warmCalls, Rate: warmRate, Conns: lf.conns})
	if missing := hook.waitKeys(keysOf(warmCalls), lf.drain); missing > 0 || warm.OK != len(warmCalls) {
		return fmt.Errorf("warm-up: %d of %d acknowledged, %d events missing at the webhook", warm.OK, len(warmCalls), missing)
	}
	hook.reset()
	prof := r.startProfile(srv, map[bool]string{false: "fanout", true: "fanout-sustain"}[*sustain])
	var res loadResult
	var ramp sustained
	if *sustain {
		res, ramp = rampLoad(srv.addr, calls, ladder, *step, lf.conns, hook)
		calls = calls[:ramp.sent]
		res.Out = res.Out[:ramp.sent]
	} else {
		res = runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: calls, Rate: lf.rate, Conns: lf.conns})
		fmt.Printf("ingest: %s\n", describeLoad(res))
	}
	begin := time.Now()
	missing := hook.waitKeys(keysOf(calls), lf.drain)
	drained := time.Since(begin)
	prof.finish()
	st := hook.stats()
	lat := summarise(st.Lat)
	fmt.Printf("receipt → webhook delivered: %s\n", lat)
	fmt.Printf("webhook: %d events, %d deliveries (%d ids more than once), %d bad signatures; the last arrived %s after the last ack\n",
		st.Distinct, st.Total, st.Dups, st.Bad, drained.Round(time.Millisecond))
	if *sustain {
		ramp.report(st, drained)
	} else {
		printWindows("receipt → webhook by 5 s window of arrival", st.Lat, st.LatAt, 5*time.Second)
		figures(fmt.Sprintf("receipt → webhook sink at %.0f/s offered (%.0f/s acked): p99 %s (p50 %s, max %s); the last event %s after the last ack   [target p99 ≤ 50 ms at 1,000/s]",
			lf.rate, res.throughput(), ms(lat.P99), ms(lat.P50), ms(lat.Max), drained.Round(time.Millisecond)))
	}
	if *withFile {
		if _, _, err := waitDrained(srv.db, true, lf.drain); err != nil {
			return err
		}
		scan, err := scanFileSink(srv.setup.FileSink)
		if err != nil {
			return err
		}
		fmt.Printf("receipt → file sink written: %s\n", summarise(scan.Lat))
	}
	if missing > 0 {
		return fmt.Errorf("%w: %d of %d events never reached the webhook within %s", errHook, missing, len(calls), lf.drain)
	}
	if st.Bad > 0 || st.KeysTwice > 0 {
		return fmt.Errorf("%w: %d bad signatures, %d messages delivered under two event ids", errHook, st.Bad, st.KeysTwice)
	}
	if _, _, err := waitDrained(srv.db, true, lf.drain); err != nil {
		return err
	}
	if err := verifyOrFail(srv.db, calls, res.Out, "store check failed"); err != nil {
		return err
	}
	if *ordered {
		check, err := checkOrder(srv.db, calls, st.KeyOrder)
		if err != nil {
			return err
		}
		fmt.Printf("order: %s\n", check)
		if !check.ok() {
			return fmt.Errorf("%w: %s", errHook, check)
		}
	}
	return srv.stop()
}

// keysOf lists the message keys of live calls.
func keysOf(calls []callback) []string {
	out := make([]string, 0, len(calls))
	for _, c := range calls {
		if c.MsgKey != "" {
			out = append(out, c.MsgKey)
		}
	}
	return out
}

// printWindows shows latencies by window of arrival: a pipeline that falls behind shows
// latencies growing window after window, which a single percentile hides.
func printWindows(title string, lat []time.Duration, at []time.Time, every time.Duration) {
	if len(lat) == 0 {
		return
	}
	first := at[0]
	for _, t := range at {
		if t.Before(first) {
			first = t
		}
	}
	buckets := map[int][]time.Duration{}
	maxB := 0
	for i, t := range at {
		b := int(t.Sub(first) / every)
		buckets[b] = append(buckets[b], lat[i])
		maxB = max(maxB, b)
	}
	fmt.Println(title + ":")
	for b := 0; b <= maxB; b++ {
		if len(buckets[b]) == 0 {
			continue
		}
		fmt.Printf("  %3ds–%3ds: %s\n", int(time.Duration(b)*every/time.Second), int(time.Duration(b+1)*every/time.Second), summarise(buckets[b]))
	}
}
