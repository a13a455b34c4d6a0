package main

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
)

// Verification of the replicas run, in PostgreSQL (the replicas' shared store), in the webhook
// receiver and in the replicas' file sink directories.

// pgBacklog counts inbox rows not processed yet and sink deliveries not settled yet.
func pgBacklog(ctx context.Context, db *sql.DB) (backlog, error) {
	var b backlog
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM inbox WHERE status = 'pending'),
		(SELECT count(*) FROM inbox WHERE status = 'failed'),
		(SELECT count(*) FROM sink_deliveries WHERE status = 'queued'),
		(SELECT count(*) FROM sink_deliveries WHERE status = 'dead')`).Scan(&b.Pending, &b.Failed, &b.SinkQueued, &b.SinkDead)
	if err != nil {
		return b, fmt.Errorf("read backlog: %w", err)
	}
	return b, nil
}

// pgWaitDrained waits until no inbox row is pending and no sink delivery queued, or timeout.
func pgWaitDrained(db *sql.DB, timeout time.Duration) (backlog, time.Duration, error) {
	return pgWaitDrainedVerbose(db, timeout, 0)
}

// pgWaitDrainedVerbose is pgWaitDrained that prints the backlog every `every` (0: never).
func pgWaitDrainedVerbose(db *sql.DB, timeout, every time.Duration) (backlog, time.Duration, error) {
	start := time.Now()
	next := every
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b, err := pgBacklog(ctx, db)
		cancel()
		if err != nil {
			return b, time.Since(start), err
		}
		if b.Pending == 0 && b.SinkQueued == 0 {
			return b, time.Since(start), nil
		}
		if every > 0 && time.Since(start) >= next {
			fmt.Printf("drain: +%s: %d inbox rows pending, %d sink deliveries queued\n", next, b.Pending, b.SinkQueued)
			next += every
		}
		if time.Since(start) > timeout {
			return b, time.Since(start), fmt.Errorf("not drained after %s: %d inbox rows pending, %d sink deliveries queued", timeout, b.Pending, b.SinkQueued)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leased is a sink delivery under a lease at some moment.
type leased struct {
	ID            int64
	Sink, EventID string
	Until         time.Time
}

// leasedDeliveries returns the sink deliveries that are queued and under a lease now: being
// worked by some replica.
func leasedDeliveries(db *sql.DB) (map[int64]leased, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT id, sink, event_id, lease_until FROM sink_deliveries
		WHERE status = 'queued' AND lease_until IS NOT NULL AND lease_until > now()`)
	if err != nil {
		return nil, fmt.Errorf("read leased deliveries: %w", err)
	}
	defer rows.Close()
	out := map[int64]leased{}
	for rows.Next() {
		var l leased
		if err := rows.Scan(&l.ID, &l.Sink, &l.EventID, &l.Until); err != nil {
			return nil, fmt.Errorf("read leased deliveries: %w", err)
		}
		out[l.ID] = l
	}
	return out, rows.Err()
}

