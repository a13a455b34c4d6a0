package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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

// nullTime stores the zero time as NULL, for columns where "not yet" is a state.
func nullTime(t time.Time) sql.NullTime {
	if t.IsZero() {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: t, Valid: true}
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

// reader is sqlcore.Reader under a name that makes the embedded field unexported: Store gets
// the read methods without an exported field of an internal type.
type reader = sqlcore.Reader
