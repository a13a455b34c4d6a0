package sqlcore

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// PutJob stores a job record outside a delivery, replacing the one with the same id. Its
// content comes from the caller, not from the inbox, so it commits durably.
func (c *Core) PutJob(ctx context.Context, rec store.JobRecord) error {
	_, err := c.writeJobTx(ctx, "put job", StJobReplace, rec)
	return err
}

// CreateJob stores rec unless a record with its id exists; the primary key decides, so a
// callback's record committed first (by another replica, too) is kept. The submitter records
// a job it created, which nothing could derive again: it commits durably.
func (c *Core) CreateJob(ctx context.Context, rec store.JobRecord) (bool, error) {
	var wrote bool
	const op = "create job"
	err := c.inTx(ctx, op, Durable, func() string { return op + " " + rec.Job.ID }, func(t Tx) error {
		var err error
		if wrote, err = c.writeJob(ctx, t, StJobCreate, rec); err != nil {
			return err
		}
		// Listed in the same transaction: a job the kit created is never left unwatched.
		return c.listReconcile(ctx, t, rec)
	})
	if err != nil {
		return false, err
	}
	return wrote, nil
}

func (c *Core) writeJobTx(ctx context.Context, op string, st Stmt, rec store.JobRecord) (bool, error) {
	var wrote bool
	err := c.inTx(ctx, op, Durable|OneStatement, func() string { return op + " " + rec.Job.ID }, func(t Tx) error {
		var err error
		wrote, err = c.writeJob(ctx, t, st, rec)
		return err
	})
	if err != nil {
		return false, err
	}
	return wrote, nil
}

