-- An event is stored once, in events, and each sink's delivery refers to it by its id instead
-- of holding a copy of the event's JSON and its id: an event going to three sinks was stored
-- three times (a 2-hour result's event, megabytes, once per sink).
--
-- events.body is the api.Event as JSON (BYTEA, for the reasons given in 0001), as the first
-- delivery of the event id held it (the queue keeps the first: an event id stands for one
-- event, whatever sink it goes to).
--
-- An event whose data is a live message is stored without it (its body's "data" is null) and
-- refers to the inbox row that holds the message (inbox_id, with the row's payload_at and
-- payload_len): the message is stored once, for the session's messages and for every sink.
CREATE TABLE events (
    id       BIGSERIAL PRIMARY KEY,
    event_id TEXT      NOT NULL UNIQUE,
    body     BYTEA     NOT NULL,
    inbox_id BIGINT              -- NULL: the data is in body
);

-- In the order of each event's first delivery, so that event ids follow queue order as new
-- ones do.
INSERT INTO events (event_id, body)
    SELECT event_id, event FROM (
        SELECT DISTINCT ON (event_id) id, event_id, event FROM sink_deliveries ORDER BY event_id, id) f
    ORDER BY id;

-- sink_deliveries is rebuilt without its event_id and event columns: dropping them would leave
-- every event's bytes in the rows until they are rewritten. Every row keeps its id, status,
-- times, attempts and error, and the id sequence goes on where it was (the queue reserves ids
-- from it by name). The constraints and indexes are built after the rows are in.
CREATE TABLE sink_deliveries_events (
    id              BIGINT      NOT NULL DEFAULT nextval('sink_deliveries_id_seq'),
    sink            TEXT        NOT NULL,
    event           BIGINT      NOT NULL, -- events.id
    order_key       TEXT        NOT NULL DEFAULT '',
    status          TEXT        NOT NULL DEFAULT 'queued'
        CONSTRAINT sink_deliveries_status_check CHECK (status IN ('queued', 'delivered', 'dead')),
    attempts        INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    lease_until     TIMESTAMPTZ,           -- NULL when not claimed
    last_error      TEXT        NOT NULL DEFAULT '',
    created_at      TIMESTAMPTZ NOT NULL,
    failed_at       TIMESTAMPTZ,           -- set while dead
    delivered_at    TIMESTAMPTZ
);

INSERT INTO sink_deliveries_events (id, sink, event, order_key, status, attempts, next_attempt_at,
        lease_until, last_error, created_at, failed_at, delivered_at)
    SELECT d.id, d.sink, e.id, d.order_key, d.status, d.attempts, d.next_attempt_at,
        d.lease_until, d.last_error, d.created_at, d.failed_at, d.delivered_at
    FROM sink_deliveries d JOIN events e ON e.event_id = d.event_id
    ORDER BY d.id;

ALTER SEQUENCE sink_deliveries_id_seq OWNED BY NONE;
DROP TABLE sink_deliveries;
ALTER TABLE sink_deliveries_events RENAME TO sink_deliveries;
ALTER SEQUENCE sink_deliveries_id_seq OWNED BY sink_deliveries.id;

-- UNIQUE (event, sink) is the old (sink, event_id) pair: the same event queued twice for a sink
-- is a no-op. Its leading column finds an event's deliveries, which the pruner asks before it
-- deletes an event. No foreign key: its check, a query per delivery inserted, made queueing an
-- event for three sinks about half again as slow; the queue locks an event it did not insert
-- itself (FOR KEY SHARE) and the pruner locks the events it deletes (FOR UPDATE), which keeps a
-- delivery from referring to a deleted event the same way (docs/store.md).
ALTER TABLE sink_deliveries
    ADD CONSTRAINT sink_deliveries_pkey PRIMARY KEY (id),
    ADD CONSTRAINT sink_deliveries_event_sink_key UNIQUE (event, sink);

-- The indexes of 0002 and 0006, as they were.
CREATE INDEX sink_deliveries_due ON sink_deliveries (sink, next_attempt_at, id) WHERE status = 'queued';
CREATE INDEX sink_deliveries_order ON sink_deliveries (sink, order_key, id) WHERE status = 'queued';
CREATE INDEX sink_deliveries_dead ON sink_deliveries (failed_at DESC, id DESC) WHERE status = 'dead';
CREATE INDEX sink_deliveries_delivered ON sink_deliveries (delivered_at) WHERE status = 'delivered';

-- The pruner keeps an inbox row while an event's data is in it.
CREATE INDEX events_inbox ON events (inbox_id) WHERE inbox_id IS NOT NULL;
