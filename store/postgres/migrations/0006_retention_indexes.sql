-- The pruner (retention) picks each kind's old rows by the time it is kept from; these indexes
-- let a batch read about as many rows as it deletes instead of walking a whole table. Partial
-- where only one status is ever pruned, so that rows still at work are not in them. IF NOT
-- EXISTS: the migration tests run migrations again from an earlier version. Built in
-- the migration's transaction: on a large database the upgrade holds writes to these tables
-- while they are built (docs/operations.md, Retention).
CREATE INDEX IF NOT EXISTS inbox_done_processed ON inbox (processed_at) WHERE status = 'done';
CREATE INDEX IF NOT EXISTS inbox_failed_received ON inbox (received_at) WHERE status = 'failed';
CREATE INDEX IF NOT EXISTS live_messages_category_received ON live_messages (category, received_at);
CREATE INDEX IF NOT EXISTS jobs_completed ON jobs (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS sink_deliveries_delivered ON sink_deliveries (delivered_at) WHERE status = 'delivered';
CREATE INDEX IF NOT EXISTS quarantine_received ON quarantine (received_at);
