-- 0009: explicit members of private projects. The admin package owns this table: it
-- alone reads and writes it.
--
-- A project with access_control (a "private" project) is reachable by the
-- organization's admins and owners, and by its members only when listed here. A row
-- names the member by their membership of the project's organization, not by user: a
-- user who leaves the organization loses the access with the membership, and one who
-- joins again starts without it. As in 0005 there are no FOREIGN KEYs; the API deletes
-- a membership's rows with the membership.
CREATE TABLE meta.explicit_project_members (
    id            UUID PRIMARY KEY,
    team_id       BIGINT      NOT NULL,  -- meta.projects.id
    membership_id UUID        NOT NULL,  -- meta.memberships.id, in the project's organization
    level         SMALLINT    NOT NULL,  -- 1 member, 8 admin of the project
    joined_at     TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    UNIQUE (team_id, membership_id)
);
