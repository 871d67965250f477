package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

func (a *API) bindUsers() {
	a.handle(fiber.MethodGet, "/users/@me/", "user:read", a.userMe)
	a.handle(fiber.MethodPatch, "/users/@me/", "user:write", a.userMeUpdate)
}

// insertUser creates an active user and returns its integer id. Emails are stored
// lower-cased, so that lookups by email ignore case.
func insertUser(ctx context.Context, q querier, email, firstName string) (int64, error) {
	return insertUserNamed(ctx, q, email, firstName, "")
}

func insertUserNamed(ctx context.Context, q querier, email, firstName, lastName string) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `
		INSERT INTO meta.users (uuid, distinct_id, email, first_name, last_name, created_at)
		VALUES (?, ?, ?, ?, ?, now()) RETURNING id`,
		uuid.Must(uuid.NewV7()), randomToken(32, 43), strings.ToLower(email), firstName, lastName).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("cannot create user %s: %w", email, err)
	}
	return id, nil
}

// userRecord is the OpenAPI schema's User, embedded read-only in other records.
type userRecord struct {
	ID                 int64   `json:"id"`
	UUID               string  `json:"uuid"`
	DistinctID         string  `json:"distinct_id"`
	FirstName          string  `json:"first_name"`
	LastName           string  `json:"last_name"`
	Email              string  `json:"email"`
	IsEmailVerified    bool    `json:"is_email_verified"`
	HedgehogConfig     rawJSON `json:"hedgehog_config"`
	RoleAtOrganization string  `json:"role_at_organization"`
}

// userColumns selects a userRecord from meta.users u, in the order of userRecord.dest.
const userColumns = `u.id, u.uuid::VARCHAR, u.distinct_id, u.first_name, u.last_name, u.email,
	u.is_email_verified, u.hedgehog_config, u.role_at_organization`

func (u *userRecord) dest() []any {
	return []any{&u.ID, &u.UUID, &u.DistinctID, &u.FirstName, &u.LastName, &u.Email,
		&u.IsEmailVerified, &u.HedgehogConfig, &u.RoleAtOrganization}
}

func loadUser(ctx context.Context, q querier, id int64) (userRecord, error) {
	var u userRecord
	err := q.QueryRowContext(ctx, `SELECT `+userColumns+` FROM meta.users u WHERE u.id = ?`, id).Scan(u.dest()...)
	if err != nil {
		return u, fmt.Errorf("cannot read user %d: %w", id, err)
	}
	return u, nil
}

// organizationBasic is an organization as a user's record lists it.
type organizationBasic struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	MembershipLevel int    `json:"membership_level"`
}

// meRecord is GET /api/users/@me/: the user, the organizations the key reaches, and,
// as PostHog's "current" ones, the first of them (joined earliest) and its first
// project the key reaches.
type meRecord struct {
	userRecord
	DateJoined    time.Time           `json:"date_joined"`
	HasPassword   bool                `json:"has_password"`
	Organization  *organizationBasic  `json:"organization"`
	Organizations []organizationBasic `json:"organizations"`
	Team          *projectListItem    `json:"team"`
	// CaptureURL is hedge's own addition (Config.CaptureURL): where this hedge's
	// capture listener is reached, which the console's snippets need and cannot learn
	// from the management listener it is served by. It is one value for the whole
	// instance, so it sits here, beside the user's current project, rather than on
	// the project record, whose fields are PostHog's exactly. Read-only.
	CaptureURL *string `json:"capture_url"`
}

