-- 0006: dashboards, the insights and text cards on their tiles, collaborators, sharing.
--
-- Deletes are soft (deleted flags), as PostHog's: a dashboard is never hard-deleted.

CREATE SEQUENCE meta.dashboard_id_seq START 1;
CREATE SEQUENCE meta.insight_id_seq START 1;
CREATE SEQUENCE meta.dashboard_tile_id_seq START 1;
CREATE SEQUENCE meta.text_id_seq START 1;

CREATE TABLE meta.dashboards (
    id                BIGINT PRIMARY KEY DEFAULT nextval('meta.dashboard_id_seq'),
    team_id           BIGINT      NOT NULL,
    name              VARCHAR,
    description       VARCHAR     NOT NULL DEFAULT '',
    pinned            BOOLEAN     NOT NULL DEFAULT false,
    deleted           BOOLEAN     NOT NULL DEFAULT false,
    created_at        TIMESTAMPTZ NOT NULL,
    created_by        BIGINT,                          -- user id
    creation_mode     VARCHAR     NOT NULL DEFAULT 'default', -- default | template | duplicate
    restriction_level SMALLINT    NOT NULL DEFAULT 21,  -- 21: everyone in the project edits; 37: collaborators only
    filters           VARCHAR     NOT NULL DEFAULT '{}', -- JSON object
    variables         VARCHAR,                         -- JSON object or NULL
    tags              VARCHAR     NOT NULL DEFAULT '[]', -- JSON array of strings
    use_template      VARCHAR     NOT NULL DEFAULT ''    -- the template it was made from
);

CREATE TABLE meta.insights (
    id               BIGINT PRIMARY KEY DEFAULT nextval('meta.insight_id_seq'),
    short_id         VARCHAR     NOT NULL UNIQUE,
    team_id          BIGINT      NOT NULL,
    name             VARCHAR,
    description      VARCHAR     NOT NULL DEFAULT '',
    query            VARCHAR,                          -- JSON: a TrendsQuery or an EventsQuery
    deleted          BOOLEAN     NOT NULL DEFAULT false,
    tags             VARCHAR     NOT NULL DEFAULT '[]',
    created_at       TIMESTAMPTZ NOT NULL,
    created_by       BIGINT,
    last_modified_at TIMESTAMPTZ NOT NULL,
    last_modified_by BIGINT
);

CREATE TABLE meta.texts (
    id               BIGINT PRIMARY KEY DEFAULT nextval('meta.text_id_seq'),
    team_id          BIGINT      NOT NULL,
    body             VARCHAR     NOT NULL,
    created_by       BIGINT,
    last_modified_by BIGINT,
    last_modified_at TIMESTAMPTZ NOT NULL
);

-- A tile holds exactly one of an insight and a text card.
CREATE TABLE meta.dashboard_tiles (
    id                BIGINT PRIMARY KEY DEFAULT nextval('meta.dashboard_tile_id_seq'),
    dashboard_id      BIGINT  NOT NULL,
    insight_id        BIGINT,
    text_id           BIGINT,
    layouts           VARCHAR NOT NULL DEFAULT '{}', -- JSON object, e.g. {"sm": {"x","y","w","h"}}
    color             VARCHAR,
    filters_overrides VARCHAR NOT NULL DEFAULT '{}',
    deleted           BOOLEAN NOT NULL DEFAULT false
);

-- level: 37 (can edit); the only level that may be given.
CREATE TABLE meta.dashboard_collaborators (
    id           UUID PRIMARY KEY,
    dashboard_id BIGINT      NOT NULL,
    user_id      BIGINT      NOT NULL,
    level        SMALLINT    NOT NULL,
    added_at     TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (dashboard_id, user_id)
);

-- The public link of a dashboard: /shared/<access_token> while enabled.
CREATE TABLE meta.sharing_configurations (
    dashboard_id BIGINT PRIMARY KEY,
    team_id      BIGINT      NOT NULL,
    enabled      BOOLEAN     NOT NULL DEFAULT false,
    access_token VARCHAR     NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL
);
