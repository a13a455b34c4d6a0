package storetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// Database is a store's database as the migration tests need it: built at any earlier schema
// version, written raw, then opened by the store, which upgrades it.
type Database struct {
	// Dialect rebinds the tests' statements and converts their arguments.
	Dialect sqlcore.Dialect
	// New creates a new database with the migrations up to version applied (the schema of an
	// earlier release) and returns a raw connection pool on it, and open, which opens the store
	// on that database, migrating it to the latest version. The test's cleanup closes both.
	New func(t *testing.T, version int) (raw *sql.DB, open func(t *testing.T) store.Store)
	// Files are the store's embedded migrations.
	Files fs.FS
}

// Migrations runs the checks of a store's migrations on db: a legacy database's tokens are
// redacted, and every earlier version upgrades with its rows readable.
func Migrations(t *testing.T, db Database) {
	t.Run("RedactsLegacyTokens", func(t *testing.T) { migrationRedactsLegacyTokens(t, db) })
	t.Run("FromEveryVersion", func(t *testing.T) { migrationsFromEveryVersion(t, db) })
	t.Run("IndexesStoredTranscripts", func(t *testing.T) { migrationIndexesStored(t, db) })
}

func (db Database) exec(t *testing.T, raw *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := raw.ExecContext(t.Context(), db.Dialect.Rebind(query), args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func text(t *testing.T, raw *sql.DB, query string) string {
	t.Helper()
	var v []byte
	if err := raw.QueryRowContext(t.Context(), query).Scan(&v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return string(v)
}

const legacyToken = "ptBdfcUbDtCQWkB-Om6Id-2EF9p-bJUFelCvU97Afeo"

// migrationRedactsLegacyTokens: a database written before callback URLs were redacted holds
// tokens in clear in job records and queued events; migration 0004 rewrites them, and leaves
// other callback URLs alone.
func migrationRedactsLegacyTokens(t *testing.T, db Database) {
	raw, open := db.New(t, 3)
	params := `{"audio_url":"https://e.com/a.wav","callback":true,"callback_config":{"url":"http://127.0.0.1:8787/v1/callbacks/` + legacyToken + `","method":"POST"}}`
	static := `{"callback_config":{"url":"http://127.0.0.1:8787/v1/callbacks/account-route"}}`
	for id, p := range map[string]string{"legacy": params, "static": static} {
		seedJob(t, db, raw, api.Job{ID: id, Kind: api.KindPreRecorded, Status: api.StatusDone,
			Version: 2, CreatedAt: api.NewTime(time.Now()), RequestParams: json.RawMessage(p)})
	}
	ev := api.Event{ID: "ev1", Type: api.EventJobSucceeded, JobID: "legacy", Kind: api.KindPreRecorded,
		Data: json.RawMessage(`{"id":"legacy","request_params":` + params + `}`)}
	seedSinkDelivery(t, db, raw, "hook", ev, "queued")
	s := open(t)
	rec, ev2 := text(t, raw, `SELECT record FROM jobs WHERE id = 'legacy'`), text(t, raw, `SELECT body FROM events`)
	for what, v := range map[string]string{"record": rec, "event": ev2} {
		if strings.Contains(v, legacyToken) || !strings.Contains(v, `/v1/callbacks/[token]"`) {
			t.Errorf("%s after the migration: %s", what, v)
		}
	}
	if got := text(t, raw, `SELECT record FROM jobs WHERE id = 'static'`); !strings.Contains(got, `/v1/callbacks/account-route"`) {
		t.Errorf("a URL without a minted token changed: %s", got)
	}
	// Only the token changed: the record still decodes, with the rest as written.
	j, err := s.GetJob(t.Context(), "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(params, legacyToken, "[token]", 1); string(j.Job.RequestParams) != want {
		t.Errorf("request_params %s, want %s", j.Job.RequestParams, want)
	}
}

// seedJob writes a job record as every version since the first stores it.
func seedJob(t *testing.T, db Database, raw *sql.DB, j api.Job) {
	t.Helper()
	seedJobFrom(t, db, raw, j, `{"source":"callback","updated_at":"2026-11-20T09:00:00Z","deliveries":1}`)
}

// seedJobFrom is seedJob with local as the record's Local.
func seedJobFrom(t *testing.T, db Database, raw *sql.DB, j api.Job, local string) {
	t.Helper()
	rec, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	db.exec(t, raw, `INSERT INTO jobs (id, kind, status, created_at, completed_at, custom_metadata, record, local)
		VALUES (?, ?, ?, ?, NULL, NULL, ?, ?)`, j.ID, string(j.Kind), string(j.Status), db.Dialect.Time(j.CreatedAt.Time),
		db.Dialect.JSON(rec), local)
}

// seedSinkDelivery queues ev for sink as version 2 and later store it, with status queued or
// dead.
func seedSinkDelivery(t *testing.T, db Database, raw *sql.DB, sink string, ev api.Event, status string) {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	d := legacyDelivery{sink: sink, eventID: ev.ID, event: string(b), orderKey: ev.JobID, status: status,
		next: at, created: at}
	if status == "dead" {
		d.failed = at
	}
	seedLegacyDelivery(t, db, raw, d)
}

// legacyDelivery is a sink_deliveries row as versions 2 to the one before events stored it,
// the event's JSON in the row.
type legacyDelivery struct {
	sink, eventID, event, orderKey, status, lastError string
	attempts                                          int
	next, created, lease, failed, delivered           time.Time
}

func seedLegacyDelivery(t *testing.T, db Database, raw *sql.DB, d legacyDelivery) {
	t.Helper()
	db.exec(t, raw, `INSERT INTO sink_deliveries (sink, event_id, event, order_key, status, attempts,
		next_attempt_at, lease_until, last_error, created_at, failed_at, delivered_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.sink, d.eventID, db.Dialect.JSON([]byte(d.event)), d.orderKey, d.status, d.attempts, db.Dialect.Time(d.next),
		db.Dialect.NullTime(d.lease), d.lastError, db.Dialect.Time(d.created), db.Dialect.NullTime(d.failed),
		db.Dialect.NullTime(d.delivered))
}

// legacyEvent is an event's JSON as an earlier version stored it: not json.Marshal's bytes
// (spaces in data, which a decode keeps), so that a copy made by encoding again shows.
func legacyEvent(id string) string {
	return `{"id":"` + id + `","type":"job.succeeded","created_at":"2026-11-20T09:00:00.5Z","job_id":"seed-job",` +
		`"kind":"pre-recorded","custom_metadata":{"team": "a"},"data":{"id": "seed-job", "text": "caf\u00e9 <b>"}}`
}

// seededDeliveries are the sink deliveries seedVersion writes at version 2, in insertion
// order: every status (a leased one is queued with a lease), one event queued for two sinks.
func seededDeliveries() []legacyDelivery {
	at := time.Date(2026, 11, 20, 9, 0, 0, 123456000, time.UTC)
	return []legacyDelivery{
		{sink: "seed-sink", eventID: "seed-ev-queued", orderKey: "seed-job", status: "queued", attempts: 2,
			lastError: "503", next: at.Add(time.Minute), created: at},
		{sink: "seed-sink", eventID: "seed-ev-dead", orderKey: "seed-job", status: "dead", attempts: 8,
			lastError: "410 gone", next: at.Add(time.Hour), created: at, failed: at.Add(2 * time.Hour)},
		{sink: "seed-sink", eventID: "seed-ev-leased", orderKey: "seed-other-job", status: "queued", attempts: 1,
			lastError: "timeout", next: at, created: at, lease: time.Now().Add(time.Hour)},
		{sink: "seed-sink", eventID: "seed-ev-delivered", orderKey: "seed-job", status: "delivered",
			next: at, created: at, delivered: at.Add(time.Second)},
		{sink: "seed-files", eventID: "seed-ev-queued", orderKey: "seed-job", status: "queued", next: at, created: at},
	}
}

// seedEventDelivery writes d as the versions since events were stored apart (the migration
// named *_events.sql) store it: its event once in events, the delivery referring to it.
func seedEventDelivery(t *testing.T, db Database, raw *sql.DB, d legacyDelivery) {
	t.Helper()
	db.exec(t, raw, `INSERT INTO events (event_id, body) VALUES (?, ?) ON CONFLICT (event_id) DO NOTHING`,
		d.eventID, db.Dialect.JSON([]byte(d.event)))
	db.exec(t, raw, `INSERT INTO sink_deliveries (sink, event, order_key, status, attempts,
		next_attempt_at, lease_until, last_error, created_at, failed_at, delivered_at)
		VALUES (?, (SELECT id FROM events WHERE event_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.sink, d.eventID, d.orderKey, d.status, d.attempts, db.Dialect.Time(d.next),
		db.Dialect.NullTime(d.lease), d.lastError, db.Dialect.Time(d.created), db.Dialect.NullTime(d.failed),
		db.Dialect.NullTime(d.delivered))
}

// schemaAt is the version of a database being seeded, and the version of its migrations that
// changed the shape of rows seeded at an earlier one.
type schemaAt struct {
	version int
	// events is the version of the migration named *_events.sql (0: none).
	events int
	// reconcile is the version of the migration named *_reconcile.sql, which lists the jobs
	// submitted before it that have not ended.
	reconcile int
}

func schemaOf(ms []sqlcore.Migration, version int) schemaAt {
	at := schemaAt{version: version}
	for _, m := range ms {
		if strings.HasSuffix(m.Name, "_events.sql") {
			at.events = m.Version
		}
		if strings.HasSuffix(m.Name, "_reconcile.sql") {
			at.reconcile = m.Version
		}
	}
	return at
}

// seedVersion writes representative rows into the tables migration version created, on a
// database at schema's version, that version or later, in the shape that version has.
func seedVersion(t *testing.T, db Database, raw *sql.DB, version int, schema schemaAt) {
	t.Helper()
	at := db.Dialect.Time(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
	switch version {
	case 1:
		for _, r := range []struct{ key, status string }{{"seed-pending", "pending"}, {"seed-done", "done"}} {
			db.exec(t, raw, `INSERT INTO inbox (dedupe_key, route, kind, event, job_id, message_type, category,
				partition_key, headers, body, received_at, status) VALUES (?, 'job', 'job.success', 'transcription.success',
				'seed-job', '', '', 'seed-job', NULL, ?, ?, ?)`, r.key, []byte(`{"id":"seed-job"}`), at, r.status)
		}
		db.exec(t, raw, `INSERT INTO quarantine (dedupe_key, route, reason, headers, body, received_at)
			VALUES ('seed-q', 'account', 'not json', NULL, ?, ?)`, []byte("garbage"), at)
		seedJob(t, db, raw, api.Job{ID: "seed-job", Kind: api.KindPreRecorded, Status: api.StatusDone, Version: 2,
			CreatedAt: api.NewTime(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))})
		seedJobFrom(t, db, raw, api.Job{ID: "seed-submitted", Kind: api.KindPreRecorded, Status: api.StatusQueued, Version: 2,
			CreatedAt: api.NewTime(time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC))}, `{"source":"submit","updated_at":"2026-11-20T09:30:00Z","deliveries":0}`)
		db.exec(t, raw, `INSERT INTO live_messages (session_id, seq, type, category, created_at, received_at, inbox_id, payload)
			VALUES ('seed-session', 1, 'transcript', 'final_transcripts', ?, ?, 1, ?)`, at, at, db.Dialect.JSON([]byte(`{"type":"transcript"}`)))
		db.exec(t, raw, `INSERT INTO artifacts (job_id, name, format, language, path, size, created_at)
			VALUES ('seed-job', 'seed-job.srt', 'srt', 'en', '/out/seed-job.srt', 42, ?)`, at)
		db.exec(t, raw, `INSERT INTO tokens (hash, job_id, kind, created_at, revoked_at) VALUES (?, 'seed-job', 'pre-recorded', ?, NULL)`,
			store.HashToken("seed-token"), at)
	case 2:
		for _, d := range seededDeliveries() {
			d.event = legacyEvent(d.eventID)
			if schema.events > 0 && schema.version >= schema.events {
				seedEventDelivery(t, db, raw, d)
			} else {
				seedLegacyDelivery(t, db, raw, d)
			}
		}
	case 5:
		db.exec(t, raw, `INSERT INTO sink_state (name, disabled, reason, since) VALUES ('seed-sink', ?, 'HTTP 410', ?)`, true, at)
	}
}

// checkSeeded reads through the contract what seedVersion wrote for every version up to from.
func checkSeeded(t *testing.T, s store.Store, from int, schema schemaAt) {
	t.Helper()
	ctx := t.Context()
	// A job submitted before the reconciliation list, not ended, is listed by its migration.
	if e, err := s.ReconcileEntry(ctx, "seed-submitted"); schema.reconcile > from &&
		(err != nil || !e.DueAt.Equal(time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)) || e.Kind != api.KindPreRecorded) {
		t.Errorf("submitted job after the upgrade: %+v, %v", e, err)
	}
	if e, err := s.ReconcileEntry(ctx, "seed-job"); err == nil {
		t.Errorf("an ended job was listed by the upgrade: %+v", e)
	}
	pending, err := s.PendingInbox(ctx, 0, 0)
	if err != nil || len(pending) != 1 || pending[0].DedupeKey != "seed-pending" || string(pending[0].Body) != `{"id":"seed-job"}` {
		t.Errorf("pending inbox after the upgrade: %+v, %v", pending, err)
	}
	if q, err := s.Quarantined(ctx, 0); err != nil || len(q) != 1 || string(q[0].Body) != "garbage" {
		t.Errorf("quarantine after the upgrade: %+v, %v", q, err)
	}
	if j, err := s.GetJob(ctx, "seed-job"); err != nil || j.Job.Status != api.StatusDone || j.Local.Source != "callback" {
		t.Errorf("job after the upgrade: %+v, %v", j, err)
	}
	if m, err := s.LiveMessages(ctx, "seed-session", 0, 0); err != nil || len(m) != 1 || string(m[0].Payload) != `{"type":"transcript"}` {
		t.Errorf("live messages after the upgrade: %+v, %v", m, err)
	}
	if a, err := s.Artifacts(ctx, "seed-job"); err != nil || len(a) != 1 || a[0].Size != 42 {
		t.Errorf("artifacts after the upgrade: %+v, %v", a, err)
	}
	if tok, err := s.LookupToken(ctx, store.HashToken("seed-token")); err != nil || tok.JobID != "seed-job" {
		t.Errorf("token after the upgrade: %+v, %v", tok, err)
	}
	if from < 2 {
		return
	}
	checkSeededDeliveries(t, s)
	if from < 5 {
		return
	}
	if st, err := s.SinkStates(ctx); err != nil || len(st) != 1 || !st[0].Disabled || st[0].Reason != "HTTP 410" {
		t.Errorf("sink states after the upgrade: %+v, %v", st, err)
	}
}

// checkSeededDeliveries reads the deliveries of seededDeliveries through the contract, after
// an upgrade: each as it was (id, times, attempts, error, and the event's bytes as stored),
// claimed or listed as its status says, and still queued once per (sink, event).
func checkSeededDeliveries(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	seeded := seededDeliveries()
	// Ids were given in insertion order, from 1 (a new table).
	check := func(what string, got store.SinkDelivery, i int) {
		t.Helper()
		d := seeded[i]
		if got.ID != int64(i+1) || got.Sink != d.sink || got.EventID != d.eventID || got.OrderKey != d.orderKey ||
			got.Attempts != d.attempts || got.LastError != d.lastError || !got.NextAttempt.Equal(d.next) ||
			!got.CreatedAt.Equal(d.created) || !got.FailedAt.Equal(d.failed) {
			t.Errorf("%s after the upgrade: %+v, want id %d and %+v", what, got, i+1, d)
		}
		var want api.Event
		if err := json.Unmarshal([]byte(legacyEvent(d.eventID)), &want); err != nil {
			t.Fatal(err)
		}
		// Data as stored, byte for byte (its spaces too); the rest as decoded from it.
		if string(got.Event.Data) != string(want.Data) || string(got.Event.CustomMetadata) != string(want.CustomMetadata) ||
			got.Event.ID != want.ID || got.Event.Type != want.Type || !got.Event.CreatedAt.Equal(want.CreatedAt.Time) ||
			got.Event.JobID != want.JobID || got.Event.Kind != want.Kind {
			t.Errorf("%s's event after the upgrade: %+v, want %+v", what, got.Event, want)
		}
	}
	dead, err := s.DeadLetters(ctx, "", time.Time{}, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead letters after the upgrade: %+v, %v", dead, err)
	}
	check("dead letter", dead[0], 1)
	now := time.Now()
	got, err := s.ClaimSinkDeliveries(ctx, "seed-sink", true, now, 24*time.Hour, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("queued delivery after the upgrade: %+v, %v", got, err)
	}
	check("queued delivery", got[0], 0)
	got, err = s.ClaimSinkDeliveries(ctx, "seed-files", true, now, 24*time.Hour, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("queued delivery of the second sink after the upgrade: %+v, %v", got, err)
	}
	check("queued delivery of the same event to another sink", got[0], 4)
	// The leased one is claimed once its lease has ended, not before.
	got, err = s.ClaimSinkDeliveries(ctx, "seed-sink", true, now.Add(2*time.Hour), time.Minute, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("leased delivery after its lease: %+v, %v", got, err)
	}
	check("leased delivery", got[0], 2)
	// Queued, dead and delivered, each pair is still known: queueing it again is a no-op. A new
	// event gets an id after the seeded ones.
	var again []store.SinkDelivery
	for _, d := range seeded {
		again = append(again, store.SinkDelivery{Sink: d.sink, EventID: d.eventID,
			Event: api.Event{ID: d.eventID, Type: "changed"}, OrderKey: d.orderKey})
	}
	again = append(again, store.SinkDelivery{Sink: "seed-sink", Event: api.Event{ID: "seed-ev-new", Type: "new"}})
	if err := s.EnqueueSinkDeliveries(ctx, again); err != nil {
		t.Fatalf("enqueue after the upgrade: %v", err)
	}
	if n, err := s.SinkDepth(ctx, "seed-sink"); err != nil || n != 3 {
		t.Errorf("depth of seed-sink after queueing its deliveries again and a new one: %d, %v; want 3", n, err)
	}
	got, err = s.ClaimSinkDeliveries(ctx, "seed-sink", false, now.Add(4*time.Hour), time.Minute, 0)
	if err != nil || len(got) != 2 || got[1].EventID != "seed-ev-new" || got[1].ID <= int64(len(seeded)) {
		t.Fatalf("claim after the upgrade: %+v, %v; want the leased one and seed-ev-new after it", got, err)
	}
	check("leased delivery, queued again", got[0], 2)
}

// migrationsFromEveryVersion builds the schema of every earlier version with representative
// rows in each table, opens the store on it (which upgrades it to the latest), and checks that
// every row reads back through the contract and that the store then works: a new delivery
// ingests and applies. Migrations only go forward, and each must work from any version before.
func migrationsFromEveryVersion(t *testing.T, db Database) {
	ms, err := sqlcore.LoadMigrations(db.Files)
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range ms[:len(ms)-1] {
		t.Run(fmt.Sprintf("from %d", from.Version), func(t *testing.T) {
			raw, open := db.New(t, from.Version)
			for _, mg := range ms {
				if mg.Version <= from.Version {
					seedVersion(t, db, raw, mg.Version, schemaOf(ms, from.Version))
				}
			}
			s := open(t)
			var latest, rows int
			if err := raw.QueryRowContext(t.Context(), `SELECT max(version), count(*) FROM schema_migrations`).Scan(&latest, &rows); err != nil {
				t.Fatal(err)
			}
			if latest != ms[len(ms)-1].Version || rows != len(ms) {
				t.Fatalf("after the upgrade: schema version %d with %d rows, want %d with %d", latest, rows, ms[len(ms)-1].Version, len(ms))
			}
			checkSeeded(t, s, from.Version, schemaOf(ms, from.Version))
			res, err := s.Ingest(t.Context(), []store.Delivery{{DedupeKey: "after-upgrade", Route: "job", Kind: api.CallbackJobError,
				Event: "transcription.error", JobID: "new-job", PartitionKey: "new-job", Body: []byte(`{}`), ReceivedAt: time.Now()}})
			if err != nil {
				t.Fatalf("ingest after the upgrade: %v", err)
			}
			if err := s.Apply(t.Context(), res[0].ID, func(ctx context.Context, tx store.Tx) error {
				return tx.PutJob(ctx, store.JobRecord{Job: api.Job{ID: "new-job", Kind: api.KindPreRecorded, Status: api.StatusError,
					CreatedAt: api.NewTime(time.Now())}, Local: store.Local{Source: "callback"}})
			}); err != nil {
				t.Errorf("apply after the upgrade: %v", err)
			}
		})
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
