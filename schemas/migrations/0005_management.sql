-- 0005: the organization-level management API: invites, verified domains, batch exports.
--
-- As in 0001, structured fields are JSON text in VARCHAR columns and there are no
-- FOREIGN KEYs (DuckDB cannot delete a referenced row); the API keeps the references
-- (organization_id, team_id, created_by_id) consistent itself.

-- An invitation to join an organization, consumed (deleted) when accepted. A new
-- invite to the same e-mail replaces the older ones, so there is at most one pending
-- invite per organization and e-mail; is_expired is computed from created_at.
CREATE TABLE meta.invites (
    id                     UUID PRIMARY KEY,
    organization_id        UUID        NOT NULL,
    target_email           VARCHAR     NOT NULL,            -- stored lower-cased
    first_name             VARCHAR     NOT NULL DEFAULT '',
    level                  SMALLINT    NOT NULL,            -- 1 member, 8 admin, 15 owner
    message                VARCHAR,
    private_project_access VARCHAR     NOT NULL DEFAULT '[]', -- JSON array of {"id": project id, "level": "member"|"admin"}
    emailing_attempt_made  BOOLEAN     NOT NULL DEFAULT false,
    created_by_id          BIGINT,                          -- meta.users.id of the inviter
    created_at             TIMESTAMPTZ NOT NULL,
    updated_at             TIMESTAMPTZ NOT NULL
);

-- A domain an organization claims. Unique across the instance; verified by a TXT
-- record _posthog-challenge.<domain> holding verification_challenge.
CREATE TABLE meta.domains (
    id                       UUID PRIMARY KEY,
    organization_id          UUID        NOT NULL,
    domain                   VARCHAR     NOT NULL UNIQUE,
    verification_challenge   VARCHAR     NOT NULL,
    verified_at              TIMESTAMPTZ,
    last_verification_retry  TIMESTAMPTZ,
    jit_provisioning_enabled BOOLEAN     NOT NULL DEFAULT false,
    sso_enforcement          VARCHAR     NOT NULL DEFAULT '',
    saml_entity_id           VARCHAR,
    saml_acs_url             VARCHAR,
    saml_x509_cert           VARCHAR,
    created_at               TIMESTAMPTZ NOT NULL
);

-- A batch export of one project's events or persons to a destination, on a schedule.
-- Deleting is soft (deleted = true) so that the runs a scheduler records (a separate
-- table, keyed by batch_export_id) keep their export. A scheduler reads: paused and
-- deleted (start nothing), "interval", start_at/end_at (the bounds of triggered runs),
-- last_paused_at (where an unpause resumes).
CREATE TABLE meta.batch_exports (
    id                 UUID PRIMARY KEY,
    team_id            BIGINT      NOT NULL,
    name               VARCHAR     NOT NULL,
    model              VARCHAR     NOT NULL,               -- events | persons
    destination_type   VARCHAR     NOT NULL,               -- S3 | Parquet
    -- JSON object, secrets (aws_secret_access_key, ...) included: the runner needs
    -- them. The API never returns the secret fields.
    destination_config VARCHAR     NOT NULL DEFAULT '{}',
    "interval"         VARCHAR     NOT NULL,               -- hour | day | week | every 5 minutes | every 15 minutes
    paused             BOOLEAN     NOT NULL DEFAULT false,
    last_paused_at     TIMESTAMPTZ,
    start_at           TIMESTAMPTZ,
    end_at             TIMESTAMPTZ,
    hogql_query        VARCHAR,
    filters            VARCHAR,                            -- JSON array of property filters, or NULL
    deleted            BOOLEAN     NOT NULL DEFAULT false,
    created_at         TIMESTAMPTZ NOT NULL,
    last_updated_at    TIMESTAMPTZ NOT NULL
);
