package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/plainjson"
	"github.com/scribehook/scribehook/store"
)

// eventNamespace derives stable event ids from dedupe keys: the same delivery always yields
// the same event id, across retries, restarts and replays.
var eventNamespace = uuid.MustParse("5b1f1d4e-7b0c-4d52-9a43-3a0e1c0f9e21")

// persist makes one attempt at applying an inbox row to the store, exactly once, and returns
// the domain events it caused, which the router publishes on TopicEvents. A failed attempt is
// recorded in the row (failed, retry.go). A row that is not due, or waits behind an earlier row
// of its key, is left alone: errWaiting. A failed row waits for a replay.
func (p *Pipeline) persist(msg *message.Message) ([]*message.Message, error) {
	ctx := msg.Context()
	id, err := strconv.ParseInt(msg.Metadata.Get(metaInboxID), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("inbox message without a row id: %w", err)
	}
	var (
		row store.InboxRow
		lr  *liveRow
	)
	if pre := readRowOf(ctx, id); pre != nil {
		row, lr = pre.row, pre.lr
	} else {
		row, err = p.cfg.Store.InboxRow(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			// Nothing to process, now or on a retry.
			p.log.WithField("inbox_id", id).Warn("notified inbox row does not exist")
			return nil, nil
		}
		if err != nil {
			return nil, p.failed(ctx, store.InboxRow{ID: id}, fmt.Errorf("read inbox row %d: %w", id, err))
		}
	}
	switch row.Status {
	case store.InboxDone:
		p.release(row.PartitionKey, row.ID)
		return nil, nil
	case store.InboxFailed:
		return nil, nil
	}
	if p.holds.waits(row.PartitionKey, row.ID, row.NextAttempt, p.cfg.Now()) {
		return nil, errWaiting
	}
	var span trace.Span // nil: tracing is off (tracing.go)
	if p.tracer.On() {
		ctx, span = p.startApply(ctx, row, row.Attempts+1, 1)
		defer span.End()
	}
	log := p.logFor(ctx).WithFields(logrus.Fields{"inbox_id": id, "job_id": row.JobID, "kind": row.Kind})
	start := time.Now()
	events, err := p.apply(ctx, row, lr)
	if span != nil {
		applied(span, events, err)
	}
	if errors.Is(err, store.ErrAlreadyApplied) {
		p.release(row.PartitionKey, row.ID)
		return nil, nil
	}
	if err != nil {
		return nil, p.failed(ctx, row, err)
	}
	p.release(row.PartitionKey, row.ID)
	p.m.handled.WithLabelValues(string(row.Kind)).Inc()
	p.m.latency.Observe(time.Since(start).Seconds())
	log.Debug("delivery applied")
	return p.eventMessages(events, middleware.MessageCorrelationID(msg)), nil
}

// poisoned handles what the poison queue gives: a batch whose handler itself failed (a panic
// outside its rows' attempts), whose rows were not marked and stay pending for the sweep, or a
// row's message, whose failure is recorded as an attempt's. It never fails: a Nack would
// redeliver at once, in a tight loop.
func (p *Pipeline) poisoned(msg *message.Message) error {
	reason := msg.Metadata.Get(middleware.ReasonForPoisonedKey)
	id, err := strconv.ParseInt(msg.Metadata.Get(metaInboxID), 10, 64)
	if err != nil {
		p.log.WithFields(logrus.Fields{"inbox_ids": msg.Metadata.Get(metaInboxIDs),
			"reason": reason}).Error("batch of deliveries failed; its rows wait for the sweep")
		return nil
	}
	p.failedOutside(context.WithoutCancel(msg.Context()), id, errors.New(reason))
	return nil
}

// failedOutside records err as a failed attempt of row id, an error that persist did not see
// (a panic the recoverer turned into an error): it reads the row for its attempts and key. It
// reports whether the row is stuck (its failure could not be recorded).
func (p *Pipeline) failedOutside(ctx context.Context, id int64, err error) (stuck bool) {
	row, rerr := p.cfg.Store.InboxRow(ctx, id)
	switch {
	case errors.Is(rerr, store.ErrNotFound):
		return false
	case rerr != nil:
		row = store.InboxRow{ID: id}
	case row.Status != store.InboxPending:
		return false
	}
	var ae *attemptError
	return errors.As(p.failed(ctx, row, err), &ae) && ae.stuck
}

