-- Inbox retries kept in the row: next_attempt_at, failed_at and the partial index inbox_due.
--
-- next_attempt_at is when a pending row that failed an attempt (or was replayed) is due again;
-- failed_at is when a row was marked failed for good.
--
-- next_attempt_at is NULL for a row never tried (due at once). The pipeline finds rows whose
-- retry came due, and rows replayed by another replica or process, through inbox_due:
-- partial, so that only rows waiting for a retry are in it, and applying a callback that never
-- failed changes nothing in it. failed_at is NULL unless the row is failed; rows failed before
-- this migration keep NULL (the time was not kept). Adding nullable columns without a default
-- rewrites nothing; the index starts empty.
ALTER TABLE inbox ADD COLUMN next_attempt_at TIMESTAMPTZ, ADD COLUMN failed_at TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS inbox_due ON inbox (next_attempt_at)
    WHERE status = 'pending' AND next_attempt_at IS NOT NULL;
-- FailedInbox lists failed rows newest first, by id.
CREATE INDEX IF NOT EXISTS inbox_failed ON inbox (id) WHERE status = 'failed';
