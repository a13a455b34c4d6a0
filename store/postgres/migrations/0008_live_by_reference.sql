-- A live message is stored once (DESIGN.md rule 8): as the span of its callback's body in the
-- inbox, which the receiver located when it classified the body (payload_at, payload_len:
-- bytes), with the message's created_at (message_at), so that applying it decodes nothing and
-- copies nothing. live_messages.payload becomes NULL for such a message, read through its
-- inbox row; messages stored by earlier versions keep their copy and read back the same. The
-- pruner keeps an inbox row while a message refers to it (live_messages_inbox).
ALTER TABLE inbox ADD COLUMN message_at TIMESTAMPTZ,
    ADD COLUMN payload_at INTEGER,
    ADD COLUMN payload_len INTEGER;
ALTER TABLE live_messages ALTER COLUMN payload DROP NOT NULL;
CREATE INDEX live_messages_inbox ON live_messages (inbox_id) WHERE payload IS NULL;