// apply turns one row into its effects; lr is a live message's row already decoded (nil:
// decode it). Network work (resolving through the service) happens before the store
// transaction, so a slow service never holds the writer.
func (p *Pipeline) apply(ctx context.Context, row store.InboxRow, lr *liveRow) ([]api.Event, error) {
	switch row.Kind {
	case api.CallbackJobSuccess, api.CallbackJobError:
		return p.applyJobCallback(ctx, row)
	case api.CallbackLiveMessage:
		return p.applyLiveMessage(ctx, row, lr)
	case api.CallbackAccountWebhook:
		return p.applyWebhook(ctx, row)
	}
	return nil, permanent(fmt.Errorf("inbox row %d has unknown kind %q", row.ID, row.Kind))
}

func (p *Pipeline) applyJobCallback(ctx context.Context, row store.InboxRow) ([]api.Event, error) {
	cb, err := decodeJobCallback(row.Body)
	if err != nil {
		return nil, err
	}
	// The callback lacks the record's own fields; the service's record is the truth when it
	// can be read, the callback otherwise.
	// The id the token was checked against (the classification's) is the one applied.
	id := row.JobID
	if done, err := p.finalAlready(ctx, row); done || err != nil {
		return nil, err
	}
	fetched, resolution := p.resolve(ctx, id, api.KindPreRecorded)
	var subs *renderedSubtitles
	if cb.Error == nil {
		var err error
		if subs, err = p.subtitlesFor(ctx, id, fetched, json.RawMessage(cb.Payload), cb.CustomMetadata); err != nil {
			return nil, err
		}
	}
	return p.commit(ctx, row, func(ctx context.Context, tx store.Tx, events *[]api.Event, aside *string) error {
		rec, closed, err := p.openRecord(ctx, tx, row, id, api.KindPreRecorded, aside)
		if closed || err != nil {
			return err
		}
		if fetched != nil && fetched.Status.Final() {
			rec.Job = *fetched
		} else {
			fromCallback(&rec.Job, &cb, row.ReceivedAt)
		}
		if cb.Error != nil {
			rec.Local.ErrorMessage = cb.Error.Message
		}
		rec.Local.Resolution = resolution
		rec.Local.Final = row.Event
		p.touch(&rec, row)
		reconciled := reconciledRow(&rec, row, true)
		// One encoding of the record for the store and the job event: its result is the
		// callback's bytes (or the service record's), spliced in, not re-encoded.
		if rec.Encoded, err = api.EncodeJob(&rec.Job, false); err != nil {
			return fmt.Errorf("encode job %s: %w", id, err)
		}
		if err := tx.PutJob(ctx, rec); err != nil {
			return err
		}
		if err := indexResult(ctx, tx, rec.Job); err != nil {
			return err
		}
		*events = []api.Event{encodedJobEvent(row, rec.Job, rec.Encoded)}
		if reconciled != nil {
			*events = append(*events, *reconciled)
		}
		return p.outbox(ctx, tx, row, rec.Job, events, subs)
	})
}

// jobCallback is what the pipeline reads of a pre-recorded job's callback (api.JobCallback's
// members): its result stays the raw bytes of the stored body.
type jobCallback struct {
	Payload        inPlace            `json:"payload"`
	Error          *api.CallbackError `json:"error"`
	CustomMetadata json.RawMessage    `json:"custom_metadata"`
}

// decodeJobCallback decodes body (an inbox row's, which nothing changes afterwards): the
// payload is left in it, a 2-hour result is not copied.
func decodeJobCallback(body []byte) (jobCallback, error) {
	var cb jobCallback
	if err := json.Unmarshal(body, &cb); err != nil {
		return cb, permanent(fmt.Errorf("decode job callback: %w", err))
	}
	if string(cb.Payload) == "null" {
		cb.Payload = nil
	}
	return cb, nil
}

// inPlace keeps the bytes encoding/json hands its UnmarshalJSON: a slice of the decoded text,
// capped so that an append copies.
type inPlace []byte

func (p *inPlace) UnmarshalJSON(b []byte) error {
	*p = b[:len(b):len(b)]
	return nil
}

