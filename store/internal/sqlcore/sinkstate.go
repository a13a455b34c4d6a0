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
	since := st.Since
	if since.IsZero() {
		since = c.now()
	}
	name := func() string { return "set sink state of " + st.Name }
	return c.inTx(ctx, "set sink state", Durable|OneStatement, name, func(t Tx) error {
		if _, err := t.Exec(ctx, StSinkStatePut, c.d.text(st.Name), st.Disabled, c.d.text(st.Reason), c.d.Time(since)); err != nil {
			return fmt.Errorf("%s: %w", name(), err)
		}
		return nil
	})
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
