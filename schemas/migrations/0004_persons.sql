-- 0004: the identity model: persons, the distinct ids that point at them, and groups.
--
-- Written by the event writer in the same transaction as the events that change them.
-- JSON properties are VARCHAR holding JSON text, as for events.

CREATE TABLE persons (
    id            UUID PRIMARY KEY,
    team_id       BIGINT      NOT NULL,
    properties    VARCHAR     NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    is_identified BOOLEAN     NOT NULL,
    -- Bumped by every change; a merge takes the higher of the two plus one.
    version       BIGINT      NOT NULL
);

-- Which person each distinct id belongs to now; a merge moves rows, never deletes them.
CREATE TABLE person_distinct_ids (
    team_id     BIGINT  NOT NULL,
    distinct_id VARCHAR NOT NULL,
    person_id   UUID    NOT NULL,
    version     BIGINT  NOT NULL,
    UNIQUE (team_id, distinct_id)
);

-- Group types get indexes 0-4 in order of first appearance, at most five per project.
CREATE TABLE group_type_mappings (
    team_id          BIGINT   NOT NULL,
    group_type       VARCHAR  NOT NULL,
    group_type_index SMALLINT NOT NULL,
    UNIQUE (team_id, group_type),
    UNIQUE (team_id, group_type_index)
);

CREATE TABLE groups (
    team_id          BIGINT      NOT NULL,
    group_type_index SMALLINT    NOT NULL,
    group_key        VARCHAR     NOT NULL,
    group_properties VARCHAR     NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    version          BIGINT      NOT NULL,
    UNIQUE (team_id, group_type_index, group_key)
);
