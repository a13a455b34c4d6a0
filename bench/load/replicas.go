package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/scribehook/scribehook/internal/testinfra"
)

// cmdReplicas runs several `scribehook serve` replicas on one PostgreSQL and one broker behind
// the tool's load balancer, sends them callbacks (live sessions whose messages alternate between
// replicas, and job results), optionally breaks something mid-load, and then verifies in
// PostgreSQL, at the webhook receiver and in the file sinks' directories that nothing was lost,
// applied twice or reordered.
func cmdReplicas(args []string) error {
	fs, c := newFlags("replicas")
	lf := addLoad(fs, loadFlags{n: 6000, conns: 32, sessions: 64, drain: 3 * time.Minute},
		"callbacks per second offered (0: as fast as the replicas answer; default 250 for kill and broker-restart, so that the fault falls mid-load)",
		"bound of the wait for processing and sinks after the load (a dead replica's sink leases end after 1 min)")
	scenario := fs.String("scenario", "steady", "steady, kill or broker-restart")
	bus := fs.String("bus", "redisstream", "bus driver of the replicas: redisstream, nats or gochannel (no broker: each replica processes what it receives)")
	replicas := fs.Int("replicas", 2, "serve replicas")
	dsn := fs.String("dsn", os.Getenv("SCRIBEHOOK_TEST_PG_DSN"), "PostgreSQL DSN (default $SCRIBEHOOK_TEST_PG_DSN; scripts/pg.sh run -- … sets it); the run makes a schema of its own in it")
	busURL := fs.String("bus-url", "", "use this running broker instead of starting one (not with -scenario broker-restart)")
	jobShare := fs.Float64("jobs", 0.05, "share of the callbacks that are 1-minute pre-recorded results (the rest are live transcript messages)")
	duration := fs.Duration("duration", 2*time.Minute, "bound of the load phase")
	sinks := fs.Bool("sinks", true, "give each replica a file sink (own directory) and a webhook sink (the tool's receiver)")
	warm := fs.Int("warmup", 0, "callbacks sent and processed before the measured load (default: 1000 for steady, 0 otherwise)")
	restartAfter := fs.Duration("restart-after", 4*time.Second, "kill: how long the killed replica stays down before it is started again")
	noRestart := fs.Bool("no-restart", false, "kill: leave the killed replica down (the survivor alone must take its work over)")
	downFor := fs.Duration("broker-down", 4*time.Second, "broker-restart: how long the broker stays down")
	health := fs.String("lb-health", "readyz", "the balancer's health check: readyz (GET /readyz every 100 ms; out after two failures, back at the first 200; plus connection errors) or passive (only connection errors take a replica out)")
	_ = fs.Parse(args)

	switch *scenario {
	case "steady", "kill", "broker-restart":
	default:
		return fmt.Errorf("replicas: -scenario %q: steady, kill or broker-restart", *scenario)
	}
	switch *bus {
	case "redisstream", "nats", "gochannel":
	default:
		return fmt.Errorf("replicas: -bus %q: redisstream, nats or gochannel", *bus)
	}
	if *health != "readyz" && *health != "passive" {
		return fmt.Errorf("replicas: -lb-health %q: readyz or passive", *health)
	}
	if *dsn == "" {
		return errors.New("replicas: no PostgreSQL: give -dsn or set SCRIBEHOOK_TEST_PG_DSN (scripts/pg.sh run -- load replicas … starts a throwaway cluster)")
	}
	if *replicas < 1 {
		return errors.New("replicas: -replicas must be at least 1")
	}
	if *scenario == "kill" && *replicas < 2 {
		return errors.New("replicas: the kill scenario needs -replicas 2 or more (a survivor)")
	}
	if *scenario == "broker-restart" && (*bus == "gochannel" || *busURL != "") {
		return errors.New("replicas: broker-restart needs a broker the tool starts itself: -bus redisstream or nats, without -bus-url")
	}
	if *warm == 0 && *scenario == "steady" && !flagGiven(fs, "warmup") {
		*warm = 1000
	}
	if *scenario != "steady" && !flagGiven(fs, "rate") {
		lf.rate = 250
	}

	r, err := c.setUp(runSpec{})
	if err != nil {
		return err
	}
	defer r.close()
	schema, err := newPGSchema(*dsn)
	if err != nil {
		return err
	}
	if c.keep {
		fmt.Printf("PostgreSQL schema kept: %s (%s)\n", schema.Name, testinfra.RedactDSN(schema.DSN))
		r.onClose(func() { schema.DB.Close() })
	} else {
		r.onClose(func() { dropPGSchema(schema) })
	}

	var broker *testinfra.Broker
	url := *busURL
	if *bus != "gochannel" && url == "" {
		if broker, err = r.startBroker(*bus); err != nil {
			return err
		}
		url = broker.URL
	}
	var hook *hookReceiver
	if *sinks {
		if hook, err = r.startHook(); err != nil {
			return err
		}
	}
	procs := make([]*serveProc, *replicas)
	var addrs []string
	for i := range procs {
		name := fmt.Sprintf("replica-%d", i+1)
		setup := replicaSetup{Name: name, serveSetup: serveSetup{Dir: r.path(name)}, DSN: schema.DSN, Bus: *bus, BusURL: url}
		if *sinks {
			setup.FileSink = filepath.Join(setup.Dir, "out")
			setup.HookURL = hook.url()
		}
		if procs[i], err = r.replica(setup); err != nil {
			return err
		}
		addrs = append(addrs, procs[i].addr)
	}
	for i, p := range procs {
		if err := p.Start(context.Background()); err != nil {
			return fmt.Errorf("replica %d: %w", i+1, err)
		}
	}

	nJobs := int(float64(lf.n) * *jobShare)
	live, err := liveCallbacks(c.seed, lf.n-nJobs, lf.sessions)
	if err != nil {
		return err
	}
	jobs, err := preRecordedCallbacks(c.seed, nJobs, shapePre1m)
	if err != nil {
		return err
	}
	load := replicaLoad{Calls: append(live, jobs...), Sessions: lf.sessions, LiveN: len(live), Conns: lf.conns,
		Rate: lf.rate, Duration: *duration, RetryFor: 3 * time.Minute}
	logf := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	lb := newBalancer(addrs, lf.conns, 10*time.Second, *health == "readyz", logf)
	r.onClose(lb.close)

	printMachine()
	busName := *bus
	if url != "" {
		busName += " at " + url
	}
	sinkNames := "none"
	if *sinks {
		sinkNames = "file (a directory per replica) + webhook (one receiver)"
	}
	fmt.Printf("topology: %d serve replica(s) %v on PostgreSQL schema %s, bus %s, sinks %s; balancer health check %s\n", *replicas, addrs, schema.Name, busName, sinkNames, *health)
	fmt.Printf("load: %d callbacks (%d live messages over %d sessions, %d 1-minute results; mean body %d bytes), %d connections, rate %s, bound %s, seed %d\n",
		len(load.Calls), len(live), lf.sessions, nJobs, meanBody(load.Calls), lf.conns, rateName(lf.rate), *duration, c.seed)

	if *warm > 0 {
		wl, err := liveCallbacks(c.seed+warmSeed, *warm, lf.sessions)
		if err != nil {
			return err
		}
		wres := lb.run(replicaLoad{Calls: wl, Sessions: lf.sessions, LiveN: len(wl), Conns: lf.conns, RetryFor: time.Minute})
		if wres.OK != len(wl) {
			return fmt.Errorf("warm-up: %s", wres)
		}
		if _, _, err := pgWaitDrained(schema.DB, lf.drain); err != nil {
			return fmt.Errorf("after the warm-up: %w", err)
		}
		if hook != nil {
			hook.reset()
		}
		for _, be := range lb.backends {
			be.acked.Store(0)
		}
		fmt.Printf("warm-up: %d callbacks stored and processed (not measured)\n", len(wl))
	}

	sc := &scenarioRun{lb: lb, procs: procs, broker: broker, db: schema.DB, seed: c.seed, n: len(load.Calls), busKind: *bus, busURL: url,
		restartAfter: *restartAfter, noRestart: *noRestart, downFor: *downFor}
	var acked atomic.Int64
	load.Acked = &acked
	cpu := make([]func(int) string, len(procs))
	for i, p := range procs {
		cpu[i] = cpuMeter(p.Pid())
	}
	loadBefore := loadAvg()
	done := make(chan replicaLoadResult, 1)
	go func() { done <- lb.run(load) }()
	var scErr error
	switch *scenario {
	case "kill":
		scErr = sc.kill(&acked)
	case "broker-restart":
		scErr = sc.brokerRestart(&acked)
	}
	res := <-done
	loadAfter := loadAvg()
	if scErr != nil {
		return scErr
	}
	if sc.restarted != nil {
		if err := <-sc.restarted; err != nil {
			return err
		}
	}
	fmt.Printf("load: %s\n", res)
	fmt.Printf("answered by: %s; replicas taken out of the rotation %d times\n", lb.perReplica(), lb.ejected.Load())
	if *scenario == "steady" {
		for i := range procs {
			fmt.Printf("replica %d: %s\n", i+1, cpu[i](res.OK))
		}
	}
	fmt.Printf("load average: %s at the start of the load, %s at its end\n", loadBefore, loadAfter)

	left, waited, derr := pgWaitDrainedVerbose(schema.DB, lf.drain, 10*time.Second)
	fmt.Printf("drain: inbox and sink queues empty %s after the load (%d pending, %d failed, %d queued, %d dead); %.0f callbacks/s from the first call to the last row processed\n",
		waited.Round(time.Millisecond), left.Pending, left.Failed, left.SinkQueued, left.SinkDead, float64(res.OK)/(res.Elapsed+waited).Seconds())
	if *scenario == "steady" {
		for i := range procs {
			fmt.Printf("replica %d, receipt and processing until drained: %s\n", i+1, cpu[i](res.OK))
		}
	}
	if broker != nil {
		fmt.Printf("broker: %s\n", brokerSummary(*bus, url))
	}
	if *bus != "gochannel" {
		for i, p := range procs {
			fmt.Printf("replica %d bus counters: %s\n", i+1, busCounters(p))
		}
	}
	var problems findings
	if derr != nil {
		problems = append(problems, derr.Error())
	}
	if left.Failed > 0 || left.SinkDead > 0 {
		problems.add("%d inbox rows failed, %d sink deliveries dead", left.Failed, left.SinkDead)
	}
	if res.OK != res.Sent {
		problems.add("%d of %d callbacks never got a 2xx (%s; e.g. %s)", res.Sent-res.OK, res.Sent, res.statusLine(), res.FirstErr)
	}
	if res.Sent != len(load.Calls) && res.Abandoned == 0 {
		fmt.Printf("note: %d of %d callbacks sent within the bound of %s\n", res.Sent, len(load.Calls), *duration)
	}
	check, err := verifyReplicas(schema.DB, load, res.Out)
	if err != nil {
		return err
	}
	problems.check("store", check)
	if sc.orphans != nil {
		problems = append(problems, sc.reportOrphans()...)
	}
	if *sinks {
		problems = append(problems, checkSinks(schema.DB, hook, procs, load, res.Out, sc.leasedAtKill)...)
	}
	if *bus != "gochannel" && sc.faultAt != (time.Time{}) {
		// Notices the killed replica held, or that the broker handed out around its restart,
		// must reach a live replica (bus.claim_after, 30 s by default) and be acknowledged.
		msg, err := waitNoticesTaken(*bus, url, sc.faultAt, lf.drain)
		if err != nil {
			problems = append(problems, "bus: "+err.Error())
		} else {
			fmt.Printf("bus: %s\n", msg)
		}
	}
	if err := problems.err(fmt.Sprintf("replicas %s on %s", *scenario, *bus)); err != nil {
		return err
	}
	lb.close() // the replicas stopping are no news
	// A replica that does not stop cleanly on SIGTERM is worth knowing, but it is not a loss,
	// a repeat or a disorder, which are what this run judges: it is reported, not failed.
	for i, p := range procs {
		if err := p.stop(); err != nil {
			fmt.Printf("SUSPICIOUS: replica %d did not stop cleanly on SIGTERM: %v\n", i+1, err)
		}
	}
	fmt.Printf("PASS: replicas %s on %s: every acknowledged delivery stored once and processed, every session in order, every event at its sinks once in effect\n", *scenario, *bus)
	return nil
}

