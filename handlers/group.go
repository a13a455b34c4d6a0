package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/plainjson"
	"github.com/scribehook/scribehook/store"
)

// Group apply.
//
// A partition's publish loop hands its handler every row it has queued (up to groupMax, never
// waiting for more) in one batch message. The handler applies consecutive live messages in one
// store transaction (Store.ApplyGroup: one COMMIT for the group), reading each session's record
// once and writing it once, and queueing the group's sink deliveries in one statement. Rows
// that need the service (a job callback, a webhook, a session's end_session: resolved before
// their transaction, so a slow service never holds the writer) are applied alone, as before.
//
// A group that fails is rolled back whole and its rows are applied again one by one with the
// per-row handler (rowChain): the failing row's attempt is recorded with its due time (retry.go)
// and the rows of its key after it wait for it, the rows before it keep their effect once
// (rolled back with the group, applied again alone). A row not due, or behind one of its key
// that is not, is never grouped: it is left pending. A stop ends the batch; its rows not yet
// applied stay pending for the next start.

const (
	// groupMax bounds the rows of one batch message, hence of one group transaction.
	groupMax = 256
	// metaInboxIDs lists a batch message's rows, comma-separated, in queue order.
	metaInboxIDs = "inbox_ids"
)

// persistBatch is the persist handler of a partition: it applies the rows of a batch message in
// order and returns the domain events they caused, which the router publishes on TopicEvents.
// It fails only when the pipeline stops (the rows left stay pending); a row's own failure is
// recorded by the per-row handler, for a retry at its due time.
func (p *Pipeline) persistBatch(msg *message.Message) ([]*message.Message, error) {
	ids, err := parseIDs(msg.Metadata.Get(metaInboxIDs))
	if err != nil {
		p.log.WithError(err).Warn("batch message without its rows")
		return nil, nil
	}
	var out []*message.Message
	_, err = p.applyRows(msg.Context(), ids, nil, &out, func(ctx context.Context, id int64, pre *readRow, out *[]*message.Message) error {
		if err := p.persistRow(ctx, id, pre, out); err != nil && !errors.Is(err, errRowStuck) {
			return err
		}
		// A row whose failure could not be recorded stays pending for the sweep; the partition
		// goes on, as the poison queue's handler lets it.
		return nil
	})
	if err != nil {
		if len(out) > 0 {
			// Committed before the stop: their events go out all the same.
			_ = p.events.Publish(TopicEvents, out...)
		}
		return nil, err
	}
	return out, nil
}

// one applies a single row with the per-row handler, adding its events to out. pre, when not
// nil, is the row as the batch read it, for the handler's first attempt.
type one func(ctx context.Context, id int64, pre *readRow, out *[]*message.Message) error

// readRow is an inbox row a batch has read, and its decoding when it is a live message that
// decoded (lr nil otherwise): the attempt of the per-row handler takes them instead of reading
// and decoding the row again. A later attempt (a retry, a group that failed) reads the row
// afresh, as the store may have changed meanwhile.
type readRow struct {
	row store.InboxRow
	lr  *liveRow
}

// applyRows applies the rows of ids in order: runs of live messages (not end_session) of
// rows already read, or read here in one query (rows nil), in group transactions, every other
// row through apply, with what was read of it. It returns how many rows it handled; an error
// of apply ends it.
func (p *Pipeline) applyRows(ctx context.Context, ids []int64, rows []store.InboxRow, out *[]*message.Message, apply one) (int, error) {
	if rows == nil && len(ids) > 1 {
		var err error
		if rows, err = p.cfg.Store.InboxRows(ctx, ids); err != nil {
			// Each row is read again by the per-row handler.
			p.log.WithError(err).Debug("reading a batch of inbox rows failed; applying them one by one")
			rows = nil
		}
	}
	byID := make(map[int64]int, len(rows))
	for i := range rows {
		byID[rows[i].ID] = i
	}
	handled := 0
	now := p.cfg.Now()
	for i := 0; i < len(ids); {
		if k, ok := byID[ids[i]]; ok && p.holds.waits(rows[k].PartitionKey, rows[k].ID, rows[k].NextAttempt, now) {
			// Not due, or behind a row of its key that is not: left pending (retry.go).
			i++
			continue
		}
		// The run of groupable rows starting at i.
		var (
			group []store.InboxRow
			lrs   []liveRow
			alone *readRow // the row at i as read, when it is not grouped
		)
		for j := i; j < len(ids); j++ {
			k, ok := byID[ids[j]]
			if !ok || (j > i && p.holds.waits(rows[k].PartitionKey, rows[k].ID, rows[k].NextAttempt, now)) {
				break
			}
			lr, decoded, ok := groupable(&rows[k])
			if !ok {
				if j == i {
					alone = &readRow{row: rows[k]}
					if decoded {
						alone.lr = &lr
					}
				}
				break
			}
			group, lrs = append(group, rows[k]), append(lrs, lr)
		}
		if len(group) == 1 {
			alone = &readRow{row: group[0], lr: &lrs[0]}
		}
		if len(group) < 2 {
			if err := apply(ctx, ids[i], alone, out); err != nil {
				return handled, err
			}
			handled++
			i++
			continue
		}
		if err := p.applyGroup(ctx, group, lrs, out); err != nil {
			if p.stopping() || ctx.Err() != nil {
				return handled, err
			}
			p.log.WithError(err).WithField("rows", len(group)).Debug("group apply failed; applying its rows one by one")
			for _, r := range group {
				// Read again: the rows are applied as if the group had not been tried.
				if err := apply(ctx, r.ID, nil, out); err != nil {
					return handled, err
				}
				handled++
			}
		} else {
			handled += len(group)
		}
		i += len(group)
	}
	return handled, nil
}

