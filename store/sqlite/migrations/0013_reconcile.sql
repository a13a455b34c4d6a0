-- reconcile lists the jobs and live sessions the kit created and has not seen the end of: the
-- reconciler asks the service about each when it is due, in case its final callback never
-- comes (docs/operations.md, Reconciliation). CreateJob adds a row, the reconciler removes it.
CREATE TABLE reconcile (
    job_id     TEXT    NOT NULL PRIMARY KEY,
    kind       TEXT    NOT NULL,
    created_at TEXT    NOT NULL,
    due_at     TEXT    NOT NULL,
    checks     INTEGER NOT NULL DEFAULT 0,
    overdue_at TEXT,
    checked_at TEXT,
    status     TEXT    NOT NULL DEFAULT '',
    last_error TEXT    NOT NULL DEFAULT ''
) STRICT, WITHOUT ROWID;

-- The reconciler takes the due rows, soonest first; the queue position counts by kind.
CREATE INDEX reconcile_due ON reconcile (due_at);
CREATE INDEX reconcile_kind_created ON reconcile (kind, created_at);

-- Jobs submitted before this version that have not ended are listed too.
INSERT INTO reconcile (job_id, kind, created_at, due_at)
SELECT id, kind, created_at, created_at FROM jobs
WHERE status IN ('queued', 'processing') AND json_extract(local, '$.source') = 'submit'
    AND json_extract(local, '$.final') IS NULL;
