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
	t, err := c.w.Begin(ctx, "complete sink deliveries", Derived)
	if err != nil {
		return fmt.Errorf("complete %d sink deliveries: begin: %w", len(ids), err)
	}
	defer t.Rollback()
	if err := c.completeIn(ctx, t, ids); err != nil {
		return err
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("complete %d sink deliveries: commit: %w", len(ids), err)
	}
	return nil
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
	t, err := c.w.Begin(ctx, op, kind)
	if err != nil {
		return nil, fmt.Errorf("%s of %s: begin: %w", op, sink, err)
	}
	defer t.Rollback()
	if err := c.completeIn(ctx, t, done); err != nil {
		return nil, err
	}
	out, err := c.claimIn(ctx, t, sink, ordered, now, lease, limit)
	if err != nil {
		return nil, err
	}
	if err := t.Commit(); err != nil {
		return nil, fmt.Errorf("%s of %s: commit: %w", op, sink, err)
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
