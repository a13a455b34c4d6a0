-- A live message is stored once (DESIGN.md rule 8): as the span of its callback's body in the
-- inbox, which the receiver located when it classified the body (payload_at, payload_len:
-- bytes), with the message's created_at (message_at), so that applying it decodes nothing and
-- copies nothing. live_messages.payload becomes NULL for such a message, read through its
-- inbox row; messages stored by earlier versions keep their copy and read back the same. The
-- pruner keeps an inbox row while a message refers to it (live_messages_inbox).
ALTER TABLE inbox ADD COLUMN message_at TEXT;
ALTER TABLE inbox ADD COLUMN payload_at INTEGER;
ALTER TABLE inbox ADD COLUMN payload_len INTEGER;

CREATE TABLE live_messages_next (
    session_id  TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    category    TEXT    NOT NULL,
    created_at  TEXT,
    received_at TEXT,
    inbox_id    INTEGER NOT NULL,
    payload     TEXT,             -- NULL: the span payload_at, payload_len of inbox row inbox_id
    PRIMARY KEY (session_id, seq)
) STRICT;
INSERT INTO live_messages_next (session_id, seq, type, category, created_at, received_at, inbox_id, payload)
    SELECT session_id, seq, type, category, created_at, received_at, inbox_id, payload
    FROM live_messages ORDER BY rowid;
DROP TABLE live_messages;
ALTER TABLE live_messages_next RENAME TO live_messages;
CREATE INDEX live_messages_category_received ON live_messages (category, received_at);
CREATE INDEX live_messages_inbox ON live_messages (inbox_id) WHERE payload IS NULL;
