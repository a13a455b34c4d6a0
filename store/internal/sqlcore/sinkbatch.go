package sqlcore

import (
	"context"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/store"
)

// CompleteSinkDeliveries marks several deliveries delivered in one transaction, as
// CompleteSinkDelivery marks one: a dispatcher finishing many attempts at once pays one commit
// for them rather than one each. It is all or nothing: an unknown id is store.ErrNotFound
// (naming it) and nothing is marked, so that the caller can fall back to completing one at a
// time and learn which one failed.
func (c *Core) CompleteSinkDeliveries(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	name := func() string { return fmt.Sprintf("complete %d sink deliveries", len(ids)) }
	return c.inTx(ctx, "complete sink deliveries", Derived, name, func(t Tx) error { return c.completeIn(ctx, t, ids) })
}

// CompleteAndClaimSinkDeliveries is CompleteSinkDeliveries(done) then
// ClaimSinkDeliveries(sink, ordered, now, lease, limit) in one transaction: a dispatcher's round
// (record what was delivered, take the next deliveries) in one commit. The claim sees the
// completions, so an ordered sink's next delivery of a key just completed is eligible. All or
// nothing: an unknown id in done is store.ErrNotFound and nothing is completed or claimed.
func (c *Core) CompleteAndClaimSinkDeliveries(ctx context.Context, done []int64, sink string, ordered bool,
	now time.Time, lease time.Duration, limit int) ([]store.SinkDelivery, error) {
	op, kind := "complete and claim sink deliveries", Derived
	if len(done) == 0 {
		op, kind = "claim sink deliveries", Derived|OneStatement // a claim alone is one statement
	}
	var out []store.SinkDelivery
	err := c.inTx(ctx, op, kind, func() string { return op + " of " + sink }, func(t Tx) error {
		if err := c.completeIn(ctx, t, done); err != nil {
			return err
		}
		var err error
		out, err = c.claimIn(ctx, t, sink, ordered, now, lease, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// completeIn marks ids delivered in t; store.ErrNotFound names the first it does not know.
func (c *Core) completeIn(ctx context.Context, t Tx, ids []int64) error {
	at := c.d.Time(c.now())
	for _, id := range ids {
		res, err := t.Exec(ctx, StSinkComplete, at, id)
		if err != nil {
			return fmt.Errorf("complete sink delivery %d: %w", id, err)
		}
		if err := OneRow(res); err != nil {
			return fmt.Errorf("complete sink delivery %d: %w", id, err)
		}
	}
	return nil
}