// orphanedLeases keeps the deliveries of before that are still queued under the same lease:
// nobody completed them since, their claimer is gone.
func orphanedLeases(db *sql.DB, before map[int64]leased) ([]int64, error) {
	now, err := leasedDeliveries(db)
	if err != nil {
		return nil, err
	}
	var out []int64
	for id, l := range before {
		if n, ok := now[id]; ok && n.Until.Equal(l.Until) {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// deliveryState is a sink delivery's row.
type deliveryState struct {
	Sink, EventID, Status string
	Attempts              int
	DeliveredAt           sql.NullTime
}

func readDeliveries(db *sql.DB, ids []int64) ([]deliveryState, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var list []string
	for _, id := range ids {
		list = append(list, fmt.Sprint(id))
	}
	rows, err := db.QueryContext(ctx, `SELECT sink, event_id, status, attempts, delivered_at FROM sink_deliveries
		WHERE id IN (`+strings.Join(list, ",")+`) ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read sink deliveries: %w", err)
	}
	defer rows.Close()
	var out []deliveryState
	for rows.Next() {
		var d deliveryState
		if err := rows.Scan(&d.Sink, &d.EventID, &d.Status, &d.Attempts, &d.DeliveredAt); err != nil {
			return nil, fmt.Errorf("read sink deliveries: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// replicaCheck is the verdict of the store checks.
type replicaCheck struct {
	Acked, Unacked int
	// Missing: answered 2xx, no inbox row under its dedupe key. NotDone: the row is there, not
	// processed. NoEffect: processed but its live message or job record is missing. Twice:
	// applied more than once.
	Missing, NotDone, NoEffect, Twice int
	// Sessions checked, and those whose stored messages are not in the order sent (Disorder),
	// lack an acknowledged message (counted in NoEffect), or have gaps in seq.
	Sessions, Disorder, SeqGaps int
	// Stored but never acknowledged (the answer was lost): allowed, at least once.
	StoredUnacked int
	Problems      []string
}

func (c replicaCheck) ok() bool {
	return c.Missing+c.NotDone+c.NoEffect+c.Twice+c.Disorder+c.SeqGaps == 0
}

func (c replicaCheck) String() string {
	s := fmt.Sprintf("%d acknowledged: %d missing, %d not processed, %d without effect, %d applied twice; %d sessions: %d out of order, %d with gaps in seq; %d stored though never acknowledged",
		c.Acked, c.Missing, c.NotDone, c.NoEffect, c.Twice, c.Sessions, c.Disorder, c.SeqGaps, c.StoredUnacked)
	if len(c.Problems) > 0 {
		s += "; e.g. " + strings.Join(c.Problems, "; ")
	}
	return s
}

func (c *replicaCheck) problem(format string, args ...any) {
	if len(c.Problems) < 5 {
		c.Problems = append(c.Problems, fmt.Sprintf(format, args...))
	}
}

// verifyReplicas checks, in PostgreSQL, every acknowledged delivery: stored once under its
// dedupe key, processed, applied once; and every live session's stored messages (in seq
// order) in the order they were sent.
func verifyReplicas(db *sql.DB, l replicaLoad, out []rOutcome) (replicaCheck, error) {
	var c replicaCheck
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type inboxRow struct {
		id     int64
		status string
	}
	byKey := map[string]int{}
	for i, call := range l.Calls {
		if prev, ok := byKey[call.DedupeKey]; ok {
			return c, fmt.Errorf("calls %d and %d share the dedupe key %s: the generated load is wrong", prev, i, call.DedupeKey)
		}
		byKey[call.DedupeKey] = i
	}
	inbox := map[string]inboxRow{}
	callOfRow := map[int64]int{}
	rows, err := db.QueryContext(ctx, `SELECT id, dedupe_key, status FROM inbox`)
	if err != nil {
		return c, fmt.Errorf("read inbox: %w", err)
	}
	for rows.Next() {
		var r inboxRow
		var key string
		if err := rows.Scan(&r.id, &key, &r.status); err != nil {
			rows.Close()
			return c, fmt.Errorf("read inbox: %w", err)
		}
		inbox[key] = r
		if i, ok := byKey[key]; ok {
			callOfRow[r.id] = i
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("read inbox: %w", err)
	}
	perRow, err := liveMessagesPerRow(ctx, db)
	if err != nil {
		return c, err
	}
	var samePayload int
	if err := db.QueryRowContext(ctx, `SELECT count(*) - count(DISTINCT (session_id, payload)) FROM live_messages`).Scan(&samePayload); err != nil {
		return c, fmt.Errorf("count repeated live messages: %w", err)
	}
	if samePayload > 0 {
		c.Twice += samePayload
		c.problem("%d live messages stored twice with the same session and payload", samePayload)
	}
	jobs := map[string]string{}
	rows, err = db.QueryContext(ctx, `SELECT id, status FROM jobs`)
	if err != nil {
		return c, fmt.Errorf("read jobs: %w", err)
	}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			rows.Close()
			return c, fmt.Errorf("read jobs: %w", err)
		}
		jobs[id] = status
	}
	rows.Close()

	acked := make([]bool, len(l.Calls))
	for i, o := range out {
		if !o.Sent {
			continue
		}
		call := l.Calls[i]
		r, stored := inbox[call.DedupeKey]
		if o.Status/100 != 2 {
			c.Unacked++
			if stored {
				c.StoredUnacked++
			}
			continue
		}
		acked[i] = true
		c.Acked++
		switch {
		case !stored:
			c.Missing++
			c.problem("call %d (%s, acknowledged by replica %d as %s id %d) has no inbox row", i, call.DedupeKey, o.Replica+1, o.Ack, o.AckID)
			continue
		case r.status != "done":
			c.NotDone++
			c.problem("inbox row %d (call %d) is %s", r.id, i, r.status)
			continue
		}
		if i < l.LiveN {
			switch n := perRow[r.id]; {
			case n == 0:
				c.NoEffect++
				c.problem("inbox row %d (call %d) is done but its live message is not stored", r.id, i)
			case n > 1:
				c.Twice++
				c.problem("inbox row %d (call %d) stored %d live messages", r.id, i, n)
			}
		} else if jobs[call.JobID] != string(api.StatusDone) {
			c.NoEffect++
			c.problem("job %s (call %d): record status %q", call.JobID, i, jobs[call.JobID])
		}
	}

	// Order: each session's messages by seq must be the calls of that session in the order
	// they were sent (call i is message i / Sessions of session i % Sessions).
	type stored struct {
		seq  int64
		call int
	}
	sessionOf := map[string]int{}
	for s := 0; s < min(l.Sessions, l.LiveN); s++ {
		sessionOf[l.Calls[s].JobID] = s
	}
	bySession := map[int][]stored{}
	rows, err = db.QueryContext(ctx, `SELECT session_id, seq, inbox_id FROM live_messages ORDER BY session_id, seq`)
	if err != nil {
		return c, fmt.Errorf("read live messages: %w", err)
	}
	for rows.Next() {
		var sid string
		var seq, inboxID int64
		if err := rows.Scan(&sid, &seq, &inboxID); err != nil {
			rows.Close()
			return c, fmt.Errorf("read live messages: %w", err)
		}
		s, ours := sessionOf[sid]
		if !ours {
			continue // another load's session (the warm-up)
		}
		call, known := callOfRow[inboxID]
		if !known {
			call = -1
		}
		bySession[s] = append(bySession[s], stored{seq, call})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("read live messages: %w", err)
	}
	for s := 0; s < min(l.Sessions, l.LiveN); s++ {
		msgs := bySession[s]
		want := 0
		for i := s; i < l.LiveN; i += l.Sessions {
			if acked[i] {
				want++
			}
		}
		if want == 0 && len(msgs) == 0 {
			continue
		}
		c.Sessions++
		disorder, gaps := false, false
		for k, m := range msgs {
			if m.call < 0 || m.call%l.Sessions != s {
				disorder = true
				c.problem("session %d: seq %d holds inbox row of call %d, not one of this session", s, m.seq, m.call)
				continue
			}
			if k > 0 {
				prev := msgs[k-1]
				if m.seq != prev.seq+1 {
					gaps = true
					c.problem("session %d: seq %d follows seq %d", s, m.seq, prev.seq)
				}
				if prev.call >= 0 && m.call <= prev.call {
					disorder = true
					c.problem("session %d: message %d (seq %d) stored after message %d (seq %d)", s, m.call/l.Sessions, m.seq, prev.call/l.Sessions, prev.seq)
				}
			}
		}
		if disorder {
			c.Disorder++
		}
		if gaps {
			c.SeqGaps++
		}
	}
	return c, nil
}

// expectedKeys are the sink event keys (eventKey) the load's acknowledged calls must produce.
func expectedKeys(calls []callback, out []rOutcome) []string {
	var keys []string
	for i, call := range calls {
		if out[i].Status/100 != 2 {
			continue
		}
		if call.MsgKey != "" {
			keys = append(keys, call.MsgKey)
		} else {
			keys = append(keys, call.JobID+"/"+api.EventJobSucceeded)
		}
	}
	return keys
}

// sinkCheck is the verdict on one sink's deliveries.
type sinkCheck struct {
	Name            string
	Events, Effects int // distinct event ids seen; deliveries or files counted
	Missing         int // expected keys never delivered
	KeysTwice       int // a key under two event ids: the same delivery applied twice
	DupIDs          []string
	Explained       int // duplicate ids explained by a failed attempt or a killed replica
	Bad             int
	Dead, Queued    int64
	Problems        []string
}

// sinkRows reads the sink's delivery rows by event id: status and attempts.
func sinkRows(db *sql.DB, sink string) (map[string]deliveryState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT event_id, status, attempts, delivered_at FROM sink_deliveries WHERE sink = $1`, sink)
	if err != nil {
		return nil, fmt.Errorf("read sink deliveries of %s: %w", sink, err)
	}
	defer rows.Close()
	out := map[string]deliveryState{}
	for rows.Next() {
		d := deliveryState{Sink: sink}
		if err := rows.Scan(&d.EventID, &d.Status, &d.Attempts, &d.DeliveredAt); err != nil {
			return nil, fmt.Errorf("read sink deliveries of %s: %w", sink, err)
		}
		out[d.EventID] = d
	}
	return out, rows.Err()
}
