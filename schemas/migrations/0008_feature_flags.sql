-- 0008: feature flags, the cohorts they target, and the identifiers experience
-- continuity keeps. The flags package owns these tables: it alone reads and writes them.
--
-- As in 0001, structured fields are JSON text in VARCHAR columns and there are no
-- FOREIGN KEYs. Deletes of flags and cohorts are soft (deleted), as PostHog's.

CREATE SEQUENCE meta.feature_flag_id_seq START 1;
CREATE SEQUENCE meta.cohort_id_seq START 1;

-- A flag's key is unique among the flags of its project that are not deleted; the
-- flags package checks it, under its write lock, because a soft-deleted flag keeps its
-- key until a new flag takes it (which removes the deleted one).
CREATE TABLE meta.feature_flags (
    id                           BIGINT PRIMARY KEY DEFAULT nextval('meta.feature_flag_id_seq'),
    team_id                      BIGINT      NOT NULL,
    key                          VARCHAR     NOT NULL,
    name                         VARCHAR     NOT NULL DEFAULT '',   -- PostHog's description of the flag
    filters                      VARCHAR     NOT NULL,              -- JSON: groups, multivariate, payloads, ...
    active                       BOOLEAN     NOT NULL DEFAULT true,
    deleted                      BOOLEAN     NOT NULL DEFAULT false,
    version                      INTEGER     NOT NULL DEFAULT 1,    -- 1 on create, +1 per update
    ensure_experience_continuity BOOLEAN     NOT NULL DEFAULT false,
    evaluation_runtime           VARCHAR     NOT NULL DEFAULT 'all', -- server | client | all
    bucketing_identifier         VARCHAR     NOT NULL DEFAULT 'distinct_id', -- distinct_id | device_id
    evaluation_tags              VARCHAR     NOT NULL DEFAULT '[]', -- JSON array of strings
    tags                         VARCHAR     NOT NULL DEFAULT '[]', -- JSON array of strings
    is_remote_configuration      BOOLEAN     NOT NULL DEFAULT false,
    has_encrypted_payloads       BOOLEAN     NOT NULL DEFAULT false,
    -- The version at which each field last changed ({"filters": 3, ...}; a field not
    -- listed last changed at version 1): an update made from an older version conflicts
    -- when it changes a field that changed since.
    field_versions               VARCHAR     NOT NULL DEFAULT '{}',
    created_at                   TIMESTAMPTZ NOT NULL,
    created_by                   BIGINT,                            -- meta.users.id
    updated_at                   TIMESTAMPTZ NOT NULL,
    last_modified_by             BIGINT
);

-- A set of persons a flag can target: defined by person properties (filters), or
-- static (a list, which hedge does not keep yet: a static cohort has no members).
CREATE TABLE meta.cohorts (
    id          BIGINT PRIMARY KEY DEFAULT nextval('meta.cohort_id_seq'),
    team_id     BIGINT      NOT NULL,
    name        VARCHAR     NOT NULL DEFAULT '',
    description VARCHAR     NOT NULL DEFAULT '',
    filters     VARCHAR     NOT NULL,              -- JSON: {"properties": {"type": "AND"|"OR", "values": [...]}}
    is_static   BOOLEAN     NOT NULL DEFAULT false,
    deleted     BOOLEAN     NOT NULL DEFAULT false,
    version     INTEGER     NOT NULL DEFAULT 1,    -- 1 on create, +1 per update
    created_at  TIMESTAMPTZ NOT NULL,
    created_by  BIGINT,
    updated_at  TIMESTAMPTZ NOT NULL
);

-- Experience continuity: the identifier hashed for a flag, kept from the anonymous id
-- a user had before they identified. PostHog keys these rows by person; hedge keys
-- them by distinct id, and writes the row for both the distinct id and the anonymous
-- id, which gives the same answer unless a third distinct id of the same person asks.
-- A row is never changed once written.
CREATE TABLE meta.feature_flag_hash_key_overrides (
    team_id          BIGINT  NOT NULL,
    distinct_id      VARCHAR NOT NULL,
    feature_flag_key VARCHAR NOT NULL,
    hash_key         VARCHAR NOT NULL,
    PRIMARY KEY (team_id, distinct_id, feature_flag_key)
);
