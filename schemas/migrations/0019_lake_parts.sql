-- 0019: the lake's catalog. With --storage lake, the Writer stores each commit's
-- events as Parquet files, parts, one per project and day (of the events' timestamps,
-- UTC), under the lake directory, instead of rows of events; a part is registered
-- here in the same transaction as the commit's persons, groups and event log
-- positions, so that a part is either in this table and whole, or nowhere that a
-- query reads (a file of the lake directory that no row names is removed at start).
-- A compaction replaces parts of a project and day by one part in one transaction, and
-- the replaced files wait in lake_garbage until no query can still be reading them.
-- warehouse/lake.go owns both tables.
CREATE TABLE meta.lake_parts (
    id            BIGINT      PRIMARY KEY,
    team_id       BIGINT      NOT NULL,
    day           DATE        NOT NULL,
    -- The file, relative to the lake directory: team_id=<project>/date=<day>/<name>.
    path          VARCHAR     NOT NULL UNIQUE,
    rows          BIGINT      NOT NULL,
    bytes         BIGINT      NOT NULL,
    min_timestamp TIMESTAMPTZ NOT NULL,
    max_timestamp TIMESTAMPTZ NOT NULL,
    -- The project's materialized property keys of each slot when the part was
    -- written ('' for an unused slot): a slot column of the part holds the values of
    -- its key here, which queries read only while the project's key is still the same.
    slot_keys     VARCHAR[]   NOT NULL,
    -- 0 for a part a commit wrote, one more than the greatest of those it merged for a
    -- part of a compaction.
    level         INTEGER     NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);
CREATE SEQUENCE meta.lake_part_id_seq START 1;

CREATE TABLE meta.lake_garbage (
    path          VARCHAR     PRIMARY KEY,
    -- When the compaction that replaced it committed: the file is removed once every
    -- query that began before then has ended.
    replaced_at   TIMESTAMPTZ NOT NULL
);

-- A part that cannot be read (a damaged file) is taken out of the catalog so that
-- it fails no more queries, its file moved to <lake>/_quarantine/, and kept here
-- with why: its events are missing from every answer until an operator restores it.
CREATE TABLE meta.lake_quarantine (
    path          VARCHAR     PRIMARY KEY,
    team_id       BIGINT      NOT NULL,
    rows          BIGINT      NOT NULL,
    reason        VARCHAR     NOT NULL,
    quarantined_at TIMESTAMPTZ NOT NULL
);
