package sqlcore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
	"unsafe"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// Time scans a time column of either store: SQLite keeps UTC text in RFC 3339 (see
// store/sqlite's storage format), PostgreSQL a TIMESTAMPTZ the driver gives as a time.Time.
// NULL, an empty text and the zero time all read as the zero time, where "not yet" is a state.
type Time struct{ T time.Time }

// Scan implements sql.Scanner.
func (t *Time) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		t.T = time.Time{}
	case time.Time:
		t.T = v
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	default:
		return fmt.Errorf("stored time of type %T", src)
	}
	return nil
}

func (t *Time) parse(s string) error {
	t.T = time.Time{}
	if s == "" {
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("stored time %q: %w", s, err)
	}
	if !v.IsZero() {
		t.T = v
	}
	return nil
}

// Query runs query on q and scans every row with scan.
func Query[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return Collect(rows, scan)
}

// Collect scans every row with scan and closes rows; no rows is a nil slice. The close is
// checked: on SQLite's held writer connection, a statement left open would outlive its
// transaction.
func Collect[T any](rows *sql.Rows, scan func(Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}

// The columns each Scan function reads, in its order.
const (
	InboxColumns = `id, dedupe_key, route, kind, event, job_id, message_type, category,
	partition_key, headers, body, received_at, status, attempts, last_error, processed_at,
	message_at, payload_at, payload_len, next_attempt_at, failed_at`
	QuarantineColumns = `id, route, reason, headers, body, received_at`
	// LiveColumns are read FROM LiveFrom: a message stored as a span of its inbox row's body
	// (payload NULL) is read from there.
	LiveColumns = `l.session_id, l.seq, l.type, l.category, l.created_at, l.received_at, l.inbox_id,
	coalesce(l.payload, substr(i.body, i.payload_at + 1, i.payload_len))`
	LiveFrom        = `live_messages l LEFT JOIN inbox i ON l.payload IS NULL AND i.id = l.inbox_id`
	ArtifactColumns = `job_id, name, format, language, path, size, created_at`
	// SinkColumns reads a sink_deliveries row (not aliased) with its event's id and JSON, and
	// the event's data where it is a live message of an inbox row (events.inbox_id).
	SinkColumns = `id, sink, (SELECT e.event_id FROM events e WHERE e.id = sink_deliveries.event),
	(SELECT e.body FROM events e WHERE e.id = sink_deliveries.event),
	(SELECT substr(i.body, i.payload_at + 1, i.payload_len) FROM events e JOIN inbox i ON i.id = e.inbox_id
		WHERE e.id = sink_deliveries.event),
	order_key, attempts, next_attempt_at, last_error, created_at, failed_at, traceparent, tracestate`
	TokenColumns = `hash, job_id, kind, created_at, revoked_at`
)

// ScanInbox reads InboxColumns.
func ScanInbox(sc Scanner) (store.InboxRow, error) { return scanInbox(sc, false) }

// scanInbox reads InboxColumns, keeping the driver's body bytes when they are its own
// (Dialect.OwnedBytes).
func scanInbox(sc Scanner, owned bool) (store.InboxRow, error) {
	var (
		r                 store.InboxRow
		kind, mtype, cat  string
		status            string
		headers           sql.NullString
		received, process Time
		messageAt         Time
		spanOff, spanLen  sql.NullInt64
		next, failed      Time
	)
	if err := sc.Scan(&r.ID, &r.DedupeKey, &r.Route, &kind, &r.Event, &r.JobID, &mtype, &cat,
		&r.PartitionKey, &headers, blob{&r.Body, owned}, &received, &status, &r.Attempts, &r.LastError, &process,
		&messageAt, &spanOff, &spanLen, &next, &failed); err != nil {
		return store.InboxRow{}, err
	}
	r.MessageAt, r.NextAttempt, r.FailedAt = messageAt.T, next.T, failed.T
	if spanOff.Valid && spanLen.Valid {
		r.Message = store.Span{Off: int(spanOff.Int64), Len: int(spanLen.Int64)}
	}
	r.Kind, r.MessageType, r.Category = api.CallbackKind(kind), api.MessageType(mtype), api.MessageCategory(cat)
	r.Status = store.InboxStatus(status)
	r.ReceivedAt, r.ProcessedAt = received.T, process.T
	var err error
	if r.Headers, err = DecodeHeaders(headers); err != nil {
		return store.InboxRow{}, err
	}
	return r, nil
}

// blob scans a BLOB column into b: as database/sql would (a copy of the driver's bytes), or
// keeping the driver's bytes when they are its own.
type blob struct {
	b     *[]byte
	owned bool
}

// Scan implements sql.Scanner.
func (x blob) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*x.b = nil
	case []byte:
		if x.owned {
			*x.b = v
		} else {
			*x.b = bytes.Clone(v)
		}
	case string:
		*x.b = []byte(v)
	default:
		return fmt.Errorf("scan %T into bytes", src)
	}
	return nil
}

