package scribehook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/debugserver"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/reconcile"
	"github.com/scribehook/scribehook/retention"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// DefaultShutdownTimeout bounds Run's stop and Close: in-flight requests finish and commit,
// handlers finish their current rows, sinks settle their deliveries in flight.
const DefaultShutdownTimeout = 20 * time.Second

// Kit is scribehook assembled from a configuration: store, receiver, pipeline and sinks. Build
// it with New, start it with Start (or Run), receive callbacks with Serve, Mount or Handler,
// and stop it with Shutdown (or Close). Its methods are safe for concurrent use.
type Kit struct {
	cfg      configs.Config
	log      *logrus.Entry
	now      func() time.Time // WithClock's, given to every part
	store    store.Store
	ownStore bool
	service  *submitter.Client
	secrets  configs.Secrets
	names    secretNames // how messages name the secrets
	reg      *prometheus.Registry
	dispatch *sinks.Dispatcher
	pipeline *handlers.Pipeline
	batcher  *store.Batcher
	recv     *receiver.Receiver
	pruner   *retention.Pruner
	// reconciler asks the service about the jobs whose end never came; nil without a service
	// client. Start runs it when reconcile is on.
	reconciler *reconcile.Reconciler
	reconciled chan struct{} // closed when the running reconciler returned
	stopRecon  context.CancelFunc
	sinks      int
	// registered are the program's own sinks and event handlers (WithSink, WithEventHandler),
	// which the configuration does not name: SinkStatuses lists them.
	registered []sinks.Spec
	debug      *debugserver.Server // debug.listen's profiling endpoint, from Start

	mu      sync.Mutex
	started bool
	stopped bool
	// startErr is why a start failed once the pipeline had been run: it runs only once.
	startErr error
	cancel   context.CancelFunc
	done     chan error // the pipeline's Run
	served   []chan error
}

