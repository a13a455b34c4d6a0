package sinks

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/store"
)

// round records the deliveries done since the last round and claims up to n more (none when n
// is 0), in one transaction when it can (store.SinkQueue.CompleteAndClaimSinkDeliveries): one
// commit per round of a sink instead of one per delivery and one per claim; on SQLite's single
// writer those commits are what the applies of new rows wait behind. Recording is not cut short by shutdown; when the
// transaction fails, what was delivered is recorded on its own (one at a time if need be) and
// the claim is tried alone.
func (w *sinkWorker) round(ctx context.Context, done []int64, now time.Time, n int) []store.SinkDelivery {
	if n > 0 {
		var ds []store.SinkDelivery
		var err error
		if len(done) > 0 {
			if ds, err = w.d.queue.CompleteAndClaimSinkDeliveries(ctx, done, w.name, w.pol.Ordered, now, w.lease, n); err == nil {
				return ds
			}
			w.log.WithError(err).WithField("deliveries", len(done)).Warn("sinks: recording and claiming together failed; recording apart")
		}
		w.record(ctx, done)
		ds, err = w.d.queue.ClaimSinkDeliveries(ctx, w.name, w.pol.Ordered, now, w.lease, n)
		if err != nil && ctx.Err() == nil {
			w.log.WithError(err).Warn("sinks: claim failed")
		}
		return ds
	}
	w.record(ctx, done)
	return nil
}

// record marks delivered deliveries in the queue: together, or one at a time when that fails
// (one the queue no longer knows spoils a group), so that each gets its own answer. A failure
// is logged and left to the lease: the delivery is claimed and delivered again, same event id.
func (w *sinkWorker) record(ctx context.Context, done []int64) {
	if len(done) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), queueTimeout)
	defer cancel()
	if len(done) > 1 && w.d.queue.CompleteSinkDeliveries(ctx, done) == nil {
		return
	}
	for _, id := range done {
		if err := w.d.queue.CompleteSinkDelivery(ctx, id); err != nil {
			w.log.WithError(err).WithFields(logrus.Fields{"delivery": id}).
				Error("sinks: delivered, but recording it failed; it will be delivered again")
		}
	}
}
