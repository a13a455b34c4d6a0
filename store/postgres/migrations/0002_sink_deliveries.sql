-- sink_deliveries is the durable queue of every sink (an outbox): the fanout inserts rows in the
-- transaction that applies an inbox row, and each sink's workers, on any replica, claim,
-- deliver and settle them. Rows are kept after delivery (status 'delivered') so that
-- UNIQUE (sink, event_id) turns a replayed inbox row into a no-op instead of a second delivery.
-- event is the api.Event as JSON, in BYTEA for the reasons given in 0001.
CREATE TABLE sink_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    sink            TEXT        NOT NULL,
    event_id        TEXT        NOT NULL,
    event           BYTEA       NOT NULL,
    order_key       TEXT        NOT NULL DEFAULT '',
    status          TEXT        NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'delivered', 'dead')),
    attempts        INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    lease_until     TIMESTAMPTZ,           -- NULL when not claimed
    last_error      TEXT        NOT NULL DEFAULT '',
    created_at      TIMESTAMPTZ NOT NULL,
    failed_at       TIMESTAMPTZ,           -- set while dead
    delivered_at    TIMESTAMPTZ,
    UNIQUE (sink, event_id)
);

-- Claims read a sink's due queued rows in (next_attempt_at, id) order; SinkDepth counts them.
CREATE INDEX sink_deliveries_due ON sink_deliveries (sink, next_attempt_at, id) WHERE status = 'queued';

-- Ordered claims look for an earlier queued row of the same key: partial, so the search never
-- walks a long session's delivered rows.
CREATE INDEX sink_deliveries_order ON sink_deliveries (sink, order_key, id) WHERE status = 'queued';

-- DeadLetters lists dead rows newest first, across sinks.
CREATE INDEX sink_deliveries_dead ON sink_deliveries (failed_at DESC, id DESC) WHERE status = 'dead';
