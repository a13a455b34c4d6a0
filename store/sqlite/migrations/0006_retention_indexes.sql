-- The pruner (retention) picks each kind's old rows by the time it is kept from; these indexes
-- let a batch read about as many rows as it deletes instead of walking a whole table. Partial
-- where only one status is ever pruned, so that rows still at work are not in them. IF NOT
-- EXISTS: the migration tests run migrations again from an earlier version.
-- Not partial: SQLite's planner, without statistics, would rather walk inbox_status_id (status, id)
-- than a partial index on processed_at alone, and the last batch of each run would read every
-- done row.
CREATE INDEX IF NOT EXISTS inbox_status_processed ON inbox (status, processed_at);
CREATE INDEX IF NOT EXISTS live_messages_category_received ON live_messages (category, received_at);
CREATE INDEX IF NOT EXISTS jobs_completed ON jobs (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS sink_deliveries_delivered ON sink_deliveries (delivered_at) WHERE status = 'delivered';
CREATE INDEX IF NOT EXISTS quarantine_received ON quarantine (received_at);
-- Failed inbox rows are found through inbox_status_id (status, id).