// fromCallback fills a record from the callback alone.
func fromCallback(j *api.Job, cb *jobCallback, received time.Time) {
	if len(cb.CustomMetadata) > 0 {
		j.CustomMetadata = cb.CustomMetadata
	}
	if j.CompletedAt == nil {
		j.CompletedAt = api.PtrTime(received)
	}
	if j.Version == 0 {
		j.Version = api.RecordVersion
	}
	if cb.Error != nil {
		j.Status = api.StatusError
		code := cb.Error.Code
		j.ErrorCode = &code
		j.Result = nil
		return
	}
	j.Status = api.StatusDone
	j.ErrorCode = nil
	j.Result = json.RawMessage(cb.Payload)
}

func (p *Pipeline) applyLiveMessage(ctx context.Context, row store.InboxRow, lr *liveRow) ([]api.Event, error) {
	if lr == nil {
		decoded, err := decodeLive(row)
		if err != nil {
			return nil, err
		}
		lr = &decoded
	}
	// The session's final record comes from the service once the session has ended.
	var (
		fin finalRecord
		err error
	)
	if lr.msg.Type == api.MessageEndSession {
		if done, err := p.finalAlready(ctx, row); done || err != nil {
			return nil, err
		}
		if fin.fetched, fin.resolution, fin.subs, err = p.resolveFinal(ctx, row.JobID, api.KindLive); err != nil {
			return nil, err
		}
	}
	events, err := p.commit(ctx, row, p.liveTx(row, lr, fin))
	if err != nil {
		return nil, err
	}
	p.feed.Publish(row.JobID)
	return events, nil
}

// finalRecord is what a session's end_session brings from outside the store transaction: the
// service's record (fetched, or why not: resolution) and its rendered subtitles.
type finalRecord struct {
	fetched    *api.Job
	resolution string
	subs       *renderedSubtitles
}

// liveTx is the transaction of one live row (commit's fn): the message appended, the session's
// record moved along, the events queued. A group of live rows (applyGroup) runs it once per
// row, in the group's transaction.
func (p *Pipeline) liveTx(row store.InboxRow, lr *liveRow, fin finalRecord) func(ctx context.Context, tx store.Tx, events *[]api.Event, aside *string) error {
	id, msg := row.JobID, &lr.msg
	return func(ctx context.Context, tx store.Tx, events *[]api.Event, aside *string) error {
		rec, err := loadOrNew(ctx, tx, id, api.KindLive, row.ReceivedAt)
		if err != nil {
			return err
		}
		if final := finalOf(rec); final != "" {
			if !lateMessage(rec, msg, row) {
				*aside, err = p.setAside(ctx, tx, row, final)
				return err
			}
			*aside = asideLate
		}
		if lr.located {
			// Stored once: the message is the span of the row the receiver located it in.
			if err := tx.AppendReceivedMessages(ctx, []int64{row.ID}); err != nil {
				return err
			}
		} else if _, err := tx.AppendLiveMessage(ctx, store.LiveMessage{
			SessionID:  id,
			Type:       msg.Type,
			Category:   lr.category,
			CreatedAt:  msg.CreatedAt.Time,
			ReceivedAt: row.ReceivedAt,
			InboxID:    row.ID,
			Payload:    lr.payload,
		}); err != nil {
			return err
		}
		if searchable(lr) {
			if err := tx.IndexUtterances(ctx, store.LiveUtterances(id, row.ID, lr.payload)); err != nil {
				return err
			}
		}
		liveEvent := api.Event{
			ID:             eventID(row.DedupeKey, api.LiveEvent(msg.Type)),
			Type:           api.LiveEvent(msg.Type),
			CreatedAt:      api.NewTime(row.ReceivedAt),
			JobID:          id,
			Kind:           api.KindLive,
			Category:       lr.category,
			CustomMetadata: rec.Job.CustomMetadata,
			Data:           lr.payload,
		}
		*events = []api.Event{liveEvent}
		if *aside == asideLate {
			// Stored and forwarded, so nothing the session said is lost; the ended session's
			// record stays as its end left it, but for the count of what reconciliation added.
			if row.Route == store.RouteReconcile {
				if ev := reconciledRow(&rec, row, false); ev != nil {
					*events = append(*events, *ev)
				}
				rec.Local.UpdatedAt = p.cfg.Now().UTC()
				if err := tx.PutJob(ctx, rec); err != nil {
					return err
				}
			}
			return p.outbox(ctx, tx, row, rec.Job, events, nil)
		}
		updateLiveRecord(&rec.Job, msg, row.ReceivedAt)
		if msg.Type == api.MessageEndSession {
			rec.Local.Final = row.Event
			rec.Local.EndedAt = msg.CreatedAt.Time
		}
		if fin.fetched != nil && fin.fetched.Status.Final() {
			rec.Job = *fin.fetched
		}
		if fin.resolution != "" {
			rec.Local.Resolution = fin.resolution
		}
		p.touch(&rec, row)
		reconciled := reconciledRow(&rec, row, msg.Type == api.MessageEndSession)
		if err := tx.PutJob(ctx, rec); err != nil {
			return err
		}
		(*events)[0].CustomMetadata = rec.Job.CustomMetadata
		if msg.Type == api.MessageEndSession && rec.Job.Status.Final() {
			*events = append(*events, jobEvent(row, rec.Job))
		}
		if reconciled != nil {
			*events = append(*events, *reconciled)
		}
		return p.outbox(ctx, tx, row, rec.Job, events, fin.subs)
	}
}