// groupable decodes a pending live message (decoded reports it did) and reports whether its
// applying needs nothing from the service (not an end_session); ok is false for any other
// row, and for one that does not decode (the per-row handler records its error).
func groupable(r *store.InboxRow) (lr liveRow, decoded, ok bool) {
	if r.Status != store.InboxPending || r.Kind != api.CallbackLiveMessage || r.MessageType == api.MessageEndSession {
		return liveRow{}, false, false
	}
	lr, err := decodeLive(*r)
	if err != nil {
		return liveRow{}, false, false
	}
	return lr, true, lr.msg.Type != "" && lr.msg.Type != api.MessageEndSession
}

// applyGroup applies rows (live messages, lrs decoded) in one store transaction, each row as
// applyLiveMessage would (liveTx), through a groupTx that reads each record once and writes it
// once, and queues every sink delivery of the group at the end.
func (p *Pipeline) applyGroup(ctx context.Context, rows []store.InboxRow, lrs []liveRow, out *[]*message.Message) (err error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HandlerTimeout)
	defer cancel()
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	start := time.Now()
	var (
		events  []api.Event
		asides  []string
		applied []int // indexes in rows
		spans   []trace.Span
	)
	if p.tracer.On() {
		// A span per row (tracing.go), ended with what the group did to it.
		spans = p.startGroup(ctx, rows)
		defer func() { endGroup(spans, applied, err) }()
	}
	err = p.cfg.Store.ApplyGroup(ctx, ids, func(ctx context.Context, tx store.Tx, marked []int64) error {
		events, asides, applied = events[:0], asides[:0], applied[:0]
		g := newGroupTx(tx)
		i := 0
		for _, id := range marked {
			for rows[i].ID != id {
				i++
			}
			var evs []api.Event
			var aside string
			rowCtx := ctx
			if spans != nil {
				// The row's events carry its own span.
				rowCtx = trace.ContextWithSpan(ctx, spans[i])
			}
			if err := p.liveTx(rows[i], &lrs[i], finalRecord{})(rowCtx, g, &evs, &aside); err != nil {
				return fmt.Errorf("inbox row %d: %w", id, err)
			}
			events = append(events, evs...)
			asides = append(asides, aside)
			applied = append(applied, i)
		}
		return g.flush(ctx)
	})
	if err != nil {
		return err
	}
	per := time.Since(start) / time.Duration(max(len(applied), 1))
	var last string
	for n, i := range applied {
		row := rows[i]
		p.release(row.PartitionKey, row.ID) // a row whose retry came due may be grouped
		p.countAside(asides[n], row)
		p.m.handled.WithLabelValues(string(row.Kind)).Inc()
		p.m.latency.Observe(per.Seconds())
		if row.JobID != last {
			p.feed.Publish(row.JobID)
			last = row.JobID
		}
	}
	if len(applied) > 0 && p.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		p.log.WithFields(logrus.Fields{"rows": len(applied), "first_inbox_id": rows[applied[0]].ID}).Debug("deliveries applied as a group")
	}
	p.wakeSinks(events)
	*out = append(*out, p.eventMessages(events, "inbox-"+strconv.FormatInt(ids[0], 10))...)
	return nil
}

// groupTx is the store.Tx of a group's rows: a record read once is kept, and written once by
// flush with every update of the group; the group's sink deliveries are queued, and its
// utterances indexed, by flush in one call each, in the order of the rows. Everything else
// goes to the transaction as it comes.
type groupTx struct {
	store.Tx
	recs   map[string]*groupRec
	dirty  []string // records put, in the order first put
	queued []store.SinkDelivery
	// received are the rows whose located messages are appended by the next flush, in one
	// statement; a message appended otherwise flushes them first, to keep the order.
	received []int64
	// indexed are the utterances the group's rows bring to the search index, added by flush in
	// one call: one statement and one pass of the text index for the group, not one per final.
	indexed []store.Utterance
}

