package sinks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// Clock is the dispatcher's time: real in production, driven by hand in tests. Due times,
// retry times and breaker cooldowns follow it; attempt timeouts are real time.
type Clock interface {
	Now() time.Time
	// After delivers once, when d has passed on this clock.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Defaults of DispatcherConfig.
const (
	DefaultLease        = time.Minute
	DefaultPollInterval = time.Second
)

// How long the queue-depth gauge reuses a count, and how long a queue operation may take.
const (
	depthCacheTTL = 5 * time.Second
	queueTimeout  = 30 * time.Second
	// maxErrorLen bounds the error kept with a delivery: a destination's answer is quoted in
	// the error, and a dead-letter list should stay readable.
	maxErrorLen = 1024
)

// DispatcherConfig holds a Dispatcher's dependencies; zero values take the defaults.
type DispatcherConfig struct {
	Queue Queue
	// Clock defaults to the system clock.
	Clock Clock
	// Logger defaults to discarding.
	Logger *logrus.Entry
	// Metrics registers the sink metrics when set.
	Metrics prometheus.Registerer
	// Lease is how long a claimed delivery is reserved for its attempt (default 1 min). A
	// sink's lease is at least twice its attempt timeout, so an attempt still running never
	// loses its delivery to another claimer.
	Lease time.Duration
	// PollInterval is how often an idle sink looks for due deliveries (default 1 s); Wake
	// makes it look at once.
	PollInterval time.Duration
	// Rand returns a number in [0, 1) that places each retry wait within its jitter (default
	// math/rand/v2). The dispatcher serialises its calls.
	Rand func() float64
}

// SinkStats is a snapshot of one sink's delivery state.
type SinkStats struct {
	Name string
	// Depth counts the sink's queued deliveries (in flight or waiting); -1 when the queue
	// could not be read.
	Depth               int64
	InFlight            int
	ConsecutiveFailures int
	Breaker             BreakerState
	// BreakerOpenUntil is when an open breaker lets a probe through.
	BreakerOpenUntil time.Time
	// Disabled sinks stopped for good (their destination answered that it is gone); their
	// queued deliveries wait for a restart with a fixed configuration.
	Disabled       bool
	DisabledReason string
	// Delivered and Failed count attempts since the dispatcher started; Dead counts the
	// deliveries it dead-lettered (a subset of Failed).
	Delivered, Failed, Dead uint64
}

// Dispatcher works the sinks' queues: each sink has its own worker, claims, concurrency, retry
// schedule and breaker, so one dead sink never delays another.
//
// A worker claims up to its free concurrency of due deliveries, attempts each with the sink
// (bounded by the attempt timeout) and settles it in the queue:
//
//   - success: Complete.
//   - Failure.Disable (the destination is gone, HTTP 410): the delivery is dead-lettered with
//     the reason and the sink stops for the life of the dispatcher; its other deliveries stay
//     queued.
//   - Failure.Permanent: dead-lettered at once.
//   - anything else: retried after Policy.Wait (schedule, jitter, Retry-After), dead-lettered
//     after the last attempt.
//
// Delivery is at least once: a crash between an attempt and its settlement, or an attempt that
// overruns its lease, repeats the attempt, with the same event id for the destination to
// deduplicate on. On shutdown (Run's context ends, or Close) no more deliveries are claimed,
// and attempts in flight run to their end and are settled.
type Dispatcher struct {
	queue Queue
	clock Clock
	log   *logrus.Entry
	lease time.Duration
	poll  time.Duration
	m     *dispatchMetrics

	randMu sync.Mutex
	rand   func() float64

	mu      sync.Mutex
	workers []*sinkWorker
	byName  map[string]*sinkWorker
	runCtx  context.Context
	cancel  context.CancelFunc
	running bool
	closed  bool
	loops   sync.WaitGroup
	stopped chan struct{} // closed when Run returns
}

// NewDispatcher returns a dispatcher with no sinks; Add them, then Run it.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	d := &Dispatcher{
		queue:  cfg.Queue,
		clock:  cfg.Clock,
		log:    cfg.Logger,
		lease:  cfg.Lease,
		poll:   cfg.PollInterval,
		rand:   cfg.Rand,
		byName: map[string]*sinkWorker{},
	}
	if d.clock == nil {
		d.clock = systemClock{}
	}
	if d.log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		d.log = logrus.NewEntry(l)
	}
	if d.lease <= 0 {
		d.lease = DefaultLease
	}
	if d.poll <= 0 {
		d.poll = DefaultPollInterval
	}
	if d.rand == nil {
		d.rand = rand.Float64
	}
	d.m = newDispatchMetrics(cfg.Metrics)
	return d
}

