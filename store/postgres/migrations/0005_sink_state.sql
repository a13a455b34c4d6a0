-- sink_state keeps a sink's disabled state across restarts: a sink disabled by its endpoint's
-- 410 Gone answer, or by an operator (scribehook sinks disable), stays disabled until it is
-- enabled again. A sink without a row is enabled. Its deliveries stay queued meanwhile; every
-- replica reads the same row.
CREATE TABLE sink_state (
    name     TEXT        PRIMARY KEY,
    disabled BOOLEAN     NOT NULL DEFAULT false,
    reason   TEXT        NOT NULL DEFAULT '',
    since    TIMESTAMPTZ NOT NULL  -- when it was last disabled or enabled
);
