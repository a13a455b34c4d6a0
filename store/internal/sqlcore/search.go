package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// searchRow is an utterance as StSearchIndex reads it from its JSON argument: one statement
// inserts a whole result's utterances (on PostgreSQL one round trip, not one per utterance).
type searchRow struct {
	JobID       string  `json:"j"`
	Ref         string  `json:"r"`
	InboxID     int64   `json:"i"`
	Start       float64 `json:"s"`
	End         float64 `json:"e"`
	Speaker     *int    `json:"k"`
	Language    string  `json:"l"`
	Translation bool    `json:"t"`
	Text        string  `json:"x"`
}

// searchBatch bounds the utterances of one StSearchIndex.
const searchBatch = 1000

// IndexUtterances adds us to the search index in Apply's transaction.
func (a *applyTx) IndexUtterances(ctx context.Context, us []store.Utterance) error {
	return indexUtterances(ctx, a.c.d, func(st Stmt, args ...any) (sql.Result, error) { return a.t.Exec(ctx, st, args...) },
		func(st Stmt, args ...any) *sql.Row { return a.t.QueryRow(ctx, st, args...) }, us)
}

// indexUtterances inserts us, a batch at a time, through exec and queryRow (a dialect's Tx,
// or a migration's transaction): rows whose (job, ref) is indexed already are left out, and
// where the text index is a table of its own (SQLite's FTS5) the new rows are added to it.
func indexUtterances(ctx context.Context, d Dialect, exec func(Stmt, ...any) (sql.Result, error), queryRow func(Stmt, ...any) *sql.Row, us []store.Utterance) error {
	if len(us) == 0 {
		return nil
	}
	if d.SQL[StSearchStale] != "" {
		if _, err := exec(StSearchStale); err != nil {
			return fmt.Errorf("index %d utterances: %w", len(us), err)
		}
	}
	for len(us) > 0 {
		n := min(len(us), searchBatch)
		rows := make([]searchRow, n)
		for i, u := range us[:n] {
			rows[i] = searchRow{JobID: d.text(u.JobID), Ref: d.text(u.Ref), InboxID: u.InboxID, Start: u.Start, End: u.End,
				Speaker: u.Speaker, Language: d.text(u.Language), Translation: u.Translation, Text: d.text(u.Text)}
		}
		b, err := json.Marshal(rows)
		if err != nil {
			return fmt.Errorf("index %d utterances: %w", n, err)
		}
		var before int64
		fts := d.SQL[StSearchFTSAdd] != ""
		if fts {
			if err := queryRow(StSearchMaxID).Scan(&before); err != nil {
				return fmt.Errorf("index %d utterances: %w", n, err)
			}
		}
		if _, err := exec(StSearchIndex, string(b)); err != nil {
			return fmt.Errorf("index %d utterances: %w", n, err)
		}
		if fts {
			if _, err := exec(StSearchFTSAdd, before); err != nil {
				return fmt.Errorf("index %d utterances: text: %w", n, err)
			}
		}
		us = us[n:]
	}
	return nil
}

// pruneSearchJob removes a deleted job's utterances from the index, in the pruner's t.
func (c *Core) pruneSearchJob(ctx context.Context, t Tx, id string) error {
	return c.pruneSearch(ctx, t, StSearchFTSPruneJob, StSearchPruneJob, id)
}

// pruneSearchLive removes the utterances of a live message the pruner deletes (args are
// StPruneLive's), before it goes: only the categories whose messages bring utterances (finals,
// translations, and errors, the first category of a message that failed in part).
func (c *Core) pruneSearchLive(ctx context.Context, t Tx, cat api.MessageCategory, args ...any) error {
	switch cat {
	case api.CategoryFinalTranscripts, api.CategoryRealtimeProcessingEvents, api.CategoryErrors:
	default:
		return nil
	}
	return c.pruneSearch(ctx, t, StSearchFTSPruneLive, StSearchPruneLive, args...)
}

func (c *Core) pruneSearch(ctx context.Context, t Tx, fts, rows Stmt, args ...any) error {
	if c.d.SQL[StSearchStale] != "" {
		if _, err := t.Exec(ctx, StSearchStale); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
	}
	if c.d.SQL[fts] != "" {
		if _, err := t.Exec(ctx, fts, args...); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
	}
	if _, err := t.Exec(ctx, rows, args...); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	return nil
}

