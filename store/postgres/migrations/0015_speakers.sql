-- Speaker names: the names given to a job's diarized speakers, and its subtitles' revision.
--
-- One row per job or live session whose speakers were named (PUT /v1/jobs/{id}/speakers,
-- store.SpeakerNaming): names is the JSON object of speaker numbers to names (json.Marshal's
-- output, as jobs.local), revision the revision of the subtitles last rendered with them (0:
-- stored before the job had subtitles). The pruner deletes a job's row with the job.
CREATE TABLE speakers (
    job_id     TEXT COLLATE "C" PRIMARY KEY,
    names      JSON NOT NULL,
    revision   BIGINT NOT NULL DEFAULT 0,
    updated_at TIMESTAMPTZ NOT NULL
);
