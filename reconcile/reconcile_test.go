package reconcile

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

type noService struct{}

func (noService) GetJob(context.Context, string, api.JobKind) (api.Job, error) {
	panic("not asked in these tests")
}

func newTest(t *testing.T, st Store) *Reconciler {
	t.Helper()
	r, err := New(Config{Store: st, Service: noService{},
		Ingest: func(context.Context, []store.Delivery) ([]store.IngestResult, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The wait before the next question doubles from After to MaxWait, is at least the audio's
// duration times AudioFactor, and for a queued job at least QueueStep per job listed before it.
func TestNextDue(t *testing.T) {
	st := teststore.SQLite(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	for i := range 5 {
		if _, err := st.CreateJob(ctx, store.JobRecord{Job: api.Job{ID: "ahead-" + string(rune('a'+i)), Kind: api.KindPreRecorded,
			Status: api.StatusQueued, Version: api.RecordVersion, CreatedAt: api.NewTime(t0.Add(time.Duration(i) * time.Second))}}); err != nil {
			t.Fatal(err)
		}
	}
	r := newTest(t, st)
	now := t0.Add(time.Hour)
	e := store.ReconcileEntry{JobID: "j", Kind: api.KindPreRecorded, CreatedAt: t0.Add(time.Minute)}
	for _, tc := range []struct {
		name   string
		checks int
		job    *api.Job
		want   time.Duration
	}{
		{"first question", 1, nil, 2 * time.Minute},
		{"second", 2, nil, 4 * time.Minute},
		{"fourth", 4, nil, 16 * time.Minute},
		{"capped", 5, nil, 30 * time.Minute},
		{"many", 60, nil, 30 * time.Minute},
		{"an hour of audio", 1, &api.Job{Status: api.StatusProcessing, File: &api.File{AudioDuration: 7200}}, time.Hour},
		{"short audio", 1, &api.Job{Status: api.StatusProcessing, File: &api.File{AudioDuration: 60}}, 2 * time.Minute},
		{"queued behind 5", 1, &api.Job{Status: api.StatusQueued}, 2 * time.Minute},
	} {
		e.Checks = tc.checks
		if got := r.nextDue(ctx, e, tc.job, now).Sub(now); got != tc.want {
			t.Errorf("%s: wait %s, want %s", tc.name, got, tc.want)
		}
	}
	r.cfg.QueueStep = time.Minute
	e.Checks = 1
	if got := r.nextDue(ctx, e, &api.Job{Status: api.StatusQueued}, now).Sub(now); got != 5*time.Minute {
		t.Errorf("queued behind 5 at a minute each: %s", got)
	}
}

func TestNewChecksConfig(t *testing.T) {
	ok := Config{Store: teststore.SQLite(t), Service: noService{}, Ingest: func(context.Context, []store.Delivery) ([]store.IngestResult, error) { return nil, nil }}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no store", func(c *Config) { c.Store = nil }, "reconcile: Store is required"},
		{"no ingest", func(c *Config) { c.Ingest = nil }, "reconcile: Ingest is required"},
		{"negative after", func(c *Config) { c.After = -time.Second }, "reconcile: After must not be negative"},
		{"max below after", func(c *Config) { c.After, c.MaxWait = time.Hour, time.Minute }, "reconcile: MaxWait (1m0s) must be at least After (1h0m0s)"},
		{"negative factor", func(c *Config) { c.AudioFactor = -1 }, "reconcile: AudioFactor must not be negative"},
	} {
		c := ok
		tc.edit(&c)
		if _, err := New(c); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// Two spellings of one message are one identity; a change of any value is another.
func TestIdentity(t *testing.T) {
	base := `{"session_id":"s","created_at":"2026-11-29T08:00:00.000Z","type":"transcript","data":{"id":"u1","is_final":true,"utterance":{"text":"hi","start":1,"end":2.5}}}`
	same := []string{
		`{"type":"transcript","session_id":"s","created_at":"2026-11-29T08:00:00.000Z","data":{"is_final":true,"id":"u1","utterance":{"end":2.5,"start":1.0,"text":"hi"}}}`,
		"{ \"session_id\" : \"s\",\n \"created_at\":\"2026-11-29T08:00:00.000Z\",\"type\":\"transcript\",\"data\":{\"id\":\"u1\",\"is_final\":true,\"utterance\":{\"text\":\"\\u0068i\",\"start\":1e0,\"end\":2.5}}}",
	}
	other := []string{
		`{"session_id":"s","created_at":"2026-11-29T08:00:00.001Z","type":"transcript","data":{"id":"u1","is_final":true,"utterance":{"text":"hi","start":1,"end":2.5}}}`,
		`{"session_id":"s","created_at":"2026-11-29T08:00:00.000Z","type":"transcript","data":{"id":"u1","is_final":false,"utterance":{"text":"hi","start":1,"end":2.5}}}`,
	}
	want, err := Identity([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range same {
		if got, err := Identity([]byte(s)); err != nil || got != want {
			t.Errorf("%s: %s, %v; want the identity of the base", s, got, err)
		}
	}
	for _, s := range other {
		if got, _ := Identity([]byte(s)); got == want {
			t.Errorf("%s has the identity of the base", s)
		}
	}
	if _, err := Identity([]byte(`{"a":`)); err == nil {
		t.Error("the identity of broken JSON")
	}
}

// The live callback a fetched message stands for is the one the service would have sent: it
// classifies as a live message of the session, its payload located where the receiver locates
// it, keyed as the receiver keys it.
func TestLiveDelivery(t *testing.T) {
	msg := []byte(`{"session_id":"s-1","created_at":"2026-11-29T08:00:01.250Z","type":"transcript","data":{"id":"u1","is_final":true,"utterance":{"text":"a \"quoted\" word"}}}`)
	assertLiveDelivery(t, "s-1", msg)
	if _, _, ok := fetchedLive("s-2", msg, time.Now()); ok {
		t.Error("another session's message was taken")
	}
}

func assertLiveDelivery(t *testing.T, session string, msg []byte) {
	t.Helper()
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	d, head, ok := fetchedLive(session, msg, now)
	if !ok {
		return
	}
	cat, _ := head.Category()
	c, payload, err := api.ClassifyCallbackPayload(d.Body)
	if err != nil {
		t.Fatalf("body %s: %v", d.Body, err)
	}
	got, ok := d.Message.Of(d.Body)
	if c.Kind != api.CallbackLiveMessage || c.JobID != session || c.MessageType != head.Type || !ok ||
		!bytes.Equal(got, msg) || !bytes.Equal(payload, msg) {
		t.Fatalf("classified %+v, located %q, payload %q; want message %q", c, got, payload, msg)
	}
	if d.DedupeKey != store.LiveDedupeKey(session, payload) || d.Route != store.RouteReconcile || d.PartitionKey != session ||
		!d.MessageAt.Equal(head.CreatedAt) || d.Category != cat || !d.ReceivedAt.Equal(now) {
		t.Fatalf("delivery %+v", d)
	}
}

// FuzzLiveDelivery: any message the reconciler would commit makes a callback body that
// classifies back to it, and its identity is stable under re-encoding.
func FuzzLiveDelivery(f *testing.F) {
	f.Add("s-1", `{"session_id":"s-1","created_at":"2026-11-29T08:00:01.250Z","type":"transcript","data":{"id":"u1","is_final":true,"utterance":{"text":"hi"}}}`)
	f.Add("s\"2", `{"type":"end_session","created_at":"2026-11-29T08:00:01Z","session_id":"x"}`)
	f.Add("s", `{"type":"audio_chunk","acknowledged":false,"error":{"message":"bad"},"created_at":"2026-11-29T08:00:01Z","data":{"byte_range":[0,10]}}`)
	f.Fuzz(func(t *testing.T, session, msg string) {
		if session == "" {
			return
		}
		assertLiveDelivery(t, session, []byte(msg))
		if id, err := Identity([]byte(msg)); err == nil {
			var b bytes.Buffer
			b.WriteString(" ")
			b.WriteString(msg)
			if again, err := Identity(b.Bytes()); err != nil || again != id {
				t.Fatalf("identity changed with white space: %v", err)
			}
		}
	})
}
