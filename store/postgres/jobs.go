package postgres

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// tx is the store.Tx given to Apply's function: the same statements as the Store's, bound to
// Apply's transaction.
type tx struct{ q *sql.Tx }

// Job reads a record for a read-modify-write (the handlers load, update and put it back). With
// several replicas two Applies of one job can run at once, and under READ COMMITTED the later
// PutJob would overwrite the earlier one's update with a record computed before it. So Job first
// takes a transaction-level advisory lock on the job id, held until the Apply ends, and reads in
// a statement of its own, whose snapshot follows the lock: Applies of one job run one after the
// other, whether or not its row exists yet. That also keeps the sink deliveries they queue in
// commit order.
func (t *tx) Job(ctx context.Context, id string) (store.JobRecord, error) {
	if _, err := t.q.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, jobLockKey(text(id))); err != nil {
		return store.JobRecord{}, fmt.Errorf("job %s: lock: %w", id, err)
	}
	return getJob(ctx, t.q, id)
}

// jobLockKey is the advisory lock of one job id.
func jobLockKey(id string) int64 {
	h := fnv.New64a()
	h.Write([]byte("scribehook/store/postgres job\x00"))
	h.Write([]byte(id))
	return int64(h.Sum64())
}

func (t *tx) PutJob(ctx context.Context, rec store.JobRecord) error {
	_, err := writeJob(ctx, t.q, rec, true)
	return err
}

func (t *tx) AppendLiveMessage(ctx context.Context, m store.LiveMessage) (int64, error) {
	return appendLiveMessage(ctx, t.q, m)
}

func (t *tx) Quarantine(ctx context.Context, row store.InboxRow, reason string) error {
	h, err := sqlcore.EncodeHeaders(row.Headers, text)
	if err != nil {
		return err
	}
	if _, err := t.q.ExecContext(ctx, `INSERT INTO quarantine (dedupe_key, route, reason, headers, body, received_at)
		VALUES ($1, $2, $3, $4::jsonb, $5, $6) ON CONFLICT (dedupe_key) DO NOTHING`,
		store.AfterFinalKey(row), text(row.Route), text(reason), nullString(h), sqlcore.Blob(row.Body), timePtr(row.ReceivedAt)); err != nil {
		return fmt.Errorf("quarantine inbox row %d: %w", row.ID, err)
	}
	return nil
}

func (t *tx) PutArtifact(ctx context.Context, a store.Artifact) error {
	return putArtifact(ctx, t.q, a)
}

// PutJob stores a job record outside a delivery, replacing the one with the same id.
func (s *Store) PutJob(ctx context.Context, rec store.JobRecord) error {
	_, err := writeJob(ctx, s.db, rec, true)
	return err
}

// CreateJob stores rec unless a record with its id exists; the primary key decides, so a
// callback's record committed by another replica first is kept.
func (s *Store) CreateJob(ctx context.Context, rec store.JobRecord) (bool, error) {
	return writeJob(ctx, s.db, rec, false)
}

// jobColumns are the indexed copies of a record's fields, derived from the record exactly as
// its JSON encodes them, so the SQL filters of ListJobs agree with api.ListQuery.Matches run
// on the decoded record.
type jobColumns struct {
	createdAt   time.Time
	completedAt sql.NullTime
	metadata    []byte // nil for none
}

func deriveColumns(j *api.Job) jobColumns {
	// api.Time encodes milliseconds: the column holds what a decoded record holds.
	c := jobColumns{createdAt: j.CreatedAt.UTC().Truncate(time.Millisecond)}
	if j.CompletedAt != nil && !j.CompletedAt.IsZero() {
		c.completedAt = nullTime(j.CompletedAt.UTC().Truncate(time.Millisecond))
	}
	if m := bytes.TrimSpace(j.CustomMetadata); len(m) > 0 {
		c.metadata = m
	}
	return c
}

