-- Full-text search: the utterances of every transcript, indexed with PostgreSQL's text search.
--
-- search_utterances keeps each utterance's text (the only copy the index makes: a result or a
-- live message stays where it is) and where it is: its job, its ref within the job (UNIQUE:
-- a replayed or reconciled delivery indexes nothing twice), the inbox row of the live message
-- that brought it (retention removes it with that message). The GIN index is on the
-- expression to_tsvector('simple', text), which the search repeats: no tsvector is stored.
-- The 'simple' configuration lower-cases and neither stems nor drops stop words, as SQLite's
-- FTS5 unicode61 tokenizer does. The transcripts stored before this migration are indexed by
-- it (a Go step after this file, sqlcore.BackfillSearch).
CREATE TABLE search_utterances (
    sid         BIGSERIAL PRIMARY KEY,
    job_id      TEXT COLLATE "C" NOT NULL,
    ref         TEXT COLLATE "C" NOT NULL,
    inbox_id    BIGINT NOT NULL DEFAULT 0,
    start_s     DOUBLE PRECISION NOT NULL,
    end_s       DOUBLE PRECISION NOT NULL,
    speaker     INTEGER,
    language    TEXT NOT NULL,
    translation BOOLEAN NOT NULL,
    text        TEXT NOT NULL,
    UNIQUE (job_id, ref)
);
CREATE INDEX search_utterances_inbox ON search_utterances (inbox_id) WHERE inbox_id > 0;
CREATE INDEX search_utterances_text ON search_utterances USING gin (to_tsvector('simple', text));