// updateLiveRecord moves a live session's record along with its lifecycle messages, and takes
// its result from post_final_transcript.
func updateLiveRecord(j *api.Job, m *api.LiveMessage, received time.Time) {
	switch m.Type {
	case api.MessageStartSession, api.MessageStartRecording:
		if j.Status == api.StatusQueued || j.Status == "" {
			j.Status = api.StatusProcessing
		}
	case api.MessagePostFinalTranscript:
		var r api.Result
		if m.DecodeData(&r) == nil {
			r.Messages = nil
			j.Result = api.RawResult(&r)
		}
	case api.MessageEndSession:
		j.Status = api.StatusDone
		if j.CompletedAt == nil {
			j.CompletedAt = api.PtrTime(received)
		}
	}
	if j.Status == "" {
		j.Status = api.StatusProcessing
	}
}

func (p *Pipeline) applyWebhook(ctx context.Context, row store.InboxRow) ([]api.Event, error) {
	var wh api.AccountWebhook
	if err := json.Unmarshal(row.Body, &wh); err != nil {
		return nil, permanent(fmt.Errorf("decode account webhook: %w", err))
	}
	kind := api.KindPreRecorded
	if len(wh.Event) > 5 && wh.Event[:5] == "live." {
		kind = api.KindLive
	}
	id := row.JobID
	if done, err := p.finalAlready(ctx, row); done || err != nil {
		return nil, err
	}
	fetched, resolution, subs, err := p.resolveFinal(ctx, id, kind)
	if err != nil {
		return nil, err
	}
	return p.commit(ctx, row, func(ctx context.Context, tx store.Tx, events *[]api.Event, aside *string) error {
		rec, closed, err := p.openRecord(ctx, tx, row, id, kind, aside)
		if closed || err != nil {
			return err
		}
		if rec.Local.Source == "" || rec.Local.Source == "callback" {
			rec.Local.Source = "webhook"
		}
		if fetched != nil {
			rec.Job = *fetched
		} else {
			// Without the service's record, the event itself says what happened.
			switch wh.Event {
			case api.EventTranscriptionSuccess:
				rec.Job.Status = api.StatusDone
			case api.EventTranscriptionError:
				rec.Job.Status = api.StatusError
			case api.EventLiveEndSession:
				rec.Job.Status = api.StatusDone
			case api.EventTranscriptionCreated:
				if rec.Job.Status == "" {
					rec.Job.Status = api.StatusQueued
				}
			default:
				if rec.Job.Status == "" || rec.Job.Status == api.StatusQueued {
					rec.Job.Status = api.StatusProcessing
				}
			}
		}
		rec.Local.Resolution = resolution
		if kind == api.KindPreRecorded && fetched != nil && fetched.Status.Final() {
			// The service's own final record: the job's callback, if it comes, repeats it. A
			// webhook left unresolved (no record, or not final yet) does not close the job: its
			// callback still brings the result. A live session closes on its own end_session
			// message only, which comes after its last messages.
			rec.Local.Final = wh.Event
		}
		p.touch(&rec, row)
		if err := tx.PutJob(ctx, rec); err != nil {
			return err
		}
		if kind == api.KindPreRecorded && rec.Local.Final != "" {
			if err := indexResult(ctx, tx, rec.Job); err != nil {
				return err
			}
		}
		switch wh.Event {
		case api.EventTranscriptionSuccess, api.EventTranscriptionError, api.EventLiveEndSession:
			if rec.Job.Status.Final() {
				*events = append(*events, jobEvent(row, rec.Job))
			}
		case api.EventTranscriptionCreated:
			*events = append(*events, newEvent(row, api.EventJobCreated, rec.Job))
		}
		return p.outbox(ctx, tx, row, rec.Job, events, subs)
	})
}

