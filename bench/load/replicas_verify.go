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

// pgWaitDrained waits until no inbox row is pending and no sink delivery queued, or timeout.
func pgWaitDrained(db *sql.DB, timeout time.Duration) (backlog, time.Duration, error) {
	return pgWaitDrainedVerbose(db, timeout, 0)
}

// pgWaitDrainedVerbose is pgWaitDrained that prints the backlog every `every` (0: never).
func pgWaitDrainedVerbose(db *sql.DB, timeout, every time.Duration) (backlog, time.Duration, error) {
	return waitBacklog(db, drainWait{sinks: true, timeout: timeout, every: every, poll: 100 * time.Millisecond})
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
	out := map[int64]leased{}
	err := eachRow(ctx, db, "read leased deliveries", func(rows *sql.Rows) error {
		var l leased
		if err := rows.Scan(&l.ID, &l.Sink, &l.EventID, &l.Until); err != nil {
			return err
		}
		out[l.ID] = l
		return nil
	}, `SELECT d.id, d.sink, e.event_id, d.lease_until FROM sink_deliveries d JOIN events e ON e.id = d.event
		WHERE d.status = 'queued' AND d.lease_until IS NOT NULL AND d.lease_until > now()`)
	return out, err
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
	var out []deliveryState
	err := eachRow(ctx, db, "read sink deliveries", func(rows *sql.Rows) error {
		var d deliveryState
		if err := rows.Scan(&d.Sink, &d.EventID, &d.Status, &d.Attempts, &d.DeliveredAt); err != nil {
			return err
		}
		out = append(out, d)
		return nil
	}, `SELECT d.sink, e.event_id, d.status, d.attempts, d.delivered_at FROM sink_deliveries d
		JOIN events e ON e.id = d.event WHERE d.id IN (`+strings.Join(list, ",")+`) ORDER BY d.id`)
	return out, err
}

// replicaCheck is the verdict of the store checks.
type replicaCheck struct {
	applied
	Unacked int
	// Sessions checked, and those whose stored messages are not in the order sent (Disorder),
	// lack an acknowledged message (counted in NoEffect), or have gaps in seq.
	Sessions, Disorder, SeqGaps int
	// Stored but never acknowledged (the answer was lost): allowed, at least once.
	StoredUnacked int
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

// verifyReplicas checks, in PostgreSQL, every acknowledged delivery: stored once under its
// dedupe key, processed, applied once; and every live session's stored messages (in seq
// order) in the order they were sent.
func verifyReplicas(db *sql.DB, l replicaLoad, out []rOutcome) (replicaCheck, error) {
	c := replicaCheck{applied: applied{maxProblems: 5}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	byKey := map[string]int{}
	for i, call := range l.Calls {
		if prev, ok := byKey[call.DedupeKey]; ok {
			return c, fmt.Errorf("calls %d and %d share the dedupe key %s: the generated load is wrong", prev, i, call.DedupeKey)
		}
		byKey[call.DedupeKey] = i
	}
	st, err := readStoreState(ctx, db, postgresSamePayload)
	if err != nil {
		return c, err
	}
	callOfRow := map[int64]int{}
	for key, r := range st.inbox {
		if i, ok := byKey[key]; ok {
			callOfRow[r.id] = i
		}
	}
	if st.samePayload > 0 {
		c.Twice += st.samePayload
		c.problem("%d live messages stored twice with the same session and payload", st.samePayload)
	}

	acked := make([]bool, len(l.Calls))
	for i, o := range out {
		if !o.Sent {
			continue
		}
		call := l.Calls[i]
		if o.Status/100 != 2 {
			c.Unacked++
			if _, stored := st.inbox[call.DedupeKey]; stored {
				c.StoredUnacked++
			}
			continue
		}
		acked[i] = true
		c.judge(st, call, i < l.LiveN, func() (string, string) {
			return fmt.Sprintf("call %d (%s, acknowledged by replica %d as %s id %d)", i, call.DedupeKey, o.Replica+1, o.Ack, o.AckID), fmt.Sprintf(" (call %d)", i)
		})
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
	err = eachRow(ctx, db, "read live messages", func(rows *sql.Rows) error {
		var sid string
		var seq, inboxID int64
		if err := rows.Scan(&sid, &seq, &inboxID); err != nil {
			return err
		}
		s, ours := sessionOf[sid]
		if !ours {
			return nil // another load's session (the warm-up)
		}
		call, known := callOfRow[inboxID]
		if !known {
			call = -1
		}
		bySession[s] = append(bySession[s], stored{seq, call})
		return nil
	}, `SELECT session_id, seq, inbox_id FROM live_messages ORDER BY session_id, seq`)
	if err != nil {
		return c, err
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
	out := map[string]deliveryState{}
	err := eachRow(ctx, db, "read sink deliveries of "+sink, func(rows *sql.Rows) error {
		d := deliveryState{Sink: sink}
		if err := rows.Scan(&d.EventID, &d.Status, &d.Attempts, &d.DeliveredAt); err != nil {
			return err
		}
		out[d.EventID] = d
		return nil
	}, `SELECT e.event_id, d.status, d.attempts, d.delivered_at FROM sink_deliveries d
		JOIN events e ON e.id = d.event WHERE d.sink = $1`, sink)
	return out, err
}
