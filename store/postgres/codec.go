package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// text makes s storable in a text column: PostgreSQL refuses NUL and invalid UTF-8 there, and
// a JSON string can decode to either. Both become U+FFFD, the replacement Go's own JSON
// decoder uses for invalid UTF-8. Valid strings, nearly all of them, are returned as they are.
func text(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// limitArg maps the contract's "zero or less means no limit" to LIMIT NULL, which PostgreSQL
// reads as no limit.
func limitArg(limit int) sql.NullInt64 {
	if limit <= 0 {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(limit), Valid: true}
}

// nullString and timePtr give the element of a column array: nil is NULL.
func nullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// reserveIDs takes n values of a BIGSERIAL sequence, ascending. Rows get their ids before they
// are inserted so that ids follow the caller's order while the rows themselves are inserted in
// key order (see Ingest).
func reserveIDs(ctx context.Context, q sqlcore.Querier, sequence string, n int) ([]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT nextval($1::regclass) AS id FROM generate_series(1, $2) ORDER BY id`,
		sequence, n)
	if err != nil {
		return nil, fmt.Errorf("reserve ids: %w", err)
	}
	defer rows.Close()
	ids := make([]int64, 0, n)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("reserve ids: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reserve ids: %w", err)
	}
	if len(ids) != n {
		return nil, fmt.Errorf("reserve ids: got %d of %d", len(ids), n)
	}
	return ids, nil
}

// core is sqlcore.Core under a name that makes the embedded field unexported: Store gets the
// contract's methods without an exported field of an internal type.
type core = sqlcore.Core

// dialect is how PostgreSQL differs from SQLite in the shared code.
var dialect = sqlcore.Dialect{
	Numbered: true,
	Text:     text,
	Time:     func(t time.Time) any { return t },
	Limit:    func(n int) any { return limitArg(n) },
	JSON:     func(b []byte) any { return sqlcore.Blob(b) },
	// Rows are locked one by one, and replicas claim from one queue at once.
	ForUpdate:  " FOR UPDATE",
	SkipLocked: " FOR UPDATE SKIP LOCKED",
	// The expression of the GIN index search_utterances_text (migration 0015), repeated so
	// that the planner uses it.
	Search: &sqlcore.SearchSQL{
		From:  `search_utterances s`,
		Match: `to_tsvector('simple', s.text) @@ to_tsquery('simple', ?)`,
		Arg:   func(ts store.SearchTerms) any { return ts.TSQuery() },
	},
	SQL: map[sqlcore.Stmt]string{
		// Held until the transaction ends: see applyTx.Job in sqlcore.
		sqlcore.StJobLock: `SELECT pg_advisory_xact_lock(?)`,
		// The session's next number comes from its live_sequences row, taken and the message
		// inserted in one statement. The upsert locks the counter row until Apply's transaction
		// ends, so a concurrent Apply of the same session, on any replica, waits here and then
		// reads the committed number (or the old one, when this transaction rolls back):
		// numbers follow commit order, without gaps or repeats.
		sqlcore.StLiveAppend: `WITH next AS (
			INSERT INTO live_sequences AS s (session_id, last_seq) VALUES (?1, 1)
			ON CONFLICT (session_id) DO UPDATE SET last_seq = s.last_seq + 1
			RETURNING last_seq)
		INSERT INTO live_messages (session_id, seq, type, category, created_at, received_at, inbox_id, payload)
		SELECT ?1, next.last_seq, ?2, ?3, ?4, ?5, ?6, ?7 FROM next
		RETURNING seq`,
		// The messages of several inbox rows at once: each session's counter moves by its
		// number of rows in one upsert (rows locked in session order, as every Apply of a group
		// takes them), and its rows take the numbers below the new last in the order of the ids.
		// One round trip for a whole result's utterances, from the JSON of sqlcore's searchRow.
		sqlcore.StSearchIndex: `INSERT INTO search_utterances (job_id, ref, inbox_id, start_s, end_s,
		speaker, language, translation, text)
		SELECT x.j, x.r, x.i, x.s, x.e, x.k, x.l, x.t, x.x
		FROM json_to_recordset(?::json) AS x(j text, r text, i bigint, s float8, e float8, k int,
			l text, t boolean, x text)
		ON CONFLICT (job_id, ref) DO NOTHING`,
		sqlcore.StLiveAppendRows: `WITH m AS (
			SELECT i.id, i.job_id, i.message_type, i.category, i.message_at, i.received_at,
				row_number() OVER (PARTITION BY i.job_id ORDER BY j.ord) AS rn,
				count(*) OVER (PARTITION BY i.job_id) AS cnt
			FROM jsonb_array_elements_text(?::jsonb) WITH ORDINALITY AS j (value, ord)
			JOIN inbox i ON i.id = j.value::bigint
			WHERE i.payload_len IS NOT NULL),
		n AS (
			INSERT INTO live_sequences AS s (session_id, last_seq)
			SELECT job_id, count(*) FROM m GROUP BY job_id ORDER BY job_id
			ON CONFLICT (session_id) DO UPDATE SET last_seq = s.last_seq + excluded.last_seq
			RETURNING session_id, last_seq)
		INSERT INTO live_messages (session_id, seq, type, category, created_at, received_at, inbox_id)
		SELECT m.job_id, n.last_seq - m.cnt + m.rn, m.message_type, m.category, m.message_at,
			m.received_at, m.id
		FROM m JOIN n ON n.session_id = m.job_id`,
		// A pruned session's counter goes with its messages.
		sqlcore.StPruneJobSeq: `DELETE FROM live_sequences WHERE session_id = ?`,
	},
	IDs:      `SELECT value::bigint FROM jsonb_array_elements_text(?::jsonb)`,
	FinalJob: `j.local->>'final' <> ''`,
	Position: "strpos",
	// ListJobs's two steps see one snapshot.
	ListTx: &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
}

var stmtSQL = sqlcore.Statements(dialect)

// pgTx is a write transaction: a *sql.Tx, or the pool itself for a sqlcore.OneStatement one,
// whose statement commits on its own.
type pgTx struct {
	q  sqlcore.Querier
	tx *sql.Tx // nil on the pool
}

func (t *pgTx) Exec(ctx context.Context, st sqlcore.Stmt, args ...any) (sql.Result, error) {
	return t.q.ExecContext(ctx, stmtSQL[st], args...)
}

func (t *pgTx) Query(ctx context.Context, st sqlcore.Stmt, args ...any) (*sql.Rows, error) {
	return t.q.QueryContext(ctx, stmtSQL[st], args...)
}

func (t *pgTx) QueryRow(ctx context.Context, st sqlcore.Stmt, args ...any) *sql.Row {
	return t.q.QueryRowContext(ctx, stmtSQL[st], args...)
}

func (t *pgTx) Commit() error {
	if t.tx == nil {
		return nil
	}
	return t.tx.Commit()
}

func (t *pgTx) Rollback() {
	if t.tx != nil {
		_ = t.tx.Rollback()
	}
}

// writes is the Store's sqlcore.Writes, unexported so that its methods do not join the Store's.
type writes struct{ s *Store }

func (w writes) Begin(ctx context.Context, _ string, kind sqlcore.TxKind) (sqlcore.Tx, error) {
	if kind&sqlcore.OneStatement != 0 {
		return &pgTx{q: w.s.db}, nil
	}
	tx, err := w.s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &pgTx{q: tx, tx: tx}, nil
}