// writeJob inserts rec, replacing an existing record when replace is set; it reports whether
// a row was written.
func writeJob(ctx context.Context, q sqlcore.Querier, rec store.JobRecord, replace bool) (bool, error) {
	record, local, err := sqlcore.EncodeJob(rec)
	if err != nil {
		return false, err
	}
	cols := deriveColumns(&rec.Job)
	conflict := `ON CONFLICT (id) DO NOTHING`
	if replace {
		conflict = `ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, status = excluded.status,
		created_at = excluded.created_at, completed_at = excluded.completed_at,
		custom_metadata = excluded.custom_metadata, record = excluded.record, local = excluded.local`
	}
	res, err := q.ExecContext(ctx, `INSERT INTO jobs (id, kind, status, created_at, completed_at,
		custom_metadata, record, local) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) `+conflict,
		text(rec.Job.ID), text(string(rec.Job.Kind)), text(string(rec.Job.Status)), cols.createdAt,
		cols.completedAt, cols.metadata, record, string(local))
	if err != nil {
		return false, fmt.Errorf("put job %s: %w", rec.Job.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("put job %s: %w", rec.Job.ID, err)
	}
	return n > 0, nil
}

func getJob(ctx context.Context, q sqlcore.Querier, id string) (store.JobRecord, error) {
	return sqlcore.GetJob(ctx, q, `SELECT record, local FROM jobs WHERE id = $1`, text(id), id)
}

// ListJobs pages the jobs that pass q's filters, newest first (created_at, then id, both
// descending). Status, kind and the dates are filtered in SQL on indexed columns. Without a
// custom_metadata filter SQL also pages. With one, the light columns of every row passing the
// SQL filters are read and api.ListQuery.Matches decides, since its rules (nested subsets,
// exact numbers, arrays compared whole) are not those of JSONB containment; only the page's
// records are then read. Both steps run in one REPEATABLE READ transaction: one snapshot.
func (s *Store) ListJobs(ctx context.Context, q api.ListQuery) (store.JobPage, error) {
	limit := q.EffectiveLimit()
	if limit < 1 {
		limit = api.DefaultListLimit
	}
	offset := max(q.EffectiveOffset(), 0)
	where, args := listFilter(q)

	rtx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return store.JobPage{}, fmt.Errorf("list jobs: begin: %w", err)
	}
	defer func() { _ = rtx.Rollback() }()

	var page store.JobPage
	if !q.HasMetadataFilter() {
		page, err = listPage(ctx, rtx, where, args, offset, limit)
	} else {
		page, err = listMatching(ctx, rtx, where, args, q, offset, limit)
	}
	if err != nil {
		return store.JobPage{}, fmt.Errorf("list jobs: %w", err)
	}
	if err := rtx.Commit(); err != nil {
		return store.JobPage{}, fmt.Errorf("list jobs: %w", err)
	}
	return page, nil
}

// listPage reads the page, and one more row to tell whether another page follows.
func listPage(ctx context.Context, q sqlcore.Querier, where string, args []any, offset, limit int) (store.JobPage, error) {
	n := len(args)
	rows, err := q.QueryContext(ctx, `SELECT record, local FROM jobs`+where+
		` ORDER BY created_at DESC, id DESC LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2),
		append(args, limit+1, offset)...)
	if err != nil {
		return store.JobPage{}, err
	}
	defer rows.Close()
	page := store.JobPage{Items: []store.JobRecord{}}
	for rows.Next() {
		var (
			record []byte
			local  string
		)
		if err := rows.Scan(&record, &local); err != nil {
			return store.JobPage{}, err
		}
		if len(page.Items) == limit {
			page.More = true
			break
		}
		rec, err := sqlcore.DecodeJob(record, []byte(local))
		if err != nil {
			return store.JobPage{}, err
		}
		page.Items = append(page.Items, rec)
	}
	return page, rows.Err()
}

// listMatching filters the light columns with Matches, then reads the page's records.
func listMatching(ctx context.Context, q sqlcore.Querier, where string, args []any, lq api.ListQuery, offset, limit int) (store.JobPage, error) {
	ids, more, err := matchingIDs(ctx, q, where, args, lq, offset, limit)
	if err != nil {
		return store.JobPage{}, err
	}
	page := store.JobPage{Items: make([]store.JobRecord, 0, len(ids)), More: more}
	if len(ids) == 0 {
		return page, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT id, record, local FROM jobs WHERE id = ANY($1)`, ids)
	if err != nil {
		return store.JobPage{}, err
	}
	defer rows.Close()
	byID := make(map[string]store.JobRecord, len(ids))
	for rows.Next() {
		var (
			id     string
			record []byte
			local  string
		)
		if err := rows.Scan(&id, &record, &local); err != nil {
			return store.JobPage{}, err
		}
		rec, err := sqlcore.DecodeJob(record, []byte(local))
		if err != nil {
			return store.JobPage{}, fmt.Errorf("job %s: %w", id, err)
		}
		byID[id] = rec
	}
	if err := rows.Err(); err != nil {
		return store.JobPage{}, err
	}
	for _, id := range ids {
		rec, ok := byID[id]
		if !ok {
			return store.JobPage{}, fmt.Errorf("job %s: listed but not read", id)
		}
		page.Items = append(page.Items, rec)
	}
	return page, nil
}

