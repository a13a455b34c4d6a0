package sinks

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// BatchSink is a Sink that delivers several events at once and makes them durable together:
// the file sink syncs its disk once per batch instead of twice per file. The dispatcher hands
// it the deliveries of each claim as one batch.
type BatchSink interface {
	Sink
	// DeliverBatch delivers evs and returns each one's error (nil: delivered), as Deliver
	// would for it alone.
	DeliverBatch(ctx context.Context, evs []api.Event) []error
}

// start runs the attempts of claimed deliveries: one batch for a BatchSink, one attempt each
// otherwise.
func (w *sinkWorker) start(ctx context.Context, attempts *sync.WaitGroup, ds []store.SinkDelivery, probe bool) {
	if bs, ok := w.sink.(BatchSink); ok && len(ds) > 1 {
		attempts.Go(func() { w.attempt(ctx, bs, ds, probe) })
		return
	}
	for i := range ds {
		attempts.Go(func() { w.attempt(ctx, nil, ds[i:i+1], probe) })
	}
}

// attempt delivers claimed deliveries, as one batch when bs is set, else one delivery through
// Deliver, bounded by one attempt timeout; each is settled on its own. Neither the attempt nor
// its settlement is cut short by shutdown: a settled attempt is not repeated after a restart.
func (w *sinkWorker) attempt(ctx context.Context, bs BatchSink, ds []store.SinkDelivery, probe bool) {
	ctx = context.WithoutCancel(ctx)
	attemptCtx := ctx
	var spans []trace.Span // nil: tracing is off (tracing.go)
	if w.d.tracer.On() {
		attemptCtx, spans = w.startDeliver(ctx, ds)
	}
	attemptCtx, cancel := context.WithTimeout(attemptCtx, w.pol.Timeout)
	errs := w.deliver(attemptCtx, bs, ds)
	cancel()
	for i, dl := range ds {
		res := w.finish(ctx, dl, probe, errs[i])
		if spans != nil {
			delivered(spans[i], res, errs[i])
		}
	}
}

// deliver runs the sink, turning a panic, or a batch's short answer, into a retryable error for
// every delivery: one bad event must not take the process down.
func (w *sinkWorker) deliver(ctx context.Context, bs BatchSink, ds []store.SinkDelivery) (errs []error) {
	defer func() {
		if p := recover(); p != nil {
			errs = sameErrors(len(ds), fmt.Errorf("sink panicked: %v", p))
		}
	}()
	if bs == nil {
		return []error{w.sink.Deliver(ctx, ds[0].Event)}
	}
	evs := make([]api.Event, len(ds))
	for i, dl := range ds {
		evs[i] = dl.Event
	}
	errs = bs.DeliverBatch(ctx, evs)
	if len(errs) != len(ds) {
		return sameErrors(len(ds), fmt.Errorf("sink answered %d results for %d events", len(errs), len(ds)))
	}
	return errs
}

// sameErrors is the answer of a batch of n whose every event failed with err.
func sameErrors(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}