// Add gives the dispatcher a sink to work; it owns the sink from then on and closes it in
// Close. spec.Name names the sink's queue and must be the sink's own name. A sink added while
// the dispatcher runs starts at once.
func (d *Dispatcher) Add(spec Spec, sink Sink) error {
	if d.queue == nil {
		return errors.New("dispatcher: no queue")
	}
	if sink == nil {
		return fmt.Errorf("add sink %q: nil sink", spec.Name)
	}
	if spec.Name == "" {
		return errors.New("add sink: empty name")
	}
	if sink.Name() != spec.Name {
		return fmt.Errorf("add sink %q: the sink calls itself %q", spec.Name, sink.Name())
	}
	pol, err := PolicyOf(spec)
	if err != nil {
		return fmt.Errorf("add sink: %w", err)
	}
	w := &sinkWorker{
		d:       d,
		name:    spec.Name,
		sink:    sink,
		pol:     pol,
		lease:   max(d.lease, 2*pol.Timeout),
		log:     d.log.WithField("sink", spec.Name),
		wake:    make(chan struct{}, 1),
		settled: make(chan struct{}, 1),
		br:      newSinkBreaker(pol.BreakerThreshold, pol.BreakerCooldown),
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("add sink %q: dispatcher closed", spec.Name)
	}
	if _, ok := d.byName[spec.Name]; ok {
		return fmt.Errorf("add sink %q: already added", spec.Name)
	}
	if err := d.m.add(w); err != nil {
		return fmt.Errorf("add sink %q: %w", spec.Name, err)
	}
	d.workers = append(d.workers, w)
	d.byName[spec.Name] = w
	if d.running {
		d.start(w)
	}
	return nil
}

// start runs w's loop; d.mu is held and the dispatcher is running.
func (d *Dispatcher) start(w *sinkWorker) {
	ctx := d.runCtx
	d.loops.Go(func() { w.run(ctx) })
}

// Run works every sink until ctx ends or Close is called, then waits for the attempts in
// flight to be settled. It returns nil after a shutdown, an error when the dispatcher is
// already running or closed.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errors.New("dispatcher: run after close")
	}
	if d.running || d.stopped != nil {
		d.mu.Unlock()
		return errors.New("dispatcher: already run")
	}
	ctx, cancel := context.WithCancel(ctx)
	d.runCtx, d.cancel, d.running = ctx, cancel, true
	d.stopped = make(chan struct{})
	defer close(d.stopped)
	for _, w := range d.workers {
		d.start(w)
	}
	n := len(d.workers)
	d.mu.Unlock()
	d.log.WithField("sinks", n).Info("sinks: dispatcher running")

	<-ctx.Done()
	d.mu.Lock()
	d.running = false // no more loops start, so the wait below is final
	d.mu.Unlock()
	d.loops.Wait()
	cancel()
	d.log.Info("sinks: dispatcher stopped")
	return nil
}

// Wake tells a sink that deliveries were queued for it (after their transaction committed),
// so it claims now rather than at its next poll. Sink "" wakes every sink; an unknown name is
// ignored.
func (d *Dispatcher) Wake(sink string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if sink != "" {
		if w := d.byName[sink]; w != nil {
			w.poke()
		}
		return
	}
	for _, w := range d.workers {
		w.poke()
	}
}