// searchStatements adds the search index's statements that both databases write alike.
func searchStatements(d Dialect, q *[NumStmts]string) {
	q[StSearchPruneJob] = `DELETE FROM search_utterances WHERE job_id = ?`
	q[StSearchPruneLive] = `DELETE FROM search_utterances WHERE inbox_id IN (` + PrunedLiveInbox(d) + `) AND inbox_id > 0`
}

// PrunedLiveInbox selects the inbox row of the live message StPruneLive deletes, with its
// arguments in its order and its condition: the utterances go only with their message.
func PrunedLiveInbox(d Dialect) string {
	return `SELECT l.inbox_id FROM live_messages l WHERE ` + liveCond(d) + ` AND l.session_id = ? AND l.seq = ?`
}

// Search lists the utterances that match q (store.Searcher): the dialect's text index finds
// them, the job list's filters (listFilter) bound their jobs in SQL, its custom_metadata
// subset is checked in Go on the page's candidates, as ListJobs does, and each hit's text is
// marked in Go (store.SearchTerms.Highlight) so that both databases mark alike.
func (r *Reader) Search(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	terms, err := store.ParseSearch(q.Text)
	if err != nil {
		return store.SearchPage{}, err
	}
	if r.d.Search == nil {
		return store.SearchPage{}, store.ErrSearchUnavailable
	}
	limit := q.List.EffectiveLimit()
	if limit < 1 {
		limit = api.DefaultListLimit
	}
	offset := max(q.List.EffectiveOffset(), 0)
	where, args := r.listFilter(q.List)
	conds := []string{r.d.Search.Match}
	args = append([]any{r.d.Search.Arg(terms)}, args...)
	if where != "" {
		conds = append(conds, strings.TrimPrefix(where, " WHERE "))
	}
	if !q.Translations {
		conds = append(conds, "s.translation = "+r.falseSQL())
	}
	if q.Language != "" {
		conds = append(conds, "s.language = ?")
		args = append(args, r.d.text(q.Language))
	}
	from := r.d.Search.From + ` JOIN jobs j ON j.id = s.job_id`
	jobsFirst, err := r.jobsFirst(ctx, terms, q.List)
	if err != nil {
		return store.SearchPage{}, fmt.Errorf("search: %w", err)
	}
	if jobsFirst {
		// CROSS JOIN keeps the order written: SQLite then walks jobs_created.
		from, conds[0] = `jobs j CROSS JOIN search_utterances s ON s.job_id = j.id`, r.d.Search.JobsFirst
	}
	query := `SELECT s.job_id, j.kind, j.status, j.created_at, j.custom_metadata, s.start_s, s.end_s, s.speaker,
		s.language, s.translation, s.text FROM ` + from + `
		WHERE ` + strings.Join(conds, " AND ") + ` ORDER BY j.created_at DESC, j.id DESC, s.start_s, s.sid`
	if !q.List.HasMetadataFilter() {
		query += ` LIMIT ?`
		args = append(args, offset+limit+1)
	}
	rows, err := r.db.QueryContext(ctx, r.d.Rebind(query), args...)
	if err != nil {
		return store.SearchPage{}, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	page := store.SearchPage{Items: []store.SearchHit{}}
	skip := offset
	for rows.Next() {
		var (
			h            store.SearchHit
			kind, status string
			created      Time
			metadata     []byte
			speaker      sql.NullInt64
			translation  bool
		)
		if err := rows.Scan(&h.JobID, &kind, &status, &created, &metadata, &h.Start, &h.End, &speaker, &h.Language,
			&translation, &h.Text); err != nil {
			return store.SearchPage{}, fmt.Errorf("search: %w", err)
		}
		light := api.Job{Status: api.JobStatus(status), Kind: api.JobKind(kind), CreatedAt: api.Time{Time: created.T},
			CustomMetadata: metadata}
		if !q.List.Matches(&light) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if len(page.Items) == limit {
			page.More = true
			break
		}
		h.Kind, h.Translation, h.JobCreatedAt = light.Kind, translation, created.T
		if speaker.Valid {
			sp := int(speaker.Int64)
			h.Speaker = &sp
		}
		h.Highlight = terms.Highlight(h.Text)
		page.Items = append(page.Items, h)
	}
	if err := rows.Err(); err != nil {
		return store.SearchPage{}, fmt.Errorf("search: %w", err)
	}
	return page, nil
}

// jobsFirst reports whether Search takes the dialect's jobs-first plan for terms (SearchSQL).
func (r *Reader) jobsFirst(ctx context.Context, terms store.SearchTerms, lq api.ListQuery) (bool, error) {
	s := r.d.Search
	if s.JobsFirst == "" || s.Estimate == nil || lq.HasMetadataFilter() {
		return false, nil
	}
	if s.JobsFirstAbove <= 0 {
		return true, nil
	}
	n, err := s.Estimate(ctx, r.db, terms)
	if err != nil {
		return false, fmt.Errorf("estimate: %w", err)
	}
	return n >= s.JobsFirstAbove, nil
}

// falseSQL is false as the translation column holds it (0 in SQLite's STRICT integer).
func (r *Reader) falseSQL() string {
	if r.d.Numbered {
		return "FALSE"
	}
	return "0"
}

// BackfillSearch indexes the transcripts a database held before its search migration: the
// results of pre-recorded jobs and the final transcripts and translations of live sessions,
// read as the pipeline indexes them (store.ResultUtterances, store.LiveUtterances). It runs in
// the migration's transaction tx; d's statements are rebound for it.
func BackfillSearch(ctx context.Context, tx *sql.Tx, d Dialect) error {
	// The FTS5 table does not exist yet: the store builds it from the rows after the migrations.
	d.SQL = withoutSearchText(d.SQL)
	q := Statements(d)
	exec := func(st Stmt, args ...any) (sql.Result, error) { return tx.ExecContext(ctx, q[st], args...) }
	queryRow := func(st Stmt, args ...any) *sql.Row { return tx.QueryRowContext(ctx, q[st], args...) }
	if err := backfillResults(ctx, tx, d, exec, queryRow); err != nil {
		return fmt.Errorf("index stored results: %w", err)
	}
	if err := backfillLive(ctx, tx, d, exec, queryRow); err != nil {
		return fmt.Errorf("index stored live messages: %w", err)
	}
	return nil
}

// withoutSearchText is sql without the statements of a separate text index.
func withoutSearchText(sqlMap map[Stmt]string) map[Stmt]string {
	out := make(map[Stmt]string, len(sqlMap))
	for st, text := range sqlMap {
		switch st {
		case StSearchMaxID, StSearchFTSAdd, StSearchStale, StSearchFTSPruneJob, StSearchFTSPruneLive:
			continue
		}
		out[st] = text
	}
	return out
}

func backfillResults(ctx context.Context, tx *sql.Tx, d Dialect, exec func(Stmt, ...any) (sql.Result, error), queryRow func(Stmt, ...any) *sql.Row) error {
	rows, err := tx.QueryContext(ctx, d.Rebind(`SELECT id, record FROM jobs WHERE kind = ? ORDER BY id`), string(api.KindPreRecorded))
	if err != nil {
		return err
	}
	var all []store.Utterance
	for rows.Next() {
		var (
			id     string
			record []byte
		)
		if err := rows.Scan(&id, &record); err != nil {
			rows.Close()
			return err
		}
		var j struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(record, &j) != nil {
			continue
		}
		all = append(all, store.ResultUtterances(id, j.Result)...)
	}
	// The rows are read whole before writing: one connection cannot interleave them.
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return indexUtterances(ctx, d, exec, queryRow, all)
}

func backfillLive(ctx context.Context, tx *sql.Tx, d Dialect, exec func(Stmt, ...any) (sql.Result, error), queryRow func(Stmt, ...any) *sql.Row) error {
	rows, err := tx.QueryContext(ctx, d.Rebind(`SELECT l.session_id, l.inbox_id,
		coalesce(l.payload, substr(i.body, i.payload_at + 1, i.payload_len))
		FROM live_messages l LEFT JOIN inbox i ON i.id = l.inbox_id
		WHERE l.category IN (?, ?) ORDER BY l.session_id, l.seq`),
		string(api.CategoryFinalTranscripts), string(api.CategoryRealtimeProcessingEvents))
	if err != nil {
		return err
	}
	var all []store.Utterance
	for rows.Next() {
		var (
			session string
			inboxID int64
			payload []byte
		)
		if err := rows.Scan(&session, &inboxID, &payload); err != nil {
			rows.Close()
			return err
		}
		all = append(all, store.LiveUtterances(session, inboxID, payload)...)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return indexUtterances(ctx, d, exec, queryRow, all)
}
