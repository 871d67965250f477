package admin

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

const (
	// inviteValidity is PostHog's INVITE_DAYS_VALIDITY: an invite older than this is expired.
	inviteValidity = 3 * 24 * time.Hour
	// maxBulkInvites is how many invites one bulk request may create.
	maxBulkInvites = 20
)

// bindInvites registers the invite routes; mail is nil when no SMTP server is
// configured, and invites are then not e-mailed.
func (a *API) bindInvites(mail *mailer) {
	a.handle(fiber.MethodGet, "/organizations/:organization_id/invites/", "organization_member:read", a.inviteList)
	a.handle(fiber.MethodPost, "/organizations/:organization_id/invites/", "organization_member:write",
		func(c *fiber.Ctx) error { return a.inviteCreate(c, mail) })
	a.handle(fiber.MethodPost, "/organizations/:organization_id/invites/bulk/", "organization_member:write",
		func(c *fiber.Ctx) error { return a.inviteBulk(c, mail) })
	a.handle(fiber.MethodDelete, "/organizations/:organization_id/invites/:id/", "organization_member:write", a.inviteDelete)
}

// inviteRecord is the OpenAPI schema's Organization invite as PostHog returns it: send_email and
// combine_pending_invites are write-only. ID is null in a list read by a member whose
// level is below the invite's (see inviteList).
type inviteRecord struct {
	ID                   *string     `json:"id"`
	TargetEmail          string      `json:"target_email"`
	FirstName            string      `json:"first_name"`
	EmailingAttemptMade  bool        `json:"emailing_attempt_made"`
	Level                int         `json:"level"`
	IsExpired            bool        `json:"is_expired"`
	CreatedBy            *userRecord `json:"created_by"`
	CreatedAt            time.Time   `json:"created_at"`
	UpdatedAt            time.Time   `json:"updated_at"`
	Message              *string     `json:"message"`
	PrivateProjectAccess rawJSON     `json:"private_project_access"`

	createdByID *int64 // the user whose record CreatedBy is
}

// inviteInput is one invite to create (the body of POST .../invites/, an item of bulk).
type inviteInput struct {
	TargetEmail           optional[string] `json:"target_email"`
	FirstName             string           `json:"first_name"`
	Level                 optional[int]    `json:"level"`
	Message               *string          `json:"message"`
	PrivateProjectAccess  json.RawMessage  `json:"private_project_access"`
	SendEmail             *bool            `json:"send_email"`
	CombinePendingInvites bool             `json:"combine_pending_invites"`

	access []projectAccess // PrivateProjectAccess, validated
}

// projectAccess is an item of private_project_access.
type projectAccess struct {
	ID    int64  `json:"id"`
	Level string `json:"level"`
}