// GET /api/users/@me/ (user:read)
// Open to a key scoped to some projects too: PostHog exempts the user's own record
// from the "only project-based endpoints" rule (APIScopePermission skips scope object
// "user"); organizations and team are still narrowed to what the key reaches.
func (a *API) userMe(c *fiber.Ctx) error {
	p := principalOf(c)
	ctx := c.UserContext()
	var r meRecord
	err := a.db.QueryRowContext(ctx, `SELECT `+userColumns+`, u.created_at,
		EXISTS (SELECT 1 FROM meta.user_passwords w WHERE w.user_id = u.id) FROM meta.users u WHERE u.id = ?`, p.userID).
		Scan(append(r.dest(), &r.DateJoined, &r.HasPassword)...)
	if errors.Is(err, sql.ErrNoRows) {
		return errRecordNotFound()
	}
	if err != nil {
		return fmt.Errorf("cannot read user %d: %w", p.userID, err)
	}
	r.DateJoined = r.DateJoined.UTC()
	if a.captureURL != "" {
		r.CaptureURL = &a.captureURL
	}
	rows, err := a.db.QueryContext(ctx, `SELECT o.id::VARCHAR, o.name, m.level FROM meta.organizations o
		JOIN meta.memberships m ON m.organization_id = o.id WHERE `+organizationVisible+` ORDER BY m.joined_at, o.id`,
		p.userID, nonNil(p.scopedOrganizations), nonNil(p.scopedOrganizations))
	if err != nil {
		return fmt.Errorf("cannot list organizations of user %d: %w", p.userID, err)
	}
	defer rows.Close()
	r.Organizations = []organizationBasic{}
	for rows.Next() {
		var o organizationBasic
		if err := rows.Scan(&o.ID, &o.Name, &o.MembershipLevel); err != nil {
			return fmt.Errorf("cannot read organizations of user %d: %w", p.userID, err)
		}
		r.Organizations = append(r.Organizations, o)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read organizations of user %d: %w", p.userID, err)
	}
	if len(r.Organizations) > 0 {
		r.Organization = &r.Organizations[0]
		teams, err := listProjects(ctx, a.db, uuid.MustParse(r.Organization.ID), p, 1)
		if err != nil {
			return err
		}
		if len(teams) > 0 {
			r.Team = &teams[0]
		}
	}
	return c.JSON(r)
}

// meUpdate is the body of PATCH /api/users/@me/: the fields sent change.
type meUpdate struct {
	FirstName       *string `json:"first_name"`
	LastName        *string `json:"last_name"`
	Password        *string `json:"password"`
	CurrentPassword string  `json:"current_password"`
}

// PATCH /api/users/@me/ (user:write)
// Changes the user's names and password. A password is changed from a signed-in
// session only, never with a personal API key: a key of limited scopes must not become
// a password, which signs in with every scope. The current password must come with it
// (PostHog's rule), and the change ends the user's other sessions, as Django's does.
func (a *API) userMeUpdate(c *fiber.Ctx) error {
	p := principalOf(c)
	ctx := c.UserContext()
	var in meUpdate
	if err := bindBody(c, &in); err != nil {
		return err
	}
	if in.FirstName != nil && utf8.RuneCountInString(*in.FirstName) > 150 {
		return errMaxLength("first_name", 150)
	}
	if in.LastName != nil && utf8.RuneCountInString(*in.LastName) > 150 {
		return errMaxLength("last_name", 150)
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin changing user %d: %w", p.userID, err)
	}
	defer tx.Rollback()
	if in.Password != nil {
		token := sessionToken(c)
		if _, viaKey := findKey(c); viaKey != "" || token == "" {
			return errPermissionDenied("A password is changed from a signed-in session, not with a personal API key.")
		}
		var email string
		var stored sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT u.email, w.hash FROM meta.users u LEFT JOIN meta.user_passwords w ON w.user_id = u.id
			WHERE u.id = ?`, p.userID).Scan(&email, &stored); err != nil {
			return fmt.Errorf("cannot read user %d: %w", p.userID, err)
		}
		if in.CurrentPassword == "" {
			return errValidation("current_password", "required", "This field is required if a new password is specified.")
		}
		// Guesses of current_password count as sign-ins of the user's e-mail, with the
		// same limits: a stolen session does not make the password cheaper to guess.
		now := time.Now()
		attempt, err := a.signIns.admit(email, a.clientAddress(c), true, now)
		if err != nil {
			return err
		}
		ok, err := a.hasher.verify(ctx, in.CurrentPassword, stored.String)
		if err != nil {
			attempt.abandoned()
			return err
		}
		if !ok {
			attempt.failed(now)
			return errValidation("current_password", "incorrect_password", "Your current password is incorrect.")
		}
		attempt.succeeded(now)
		if err := checkNewPassword("password", *in.Password, email); err != nil {
			return err
		}
		hash, err := a.hasher.hash(ctx, *in.Password)
		if err != nil {
			return err
		}
		if err := setPassword(ctx, tx, p.userID, hash); err != nil {
			return err
		}
		if err := endOtherSessions(ctx, tx, p.userID, token); err != nil {
			return err
		}
	}
	if in.FirstName != nil || in.LastName != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE meta.users SET first_name = coalesce(?, first_name), last_name = coalesce(?, last_name)
			WHERE id = ?`, in.FirstName, in.LastName, p.userID); err != nil {
			return fmt.Errorf("cannot change user %d: %w", p.userID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit the change of user %d: %w", p.userID, err)
	}
	return a.userMe(c)
}
