package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

func (a *API) bindMembers() {
	a.handle(fiber.MethodGet, "/organizations/:organization_id/members/", "organization_member:read", a.memberList)
	a.handle(fiber.MethodPatch, "/organizations/:organization_id/members/:user__uuid/", "organization_member:write", a.memberUpdate)
	a.handle(fiber.MethodDelete, "/organizations/:organization_id/members/:user__uuid/", "organization_member:write", a.memberDelete)
}

// insertMembership makes the user a member of the organization at level.
func insertMembership(ctx context.Context, q querier, organizationID uuid.UUID, userID int64, level int) error {
	if _, err := q.ExecContext(ctx, `
		INSERT INTO meta.memberships (id, organization_id, user_id, level, joined_at, updated_at)
		VALUES (?, ?, ?, ?, now(), now())`,
		uuid.Must(uuid.NewV7()), organizationID, userID, level); err != nil {
		return fmt.Errorf("cannot add user %d to organization %s: %w", userID, organizationID, err)
	}
	return nil
}

// memberRecord is the OpenAPI schema's Organization member. hedge has no second factor and no
// social login, so is_2fa_enabled and has_social_auth are false.
type memberRecord struct {
	ID            string     `json:"id"`
	User          userRecord `json:"user"`
	Level         int        `json:"level"`
	JoinedAt      time.Time  `json:"joined_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	Is2FAEnabled  bool       `json:"is_2fa_enabled"`
	HasSocialAuth bool       `json:"has_social_auth"`
	LastLogin     *time.Time `json:"last_login"`
}

// memberColumns selects a memberRecord from meta.memberships m joined with meta.users
// u; inactive users are not members anyone sees.
const memberColumns = `SELECT m.id::VARCHAR, ` + userColumns + `, m.level, m.joined_at, m.updated_at, u.last_login
	FROM meta.memberships m JOIN meta.users u ON u.id = m.user_id AND u.is_active`

func scanMember(row records.Scanner) (memberRecord, error) {
	var r memberRecord
	dest := append([]any{&r.ID}, r.User.dest()...)
	err := row.Scan(append(dest, &r.Level, &r.JoinedAt, &r.UpdatedAt, &r.LastLogin)...)
	r.JoinedAt, r.UpdatedAt, r.LastLogin = r.JoinedAt.UTC(), r.UpdatedAt.UTC(), utcTime(r.LastLogin)
	return r, err
}

// GET /api/organizations/{organization_id}/members/ (organization_member:read)
// Newest joined first (?order=joined_at for oldest first); ?email= finds one member.
func (a *API) memberList(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	order := "m.joined_at DESC, m.id DESC"
	switch c.Query("order") {
	case "", "-joined_at":
	case "joined_at":
		order = "m.joined_at, m.id"
	default:
		return errInvalidChoice("order", c.Query("order"))
	}
	where := ` WHERE m.organization_id = ? AND (? = '' OR u.email = lower(?))`
	args := []any{m.organizationID, c.Query("email"), c.Query("email")}
	return listPage(c, a, listQuery[memberRecord]{
		what:  fmt.Sprintf("members of %s", m.organizationID),
		count: `SELECT count(*) FROM meta.memberships m JOIN meta.users u ON u.id = m.user_id AND u.is_active` + where,
		list:  memberColumns + where + ` ORDER BY ` + order,
		args:  args,
		scan:  scanMember,
	})
}

// memberInput is the body of PATCH .../members/{user__uuid}/: only level is writable.
type memberInput struct {
	Level optional[int] `json:"level"`
}

// editedMember is the member a members/{user__uuid}/ path names (@me: the caller), with the
// caller's and its own current level, read under membershipWrites.
type editedMember struct {
	userID      int64
	level       int
	callerLevel int
}

// memberTarget resolves the user__uuid of the path to a member of m's organization.
func (a *API) memberTarget(ctx context.Context, c *fiber.Ctx, p *principal, m membership) (editedMember, error) {
	t := editedMember{}
	notFound := errRecordNotFound()
	var err error
	if param := c.Params("user__uuid"); param == "@me" {
		t.userID = p.userID
	} else if id, perr := uuid.Parse(param); perr != nil {
		return t, notFound
	} else if err = a.db.QueryRowContext(ctx, `SELECT id FROM meta.users WHERE uuid = ? AND is_active`, id).Scan(&t.userID); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return t, notFound
		}
		return t, fmt.Errorf("cannot look up user %s: %w", id, err)
	}
	err = a.db.QueryRowContext(ctx, `SELECT level FROM meta.memberships WHERE organization_id = ? AND user_id = ?`,
		m.organizationID, t.userID).Scan(&t.level)
	if errors.Is(err, sql.ErrNoRows) {
		return t, notFound
	}
	if err != nil {
		return t, fmt.Errorf("cannot read the level of user %d in %s: %w", t.userID, m.organizationID, err)
	}
	// The caller's level is read again here, under membershipWrites: it may have changed
	// since the request began.
	err = a.db.QueryRowContext(ctx, `SELECT level FROM meta.memberships WHERE organization_id = ? AND user_id = ?`,
		m.organizationID, p.userID).Scan(&t.callerLevel)
	if errors.Is(err, sql.ErrNoRows) {
		return t, errNotFound("Organization not found.")
	}
	if err != nil {
		return t, fmt.Errorf("cannot read the level of user %d in %s: %w", p.userID, m.organizationID, err)
	}
	return t, nil
}

// mayEdit is PostHog's OrganizationMembership.validate_update: the rules, in its
// order, for changing the target's level to newLevel, or for touching the target at
// all when newLevel is 0 (removing it, or a PATCH without level, which PostHog's
// object permission checks the same way).
func (t editedMember) mayEdit(self bool, newLevel int) error {
	switch {
	case self && newLevel != 0:
		return errPermissionDenied("You can't change your own access level.")
	case self:
		return nil // leaving: anyone may, an owner excepted (checked by the caller)
	case newLevel == levelOwner && t.callerLevel < levelOwner:
		return errPermissionDenied("You can only make another member owner if you're this organization's owner.")
	case newLevel > t.callerLevel:
		return errPermissionDenied("You can only change access level of others to lower or equal to your current one.")
	case t.callerLevel < levelAdmin:
		return errPermissionDenied("You can only edit others if you are an admin.")
	case t.level > t.callerLevel:
		return errPermissionDenied("You can only edit others with level lower or equal to you.")
	}
	return nil
}

// PATCH /api/organizations/{organization_id}/members/{user__uuid}/ (organization_member:write)
// Changes a member's level: admins edit members and admins, only owners make owners,
// nobody changes their own level. The invites the member made that its new level could
// not make are revoked (revokeInvitesBeyond).
func (a *API) memberUpdate(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	var in memberInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	if in.Level.Set && (in.Level.Null || !validLevel(in.Level.Value)) {
		return errInvalidChoice("level", levelText(in.Level))
	}
	ctx := c.UserContext()
	membershipWrites.Lock()
	defer membershipWrites.Unlock()
	t, err := a.memberTarget(ctx, c, p, m)
	if err != nil {
		return err
	}
	// Without level nothing changes, but the permission checks run all the same: a
	// member may not PATCH the owner even with an empty body.
	newLevel := 0
	if in.Level.Set {
		newLevel = in.Level.Value
	}
	if err := t.mayEdit(t.userID == p.userID, newLevel); err != nil {
		return err
	}
	if in.Level.Set {
		if _, err := a.db.ExecContext(ctx, `UPDATE meta.memberships SET level = ?, updated_at = now()
			WHERE organization_id = ? AND user_id = ?`, in.Level.Value, m.organizationID, t.userID); err != nil {
			return fmt.Errorf("cannot change the level of user %d in %s: %w", t.userID, m.organizationID, err)
		}
		if err := revokeInvitesBeyond(ctx, a.db, m.organizationID, t.userID, in.Level.Value); err != nil {
			return err
		}
	}
	r, err := scanMember(a.db.QueryRowContext(ctx, memberColumns+` WHERE m.organization_id = ? AND m.user_id = ?`,
		m.organizationID, t.userID))
	if err != nil {
		return fmt.Errorf("cannot read member %d of %s: %w", t.userID, m.organizationID, err)
	}
	return c.JSON(r)
}

func levelText(level optional[int]) string {
	if level.Null {
		return "None"
	}
	return fmt.Sprint(level.Value)
}

// DELETE /api/organizations/{organization_id}/members/{user__uuid}/ (organization_member:write)
// Removes a member, or the caller leaves (@me or their own uuid). Admins remove members
// and admins. An owner can neither leave nor be removed, by anyone: PostHog's
// User.leave refuses every owner, not only the last one, so another
// owner must first make them an admin. An organization thus always keeps an owner.
// The invites the member made are revoked (revokeInvitesBeyond).
func (a *API) memberDelete(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	membershipWrites.Lock()
	defer membershipWrites.Unlock()
	t, err := a.memberTarget(ctx, c, p, m)
	if err != nil {
		return err
	}
	if err := t.mayEdit(t.userID == p.userID, 0); err != nil {
		return err
	}
	if t.level == levelOwner {
		return errValidation("", "invalid_input", "Cannot leave the organization as its owner!")
	}
	if err := removeMembership(ctx, a.db, m.organizationID, t.userID); err != nil {
		return err
	}
	if err := revokeInvitesBeyond(ctx, a.db, m.organizationID, t.userID, 0); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// removeMembership takes the user out of the organization, and out of the private
// projects they were added to there: explicit memberships end with the membership
// they hang on (they would never count again anyway: a new membership has a new id).
func removeMembership(ctx context.Context, db *sql.DB, organizationID uuid.UUID, userID int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin removing user %d from %s: %w", userID, organizationID, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta.explicit_project_members WHERE membership_id IN
		(SELECT id FROM meta.memberships WHERE organization_id = ? AND user_id = ?)`, organizationID, userID); err != nil {
		return fmt.Errorf("cannot remove user %d from the projects of %s: %w", userID, organizationID, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta.memberships WHERE organization_id = ? AND user_id = ?`,
		organizationID, userID); err != nil {
		return fmt.Errorf("cannot remove user %d from %s: %w", userID, organizationID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit removing user %d from %s: %w", userID, organizationID, err)
	}
	return nil
}

// memberOfOrganization reports whether a user with this e-mail (any case) is a member.
func memberOfOrganization(ctx context.Context, q querier, organizationID uuid.UUID, email string) (bool, error) {
	var member bool
	err := q.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.memberships m JOIN meta.users u ON u.id = m.user_id
		WHERE m.organization_id = ? AND u.email = ?`, organizationID, strings.ToLower(email)).Scan(&member)
	if err != nil {
		return false, fmt.Errorf("cannot look up %s in %s: %w", email, organizationID, err)
	}
	return member, nil
}
