-- 0002: why an event was not ingested, or was ingested with a problem.
--
-- A capture request still answers 200 when some of its events are skipped (spec, Errors 3);
-- this table is where a user finds out which events and why. Written in the same commit
-- as the events of the request.
CREATE TABLE ingestion_warnings (
    team_id     BIGINT      NOT NULL,
    "timestamp" TIMESTAMPTZ NOT NULL,
    -- The reason, e.g. missing_distinct_id, missing_survey_id.
    type        VARCHAR     NOT NULL,
    event       VARCHAR     NOT NULL, -- the event's name, '' when it had none
    distinct_id VARCHAR     NOT NULL, -- '' when it had none
    details     VARCHAR               -- JSON object with more context, or NULL
);
