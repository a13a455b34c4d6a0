package handlers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// fastRetries is a retry schedule for tests: 5 ms between attempts.
var fastRetries = []time.Duration{5 * time.Millisecond}

// waitTimeout bounds every wait of these tests; the race detector makes SQLite several times
// slower, so it is generous, and a passing test never waits for it.
const waitTimeout = 60 * time.Second

// startOn is start on a new store, which it returns with the pipeline.
func startOn(tb testing.TB, cfg handlers.Config) (*sqlite.Store, *running) {
	tb.Helper()
	s := teststore.SQLite(tb)
	cfg.Store = s
	return s, start(tb, cfg)
}

// running is a pipeline whose Run goroutine the test owns.
type running struct {
	tb     testing.TB
	p      *handlers.Pipeline
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// start builds the pipeline, runs it in a goroutine and waits until its router runs. Cleanup
// closes it and checks that Run returned.
func start(tb testing.TB, cfg handlers.Config) *running {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = logx.Discard()
	}
	p, err := handlers.New(cfg)
	if err != nil {
		tb.Fatalf("handlers.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{tb: tb, p: p, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- p.Run(ctx) }()
	select {
	case <-p.Running():
	case err := <-r.done:
		cancel()
		tb.Fatalf("Run returned before running: %v", err)
	case <-time.After(waitTimeout):
		cancel()
		tb.Fatal("pipeline did not start")
	}
	tb.Cleanup(r.stop)
	return r
}

// stop closes the pipeline, then ends Run's context, like the server's shutdown.
func (r *running) stop() {
	r.once.Do(func() {
		closed := make(chan error, 1)
		go func() { closed <- r.p.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				r.tb.Errorf("Close: %v", err)
			}
		case <-time.After(waitTimeout):
			r.tb.Error("Close did not return")
		}
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				r.tb.Errorf("Run: %v", err)
			}
		case <-time.After(waitTimeout):
			r.tb.Error("Run did not return after Close")
		}
	})
}

// ingest commits ds in one transaction and, as the receiver does, notifies the pipeline of
// each new row (p may be nil: rows committed while no pipeline runs). It returns the row ids.
func ingest(tb testing.TB, s store.Store, p *handlers.Pipeline, ds ...store.Delivery) []int64 {
	tb.Helper()
	res, err := s.Ingest(context.Background(), ds)
	if err != nil {
		tb.Fatalf("ingest: %v", err)
	}
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
		if p != nil && !r.Duplicate && !r.Quarantined {
			p.Committed(r.ID, ds[i].PartitionKey)
		}
	}
	return ids
}

// idsOf maps the dedupe keys of ds to their inbox ids (ids, as ingest gives them).
func idsOf(ds []store.Delivery, ids []int64) map[string]int64 {
	m := make(map[string]int64, len(ds))
	for i, d := range ds {
		m[d.DedupeKey] = ids[i]
	}
	return m
}