// commit applies row in one store transaction: fn writes the row's effects and the events they
// raise (queued through p.outbox), or sets the row aside (aside says why). A row set aside is
// then counted, and the sinks are woken for the events. fn starts with no events and no aside.
func (p *Pipeline) commit(ctx context.Context, row store.InboxRow, fn func(ctx context.Context, tx store.Tx, events *[]api.Event, aside *string) error) ([]api.Event, error) {
	var events []api.Event
	var aside string
	err := p.cfg.Store.Apply(ctx, row.ID, func(ctx context.Context, tx store.Tx) error {
		events, aside = nil, ""
		return fn(ctx, tx, &events, &aside)
	})
	if err != nil {
		return nil, err
	}
	p.countAside(aside, row)
	p.wakeSinks(events)
	return events, nil
}

// resolveFinal reads the record of id from the service (resolve), and renders its subtitles
// when it is done, before the store transaction.
func (p *Pipeline) resolveFinal(ctx context.Context, id string, kind api.JobKind) (*api.Job, string, *renderedSubtitles, error) {
	fetched, resolution := p.resolve(ctx, id, kind)
	if fetched == nil || fetched.Status != api.StatusDone {
		return fetched, resolution, nil, nil
	}
	subs, err := p.subtitlesFor(ctx, id, fetched, nil, nil)
	if err != nil {
		return nil, "", nil, err
	}
	return fetched, resolution, subs, nil
}

// finalOf is the event that made rec final, or "" while later deliveries may still change it.
func finalOf(rec store.JobRecord) string {
	if rec.Local.Final != "" {
		return rec.Local.Final
	}
	// A record stored before Local.Final existed: a pre-recorded job that a delivery closed
	// with its outcome (a result, or an error code; an unresolved webhook has neither).
	if rec.Job.Kind == api.KindPreRecorded && rec.Local.Deliveries > 0 {
		switch {
		case rec.Job.Status == api.StatusDone && len(rec.Job.Result) > 0:
			return api.EventTranscriptionSuccess
		case rec.Job.Status == api.StatusError && rec.Job.ErrorCode != nil:
			return api.EventTranscriptionError
		}
	}
	return ""
}

// setAside is what a delivery about a job already final does: nothing to the record, no event.
// One that repeats the final outcome (the account webhook and the job's own callback both
// announcing success) is a duplicate in effect, an account webhook of an earlier step is late;
// any other (an error after success, a message after end_session) is kept in quarantine with
// the reason, so an operator sees it. The row is marked done either way: the service has its
// 2xx and must not retry.
func (p *Pipeline) setAside(ctx context.Context, tx store.Tx, row store.InboxRow, final string) (string, error) {
	switch {
	case row.Event == final:
		return asideDuplicate, nil
	case row.Kind == api.CallbackAccountWebhook && !finalEvents[row.Event]:
		// An account webhook of an earlier step (transcription.created, live.start_session…)
		// delivered late: the service does not order its webhooks. Nothing to keep.
		return asideLate, nil
	}
	reason := fmt.Sprintf("%s %s is final (%s applied): a later %s changes nothing", kindNoun(row), row.JobID, final, row.Event)
	if err := tx.Quarantine(ctx, row, reason); err != nil {
		return "", err
	}
	return asideQuarantined, nil
}

// Outcomes of a delivery about a job already final (scribehook_deliveries_after_final_total).
const (
	asideDuplicate   = "duplicate"
	asideLate        = "late"
	asideQuarantined = "quarantined"
)

// countAside counts what setAside decided, once its transaction has committed (a rolled-back
// attempt is retried and must not count twice).
func (p *Pipeline) countAside(outcome string, row store.InboxRow) {
	if row.Route == store.RouteReconcile && (outcome == "" || outcome == asideLate) {
		p.m.reconciled.WithLabelValues(kindNoun(row)).Inc()
	}
	if outcome == "" {
		return
	}
	p.m.afterFinal.WithLabelValues(outcome).Inc()
	if outcome == asideQuarantined {
		p.log.WithFields(logrus.Fields{"inbox_id": row.ID, "job_id": row.JobID, "event": row.Event}).Warn("delivery after the final one quarantined")
	}
}

