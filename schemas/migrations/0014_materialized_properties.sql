-- 0014: materialized property columns. Each "mat_<key>" column holds, for every row,
-- exactly what json_extract_string(properties, '$."<key>"') returns for it (NULL when
-- the key is absent or null), so that queries read a column instead of parsing each
-- event's properties text. The warehouse owns them: the Writer fills them on ingest,
-- and the query engine reads them where a query reads those properties of events
-- (warehouse/materialized.go lists the keys; its test checks this list against it).
-- The names start with mat_ and hold a $, so no column of PostHog's events table, and
-- no property read that hedge rewrites, can name one by accident.
ALTER TABLE events ADD COLUMN "mat_$current_url" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_$pathname" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_$host" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_$browser" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_$os" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_$device_type" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_$referring_domain" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_$session_id" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_$lib" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_$screen_name" VARCHAR;

-- The rows stored before this migration are filled in the background, a chunk of
-- rowids at a time (events rows are never deleted, so a row keeps its rowid): rows
-- from next_row up to end_row are still to fill; every row from end_row on was
-- written by a Writer that fills the columns itself. The one row of this table moves
-- in the same transaction as the chunk it records, so a restart resumes where the
-- last commit left off. Until next_row reaches end_row, queries read
-- coalesce(column, JSON) and so answer correctly for rows not filled yet.
CREATE TABLE meta.property_backfill (
    next_row BIGINT NOT NULL,
    end_row  BIGINT NOT NULL
);
INSERT INTO meta.property_backfill SELECT 0, coalesce(max(rowid) + 1, 0) FROM events;
