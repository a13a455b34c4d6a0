package sinks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/traces"
	"github.com/scribehook/scribehook/store"
)

// Defaults of DispatcherConfig.
const (
	DefaultLease        = time.Minute
	DefaultPollInterval = time.Second
)

// How long the queue-depth gauge reuses a count, how long a count (for the gauge or Stats) may
// take, and how long any other queue operation may.
const (
	depthCacheTTL = 5 * time.Second
	depthTimeout  = 5 * time.Second
	queueTimeout  = 30 * time.Second
	// maxErrorLen bounds the error kept with a delivery: a destination's answer is quoted in
	// the error, and a dead-letter list should stay readable.
	maxErrorLen = 1024
)

// DispatcherConfig holds a Dispatcher's dependencies; zero values take the defaults.
type DispatcherConfig struct {
	// Queue is the sinks' durable queue (a store.Store is one); required.
	Queue store.SinkQueue
	// States keeps the sinks' states (disabled by a 410 answer or Disable, enabled by Enable)
	// beyond the dispatcher's life, when set (a store.Store is one): every change is recorded
	// there, and the states are read when Run starts and every StateInterval after, so a
	// disabled sink stays disabled across restarts, and on every replica, until it is enabled
	// again. When nil, a disabled sink stays disabled until Enable or the end of the dispatcher.
	States store.SinkStateStore
	// Now is the dispatcher's clock (default time.Now): due times, retry times, breaker
	// cooldowns, dead letters' failed_at and the sinks' states follow it; waits and attempt
	// timeouts are real time.
	Now func() time.Time
	// Logger defaults to discarding.
	Logger logrus.FieldLogger
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
	// StateInterval is how often the sinks' states are read again from States (default
	// DefaultStateInterval).
	StateInterval time.Duration
	// OnStateChange, when set, is told of each change of a sink's state this dispatcher makes
	// or reads (disabled or enabled again), after it took effect; the kit emits sink.disabled
	// and sink.enabled from it. Every replica sees a change: st.Since names it.
	OnStateChange func(st store.SinkState)
	// TracerProvider, when set, traces each attempt with a sink.deliver span, the child of the
	// span whose context the delivery was queued with (store.SinkDelivery.TraceParent), and
	// gives the span to the sink: a webhook sink sends it as traceparent (docs/operations.md,
	// Traces). nil traces nothing.
	TracerProvider trace.TracerProvider

	// after is the dispatcher's timer (default time.After); tests that drive Now by hand
	// set it (export_test.go) to wake the waits when they move their clock.
	after func(time.Duration) <-chan time.Time
}

// SinkStats is a snapshot of one sink's delivery state, as Dispatcher.Stats reports it; its
// JSON form is one sink of the read API's GET /v1/sinks.
type SinkStats struct {
	Name string `json:"name"`
	// Depth counts the sink's queued deliveries (in flight or waiting); -1 when the queue
	// could not be read.
	Depth               int64        `json:"depth"`
	InFlight            int          `json:"in_flight"`
	ConsecutiveFailures int          `json:"consecutive_failures"`
	Breaker             BreakerState `json:"breaker"` // closed, open or half-open
	// BreakerOpenUntil is when an open breaker lets a probe through.
	BreakerOpenUntil time.Time `json:"breaker_open_until,omitzero"`
	// Disabled sinks claim nothing (their destination answered that it is gone, or they were
	// disabled by hand) until they are enabled again; their queued deliveries wait.
	Disabled       bool   `json:"disabled"`
	DisabledReason string `json:"disabled_reason,omitempty"`
	// Delivered and Failed count attempts since the dispatcher started; Dead counts the
	// deliveries it dead-lettered (a subset of Failed).
	Delivered uint64 `json:"delivered"`
	Failed    uint64 `json:"failed"`
	Dead      uint64 `json:"dead"`
}

// Dispatcher works the sinks' queues: each sink has its own worker, claims, concurrency, retry
// schedule and breaker, so one dead sink never delays another.
//
// A worker claims up to its free concurrency of due deliveries, attempts each with the sink
// (bounded by the attempt timeout) and settles it in the queue:
//
//   - success: Complete.
//   - Failure.Disable (the destination is gone, HTTP 410): the delivery is dead-lettered with
//     the reason and the sink is disabled until Enable; its other deliveries stay queued. The
//     state is recorded in DispatcherConfig.States when set, and so survives restarts.
//   - Failure.Permanent: dead-lettered at once.
//   - anything else: retried after Policy.Wait (schedule, jitter, Retry-After), dead-lettered
//     after the last attempt.
//
// Delivery is at least once: a crash between an attempt and its settlement, or an attempt that
// overruns its lease, repeats the attempt, with the same event id for the destination to
// deduplicate on. On shutdown (Run's context ends, or Close) no more deliveries are claimed,
// and attempts in flight run to their end and are settled.
type Dispatcher struct {
	queue store.SinkQueue
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
	log   *logrus.Entry
	lease time.Duration
	poll  time.Duration
	m     *dispatchMetrics
	// states is DispatcherConfig.States, nil when not kept; stateEvery how often Run
	// reads it.
	states     store.SinkStateStore
	stateEvery time.Duration
	onState    func(store.SinkState)
	// tracer starts the sink.deliver spans (tracing.go); off without a TracerProvider.
	tracer traces.Tracer

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
		queue:   cfg.Queue,
		now:     cfg.Now,
		after:   cfg.after,
		log:     logx.OrDiscard(cfg.Logger),
		lease:   cfg.Lease,
		poll:    cfg.PollInterval,
		rand:    cfg.Rand,
		byName:  map[string]*sinkWorker{},
		tracer:  traces.New(cfg.TracerProvider),
		onState: cfg.OnStateChange,
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.after == nil {
		d.after = time.After
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
	d.states = cfg.States
	d.stateEvery = cmp.Or(cfg.StateInterval, DefaultStateInterval)
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
		d:        d,
		name:     spec.Name,
		kind:     spec.Kind,
		sink:     sink,
		pol:      pol,
		lease:    max(d.lease, 2*pol.Timeout),
		minClaim: max(1, pol.Concurrency/4),
		log:      d.log.WithField("sink", spec.Name),
		wake:     make(chan struct{}, 1),
		settled:  make(chan struct{}, 1),
		br:       newSinkBreaker(pol.BreakerThreshold, pol.BreakerCooldown),
		bucket:   newTokenBucket(pol.Rate, pol.Burst),
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
	// Before any claim: a sink disabled before a restart claims nothing. (A sink added while
	// Run runs follows its recorded state from the next read.)
	d.loadStates(ctx)
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
	d.loops.Go(func() { d.followStates(ctx) })
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
	workers := d.workerList()
	out := make([]SinkStats, 0, len(workers))
	for _, w := range workers {
		depth := w.readDepth()
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

// workerList is the workers added so far, in their order; it is the caller's to keep.
func (d *Dispatcher) workerList() []*sinkWorker {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*sinkWorker(nil), d.workers...)
}

func (d *Dispatcher) random() float64 {
	d.randMu.Lock()
	defer d.randMu.Unlock()
	return d.rand()
}
