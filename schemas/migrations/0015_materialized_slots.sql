-- 0015: properties a project chooses to materialize. Beside the fixed columns of
-- migration 14, events has a few generic slot columns, "mat_slot_<n>"; each project
-- may give each slot a property key of its choice, and the slot then holds, for that
-- project's rows, exactly what json_extract_string(properties, '$."<key>"') returns.
-- A slot means nothing without the project: another project's rows hold its own keys'
-- values there, so a slot is only ever read through a project's view, with that
-- project's mapping (warehouse/materialized_slots.go, its owner).
ALTER TABLE events ADD COLUMN "mat_slot_0" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_slot_1" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_slot_2" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_slot_3" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_slot_4" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_slot_5" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_slot_6" VARCHAR;
ALTER TABLE events ADD COLUMN "mat_slot_7" VARCHAR;

-- The key of each slot a project uses, at position (its place in the list the project
-- chose), and the state of its backfill: the project's rows from next_row up to
-- end_row (rowids) may still hold another key's value, or none, and are filled in the
-- background a chunk at a time, next_row moving in the same transaction as the chunk;
-- every row from end_row on was written by a Writer that fills the slot itself. Until
-- next_row reaches end_row, queries read those rows from the JSON.
CREATE TABLE meta.materialized_slots (
    team_id  BIGINT  NOT NULL,
    slot     INTEGER NOT NULL,
    key      VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    next_row BIGINT  NOT NULL,
    end_row  BIGINT  NOT NULL,
    PRIMARY KEY (team_id, slot)
);
