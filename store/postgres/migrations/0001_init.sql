-- Initial schema: the tables of the SQLite store in PostgreSQL's dialect.
--
-- Column types, and why:
--   * Times are TIMESTAMPTZ (microseconds, an instant whatever the session's time zone); zero
--     times are NULL where "not yet" is a state.
--   * Bytes that must come back exactly as given (bodies, job records, live payloads) are BYTEA.
--     JSONB would reorder members and drop whitespace, and both JSON and TEXT refuse invalid
--     UTF-8, which a callback body may carry inside a JSON string: such a row must be stored
--     as received, not fail its whole batch.
--   * headers is JSONB (its keys and values are made valid text before they are encoded), so
--     operators can query it: headers->>'webhook-id'.
--   * Text that is ordered on (job ids, artifact names) uses the "C" collation: byte order,
--     as in SQLite, whatever the database's locale.

-- inbox holds every authenticated, classified delivery as received; the 2xx is sent only after
-- the row is committed. The unique dedupe_key makes a redelivery, to any replica, a no-op.
CREATE TABLE inbox (
    id            BIGSERIAL PRIMARY KEY,
    dedupe_key    TEXT        NOT NULL UNIQUE,
    route         TEXT        NOT NULL,
    kind          TEXT        NOT NULL,
    event         TEXT        NOT NULL,
    job_id        TEXT        NOT NULL,
    message_type  TEXT        NOT NULL,
    category      TEXT        NOT NULL,
    partition_key TEXT        NOT NULL,
    headers       JSONB,                 -- NULL when none
    body          BYTEA       NOT NULL,
    received_at   TIMESTAMPTZ,
    status        TEXT        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
    attempts      INTEGER     NOT NULL DEFAULT 0,
    last_error    TEXT        NOT NULL DEFAULT '',
    processed_at  TIMESTAMPTZ
);

-- PendingInbox and InboxBacklog read pending rows by id: partial, so done rows (nearly all of
-- them) are not in it.
CREATE INDEX inbox_pending ON inbox (id) WHERE status = 'pending';

-- quarantine holds authenticated deliveries whose body could not be classified. dedupe_key is
-- the SHA-256 of route and body, so a retried unparseable delivery is kept once.
CREATE TABLE quarantine (
    id          BIGSERIAL PRIMARY KEY,
    dedupe_key  TEXT        NOT NULL UNIQUE,
    route       TEXT        NOT NULL,
    reason      TEXT        NOT NULL,
    headers     JSONB,
    body        BYTEA       NOT NULL,
    received_at TIMESTAMPTZ
);

-- jobs keeps the service's record exactly as encoded (record) and copies of the fields the
-- list filters use, derived from the record on every write.
CREATE TABLE jobs (
    id              TEXT COLLATE "C" PRIMARY KEY,
    kind            TEXT        NOT NULL,
    status          TEXT        NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    completed_at    TIMESTAMPTZ,
    custom_metadata BYTEA,
    record          BYTEA       NOT NULL,
    local           JSON        NOT NULL  -- json.Marshal output: always valid text
);

-- Lists page newest first; status and kind are the usual filters.
CREATE INDEX jobs_created ON jobs (created_at DESC, id DESC);
CREATE INDEX jobs_status_created ON jobs (status, created_at DESC, id DESC);
CREATE INDEX jobs_kind_created ON jobs (kind, created_at DESC, id DESC);

-- live_messages keeps each session's messages in the order they were applied.
CREATE TABLE live_messages (
    session_id  TEXT        NOT NULL,
    seq         BIGINT      NOT NULL,
    type        TEXT        NOT NULL,
    category    TEXT        NOT NULL,
    created_at  TIMESTAMPTZ,
    received_at TIMESTAMPTZ,
    inbox_id    BIGINT      NOT NULL,
    payload     BYTEA       NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- live_sequences holds each session's last sequence number. Appending a message updates this
-- row, which stays locked until the Apply commits: the Applies of one session, on any replica,
-- take their numbers one after another in commit order, and a rolled back Apply gives its
-- number back.
CREATE TABLE live_sequences (
    session_id TEXT   PRIMARY KEY,
    last_seq   BIGINT NOT NULL
);

CREATE TABLE artifacts (
    job_id     TEXT             NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    format     TEXT             NOT NULL,
    language   TEXT             NOT NULL,
    path       TEXT             NOT NULL,
    size       BIGINT           NOT NULL,
    created_at TIMESTAMPTZ,
    PRIMARY KEY (job_id, name)
);

-- tokens stores only the SHA-256 of each per-job callback token.
CREATE TABLE tokens (
    hash       BYTEA       PRIMARY KEY,
    job_id     TEXT        NOT NULL DEFAULT '',
    kind       TEXT        NOT NULL,
    created_at TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ
);
