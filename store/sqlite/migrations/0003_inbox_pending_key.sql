-- PendingInboxByKey reads one job's or session's pending rows; partial, like the queue's
-- indexes, so done rows (nearly all of them) are not in it.
CREATE INDEX inbox_pending_key ON inbox (partition_key, id) WHERE status = 'pending';
