-- 0013: passwords and sessions, for signing in to the web console. The admin package
-- owns both tables: it alone reads and writes them.
--
-- A password is stored only as its argon2id hash, in PHC form
-- ($argon2id$v=19$m=...,t=...,p=...$salt$hash), in a table of its own rather than a
-- column of meta.users: a user without a row has no password (API keys only).
CREATE TABLE meta.user_passwords (
    user_id    BIGINT PRIMARY KEY,  -- meta.users.id
    hash       VARCHAR     NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- A session is a signed-in browser. Its token (32 random bytes, in the HttpOnly
-- session cookie) is stored only as sha256$<hex>, as personal API keys are.
CREATE TABLE meta.sessions (
    token_hash   VARCHAR PRIMARY KEY,
    user_id      BIGINT      NOT NULL,  -- meta.users.id
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    last_seen_at TIMESTAMPTZ NOT NULL,
    ip           VARCHAR     NOT NULL,
    user_agent   VARCHAR     NOT NULL
);