// nullText scans a text column that may be NULL into the string it points to, "" for NULL.
// A pointer alone, it is handed to Scan without an allocation, where a sql.NullString (whose
// address escapes) costs one per row.
type nullText struct{ s *string }

// Scan implements sql.Scanner.
func (x nullText) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*x.s = ""
	case string:
		*x.s = v
	case []byte:
		*x.s = string(v)
	default:
		return fmt.Errorf("scan %T into text", src)
	}
	return nil
}

// ScanQuarantine reads QuarantineColumns.
func ScanQuarantine(sc Scanner) (store.QuarantineRow, error) {
	var (
		q        store.QuarantineRow
		headers  sql.NullString
		received Time
	)
	if err := sc.Scan(&q.ID, &q.Route, &q.Reason, &headers, &q.Body, &received); err != nil {
		return store.QuarantineRow{}, err
	}
	q.ReceivedAt = received.T
	var err error
	if q.Headers, err = DecodeHeaders(headers); err != nil {
		return store.QuarantineRow{}, err
	}
	return q, nil
}

// ScanLiveMessage reads LiveColumns.
func ScanLiveMessage(sc Scanner) (store.LiveMessage, error) {
	var (
		m                 store.LiveMessage
		mtype, cat        string
		created, received Time
		payload           []byte
	)
	if err := sc.Scan(&m.SessionID, &m.Seq, &mtype, &cat, &created, &received, &m.InboxID, &payload); err != nil {
		return store.LiveMessage{}, err
	}
	m.Type, m.Category, m.Payload = api.MessageType(mtype), api.MessageCategory(cat), payload
	m.CreatedAt, m.ReceivedAt = created.T, received.T
	return m, nil
}

// ScanArtifact reads ArtifactColumns.
func ScanArtifact(sc Scanner) (store.Artifact, error) {
	var (
		a       store.Artifact
		created Time
	)
	if err := sc.Scan(&a.JobID, &a.Name, &a.Format, &a.Language, &a.Path, &a.Size, &created); err != nil {
		return store.Artifact{}, err
	}
	a.CreatedAt = created.T
	return a, nil
}

// ScanSinkDelivery reads SinkColumns.
func ScanSinkDelivery(sc Scanner) (store.SinkDelivery, error) {
	var (
		d                     store.SinkDelivery
		ev                    string
		data                  []byte
		next, created, failed Time
	)
	// The event is scanned into a string: SQLite's driver gives its TEXT as a string, which a
	// []byte destination would copy once more (1.7 MB per sink for a 2-hour result);
	// PostgreSQL's bytes are copied once either way.
	if err := sc.Scan(&d.ID, &d.Sink, &d.EventID, &ev, blob{&data, false}, &d.OrderKey, &d.Attempts, &next, &d.LastError,
		&created, &failed, nullText{&d.TraceParent}, nullText{&d.TraceState}); err != nil {
		return store.SinkDelivery{}, err
	}
	// ev is this row's own text and nothing else refers to it once decoded, so the decode reads
	// its bytes in place and the event's data keeps them (see sinkEvent).
	var se sinkEvent
	if err := json.Unmarshal(unsafe.Slice(unsafe.StringData(ev), len(ev)), &se); err != nil {
		return store.SinkDelivery{}, fmt.Errorf("decode event of sink delivery %d: %w", d.ID, err)
	}
	d.Event, d.Event.Data = se.Event, json.RawMessage(se.Data)
	if data != nil {
		// Stored by reference: the live message, byte for byte as its inbox row holds it.
		d.Event.Data = data
	}
	d.NextAttempt, d.CreatedAt, d.FailedAt = next.T, created.T, failed.T
	return d, nil
}

// sinkEvent is an api.Event whose data, decoded, is the slice of the decoded text that holds
// it, where json.RawMessage would copy it (1.7 MB per sink for a 2-hour result); only for a
// text owned by the decode alone. The outer Data takes "data" from api.Event's.
type sinkEvent struct {
	api.Event
	Data inPlace `json:"data"`
}

// inPlace keeps the bytes encoding/json hands its UnmarshalJSON: a slice of the decoded text,
// capped so that an append copies.
type inPlace []byte

// UnmarshalJSON implements json.Unmarshaler.
func (p *inPlace) UnmarshalJSON(b []byte) error {
	*p = b[:len(b):len(b)]
	return nil
}

// ScanToken reads TokenColumns.
func ScanToken(sc Scanner) (store.Token, error) {
	var (
		t                store.Token
		kind             string
		created, revoked Time
	)
	if err := sc.Scan(&t.Hash, &t.JobID, &kind, &created, &revoked); err != nil {
		return store.Token{}, err
	}
	t.Kind = api.JobKind(kind)
	t.CreatedAt, t.RevokedAt = created.T, revoked.T
	return t, nil
}

// ScanJob reads the columns record and local of a job.
func ScanJob(sc Scanner) (store.JobRecord, error) {
	var record, local []byte
	if err := sc.Scan(&record, &local); err != nil {
		return store.JobRecord{}, err
	}
	return DecodeJob(record, local)
}
