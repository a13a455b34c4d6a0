-- Initial schema. Times are UTC text of one fixed width (2006-01-02T15:04:05.000000000Z), so
-- text order is time order and the sqlite3 shell shows them readably. JSON columns are TEXT.
-- Tables are STRICT: a value of the wrong type is an error instead of a silent conversion.

-- inbox holds every authenticated, classified delivery as received; the 2xx is sent only after
-- the row is committed. dedupe_key makes a redelivery a no-op.
CREATE TABLE inbox (
    id            INTEGER PRIMARY KEY,
    dedupe_key    TEXT    NOT NULL UNIQUE,
    route         TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    event         TEXT    NOT NULL,
    job_id        TEXT    NOT NULL,
    message_type  TEXT    NOT NULL,
    category      TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    headers       TEXT,             -- JSON object, NULL when none
    body          BLOB    NOT NULL,
    received_at   TEXT,
    status        TEXT    NOT NULL DEFAULT 'pending',
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT    NOT NULL DEFAULT '',
    processed_at  TEXT
) STRICT;

-- PendingInbox and InboxBacklog read pending rows by id.
CREATE INDEX inbox_status_id ON inbox (status, id);

-- quarantine holds authenticated deliveries whose body could not be classified. dedupe_key is
-- the SHA-256 of route and body, so a retried unparseable delivery is kept once.
CREATE TABLE quarantine (
    id          INTEGER PRIMARY KEY,
    dedupe_key  TEXT NOT NULL UNIQUE,
    route       TEXT NOT NULL,
    reason      TEXT NOT NULL,
    headers     TEXT,
    body        BLOB NOT NULL,
    received_at TEXT
) STRICT;

-- jobs keeps the service's record exactly as encoded (record) and copies of the fields the
-- list filters use, derived from the record on every write.
CREATE TABLE jobs (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    status          TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    completed_at    TEXT,
    custom_metadata TEXT,
    record          TEXT NOT NULL,
    local           TEXT NOT NULL
) STRICT;

-- Lists page newest first; status and kind are the usual filters.
CREATE INDEX jobs_created ON jobs (created_at DESC, id DESC);
CREATE INDEX jobs_status_created ON jobs (status, created_at DESC, id DESC);
CREATE INDEX jobs_kind_created ON jobs (kind, created_at DESC, id DESC);

-- live_messages keeps each session's messages in the order they were applied.
CREATE TABLE live_messages (
    session_id  TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    category    TEXT    NOT NULL,
    created_at  TEXT,
    received_at TEXT,
    inbox_id    INTEGER NOT NULL,
    payload     TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE artifacts (
    job_id     TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    format     TEXT    NOT NULL,
    language   TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    size       INTEGER NOT NULL,
    created_at TEXT,
    UNIQUE (job_id, name)
) STRICT;

-- tokens stores only the SHA-256 of each per-job callback token.
CREATE TABLE tokens (
    hash       BLOB PRIMARY KEY,
    job_id     TEXT NOT NULL DEFAULT '',
    kind       TEXT NOT NULL,
    created_at TEXT,
    revoked_at TEXT
) STRICT, WITHOUT ROWID;
