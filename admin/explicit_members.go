package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

// The explicit members of a private project: the members of its organization who
// reach it although they are not admins or owners of the organization (the rule is
// projectLevelSQL in access.go). PostHog's explicit_members routes, with its rules:
//
//   - anyone who reaches the project lists them; adding, changing and removing them
//     takes a project admin (effective level 8 or more: an admin or owner of the
//     organization, or a member the project made its admin), else 403 "You don't
//     have sufficient permissions in the project.";
//   - anyone may remove themselves (leave the project);
//   - nobody adds themselves, changes their own level, grants a level above their
//     own, or changes someone whose explicit level is above their own;
//   - only members of the project's organization can be added, and only to a private
//     project (400 on one that is not; the list and removal still work there).

func (a *API) bindExplicitMembers() {
	const base = "/projects/:project_id/explicit_members/"
	a.handle(fiber.MethodGet, base, "project:read", a.explicitMemberList)
	a.handle(fiber.MethodPost, base, "project:write", a.explicitMemberAdd)
	a.handle(fiber.MethodGet, base+":user__uuid/", "project:read", a.explicitMemberRetrieve)
	a.handle(fiber.MethodPatch, base+":user__uuid/", "project:write", a.explicitMemberUpdate)
	a.handle(fiber.MethodDelete, base+":user__uuid/", "project:write", a.explicitMemberRemove)
}

// Explicit levels in a project, a subset of the organization's.
const (
	explicitMember = levelMember // 1
	explicitAdmin  = levelAdmin  // 8
)

