package postgres

import (
	"encoding/json"
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
	dsn := newSchema(t)
	s := open(t, dsn)
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
		var v []byte
		if err := s.db.QueryRowContext(t.Context(), q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return string(v)
	}
	if !strings.Contains(raw(s, `SELECT record FROM jobs WHERE id = 'legacy'`), legacyToken) {
		t.Fatal("the legacy record was not written in clear: the test proves nothing")
	}
	if _, err := s.db.ExecContext(t.Context(), `DELETE FROM schema_migrations WHERE version = 4`); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, dsn)
	rec, ev2 := raw(s2, `SELECT record FROM jobs WHERE id = 'legacy'`), raw(s2, `SELECT event FROM sink_deliveries`)
	for what, v := range map[string]string{"record": rec, "event": ev2} {
		if strings.Contains(v, legacyToken) || !strings.Contains(v, `/v1/callbacks/[token]"`) {
			t.Errorf("%s after the migration: %s", what, v)
		}
	}
	if got := raw(s2, `SELECT record FROM jobs WHERE id = 'static'`); !strings.Contains(got, `/v1/callbacks/account-route"`) {
		t.Errorf("a URL without a minted token changed: %s", got)
	}
	j, err := s2.GetJob(t.Context(), "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(params, legacyToken, "[token]", 1); string(j.Job.RequestParams) != want {
		t.Errorf("request_params %s, want %s", j.Job.RequestParams, want)
	}
}
