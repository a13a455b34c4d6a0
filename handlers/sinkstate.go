package handlers

import (
	"context"

	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// SinkStates implements sinks.StateStore on the store's sink_state table: a sink disabled by
// a 410 answer or by an operator stays disabled across restarts.
func (q sinkQueue) SinkStates(ctx context.Context) ([]sinks.SinkState, error) {
	sts, err := q.s.SinkStates(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sinks.SinkState, len(sts))
	for i, st := range sts {
		out[i] = sinks.SinkState(st)
	}
	return out, nil
}

func (q sinkQueue) SetSinkState(ctx context.Context, st sinks.SinkState) error {
	return q.s.SetSinkState(ctx, store.SinkState(st))
}
