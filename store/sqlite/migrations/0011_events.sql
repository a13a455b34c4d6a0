-- An event is stored once, in events, and each sink's delivery refers to it by its integer id
-- instead of holding a copy of the event's JSON and its id: an event going to three sinks was
-- stored three times (a 2-hour result's event, megabytes, once per sink).
--
-- events.body is the api.Event as JSON, as the first delivery of the event id held it (the
-- queue keeps the first: an event id stands for one event, whatever sink it goes to).
--
-- An event whose data is a live message is stored without it (its body's "data" is null) and
-- refers to the inbox row that holds the message (inbox_id, with the row's payload_at and
-- payload_len): the message is stored once, for the session's messages and for every sink.
CREATE TABLE events (
    id       INTEGER PRIMARY KEY,
    event_id TEXT    NOT NULL UNIQUE,
    body     TEXT    NOT NULL,
    inbox_id INTEGER           -- NULL: the data is in body
) STRICT;

-- In the order of each event's first delivery, so that event ids follow queue order as new
-- ones do.
INSERT INTO events (event_id, body)
    SELECT event_id, event FROM sink_deliveries
    WHERE id IN (SELECT min(id) FROM sink_deliveries GROUP BY event_id)
    ORDER BY id;

-- sink_deliveries is rebuilt without its event_id and event columns (SQLite cannot drop a
-- column that a UNIQUE constraint names); every row keeps its id, status, times, attempts and
-- error. UNIQUE (event, sink) is the old (sink, event_id) pair: the same event queued twice for
-- a sink is a no-op. Its leading column finds an event's deliveries, which the pruner asks
-- before it deletes an event, and the foreign key (the writer connection enforces them) keeps a
-- delivery from outliving its event.
CREATE TABLE sink_deliveries_events (
    id              INTEGER PRIMARY KEY,
    sink            TEXT    NOT NULL,
    event           INTEGER NOT NULL REFERENCES events (id), -- events.id
    order_key       TEXT    NOT NULL DEFAULT '',
    status          TEXT    NOT NULL DEFAULT 'queued',        -- queued | delivered | dead
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT    NOT NULL,
    lease_until     TEXT,                                     -- NULL when not claimed
    last_error      TEXT    NOT NULL DEFAULT '',
    created_at      TEXT    NOT NULL,
    failed_at       TEXT,                                     -- set while dead
    delivered_at    TEXT,
    UNIQUE (event, sink)
) STRICT;

INSERT INTO sink_deliveries_events (id, sink, event, order_key, status, attempts, next_attempt_at,
        lease_until, last_error, created_at, failed_at, delivered_at)
    SELECT d.id, d.sink, e.id, d.order_key, d.status, d.attempts, d.next_attempt_at,
        d.lease_until, d.last_error, d.created_at, d.failed_at, d.delivered_at
    FROM sink_deliveries d JOIN events e ON e.event_id = d.event_id
    ORDER BY d.id;

DROP TABLE sink_deliveries;
ALTER TABLE sink_deliveries_events RENAME TO sink_deliveries;

-- Claims read a sink's due queued rows in (next_attempt_at, id) order; SinkDepth counts them.
-- Partial now, as on PostgreSQL: a delivered row (nearly all of them) is in no index but the
-- unique one and sink_deliveries_delivered, where it was in this one too.
CREATE INDEX sink_deliveries_due ON sink_deliveries (sink, next_attempt_at, id) WHERE status = 'queued';

-- Ordered claims look for an earlier queued row of the same key.
CREATE INDEX sink_deliveries_order ON sink_deliveries (sink, order_key, id) WHERE status = 'queued';

-- DeadLetters lists dead rows newest first, across sinks; the pruner takes the oldest.
CREATE INDEX sink_deliveries_dead ON sink_deliveries (failed_at DESC, id DESC) WHERE status = 'dead';

-- The pruner takes delivered rows by delivered_at (0006).
CREATE INDEX sink_deliveries_delivered ON sink_deliveries (delivered_at) WHERE status = 'delivered';

-- The pruner keeps an inbox row while an event's data is in it.
CREATE INDEX events_inbox ON events (inbox_id) WHERE inbox_id IS NOT NULL;
