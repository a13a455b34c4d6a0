package receiver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// testNow is the receiver's clock in tests: signature timestamps are relative to it.
var testNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

const (
	testReadToken   = "read-token-for-tests"
	testRouteToken  = "static-route-token-0123456789abcdef"
	testSignedToken = "signed-route-token-0123456789abcdef"
)

// Two raw HMAC keys of the signed route, the second one a rotated secret.
var (
	testKey1 = []byte("first secret key, 24 bytes")
	testKey2 = []byte("second secret key (rotated)")
)

// harness runs a Receiver on a loopback listener over a real SQLite store and Batcher.
type harness struct {
	t        *testing.T
	store    *sqlite.Store
	batcher  *store.Batcher
	rcv      *Receiver
	base     string
	reg      *prometheus.Registry
	notified *recordingNotifier
	feed     *testFeed
	logs     *syncBuffer
	// secrets are the credentials the logs must never contain.
	secrets []string
}

// harnessOption adjusts the configuration or, before the app is built, the receiver.
type harnessOption struct {
	cfg   func(*Config)
	rcv   func(*Receiver)
	setup setupKind
	store *sqlite.Store
}

func withConfig(f func(*Config)) harnessOption     { return harnessOption{cfg: f} }
func withReceiver(f func(*Receiver)) harnessOption { return harnessOption{rcv: f} }
func withSetup(s setupKind) harnessOption          { return harnessOption{setup: s} }

// withStore runs the receiver on st instead of a new store (a restart: st opened again on the
// file of an earlier harness).
func withStore(st *sqlite.Store) harnessOption { return harnessOption{store: st} }

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	var st *sqlite.Store
	for _, o := range opts {
		if o.store != nil {
			st = o.store
		}
	}
	if st == nil {
		st = teststore.SQLite(t)
	}
	h := &harness{
		t:        t,
		store:    st,
		batcher:  store.NewBatcher(st, store.BatcherOptions{}),
		reg:      prometheus.NewRegistry(),
		notified: &recordingNotifier{},
		feed:     newTestFeed(),
		logs:     &syncBuffer{},
	}
	logger := logrus.New()
	logger.SetOutput(h.logs)
	logger.SetLevel(logrus.DebugLevel)
	cfg := Config{
		Store:    st,
		Ingester: h.batcher,
		Notifier: h.notified,
		Feed:     h.feed,
		Routes: []Route{
			{Name: "partner", Token: testRouteToken},
			{Name: "account", Token: testSignedToken, SigningSecrets: []string{
				"whsec_" + base64.StdEncoding.EncodeToString(testKey1),
				"whsec_" + base64.StdEncoding.EncodeToString(testKey2),
			}},
		},
		ReadToken: testReadToken,
		Metrics:   h.reg,
		Logger:    logrus.NewEntry(logger),
		Now:       func() time.Time { return testNow },
	}
	for _, o := range opts {
		if o.cfg != nil {
			o.cfg(&cfg)
		}
	}
	rcv, err := newReceiver(cfg, func(r *Receiver) {
		for _, o := range opts {
			if o.rcv != nil {
				o.rcv(r)
			}
		}
	})
	if err != nil {
		t.Fatalf("new receiver: %v", err)
	}
	h.rcv = rcv
	setup := setupStandalone
	for _, o := range opts {
		if o.setup != "" {
			setup = o.setup
		}
	}
	stop := h.serve(setup)
	t.Cleanup(func() {
		stop()
		_ = h.batcher.Close()
		// Secrets and tokens never reach the logs.
		for _, secret := range append(h.secrets, testRouteToken, testSignedToken, testReadToken, string(testKey1), string(testKey2)) {
			if bytes.Contains(h.logs.Bytes(), []byte(secret)) {
				t.Errorf("logs contain a secret: %s", h.logs.String())
			}
		}
	})
	return h
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.Buffer.Bytes())
}

func (b *syncBuffer) String() string { return string(b.Bytes()) }

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

