package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
	"github.com/scribehook/scribehook/submitter"
)

const e2eKey = "e2e-service-key"

// loop is a sandbox and a serve process on loopback, sharing nothing but HTTP.
type loop struct {
	t       *testing.T
	sandbox *sandboxtest.Service
	service *submitter.Client
	files   *sandboxtest.Files
	wav     []byte
	dbPath  string
	serve   *served // nil while stopped
	store   store.Store
	addr    string
	// with adjusts the server's options at every start (subtitles, sinks).
	with func(*serverOptions)
}

func newLoop(t *testing.T, faults sandbox.Faults) *loop {
	return newLoopWith(t, faults, nil)
}

func newLoopWith(t *testing.T, faults sandbox.Faults, with func(*serverOptions)) *loop {
	t.Helper()
	return startLoop(t, sandbox.Config{APIKey: e2eKey, Faults: faults, Callbacks: sandboxtest.QuickRetries}, with)
}

// startLoop starts the world with cfg (its client logging as cfg.Logger does, when set) and
// serve on a fresh store.
func startLoop(t *testing.T, cfg sandbox.Config, with func(*serverOptions)) *loop {
	t.Helper()
	var opts []submitter.Option
	if cfg.Logger != nil {
		opts = append(opts, submitter.WithLogger(cfg.Logger.WithField("component", "submitter")))
	}
	w, client := startWorld(t, cfg, opts...)
	_, db := tempDB(t)
	l := &loop{t: t, sandbox: w.Service, service: client, files: w.Files, wav: w.Files.WAV, dbPath: db, with: with}
	l.start()
	t.Cleanup(func() {
		_ = w.Close() // first: see startWorld
		l.stop()
	})
	return l
}

// start opens the store and starts serve on a fresh loopback port (the same one on a restart).
func (l *loop) start() {
	l.t.Helper()
	st := teststore.OpenSQLite(l.t, sqlite.Config{Path: l.dbPath})
	opts := serverOptions{
		Service: l.service, ReadToken: "read-token", Logger: logx.Discard(),
		Routes: []receiver.Route{{Name: "account", Token: "account-route-token", SigningSecrets: []string{accountRouteSecret}}},
	}
	if l.with != nil {
		l.with(&opts)
	}
	l.serve = serveOn(l.t, st, l.addr, opts)
	l.store, l.addr = st, l.serve.addr
}

func (l *loop) stop() {
	if l.serve == nil {
		return
	}
	l.serve.stop(l.t)
	l.serve = nil
}

// callbackURL mints a per-job callback token and returns the callback URL at serve.
func (l *loop) callbackURL(kind api.JobKind) string {
	l.t.Helper()
	return mintCallbackURL(l.t, l.store, "http://"+l.addr, kind)
}