// scenarioRun is the fault of a run and what it observed.
type scenarioRun struct {
	lb           *balancer
	procs        []*serveProc
	broker       *testinfra.Broker
	db           *sql.DB
	seed         uint64
	n            int
	busKind      string
	busURL       string
	restartAfter time.Duration
	noRestart    bool
	downFor      time.Duration

	restarted    chan error
	faultAt      time.Time // when the fault happened
	killedAt     time.Time
	killed       int
	leasedAtKill map[int64]leased
	orphans      []int64
}

// threshold waits until a random share in [lo, hi) of the calls is acknowledged, plus a random
// delay under 50 ms: the moment is chosen by the load's progress, so a slow machine still
// breaks things mid-load.
func (s *scenarioRun) threshold(acked *atomic.Int64, lo, hi float64) int64 {
	rng := rand.New(rand.NewPCG(s.seed, 11))
	at := int64((lo + rng.Float64()*(hi-lo)) * float64(s.n))
	for acked.Load() < at {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
	return at
}

// kill kills one replica with SIGKILL mid-load and starts it again after restartAfter (in the
// background: the load goes on meanwhile).
func (s *scenarioRun) kill(acked *atomic.Int64) error {
	rng := rand.New(rand.NewPCG(s.seed, 13))
	s.killed = rng.IntN(len(s.procs))
	s.threshold(acked, 0.2, 0.5)
	p := s.procs[s.killed]
	pid := p.Pid()
	if err := p.kill9(); err != nil {
		return err
	}
	s.killedAt = time.Now()
	s.faultAt = s.killedAt
	// What the dead replica held: its leases stay in the table until they end.
	var err error
	if s.leasedAtKill, err = leasedDeliveries(s.db); err != nil {
		return err
	}
	b, _ := readBacklog(context.Background(), s.db)
	fmt.Printf("kill: replica %d (pid %d) killed with SIGKILL at %d acknowledged; at that moment %d inbox rows pending, %d sink deliveries queued, %d of them leased\n",
		s.killed+1, pid, acked.Load(), b.Pending, b.SinkQueued, len(s.leasedAtKill))
	time.Sleep(2 * time.Second)
	if s.orphans, err = orphanedLeases(s.db, s.leasedAtKill); err != nil {
		return err
	}
	if s.orphans == nil {
		s.orphans = []int64{}
	}
	fmt.Printf("kill: %d sink deliveries still under the lease taken before the kill 2 s later (the dead replica's)\n", len(s.orphans))
	if s.busKind != "gochannel" {
		if n, err := brokerUnacked(s.busKind, s.busURL); err == nil {
			fmt.Printf("kill: %d notices handed out by the broker and not acknowledged 2 s after the kill (the dead replica's, and the survivor's in flight)\n", n)
		}
	}
	if s.noRestart {
		return nil
	}
	s.restarted = make(chan error, 1)
	go func() {
		time.Sleep(time.Until(s.killedAt.Add(s.restartAfter)))
		err := p.Start(context.Background())
		if err == nil {
			fmt.Printf("kill: replica %d started again %s after the kill\n", s.killed+1, time.Since(s.killedAt).Round(time.Millisecond))
		}
		s.restarted <- err
	}()
	return nil
}

// reportOrphans says when the dead replica's leased deliveries were delivered by someone else.
func (s *scenarioRun) reportOrphans() []string {
	ds, err := readDeliveries(s.db, s.orphans)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	var after []time.Duration
	for _, d := range ds {
		if d.Status != "delivered" || !d.DeliveredAt.Valid {
			problems = append(problems, fmt.Sprintf("orphaned %s delivery of %s is %s", d.Sink, d.EventID, d.Status))
			continue
		}
		after = append(after, d.DeliveredAt.Time.Sub(s.killedAt))
	}
	if len(after) > 0 {
		sort.Slice(after, func(i, j int) bool { return after[i] < after[j] })
		fmt.Printf("takeover: the dead replica's %d leased deliveries delivered %s to %s after the kill (lease 1 min)\n",
			len(after), after[0].Round(time.Millisecond), after[len(after)-1].Round(time.Millisecond))
	}
	return problems
}

// brokerRestart stops the broker with SIGTERM mid-load, waits downFor, and starts it again on
// the same port and store directory.
func (s *scenarioRun) brokerRestart(acked *atomic.Int64) error {
	s.threshold(acked, 0.25, 0.45)
	at := acked.Load()
	stopped := time.Now()
	s.faultAt = stopped
	if err := s.broker.Stop(); err != nil {
		return err
	}
	fmt.Printf("broker-restart: %s stopped (SIGTERM) at %d acknowledged, in %s\n", s.broker.Kind, at, time.Since(stopped).Round(time.Millisecond))
	time.Sleep(s.downFor)
	during := acked.Load() - at
	begin := time.Now()
	if err := s.broker.Start(); err != nil {
		return fmt.Errorf("broker restart: %w", err)
	}
	fmt.Printf("broker-restart: %s serving again %s after it was stopped (start took %s); %d callbacks acknowledged while it was down\n",
		s.broker.Kind, time.Since(stopped).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond), during)
	return nil
}

// busCounters reads a replica's notice counters from /metrics (since its last start).
func busCounters(p *serveProc) string {
	var parts []string
	for _, m := range []struct{ name, label string }{
		{"scribehook_bus_notices_published_total", "published"},
		{"scribehook_bus_notices_dropped_total", "dropped"},
		{"scribehook_bus_notices_received_total", "received"},
		{"scribehook_bus_swept_rows_total", "rows applied by the sweep"},
	} {
		v, err := p.metric(m.name)
		if err != nil {
			return "not in /metrics (" + err.Error() + ")"
		}
		parts = append(parts, fmt.Sprintf("%.0f %s", v, m.label))
	}
	return "notices " + strings.Join(parts, ", ")
}
