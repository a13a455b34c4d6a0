package sqlcore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// replayPage is how many events of the window ReplaySink reads, matches and writes at a time
// (each write a transaction of its own): a window of 2-hour results is megabytes per event.
const replayPage = 200

// noUntil stands for a window without an end.
var noUntil = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// replayCandidates reads a page of the events first queued in [since, until), after an events
// id, with the sink's delivery of each (if any) and the order key of its deliveries. An event
// is in the window when a delivery of it was created in the window and none before: its first
// queue time, which a later backfill or replay (for another sink) does not move.
const replayCandidates = `SELECT e.id, e.event_id, e.body,
	(SELECT substr(i.body, i.payload_at + 1, i.payload_len) FROM inbox i WHERE i.id = e.inbox_id),
	e.inbox_id,
	(SELECT min(o.order_key) FROM sink_deliveries o WHERE o.event = e.id),
	d.id, d.status
FROM events e
LEFT JOIN sink_deliveries d ON d.event = e.id AND d.sink = ?1
WHERE e.id > ?2
	AND e.id IN (SELECT f.event FROM sink_deliveries f WHERE f.created_at >= ?3 AND f.created_at < ?4)
	AND NOT EXISTS (SELECT 1 FROM sink_deliveries x WHERE x.event = e.id AND x.created_at < ?3)
ORDER BY e.id LIMIT ?5`

// replayCandidate is one event of the window as replayCandidates reads it.
type replayCandidate struct {
	key      int64 // events.id
	eventID  string
	body     []byte // as stored (without the data of an event stored by reference)
	inbox    int64
	event    api.Event
	orderKey string
	delivery int64 // 0: the sink has none
	status   string
}

func scanReplayCandidate(sc Scanner) (replayCandidate, error) {
	var (
		c        replayCandidate
		body     string
		data     []byte
		inbox    sql.NullInt64
		orderKey sql.NullString
		delivery sql.NullInt64
		status   sql.NullString
	)
	if err := sc.Scan(&c.key, &c.eventID, &body, blob{&data, false}, &inbox, &orderKey, &delivery, &status); err != nil {
		return c, err
	}
	c.body = []byte(body)
	var se sinkEvent
	if err := json.Unmarshal(c.body, &se); err != nil {
		return c, fmt.Errorf("decode event %s: %w", c.eventID, err)
	}
	c.event, c.event.Data = se.Event, json.RawMessage(se.Data)
	if data != nil {
		c.event.Data = data
	}
	c.inbox, c.orderKey, c.delivery, c.status = inbox.Int64, orderKey.String, delivery.Int64, status.String
	return c, nil
}