// explicitMemberRecord is PostHog's explicit project member: its own level, the
// level of the membership it hangs on (parent_level), and effective_level, the higher
// of the two.
type explicitMemberRecord struct {
	ID                 string     `json:"id"`
	Level              int        `json:"level"`
	ParentLevel        int        `json:"parent_level"`
	ParentMembershipID string     `json:"parent_membership_id"`
	JoinedAt           time.Time  `json:"joined_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
	User               userRecord `json:"user"`
	EffectiveLevel     int        `json:"effective_level"`
}

// explicitMemberColumns selects an explicitMemberRecord; inactive users are left out,
// and so are rows whose membership is gone.
const explicitMemberColumns = `SELECT e.id::VARCHAR, e.level, m.level, m.id::VARCHAR, e.joined_at, e.updated_at, ` + userColumns + `
	FROM meta.explicit_project_members e
	JOIN meta.memberships m ON m.id = e.membership_id
	JOIN meta.users u ON u.id = m.user_id AND u.is_active`

func scanExplicitMember(row records.Scanner) (explicitMemberRecord, error) {
	var r explicitMemberRecord
	dest := append([]any{&r.ID, &r.Level, &r.ParentLevel, &r.ParentMembershipID, &r.JoinedAt, &r.UpdatedAt}, r.User.dest()...)
	err := row.Scan(dest...)
	r.JoinedAt, r.UpdatedAt = r.JoinedAt.UTC(), r.UpdatedAt.UTC()
	r.EffectiveLevel = max(r.Level, r.ParentLevel)
	return r, err
}

// insertExplicitMember makes the user, a member of the organization, an explicit
// member of the project at level; nothing happens when the user is not a member.
func insertExplicitMember(ctx context.Context, q querier, team int64, organizationID uuid.UUID, userID int64, level int) error {
	if _, err := q.ExecContext(ctx, `INSERT INTO meta.explicit_project_members (id, team_id, membership_id, level, joined_at, updated_at)
		SELECT ?, ?, m.id, ?, now(), now() FROM meta.memberships m WHERE m.organization_id = ? AND m.user_id = ?`,
		uuid.Must(uuid.NewV7()), team, level, organizationID, userID); err != nil {
		return fmt.Errorf("cannot add user %d to project %d: %w", userID, team, err)
	}
	return nil
}

// errProjectPermissions is PostHog's 403 for a write that takes a project admin.
var errProjectPermissions = errPermissionDenied("You don't have sufficient permissions in the project.")

// mayManage is nil when the caller is an admin of the project (effective level 8 or
// more), else PostHog's 403.
func (pr project) mayManage() error {
	if pr.level < levelAdmin {
		return errProjectPermissions
	}
	return nil
}

// notPrivate is PostHog's 400 for adding or changing explicit members of a project
// that is not private.
func (pr project) notPrivate() error {
	if pr.private {
		return nil
	}
	return errValidation("", "invalid_input", "Explicit members can only be accessed for projects with project-based permissioning enabled.")
}

// explicitLevel checks a level given in a body: 1 or 8.
func explicitLevel(level optional[int]) error {
	switch {
	case level.Null:
		return errNull("level")
	case level.Value != explicitMember && level.Value != explicitAdmin:
		return errInvalidChoice("level", fmt.Sprint(level.Value))
	}
	return nil
}

// GET /api/projects/{project_id}/explicit_members/ (project:read)
// The explicit members, as a plain JSON array (PostHog does not paginate them), lowest
// level first, then newest first.
func (a *API) explicitMemberList(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	list, err := records.All(c.UserContext(), a.db, fmt.Sprintf("explicit members of project %d", pr.id), scanExplicitMember,
		explicitMemberColumns+` WHERE e.team_id = ? ORDER BY e.level, e.joined_at DESC, e.id`, pr.id)
	if err != nil {
		return err
	}
	return c.JSON(list)
}

// explicitMemberInput is the body of POST (user_uuid, level) and PATCH (level).
type explicitMemberInput struct {
	UserUUID optional[string] `json:"user_uuid"`
	Level    optional[int]    `json:"level"`
}

// POST /api/projects/{project_id}/explicit_members/ (project:write)
// Body {"user_uuid", "level": 1 (default) or 8}: adds a member of the organization
// to the private project; 201 with the explicit member.
func (a *API) explicitMemberAdd(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	if err := pr.mayManage(); err != nil {
		return err
	}
	var in explicitMemberInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	switch {
	case !in.UserUUID.Set:
		return errRequired("user_uuid")
	case in.UserUUID.Null:
		return errNull("user_uuid")
	}
	target, err := uuid.Parse(in.UserUUID.Value)
	if err != nil {
		return errValidation("user_uuid", "invalid_input", "Must be a valid UUID.")
	}
	level := explicitMember
	if in.Level.Set {
		if err := explicitLevel(in.Level); err != nil {
			return err
		}
		level = in.Level.Value
	}
	if err := pr.notPrivate(); err != nil {
		return err
	}
	ctx := c.UserContext()
	self, err := userUUIDOf(ctx, a.db, p.userID)
	if err != nil {
		return err
	}
	switch {
	case target == self:
		return errPermissionDenied("You can't explicitly add yourself to projects.")
	case level > pr.level:
		return errPermissionDenied("You can only set access level to lower or equal to your current one.")
	}
	membershipWrites.Lock()
	defer membershipWrites.Unlock()
	var membershipID uuid.UUID
	err = a.db.QueryRowContext(ctx, `SELECT m.id FROM meta.memberships m JOIN meta.users u ON u.id = m.user_id AND u.is_active
		WHERE m.organization_id = ? AND u.uuid = ?`, pr.organizationID, target).Scan(&membershipID)
	if errors.Is(err, sql.ErrNoRows) {
		return errPermissionDenied("You both need to belong to the same organization.")
	}
	if err != nil {
		return fmt.Errorf("cannot look up user %s in %s: %w", target, pr.organizationID, err)
	}
	var already bool
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.explicit_project_members WHERE team_id = ? AND membership_id = ?`,
		pr.id, membershipID).Scan(&already); err != nil {
		return fmt.Errorf("cannot look up the explicit members of project %d: %w", pr.id, err)
	}
	if already {
		return errValidation("", "invalid_input", "This user likely already is an explicit member of the project.")
	}
	id := uuid.Must(uuid.NewV7())
	if _, err := a.db.ExecContext(ctx, `INSERT INTO meta.explicit_project_members (id, team_id, membership_id, level, joined_at, updated_at)
		VALUES (?, ?, ?, ?, now(), now())`, id, pr.id, membershipID, level); err != nil {
		return fmt.Errorf("cannot add user %s to project %d: %w", target, pr.id, err)
	}
	r, err := scanExplicitMember(a.db.QueryRowContext(ctx, explicitMemberColumns+` WHERE e.id = ?`, id))
	if err != nil {
		return fmt.Errorf("cannot read explicit member %s: %w", id, err)
	}
	return c.Status(fiber.StatusCreated).JSON(r)
}

// userUUIDOf is the uuid of a user.
func userUUIDOf(ctx context.Context, q querier, userID int64) (uuid.UUID, error) {
	var id uuid.UUID
	if err := q.QueryRowContext(ctx, `SELECT uuid FROM meta.users WHERE id = ?`, userID).Scan(&id); err != nil {
		return uuid.Nil, fmt.Errorf("cannot read user %d: %w", userID, err)
	}
	return id, nil
}

