package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// tx is the store.Tx given to Apply's function: the Store's statements, bound to Apply's
// transaction. They run with the transaction's context (see wtx), not the one each method is
// given, which is Apply's own or derived from it.
type tx struct{ w *wtx }

func (t *tx) Job(ctx context.Context, id string) (store.JobRecord, error) {
	return scanJob(t.w.stmt(stJobGet).QueryRowContext(t.w.ctx, id), id)
}

func (t *tx) PutJob(ctx context.Context, rec store.JobRecord) error {
	_, err := writeJob(t.w.ctx, t.w.stmt(stJobReplace), rec)
	return err
}

func (t *tx) AppendLiveMessage(ctx context.Context, m store.LiveMessage) (int64, error) {
	return appendLiveMessage(t.w.ctx, t.w.stmt(stLiveAppend), m)
}

func (t *tx) PutArtifact(ctx context.Context, a store.Artifact) error {
	return putArtifact(t.w.ctx, t.w.conn, a)
}

func (t *tx) Quarantine(ctx context.Context, row store.InboxRow, reason string) error {
	h, err := sqlcore.EncodeHeaders(row.Headers, nil)
	if err != nil {
		return err
	}
	// Not stQuarantineInsert: its RETURNING would leave the held connection's statement open.
	if _, err := t.w.conn.ExecContext(t.w.ctx, `INSERT INTO quarantine (dedupe_key, route, reason, headers, body,
		received_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING`,
		store.AfterFinalKey(row), row.Route, reason, h, sqlcore.Blob(row.Body), nullTime(row.ReceivedAt)); err != nil {
		return fmt.Errorf("quarantine inbox row %d: %w", row.ID, err)
	}
	return nil
}

// PutJob stores a job record outside a delivery, replacing the one with the same id. Its
// content comes from the caller, not from the inbox, so it commits durably.
func (s *Store) PutJob(ctx context.Context, rec store.JobRecord) error {
	_, err := s.writeJobTx(ctx, "put job", stJobReplace, rec)
	return err
}

// CreateJob stores rec unless a record with its id exists. The submitter records a job it
// created, which nothing could derive again: it commits durably.
func (s *Store) CreateJob(ctx context.Context, rec store.JobRecord) (bool, error) {
	return s.writeJobTx(ctx, "create job", stJobCreate, rec)
}

func (s *Store) writeJobTx(ctx context.Context, op string, st stmtID, rec store.JobRecord) (bool, error) {
	w, err := s.begin(ctx, op, durable)
	if err != nil {
		return false, fmt.Errorf("%s %s: begin: %w", op, rec.Job.ID, err)
	}
	defer w.rollback()
	wrote, err := writeJob(w.ctx, w.stmt(st), rec)
	if err != nil {
		return false, err
	}
	if err := w.commit(); err != nil {
		return false, fmt.Errorf("%s %s: commit: %w", op, rec.Job.ID, err)
	}
	return wrote, nil
}

// jobColumns are the indexed copies of a record's fields, derived from the record exactly as
// its JSON encodes them, so the SQL filters of ListJobs agree with api.ListQuery.Matches run
// on the decoded record.
type jobColumns struct {
	createdAt   string
	completedAt sql.NullString
	metadata    sql.NullString
}

func deriveColumns(j *api.Job) (jobColumns, error) {
	// api.Time encodes milliseconds: the column holds what a decoded record holds.
	created := j.CreatedAt.UTC().Truncate(time.Millisecond)
	// The years api.ParseTime reads back; the fixed-width text order also needs them.
	if y := created.Year(); y < 0 || y > 9999 {
		return jobColumns{}, fmt.Errorf("created_at %s is outside years 0000 to 9999", created)
	}
	c := jobColumns{createdAt: formatTime(created)}
	if j.CompletedAt != nil && !j.CompletedAt.IsZero() {
		c.completedAt = nullTime(j.CompletedAt.UTC().Truncate(time.Millisecond))
	}
	if m := bytes.TrimSpace(j.CustomMetadata); len(m) > 0 {
		c.metadata = sql.NullString{String: string(m), Valid: true}
	}
	return c, nil
}

// writeJob runs the job insert st (stJobReplace or stJobCreate) for rec and reports whether a
// row was written.
func writeJob(ctx context.Context, st *sql.Stmt, rec store.JobRecord) (bool, error) {
	record, local, err := sqlcore.EncodeJob(rec)
	if err != nil {
		return false, err
	}
	cols, err := deriveColumns(&rec.Job)
	if err != nil {
		return false, fmt.Errorf("put job %s: %w", rec.Job.ID, err)
	}
	res, err := st.ExecContext(ctx, rec.Job.ID, string(rec.Job.Kind), string(rec.Job.Status), cols.createdAt, cols.completedAt,
		cols.metadata, string(record), string(local))
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
	return sqlcore.GetJob(ctx, q, `SELECT record, local FROM jobs WHERE id = ?`, id, id)
}

func scanJob(row *sql.Row, id string) (store.JobRecord, error) {
	rec, err := sqlcore.ScanJob(row)
	if err != nil {
		return store.JobRecord{}, fmt.Errorf("job %s: %w", id, sqlcore.NotFound(err))
	}
	return rec, nil
}