// lateGrace bounds how long after a session's end a message of the session may still arrive:
// the service retries failed callbacks and does not order them, so end_session can be applied
// before an earlier message; a token cannot add to a session that ended long ago.
const lateGrace = time.Hour

// lateMessage reports whether msg is one of an ended session's own messages delivered late:
// created before its end_session and received within lateGrace of it, or fetched from the
// session's own record by the reconciler, whatever the time. Anything else after the end is
// not the session's.
func lateMessage(rec store.JobRecord, msg *api.LiveMessage, row store.InboxRow) bool {
	end := rec.Local.EndedAt
	return !end.IsZero() && msg.Type != api.MessageEndSession && !msg.CreatedAt.Time.After(end) &&
		(!row.ReceivedAt.After(end.Add(lateGrace)) || row.Route == store.RouteReconcile)
}

// finalEvents are the events that end a job or a session.
var finalEvents = map[string]bool{
	api.EventTranscriptionSuccess: true, api.EventTranscriptionError: true, api.EventLiveEndSession: true,
}

func kindNoun(row store.InboxRow) string {
	if row.Kind == api.CallbackLiveMessage || strings.HasPrefix(row.Event, "live.") {
		return "session"
	}
	return "job"
}

// finalAlready sets a row aside without the service's record or subtitles when its job is final
// already: the work before Apply (a request to the service, rendering) is skipped. Apply checks
// again in its transaction, which decides.
func (p *Pipeline) finalAlready(ctx context.Context, row store.InboxRow) (bool, error) {
	rec, err := p.cfg.Store.GetJob(ctx, row.JobID)
	if err != nil || finalOf(rec) == "" {
		return false, nil // unknown, unreadable or open: Apply decides
	}
	var aside string
	err = p.cfg.Store.Apply(ctx, row.ID, func(ctx context.Context, tx store.Tx) (err error) {
		rec, err := tx.Job(ctx, row.JobID)
		if err != nil {
			return err
		}
		final := finalOf(rec)
		if final == "" {
			return errReopened
		}
		aside, err = p.setAside(ctx, tx, row, final)
		return err
	})
	switch {
	case errors.Is(err, errReopened):
		return false, nil
	case errors.Is(err, store.ErrAlreadyApplied):
		return true, nil
	case err != nil:
		return false, err
	}
	p.countAside(aside, row)
	return true, nil
}

// errReopened rolls back finalAlready's transaction: not expected (a final record stays final).
var errReopened = errors.New("job record is no longer final")

// resolve reads the job from the service. Failing to read it is not a failure of the delivery:
// the record keeps what the delivery carried, with the reason noted.
func (p *Pipeline) resolve(ctx context.Context, id string, kind api.JobKind) (*api.Job, string) {
	if p.cfg.Resolver == nil {
		return nil, "not resolved: no service API key configured; the record holds what the delivery carried"
	}
	job, err := p.cfg.Resolver.GetJob(ctx, id, kind)
	if err != nil {
		p.logFor(ctx).WithError(err).WithField("job_id", id).Warn("could not read the job from the service")
		return nil, "not resolved: " + err.Error()
	}
	return &job, ""
}

// openRecord loads the record of id for row in tx (a new one when unknown). closed reports a
// record that already has its final delivery: row has then been set aside, aside saying why.
func (p *Pipeline) openRecord(ctx context.Context, tx store.Tx, row store.InboxRow, id string, kind api.JobKind, aside *string) (rec store.JobRecord, closed bool, err error) {
	rec, err = loadOrNew(ctx, tx, id, kind, row.ReceivedAt)
	if err != nil {
		return rec, false, err
	}
	if final := finalOf(rec); final != "" {
		*aside, err = p.setAside(ctx, tx, row, final)
		return rec, true, err
	}
	return rec, false, nil
}