// Stats reports every sink's state, in the order they were added. Depth is read from the
// queue now (bounded to a few seconds), not from the metrics' cache.
func (d *Dispatcher) Stats() []SinkStats {
	d.mu.Lock()
	workers := append([]*sinkWorker(nil), d.workers...)
	d.mu.Unlock()
	out := make([]SinkStats, 0, len(workers))
	for _, w := range workers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		depth := w.readDepth(ctx)
		cancel()
		w.mu.Lock()
		st := SinkStats{
			Name:                w.name,
			Depth:               depth,
			InFlight:            w.inFlight,
			ConsecutiveFailures: w.br.failures,
			Breaker:             w.br.state,
			Disabled:            w.disabled,
			DisabledReason:      w.disabledReason,
			Delivered:           w.delivered,
			Failed:              w.failed,
			Dead:                w.dead,
		}
		if w.br.state == BreakerOpen {
			st.BreakerOpenUntil = w.br.openUntil
		}
		w.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Close stops Run (waiting for the attempts in flight), closes every sink and unregisters the
// metrics. Later calls do nothing.
func (d *Dispatcher) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	cancel, stopped := d.cancel, d.stopped
	workers := d.workers
	d.mu.Unlock()
	if cancel != nil {
		cancel()
		<-stopped
	}
	var errs []error
	for _, w := range workers {
		if err := w.sink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close sink %q: %w", w.name, err))
		}
	}
	d.m.unregister()
	return errors.Join(errs...)
}

func (d *Dispatcher) random() float64 {
	d.randMu.Lock()
	defer d.randMu.Unlock()
	return d.rand()
}

// sinkWorker works one sink's queue.
type sinkWorker struct {
	d     *Dispatcher
	name  string
	sink  Sink
	pol   Policy
	lease time.Duration
	log   *logrus.Entry
	// wake is poked by Wake; settled by every finished attempt. Both hold at most one signal:
	// the loop looks at the whole queue whenever it wakes, so signals may merge.
	wake, settled chan struct{}

	mu             sync.Mutex
	br             *sinkBreaker
	inFlight       int
	disabled       bool
	disabledReason string
	delivered      uint64
	failed         uint64
	dead           uint64

	depthMu sync.Mutex
	depth   int64
	depthAt time.Time // wall time of the count
}

