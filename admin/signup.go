package admin

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

// bindSignup registers the management routes without a key for invites: looking one up
// and accepting it. They are not in a.routes (those are the routes a key opens), but
// are in openapi.yaml.
func (a *API) bindSignup() {
	a.api.Get("/signup/:invite_id/", a.signupPreview)
	a.api.Post("/signup/:invite_id/", a.signup)
}

// signupInput is the body of POST /api/signup/{invite_id}/.
type signupInput struct {
	FirstName optional[string] `json:"first_name"`
	LastName  string           `json:"last_name"`
	// Password, for a new user, signs them in to the console at once (the answer sets
	// the session's cookies); without it the new user has only the key.
	Password *string `json:"password"`
}

// GET /api/signup/{invite_id}/ (no key)
// What a sign-up page shows before accepting: the invite's e-mail, masked, its first
// name and the organization's name, as PostHog's invite pre-validation answers. An
// unknown, used or expired invite is the same 400 as on accepting it.
func (a *API) signupPreview(c *fiber.Ctx) error {
	invite, err := a.pendingInvite(c.UserContext(), c.Params("invite_id"))
	if err != nil {
		return err
	}
	return c.JSON(invitePreview{ID: c.Params("invite_id"), TargetEmail: maskEmail(invite.email),
		FirstName: invite.firstName, OrganizationName: invite.organizationName})
}

// invitePreview is GET /api/signup/{invite_id}/.
type invitePreview struct {
	ID               string `json:"id"`
	TargetEmail      string `json:"target_email"`
	FirstName        string `json:"first_name"`
	OrganizationName string `json:"organization_name"`
}

// maskEmail shows enough of an e-mail for its owner to recognise it: the first
// character and the domain.
func maskEmail(email string) string {
	local, domain, ok := strings.Cut(email, "@")
	if !ok || local == "" {
		return "****"
	}
	first, _ := utf8.DecodeRuneInString(local)
	return string(first) + "****@" + domain
}

// signupRecord answers an accepted invite: the user, the organization joined, and for
// a new user the personal API key (scope "*") that is the user's way in, shown once.
type signupRecord struct {
	userRecord
	Organization   organizationBasic `json:"organization"`
	PersonalAPIKey *string           `json:"personal_api_key"`
}

// pendingInvite is what accepting needs of an invite.
type pendingInvite struct {
	organizationID   uuid.UUID
	organizationName string
	email, firstName string
	level            int
	expired          bool
	projectAccess    string // private_project_access, JSON [{"id", "level": "member"|"admin"}]
}

// signupScope is what a key must grant to accept an invite for its user: joining is
// creating a membership, an organization_member write in the invite's organization.
const signupScope = "organization_member:write"

