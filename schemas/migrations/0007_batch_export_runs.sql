-- 0007: batch exports that run: their runs and backfills, and the change times that
-- an export of persons selects by.

-- When an export was last unpaused: windows that ended while it was paused are not
-- run (PostHog resumes from the next window); a backfill covers them on request.
ALTER TABLE meta.batch_exports ADD COLUMN resumed_at TIMESTAMPTZ;

-- A request to export past windows of a batch export.
CREATE TABLE meta.batch_export_backfills (
    id              UUID PRIMARY KEY,
    batch_export_id UUID        NOT NULL,
    team_id         BIGINT      NOT NULL,
    start_at        TIMESTAMPTZ NOT NULL,
    end_at          TIMESTAMPTZ NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL
);

-- One window [data_interval_start, data_interval_end) of a batch export. A window has
-- one run: a retry or a backfill of it runs it again under the same id, and the files
-- are named by that id, so a destination never holds a window twice.
--
-- status: Starting (queued) | Running | Completed | FailedRetryable (waiting for
-- next_attempt_at) | Failed (out of attempts) | Cancelled (its export was deleted).
CREATE TABLE meta.batch_export_runs (
    id                  UUID PRIMARY KEY,
    batch_export_id     UUID        NOT NULL,
    team_id             BIGINT      NOT NULL,
    data_interval_start TIMESTAMPTZ NOT NULL,
    data_interval_end   TIMESTAMPTZ NOT NULL,
    status              VARCHAR     NOT NULL,
    records_completed   BIGINT,
    bytes_exported      BIGINT,
    attempts            INTEGER     NOT NULL DEFAULT 0,
    latest_error        VARCHAR,
    next_attempt_at     TIMESTAMPTZ,
    backfill_id         UUID,                 -- the backfill that last queued it, or NULL
    created_at          TIMESTAMPTZ NOT NULL,
    finished_at         TIMESTAMPTZ,
    last_updated_at     TIMESTAMPTZ NOT NULL,
    UNIQUE (batch_export_id, data_interval_start, data_interval_end)
);

-- When each person and each distinct id last changed: the commit time (inserted_at)
-- of the events that changed it. An export of the persons model selects the changes
-- of its window by these.
ALTER TABLE persons ADD COLUMN updated_at TIMESTAMPTZ;
UPDATE persons SET updated_at = created_at;
ALTER TABLE person_distinct_ids ADD COLUMN updated_at TIMESTAMPTZ;
UPDATE person_distinct_ids SET updated_at = (SELECT p.created_at FROM persons p WHERE p.id = person_distinct_ids.person_id);

-- How far the runner has scheduled each export: the end of its last scheduled window.
-- The runner's own table, so that scheduling never contends with the API's writes to
-- meta.batch_exports.
CREATE TABLE meta.batch_export_schedules (
    batch_export_id   UUID PRIMARY KEY,
    scheduled_through TIMESTAMPTZ NOT NULL
);