func (w *sinkWorker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run is the sink's loop: claim what the concurrency and the breaker allow, start the attempts,
// sleep until something changes. It returns when ctx ends or the sink is disabled, once its
// attempts are settled.
func (w *sinkWorker) run(ctx context.Context) {
	var attempts sync.WaitGroup
	defer attempts.Wait()
	for ctx.Err() == nil {
		now := w.d.clock.Now()
		w.mu.Lock()
		if w.disabled {
			w.mu.Unlock()
			return
		}
		// The slots are reserved before the claim, so that InFlight counts claims under way.
		n, probe, wait, halfOpened := w.br.admit(now, w.pol.Concurrency-w.inFlight)
		w.inFlight += n
		w.mu.Unlock()
		if halfOpened {
			w.log.Info("sinks: breaker half-open, probing")
			w.d.m.breaker(w.name, BreakerHalfOpen)
		}
		if wait <= 0 {
			wait = w.d.poll
		}
		if n > 0 {
			ds, err := w.d.queue.Claim(ctx, w.name, w.pol.Ordered, now, w.lease, n)
			if err != nil && ctx.Err() == nil {
				w.log.WithError(err).Warn("sinks: claim failed")
			}
			w.mu.Lock()
			w.inFlight -= n - len(ds)
			if probe && len(ds) == 0 {
				w.br.release()
			}
			w.mu.Unlock()
			// Attempts claimed while the breaker was closed run even if it opened meanwhile.
			for _, dl := range ds {
				attempts.Go(func() { w.attempt(ctx, dl, probe) })
			}
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-w.settled:
		case <-w.d.clock.After(wait):
		}
	}
}

// attempt delivers one claimed delivery and settles it. Neither the attempt nor its settlement
// is cut short by shutdown: a settled attempt is not repeated after a restart.
func (w *sinkWorker) attempt(ctx context.Context, dl Delivery, probe bool) {
	ctx = context.WithoutCancel(ctx)
	attemptCtx, cancel := context.WithTimeout(ctx, w.pol.Timeout)
	err := w.deliver(attemptCtx, dl)
	cancel()
	now := w.d.clock.Now()
	qctx, qcancel := context.WithTimeout(ctx, queueTimeout)
	defer qcancel()
	log := w.log.WithFields(logrus.Fields{"delivery": dl.ID, "event": dl.EventID, "attempt": dl.Attempts + 1})

	res := w.settle(qctx, log, dl, err, now)

	w.mu.Lock()
	w.inFlight--
	var opened, closed bool
	switch res {
	case outcomeDelivered:
		w.delivered++
		closed = w.br.success(probe)
	case outcomeDead:
		w.failed++
		w.dead++
		if AsFailure(err).Permanent {
			// The destination answered; only the event was at fault.
			closed = w.br.success(probe)
		} else {
			opened = w.br.failure(now, probe)
		}
	case outcomeRetried:
		w.failed++
		opened = w.br.failure(now, probe)
	case outcomeDisabled:
		w.failed++
		w.dead++
		if probe {
			w.br.release()
		}
	}
	failures, until := w.br.failures, w.br.openUntil
	w.mu.Unlock()

	w.d.m.deliveries.WithLabelValues(w.name, string(res)).Inc()
	if opened {
		log.WithFields(logrus.Fields{"failures": failures, "until": until}).Warn("sinks: breaker open")
		w.d.m.breaker(w.name, BreakerOpen)
	}
	if closed {
		log.Info("sinks: breaker closed")
		w.d.m.breaker(w.name, BreakerClosed)
	}
	select {
	case w.settled <- struct{}{}:
	default:
	}
}

type attemptOutcome string

// Outcomes of an attempt: the outcome label of scribehook_sink_deliveries_total.
const (
	outcomeDelivered attemptOutcome = "delivered"
	outcomeRetried   attemptOutcome = "retried"
	outcomeDead      attemptOutcome = "dead"
	outcomeDisabled  attemptOutcome = "disabled"
)

// deliver runs the sink, turning a panic into a retryable error: one bad event must not take
// the process down.
func (w *sinkWorker) deliver(ctx context.Context, dl Delivery) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sink panicked: %v", p)
		}
	}()
	return w.sink.Deliver(ctx, dl.Event)
}

// settle records the attempt's result in the queue. A queue error is logged and left to the
// lease: the delivery is claimed again when it ends.
func (w *sinkWorker) settle(ctx context.Context, log *logrus.Entry, dl Delivery, err error, now time.Time) attemptOutcome {
	if err == nil {
		if qerr := w.d.queue.Complete(ctx, dl.ID); qerr != nil {
			log.WithError(qerr).Error("sinks: delivered, but recording it failed; it will be delivered again")
		}
		return outcomeDelivered
	}
	f := AsFailure(err)
	msg := truncateError(f.Error(), maxErrorLen)
	log = log.WithField("error", msg)
	kill := func(what string) {
		if qerr := w.d.queue.Kill(ctx, dl.ID, msg, now); qerr != nil {
			log.WithError(qerr).Error("sinks: dead-lettering failed; the delivery will be attempted again")
			return
		}
		log.Warn(what)
	}
	switch {
	case f.Disable:
		kill("sinks: delivery dead-lettered, sink disabled")
		w.mu.Lock()
		w.disabled, w.disabledReason = true, msg
		w.mu.Unlock()
		w.d.m.disabled.WithLabelValues(w.name).Set(1)
		log.Error("sinks: sink disabled: its destination is gone; its queue waits for a restart")
		return outcomeDisabled
	case f.Permanent:
		kill("sinks: permanent failure, delivery dead-lettered")
		return outcomeDead
	}
	attempt := dl.Attempts + 1
	wait, ok := w.pol.Wait(attempt, f.RetryAfter, w.d.random())
	if !ok {
		kill(fmt.Sprintf("sinks: attempt %d of %d failed, delivery dead-lettered", attempt, len(w.pol.Schedule)))
		return outcomeDead
	}
	if qerr := w.d.queue.Retry(ctx, dl.ID, now.Add(wait), msg); qerr != nil {
		log.WithError(qerr).Error("sinks: recording a failed attempt failed; it will be attempted again when its lease ends")
	} else {
		log.WithField("retry_in", wait).Info("sinks: attempt failed, will retry")
	}
	return outcomeRetried
}

