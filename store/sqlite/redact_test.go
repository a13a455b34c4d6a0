package sqlite

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

const legacyToken = "ptBdfcUbDtCQWkB-Om6Id-2EF9p-bJUFelCvU97Afeo"

// A database written before callback URLs were redacted holds tokens in clear in job records
// and queued events; migration 0004 rewrites them, and leaves other callback URLs alone.
func TestMigrationRedactsLegacyTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "legacy.db")
	s := openTemp(t, Options{Path: path})
	params := `{"audio_url":"https://e.com/a.wav","callback":true,"callback_config":{"url":"http://127.0.0.1:8787/v1/callbacks/` + legacyToken + `","method":"POST"}}`
	static := `{"callback_config":{"url":"http://127.0.0.1:8787/v1/callbacks/account-route"}}`
	for id, p := range map[string]string{"legacy": params, "static": static} {
		if err := s.PutJob(t.Context(), store.JobRecord{Job: api.Job{ID: id, Kind: api.KindPreRecorded, Status: api.StatusDone,
			Version: 2, CreatedAt: api.NewTime(time.Now()), RequestParams: json.RawMessage(p)}}); err != nil {
			t.Fatal(err)
		}
	}
	ev := api.Event{ID: "ev1", Type: api.EventJobSucceeded, JobID: "legacy", Kind: api.KindPreRecorded,
		Data: json.RawMessage(`{"id":"legacy","request_params":` + params + `}`)}
	if err := s.EnqueueSinkDeliveries(t.Context(), []store.SinkDelivery{{Sink: "hook", EventID: ev.ID, Event: ev, OrderKey: "legacy", NextAttempt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	raw := func(s *Store, q string) string {
		var v string
		if err := s.r.QueryRowContext(t.Context(), q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v
	}
	if !strings.Contains(raw(s, `SELECT record FROM jobs WHERE id = 'legacy'`), legacyToken) {
		t.Fatal("the legacy record was not written in clear: the test proves nothing")
	}
	writerExec(t, s, `DELETE FROM schema_migrations WHERE version = 4`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTemp(t, Options{Path: path})
	rec, ev2 := raw(s2, `SELECT record FROM jobs WHERE id = 'legacy'`), raw(s2, `SELECT event FROM sink_deliveries`)
	for what, v := range map[string]string{"record": rec, "event": ev2} {
		if strings.Contains(v, legacyToken) || !strings.Contains(v, `/v1/callbacks/[token]"`) {
			t.Errorf("%s after the migration: %s", what, v)
		}
	}
	if got := raw(s2, `SELECT record FROM jobs WHERE id = 'static'`); !strings.Contains(got, `/v1/callbacks/account-route"`) {
		t.Errorf("a URL without a minted token changed: %s", got)
	}
	// Only the token changed: the record still decodes, with the rest as written.
	j, err := s2.GetJob(t.Context(), "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(params, legacyToken, "[token]", 1); string(j.Job.RequestParams) != want {
		t.Errorf("request_params %s, want %s", j.Job.RequestParams, want)
	}
}