// waitFor polls cond until it holds, failing the test with what() at the deadline.
func waitFor(tb testing.TB, what func() string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting: %s", what())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checked is v, or the end of the test when err says a read failed (what names the read).
func checked[T any](tb testing.TB, v T, err error, what string, args ...any) T {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
	return v
}

func inboxRow(tb testing.TB, s store.Store, id int64) store.InboxRow {
	tb.Helper()
	r, err := s.InboxRow(context.Background(), id)
	return checked(tb, r, err, "inbox row %d", id)
}

// applyAll ingests ds, tells p, and waits until the pipeline has applied every row.
func applyAll(tb testing.TB, s store.Store, p *handlers.Pipeline, ds ...store.Delivery) {
	tb.Helper()
	waitStatus(tb, s, store.InboxDone, ingest(tb, s, p, ds...)...)
}

// waitStatus waits until every row has the status.
func waitStatus(tb testing.TB, s store.Store, status store.InboxStatus, ids ...int64) {
	tb.Helper()
	var last store.InboxRow
	waitFor(tb, func() string {
		return fmt.Sprintf("inbox row %d is %s (attempts %d, last error %q), want %s",
			last.ID, last.Status, last.Attempts, last.LastError, status)
	}, func() bool {
		for _, id := range ids {
			last = inboxRow(tb, s, id)
			if last.Status != status {
				return false
			}
		}
		return true
	})
}

func getJob(tb testing.TB, s store.Store, id string) store.JobRecord {
	tb.Helper()
	rec, err := s.GetJob(context.Background(), id)
	return checked(tb, rec, err, "get job %s", id)
}

func liveMessages(tb testing.TB, s store.Store, session string) []store.LiveMessage {
	tb.Helper()
	ms, err := s.LiveMessages(context.Background(), session, 0, 0)
	return checked(tb, ms, err, "live messages of %s", session)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

var baseTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// live is one live callback as the receiver would classify it.
type live struct {
	Session  string
	N        int
	Type     api.MessageType
	Category api.MessageCategory
	Payload  []byte // the payload member, byte for byte
	Delivery store.Delivery
}

// liveTypes cycles through message types of every category; ackFailed and withError put some
// messages in errors.
var liveTypes = []api.MessageType{
	api.MessageTranscript, api.MessageSpeechStart, api.MessageTranscript, api.MessageSpeechEnd,
	api.MessageTranslation, api.MessageNamedEntityRecognition, api.MessageSentimentAnalysis,
	api.MessageAudioChunk, api.MessagePostTranscript, api.MessagePostChapterization,
	api.MessagePostSummarization, api.MessageStartRecording, api.MessageEndRecording,
	api.MessageStopRecording,
}

// newLive builds message n of a session. data is merged with {"n": n, "session": session} so
// that every message is distinguishable.
func newLive(session string, n int, typ api.MessageType, data map[string]any) live {
	if data == nil {
		data = map[string]any{}
	}
	data["n"] = n
	data["session"] = session
	msg := api.LiveMessage{
		SessionID: session,
		CreatedAt: api.NewTime(baseTime.Add(time.Duration(n) * time.Millisecond)),
		Type:      typ,
	}
	if err := msg.SetData(data); err != nil {
		panic(err)
	}
	return newLiveFromMessage(session, n, msg)
}

// variedLive is message n of a session with a type and a shape that cover the categories.
func variedLive(session string, n int) live {
	typ := liveTypes[n%len(liveTypes)]
	data := map[string]any{}
	switch {
	case typ == api.MessageTranscript:
		data["is_final"] = n%4 == 2
		data["utterance"] = map[string]any{"text": fmt.Sprintf("utterance %d", n), "words": []any{}}
	}
	l := newLive(session, n, typ, data)
	switch {
	case typ == api.MessageAudioChunk && n%3 == 0:
		// A failed acknowledgment is in errors.
		var msg api.LiveMessage
		must(json.Unmarshal(l.Payload, &msg))
		f := false
		msg.Acknowledged = &f
		l = newLiveFromMessage(session, n, msg)
	case typ == api.MessageTranslation && n%2 == 0:
		var msg api.LiveMessage
		must(json.Unmarshal(l.Payload, &msg))
		msg.Error = json.RawMessage(`{"message":"translation failed"}`)
		l = newLiveFromMessage(session, n, msg)
	}
	return l
}

func newLiveFromMessage(session string, n int, msg api.LiveMessage) live {
	payload, err := json.Marshal(msg)
	must(err)
	return rawLive(session, n, payload)
}

// rawLive is a live callback whose payload member is exactly payload.
func rawLive(session string, n int, payload []byte) live {
	var msg api.LiveMessage
	must(json.Unmarshal(payload, &msg))
	cat, ok := api.Category(&msg)
	if !ok {
		panic("unknown type " + msg.Type)
	}
	head := fmt.Sprintf(`{"id":%q,"event":%q,"payload":`, session, api.LiveEvent(msg.Type))
	body := append(append([]byte(head), payload...), '}')
	d := store.Delivery{
		// Located as the receiver locates every message it classifies (unlocated undoes it).
		Message:      store.Span{Off: len(head), Len: len(payload)},
		MessageAt:    msg.CreatedAt.Time,
		DedupeKey:    "live:" + session + ":" + sha256Hex(payload),
		Route:        "job",
		Kind:         api.CallbackLiveMessage,
		Event:        api.LiveEvent(msg.Type),
		JobID:        session,
		MessageType:  msg.Type,
		Category:     cat,
		PartitionKey: session,
		Headers:      map[string]string{"content-type": "application/json"},
		Body:         body,
		ReceivedAt:   baseTime.Add(time.Duration(n) * time.Millisecond),
	}
	return live{Session: session, N: n, Type: msg.Type, Category: cat, Payload: payload, Delivery: d}
}

// unlocated is l as an earlier version stored it: its message not located, so the pipeline
// decodes it from the body and stores a copy.
func unlocated(l live) live {
	l.Delivery.Message, l.Delivery.MessageAt = store.Span{}, time.Time{}
	return l
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// jobSuccess is a job.success callback of a pre-recorded job.
func jobSuccess(id string, result api.Result, customMetadata string) store.Delivery {
	cb := api.JobCallback{ID: id, Event: api.EventTranscriptionSuccess, Payload: &result}
	if customMetadata != "" {
		cb.CustomMetadata = json.RawMessage(customMetadata)
	}
	return jobCallback(api.CallbackJobSuccess, cb)
}

// jobError is a job.error callback.
func jobError(id string, code int, msg string) store.Delivery {
	return jobCallback(api.CallbackJobError,
		api.JobCallback{ID: id, Event: api.EventTranscriptionError, Error: &api.CallbackError{Code: code, Message: msg}})
}

// jobCallback is cb delivered on the job's route, as the receiver classifies it (kind).
func jobCallback(kind api.CallbackKind, cb api.JobCallback) store.Delivery {
	body, err := json.Marshal(cb)
	must(err)
	return store.Delivery{
		DedupeKey: "job:" + cb.ID + ":" + cb.Event, Route: "job",
		Kind: kind, Event: cb.Event, JobID: cb.ID,
		PartitionKey: cb.ID, Body: body, ReceivedAt: baseTime,
	}
}

// webhook is a thin account webhook {event, payload: {id}}.
func webhook(event, id string) store.Delivery {
	body := fmt.Appendf(nil, `{"event":%q,"payload":{"id":%q}}`, event, id)
	return store.Delivery{
		DedupeKey: "webhook:" + event + ":" + id, Route: "account",
		Kind: api.CallbackAccountWebhook, Event: event, JobID: id,
		PartitionKey: id, Body: body, ReceivedAt: baseTime,
	}
}

// sampleResult is a small pre-recorded result.
func sampleResult(text string) api.Result {
	return api.Result{
		Metadata: &api.Metadata{AudioDuration: 3.5, NumberOfDistinctChannels: 1},
		Transcription: &api.Transcription{
			FullTranscript: text,
			Languages:      []string{"en"},
			Utterances: []api.Utterance{{
				Start: 0.1, End: 1.2, Confidence: 0.9, Text: text,
				Words: []api.Word{{Word: text, Start: 0.1, End: 1.2, Confidence: 0.9}},
			}},
		},
	}
}

// countingStore wraps a store: it counts Apply calls running at once, the applied rows, and
// can hold or fail chosen operations.
type countingStore struct {
	store.Store

	cur, max atomic.Int64
	// hold, when set, runs inside Apply before the real Apply (while the call is counted).
	hold func(ctx context.Context, inboxID int64) error

	mu          sync.Mutex
	applied     map[int64]int // successful Apply calls per row
	alreadyDone map[int64]int // Apply calls answered ErrAlreadyApplied
	marks       map[int64]int // MarkInboxFailed calls per row
	reads       map[int64]int // rows read, by InboxRow or InboxRows
	failMark    map[int64]bool
}

func newCountingStore(s store.Store) *countingStore {
	return &countingStore{Store: s, applied: map[int64]int{}, alreadyDone: map[int64]int{},
		marks: map[int64]int{}, reads: map[int64]int{}, failMark: map[int64]bool{}}
}

type groupKey struct{}

// inGroup reports whether hold runs for a row of a group (ApplyGroup), not of its own Apply.
func inGroup(ctx context.Context) bool { return ctx.Value(groupKey{}) != nil }

// enter counts a call running at once until the function it returns is called.
func (c *countingStore) enter() (leave func()) {
	n := c.cur.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { c.cur.Add(-1) }
}

func (c *countingStore) Apply(ctx context.Context, id int64, fn func(context.Context, store.Tx) error) error {
	defer c.enter()()
	if c.hold != nil {
		if err := c.hold(ctx, id); err != nil {
			return err
		}
	}
	err := c.Store.Apply(ctx, id, fn)
	c.mu.Lock()
	switch {
	case err == nil:
		c.applied[id]++
	case errors.Is(err, store.ErrAlreadyApplied):
		c.alreadyDone[id]++
	}
	c.mu.Unlock()
	return err
}

// ApplyGroup counts like Apply: the group is one call at once, hold runs for each of its rows
// in order (before the real group), and each row the group applied counts as applied.
func (c *countingStore) ApplyGroup(ctx context.Context, ids []int64, fn func(context.Context, store.Tx, []int64) error) error {
	defer c.enter()()
	if c.hold != nil {
		gctx := context.WithValue(ctx, groupKey{}, true)
		for _, id := range ids {
			if err := c.hold(gctx, id); err != nil {
				return err
			}
		}
	}
	var marked []int64
	err := c.Store.ApplyGroup(ctx, ids, func(ctx context.Context, tx store.Tx, m []int64) error {
		marked = m
		return fn(ctx, tx, m)
	})
	if err == nil {
		c.mu.Lock()
		for _, id := range marked {
			c.applied[id]++
		}
		c.mu.Unlock()
	}
	return err
}

func (c *countingStore) MarkInboxFailed(ctx context.Context, id int64, msg string, retryAt time.Time) error {
	c.mu.Lock()
	c.marks[id]++
	fail := c.failMark[id]
	c.mu.Unlock()
	if fail {
		return errors.New("disk I/O error (injected)")
	}
	return c.Store.MarkInboxFailed(ctx, id, msg, retryAt)
}

func (c *countingStore) InboxRow(ctx context.Context, id int64) (store.InboxRow, error) {
	c.mu.Lock()
	c.reads[id]++
	c.mu.Unlock()
	return c.Store.InboxRow(ctx, id)
}

func (c *countingStore) InboxRows(ctx context.Context, ids []int64) ([]store.InboxRow, error) {
	rows, err := c.Store.InboxRows(ctx, ids)
	c.mu.Lock()
	for _, r := range rows {
		c.reads[r.ID]++
	}
	c.mu.Unlock()
	return rows, err
}

func (c *countingStore) appliedCount(id int64) int { return c.count(c.applied, id) }

func (c *countingStore) markCount(id int64) int { return c.count(c.marks, id) }

func (c *countingStore) readCount(id int64) int { return c.count(c.reads, id) }

// count reads one of the counters, which the pipeline's goroutines write.
func (c *countingStore) count(m map[int64]int, id int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m[id]
}

// events collects the pipeline's domain events, acking each.
type events struct {
	mu  sync.Mutex
	all []api.Event
}

func collectEvents(tb testing.TB, p *handlers.Pipeline) *events {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	ch, err := p.Events(ctx)
	if err != nil {
		tb.Fatalf("events: %v", err)
	}
	e := &events{}
	go func() {
		for m := range ch {
			var ev api.Event
			if err := json.Unmarshal(m.Payload, &ev); err != nil {
				tb.Errorf("event %s does not decode: %v", m.UUID, err)
			} else {
				checkEventMessage(tb, m, ev)
			}
			e.mu.Lock()
			e.all = append(e.all, ev)
			e.mu.Unlock()
			m.Ack()
		}
	}()
	return e
}

func checkEventMessage(tb testing.TB, m *message.Message, ev api.Event) {
	if m.UUID != ev.ID || m.Metadata.Get("type") != ev.Type || m.Metadata.Get("job_id") != ev.JobID {
		tb.Errorf("event message %s (type %q, job %q) disagrees with its event %+v",
			m.UUID, m.Metadata.Get("type"), m.Metadata.Get("job_id"), ev)
	}
}

// of returns the events about job id, of type typ when typ is not empty, by type then id.
func (e *events) of(id, typ string) []api.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []api.Event
	for _, ev := range e.all {
		if ev.JobID == id && (typ == "" || ev.Type == typ) {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// wait waits until n events of job id (and type) arrived, and returns them.
func (e *events) wait(tb testing.TB, id, typ string, n int) []api.Event {
	tb.Helper()
	waitFor(tb, func() string {
		return fmt.Sprintf("%d events %q of %s, want %d", len(e.of(id, typ)), typ, id, n)
	}, func() bool { return len(e.of(id, typ)) >= n })
	return e.of(id, typ)
}

// fakeResolver stands in for the service's job endpoints.
type fakeResolver struct {
	mu    sync.Mutex
	jobs  map[string]api.Job
	err   error
	calls []string // "kind/id"
}

func (f *fakeResolver) GetJob(_ context.Context, id string, kind api.JobKind) (api.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, string(kind)+"/"+id)
	if f.err != nil {
		return api.Job{}, f.err
	}
	j, ok := f.jobs[id]
	if !ok {
		return api.Job{}, fmt.Errorf("job %s: 404 not found", id)
	}
	return j, nil
}

func (f *fakeResolver) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func jsonOf(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	return string(checked(tb, b, err, "marshal"))
}
