-- The pruner deletes callback tokens once they have expired (token_ttl after created_at); this
-- index lets a batch read about as many tokens as it deletes instead of walking the table.
-- Built in the migration's transaction; it can be built beforehand with CREATE INDEX
-- CONCURRENTLY IF NOT EXISTS tokens_created ON tokens (created_at), like 0006's.
CREATE INDEX IF NOT EXISTS tokens_created ON tokens (created_at);