func (h *harness) do(method, path string, body []byte, header map[string]string) response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatalf("request: %v", err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// Errorf, not Fatalf: harness helpers run inside subtests, where the parent's FailNow
	// must not be called; a failed exchange shows as status 0.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Errorf("%s %s: %v", method, path, err)
		return response{body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Errorf("read response: %v", err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (h *harness) post(token string, body []byte, header map[string]string) response {
	h.t.Helper()
	if header == nil {
		header = map[string]string{}
	}
	if _, ok := header["Content-Type"]; !ok {
		header["Content-Type"] = "application/json"
	}
	return h.do(http.MethodPost, "/v1/callbacks/"+token, body, header)
}

func (h *harness) read(path string) response {
	h.t.Helper()
	return h.do(http.MethodGet, path, nil, map[string]string{"Authorization": "Bearer " + testReadToken})
}

// ack decodes a 200 answer of the callback endpoint.
func (h *harness) ack(r response) ackBody {
	h.t.Helper()
	var a ackBody
	if r.status != http.StatusOK {
		h.t.Errorf("status %d, want 200: %s", r.status, r.body)
		return a
	}
	if err := json.Unmarshal(r.body, &a); err != nil {
		h.t.Errorf("ack: %v: %s", err, r.body)
	}
	return a
}

func (h *harness) inbox() []store.InboxRow {
	h.t.Helper()
	rows, err := h.store.PendingInbox(context.Background(), 0, 1000)
	if err != nil {
		h.t.Fatalf("pending inbox: %v", err)
	}
	return rows
}

func (h *harness) quarantined() []store.QuarantineRow {
	h.t.Helper()
	rows, err := h.store.Quarantined(context.Background(), 1000)
	if err != nil {
		h.t.Fatalf("quarantined: %v", err)
	}
	return rows
}

// assertNothingStored checks that neither the inbox nor the quarantine holds anything.
func (h *harness) assertNothingStored() {
	h.t.Helper()
	if rows := h.inbox(); len(rows) != 0 {
		h.t.Errorf("inbox has %d rows, want none", len(rows))
	}
	if rows := h.quarantined(); len(rows) != 0 {
		h.t.Errorf("quarantine has %d rows, want none", len(rows))
	}
}

// jobToken mints and stores a per-job token bound to jobID ("" for unbound).
func (h *harness) jobToken(jobID string, kind api.JobKind) string {
	h.t.Helper()
	return h.jobTokenAt(jobID, kind, testNow)
}

// jobTokenAt is jobToken minted at created.
func (h *harness) jobTokenAt(jobID string, kind api.JobKind, created time.Time) string {
	h.t.Helper()
	tok, err := store.NewToken()
	if err != nil {
		h.t.Fatal(err)
	}
	h.secrets = append(h.secrets, tok)
	if err := h.store.CreateToken(context.Background(), store.Token{
		Hash: store.HashToken(tok), JobID: jobID, Kind: kind, CreatedAt: created,
	}); err != nil {
		h.t.Fatalf("create token: %v", err)
	}
	return tok
}

// applyLive does what the persist handler does with a live inbox row: append its message.
func (h *harness) applyLive(inboxID int64) int64 {
	h.t.Helper()
	ctx := context.Background()
	row, err := h.store.InboxRow(ctx, inboxID)
	if err != nil {
		h.t.Fatalf("inbox row %d: %v", inboxID, err)
	}
	var env struct {
		Payload json.RawMessage `json:"payload"`
	}
	var cb api.LiveCallback
	if err := json.Unmarshal(row.Body, &env); err != nil {
		h.t.Fatal(err)
	}
	if err := json.Unmarshal(row.Body, &cb); err != nil {
		h.t.Fatal(err)
	}
	var seq int64
	err = h.store.Apply(ctx, inboxID, func(ctx context.Context, tx store.Tx) error {
		var err error
		seq, err = tx.AppendLiveMessage(ctx, store.LiveMessage{
			SessionID: row.JobID, Type: row.MessageType, Category: row.Category,
			CreatedAt: cb.Payload.CreatedAt.Time, ReceivedAt: row.ReceivedAt, InboxID: inboxID,
			Payload: env.Payload,
		})
		return err
	})
	if err != nil {
		h.t.Fatalf("apply %d: %v", inboxID, err)
	}
	return seq
}

// recordingNotifier remembers Committed calls.
type recordingNotifier struct {
	mu    sync.Mutex
	calls []notification
}

type notification struct {
	id        int64
	partition string
}

func (n *recordingNotifier) Committed(id int64, partition string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, notification{id, partition})
}

func (n *recordingNotifier) list() []notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]notification(nil), n.calls...)
}

// testFeed is a SessionFeed the test pings by hand after storing a message.
type testFeed struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]bool
	n    atomic.Int64 // subscriptions ever made
}

func newTestFeed() *testFeed { return &testFeed{subs: map[string]map[chan struct{}]bool{}} }

func (f *testFeed) Subscribe(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	if f.subs[id] == nil {
		f.subs[id] = map[chan struct{}]bool{}
	}
	f.subs[id][ch] = true
	f.mu.Unlock()
	f.n.Add(1)
	return ch, func() {
		f.mu.Lock()
		delete(f.subs[id], ch)
		f.mu.Unlock()
	}
}

func (f *testFeed) ping(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (f *testFeed) subscribers(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs[id])
}

// switchIngester wraps the real batcher and fails while fail is set: our own failure.
type switchIngester struct {
	inner Ingester
	fail  atomic.Bool
}

func (s *switchIngester) Submit(ctx context.Context, d store.Delivery) (store.IngestResult, error) {
	if s.fail.Load() {
		return store.IngestResult{}, errors.New("disk full (simulated)")
	}
	return s.inner.Submit(ctx, d)
}

// signHeaders signs body the Standard Webhooks way, independently of the receiver's code.
func signHeaders(prefix string, key []byte, id string, ts time.Time, body []byte) map[string]string {
	t := strconv.FormatInt(ts.Unix(), 10)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + t + "."))
	m.Write(body)
	sig := base64.StdEncoding.EncodeToString(m.Sum(nil))
	return map[string]string{
		prefix + "-id":        id,
		prefix + "-timestamp": t,
		prefix + "-signature": "v1," + sig,
	}
}

// newClosedStore opens a SQLite store and closes it: every Ingest then fails.
func newClosedStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "closed.db")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return st
}