func matchingIDs(ctx context.Context, q sqlcore.Querier, where string, args []any, lq api.ListQuery, offset, limit int) ([]string, bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, status, kind, created_at, custom_metadata FROM jobs`+where+
		` ORDER BY created_at DESC, id DESC`, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var ids []string
	skip := offset
	for rows.Next() {
		var (
			id, status, kind string
			created          time.Time
			metadata         []byte
		)
		if err := rows.Scan(&id, &status, &kind, &created, &metadata); err != nil {
			return nil, false, err
		}
		light := api.Job{Status: api.JobStatus(status), Kind: api.JobKind(kind), CreatedAt: api.Time{Time: created},
			CustomMetadata: metadata}
		if !lq.Matches(&light) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if len(ids) == limit {
			return ids, true, nil
		}
		ids = append(ids, id)
	}
	return ids, false, rows.Err()
}

// listFilter builds the WHERE clause of the filters SQL checks exactly like Matches, with
// placeholders from $1.
func listFilter(q api.ListQuery) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(q.Status) > 0 {
		vals := make([]string, len(q.Status))
		for i, s := range q.Status {
			vals[i] = text(string(s))
		}
		conds = append(conds, "status = ANY("+arg(vals)+")")
	}
	if len(q.Kind) > 0 {
		vals := make([]string, len(q.Kind))
		for i, k := range q.Kind {
			vals[i] = text(string(k))
		}
		conds = append(conds, "kind = ANY("+arg(vals)+")")
	}
	if q.Date != "" {
		day, err := time.Parse(api.DateLayout, q.Date)
		if err != nil || day.Format(api.DateLayout) != q.Date {
			// Matches compares the formatted day with the string: nothing can match.
			conds = append(conds, "FALSE")
		} else {
			conds = append(conds, "created_at >= "+arg(day)+" AND created_at < "+arg(day.AddDate(0, 0, 1)))
		}
	}
	if t, err := api.ParseTime(q.BeforeDate); q.BeforeDate != "" && err == nil {
		conds = append(conds, "created_at < "+arg(t))
	}
	if t, err := api.ParseTime(q.AfterDate); q.AfterDate != "" && err == nil {
		conds = append(conds, "created_at > "+arg(t))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// appendLiveMessage takes the session's next number from its live_sequences row and inserts
// the message, in one statement. The upsert locks the counter row until Apply's transaction
// ends, so a concurrent Apply of the same session, on any replica, waits here and then reads
// the committed number (or the old one, when this transaction rolls back): numbers follow
// commit order, without gaps or repeats.
func appendLiveMessage(ctx context.Context, q sqlcore.Querier, m store.LiveMessage) (int64, error) {
	if m.SessionID == "" {
		return 0, errors.New("append live message: empty session id")
	}
	var seq int64
	if err := q.QueryRowContext(ctx, `WITH next AS (
			INSERT INTO live_sequences AS s (session_id, last_seq) VALUES ($1, 1)
			ON CONFLICT (session_id) DO UPDATE SET last_seq = s.last_seq + 1
			RETURNING last_seq)
		INSERT INTO live_messages (session_id, seq, type, category, created_at, received_at, inbox_id, payload)
		SELECT $1, next.last_seq, $2, $3, $4, $5, $6, $7 FROM next
		RETURNING seq`,
		text(m.SessionID), text(string(m.Type)), text(string(m.Category)), nullTime(m.CreatedAt),
		nullTime(m.ReceivedAt), m.InboxID, sqlcore.Blob(m.Payload)).Scan(&seq); err != nil {
		return 0, fmt.Errorf("append live message to %s: %w", m.SessionID, err)
	}
	return seq, nil
}

// putArtifact stores an artifact, replacing the job's artifact of the same name.
func putArtifact(ctx context.Context, q sqlcore.Querier, a store.Artifact) error {
	if a.JobID == "" || a.Name == "" {
		return errors.New("put artifact: job id and name are required")
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO artifacts (job_id, name, format, language, path, size,
		created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (job_id, name) DO UPDATE SET format = excluded.format, language = excluded.language,
		path = excluded.path, size = excluded.size, created_at = excluded.created_at`,
		text(a.JobID), text(a.Name), text(a.Format), text(a.Language), text(a.Path), a.Size,
		nullTime(a.CreatedAt)); err != nil {
		return fmt.Errorf("put artifact %s of %s: %w", a.Name, a.JobID, err)
	}
	return nil
}