// mintCallbackURL mints a per-job callback token of kind in st and returns its callback URL
// at base (serve, or the load balancer in front of replicas).
func mintCallbackURL(t *testing.T, st store.Store, base string, kind api.JobKind) string {
	t.Helper()
	tok, err := store.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateToken(context.Background(), store.Token{Hash: store.HashToken(tok), Kind: kind, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return base + "/v1/callbacks/" + tok
}

// waitJob waits for the local store to hold the job in a final state (never asks the service).
func (l *loop) waitJob(id string) store.JobRecord {
	l.t.Helper()
	return waitFinal(l.t, l.store, id)
}

// waitFinal waits for st to hold the job's record in a final state.
func waitFinal(t *testing.T, st store.Store, id string) store.JobRecord {
	t.Helper()
	var rec store.JobRecord
	testwait.For(t, "job "+id+" final in the store", 60*time.Second, func() bool {
		var err error
		rec, err = st.GetJob(context.Background(), id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil && rec.Job.Status.Final()
	})
	return rec
}

func normalise(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestE2ESubmittedJobEqualsTheServiceRecord(t *testing.T) {
	l := newLoop(t, sandbox.Faults{})
	ctx := context.Background()
	created, err := l.service.CreatePreRecorded(ctx, api.PreRecordedRequest{
		AudioURL:       l.files.URL + "/sample.wav",
		Callback:       api.Bool(true),
		CallbackConfig: &api.CallbackConfig{URL: l.callbackURL(api.KindPreRecorded), Method: "PUT"},
		Subtitles:      api.Bool(true),
		Diarization:    api.Bool(true),
		CustomMetadata: json.RawMessage(`{"team":"e2e"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := l.waitJob(created.ID)
	fromService, err := l.service.GetPreRecorded(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := normalise(t, rec.Job), normalise(t, fromService); !reflect.DeepEqual(got, want) {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Fatalf("stored job differs from the service's GET:\n got %s\nwant %s", truncate(gb), truncate(wb))
	}
	if rec.Local.Deliveries != 1 || rec.Local.Source != "callback" || rec.Local.Resolution != "" {
		t.Errorf("local = %+v", rec.Local)
	}
	if apitest.MustResult(&rec.Job).Transcription.Utterances[0].Text != "Welcome to scribehook" {
		t.Errorf("first utterance = %q", apitest.MustResult(&rec.Job).Transcription.Utterances[0].Text)
	}
}

func truncate(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// liveSession streams the sample to a live session whose callbacks come back to serve.
func (l *loop) liveSession(cfg api.MessagesConfig) string {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := streamLiveSession(ctx, l.service, l.callbackURL(api.KindLive), l.wav, cfg)
	if err != nil {
		l.t.Fatal(err)
	}
	return id
}

// streamLiveSession streams wav (16 kHz) to a new live session of client's, with
// summarization, whose callbacks of cfg's categories go to callbackURL, and returns its id.
func streamLiveSession(ctx context.Context, client *submitter.Client, callbackURL string, wav []byte, cfg api.MessagesConfig) (string, error) {
	created, err := client.CreateLive(ctx, api.LiveRequest{
		SampleRate:     api.Int(16000),
		Endpointing:    api.Float(0.3),
		Callback:       api.Bool(true),
		CallbackConfig: &api.LiveCallbackConfig{URL: callbackURL, MessagesConfig: cfg},
		PostProcessing: &api.PostProcessing{Summarization: api.Bool(true)},
	}, "")
	if err != nil {
		return "", fmt.Errorf("create a live session: %w", err)
	}
	if err := client.StreamLive(ctx, created.URL, bytes.NewReader(wav), submitter.StreamOptions{SampleRate: 16000}, nil); err != nil {
		return "", fmt.Errorf("stream to live session %s: %w", created.ID, err)
	}
	return created.ID, nil
}

// liveEventFiles counts the live.* events the file sink writing under out holds of the
// session id.
func liveEventFiles(out, id string) int {
	entries, _ := os.ReadDir(filepath.Join(out, id, "events"))
	n := 0
	for _, e := range entries {
		if strings.Contains(e.Name(), "live.") {
			n++
		}
	}
	return n
}

// storedMessages waits until the session's end_session is stored and returns every message.
func (l *loop) storedMessages(id string, wantLast api.MessageType) []store.LiveMessage {
	l.t.Helper()
	testwait.For(l.t, fmt.Sprintf("session %s's %s stored", id, wantLast), 60*time.Second, func() bool {
		msgs, err := l.store.LiveMessages(context.Background(), id, 0, 100000)
		if err != nil {
			l.t.Fatal(err)
		}
		return slices.ContainsFunc(msgs, func(m store.LiveMessage) bool { return m.Type == wantLast })
	})
	time.Sleep(200 * time.Millisecond) // anything still in flight would be a duplicate
	msgs, _ := l.store.LiveMessages(context.Background(), id, 0, 100000)
	return msgs
}

func TestE2ELiveEveryCategoryStoredOnceInOrder(t *testing.T) {
	l := newLoop(t, sandbox.Faults{})
	id := l.liveSession(api.EveryMessage(true))
	stored := l.storedMessages(id, api.MessageEndSession)
	job, err := l.service.GetLive(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	// With every category on, the callback received every message the session produced, and
	// the store holds exactly those, in session order, each byte for byte.
	sent := apitest.MustResult(&job).Messages
	if len(stored) != len(sent) {
		t.Fatalf("stored %d messages, the session produced %d", len(stored), len(sent))
	}
	for i, m := range stored {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
		if string(m.Payload) != sent[i] {
			t.Fatalf("message %d differs:\n got %s\nwant %s", i, m.Payload, sent[i])
		}
		var lm api.LiveMessage
		if err := json.Unmarshal(m.Payload, &lm); err != nil {
			t.Fatal(err)
		}
		want, _ := api.Category(&lm)
		if m.Category != want || m.Type != lm.Type {
			t.Errorf("message %d: category %s type %s, want %s %s", i, m.Category, m.Type, want, lm.Type)
		}
	}
	// The local record follows the lifecycle and ends with the service's record.
	rec := l.waitJob(id)
	if rec.Job.Status != api.StatusDone || len(rec.Job.Result) == 0 || len(apitest.MustResult(&rec.Job).Messages) != len(sent) || rec.Local.Deliveries != len(sent) {
		t.Errorf("live record: status %s, %d deliveries", rec.Job.Status, rec.Local.Deliveries)
	}
}

func TestE2ELiveOnlyFinalTranscripts(t *testing.T) {
	l := newLoop(t, sandbox.Faults{})
	cfg := api.EveryMessage(false)
	cfg.ReceiveFinalTranscripts = api.Bool(true)
	id := l.liveSession(cfg)
	// Wait for the session to end at the service, then for its four finals to be stored.
	testwait.For(t, "the 4 finals stored", 20*time.Second, func() bool {
		msgs, _ := l.store.LiveMessages(context.Background(), id, 0, 1000)
		return len(msgs) >= 4
	})
	time.Sleep(300 * time.Millisecond)
	msgs, _ := l.store.LiveMessages(context.Background(), id, 0, 1000)
	if len(msgs) != 4 {
		t.Fatalf("stored %d messages, want the 4 finals", len(msgs))
	}
	for _, m := range msgs {
		if m.Type != api.MessageTranscript || m.Category != api.CategoryFinalTranscripts {
			t.Errorf("stored %s/%s", m.Type, m.Category)
		}
	}
}

func TestE2EFaultsStoreEachDeliveryOnce(t *testing.T) {
	l := newLoop(t, sandbox.Faults{DuplicateCallbacks: 2, FailFirstAttempts: 1, ReorderLive: 4, Seed: 11})
	ctx := context.Background()
	created, err := l.service.CreatePreRecorded(ctx, api.PreRecordedRequest{
		AudioURL: l.files.URL + "/sample.wav", Callback: api.Bool(true),
		CallbackConfig: &api.CallbackConfig{URL: l.callbackURL(api.KindPreRecorded)},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := l.waitJob(created.ID)
	id := l.liveSession(api.EveryMessage(true))
	job, _ := l.service.GetLive(ctx, id)
	want := map[string]bool{}
	for _, s := range apitest.MustResult(&job).Messages {
		want[s] = true
	}
	testwait.For(t, "every message of the session stored", 60*time.Second, func() bool {
		stored, _ := l.store.LiveMessages(ctx, id, 0, 100000)
		return len(stored) >= len(want)
	})
	time.Sleep(500 * time.Millisecond) // duplicates still arriving must not add rows
	stored, _ := l.store.LiveMessages(ctx, id, 0, 100000)
	got := map[string]bool{}
	for _, m := range stored {
		if got[string(m.Payload)] {
			t.Fatalf("message stored twice: %s", m.Payload)
		}
		got[string(m.Payload)] = true
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %d distinct messages, the session produced %d", len(got), len(want))
	}
	// The job callback arrived 4 times (1 forced failure + success + 2 duplicates): applied once.
	time.Sleep(300 * time.Millisecond)
	rec, _ = l.store.GetJob(ctx, created.ID)
	if rec.Local.Deliveries != 1 || rec.Job.Status != api.StatusDone {
		t.Errorf("job: %d deliveries applied, status %s", rec.Local.Deliveries, rec.Job.Status)
	}
}

func TestE2ERestartBetweenCommitAndProcessing(t *testing.T) {
	l := newLoop(t, sandbox.Faults{})
	l.stop()
	// Deliveries committed by a receiver that died before processing them.
	st := teststore.OpenSQLite(t, sqlite.Config{Path: l.dbPath})
	body := []byte(`{"id":"0a1b2c3d-0000-4000-8000-000000000001","event":"transcription.error","error":{"code":422,"message":"audio could not be decoded"},"custom_metadata":{"k":1}}`)
	res, err := st.Ingest(context.Background(), []store.Delivery{{
		DedupeKey: "job:0a1b2c3d-0000-4000-8000-000000000001:transcription.error", Route: "job",
		Kind: api.CallbackJobError, Event: api.EventTranscriptionError, JobID: "0a1b2c3d-0000-4000-8000-000000000001",
		PartitionKey: "0a1b2c3d-0000-4000-8000-000000000001", Body: body, ReceivedAt: time.Now().UTC(),
	}})
	if err != nil || len(res) != 1 {
		t.Fatalf("ingest: %v", err)
	}
	_ = st.Close()
	l.start()
	rec := l.waitJob("0a1b2c3d-0000-4000-8000-000000000001")
	if rec.Job.Status != api.StatusError || rec.Job.ErrorCode == nil || *rec.Job.ErrorCode != 422 || rec.Local.ErrorMessage != "audio could not be decoded" {
		t.Errorf("after restart: %+v %+v", rec.Job, rec.Local)
	}
	if !strings.HasPrefix(rec.Local.Resolution, "not resolved") {
		t.Errorf("resolution = %q (the sandbox does not know this job)", rec.Local.Resolution)
	}
	row, _ := l.store.InboxRow(context.Background(), res[0].ID)
	if row.Status != store.InboxDone {
		t.Errorf("inbox row status %s", row.Status)
	}
}

func (l *loop) post(path string, h http.Header, body []byte) (int, string) {
	l.t.Helper()
	code, b := httpDo(l.t, http.MethodPost, "http://"+l.addr+path, h, body)
	return code, string(b)
}

// get reads path of the read API with its token.
func (l *loop) get(path string) (int, []byte) {
	l.t.Helper()
	return httpDo(l.t, http.MethodGet, "http://"+l.addr+path, http.Header{"Authorization": {"Bearer read-token"}}, nil)
}

func TestE2ERejectionsStoreNothingAndGarbageIsQuarantined(t *testing.T) {
	l := newLoop(t, sandbox.Faults{})
	ctx := context.Background()
	jobURL := l.callbackURL(api.KindPreRecorded)
	jobPath := strings.TrimPrefix(jobURL, "http://"+l.addr)
	// Bind the job token to a job with a first, legitimate delivery.
	okBody := []byte(`{"id":"11111111-1111-4111-8111-111111111111","event":"transcription.error","error":{"code":500,"message":"boom"}}`)
	if code, body := l.post(jobPath, http.Header{"Content-Type": {"application/json"}}, okBody); code != 200 {
		t.Fatalf("first delivery = %d %s", code, body)
	}
	webhook := []byte(`{"event":"transcription.success","payload":{"id":"22222222-2222-4222-8222-222222222222"}}`)
	now := time.Now()
	cases := []struct {
		name string
		path string
		h    http.Header
		body []byte
		want int
	}{
		{"unknown token", "/v1/callbacks/not-a-token", nil, okBody, 401},
		{"job token for another job", jobPath, nil, []byte(`{"id":"33333333-3333-4333-8333-333333333333","event":"transcription.error","error":{"code":500,"message":"x"}}`), 401},
		{"route without signature", "/v1/callbacks/account-route-token", http.Header{"Content-Type": {"application/json"}}, webhook, 401},
		{"bad signature", "/v1/callbacks/account-route-token", func() http.Header {
			h := signAt(accountRouteSecret, "msg_1", now, webhook)
			h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))
			return h
		}(), webhook, 401},
		{"stale timestamp", "/v1/callbacks/account-route-token", signAt(accountRouteSecret, "msg_2", now.Add(-6*time.Minute), webhook), webhook, 401},
		{"oversized body", jobPath, nil, bytes.Repeat([]byte("x"), 33<<20), 413},
	}
	for _, tc := range cases {
		if code, body := l.post(tc.path, tc.h, tc.body); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, truncate([]byte(body)), tc.want)
		}
	}
	// Nothing of the rejects reached the store: one inbox row (the first delivery) in all.
	rows, _ := l.store.PendingInbox(ctx, 0, 100)
	rec := l.waitJob("11111111-1111-4111-8111-111111111111")
	if len(rows) > 1 || rec.Local.Deliveries != 1 {
		t.Errorf("pending %d, deliveries %d", len(rows), rec.Local.Deliveries)
	}
	if _, err := l.store.GetJob(ctx, "33333333-3333-4333-8333-333333333333"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rejected job stored: %v", err)
	}
	// Authenticated garbage is kept in quarantine and answered 2xx.
	for _, garbage := range [][]byte{[]byte(`{"totally":"new shape"}`), []byte(`not json at all`)} {
		if code, body := l.post(jobPath, nil, garbage); code != 200 || !strings.Contains(body, "quarantined") {
			t.Errorf("garbage %q = %d %s", garbage, code, body)
		}
	}
	q, err := l.store.Quarantined(ctx, 10)
	if err != nil || len(q) != 2 || string(q[0].Body) != "not json at all" {
		t.Errorf("quarantine = %d rows %v", len(q), err)
	}
}

func TestE2ESignedAccountWebhookIsResolvedThroughTheService(t *testing.T) {
	l := newLoop(t, sandbox.Faults{})
	ctx := context.Background()
	created, err := l.service.CreatePreRecorded(ctx, api.PreRecordedRequest{AudioURL: l.files.URL + "/sample.wav"})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "job "+created.ID+" final at the service", 10*time.Second, func() bool {
		j, _ := l.service.GetPreRecorded(ctx, created.ID)
		return j.Status.Final()
	})
	body := []byte(`{"event":"transcription.success","payload":{"id":"` + created.ID + `"}}`)
	h := signAt(accountRouteSecret, "msg_resolve", time.Now(), body)
	if code, resp := l.post("/v1/callbacks/account-route-token", h, body); code != 200 {
		t.Fatalf("webhook = %d %s", code, resp)
	}
	// The same webhook again (the service retries): stored once.
	if code, resp := l.post("/v1/callbacks/account-route-token", h, body); code != 200 || !strings.Contains(resp, "duplicate") {
		t.Fatalf("retry = %d %s", code, resp)
	}
	rec := l.waitJob(created.ID)
	want, _ := l.service.GetPreRecorded(ctx, created.ID)
	if !reflect.DeepEqual(normalise(t, rec.Job), normalise(t, want)) || rec.Local.Source != "webhook" || rec.Local.Deliveries != 1 {
		t.Errorf("resolved record differs or local = %+v", rec.Local)
	}
}