// writeJob runs the job insert st (StJobReplace or StJobCreate) for rec and reports whether a
// row was written. Besides the record, the columns hold copies of the fields the list filters
// use, derived from the record exactly as its JSON encodes them, so the SQL filters of ListJobs
// agree with api.ListQuery.Matches run on the decoded record.
func (c *Core) writeJob(ctx context.Context, t Tx, st Stmt, rec store.JobRecord) (bool, error) {
	record, local, err := EncodeJob(rec)
	if err != nil {
		return false, err
	}
	j := &rec.Job
	// api.Time encodes milliseconds: the columns hold what a decoded record holds.
	created := j.CreatedAt.UTC().Truncate(time.Millisecond)
	// The years api.ParseTime reads back: a record outside them could not be read again (and
	// SQLite's fixed-width text order needs them too).
	if y := created.Year(); y < 0 || y > 9999 {
		return false, fmt.Errorf("put job %s: created_at %s is outside years 0000 to 9999", j.ID, created)
	}
	var completed, metadata any
	if j.CompletedAt != nil && !j.CompletedAt.IsZero() {
		completed = c.d.Time(j.CompletedAt.UTC().Truncate(time.Millisecond))
	}
	if m := bytes.TrimSpace(j.CustomMetadata); len(m) > 0 {
		metadata = c.d.JSON(m)
	}
	d := c.d
	res, err := t.Exec(ctx, st, d.text(j.ID), d.text(string(j.Kind)), d.text(string(j.Status)), d.Time(created),
		completed, metadata, d.JSON(record), string(local))
	if err != nil {
		return false, fmt.Errorf("put job %s: %w", j.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("put job %s: %w", j.ID, err)
	}
	return n > 0, nil
}

// ListJobs pages the jobs that pass q's filters, newest first (created_at, then id, both
// descending). Status, kind and the dates are filtered in SQL on indexed columns; without a
// custom_metadata filter SQL also bounds the rows read to the page and one more. The
// custom_metadata subset, whose rules (nested objects, exact numbers, arrays compared whole)
// are neither SQL's nor JSONB containment's, is then checked by api.ListQuery.Matches on the
// light columns, and only the page's records are read and decoded, in one statement. Both steps
// run in one read transaction (Dialect.ListTx), so the page is one snapshot.
func (r *Reader) ListJobs(ctx context.Context, q api.ListQuery) (store.JobPage, error) {
	limit := q.EffectiveLimit()
	if limit < 1 {
		limit = api.DefaultListLimit
	}
	offset := max(q.EffectiveOffset(), 0)
	where, args := r.listFilter(q)
	query := `SELECT id, status, kind, created_at, custom_metadata FROM jobs` + where +
		` ORDER BY created_at DESC, id DESC`
	if !q.HasMetadataFilter() {
		query += ` LIMIT ?`
		args = append(args, offset+limit+1)
	}
	rtx, err := r.db.BeginTx(ctx, r.d.ListTx)
	if err != nil {
		return store.JobPage{}, fmt.Errorf("list jobs: begin: %w", err)
	}
	defer func() { _ = rtx.Rollback() }()
	ids, more, err := pageIDs(ctx, rtx, r.d.Rebind(query), args, q, offset, limit)
	if err != nil {
		return store.JobPage{}, fmt.Errorf("list jobs: %w", err)
	}
	page := store.JobPage{Items: make([]store.JobRecord, 0, len(ids)), More: more}
	if len(ids) == 0 {
		return page, nil
	}
	byID, err := r.jobsByID(ctx, rtx, ids)
	if err != nil {
		return store.JobPage{}, fmt.Errorf("list jobs: %w", err)
	}
	for _, id := range ids {
		rec, ok := byID[id]
		if !ok {
			return store.JobPage{}, fmt.Errorf("list jobs: job %s: listed but not read", id)
		}
		page.Items = append(page.Items, rec)
	}
	return page, nil
}

// pageIDs reads the light columns and keeps the ids of the page's rows that Matches accepts.
func pageIDs(ctx context.Context, q Querier, query string, args []any, lq api.ListQuery, offset, limit int) ([]string, bool, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var ids []string
	skip := offset
	for rows.Next() {
		var (
			id, status, kind string
			created          Time
			metadata         []byte
		)
		if err := rows.Scan(&id, &status, &kind, &created, &metadata); err != nil {
			return nil, false, err
		}
		light := api.Job{Status: api.JobStatus(status), Kind: api.JobKind(kind), CreatedAt: api.Time{Time: created.T},
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

// jobsByID reads the records of ids (stored ids, as pageIDs read them).
func (r *Reader) jobsByID(ctx context.Context, q Querier, ids []string) (map[string]store.JobRecord, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.QueryContext(ctx, r.d.Rebind(`SELECT id, record, local FROM jobs WHERE id IN (`+marks(len(ids))+`)`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := make(map[string]store.JobRecord, len(ids))
	for rows.Next() {
		var (
			id            string
			record, local []byte
		)
		if err := rows.Scan(&id, &record, &local); err != nil {
			return nil, err
		}
		rec, err := DecodeJob(record, local)
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", id, err)
		}
		byID[id] = rec
	}
	return byID, rows.Err()
}

// marks is n placeholders separated by commas.
func marks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// listFilter builds the WHERE clause of the filters SQL checks exactly like Matches, with ?
// placeholders.
func (r *Reader) listFilter(q api.ListQuery) (string, []any) {
	var conds []string
	var args []any
	in := func(col string, vals []string) {
		conds = append(conds, col+" IN ("+marks(len(vals))+")")
		for _, v := range vals {
			args = append(args, r.d.text(v))
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
			conds = append(conds, "FALSE")
		} else {
			conds = append(conds, "created_at >= ? AND created_at < ?")
			args = append(args, r.d.Time(day), r.d.Time(day.AddDate(0, 0, 1)))
		}
	}
	if t, err := api.ParseTime(q.BeforeDate); q.BeforeDate != "" && err == nil {
		conds = append(conds, "created_at < ?")
		args = append(args, r.d.Time(t))
	}
	if t, err := api.ParseTime(q.AfterDate); q.AfterDate != "" && err == nil {
		conds = append(conds, "created_at > ?")
		args = append(args, r.d.Time(t))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
