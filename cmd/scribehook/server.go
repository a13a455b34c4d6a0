package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// serverOptions is everything `serve` runs on, already resolved from the configuration.
type serverOptions struct {
	Store      store.Store
	Listener   net.Listener
	Routes     []receiver.Route
	ReadToken  string
	Service    *submitter.Client // nil without an API key: thin webhooks stay unresolved
	BodyLimit  int
	Partitions int
	// PublicURL is where clients reach this server (paging links); TokenTTL bounds per-job
	// callback tokens (receiver.Config).
	PublicURL     string
	TokenTTL      time.Duration
	MaxConnsPerIP int
	Logger        *logrus.Entry
	// Subtitles renders artifacts when jobs succeed (Dir empty: none).
	Subtitles handlers.SubtitleConfig
	// Sinks are built sinks with their specs; each gets its own durable queue and workers.
	Sinks []sinkSetup
	// Bus is the broker that several replicas share (openBus); nil keeps the in-process
	// GoChannel. The server owns it: it is closed with the pipeline, or when the start fails.
	Bus *handlers.Bus
	// SweepInterval, SweepGrace and NoticeQueue tune the pipeline (bus.sweep_interval,
	// bus.sweep_grace, bus.queue); zero takes the handlers' defaults.
	SweepInterval time.Duration
	SweepGrace    time.Duration
	NoticeQueue   int
}

// sinkSetup is one configured sink, built.
type sinkSetup struct {
	Spec sinks.Spec
	Sink sinks.Sink
}

// server is a running receiver with its processing pipeline.
type server struct {
	store    store.Store
	batcher  *store.Batcher
	pipeline *handlers.Pipeline
	dispatch *sinks.Dispatcher
	recv     *receiver.Receiver
	ln       net.Listener
	log      *logrus.Entry
	cancel   context.CancelFunc
	done     chan error
	served   chan error
}

// startServer starts the pipeline first (it resumes rows committed before the last stop), then
// the receiver, so nothing is acknowledged before it can be processed.
func startServer(ctx context.Context, o serverOptions) (*server, error) {
	if o.Logger == nil {
		o.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var resolver handlers.Resolver
	if o.Service != nil {
		resolver = serviceResolver{o.Service}
	}
	dispatch := sinks.NewDispatcher(sinks.DispatcherConfig{
		Queue: handlers.SinkQueue(o.Store), Metrics: reg, Logger: o.Logger.WithField("component", "sinks"),
	})
	specs := make([]sinks.Spec, 0, len(o.Sinks))
	for _, sk := range o.Sinks {
		if err := dispatch.Add(sk.Spec, sk.Sink); err != nil {
			if o.Bus != nil {
				_ = o.Bus.Close()
			}
			return nil, fmt.Errorf("sink %s: %w", sk.Spec.Name, err)
		}
		specs = append(specs, sk.Spec)
	}
	// A process killed with deliveries in flight left their leases behind; on SQLite this
	// process is the queue's only worker, so they go out now rather than when the leases end.
	// (PostgreSQL does nothing here: other replicas' leases are alive.)
	if n, err := o.Store.ReleaseSinkLeases(ctx); err != nil {
		if o.Bus != nil {
			_ = o.Bus.Close()
		}
		return nil, fmt.Errorf("release sink leases: %w", err)
	} else if n > 0 {
		o.Logger.WithField("deliveries", n).Info("released the sink leases of the previous run")
	}
	pipeline, err := handlers.New(handlers.Config{
		Store: o.Store, Resolver: resolver, Partitions: o.Partitions, Metrics: reg, Logger: o.Logger,
		Subtitles: o.Subtitles, Sinks: specs, Wake: dispatch.Wake,
		Bus: o.Bus, SweepInterval: o.SweepInterval, SweepGrace: o.SweepGrace, NoticeQueue: o.NoticeQueue,
	})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// Sinks start first: deliveries queued before the last stop go out at once.
	go func() {
		if err := dispatch.Run(runCtx); err != nil {
			o.Logger.WithError(err).Error("sink dispatcher stopped")
		}
	}()
	s := &server{
		store: o.Store, pipeline: pipeline, dispatch: dispatch, log: o.Logger, cancel: cancel,
		batcher: store.NewBatcher(o.Store, store.BatcherOptions{}),
		done:    make(chan error, 1), served: make(chan error, 1),
	}
	go func() { s.done <- pipeline.Run(runCtx) }()
	select {
	case <-pipeline.Running():
	case err := <-s.done:
		cancel()
		if o.Bus != nil {
			_ = pipeline.Close() // closes the broker connections
		}
		return nil, fmt.Errorf("start pipeline: %w", err)
	}
	recv, err := receiver.New(receiver.Config{
		Store: o.Store, Ingester: s.batcher, Notifier: pipeline, Live: pipeline.SessionFeed(),
		Routes: o.Routes, ReadToken: o.ReadToken, BodyLimit: o.BodyLimit,
		PublicURL: o.PublicURL, TokenTTL: o.TokenTTL, MaxConnsPerIP: o.MaxConnsPerIP,
		Ready: pipeline.Ready, Metrics: reg, Logger: o.Logger,
		Notes: func() []string {
			if !pipeline.BrokerUp() {
				return []string{"bus: the broker does not answer; deliveries are stored and processed by the sweep until it is back"}
			}
			return nil
		},
		Sinks: func() []receiver.SinkStatus { return sinkStatus(dispatch.Stats()) },
	})
	if err != nil {
		cancel()
		_ = pipeline.Close()
		return nil, err
	}
	s.recv, s.ln = recv, o.Listener
	go func() { s.served <- recv.Serve(o.Listener) }()
	return s, nil
}

// Shutdown stops Fiber first (in-flight requests finish and commit), then the group
// committer, then the router (handlers finish their current rows; the rest stay pending for the
// next start), then the sinks.
func (s *server) Shutdown(ctx context.Context) error {
	var errs []error
	if err := s.recv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stop receiver: %w", err))
	}
	// fasthttp only knows a listener once Serve has run; a stop right after the start must
	// still free the port.
	_ = s.ln.Close()
	select {
	case <-s.served:
	case <-ctx.Done():
	}
	if err := s.batcher.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop group commit: %w", err))
	}
	if err := s.pipeline.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop pipeline: %w", err))
	}
	// Deliveries in flight settle (delivered or rescheduled), the rest wait in the store; the
	// dispatcher closes the sinks it was given.
	if err := s.dispatch.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop sinks: %w", err))
	}
	s.cancel()
	select {
	case <-s.done:
	case <-ctx.Done():
	}
	return errors.Join(errs...)
}

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

// sinkStatus shows the dispatcher's statistics on the read API.
func sinkStatus(stats []sinks.SinkStats) []receiver.SinkStatus {
	out := make([]receiver.SinkStatus, 0, len(stats))
	for _, st := range stats {
		out = append(out, receiver.SinkStatus{
			Name: st.Name, Depth: st.Depth, InFlight: st.InFlight, ConsecutiveFailures: st.ConsecutiveFailures,
			Breaker: string(st.Breaker), BreakerOpenUntil: st.BreakerOpenUntil, Disabled: st.Disabled,
			DisabledReason: st.DisabledReason, Delivered: st.Delivered, Failed: st.Failed, Dead: st.Dead,
		})
	}
	return out
}
