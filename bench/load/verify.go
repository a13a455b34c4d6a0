package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	_ "github.com/mattn/go-sqlite3" // the store's own driver, opened read-only

	"github.com/scribehook/scribehook/api"
)

// openReadOnly opens serve's SQLite file without the right to write: verification must not
// change what it checks, and can run while serve writes (WAL readers do not block the writer).
func openReadOnly(path string) (*sql.DB, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_busy_timeout=10000&_query_only=1"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	return db, nil
}

// backlog counts inbox rows not processed yet and sink deliveries not settled yet.
type backlog struct {
	Pending, Failed, SinkQueued, SinkDead int64
}

// readBacklog counts the backlog of a store, SQLite or PostgreSQL: the query is the same.
func readBacklog(ctx context.Context, db *sql.DB) (backlog, error) {
	var b backlog
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM inbox WHERE status = 'pending'),
		(SELECT count(*) FROM inbox WHERE status = 'failed'),
		(SELECT count(*) FROM sink_deliveries WHERE status = 'queued'),
		(SELECT count(*) FROM sink_deliveries WHERE status = 'dead')`).Scan(&b.Pending, &b.Failed, &b.SinkQueued, &b.SinkDead)
	if err != nil {
		return b, fmt.Errorf("read backlog: %w", err)
	}
	return b, nil
}

// drainWait is how to wait for a store's backlog to drain.
type drainWait struct {
	sinks   bool          // wait for the sink queues too, not only the inbox
	timeout time.Duration // bound of the wait
	every   time.Duration // print the backlog this often while waiting; 0: never
	poll    time.Duration // interval between reads
}

// waitBacklog waits until no inbox row is pending (and, with w.sinks, no sink delivery is
// queued), or w.timeout. It returns the last backlog and how long the wait took.
func waitBacklog(db *sql.DB, w drainWait) (backlog, time.Duration, error) {
	start := time.Now()
	next := w.every
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b, err := readBacklog(ctx, db)
		cancel()
		if err != nil {
			return b, time.Since(start), err
		}
		if b.Pending == 0 && (!w.sinks || b.SinkQueued == 0) {
			return b, time.Since(start), nil
		}
		if w.every > 0 && time.Since(start) >= next {
			fmt.Printf("drain: +%s: %d inbox rows pending, %d sink deliveries queued\n", next, b.Pending, b.SinkQueued)
			next += w.every
		}
		if time.Since(start) > w.timeout {
			return b, time.Since(start), fmt.Errorf("not drained after %s: %d inbox rows pending, %d sink deliveries queued", w.timeout, b.Pending, b.SinkQueued)
		}
		time.Sleep(w.poll)
	}
}

// waitDrained waits for serve's SQLite backlog (with sinks, the sink queues too) to drain.
func waitDrained(dbPath string, sinks bool, timeout time.Duration) (backlog, time.Duration, error) {
	db, err := openReadOnly(dbPath)
	if err != nil {
		return backlog{}, 0, err
	}
	defer db.Close()
	return waitBacklog(db, drainWait{sinks: sinks, timeout: timeout, poll: 50 * time.Millisecond})
}

// storeState is what the verification reads of a store, SQLite or PostgreSQL alike: the inbox
// by dedupe key, the stored live messages per inbox row, the job records' statuses, and how
// many live messages repeat another's session and payload.
type storeState struct {
	inbox       map[string]inboxRow
	liveRows    map[int64]int
	jobs        map[string]string
	samePayload int
}

type inboxRow struct {
	id     int64
	status string
}

// The count of live messages that repeat another's session and payload: only the way to pair
// the two columns differs between the dialects. A message stored by reference (payload NULL)
// is its inbox row's span; the second form reads a store of a version before those.
var (
	sqliteSamePayload = []string{
		`SELECT count(*) - count(DISTINCT l.session_id || char(0) || ` + messageBytes + `) FROM ` + messagesFrom,
		`SELECT count(*) - count(DISTINCT session_id || char(0) || payload) FROM live_messages`,
	}
	postgresSamePayload = []string{
		`SELECT count(*) - count(DISTINCT (l.session_id, ` + messageBytes + `)) FROM ` + messagesFrom,
		`SELECT count(*) - count(DISTINCT (session_id, payload)) FROM live_messages`,
	}
)

const (
	messageBytes = `coalesce(l.payload, substr(i.body, i.payload_at + 1, i.payload_len))`
	messagesFrom = `live_messages l LEFT JOIN inbox i ON l.payload IS NULL AND i.id = l.inbox_id`
)

func readStoreState(ctx context.Context, db *sql.DB, samePayloadSQL []string) (storeState, error) {
	s := storeState{inbox: map[string]inboxRow{}, jobs: map[string]string{}}
	err := eachRow(ctx, db, "read inbox", func(rows *sql.Rows) error {
		var r inboxRow
		var key string
		if err := rows.Scan(&r.id, &key, &r.status); err != nil {
			return err
		}
		s.inbox[key] = r
		return nil
	}, `SELECT id, dedupe_key, status FROM inbox`)
	if err != nil {
		return s, err
	}
	if s.liveRows, err = liveMessagesPerRow(ctx, db); err != nil {
		return s, err
	}
	if err := db.QueryRowContext(ctx, samePayloadSQL[0]).Scan(&s.samePayload); err != nil {
		if err2 := db.QueryRowContext(ctx, samePayloadSQL[1]).Scan(&s.samePayload); err2 != nil {
			return s, fmt.Errorf("count repeated live messages: %w", err)
		}
	}
	err = eachRow(ctx, db, "read jobs", func(rows *sql.Rows) error {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			return err
		}
		s.jobs[id] = status
		return nil
	}, `SELECT id, status FROM jobs`)
	return s, err
}

// applied is the part of a verdict that is the same for one serve and for replicas: every
// acknowledged delivery stored, processed, applied once.
type applied struct {
	Acked int
	// Missing: answered 2xx but no inbox row has its dedupe key.
	Missing int
	// NotDone: the row is there but not processed.
	NotDone int
	// NoEffect: processed, but its effect (the live message or the job record) is missing.
	NoEffect int
	// Twice: applied more than once (same inbox row, or same session and payload).
	Twice    int
	Problems []string
	// maxProblems bounds the examples kept for the report.
	maxProblems int
}

func (c *applied) problem(format string, args ...any) {
	if len(c.Problems) < c.maxProblems {
		c.Problems = append(c.Problems, fmt.Sprintf(format, args...))
	}
}

// judge checks one call answered 2xx against s: in the inbox under its dedupe key, processed,
// and its effect there once (a live message when live, else a job record done). describe names
// the call in a problem (who) and what follows an inbox row's or a job's id (note); it is
// called only for a problem.
func (c *applied) judge(s storeState, call callback, live bool, describe func() (who, note string)) {
	c.Acked++
	r, stored := s.inbox[call.DedupeKey]
	switch {
	case !stored:
		c.Missing++
		who, _ := describe()
		c.problem("%s has no inbox row", who)
	case r.status != "done":
		c.NotDone++
		_, note := describe()
		c.problem("inbox row %d%s is %s", r.id, note, r.status)
	case live:
		switch n := s.liveRows[r.id]; {
		case n == 0:
			c.NoEffect++
			_, note := describe()
			c.problem("inbox row %d%s is done but its live message is not stored", r.id, note)
		case n > 1:
			c.Twice++
			_, note := describe()
			c.problem("inbox row %d%s stored %d live messages", r.id, note, n)
		}
	case s.jobs[call.JobID] != string(api.StatusDone):
		c.NoEffect++
		_, note := describe()
		c.problem("job %s%s: record status %q", call.JobID, note, s.jobs[call.JobID])
	}
}

// storeCheck is the verdict on every delivery a single serve acknowledged.
type storeCheck struct{ applied }

func (c storeCheck) ok() bool { return c.Missing+c.NotDone+c.NoEffect+c.Twice == 0 }

func (c storeCheck) String() string {
	s := fmt.Sprintf("%d acknowledged: %d missing, %d not processed, %d without effect, %d stored twice",
		c.Acked, c.Missing, c.NotDone, c.NoEffect, c.Twice)
	if len(c.Problems) > 0 {
		s += "; e.g. " + strings.Join(c.Problems, "; ")
	}
	return s
}

// verifyStore checks, in serve's SQLite file, that every call answered 2xx is in the inbox
// under its dedupe key, processed, and applied exactly once: a live message stored once, a
// job record done.
func verifyStore(dbPath string, calls []callback, out []outcome) (storeCheck, error) {
	c := storeCheck{applied{maxProblems: 3}}
	db, err := openReadOnly(dbPath)
	if err != nil {
		return c, err
	}
	defer db.Close()
	st, err := readStoreState(context.Background(), db, sqliteSamePayload)
	if err != nil {
		return c, err
	}
	c.Twice += st.samePayload
	for i, o := range out {
		if !o.Sent || o.Status/100 != 2 {
			continue
		}
		call := calls[i]
		c.judge(st, call, call.MsgKey != "", func() (string, string) {
			return fmt.Sprintf("call %d (ack id %d)", i, o.AckID), ""
		})
	}
	return c, nil
}

// fileSinkScan is what the file sink wrote: its event files by event id and by message key,
// with the latency of each file (its ctime, set when the sink renames it into place, minus the
// event's created_at, when serve received the callback).
type fileSinkScan struct {
	arrivals   // a file is an arrival of its event
	Files      int
	Lat        []time.Duration
	LatAt      []time.Time
	RecvAt     []time.Time // the event's created_at: when serve received the callback
	Unreadable int
}

func scanFileSink(dir string) (fileSinkScan, error) {
	s := fileSinkScan{arrivals: newArrivals()}
	jobs, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("scan file sink: %w", err)
	}
	for _, j := range jobs {
		evDir := filepath.Join(dir, j.Name(), "events")
		entries, err := os.ReadDir(evDir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue // a temporary file being written
			}
			path := filepath.Join(evDir, e.Name())
			b, err := os.ReadFile(path)
			var ev api.Event
			if err != nil || json.Unmarshal(b, &ev) != nil {
				s.Unreadable++
				continue
			}
			s.Files++
			s.add(eventKey(&ev), ev.ID)
			var st syscall.Stat_t
			if syscall.Stat(path, &st) == nil {
				written := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
				s.Lat = append(s.Lat, written.Sub(ev.CreatedAt.Time))
				s.LatAt = append(s.LatAt, written)
				s.RecvAt = append(s.RecvAt, ev.CreatedAt.Time)
			}
		}
	}
	return s, nil
}

// arrivals is what reached a sink: how many times each event id came (a delivery, a file),
// and the event ids that carried each message key (eventKey). An id that came twice is a
// retry, which at-least-once allows; a key under two ids is one delivery applied twice.
type arrivals struct {
	PerID  map[string]int
	KeyIDs map[string]map[string]bool
}

func newArrivals() arrivals {
	return arrivals{PerID: map[string]int{}, KeyIDs: map[string]map[string]bool{}}
}

// add counts an arrival of event id carrying key, and reports whether key is new.
func (a arrivals) add(key, id string) (newKey bool) {
	a.PerID[id]++
	ids, seen := a.KeyIDs[key]
	if !seen {
		ids = map[string]bool{}
		a.KeyIDs[key] = ids
	}
	ids[id] = true
	return !seen
}

// dupIDs counts the event ids that came more than once.
func (a arrivals) dupIDs() int {
	n := 0
	for _, c := range a.PerID {
		if c > 1 {
			n++
		}
	}
	return n
}

// liveMessagesPerRow counts the stored live messages of each inbox row (SQLite and PostgreSQL
// alike): a row applied once has exactly one.
func liveMessagesPerRow(ctx context.Context, db *sql.DB) (map[int64]int, error) {
	out := map[int64]int{}
	err := eachRow(ctx, db, "read live messages", func(rows *sql.Rows) error {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		out[id] = n
		return nil
	}, `SELECT inbox_id, count(*) FROM live_messages GROUP BY inbox_id`)
	return out, err
}

// eachRow runs query and hands each row to row, which scans it; an error of the query, of row
// or of the iteration ends it, wrapped in what. Every verification reads the stores this way.
func eachRow(ctx context.Context, db *sql.DB, what string, row func(*sql.Rows) error, query string, args ...any) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// verifyOrFail is verifyStore for a measuring run: it prints the verdict and fails with it,
// after failure, when a delivery is not stored and applied once.
func verifyOrFail(dbPath string, calls []callback, out []outcome, failure string) error {
	check, err := verifyStore(dbPath, calls, out)
	if err != nil {
		return err
	}
	fmt.Printf("verify: %s\n", check)
	if !check.ok() {
		return fmt.Errorf("%s: %s", failure, check)
	}
	return nil
}

// findings collects what a fault run found wrong: the run prints every figure first and then
// fails with all of it at once, rather than stopping at the first.
type findings []string

func (p *findings) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// verdict is a check that says whether it passed and describes itself.
type verdict interface {
	ok() bool
	String() string
}

// check prints v after label and keeps it, under the same label, when it did not pass.
func (p *findings) check(label string, v verdict) {
	fmt.Printf("%s: %s\n", label, v)
	if !v.ok() {
		p.add("%s: %s", label, v)
	}
}

// err is nil when nothing was found wrong, else every finding after what.
func (p findings) err(what string) error {
	if len(p) == 0 {
		return nil
	}
	return errors.New(what + ": " + strings.Join(p, "; "))
}

// pass is err, but prints the claim the run proved when nothing was found wrong: the line the
// fault scripts' readers look for.
func (p findings) pass(what, claim string) error {
	if err := p.err(what); err != nil {
		return err
	}
	fmt.Println("PASS: " + claim)
	return nil
}

// keyCounts counts the keys that never arrived and those that arrived under more than one
// event id (the same delivery applied twice).
func (a arrivals) keyCounts(keys []string) (missing, twice int) {
	for _, k := range keys {
		switch len(a.KeyIDs[k]) {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	return missing, twice
}