// explicitTarget is the explicit member that the path's user__uuid names (@me: the
// caller), and whether it is the caller; an explicit member the project does not have
// is DRF's "Not found.".
func (a *API) explicitTarget(c *fiber.Ctx, p *principal, pr project) (explicitMemberRecord, bool, error) {
	ctx := c.UserContext()
	self, err := userUUIDOf(ctx, a.db, p.userID)
	if err != nil {
		return explicitMemberRecord{}, false, err
	}
	target := self
	if param := c.Params("user__uuid"); param != "@me" {
		if target, err = uuid.Parse(param); err != nil {
			return explicitMemberRecord{}, false, errRecordNotFound()
		}
	}
	r, err := scanExplicitMember(a.db.QueryRowContext(ctx, explicitMemberColumns+` WHERE e.team_id = ? AND u.uuid = ?`, pr.id, target))
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, errRecordNotFound()
	}
	if err != nil {
		return r, false, fmt.Errorf("cannot read explicit member %s of project %d: %w", target, pr.id, err)
	}
	return r, target == self, nil
}

// selfInPath reports whether the path's user__uuid is the caller (@me or their uuid).
func (a *API) selfInPath(c *fiber.Ctx, p *principal) (bool, error) {
	param := c.Params("user__uuid")
	if param == "@me" {
		return true, nil
	}
	self, err := userUUIDOf(c.UserContext(), a.db, p.userID)
	if err != nil {
		return false, err
	}
	target, err := uuid.Parse(param)
	return err == nil && target == self, nil
}

// GET /api/projects/{project_id}/explicit_members/{user__uuid}/ (project:read)
func (a *API) explicitMemberRetrieve(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	r, _, err := a.explicitTarget(c, p, pr)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// PATCH /api/projects/{project_id}/explicit_members/{user__uuid}/ (project:write)
// Body {"level": 1 or 8}; without level nothing changes, but the checks run.
func (a *API) explicitMemberUpdate(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	if err := pr.mayManage(); err != nil {
		return err
	}
	membershipWrites.Lock()
	defer membershipWrites.Unlock()
	target, self, err := a.explicitTarget(c, p, pr)
	if err != nil {
		return err
	}
	var in explicitMemberInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	if in.Level.Set {
		if err := explicitLevel(in.Level); err != nil {
			return err
		}
	}
	if err := pr.notPrivate(); err != nil {
		return err
	}
	switch {
	case in.Level.Set && in.Level.Value > pr.level:
		return errPermissionDenied("You can only set access level to lower or equal to your current one.")
	case self && in.Level.Set:
		return errPermissionDenied("You can't set your own access level.")
	case !self && target.Level > pr.level:
		return errPermissionDenied("You can only edit others with level lower or equal to you.")
	}
	ctx := c.UserContext()
	if in.Level.Set {
		if _, err := a.db.ExecContext(ctx, `UPDATE meta.explicit_project_members SET level = ?, updated_at = now() WHERE id = ?`,
			in.Level.Value, target.ID); err != nil {
			return fmt.Errorf("cannot change explicit member %s of project %d: %w", target.ID, pr.id, err)
		}
	}
	r, err := scanExplicitMember(a.db.QueryRowContext(ctx, explicitMemberColumns+` WHERE e.id = ?`, target.ID))
	if err != nil {
		return fmt.Errorf("cannot read explicit member %s: %w", target.ID, err)
	}
	return c.JSON(r)
}

// DELETE /api/projects/{project_id}/explicit_members/{user__uuid}/ (project:write)
// Removes an explicit member (a project admin may), or the caller leaves the project
// (@me or their own uuid: anyone may). 204.
func (a *API) explicitMemberRemove(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	self, err := a.selfInPath(c, p)
	if err != nil {
		return err
	}
	if !self {
		if err := pr.mayManage(); err != nil {
			return err
		}
	}
	membershipWrites.Lock()
	defer membershipWrites.Unlock()
	target, _, err := a.explicitTarget(c, p, pr)
	if err != nil {
		return err
	}
	if _, err := a.db.ExecContext(c.UserContext(), `DELETE FROM meta.explicit_project_members WHERE id = ?`, target.ID); err != nil {
		return fmt.Errorf("cannot remove explicit member %s of project %d: %w", target.ID, pr.id, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}