// readDepth counts the sink's queued deliveries and refreshes the gauge's cache; -1 when the
// queue cannot say.
func (w *sinkWorker) readDepth(ctx context.Context) int64 {
	n, err := w.d.queue.Depth(ctx, w.name)
	if err != nil {
		w.log.WithError(err).Warn("sinks: reading queue depth failed")
		return -1
	}
	w.depthMu.Lock()
	w.depth, w.depthAt = n, time.Now()
	w.depthMu.Unlock()
	return n
}

// cachedDepth is the gauge's value: a scrape reads the queue at most every depthCacheTTL.
func (w *sinkWorker) cachedDepth() float64 {
	w.depthMu.Lock()
	n, at := w.depth, w.depthAt
	w.depthMu.Unlock()
	if !at.IsZero() && time.Since(at) < depthCacheTTL {
		return float64(n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return float64(w.readDepth(ctx))
}

// truncateError keeps at most n bytes of s, cut at a rune boundary.
func truncateError(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// dispatchMetrics are the sink metrics; with no registerer they are kept but not exported.
type dispatchMetrics struct {
	reg         prometheus.Registerer
	deliveries  *prometheus.CounterVec
	breakerOpen *prometheus.GaugeVec
	disabled    *prometheus.GaugeVec

	mu     sync.Mutex
	depths []prometheus.Collector
	shared bool // the vectors above are registered
}

func newDispatchMetrics(reg prometheus.Registerer) *dispatchMetrics {
	return &dispatchMetrics{
		reg: reg,
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scribehook_sink_deliveries_total",
			Help: "Delivery attempts by sink and outcome (delivered, retried, dead, disabled).",
		}, []string{"sink", "outcome"}),
		breakerOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "scribehook_sink_breaker_open",
			Help: "1 while the sink's breaker is open or half-open.",
		}, []string{"sink"}),
		disabled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "scribehook_sink_disabled",
			Help: "1 once the sink is disabled (its destination answered that it is gone).",
		}, []string{"sink"}),
	}
}

// add registers w's series: the shared vectors with the first sink, a depth gauge per sink.
func (m *dispatchMetrics) add(w *sinkWorker) error {
	m.breakerOpen.WithLabelValues(w.name).Set(0)
	m.disabled.WithLabelValues(w.name).Set(0)
	if m.reg == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.shared {
		for i, c := range []prometheus.Collector{m.deliveries, m.breakerOpen, m.disabled} {
			if err := m.reg.Register(c); err != nil {
				for _, done := range []prometheus.Collector{m.deliveries, m.breakerOpen, m.disabled}[:i] {
					m.reg.Unregister(done)
				}
				return fmt.Errorf("register sink metrics: %w", err)
			}
		}
		m.shared = true
	}
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "scribehook_sink_queue_depth",
		Help:        "Deliveries queued for the sink (in flight or waiting), read at most every 5 s.",
		ConstLabels: prometheus.Labels{"sink": w.name},
	}, w.cachedDepth)
	if err := m.reg.Register(depth); err != nil {
		return fmt.Errorf("register queue depth: %w", err)
	}
	m.depths = append(m.depths, depth)
	return nil
}

func (m *dispatchMetrics) breaker(sink string, s BreakerState) {
	v := 0.0
	if s != BreakerClosed {
		v = 1
	}
	m.breakerOpen.WithLabelValues(sink).Set(v)
}

func (m *dispatchMetrics) unregister() {
	if m.reg == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.depths {
		m.reg.Unregister(c)
	}
	m.depths = nil
	if m.shared {
		m.reg.Unregister(m.deliveries)
		m.reg.Unregister(m.breakerOpen)
		m.reg.Unregister(m.disabled)
		m.shared = false
	}
}