// POST /api/signup/{invite_id}/ (no key)
// Accepts an invite. Without a key it creates the invited user with first_name
// (else the invite's) and last_name, at the invite's level, and answers 201 with a new
// personal API key. An e-mail that already has a user must accept with that user's
// key instead (else anyone holding the invite id, its inviter included, would get a
// key to that user's other organizations); that answers 200 without a key. The key
// must grant organization_member:write and reach the invite's organization, and, as
// in PostHog, the invite must be to its user's own e-mail. Either way the invites to
// that e-mail in the organization are consumed. An unknown, used or expired invite is
// a 400.
func (a *API) signup(c *fiber.Ctx) error {
	// Like a sign-in, accepting may sign a browser in: no other site may post it.
	if err := checkOrigin(c); err != nil {
		return err
	}
	var in signupInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	ctx := c.UserContext()
	var existing *principal
	if key, _ := findKey(c); key != "" {
		p, err := a.authenticate(c)
		if err != nil {
			return err
		}
		if !p.allows(signupScope) {
			return errPermissionDenied(fmt.Sprintf("API key missing required scope '%s'", signupScope))
		}
		existing = p
	}
	// One acceptance at a time: the invite is read, checked and consumed as one step.
	membershipWrites.Lock()
	defer membershipWrites.Unlock()
	invite, err := a.pendingInvite(ctx, c.Params("invite_id"))
	if err != nil {
		return err
	}
	if existing != nil {
		return a.signupExisting(c, existing, invite)
	}
	firstName := invite.firstName
	if in.FirstName.Set && !in.FirstName.Null {
		firstName = in.FirstName.Value
	}
	switch {
	case strings.TrimSpace(firstName) == "":
		return errRequired("first_name")
	case utf8.RuneCountInString(firstName) > 150:
		return errMaxLength("first_name", 150)
	case utf8.RuneCountInString(in.LastName) > 150:
		return errMaxLength("last_name", 150)
	}
	var taken bool
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.users WHERE email = ?`, invite.email).Scan(&taken); err != nil {
		return fmt.Errorf("cannot look up user %s: %w", invite.email, err)
	}
	if taken {
		return errValidation("", "user_already_exists",
			"A user with this email address already exists. Accept the invite with that user's personal API key.")
	}
	var hash string
	if in.Password != nil {
		if err := checkNewPassword("password", *in.Password, invite.email); err != nil {
			return err
		}
		if hash, err = a.hasher.hash(ctx, *in.Password); err != nil {
			return err
		}
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin sign-up of %s: %w", invite.email, err)
	}
	defer tx.Rollback()
	userID, err := insertUserNamed(ctx, tx, invite.email, firstName, in.LastName)
	if err != nil {
		return err
	}
	key, err := a.join(ctx, tx, userID, invite, true)
	if err != nil {
		return err
	}
	if hash != "" {
		if err := setPassword(ctx, tx, userID, hash); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit sign-up of %s: %w", invite.email, err)
	}
	r, err := signupAnswer(ctx, a.db, userID, invite)
	if err != nil {
		return err
	}
	if hash != "" {
		if err := a.startSession(c, userID); err != nil {
			return err
		}
	}
	r.PersonalAPIKey = &key
	return c.Status(fiber.StatusCreated).JSON(r)
}

// signupExisting accepts an invite for the user of the request's key, whose e-mail
// must be the invited one (checked first: a key of another user learns nothing more
// about the invite). A key restricted to some projects or to other organizations
// cannot join one: it is an organization-level write elsewhere.
func (a *API) signupExisting(c *fiber.Ctx, p *principal, invite pendingInvite) error {
	ctx := c.UserContext()
	var email string
	if err := a.db.QueryRowContext(ctx, `SELECT email FROM meta.users WHERE id = ?`, p.userID).Scan(&email); err != nil {
		return fmt.Errorf("cannot read user %d: %w", p.userID, err)
	}
	if email != invite.email {
		return errValidation("", "invalid_recipient", "This invite is intended for another email address.")
	}
	if err := notProjectScoped(p); err != nil {
		return err
	}
	if len(p.scopedOrganizations) > 0 && !slices.Contains(p.scopedOrganizations, invite.organizationID.String()) {
		return errPermissionDenied(fmt.Sprintf("API key does not have access to the requested organization: ID %s.", invite.organizationID))
	}
	member, err := memberOfOrganization(ctx, a.db, invite.organizationID, email)
	if err != nil {
		return err
	}
	if member {
		return errValidation("", "user_already_member", "You already are a member of this organization.")
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin accepting the invite of %s: %w", email, err)
	}
	defer tx.Rollback()
	if _, err := a.join(ctx, tx, p.userID, invite, false); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit accepting the invite of %s: %w", email, err)
	}
	r, err := signupAnswer(ctx, a.db, p.userID, invite)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// pendingInvite reads an invite that can still be accepted.
func (a *API) pendingInvite(ctx context.Context, param string) (pendingInvite, error) {
	invalid := errValidation("", "invalid_input", "The provided invite ID is not valid.")
	id, err := uuid.Parse(param)
	if err != nil {
		return pendingInvite{}, invalid
	}
	var inv pendingInvite
	err = a.db.QueryRowContext(ctx, `SELECT i.organization_id, o.name, i.target_email, i.first_name, i.level,
			i.created_at < now() - INTERVAL 3 DAY, i.private_project_access
		FROM meta.invites i JOIN meta.organizations o ON o.id = i.organization_id WHERE i.id = ?`, id).
		Scan(&inv.organizationID, &inv.organizationName, &inv.email, &inv.firstName, &inv.level, &inv.expired, &inv.projectAccess)
	if errors.Is(err, sql.ErrNoRows) {
		return inv, invalid
	}
	if err != nil {
		return inv, fmt.Errorf("cannot read invite %s: %w", id, err)
	}
	if inv.expired {
		return inv, errValidation("", "expired", "This invite has expired. Please ask your admin for a new one.")
	}
	return inv, nil
}

// join makes the user a member at the invite's level, an explicit member of the
// private projects its private_project_access names (at "member" 1 or "admin" 8; as in
// PostHog, a project since deleted or no longer private is passed over), and
// consumes every invite to that e-mail in the organization; with newKey it also makes
// the user's first personal API key and returns it.
func (a *API) join(ctx context.Context, tx *sql.Tx, userID int64, invite pendingInvite, newKey bool) (string, error) {
	if err := insertMembership(ctx, tx, invite.organizationID, userID, invite.level); err != nil {
		return "", err
	}
	var access []projectAccess
	if err := json.Unmarshal([]byte(invite.projectAccess), &access); err != nil {
		return "", fmt.Errorf("cannot read the project access of the invite of %s: %w", invite.email, err)
	}
	levels := map[int64]int{} // a project named twice gets the higher level
	for _, pa := range access {
		level := explicitMember
		if pa.Level == "admin" {
			level = explicitAdmin
		}
		levels[pa.ID] = max(levels[pa.ID], level)
	}
	for team, level := range levels {
		var private bool
		err := tx.QueryRowContext(ctx, `SELECT access_control FROM meta.projects WHERE id = ? AND organization_id = ?`,
			team, invite.organizationID).Scan(&private)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !private) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("cannot look up project %d: %w", team, err)
		}
		if err := insertExplicitMember(ctx, tx, team, invite.organizationID, userID, level); err != nil {
			return "", err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta.invites WHERE organization_id = ? AND target_email = ?`,
		invite.organizationID, invite.email); err != nil {
		return "", fmt.Errorf("cannot consume the invites of %s: %w", invite.email, err)
	}
	if !newKey {
		return "", nil
	}
	return insertPersonalAPIKey(ctx, tx, userID, "signup", []string{"*"})
}

func signupAnswer(ctx context.Context, q querier, userID int64, invite pendingInvite) (signupRecord, error) {
	u, err := loadUser(ctx, q, userID)
	if err != nil {
		return signupRecord{}, err
	}
	return signupRecord{userRecord: u, Organization: organizationBasic{
		ID: invite.organizationID.String(), Name: invite.organizationName, MembershipLevel: invite.level,
	}}, nil
}