// New builds the kit cfg describes, with what only Go can give passed as options. Secrets
// come from the environment variables cfg names (or WithSecrets). The store is opened (or
// WithStore's used), sinks built, the broker connected; nothing runs until Start. On error,
// everything New opened is closed again.
func New(ctx context.Context, cfg configs.Config, opts ...Option) (*Kit, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := validateConfig(cfg, o.store != nil); err != nil {
		return nil, err
	}
	if cfg.Tracing.Enabled && o.tracer == nil {
		// The kit links no exporter (their clients weigh several MB): the program builds the
		// provider, as it imports the drivers it uses. Ignoring the section would look like
		// tracing that exports nothing.
		return nil, errors.New("tracing.enabled: the program gives the kit no tracer provider; build one from the configuration " +
			"with tracing.New (import \"github.com/scribehook/scribehook/tracing\") and pass it with scribehook.WithTracerProvider")
	}
	secrets := o.secrets
	if secrets == nil {
		s, err := cfg.Secrets(os.Environ())
		if err != nil {
			return nil, err
		}
		secrets = &s
	}
	log := logx.OrStandard(o.logger)
	if o.now == nil {
		o.now = time.Now
	}
	k := &Kit{cfg: cfg, log: log, now: o.now, secrets: *secrets, names: secretNames{cfg: cfg, given: o.secrets != nil}}
	// undo closes, newest first, what New opened when it fails half-way.
	var undo []func()
	built := false
	defer func() {
		if !built {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	var err error

	k.store = o.store
	if k.store == nil {
		if k.store, err = openStore(ctx, cfg, o.now); err != nil {
			return nil, err
		}
		k.ownStore = true
		undo = append(undo, func() { _ = k.store.Close() })
	}
	k.service = o.service
	if k.service == nil && secrets.APIKey != "" {
		copts := []submitter.Option{submitter.WithLogger(log.WithField("component", "submitter")), submitter.WithClock(o.now),
			submitter.WithTracerProvider(o.tracer)}
		if o.httpClient != nil {
			copts = append(copts, submitter.WithHTTPClient(o.httpClient))
		}
		if k.service, err = ServiceClient(cfg, secrets.APIKey, copts...); err != nil {
			return nil, err
		}
	}
	if k.service == nil {
		log.Warnf("%s is not set: callbacks are stored as they come, account webhooks stay unresolved", k.names.apiKey())
	}
	subs, err := SubtitleRendering(cfg)
	if err != nil {
		return nil, err
	}

	k.reg = prometheus.NewRegistry()
	k.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	k.dispatch = sinks.NewDispatcher(sinks.DispatcherConfig{
		Queue: k.store, States: k.store, Now: o.now, Metrics: k.reg, Logger: log.WithField("component", "sinks"),
		OnStateChange:  k.sinkStateChanged,
		TracerProvider: o.tracer,
	})
	undo = append(undo, func() { _ = k.dispatch.Close() })
	var specs []sinks.Spec
	add := func(spec sinks.Spec, sk sinks.Sink) error {
		if err := k.dispatch.Add(spec, sk); err != nil {
			_ = sk.Close()
			return fmt.Errorf("sink %s: %w", spec.Name, err)
		}
		specs = append(specs, spec)
		return nil
	}
	for i, spec := range SinkSpecs(cfg, *secrets) {
		sk, err := sinks.New(spec, sinks.Deps{Logger: log.WithField("sink", spec.Name), Transport: o.sinkTransport, Stdout: o.sinkOutput, Now: o.now})
		if err != nil {
			return nil, fmt.Errorf("sinks[%d] (%s): %w", i, spec.Name, err)
		}
		if err := add(spec, sk); err != nil {
			return nil, err
		}
	}
	for _, c := range o.sinks {
		if err := add(c.spec, c.sink); err != nil {
			return nil, err
		}
		k.registered = append(k.registered, c.spec)
	}
	for _, h := range o.handlers {
		spec, sk, err := h.sink(log)
		if err != nil {
			return nil, err
		}
		if err := add(spec, sk); err != nil {
			return nil, err
		}
		k.registered = append(k.registered, spec)
	}
	k.sinks = len(specs)

	bus, err := openBus(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	switch {
	case bus != nil && cfg.Store.Driver == "sqlite":
		log.Warnf("bus.driver %s with store.driver sqlite: replicas cannot share a SQLite file, so run one replica, or use store.driver postgres", cfg.Bus.Driver)
	case bus == nil && cfg.Store.Driver == "postgres":
		// Measured (docs/scaling.md): two replicas on the in-process bus stored most sessions
		// out of order.
		log.Warn("bus.driver gochannel with store.driver postgres: run one replica only; several replicas need bus.driver redisstream or nats, or live sessions lose their order")
	}
	var resolver handlers.Resolver
	if k.service != nil {
		resolver = serviceResolver{k.service}
	}
	k.pipeline, err = handlers.New(handlers.Config{
		Store: k.store, Resolver: resolver, Partitions: cfg.Receiver.Partitions, Metrics: k.reg, Logger: log,
		Subtitles: subs, Sinks: specs, Wake: k.dispatch.Wake, Now: o.now, RetrySchedule: o.inboxRetry,
		Bus: bus, SweepInterval: cfg.Bus.SweepInterval, SweepGrace: cfg.Bus.SweepGrace, NoticeQueue: cfg.Bus.Queue,
		TracerProvider: o.tracer,
	})
	if err != nil {
		if bus != nil {
			_ = bus.Close()
		}
		return nil, err
	}
	undo = append(undo, func() { _ = k.pipeline.Close() })
	if k.pruner, err = retention.New(retention.Config{Store: k.store, Policy: retention.PolicyOf(cfg.Retention, cfg.Receiver.TokenTTL),
		Interval: cfg.Retention.Interval, Now: o.now, Metrics: k.reg, Logger: log.WithField("component", "retention")}); err != nil {
		return nil, err
	}
	k.batcher = store.NewBatcher(k.store, store.BatcherOptions{})
	undo = append(undo, func() { _ = k.batcher.Close() })
	if k.service != nil {
		rc := cfg.Reconcile
		if k.reconciler, err = reconcile.New(reconcile.Config{
			Store: k.store, Service: serviceResolver{k.service}, Ingest: k.ingestFetched, Emit: k.emit,
			After: rc.After, Every: rc.Every, MaxWait: rc.MaxWait, GiveUp: rc.GiveUp, AudioFactor: rc.AudioFactor,
			QueueStep: rc.QueueStep, Now: o.now, Logger: log, Metrics: k.reg,
			Lister: catchUpLister(rc.CatchUp, k.service), CatchUpWindow: rc.CatchUpWindow,
		}); err != nil {
			return nil, err
		}
	}
	if secrets.ReadToken == "" {
		log.Warnf("%s is not set: the local read API is disabled", k.names.readToken())
	}
	// serve refuses weak secrets; a program that builds the kit itself is told (the error
	// names variables or WithSecrets' fields, never values) and decides.
	if err := k.names.checkStrength(*secrets); err != nil {
		log.WithError(err).Warn("weak secrets: serve would refuse to start with them")
	}
	pipeline, dispatch := k.pipeline, k.dispatch
	trusted, err := cfg.Receiver.TrustedPrefixes()
	if err != nil {
		return nil, fmt.Errorf("receiver.trusted_proxies: %w", err)
	}
	capCfg, err := captionsConfig(cfg)
	if err != nil {
		return nil, err
	}
	k.recv, err = receiver.New(receiver.Config{
		Captions: capCfg,
		Store:    k.store, Ingester: k.batcher, Notifier: pipeline, Feed: pipeline.SessionFeed(),
		Routes: routesOf(*secrets), ReadToken: secrets.ReadToken, BodyLimit: int(cfg.Receiver.BodyLimit),
		PublicURL: cfg.PublicURL, TokenTTL: cfg.Receiver.TokenTTL, MaxConnsPerIP: cfg.Receiver.MaxConnsPerIP,
		AuthFailureBurst: cfg.Receiver.AuthFailureBurst, AuthFailureRefill: cfg.Receiver.AuthFailureRefill,
		TrustedProxies: trusted,
		Ready:          pipeline.Ready, Metrics: k.reg, Logger: log, Now: o.now,
		Notes: func() []string {
			if !pipeline.BrokerUp() {
				return []string{"bus: the broker does not answer; deliveries are stored and processed by the sweep until it is back"}
			}
			return nil
		},
		Sinks:          dispatch.Stats,
		EnableSink:     dispatch.Enable,
		ReplaySink:     k.replaySinkFor,
		SetSpeakers:    k.setSpeakersFor,
		SinkHistory:    k.Records().SinkHistory,
		TracerProvider: o.tracer,
	})
	if err != nil {
		return nil, err
	}
	built = true
	return k, nil
}

// Start runs the sinks and the pipeline: deliveries queued or committed before the last stop
// are processed at once. Routes mounted before Start already commit what they acknowledge; it
// is processed once Start has run. ctx bounds the start, not what runs (Shutdown stops it):
// cancelled before or while Start runs, it returns ctx.Err(). A start that failed once the
// pipeline had run cannot be tried again; the kit is then only shut down.
func (k *Kit) Start(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.stopped:
		return errors.New("scribehook: start after shutdown")
	case k.started:
		return nil
	case k.startErr != nil:
		return fmt.Errorf("scribehook: start after a failed start: %w", k.startErr)
	}
	// Nothing has run yet: a cancelled start leaves the kit as New left it, startable again.
	if err := ctx.Err(); err != nil {
		return err
	}
	// A process killed with deliveries in flight left their leases behind; on SQLite this
	// process is the queue's only worker, so they go out now rather than when the leases end.
	// (PostgreSQL does nothing here: other replicas' leases are alive.)
	if n, err := k.store.ReleaseSinkLeases(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("release sink leases: %w", err)
	} else if n > 0 {
		k.log.WithField("deliveries", n).Info("released the sink leases of the previous run")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The pipeline and sinks outlive Start's ctx (they stop with Shutdown), so they run on a
	// context of their own; ctx only bounds the start itself.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	dispatched := make(chan struct{})
	// Sinks start first: deliveries queued before the last stop go out at once.
	go func() {
		defer close(dispatched)
		if err := k.dispatch.Run(runCtx); err != nil {
			k.log.WithError(err).Error("sink dispatcher stopped")
		}
	}()
	done := make(chan error, 1)
	go func() { done <- k.pipeline.Run(runCtx) }()
	// abort undoes a start that got this far: the pipeline and the dispatcher run only once,
	// so the kit cannot be started again, only shut down.
	abort := func(err error) error {
		cancel()
		<-done
		<-dispatched
		k.startErr = err
		return err
	}
	select {
	case <-k.pipeline.Running():
	case err := <-done:
		done <- err // abort waits for it
		return abort(fmt.Errorf("start pipeline: %w", err))
	case <-ctx.Done():
		return abort(ctx.Err())
	}
	// The profiling listener opens last, so a start that fails leaves no port behind.
	if k.cfg.Debug.Listen != "" && k.debug == nil {
		d, err := debugserver.Start(k.cfg.Debug.Listen)
		if err != nil {
			return abort(err)
		}
		k.debug = d
		k.log.WithField("debug_listen", d.Addr()).Info("profiling endpoint /debug/pprof/ on (debug.listen)")
	}
	k.pruner.Start(runCtx)
	if k.reconciler != nil && k.cfg.Reconcile.On(true) {
		k.reconciled = make(chan struct{})
		rctx, stop := context.WithCancel(runCtx)
		k.stopRecon = stop
		go func() {
			defer close(k.reconciled)
			_ = k.reconciler.Run(rctx)
		}()
	}
	k.started, k.cancel, k.done = true, cancel, done
	k.warnOrphanedQueues(runCtx)
	return nil
}

// Serve answers callbacks (and the read API, health, metrics and dashboard) on ln with the
// kit's own server, until Shutdown; it returns nil then. The server refuses bad tokens and
// ambiguous framing on the headers alone and caps connections per client address
// (receiver.max_conns_per_ip). Start must have been called.
func (k *Kit) Serve(ln net.Listener) error {
	k.mu.Lock()
	if !k.started || k.stopped {
		k.mu.Unlock()
		_ = ln.Close()
		return errors.New("scribehook: serve before start or after shutdown")
	}
	served := make(chan error, 1)
	k.served = append(k.served, served)
	k.mu.Unlock()
	err := k.recv.Serve(ln)
	served <- err
	return err
}

// Run starts the kit, serves on cfg.Listen until ctx ends, then shuts down within
// DefaultShutdownTimeout: what `scribehook serve` does.
func (k *Kit) Run(ctx context.Context) error {
	if err := k.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", k.cfg.Listen)
	if err != nil {
		_ = k.Close()
		return fmt.Errorf("listen on %s: %w", k.cfg.Listen, err)
	}
	return k.RunListener(ctx, ln)
}

// RunListener is Run on a listener the caller opened.
func (k *Kit) RunListener(ctx context.Context, ln net.Listener) error {
	if err := k.Start(ctx); err != nil {
		_ = ln.Close()
		return err
	}
	k.log.WithFields(logrus.Fields{
		"listen": ln.Addr().String(), "public_url": k.cfg.PublicURL, "store": configs.RedactURL(k.cfg.Store.DSN),
		"bus": k.cfg.Bus.Driver, "sinks": k.sinks,
	}).Info("scribehook serving")
	// The kit's own server is stopped by Shutdown itself, first: nothing to stop before it.
	return k.RunServer(ctx, func() error { return k.Serve(ln) }, func(context.Context) error { return nil })
}

// Shutdown stops the kit in the order that loses nothing: the HTTP server first (in-flight
// requests finish and commit; connections without a request in them are closed at once, and a
// request body still arriving gets half the time ctx leaves), then the group committer, then the pipeline (handlers finish
// their current rows; the rest stay pending for the next start), then the sinks (deliveries in
// flight settle), and closes the store if New opened it. Routes mounted elsewhere answer 503
// from then on; the program stops its own server first.
func (k *Kit) Shutdown(ctx context.Context) error {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return nil
	}
	k.stopped = true
	served, debug := k.served, k.debug
	k.mu.Unlock()

	var errs []error
	if err := k.recv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stop receiver: %w", err))
	}
	if k.reconciled != nil {
		// A pass stops between two jobs, or rolls its commit back: what it did not commit is
		// asked again at the next start.
		k.stopRecon()
		select {
		case <-k.reconciled:
		case <-ctx.Done():
		}
	}
	for _, ch := range served {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	if err := k.batcher.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop group commit: %w", err))
	}
	if err := k.pipeline.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop pipeline: %w", err))
	}
	// Deliveries in flight settle (delivered or rescheduled), the rest wait in the store; the
	// dispatcher closes the sinks it was given.
	if err := k.dispatch.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop sinks: %w", err))
	}
	if k.cancel != nil {
		k.cancel()
		select {
		case <-k.done:
		case <-ctx.Done():
		}
	}
	k.pruner.Stop()
	if k.ownStore {
		if err := k.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	if debug != nil {
		_ = debug.Close()
	}
	return errors.Join(errs...)
}

// Close is Shutdown within DefaultShutdownTimeout.
func (k *Kit) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultShutdownTimeout)
	defer cancel()
	return k.Shutdown(ctx)
}

// Pruner is the kit's retention pruner (retention.interval): Prune runs it at once, on the
// kit's clock and with its metrics.
func (k *Kit) Pruner() *retention.Pruner { return k.pruner }

// Config is the configuration the kit was built from.
func (k *Kit) Config() configs.Config { return k.cfg }

// Service is the client of the service, nil without an API key.
func (k *Kit) Service() *submitter.Client { return k.service }

// Receiver is the kit's receiver, for what Mount and Handler do not cover.
func (k *Kit) Receiver() *receiver.Receiver { return k.recv }

// Metrics is the registry /metrics serves; a program may add its own collectors.
func (k *Kit) Metrics() *prometheus.Registry { return k.reg }

// serviceResolver reads jobs from the service for the handlers.
type serviceResolver struct{ c *submitter.Client }

func (r serviceResolver) GetJob(ctx context.Context, id string, kind api.JobKind) (api.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if kind == api.KindLive {
		return r.c.GetLive(ctx, id)
	}
	return r.c.GetPreRecorded(ctx, id)
}
