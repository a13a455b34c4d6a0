package storetest

import (
	"database/sql"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// Database is one database a test opens a store on more than once, with the raw access the
// migration tests need beside the contract.
type Database struct {
	// Open opens a store on the database, migrating it; the test's cleanup closes it.
	Open func(t *testing.T) store.Store
	// Text reads the one value (text or bytes) query selects, on s's database.
	Text func(t *testing.T, s store.Store, query string) string
	// Forget deletes the schema_migrations row of version on s's database, so that the next
	// Open applies that migration again, and closes s where a second store cannot open beside
	// it.
	Forget func(t *testing.T, s store.Store, version int)
}

const legacyToken = "ptBdfcUbDtCQWkB-Om6Id-2EF9p-bJUFelCvU97Afeo"

// MigrationRedactsLegacyTokens: a database written before callback URLs were redacted holds
// tokens in clear in job records and queued events; migration 0004 rewrites them, and leaves
// other callback URLs alone.
func MigrationRedactsLegacyTokens(t *testing.T, db Database) {
	s := db.Open(t)
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
	if !strings.Contains(db.Text(t, s, `SELECT record FROM jobs WHERE id = 'legacy'`), legacyToken) {
		t.Fatal("the legacy record was not written in clear: the test proves nothing")
	}
	db.Forget(t, s, 4)
	s2 := db.Open(t)
	rec, ev2 := db.Text(t, s2, `SELECT record FROM jobs WHERE id = 'legacy'`), db.Text(t, s2, `SELECT event FROM sink_deliveries`)
	for what, v := range map[string]string{"record": rec, "event": ev2} {
		if strings.Contains(v, legacyToken) || !strings.Contains(v, `/v1/callbacks/[token]"`) {
			t.Errorf("%s after the migration: %s", what, v)
		}
	}
	if got := db.Text(t, s2, `SELECT record FROM jobs WHERE id = 'static'`); !strings.Contains(got, `/v1/callbacks/account-route"`) {
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

// MigrationsRecorded: on db, which a store has opened, schema_migrations has one row for each
// migration of files (the store's embedded ones), up to the latest.
func MigrationsRecorded(t *testing.T, files fs.FS, db *sql.DB) {
	ms, err := sqlcore.LoadMigrations(files)
	if err != nil {
		t.Fatal(err)
	}
	var n, latest int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &latest); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) || latest != ms[len(ms)-1].Version {
		t.Errorf("schema_migrations has %d rows up to %d, want %d up to %d", n, latest, len(ms), ms[len(ms)-1].Version)
	}
}
