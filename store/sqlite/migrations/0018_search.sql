-- Full-text search: the utterances of every transcript, indexed by FTS5 where it is built in.
--
-- search_utterances keeps each utterance's text (the only copy the index makes: a result or a
-- live message stays where it is) and where it is: its job, its ref within the job (UNIQUE:
-- a replayed or reconciled delivery indexes nothing twice), the inbox row of the live message
-- that brought it (retention removes it with that message). The FTS5 table search_fts, an
-- external-content index of search_utterances.text, is created by the store after the
-- migrations, and only when this SQLite has FTS5 (mattn/go-sqlite3 built with -tags
-- sqlite_fts5): a build without it keeps the rows and does not search. The transcripts stored
-- before this migration are indexed by it (a Go step after this file, sqlcore.BackfillSearch).
CREATE TABLE search_utterances (
    sid         INTEGER PRIMARY KEY,
    job_id      TEXT NOT NULL,
    ref         TEXT NOT NULL,
    inbox_id    INTEGER NOT NULL DEFAULT 0,
    start_s     REAL NOT NULL,
    end_s       REAL NOT NULL,
    speaker     INTEGER,
    language    TEXT NOT NULL,
    translation INTEGER NOT NULL,
    text        TEXT NOT NULL,
    UNIQUE (job_id, ref)
) STRICT;
CREATE INDEX search_utterances_inbox ON search_utterances (inbox_id) WHERE inbox_id > 0;

-- search_state says whether search_fts is in step with search_utterances: a program without
-- FTS5 that wrote or deleted rows sets stale, and the next one with FTS5 rebuilds the index.
CREATE TABLE search_state (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    stale INTEGER NOT NULL
) STRICT;