// validate checks an invite against the inviter's membership m, with PostHog's rules
// and messages: the inviter cannot invite above their own level (403),
// nor someone who is already a member (400); projects must be the organization's, and
// only those who may grant a private one grant it (mayMakeInvite).
func (in *inviteInput) validate(ctx context.Context, q querier, m membership) error {
	switch {
	case !in.TargetEmail.Set || in.TargetEmail.Null:
		return errRequired("target_email")
	case !validEmail(in.TargetEmail.Value):
		return errValidation("target_email", "invalid_input", "Enter a valid email address.")
	case utf8.RuneCountInString(in.FirstName) > 30:
		return errMaxLength("first_name", 30)
	}
	in.TargetEmail.Value = strings.ToLower(in.TargetEmail.Value)
	if !in.Level.Set || in.Level.Null {
		in.Level = optional[int]{Set: true, Value: levelMember}
	}
	if !validLevel(in.Level.Value) {
		return errInvalidChoice("level", fmt.Sprint(in.Level.Value))
	}
	// The level first, as PostHog validates the field before the rest.
	if err := m.mayGiveLevel(in.Level.Value); err != nil {
		return err
	}
	member, err := memberOfOrganization(ctx, q, m.organizationID, in.TargetEmail.Value)
	if err != nil {
		return err
	}
	if member {
		return errValidation("", "invalid_input", "A user with this email address already belongs to the organization.")
	}
	if in.access, err = parseProjectAccess(in.PrivateProjectAccess); err != nil {
		return err
	}
	for _, pa := range in.access {
		var found bool
		if err := q.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.projects WHERE id = ? AND organization_id = ?`,
			pa.ID, m.organizationID).Scan(&found); err != nil {
			return fmt.Errorf("cannot look up project %d: %w", pa.ID, err)
		}
		if !found {
			return errNoProjectToGrant()
		}
	}
	return m.mayMakeInvite(ctx, q, in.Level.Value, in.access)
}

// Who may hold an invite. An invite's id is the one secret that accepts it (POST
// /api/signup/{invite_id}/ needs nothing else), so holding the id is holding the
// invite. The rule, for every path that makes, changes or shows an invite: a caller
// deals only with invites they could have made themselves, whose level is at most
// their own and whose private projects they may grant. An invite is checked on what
// it is after every transformation (the level and project access requested, then
// those stored after combining pending invites); a pending invite beyond the caller
// is neither combined nor replaced; and an answer (the list, the invite just made)
// shows the id only of an invite within the caller's reach.

// mayMakeInvite is nil when the caller of membership m could have made an invite of
// level with project access, else the refusal: PostHog's 403 for a level above the
// caller's, its 400 on private_project_access for a private project the caller may
// not grant.
func (m membership) mayMakeInvite(ctx context.Context, q querier, level int, access []projectAccess) error {
	if err := m.mayGiveLevel(level); err != nil {
		return err
	}
	return m.mayGrantProjects(ctx, q, access)
}

// mayGiveLevel is the level half of mayMakeInvite: nobody invites above their own level.
func (m membership) mayGiveLevel(level int) error {
	if level > m.level {
		return errPermissionDenied("You cannot invite a user with a higher permission level than your own.")
	}
	return nil
}

// mayGrantProjects is the project half of mayMakeInvite: a private project is granted
// only by those who administer it: the organization's admins and owners, and its
// explicit project admins (as PostHog lets them).
func (m membership) mayGrantProjects(ctx context.Context, q querier, access []projectAccess) error {
	if m.level >= levelAdmin || len(access) == 0 {
		return nil
	}
	ids := make([]int64, len(access))
	for i, pa := range access {
		ids[i] = pa.ID
	}
	private, err := records.All(ctx, q, fmt.Sprintf("private projects of an invite in %s", m.organizationID), scanID,
		`SELECT id FROM meta.projects WHERE organization_id = ? AND access_control AND list_contains(?::BIGINT[], id)`, m.organizationID, ids)
	if err != nil {
		return err
	}
	for _, team := range private {
		level, ok, err := projectLevelOf(ctx, q, team, m.userID)
		if err != nil {
			return err
		}
		if !ok || level < levelAdmin {
			return errNoProjectToGrant()
		}
	}
	return nil
}

func errNoProjectToGrant() error {
	return errValidation("private_project_access", "invalid_input",
		"Project does not exist on this organization, or it is private and you do not have access to it.")
}

// errInviteBeyond refuses to replace or combine a pending invite the caller could not
// have made.
func errInviteBeyond() error {
	return errPermissionDenied("You cannot replace or combine an invite that grants more access than you may grant.")
}

// withinReach applies mayMakeInvite to an invite about to be answered: its id is
// cleared when the caller of membership m could not have made it.
func (m membership) withinReach(ctx context.Context, q querier, r *inviteRecord) error {
	access, err := r.projectAccess()
	if err != nil {
		return err
	}
	if err := m.mayMakeInvite(ctx, q, r.Level, access); err != nil {
		if !isRefusal(err) {
			return err
		}
		r.ID = nil
	}
	return nil
}

// revokeInvitesBeyond deletes the invites the user made in the organization that are
// beyond the user's new level there (0: no longer a member, so all of them). Whoever
// made an invite got its id, which accepts it, so an invite left beyond its maker
// would let a demoted or removed member come back above its level. Called under
// membershipWrites, after the membership changed.
func revokeInvitesBeyond(ctx context.Context, q querier, organizationID uuid.UUID, userID int64, level int) error {
	invites, err := records.All(ctx, q, fmt.Sprintf("invites made by user %d", userID), scanInvite,
		inviteColumns+` WHERE organization_id = ? AND created_by_id = ?`, organizationID, userID)
	if err != nil {
		return err
	}
	m := membership{organizationID: organizationID, userID: userID, level: level}
	for _, r := range invites {
		access, err := r.projectAccess()
		if err != nil {
			return err
		}
		if err := m.mayMakeInvite(ctx, q, r.Level, access); err == nil {
			continue
		} else if !isRefusal(err) {
			return err
		}
		if _, err := q.ExecContext(ctx, `DELETE FROM meta.invites WHERE id = ?`, *r.ID); err != nil {
			return fmt.Errorf("cannot revoke invite %s: %w", *r.ID, err)
		}
	}
	return nil
}

// projectAccess is the invite's stored private_project_access.
func (r inviteRecord) projectAccess() ([]projectAccess, error) {
	var access []projectAccess
	if len(r.PrivateProjectAccess) == 0 {
		return access, nil
	}
	if err := json.Unmarshal(r.PrivateProjectAccess, &access); err != nil {
		return nil, fmt.Errorf("cannot read the project access of invite to %s: %w", r.TargetEmail, err)
	}
	return access, nil
}

// validEmail accepts a bare address, as DRF's EmailField does (no display name).
func validEmail(s string) bool {
	addr, err := mail.ParseAddress(s)
	return err == nil && addr.Address == s && addr.Name == "" && strings.Contains(s, ".")
}

// parseProjectAccess checks private_project_access item by item, with PostHog's messages.
func parseProjectAccess(raw json.RawMessage) ([]projectAccess, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return []projectAccess{}, nil
	}
	fail := func(detail string) error { return errValidation("private_project_access", "invalid_input", detail) }
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, fail("The field must be a list of dictionaries.")
	}
	access := make([]projectAccess, 0, len(items))
	for _, item := range items {
		var fields map[string]json.RawMessage
		if json.Unmarshal(item, &fields) != nil || fields == nil {
			return nil, fail("Each item in the list must be a dictionary.")
		}
		id, hasID := fields["id"]
		level, hasLevel := fields["level"]
		if !hasID || !hasLevel {
			return nil, fail(`Each dictionary must contain "id" and "level" keys.`)
		}
		var pa projectAccess
		if json.Unmarshal(id, &pa.ID) != nil {
			return nil, fail(`The "id" field must be an integer.`)
		}
		if json.Unmarshal(level, &pa.Level) != nil || (pa.Level != "member" && pa.Level != "admin") {
			return nil, fail(`The "level" field must be a valid access level.`)
		}
		access = append(access, pa)
	}
	return access, nil
}

// mergeProjectAccess is the union of two access lists by project, keeping the higher
// level of a project in both (admin over member).
func mergeProjectAccess(a, b []projectAccess) []projectAccess {
	merged := append([]projectAccess{}, a...)
	for _, pb := range b {
		found := false
		for i, pa := range merged {
			if pa.ID == pb.ID {
				found = true
				if pb.Level == "admin" {
					merged[i].Level = "admin"
				}
			}
		}
		if !found {
			merged = append(merged, pb)
		}
	}
	return merged
}

// inviteColumns selects an inviteRecord (without created_by) and its created_by_id.
const inviteColumns = `SELECT id::VARCHAR, target_email, first_name, emailing_attempt_made, level,
	created_at < now() - INTERVAL 3 DAY, created_at, updated_at, message, private_project_access, created_by_id
	FROM meta.invites`

func scanInvite(row records.Scanner) (inviteRecord, error) {
	r := inviteRecord{ID: new(string)}
	err := row.Scan(r.ID, &r.TargetEmail, &r.FirstName, &r.EmailingAttemptMade, &r.Level, &r.IsExpired,
		&r.CreatedAt, &r.UpdatedAt, &r.Message, &r.PrivateProjectAccess, &r.createdByID)
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return r, err
}

// loadInvites reads invites with their creators.
func loadInvites(ctx context.Context, q querier, where string, args ...any) ([]inviteRecord, error) {
	invites, err := records.All(ctx, q, "invites", scanInvite, inviteColumns+" "+where, args...)
	if err != nil {
		return nil, err
	}
	return invites, withCreators(ctx, q, invites)
}

// withCreators fills the created_by of invites.
func withCreators(ctx context.Context, q querier, invites []inviteRecord) error {
	users := map[int64]*userRecord{}
	for i, r := range invites {
		id := r.createdByID
		if id == nil {
			continue
		}
		if users[*id] == nil {
			u, err := loadUser(ctx, q, *id)
			if err != nil {
				return err
			}
			users[*id] = &u
		}
		invites[i].CreatedBy = users[*id]
	}
	return nil
}

// GET /api/organizations/{organization_id}/invites/ (organization_member:read)
// Every invite of the organization, expired ones too (is_expired), newest first.
//
// Decision: in PostHog every member may list every invite with its id, the secret
// that accepts it, so a plain member could read an owner-level invite's id and sign
// up as an owner. hedge keeps PostHog's list, every invite in it, but shows an
// invite's id only to a caller who could have made that invite (withinReach: its level
// at most theirs, its private projects theirs to grant); for the others id is null.
// Reading the list thus grants nothing new.
func (a *API) inviteList(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	pg, invites, count, err := queryPage(c, a.db, listQuery[inviteRecord]{
		what:  fmt.Sprintf("invites of %s", m.organizationID),
		count: `SELECT count(*) FROM meta.invites WHERE organization_id = ?`,
		list:  inviteColumns + ` WHERE organization_id = ? ORDER BY created_at DESC, id DESC`,
		args:  []any{m.organizationID},
		scan:  scanInvite,
	})
	if err != nil {
		return err
	}
	if err := withCreators(c.UserContext(), a.db, invites); err != nil {
		return err
	}
	for i := range invites {
		if err := m.withinReach(c.UserContext(), a.db, &invites[i]); err != nil {
			return err
		}
	}
	return a.sendPage(c, pg, count, invites)
}

// POST /api/organizations/{organization_id}/invites/ (organization_member:write)
// Any member may invite, up to their own level. The invite replaces the pending ones
// for the same e-mail; with combine_pending_invites it keeps the highest level and
// all the project access of the unexpired ones. Neither may take in a pending invite
// beyond the caller's reach (403), and the answer's id is null for an invite beyond it
// (withinReach: never the case once created, but the one rule of every answer).
func (a *API) inviteCreate(c *fiber.Ctx, mail *mailer) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	var in inviteInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := in.validate(ctx, a.db, m); err != nil {
		return err
	}
	ids, err := a.insertInvites(ctx, c, p, m, mail, []inviteInput{in}, false)
	if err != nil {
		return err
	}
	invites, err := loadInvites(ctx, a.db, `WHERE id = ?`, ids[0])
	if err != nil {
		return err
	}
	if err := m.withinReach(ctx, a.db, &invites[0]); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(invites[0])
}

// POST /api/organizations/{organization_id}/invites/bulk/ (organization_member:write)
// A JSON array of at most 20 invites, all validated before any is created: one bad
// item creates none. Answers 200 with no body, as PostHog does.
func (a *API) inviteBulk(c *fiber.Ctx, mail *mailer) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	var items []json.RawMessage
	body := bytes.TrimSpace(c.Body())
	if len(body) > 0 && !json.Valid(body) {
		return bindBody(c, &items) // the parse error
	}
	// Only an array: null would decode as no items, and answer 200 having done nothing.
	if len(body) == 0 || body[0] != '[' || json.Unmarshal(body, &items) != nil {
		return errValidation("", "invalid_input", "This endpoint needs an array of data for bulk invite creation.")
	}
	if len(items) > maxBulkInvites {
		return errValidation("", "max_length", fmt.Sprintf("A maximum of %d invites can be sent in a single request.", maxBulkInvites))
	}
	ctx := c.UserContext()
	inputs := make([]inviteInput, len(items))
	for i, item := range items {
		prefix := fmt.Sprintf("%d__", i)
		if err := decodeItem(item, &inputs[i], prefix); err != nil {
			return err
		}
		if err := inputs[i].validate(ctx, a.db, m); err != nil {
			return prefixAttr(err, prefix)
		}
	}
	if _, err := a.insertInvites(ctx, c, p, m, mail, inputs, true); err != nil {
		return err
	}
	c.Status(fiber.StatusOK)
	return nil
}

// decodeItem decodes one item of a bulk body as bindBody decodes a body: a field of
// the wrong type is a 400 naming it, prefixed with the item's index.
func decodeItem(raw json.RawMessage, dst any, prefix string) error {
	err := decodeJSON(raw, dst, prefix)
	var apiErr *Error
	if err == nil || errors.As(err, &apiErr) {
		return err
	}
	return errValidation(strings.TrimSuffix(prefix, "__"), "invalid_input", "Invalid data. Expected a dictionary, but got "+pythonTypeOf(raw)+".")
}

// prefixAttr puts a bulk item's index in front of a validation error's field.
func prefixAttr(err error, prefix string) error {
	var apiErr *Error
	if errors.As(err, &apiErr) && apiErr.Attr != nil {
		attr := prefix + *apiErr.Attr
		copied := *apiErr
		copied.Attr = &attr
		return &copied
	}
	return err
}

// insertInvites creates validated invites in one transaction, each replacing the
// older invites to its e-mail, then e-mails those with send_email (default true) when
// a mailer is configured. It returns the new invites' ids, in order. A pending
// (unexpired) invite beyond the caller's reach is neither replaced nor combined, and
// the invite stored, after combining, is checked again (mayMakeInvite); a refusal
// creates none, and in a bulk request names its item.
func (a *API) insertInvites(ctx context.Context, c *fiber.Ctx, p *principal, m membership, mail *mailer, inputs []inviteInput, bulk bool) ([]uuid.UUID, error) {
	var letter inviteLetter
	if mail != nil {
		var err error
		if letter, err = a.inviteLetterOf(ctx, a.db, c, p, m); err != nil {
			return nil, err
		}
	}
	// Under membershipWrites, with the caller's level read again: a demotion either
	// comes first, and the invites are checked at the new level, or after, and
	// revokes them (revokeInvitesBeyond).
	membershipWrites.Lock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			membershipWrites.Unlock()
		}
	}
	defer unlock()
	err := a.db.QueryRowContext(ctx, `SELECT level FROM meta.memberships WHERE organization_id = ? AND user_id = ?`,
		m.organizationID, p.userID).Scan(&m.level)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound("Organization not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("cannot look up membership of user %d in %s: %w", p.userID, m.organizationID, err)
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot begin creating invites in %s: %w", m.organizationID, err)
	}
	defer tx.Rollback()
	ids := make([]uuid.UUID, len(inputs))
	var messages []mailMessage
	for i, in := range inputs {
		refused := func(err error) error {
			if bulk {
				return prefixAttr(err, fmt.Sprintf("%d__", i))
			}
			return err
		}
		pending, err := records.All(ctx, tx, "invites", scanInvite,
			inviteColumns+` WHERE organization_id = ? AND target_email = ? AND created_at >= now() - INTERVAL 3 DAY`,
			m.organizationID, in.TargetEmail.Value)
		if err != nil {
			return nil, err
		}
		level, access := in.Level.Value, in.access
		for _, old := range pending {
			oldAccess, err := old.projectAccess()
			if err != nil {
				return nil, err
			}
			// Replacing is cancelling, and combining takes its level and projects: both
			// need an invite the caller could have made.
			if err := m.mayMakeInvite(ctx, tx, old.Level, oldAccess); err != nil {
				if isRefusal(err) {
					return nil, refused(errInviteBeyond())
				}
				return nil, err
			}
			if in.CombinePendingInvites {
				level = max(level, old.Level)
				access = mergeProjectAccess(oldAccess, access)
			}
		}
		if err := m.mayMakeInvite(ctx, tx, level, access); err != nil {
			return nil, refused(err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM meta.invites WHERE organization_id = ? AND target_email = ?`,
			m.organizationID, in.TargetEmail.Value); err != nil {
			return nil, fmt.Errorf("cannot replace the invites of %s: %w", in.TargetEmail.Value, err)
		}
		sendEmail := in.SendEmail == nil || *in.SendEmail
		ids[i] = uuid.Must(uuid.NewV7())
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO meta.invites (id, organization_id, target_email, first_name, level, message,
				private_project_access, emailing_attempt_made, created_by_id, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, now(), now())`,
			ids[i], m.organizationID, in.TargetEmail.Value, in.FirstName, level, in.Message,
			mustJSON(nonNil(access)), sendEmail && mail != nil, p.userID); err != nil {
			return nil, fmt.Errorf("cannot create invite for %s: %w", in.TargetEmail.Value, err)
		}
		if sendEmail && mail != nil {
			messages = append(messages, letter.message(ids[i], in))
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("cannot commit invites in %s: %w", m.organizationID, err)
	}
	unlock()
	// Sent after the commit (an invite must exist before anyone can accept it), and
	// in the request so that it is done when the answer says emailing_attempt_made. A
	// failure does not undo the invites: it is logged, and the invite can be resent by
	// inviting again.
	if len(messages) > 0 {
		if err := mail.send(ctx, messages); err != nil {
			a.log.Warn("cannot e-mail invites", "organization", m.organizationID, "err", err)
		}
	}
	return ids, nil
}

// inviteLetter is what the invite e-mails of one request share.
type inviteLetter struct {
	inviter, organization string
	base                  string // where the management API is reached
}

func (a *API) inviteLetterOf(ctx context.Context, q querier, c *fiber.Ctx, p *principal, m membership) (inviteLetter, error) {
	var l inviteLetter
	var email string
	if err := q.QueryRowContext(ctx, `SELECT o.name, trim(u.first_name || ' ' || u.last_name), u.email
		FROM meta.organizations o, meta.users u WHERE o.id = ? AND u.id = ?`, m.organizationID, p.userID).
		Scan(&l.organization, &l.inviter, &email); err != nil {
		return l, fmt.Errorf("cannot read the inviter of %s: %w", m.organizationID, err)
	}
	if l.inviter == "" {
		l.inviter = email
	}
	l.base = a.publicURL
	if l.base == "" {
		l.base = c.BaseURL()
	}
	return l, nil
}

// message is the e-mail of one invite: who invites, and how to accept: in the console
// (its sign-up page), or through the API.
func (l inviteLetter) message(id uuid.UUID, in inviteInput) mailMessage {
	base, inviter, organization := l.base, l.inviter, l.organization
	var b strings.Builder
	greeting := "Hi"
	if in.FirstName != "" {
		greeting += " " + in.FirstName
	}
	fmt.Fprintf(&b, "%s,\n\n%s invited you to join %s on hedge.\n\n", greeting, inviter, organization)
	if in.Message != nil && *in.Message != "" {
		fmt.Fprintf(&b, "Their message:\n\n%s\n\n", *in.Message)
	}
	fmt.Fprintf(&b, "To accept, open %s/signup/%s and choose a password.\n\n", base, id)
	signup := fmt.Sprintf("%s/api/signup/%s/", base, id)
	fmt.Fprintf(&b, "Or accept through the API by sending your name to %s, for example:\n\n", signup)
	fmt.Fprintf(&b, "  curl -X POST %s -H 'Content-Type: application/json' -d '{\"first_name\": \"Ada\"}'\n\n", signup)
	b.WriteString("That answer holds your personal API key; it is shown only once. If you already have a user on\n")
	b.WriteString("this hedge, send the request with that user's personal API key instead.\n\n")
	b.WriteString("This invitation expires in 3 days.\n")
	return mailMessage{
		to:      in.TargetEmail.Value,
		subject: fmt.Sprintf("%s invited you to join %s on hedge", inviter, organization),
		body:    b.String(),
	}
}

// DELETE /api/organizations/{organization_id}/invites/{id}/ (organization_member:write)
// Admins and owners only, as in PostHog.
func (a *API) inviteDelete(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	if err := m.atLeast(levelAdmin); err != nil {
		return err
	}
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return errRecordNotFound()
	}
	res, err := a.db.ExecContext(c.UserContext(), `DELETE FROM meta.invites WHERE id = ? AND organization_id = ?`, id, m.organizationID)
	if err != nil {
		return fmt.Errorf("cannot delete invite %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errRecordNotFound()
	}
	return c.SendStatus(fiber.StatusNoContent)
}
