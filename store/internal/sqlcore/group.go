package sqlcore

import (
	"context"
	"fmt"
	"slices"

	"github.com/scribehook/scribehook/store"
)

// ApplyGroup applies several inbox rows in one Derived transaction, one COMMIT for all: each
// row of inboxIDs is marked done as Apply marks it (a row done already, or missing, is left
// out), then fn runs once with the rows marked, in the order given, and the transaction
// commits. fn's error rolls every row back, as if the group had not been tried. A group of
// rows none of which is pending commits nothing and does not run fn.
func (c *Core) ApplyGroup(ctx context.Context, inboxIDs []int64, fn func(ctx context.Context, tx store.Tx, ids []int64) error) error {
	if len(inboxIDs) == 0 {
		return nil
	}
	rows := len(inboxIDs) // the rows the group holds: all of them, then the ones marked
	name := func() string { return fmt.Sprintf("apply %d inbox rows", rows) }
	return c.inTx(ctx, "apply group", Derived, name, func(t Tx) error {
		marked, err := c.markDone(ctx, t, inboxIDs)
		if err != nil {
			return err
		}
		if rows = len(marked); rows == 0 {
			return errNothingToCommit
		}
		return fn(ctx, &applyTx{c: c, t: t}, marked)
	})
}

// markDone marks the pending rows of ids done in t and returns the ones it marked in the order
// of ids, each once: by one statement where the dialect lists ids (Dialect.IDs), else one by
// one.
func (c *Core) markDone(ctx context.Context, t Tx, ids []int64) ([]int64, error) {
	now := c.d.Time(c.now())
	if c.d.IDs == "" {
		marked := make([]int64, 0, len(ids))
		for _, id := range ids {
			res, err := t.Exec(ctx, StInboxDone, now, id)
			if err != nil {
				return nil, fmt.Errorf("apply inbox row %d: mark done: %w", id, err)
			}
			if OneRow(res) == nil {
				marked = append(marked, id)
			}
		}
		return marked, nil
	}
	rows, err := t.Query(ctx, StInboxDoneMany, now, IDList(ids))
	if err != nil {
		return nil, fmt.Errorf("apply %d inbox rows: mark done: %w", len(ids), err)
	}
	done, err := Collect(rows, func(s Scanner) (int64, error) {
		var id int64
		return id, s.Scan(&id)
	})
	if err != nil {
		return nil, fmt.Errorf("apply %d inbox rows: mark done: %w", len(ids), err)
	}
	slices.Sort(done)
	taken := make([]bool, len(done))
	marked := make([]int64, 0, len(done))
	for _, id := range ids {
		if i, ok := slices.BinarySearch(done, id); ok && !taken[i] {
			taken[i] = true
			marked = append(marked, id)
		}
	}
	return marked, nil
}

// InboxRows reads the rows of ids that exist, by id: a group's rows in one query.
func (r *Reader) InboxRows(ctx context.Context, ids []int64) ([]store.InboxRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	query := r.d.Rebind(`SELECT ` + InboxColumns + ` FROM inbox WHERE id IN (` + marks(len(ids)) + `) ORDER BY id`)
	out, err := Query(ctx, r.db, r.scanInbox, query, args...)
	if err != nil {
		return nil, fmt.Errorf("inbox rows: %w", err)
	}
	return out, nil
}

// PendingInboxKeys lists the id, partition key, receipt and due times of pending rows with id >
// afterID in id order, at most limit (no limit when limit <= 0): the pipeline queues rows from
// these and reads each group's rows once, when it applies them, and the bus sweep picks the
// keys with a row waiting too long, without reading a body.
func (r *Reader) PendingInboxKeys(ctx context.Context, afterID int64, limit int) ([]store.InboxKey, error) {
	out, err := Query(ctx, r.db, scanKey, r.q[readPendingKeys], afterID, r.d.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("pending inbox keys: %w", err)
	}
	return out, nil
}

// keyColumns are the columns scanKey reads.
const keyColumns = `id, partition_key, received_at, next_attempt_at`

func scanKey(sc Scanner) (store.InboxKey, error) {
	var (
		k              store.InboxKey
		received, next Time
	)
	err := sc.Scan(&k.ID, &k.PartitionKey, &received, &next)
	k.ReceivedAt, k.NextAttempt = received.T, next.T
	return k, err
}
