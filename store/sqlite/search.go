package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// Full-text search runs on FTS5, which mattn/go-sqlite3 compiles only with the build tag
// sqlite_fts5 (or fts5). The table search_utterances (migration 0017) is written either way;
// the FTS5 index of its text, search_fts, exists only where FTS5 does:
//
//   - With FTS5, Open creates search_fts when it is missing (a database migrated by a build
//     without it) and fills it from search_utterances ('rebuild'), or rebuilds it when a build
//     without FTS5 wrote the database meanwhile (search_state.stale); the apply transaction
//     adds each new utterance to it, the pruner removes what it deletes.
//   - Without FTS5, the store indexes and prunes search_utterances as usual, marks the index
//     stale, and Search returns store.ErrSearchUnavailable, which names the build tag.

// searchIndexSQL inserts the utterances of its JSON argument (sqlcore's searchRow) whose
// (job_id, ref) is new.
const searchIndexSQL = `INSERT INTO search_utterances (job_id, ref, inbox_id, start_s, end_s, speaker,
	language, translation, text)
	SELECT value->>'j', value->>'r', value->>'i', value->>'s', value->>'e', value->>'k', value->>'l',
		value->>'t', value->>'x'
	FROM json_each(?) WHERE true
	ON CONFLICT (job_id, ref) DO NOTHING`

// withSearch is d for a store whose SQLite has FTS5 (fts) or not.
func withSearch(d sqlcore.Dialect, fts bool) sqlcore.Dialect {
	d.SQL = maps.Clone(d.SQL)
	if !fts {
		d.SQL[sqlcore.StSearchStale] = `INSERT INTO search_state (id, stale) VALUES (1, 1)
		ON CONFLICT (id) DO UPDATE SET stale = 1 WHERE stale = 0`
		return d
	}
	d.SQL[sqlcore.StSearchMaxID] = `SELECT coalesce(max(sid), 0) FROM search_utterances`
	d.SQL[sqlcore.StSearchFTSAdd] = `INSERT INTO search_fts (rowid, text)
		SELECT sid, text FROM search_utterances WHERE sid > ?`
	// An external-content index forgets a row by being told its text again.
	d.SQL[sqlcore.StSearchFTSPruneJob] = `INSERT INTO search_fts (search_fts, rowid, text)
		SELECT 'delete', sid, text FROM search_utterances WHERE job_id = ?`
	d.SQL[sqlcore.StSearchFTSPruneLive] = `INSERT INTO search_fts (search_fts, rowid, text)
		SELECT 'delete', sid, text FROM search_utterances
		WHERE inbox_id IN (` + sqlcore.PrunedLiveInbox(d) + `) AND inbox_id > 0`
	d.Search = &sqlcore.SearchSQL{
		From:  `search_fts JOIN search_utterances s ON s.sid = search_fts.rowid`,
		Match: `search_fts MATCH ?`,
		Arg:   func(ts store.SearchTerms) any { return ts.FTS5() },
		// The matches' ids as a set, probed for each utterance of each job newest first; the
		// + keeps SQLite from looking the set's ids up one by one instead.
		JobsFirst:      `+s.sid IN (SELECT rowid FROM search_fts WHERE search_fts MATCH ?)`,
		JobsFirstAbove: jobsFirstAbove,
		Estimate:       estimateMatches,
	}
	return d
}

// jobsFirstAbove is where the jobs-first plan pays: at 1,000,000 utterances a word in 320,000
// of them took 370 ms matches first (each joined to its job and sorted) and 115 ms jobs first
// (the set of matches built, the newest jobs' utterances probed), a word in 136 of them 0.65 ms
// and 24 ms (docs/benchmarks.md, Search).
const jobsFirstAbove = 20_000

// estimateMatches bounds the utterances ts matches from above, from the index's own counts
// (search_vocab, an fts5vocab table: the utterances holding each word): the fewest of any of its
// words, a prefix counting every word it starts.
func estimateMatches(ctx context.Context, q sqlcore.Querier, ts store.SearchTerms) (int64, error) {
	least := int64(-1)
	for _, t := range ts {
		for i, w := range t.Words {
			var n int64
			var err error
			if t.Prefix && i == len(t.Words)-1 {
				err = q.QueryRowContext(ctx, `SELECT coalesce(sum(doc), 0) FROM search_vocab WHERE term >= ? AND term < ?`,
					w, w+"\U0010FFFF").Scan(&n)
			} else {
				err = q.QueryRowContext(ctx, `SELECT coalesce(sum(doc), 0) FROM search_vocab WHERE term = ?`, w).Scan(&n)
			}
			if err != nil {
				return 0, err
			}
			if least < 0 || n < least {
				least = n
			}
		}
	}
	return max(least, 0), nil
}

// The dialects and writer statements of a store with and without FTS5.
var (
	dialectFTS, dialectPlain = withSearch(dialect, true), withSearch(dialect, false)
	stmtSQLFTS, stmtSQLPlain = statementsOf(dialectFTS), statementsOf(dialectPlain)
)

// hasFTS5 reports whether the SQLite linked in has FTS5.
func hasFTS5(ctx context.Context, db *sql.DB) (bool, error) {
	var on bool
	if err := db.QueryRowContext(ctx, `SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&on); err != nil {
		return false, fmt.Errorf("sqlite: read compile options: %w", err)
	}
	return on, nil
}

// ensureFTS creates search_fts when it is missing and rebuilds it when it is new or stale, in
// one transaction; a database whose index is current is only read.
func (s *Store) ensureFTS(ctx context.Context) error {
	var exists, vocab, stale bool
	if err := s.w.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'search_fts'),
		EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'search_vocab'),
		EXISTS (SELECT 1 FROM search_state WHERE stale = 1)`).Scan(&exists, &vocab, &stale); err != nil {
		return fmt.Errorf("sqlite: search index: %w", err)
	}
	if exists && vocab && !stale {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: search index: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	steps := []string{
		// remove_diacritics 0: PostgreSQL's simple configuration keeps accents too.
		`CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(text, content='search_utterances',
			content_rowid='sid', tokenize='unicode61 remove_diacritics 0')`,
		// The index's own counts of the utterances holding each word (estimateMatches): no
		// storage of its own.
		`CREATE VIRTUAL TABLE IF NOT EXISTS search_vocab USING fts5vocab(search_fts, 'row')`,
	}
	if !exists || stale {
		steps = append(steps, `INSERT INTO search_fts (search_fts) VALUES ('rebuild')`, `DELETE FROM search_state`)
	}
	for _, q := range steps {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlite: build search index: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: build search index: %w", err)
	}
	if !exists || stale {
		s.log.WithField("rebuilt_stale", stale).Info("sqlite: search index built")
	}
	return nil
}