type groupRec struct {
	rec   store.JobRecord
	found bool // false: the store has no record of the id (and none was put)
	dirty bool
}

func newGroupTx(tx store.Tx) *groupTx {
	return &groupTx{Tx: tx, recs: map[string]*groupRec{}}
}

func (g *groupTx) Job(ctx context.Context, id string) (store.JobRecord, error) {
	if r, ok := g.recs[id]; ok {
		if !r.found {
			return store.JobRecord{}, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
		}
		return r.rec, nil
	}
	rec, err := g.Tx.Job(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		g.recs[id] = &groupRec{}
	case err == nil:
		g.recs[id] = &groupRec{rec: rec, found: true}
	}
	return rec, err
}

// PutJob keeps the record of an id read in this group for flush; any other is written at once
// (its reads, if any, then come from the store).
func (g *groupTx) PutJob(ctx context.Context, rec store.JobRecord) error {
	r, ok := g.recs[rec.Job.ID]
	if !ok {
		return g.Tx.PutJob(ctx, rec)
	}
	if !r.dirty {
		g.dirty = append(g.dirty, rec.Job.ID)
	}
	r.rec, r.found, r.dirty = rec, true, true
	return nil
}

func (g *groupTx) AppendReceivedMessages(_ context.Context, ids []int64) error {
	g.received = append(g.received, ids...)
	return nil
}

func (g *groupTx) AppendLiveMessage(ctx context.Context, m store.LiveMessage) (int64, error) {
	if err := g.flushReceived(ctx); err != nil {
		return 0, err
	}
	return g.Tx.AppendLiveMessage(ctx, m)
}

func (g *groupTx) flushReceived(ctx context.Context) error {
	if len(g.received) == 0 {
		return nil
	}
	err := g.Tx.AppendReceivedMessages(ctx, g.received)
	g.received = g.received[:0]
	return err
}

func (g *groupTx) IndexUtterances(_ context.Context, us []store.Utterance) error {
	g.indexed = append(g.indexed, us...)
	return nil
}

func (g *groupTx) EnqueueSinkDeliveries(_ context.Context, ds []store.SinkDelivery) error {
	g.queued = append(g.queued, ds...)
	return nil
}

// flush appends the located messages, indexes the utterances, writes the records put and
// queues the sink deliveries.
func (g *groupTx) flush(ctx context.Context) error {
	if err := g.flushReceived(ctx); err != nil {
		return err
	}
	if len(g.indexed) > 0 {
		if err := g.Tx.IndexUtterances(ctx, g.indexed); err != nil {
			return err
		}
	}
	for _, id := range g.dirty {
		if err := g.Tx.PutJob(ctx, g.recs[id].rec); err != nil {
			return err
		}
	}
	if len(g.queued) > 0 {
		if err := g.Tx.EnqueueSinkDeliveries(ctx, g.queued); err != nil {
			return fmt.Errorf("queue sink deliveries: %w", err)
		}
	}
	return nil
}

// liveRow is a live callback's row decoded once for applying it: the message's head, its
// payload as received (stored and forwarded byte for byte, never re-encoded), its category.
type liveRow struct {
	// msg has the type and created_at; its data only for a post_final_transcript, whose
	// result the session's record takes.
	msg      api.LiveMessage
	payload  json.RawMessage
	category api.MessageCategory
	// located: the receiver located the message in the row's body, and the row's columns say
	// what applying it needs; it is stored as that span (Tx.AppendReceivedMessages).
	located bool
}

// liveBody is a live callback decoded for applying it: the payload's span and its head.
type liveBody struct {
	Payload livePayload `json:"payload"`
}

type livePayload struct {
	raw       json.RawMessage
	Type      api.MessageType
	CreatedAt api.Time
}

