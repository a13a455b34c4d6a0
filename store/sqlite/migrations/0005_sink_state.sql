-- sink_state keeps a sink's disabled state across restarts: a sink disabled by its endpoint's
-- 410 Gone answer, or by an operator (scribehook sinks disable), stays disabled until it is
-- enabled again. A sink without a row is enabled. Its deliveries stay queued meanwhile.
CREATE TABLE sink_state (
    name     TEXT    PRIMARY KEY,
    disabled INTEGER NOT NULL DEFAULT 0, -- 1 while disabled
    reason   TEXT    NOT NULL DEFAULT '',
    since    TEXT    NOT NULL            -- when it was last disabled or enabled
) STRICT, WITHOUT ROWID;
