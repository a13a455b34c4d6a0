-- Speaker names: the names given to a job's diarized speakers, and its subtitles' revision.
--
-- One row per job or live session whose speakers were named (PUT /v1/jobs/{id}/speakers,
-- store.SpeakerNaming): names is the JSON object of speaker numbers to names, revision the
-- revision of the subtitles last rendered with them (0: stored before the job had subtitles).
-- The pruner deletes a job's row with the job.
CREATE TABLE speakers (
    job_id     TEXT PRIMARY KEY,
    names      TEXT NOT NULL,
    revision   INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL
) STRICT;
