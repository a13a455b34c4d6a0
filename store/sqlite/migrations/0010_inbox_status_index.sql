-- One index of the inbox's statuses instead of two: inbox_status_processed (status, processed_at)
-- holds every row's id after its columns (the rowid), and a pending row has no processed_at, so
-- its pending rows are in id order there, as in inbox_status_id (status, id). The readers of
-- pending rows say processed_at IS NULL, which makes it one seek and an ordered range. Each
-- row applied moved in both indexes; it now moves in one (issue 22: the writer's serial time).
DROP INDEX IF EXISTS inbox_status_id;
