-- 0001: the events table and the metadata that the first start bootstraps.
--
-- Events live in the main schema, metadata in `meta`. Structured API fields are stored
-- as JSON text in VARCHAR columns: the admin API reads and writes them whole.

CREATE TABLE events (
    uuid        UUID        NOT NULL,
    team_id     BIGINT      NOT NULL,
    event       VARCHAR     NOT NULL,
    distinct_id VARCHAR     NOT NULL,
    person_id   UUID,
    "timestamp" TIMESTAMPTZ NOT NULL,
    inserted_at TIMESTAMPTZ NOT NULL,
    -- The properties object exactly as the client sent it. VARCHAR, not JSON: the JSON
    -- type costs 20-25% on append (reference/limits.md B3) and DuckDB's JSON functions
    -- read VARCHAR all the same.
    properties  VARCHAR     NOT NULL,
    "$group_0"  VARCHAR,
    "$group_1"  VARCHAR,
    "$group_2"  VARCHAR,
    "$group_3"  VARCHAR,
    "$group_4"  VARCHAR,
    -- realtime | historical | overflow: the ingestion lane that committed the row.
    lane        VARCHAR     NOT NULL
);

CREATE SEQUENCE meta.user_id_seq START 1;
CREATE SEQUENCE meta.team_id_seq START 1;

CREATE TABLE meta.organizations (
    id         UUID PRIMARY KEY,
    name       VARCHAR     NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE meta.users (
    id                   BIGINT PRIMARY KEY DEFAULT nextval('meta.user_id_seq'),
    uuid                 UUID        NOT NULL UNIQUE,
    distinct_id          VARCHAR     NOT NULL,
    email                VARCHAR     NOT NULL UNIQUE, -- stored lower-cased
    first_name           VARCHAR     NOT NULL DEFAULT '',
    last_name            VARCHAR     NOT NULL DEFAULT '',
    is_email_verified    BOOLEAN     NOT NULL DEFAULT false,
    hedgehog_config      VARCHAR,                     -- JSON object or NULL
    role_at_organization VARCHAR     NOT NULL DEFAULT '',
    is_active            BOOLEAN     NOT NULL DEFAULT true,
    last_login           TIMESTAMPTZ,
    created_at           TIMESTAMPTZ NOT NULL
);

-- level: 1 member, 8 admin, 15 owner.
CREATE TABLE meta.memberships (
    id              UUID PRIMARY KEY,
    organization_id UUID        NOT NULL,
    user_id         BIGINT      NOT NULL,
    level           SMALLINT    NOT NULL,
    joined_at       TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (organization_id, user_id)
);

CREATE TABLE meta.projects (
    id                           BIGINT PRIMARY KEY DEFAULT nextval('meta.team_id_seq'),
    uuid                         UUID        NOT NULL UNIQUE,
    organization_id              UUID        NOT NULL,
    name                         VARCHAR     NOT NULL,
    api_token                    VARCHAR     NOT NULL UNIQUE,
    timezone                     VARCHAR     NOT NULL DEFAULT 'UTC',
    week_start_day               SMALLINT,
    is_demo                      BOOLEAN     NOT NULL DEFAULT false,
    completed_snippet_onboarding BOOLEAN     NOT NULL DEFAULT false,
    ingested_event               BOOLEAN     NOT NULL DEFAULT false,
    access_control               BOOLEAN     NOT NULL DEFAULT false,
    has_completed_onboarding_for VARCHAR,                 -- JSON object or NULL
    -- The other writable project fields of the spec, as one JSON object.
    settings                     VARCHAR     NOT NULL DEFAULT '{}',
    created_at                   TIMESTAMPTZ NOT NULL,
    updated_at                   TIMESTAMPTZ NOT NULL
);

-- Personal API keys are stored only as 'sha256$' || hex(sha256(key)); the key itself
-- is shown once, when it is made.
CREATE TABLE meta.personal_api_keys (
    id                   UUID PRIMARY KEY,
    user_id              BIGINT      NOT NULL,
    label                VARCHAR     NOT NULL,
    secure_value         VARCHAR     NOT NULL UNIQUE,
    mask_value           VARCHAR     NOT NULL,
    scopes               VARCHAR     NOT NULL,            -- JSON array of scope strings
    scoped_organizations VARCHAR     NOT NULL DEFAULT '[]', -- JSON array of organization ids
    scoped_teams         VARCHAR     NOT NULL DEFAULT '[]', -- JSON array of project ids
    created_at           TIMESTAMPTZ NOT NULL,
    last_used_at         TIMESTAMPTZ
);
