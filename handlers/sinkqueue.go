package handlers

import (
	"context"
	"time"

	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// SinkQueue is the sinks' durable Queue on the store: the store keeps its own SinkDelivery
// type so that it does not depend on sinks, and this adapter converts between the two.
func SinkQueue(s store.Store) sinks.Queue { return sinkQueue{s} }

type sinkQueue struct{ s store.Store }

func (q sinkQueue) Claim(ctx context.Context, sink string, ordered bool, now time.Time, lease time.Duration, limit int) ([]sinks.Delivery, error) {
	ds, err := q.s.ClaimSinkDeliveries(ctx, sink, ordered, now, lease, limit)
	if err != nil {
		return nil, err
	}
	return toSinkDeliveries(ds), nil
}

func toSinkDeliveries(ds []store.SinkDelivery) []sinks.Delivery {
	out := make([]sinks.Delivery, len(ds))
	for i, d := range ds {
		out[i] = toSinkDelivery(d)
	}
	return out
}

func (q sinkQueue) Complete(ctx context.Context, id int64) error {
	return q.s.CompleteSinkDelivery(ctx, id)
}

// CompleteMany and CompleteAndClaim make the adapter a sinks.BatchQueue: a dispatcher's round
// (what was delivered, the next deliveries) is one transaction.
func (q sinkQueue) CompleteMany(ctx context.Context, ids []int64) error {
	return q.s.CompleteSinkDeliveries(ctx, ids)
}

func (q sinkQueue) CompleteAndClaim(ctx context.Context, done []int64, sink string, ordered bool, now time.Time,
	lease time.Duration, limit int) ([]sinks.Delivery, error) {
	ds, err := q.s.CompleteAndClaimSinkDeliveries(ctx, done, sink, ordered, now, lease, limit)
	if err != nil {
		return nil, err
	}
	return toSinkDeliveries(ds), nil
}

func (q sinkQueue) Retry(ctx context.Context, id int64, next time.Time, errMsg string) error {
	return q.s.RetrySinkDelivery(ctx, id, next, errMsg)
}

func (q sinkQueue) Kill(ctx context.Context, id int64, errMsg string, at time.Time) error {
	return q.s.KillSinkDelivery(ctx, id, errMsg, at)
}

func (q sinkQueue) DeadLetters(ctx context.Context, sink string, since time.Time, limit int) ([]sinks.DeadLetter, error) {
	ds, err := q.s.DeadLetters(ctx, sink, since, limit)
	if err != nil {
		return nil, err
	}
	out := make([]sinks.DeadLetter, len(ds))
	for i, d := range ds {
		out[i] = sinks.DeadLetter{Delivery: toSinkDelivery(d), FailedAt: d.FailedAt}
	}
	return out, nil
}

func (q sinkQueue) Replay(ctx context.Context, id int64, now time.Time) error {
	return q.s.ReplayDeadLetter(ctx, id, now)
}

func (q sinkQueue) Depth(ctx context.Context, sink string) (int64, error) {
	return q.s.SinkDepth(ctx, sink)
}

func toSinkDelivery(d store.SinkDelivery) sinks.Delivery {
	return sinks.Delivery{
		ID:          d.ID,
		Sink:        d.Sink,
		EventID:     d.EventID,
		Event:       d.Event,
		OrderKey:    d.OrderKey,
		Attempts:    d.Attempts,
		NextAttempt: d.NextAttempt,
		LastError:   d.LastError,
		CreatedAt:   d.CreatedAt,
	}
}
