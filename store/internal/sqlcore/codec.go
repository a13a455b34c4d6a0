// Package sqlcore is the store contract written once for the SQL stores (store/sqlite,
// store/postgres), as watermill-sql writes its publisher and subscriber once over its
// adapters: Core holds every flow of store.Store but Ping and Close (reads, Apply and its Tx,
// jobs, tokens, the sink queue, the checks of Ingest), with the encoding of values into columns and back, the
// row loops, the mapping of driver errors to the contract's, and the migrations runner. A store
// gives it a Dialect (placeholders, argument types, a few clauses, the statements it writes its
// own way) and Writes: how it begins a write transaction (Tx: SQLite's held writer connection
// and group commit, PostgreSQL's *sql.Tx or pool), how it inserts sink deliveries, and how it
// ingests, whose algorithms differ (SQLite inserts row by row on prepared statements,
// PostgreSQL in one statement per table with ids reserved first).
package sqlcore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// Querier is what *sql.DB, *sql.Tx and *sql.Conn share, so reads and writes can run in or out
// of a transaction.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Scanner is a row of either *sql.Row or *sql.Rows.
type Scanner interface{ Scan(dest ...any) error }

// NotFound maps sql.ErrNoRows to store.ErrNotFound so callers never see driver errors.
func NotFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// OneRow reports store.ErrNotFound when an UPDATE by id changed nothing.
func OneRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// Blob keeps an empty body a zero-length blob: database/sql binds a nil slice as NULL.
func Blob(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// QuarantineKey is the dedupe key of a quarantined delivery: the delivery's own key cannot be
// trusted, since its body could not be read, so a resent body on the same route is the
// duplicate. The NUL separator keeps ("a", "bc") and ("ab", "c") apart. Both stores use it, so
// a database moved from one to the other dedupes the same way.
func QuarantineKey(route string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(route))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// EncodeHeaders gives the JSON text of the headers, NULL for none. clean, when not nil, is
// applied to every key and value first (PostgreSQL's JSONB refuses the escape \u0000).
func EncodeHeaders(h map[string]string, clean func(string) string) (sql.NullString, error) {
	if h == nil {
		return sql.NullString{}, nil
	}
	if clean != nil {
		c := make(map[string]string, len(h))
		for k, v := range h {
			c[clean(k)] = clean(v)
		}
		h = c
	}
	// json.Marshal's bytes (keys sorted, strings escaped alike), written by hand: every
	// delivery is encoded on the committer's path, and a few headers through reflection cost
	// more than the insert's own Go work.
	keys := make([]string, 0, len(h))
	n := 2
	for k, v := range h {
		keys = append(keys, k)
		n += len(k) + len(v) + 6
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = api.AppendJSONString(b, k)
		b = append(b, ':')
		b = api.AppendJSONString(b, h[k])
	}
	b = append(b, '}')
	return sql.NullString{String: string(b), Valid: true}, nil
}

// DecodeHeaders reads what EncodeHeaders stored.
func DecodeHeaders(s sql.NullString) (map[string]string, error) {
	if !s.Valid {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(s.String), &h); err != nil {
		return nil, fmt.Errorf("decode headers: %w", err)
	}
	return h, nil
}

// EncodeJob gives the stored JSON of a record and of its local part: rec.Encoded when the
// caller has encoded the record already, else api.EncodeJob's bytes, the result spliced in as
// it is held (byte for byte what the service sent). GetJob decodes them.
func EncodeJob(rec store.JobRecord) (record, local []byte, err error) {
	if rec.Job.ID == "" {
		return nil, nil, errors.New("put job: empty id")
	}
	record = rec.Encoded
	if record == nil {
		if record, err = api.EncodeJob(&rec.Job, true); err != nil {
			return nil, nil, fmt.Errorf("put job %s: encode record: %w", rec.Job.ID, err)
		}
	}
	if local, err = json.Marshal(rec.Local); err != nil {
		return nil, nil, fmt.Errorf("put job %s: encode local: %w", rec.Job.ID, err)
	}
	return record, local, nil
}

// DecodeJob reads what EncodeJob stored (or any earlier version: a record is the service's
// shape, whatever encoded it). record must be the caller's own bytes, never changed again: the
// result is left in them (api.UnmarshalJobInPlace), not copied.
func DecodeJob(record, local []byte) (store.JobRecord, error) {
	var rec store.JobRecord
	if err := api.UnmarshalJobInPlace(record, &rec.Job); err != nil {
		return store.JobRecord{}, fmt.Errorf("decode record: %w", err)
	}
	if err := json.Unmarshal(local, &rec.Local); err != nil {
		return store.JobRecord{}, fmt.Errorf("decode local: %w", err)
	}
	return rec, nil
}