// UnmarshalJSON keeps b, a span of the row's body (the body outlives the row's applying and is
// never changed), and decodes the two members applying reads.
func (l *livePayload) UnmarshalJSON(b []byte) error {
	var head struct {
		Type      api.MessageType `json:"type"`
		CreatedAt api.Time        `json:"created_at"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	l.raw, l.Type, l.CreatedAt = b, head.Type, head.CreatedAt
	return nil
}

// decodeLive decodes a live callback's row: the body once, the payload's head once; the rest of
// the payload only for a post_final_transcript, and for the category of a row stored without
// one.
func decodeLive(row store.InboxRow) (liveRow, error) {
	if payload, ok := row.Message.Of(row.Body); ok && row.MessageType != "" && row.Category != "" {
		// Scanned at receipt: what applying needs is in the row's columns.
		lr := liveRow{
			msg:      api.LiveMessage{Type: row.MessageType, CreatedAt: api.Time{Time: row.MessageAt}},
			payload:  payload,
			category: row.Category,
			located:  true,
		}
		if lr.msg.Type == api.MessagePostFinalTranscript {
			if err := json.Unmarshal(payload, &lr.msg); err != nil {
				return liveRow{}, permanent(fmt.Errorf("decode live callback: %w", err))
			}
		}
		return lr, nil
	}
	var body liveBody
	if err := json.Unmarshal(row.Body, &body); err != nil {
		return liveRow{}, permanent(fmt.Errorf("decode live callback: %w", err))
	}
	lr := liveRow{
		msg:      api.LiveMessage{Type: body.Payload.Type, CreatedAt: body.Payload.CreatedAt},
		payload:  body.Payload.raw,
		category: row.Category,
	}
	if lr.msg.Type == api.MessagePostFinalTranscript {
		if err := json.Unmarshal(lr.payload, &lr.msg); err != nil {
			return liveRow{}, permanent(fmt.Errorf("decode live callback: %w", err))
		}
	}
	if lr.category == "" && len(lr.payload) > 0 {
		if head, err := api.DecodeLiveMessageHead(lr.payload); err == nil {
			lr.category, _ = head.Category()
		}
	}
	return lr, nil
}

// persistRow makes one attempt at one row with the per-row handler (rowChain), adding its events
// to out; pre, when not nil, is the row already read. A failed attempt was recorded in the row
// (retry.go): the row holds its key until it is due again, or is failed for good and holds
// nothing. One whose failure could not be recorded gives errRowStuck; an attempt interrupted by
// a stop gives its error, the row staying pending.
func (p *Pipeline) persistRow(ctx context.Context, id int64, pre *readRow, out *[]*message.Message) error {
	if pre != nil {
		ctx = context.WithValue(ctx, readRowKey{}, pre)
	}
	msg := message.NewMessageWithContext(ctx, watermill.NewUUID(), nil)
	msg.Metadata.Set(metaInboxID, strconv.FormatInt(id, 10))
	middleware.SetCorrelationID("inbox-"+strconv.FormatInt(id, 10), msg)
	events, err := p.rowChain(msg)
	if err == nil {
		*out = append(*out, events...)
		return nil
	}
	if errors.Is(err, errWaiting) {
		return nil
	}
	if p.stopping() || ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return err // interrupted: no fault of the row, which stays pending
	}
	var ae *attemptError
	if !errors.As(err, &ae) {
		// Not an attempt persist recorded (a panic, which the recoverer returns): recorded here.
		if p.failedOutside(context.WithoutCancel(ctx), id, err) {
			return errRowStuck
		}
		return nil
	}
	if ae.stuck {
		return errRowStuck
	}
	return nil
}

// readRowKey is the context key of the readRow a message's attempt takes.
type readRowKey struct{}

// readRowOf is the row of id as its batch read it, for the attempt of its handler: nil when
// none was read.
func readRowOf(ctx context.Context, id int64) *readRow {
	pre, _ := ctx.Value(readRowKey{}).(*readRow)
	if pre == nil || pre.row.ID != id {
		return nil
	}
	return pre
}

// eventMessages encodes events for TopicEvents, with the correlation id of the rows that caused
// them; none while nothing subscribes (a GoChannel drops what it publishes to no one).
func (p *Pipeline) eventMessages(events []api.Event, correlation string) []*message.Message {
	if !p.eventsWatched.Load() || len(events) == 0 {
		return nil
	}
	out := make([]*message.Message, 0, len(events))
	for _, ev := range events {
		b, err := plainjson.Marshal(ev)
		if err != nil {
			p.log.WithError(err).WithField("event_id", ev.ID).Warn("encode event")
			continue
		}
		m := message.NewMessage(ev.ID, b)
		m.Metadata.Set("type", ev.Type)
		m.Metadata.Set("job_id", ev.JobID)
		middleware.SetCorrelationID(correlation, m)
		out = append(out, m)
	}
	return out
}

func formatIDs(ids []int64) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}

func parseIDs(s string) ([]int64, error) {
	if s == "" {
		return nil, errors.New("no inbox ids")
	}
	parts := strings.Split(s, ",")
	ids := make([]int64, len(parts))
	for i, part := range parts {
		id, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("inbox id %q: %w", part, err)
		}
		ids[i] = id
	}
	return ids, nil
}