func loadOrNew(ctx context.Context, tx store.Tx, id string, kind api.JobKind, received time.Time) (store.JobRecord, error) {
	rec, err := tx.Job(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.JobRecord{
			Job:   api.Job{ID: id, Kind: kind, Version: api.RecordVersion, CreatedAt: api.NewTime(received)},
			Local: store.Local{Source: "callback"},
		}, nil
	}
	if err != nil {
		return store.JobRecord{}, fmt.Errorf("read job %s: %w", id, err)
	}
	return rec, nil
}

// reconciledRow notes on rec a row the reconciler fetched in place of a lost callback (and
// nothing for any other row): one more reconciled delivery, and the source "reconcile" when
// it brought the job's end (final). Its job.reconciled event is returned, to be queued in the
// same transaction, so that it goes out exactly when what it reports is applied; every row of
// one check gives the same event id (store.HeaderReconciled), which the queue takes once.
func reconciledRow(rec *store.JobRecord, row store.InboxRow, final bool) *api.Event {
	if row.Route != store.RouteReconcile {
		return nil
	}
	rec.Local.Reconciled++
	if final {
		rec.Local.Source = store.SourceReconcile
	}
	n, check, ok := store.ParseReconciledMark(row.Headers[store.HeaderReconciled])
	if !ok {
		return nil
	}
	data, err := plainjson.Marshal(api.ReconciledData{JobID: rec.Job.ID, Kind: rec.Job.Kind, Status: rec.Job.Status, Deliveries: n})
	if err != nil {
		return nil // not reached: plain fields
	}
	return &api.Event{
		ID: eventID("reconciled:"+rec.Job.ID+":"+check, api.EventJobReconciled), Type: api.EventJobReconciled,
		CreatedAt: api.NewTime(row.ReceivedAt), JobID: rec.Job.ID, Kind: rec.Job.Kind,
		CustomMetadata: rec.Job.CustomMetadata, Data: data,
	}
}

// touch counts the delivery on the record.
func (p *Pipeline) touch(rec *store.JobRecord, row store.InboxRow) {
	if rec.Local.ReceivedAt.IsZero() {
		rec.Local.ReceivedAt = row.ReceivedAt
	}
	rec.Local.UpdatedAt = p.cfg.Now().UTC()
	rec.Local.Deliveries++
}

func jobEvent(row store.InboxRow, j api.Job) api.Event {
	if j.Status == api.StatusError {
		return newEvent(row, api.EventJobFailed, j)
	}
	return newEvent(row, api.EventJobSucceeded, j)
}

func newEvent(row store.InboxRow, typ string, j api.Job) api.Event {
	data, _ := api.EncodeJob(&j, false)
	return eventOf(row, typ, j, data)
}

// encodedJobEvent is jobEvent of a record already encoded (api.EncodeJob).
func encodedJobEvent(row store.InboxRow, j api.Job, data []byte) api.Event {
	if j.Status == api.StatusError {
		return eventOf(row, api.EventJobFailed, j, data)
	}
	return eventOf(row, api.EventJobSucceeded, j, data)
}

// eventOf is the event typ about job j, whose encoded record is data.
func eventOf(row store.InboxRow, typ string, j api.Job, data []byte) api.Event {
	return api.Event{
		ID:             eventID(row.DedupeKey, typ),
		Type:           typ,
		CreatedAt:      api.NewTime(row.ReceivedAt),
		JobID:          j.ID,
		Kind:           j.Kind,
		CustomMetadata: j.CustomMetadata,
		Data:           data,
	}
}

func eventID(dedupeKey, typ string) string {
	return uuid.NewSHA1(eventNamespace, []byte(dedupeKey+"\x00"+typ)).String()
}

// indexResult adds a finished pre-recorded job's utterances to the search index, in the
// transaction that stores its result. A live session's are indexed from its finals as they
// come (searchable), not again from its result.
func indexResult(ctx context.Context, tx store.Tx, j api.Job) error {
	if j.Kind != api.KindPreRecorded || j.Status != api.StatusDone {
		return nil
	}
	return tx.IndexUtterances(ctx, store.ResultUtterances(j.ID, j.Result))
}

// searchable reports whether a live message brings utterances to the search index (a final
// transcript, a translation): only those are decoded again for it, not the partials that make
// up most of a session.
func searchable(lr *liveRow) bool {
	return (lr.msg.Type == api.MessageTranscript && lr.category == api.CategoryFinalTranscripts) ||
		lr.msg.Type == api.MessageTranslation
}