// ListJobs pages the jobs that pass q's filters, newest first (created_at, then id, both
// descending). Status, kind and the dates are filtered in SQL on indexed columns; the
// custom_metadata subset, whose rules (nested objects, exact numbers) SQL cannot express, is
// then checked by api.ListQuery.Matches on the light columns, and only the page's records are
// read and decoded. Both steps run in one read transaction, so the page is one snapshot.
func (s *Store) ListJobs(ctx context.Context, q api.ListQuery) (store.JobPage, error) {
	limit := q.EffectiveLimit()
	if limit < 1 {
		limit = api.DefaultListLimit
	}
	offset := max(q.EffectiveOffset(), 0)
	where, args := listFilter(q)
	query := `SELECT id, status, kind, created_at, custom_metadata FROM jobs` + where +
		` ORDER BY created_at DESC, id DESC`
	if !q.HasMetadataFilter() {
		// SQL filters everything: only the page and one more row are needed.
		query += ` LIMIT ?`
		args = append(args, offset+limit+1)
	}

	rtx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return store.JobPage{}, fmt.Errorf("list jobs: %w", err)
	}
	defer func() { _ = rtx.Rollback() }()
	ids, more, err := pageIDs(ctx, rtx, query, args, q, offset, limit)
	if err != nil {
		return store.JobPage{}, fmt.Errorf("list jobs: %w", err)
	}
	page := store.JobPage{Items: make([]store.JobRecord, 0, len(ids)), More: more}
	for _, id := range ids {
		rec, err := getJob(ctx, rtx, id)
		if err != nil {
			return store.JobPage{}, fmt.Errorf("list jobs: %w", err)
		}
		page.Items = append(page.Items, rec)
	}
	return page, nil
}

func pageIDs(ctx context.Context, q sqlcore.Querier, query string, args []any, lq api.ListQuery, offset, limit int) ([]string, bool, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var ids []string
	skip := offset
	for rows.Next() {
		var (
			id, status, kind, created string
			metadata                  sql.NullString
		)
		if err := rows.Scan(&id, &status, &kind, &created, &metadata); err != nil {
			return nil, false, err
		}
		t, err := time.Parse(time.RFC3339Nano, created)
		if err != nil {
			return nil, false, fmt.Errorf("job %s: stored created_at %q: %w", id, created, err)
		}
		light := api.Job{Status: api.JobStatus(status), Kind: api.JobKind(kind), CreatedAt: api.Time{Time: t}}
		if metadata.Valid {
			light.CustomMetadata = json.RawMessage(metadata.String)
		}
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

// listFilter builds the WHERE clause of the filters SQL checks exactly like Matches.
func listFilter(q api.ListQuery) (string, []any) {
	var conds []string
	var args []any
	in := func(col string, vals []string) {
		conds = append(conds, col+" IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", ")+")")
		for _, v := range vals {
			args = append(args, v)
		}
	}
	if len(q.Status) > 0 {
		vals := make([]string, len(q.Status))
		for i, s := range q.Status {
			vals[i] = string(s)
		}
		in("status", vals)
	}
	if len(q.Kind) > 0 {
		vals := make([]string, len(q.Kind))
		for i, k := range q.Kind {
			vals[i] = string(k)
		}
		in("kind", vals)
	}
	if q.Date != "" {
		day, err := time.Parse(api.DateLayout, q.Date)
		if err != nil || day.Format(api.DateLayout) != q.Date {
			// Matches compares the formatted day with the string: nothing can match.
			conds = append(conds, "0")
		} else {
			conds = append(conds, "created_at >= ? AND created_at < ?")
			args = append(args, formatTime(day), formatTime(day.AddDate(0, 0, 1)))
		}
	}
	if t, err := api.ParseTime(q.BeforeDate); q.BeforeDate != "" && err == nil {
		conds = append(conds, "created_at < ?")
		args = append(args, formatTime(t))
	}
	if t, err := api.ParseTime(q.AfterDate); q.AfterDate != "" && err == nil {
		conds = append(conds, "created_at > ?")
		args = append(args, formatTime(t))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// appendLiveMessage numbers the message inside the statement st (stLiveAppend) that inserts
// it.
func appendLiveMessage(ctx context.Context, st *sql.Stmt, m store.LiveMessage) (int64, error) {
	if m.SessionID == "" {
		return 0, errors.New("append live message: empty session id")
	}
	var seq int64
	if err := st.QueryRowContext(ctx, m.SessionID, string(m.Type), string(m.Category), nullTime(m.CreatedAt),
		nullTime(m.ReceivedAt), m.InboxID, string(m.Payload)).Scan(&seq); err != nil {
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
		created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (job_id, name) DO UPDATE SET format = excluded.format, language = excluded.language,
		path = excluded.path, size = excluded.size, created_at = excluded.created_at`,
		a.JobID, a.Name, a.Format, a.Language, a.Path, a.Size, nullTime(a.CreatedAt)); err != nil {
		return fmt.Errorf("put artifact %s of %s: %w", a.Name, a.JobID, err)
	}
	return nil
}
