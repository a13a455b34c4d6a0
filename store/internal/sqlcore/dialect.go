package sqlcore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/scribehook/scribehook/store"
)

// Dialect is what differs between the databases in the shared code: how they want their
// placeholders and arguments, the few clauses one of them needs, and the statements they write
// their own way. Everything else (the flows of the contract, the encoding, the errors) is
// written once, in this package.
type Dialect struct {
	// Numbered placeholders ($1, $2, …: PostgreSQL) instead of ? (SQLite).
	Numbered bool
	// Text makes a string storable in a text column and a lookup key comparable with what was
	// stored (PostgreSQL replaces NUL and invalid UTF-8); nil keeps it as it is.
	Text func(string) string
	// Time is the argument of a time stored or compared with a stored one.
	Time func(time.Time) any
	// Limit is the argument of a LIMIT for the contract's limit (zero or less: none).
	Limit func(int) any
	// JSON is the argument of bytes that must come back exactly (job records, live payloads,
	// sink events): TEXT in SQLite, BYTEA in PostgreSQL.
	JSON func([]byte) any
	// ForUpdate ends a SELECT of a row the transaction then changes: " FOR UPDATE" where rows
	// are locked one by one (PostgreSQL); "" where a write transaction holds the database's only
	// write lock from its BEGIN (SQLite).
	ForUpdate string
	// SkipLocked ends the sink claim's selection of candidates: " FOR UPDATE SKIP LOCKED" where
	// another claimer may be leasing rows at the same moment (PostgreSQL); "" otherwise.
	SkipLocked string
	// IDs is a query of one column, the ids listed by one argument, IDList's JSON array: a
	// statement on a set of rows then has one text whatever the set's size. Where each
	// statement is a round trip (PostgreSQL), ApplyGroup marks its rows with one; "" (SQLite,
	// where a statement is a call into the library and one per row costs less than parsing the
	// list) marks them one by one.
	IDs string
	// DueIndex ends "FROM inbox" in DueInboxKeys's read: " INDEXED BY inbox_due" where the
	// planner, without statistics, would rather walk every pending row in its index of statuses
	// and sort them (SQLite) than take the partial index of the few rows waiting for a retry;
	// "" where statistics choose (PostgreSQL).
	DueIndex string
	// Position is the function that finds text in text, position(haystack, needle) → its
	// 1-based place or 0: "instr" (SQLite, the default when empty), "strpos" (PostgreSQL).
	Position string
	// FinalJob is the condition, on a jobs row aliased j, that its record is final
	// (store.Local.Final set): the pruner keeps every other record and its session's messages.
	FinalJob string
	// SQL gives the statements the database writes its own way (StLiveAppend, and StJobLock
	// where Applies of one job can run at once), with ? or ?N placeholders.
	SQL map[Stmt]string
	// ListTx is the read transaction of ListJobs, whose two steps must see one snapshot (nil:
	// the driver's default, a snapshot in SQLite's WAL mode).
	ListTx *sql.TxOptions
	// ReleasesLeases: ReleaseSinkLeases releases the leases, for a store one process owns alone
	// (SQLite). A store several replicas share (PostgreSQL) releases none: the leases it finds
	// may be other replicas' live ones, and they expire.
	ReleasesLeases bool
	// OwnedBytes: the driver hands over each row's []byte in memory of its own, never reused
	// (mattn/go-sqlite3 copies a BLOB out with C.GoBytes on every row), so a scan may keep it
	// instead of the copy database/sql makes for drivers that reuse their buffers; for a
	// 2-hour result's body that copy is 1.7 MB.
	OwnedBytes bool
	// Search is how the database searches the text of search_utterances (search.go); nil
	// where it cannot (SQLite without FTS5): Search returns store.ErrSearchUnavailable.
	Search *SearchSQL
}

// SearchSQL is a database's full-text search: From joins its index to search_utterances s,
// Match is the condition with one placeholder, Arg the query as that placeholder's value.
type SearchSQL struct {
	From  string
	Match string
	Arg   func(store.SearchTerms) any
	// JobsFirst, when set, is a condition on s with one placeholder (Arg) for the other plan:
	// the jobs walked newest first, each one's utterances checked against the matches, which
	// stops once the page is full. Where the planner cannot choose it itself (SQLite, over a
	// virtual table), Search takes it for a query that Estimate says matches at least
	// JobsFirstAbove utterances (and has no custom_metadata filter, which reads every match
	// anyway); both plans give the same hits in the same order.
	JobsFirst      string
	JobsFirstAbove int64
	Estimate       func(ctx context.Context, q Querier, ts store.SearchTerms) (int64, error)
}

// Rebind turns the ? placeholders of query into the dialect's: ? numbers them in order, ?N
// keeps N (a value used twice).
func (d Dialect) Rebind(query string) string {
	if !d.Numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for {
		i := strings.IndexByte(query, '?')
		if i < 0 {
			b.WriteString(query)
			return b.String()
		}
		b.WriteString(query[:i])
		query = query[i+1:]
		digits := len(query) - len(strings.TrimLeft(query, "0123456789"))
		if digits > 0 {
			b.WriteString("$" + query[:digits])
			query = query[digits:]
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
}

// IDList is the argument of Dialect.IDs that lists ids: a JSON array.
func IDList(ids []int64) string {
	b := make([]byte, 0, 2+len(ids)*8)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

func (d Dialect) text(s string) string {
	if d.Text == nil {
		return s
	}
	return d.Text(s)
}

// NullTime is the argument of a time in a column where the zero time, "not yet", is NULL.
func (d Dialect) NullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return d.Time(t)
}
