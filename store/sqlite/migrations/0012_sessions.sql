-- Dashboard sign-outs: the sessions revoked one by one, and the cutoff of a revoke-all.
--
-- A session is kept as the SHA-256 of its id, never the id itself: a stored hash cannot be
-- turned back into a cookie. expires_at is the session's own expiry, after which its cookie is
-- refused anyway and the pruner deletes the row.
CREATE TABLE session_revocations (
    id_hash    BLOB NOT NULL PRIMARY KEY,
    expires_at TEXT NOT NULL
) STRICT;

-- The pruner takes expired revocations by expires_at.
CREATE INDEX session_revocations_expires ON session_revocations (expires_at);

-- One row at most: sessions issued at or before revoked_before are refused (a revoke-all). A
-- later revoke-all only moves it forward.
CREATE TABLE session_cutoff (
    id             INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    revoked_before TEXT    NOT NULL
) STRICT;
