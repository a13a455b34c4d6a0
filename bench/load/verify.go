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

// backlog counts inbox rows not processed yet and sink deliveries not delivered yet.
type backlog struct {
	Pending, Failed, SinkQueued, SinkDead int64
}

func readBacklog(db *sql.DB) (backlog, error) {
	var b backlog
	err := db.QueryRow(`SELECT
		(SELECT count(*) FROM inbox WHERE status = 'pending'),
		(SELECT count(*) FROM inbox WHERE status = 'failed'),
		(SELECT count(*) FROM sink_deliveries WHERE status = 'queued'),
		(SELECT count(*) FROM sink_deliveries WHERE status = 'dead')`).Scan(&b.Pending, &b.Failed, &b.SinkQueued, &b.SinkDead)
	if err != nil {
		return b, fmt.Errorf("read backlog: %w", err)
	}
	return b, nil
}

// waitDrained waits until no inbox row is pending (and, with sinks, no sink delivery is
// queued), or the timeout. It returns the last backlog and how long the wait took.
func waitDrained(dbPath string, sinks bool, timeout time.Duration) (backlog, time.Duration, error) {
	db, err := openReadOnly(dbPath)
	if err != nil {
		return backlog{}, 0, err
	}
	defer db.Close()
	start := time.Now()
	for {
		b, err := readBacklog(db)
		if err != nil {
			return b, time.Since(start), err
		}
		if b.Pending == 0 && (!sinks || b.SinkQueued == 0) {
			return b, time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return b, time.Since(start), fmt.Errorf("not drained after %s: %d inbox rows pending, %d sink deliveries queued", timeout, b.Pending, b.SinkQueued)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// storeCheck is the verdict on every acknowledged delivery: stored, processed, once.
type storeCheck struct {
	Acked int
	// Missing: answered 2xx but no inbox row has its dedupe key.
	Missing int
	// NotDone: the row is there but not processed.
	NotDone int
	// NoEffect: processed, but its effect (the live message or the job record) is missing.
	NoEffect int
	// Twice: live messages stored more than once (same inbox row, or same session and payload).
	Twice    int
	Problems []string
}

func (c storeCheck) ok() bool { return c.Missing+c.NotDone+c.NoEffect+c.Twice == 0 }

func (c storeCheck) String() string {
	s := fmt.Sprintf("%d acknowledged: %d missing, %d not processed, %d without effect, %d stored twice",
		c.Acked, c.Missing, c.NotDone, c.NoEffect, c.Twice)
	if len(c.Problems) > 0 {
		s += "; e.g. " + strings.Join(c.Problems, "; ")
	}
	return s
}

func (c *storeCheck) problem(format string, args ...any) {
	if len(c.Problems) < 3 {
		c.Problems = append(c.Problems, fmt.Sprintf(format, args...))
	}
}

// verifyStore checks that every call answered 2xx is in the inbox under its dedupe key,
// processed, and applied exactly once: a live message stored once, a job record done.
func verifyStore(dbPath string, calls []callback, out []outcome) (storeCheck, error) {
	var c storeCheck
	db, err := openReadOnly(dbPath)
	if err != nil {
		return c, err
	}
	defer db.Close()
	ctx := context.Background()
	type row struct {
		id     int64
		status string
	}
	inbox := map[string]row{}
	rows, err := db.QueryContext(ctx, `SELECT id, dedupe_key, status FROM inbox`)
	if err != nil {
		return c, fmt.Errorf("read inbox: %w", err)
	}
	for rows.Next() {
		var r row
		var key string
		if err := rows.Scan(&r.id, &key, &r.status); err != nil {
			rows.Close()
			return c, fmt.Errorf("read inbox: %w", err)
		}
		inbox[key] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("read inbox: %w", err)
	}
	liveRows, err := liveMessagesPerRow(ctx, db)
	if err != nil {
		return c, err
	}
	var samePayload int
	if err := db.QueryRowContext(ctx, `SELECT count(*) - count(DISTINCT session_id || char(0) || payload) FROM live_messages`).Scan(&samePayload); err != nil {
		return c, fmt.Errorf("count repeated live messages: %w", err)
	}
	c.Twice += samePayload
	jobs := map[string]string{}
	rows, err = db.QueryContext(ctx, `SELECT id, status FROM jobs`)
	if err != nil {
		return c, fmt.Errorf("read jobs: %w", err)
	}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			rows.Close()
			return c, fmt.Errorf("read jobs: %w", err)
		}
		jobs[id] = status
	}
	rows.Close()
	for i, o := range out {
		if !o.Sent || o.Status/100 != 2 {
			continue
		}
		c.Acked++
		call := calls[i]
		r, ok := inbox[call.DedupeKey]
		switch {
		case !ok:
			c.Missing++
			c.problem("call %d (ack id %d) has no inbox row", i, o.AckID)
			continue
		case r.status != "done":
			c.NotDone++
			c.problem("inbox row %d is %s", r.id, r.status)
			continue
		}
		if call.MsgKey != "" {
			switch n := liveRows[r.id]; {
			case n == 0:
				c.NoEffect++
				c.problem("inbox row %d is done but its live message is not stored", r.id)
			case n > 1:
				c.Twice++
				c.problem("inbox row %d stored %d live messages", r.id, n)
			}
		} else if jobs[call.JobID] != string(api.StatusDone) {
			c.NoEffect++
			c.problem("job %s: record status %q", call.JobID, jobs[call.JobID])
		}
	}
	return c, nil
}

// fileSinkScan is what the file sink wrote: its event files by event id and by message key,
// with the latency of each file (its ctime, set when the sink renames it into place, minus the
// event's created_at, when serve received the callback).
type fileSinkScan struct {
	Files      int
	PerID      map[string]int
	KeyIDs     map[string]map[string]bool
	Lat        []time.Duration
	LatAt      []time.Time
	RecvAt     []time.Time // the event's created_at: when serve received the callback
	Unreadable int
}

func scanFileSink(dir string) (fileSinkScan, error) {
	s := fileSinkScan{PerID: map[string]int{}, KeyIDs: map[string]map[string]bool{}}
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
			s.PerID[ev.ID]++
			key := eventKey(&ev)
			if s.KeyIDs[key] == nil {
				s.KeyIDs[key] = map[string]bool{}
			}
			s.KeyIDs[key][ev.ID] = true
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

// dupFiles counts event ids with more than one file.
func (s fileSinkScan) dupFiles() int {
	n := 0
	for _, c := range s.PerID {
		if c > 1 {
			n++
		}
	}
	return n
}

// liveMessagesPerRow counts the stored live messages of each inbox row (SQLite and PostgreSQL
// alike): a row applied once has exactly one.
func liveMessagesPerRow(ctx context.Context, db *sql.DB) (map[int64]int, error) {
	rows, err := db.QueryContext(ctx, `SELECT inbox_id, count(*) FROM live_messages GROUP BY inbox_id`)
	if err != nil {
		return nil, fmt.Errorf("read live messages: %w", err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("read live messages: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read live messages: %w", err)
	}
	return out, nil
}