// ReplaySink queues the window's events again for the sink, or for the first time (see
// store.SinkReplay). It reads a page of the window on the read side, matches it, and writes
// the page in one durable transaction (an operator's decision, which nothing derives again):
// a delivered or dead delivery back to queued by its id, only if it is not queued meanwhile,
// and the backfilled deliveries through the queue's own insert, which ignores a (sink, event)
// pair queued meanwhile and locks the events as an enqueue does.
func (c *Core) ReplaySink(ctx context.Context, r store.SinkReplayRequest) (store.SinkReplayResult, error) {
	var res store.SinkReplayResult
	if r.Sink == "" {
		return res, fmt.Errorf("replay sink: empty sink name")
	}
	until := r.Until
	if until.IsZero() {
		until = noUntil
	}
	if !until.After(r.Since) {
		return res, fmt.Errorf("replay sink %s: until %s is not after since %s", r.Sink, until.Format(time.RFC3339), r.Since.Format(time.RFC3339))
	}
	now := r.Now
	if now.IsZero() {
		now = c.now()
	}
	now = ceilMicro(now)
	query := c.d.Rebind(replayCandidates)
	var after int64
	for {
		page, err := Query(ctx, c.Reader.db, scanReplayCandidate, query, c.d.text(r.Sink), after,
			c.d.Time(r.Since), c.d.Time(until), c.d.Limit(replayPage))
		if err != nil {
			return res, fmt.Errorf("replay sink %s: read the window: %w", r.Sink, err)
		}
		if len(page) == 0 {
			return res, nil
		}
		after = page[len(page)-1].key
		var requeue []replayCandidate
		var events []SinkEvent
		var rows []SinkRow
		var backfill []string
		for i := range page {
			p := &page[i]
			switch {
			case r.Match != nil && !r.Match(&p.event):
				res.Skipped++
			case p.delivery == 0:
				if r.Backfill == nil || !r.Backfill(&p.event) {
					res.Skipped++
					continue
				}
				rows = append(rows, SinkRow{Sink: c.d.text(r.Sink), OrderKey: p.orderKey, Event: len(events), Next: now, Created: now})
				events = append(events, SinkEvent{ID: p.eventID, Body: p.body, Arg: c.d.JSON(p.body), Inbox: p.inbox})
				backfill = append(backfill, p.eventID)
			case p.status == sinkQueued:
				res.AlreadyQueued = append(res.AlreadyQueued, p.eventID)
			default:
				requeue = append(requeue, *p)
			}
		}
		if r.DryRun {
			for _, p := range requeue {
				res.Requeued = append(res.Requeued, p.eventID)
			}
			res.Backfilled = append(res.Backfilled, backfill...)
			continue
		}
		if len(requeue) == 0 && len(rows) == 0 {
			continue
		}
		var requeued, queued []string
		err = c.inTx(ctx, "replay sink", Durable, func() string { return "replay sink " + r.Sink }, func(t Tx) error {
			requeued, queued = requeued[:0], queued[:0]
			for _, p := range requeue {
				n, err := t.Exec(ctx, StSinkRequeue, c.d.Time(now), p.delivery)
				if err != nil {
					return fmt.Errorf("replay sink %s: requeue %s: %w", r.Sink, p.eventID, err)
				}
				if OneRow(n) == nil {
					requeued = append(requeued, p.eventID)
				} else {
					// Queued meanwhile (replayed by another call), or pruned.
					queued = append(queued, p.eventID)
				}
			}
			if len(rows) > 0 {
				if err := c.w.InsertSinkRows(ctx, t, events, rows); err != nil {
					return fmt.Errorf("replay sink %s: backfill: %w", r.Sink, err)
				}
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		res.Requeued = append(res.Requeued, requeued...)
		res.AlreadyQueued = append(res.AlreadyQueued, queued...)
		res.Backfilled = append(res.Backfilled, backfill...)
	}
}

// historyPrefix is how much of an event's JSON SinkHistory reads for its type: api.EncodeEvent
// writes the id and the type first.
const historyPrefix = 256

// SinkHistory lists the sink's deliveries newest first by id (the index sink_deliveries_sink),
// with the event's id and type but not its data.
func (r *Reader) SinkHistory(ctx context.Context, q store.SinkHistoryQuery) ([]store.SinkHistoryItem, error) {
	if q.Sink == "" {
		return nil, fmt.Errorf("sink history: empty sink name")
	}
	query := fmt.Sprintf(`SELECT id, sink, (SELECT e.event_id FROM events e WHERE e.id = sink_deliveries.event),
	(SELECT substr(e.body, 1, %d) FROM events e WHERE e.id = sink_deliveries.event),
	order_key, status, attempts, last_error, created_at, delivered_at, failed_at
	FROM sink_deliveries WHERE sink = ?`, historyPrefix)
	args := []any{r.d.text(q.Sink)}
	switch q.Status {
	case "":
	case "queued", "delivered", "dead":
		query += ` AND status = ?`
		args = append(args, q.Status)
	default:
		return nil, fmt.Errorf("sink history of %s: status %q is not queued, delivered or dead", q.Sink, q.Status)
	}
	if !q.Since.IsZero() {
		query += ` AND created_at >= ?`
		args = append(args, r.d.Time(q.Since))
	}
	if q.Before > 0 {
		query += ` AND id < ?`
		args = append(args, q.Before)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	query += ` ORDER BY id DESC LIMIT ?`
	args = append(args, r.d.Limit(limit))
	out, err := Query(ctx, r.db, scanHistoryItem, r.d.Rebind(query), args...)
	if err != nil {
		return nil, fmt.Errorf("sink history of %s: %w", q.Sink, err)
	}
	return out, nil
}

func scanHistoryItem(sc Scanner) (store.SinkHistoryItem, error) {
	var (
		it                         store.SinkHistoryItem
		eventID, head              sql.NullString
		created, delivered, failed Time
	)
	if err := sc.Scan(&it.ID, &it.Sink, &eventID, &head, &it.JobID, &it.Status, &it.Attempts, &it.LastError,
		&created, &delivered, &failed); err != nil {
		return it, err
	}
	it.EventID, it.EventType = eventID.String, eventType([]byte(head.String))
	it.CreatedAt, it.DeliveredAt, it.FailedAt = created.T, delivered.T, failed.T
	return it, nil
}

// eventType reads the "type" of an event from the start of its JSON ("" when the start does
// not hold it).
func eventType(head []byte) string {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		val, err := dec.Token()
		if err != nil {
			return ""
		}
		if key == "type" {
			s, _ := val.(string)
			return s
		}
		if _, ok := val.(json.Delim); ok {
			return "" // an object or array before the type: not api.EncodeEvent's order
		}
	}
	return ""
}
