-- live_messages becomes a rowid table (its primary key an index beside it): a message is
-- appended at the table's end instead of into its session's place in a WITHOUT ROWID b-tree,
-- whose leaves hold about four messages of a kilobyte each, so that a group of messages over
-- many sessions split and rewrote a leaf per message. Same columns, key and rows; about half the
-- CPU of an append and its commit (issue 16).
CREATE TABLE live_messages_rowid (
    session_id  TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    category    TEXT    NOT NULL,
    created_at  TEXT,
    received_at TEXT,
    inbox_id    INTEGER NOT NULL,
    payload     TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;
INSERT INTO live_messages_rowid (session_id, seq, type, category, created_at, received_at, inbox_id, payload)
    SELECT session_id, seq, type, category, created_at, received_at, inbox_id, payload
    FROM live_messages ORDER BY inbox_id, session_id, seq;
DROP TABLE live_messages;
ALTER TABLE live_messages_rowid RENAME TO live_messages;
CREATE INDEX live_messages_category_received ON live_messages (category, received_at);
