package sqlcore

import (
	"context"
	"errors"
	"fmt"

	"github.com/scribehook/scribehook/store"
)

// SetSinkState records st, replacing the sink's earlier state. An operator's decision, or a
// destination's answer that nothing else records: it commits durably.
func (c *Core) SetSinkState(ctx context.Context, st store.SinkState) error {
	if st.Name == "" {
		return errors.New("set sink state: empty sink name")
	}
	t, err := c.w.Begin(ctx, "set sink state", Durable|OneStatement)
	if err != nil {
		return fmt.Errorf("set sink state of %s: begin: %w", st.Name, err)
	}
	defer t.Rollback()
	since := st.Since
	if since.IsZero() {
		since = c.now()
	}
	if _, err := t.Exec(ctx, StSinkStatePut, c.d.text(st.Name), st.Disabled, c.d.text(st.Reason), c.d.Time(since)); err != nil {
		return fmt.Errorf("set sink state of %s: %w", st.Name, err)
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("set sink state of %s: commit: %w", st.Name, err)
	}
	return nil
}

// SinkStates lists the recorded states by name.
func (r *Reader) SinkStates(ctx context.Context) ([]store.SinkState, error) {
	out, err := Query(ctx, r.db, func(sc Scanner) (store.SinkState, error) {
		var (
			st    store.SinkState
			since Time
		)
		err := sc.Scan(&st.Name, &st.Disabled, &st.Reason, &since)
		st.Since = since.T
		return st, err
	}, `SELECT name, disabled, reason, since FROM sink_state ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sink states: %w", err)
	}
	return out, nil
}
