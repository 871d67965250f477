package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

func (a *API) bindOrganizations() {
	a.handle(fiber.MethodGet, "/organizations/", "organization:read", a.organizationList)
	a.handle(fiber.MethodPost, "/organizations/", "organization:write", a.organizationCreate)
	a.handle(fiber.MethodGet, "/organizations/:organization_id/", "organization:read", a.organizationRetrieve)
}

// membershipWrites serialises the changes that must keep an organization with an
// owner (levels changing, members leaving, invites accepted). DuckDB's snapshot
// isolation would let two owners who demote each other at the same moment both
// succeed; one process owns the database file, so a process-wide lock is enough.
var membershipWrites sync.Mutex

// errAccessLevel is PostHog's 403 for a member whose level is below what the action
// needs (OrganizationAdminWritePermissions).
func errAccessLevel() *Error {
	return errPermissionDenied("Your organization access level is insufficient.")
}

// atLeast is nil when the caller's level in the organization is level or more.
func (m membership) atLeast(level int) error {
	if m.level < level {
		return errAccessLevel()
	}
	return nil
}

// organizationWide resolves the organization of the path for the endpoints that act
// on the organization as a whole (the organization itself, its members, invites,
// domains, projects list and batch exports): a key scoped to some projects may not
// use them, as in PostHog (reference §1.3).
func (a *API) organizationWide(c *fiber.Ctx, p *principal) (membership, error) {
	m, err := a.organizationOf(c, p)
	if err != nil {
		return membership{}, err
	}
	if err := notProjectScoped(p); err != nil {
		return membership{}, err
	}
	return m, nil
}

// notProjectScoped is PostHog's 403 for a key scoped to some projects on an endpoint
// that is not about one project: /api/organizations/ and everything under an
// organization but a project of it (PostHog's APIScopePermission, whose only
// exception is the user's own record, /api/users/@me/).
func notProjectScoped(p *principal) error {
	if len(p.scopedTeams) > 0 {
		return errPermissionDenied("API keys with scoped projects are only supported on project-based endpoints.")
	}
	return nil
}

// insertOrganization creates an organization and returns its id.
func insertOrganization(ctx context.Context, q querier, name string) (uuid.UUID, error) {
	id := uuid.Must(uuid.NewV7())
	if _, err := q.ExecContext(ctx,
		`INSERT INTO meta.organizations (id, name, created_at, updated_at) VALUES (?, ?, now(), now())`, id, name); err != nil {
		return uuid.Nil, fmt.Errorf("cannot create organization %q: %w", name, err)
	}
	return id, nil
}

// organizationRecord is an organization as the caller sees it: teams are the
// projects the key may reach, in the projects list's shape.
type organizationRecord struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
	MembershipLevel int               `json:"membership_level"`
	Teams           []projectListItem `json:"teams"`
}

// organizationInput is the body of POST /api/organizations/.
type organizationInput struct {
	Name optional[string] `json:"name"`
}

// validate checks the name as PostHog's serializer does (required, at most 64).
func (in organizationInput) validate() error {
	switch {
	case !in.Name.Set:
		return errRequired("name")
	case in.Name.Null:
		return errNull("name")
	case strings.TrimSpace(in.Name.Value) == "":
		return errBlank("name")
	case utf8.RuneCountInString(in.Name.Value) > 64:
		return errMaxLength("name", 64)
	}
	return nil
}

// organizationVisible is the condition on meta.organizations o and meta.memberships m
// for the organizations a key reaches: its user's, narrowed by scoped_organizations.
const organizationVisible = `m.user_id = ? AND (len(?::VARCHAR[]) = 0 OR list_contains(?::VARCHAR[], o.id::VARCHAR))`

// GET /api/organizations/ (organization:read)
// The organizations of the key's user (those the key is scoped to), oldest first.
func (a *API) organizationList(c *fiber.Ctx) error {
	p := principalOf(c)
	if err := notProjectScoped(p); err != nil {
		return err
	}
	pg := pageOf(c)
	ctx := c.UserContext()
	args := []any{p.userID, nonNil(p.scopedOrganizations), nonNil(p.scopedOrganizations)}
	var count int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM meta.organizations o
		JOIN meta.memberships m ON m.organization_id = o.id WHERE `+organizationVisible, args...).Scan(&count); err != nil {
		return fmt.Errorf("cannot count organizations of user %d: %w", p.userID, err)
	}
	rows, err := a.db.QueryContext(ctx, `SELECT o.id FROM meta.organizations o
		JOIN meta.memberships m ON m.organization_id = o.id WHERE `+organizationVisible+`
		ORDER BY o.created_at, o.id LIMIT ? OFFSET ?`, append(args, pg.limit, pg.offset)...)
	if err != nil {
		return fmt.Errorf("cannot list organizations of user %d: %w", p.userID, err)
	}
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("cannot read organizations of user %d: %w", p.userID, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read organizations of user %d: %w", p.userID, err)
	}
	records := make([]organizationRecord, 0, len(ids))
	for _, id := range ids {
		r, err := a.loadOrganization(ctx, a.db, id, p)
		if err != nil {
			return err
		}
		records = append(records, r)
	}
	return a.sendPage(c, pg, count, records)
}

// POST /api/organizations/ (organization:write)
// Creates an organization with the caller as its owner and, as PostHog's bootstrap
// does, a "Default project" in it with its primary dashboard, so that the new
// organization can capture at once.
func (a *API) organizationCreate(c *fiber.Ctx) error {
	p := principalOf(c)
	if err := notProjectScoped(p); err != nil {
		return err
	}
	var in organizationInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	ctx := c.UserContext()
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin creating organization %q: %w", in.Name.Value, err)
	}
	defer tx.Rollback()
	id, err := insertOrganization(ctx, tx, in.Name.Value)
	if err != nil {
		return err
	}
	if err := insertMembership(ctx, tx, id, p.userID, levelOwner); err != nil {
		return err
	}
	projectID, token, err := insertProject(ctx, tx, id, "Default project")
	if err != nil {
		return err
	}
	if err := addPrimaryDashboard(ctx, tx, projectID, p.userID); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit organization %q: %w", in.Name.Value, err)
	}
	a.tokens.set(token, projectID)
	r, err := a.loadOrganization(ctx, a.db, id, p)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(r)
}

// GET /api/organizations/{organization_id}/ (organization:read)
func (a *API) organizationRetrieve(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	r, err := a.loadOrganization(c.UserContext(), a.db, m.organizationID, p)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// loadOrganization reads an organization the caller belongs to.
func (a *API) loadOrganization(ctx context.Context, q querier, id uuid.UUID, p *principal) (organizationRecord, error) {
	r := organizationRecord{ID: id.String()}
	err := q.QueryRowContext(ctx, `
		SELECT o.name, o.created_at, o.updated_at, m.level FROM meta.organizations o
		JOIN meta.memberships m ON m.organization_id = o.id AND m.user_id = ? WHERE o.id = ?`, p.userID, id).
		Scan(&r.Name, &r.CreatedAt, &r.UpdatedAt, &r.MembershipLevel)
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound("Organization not found.")
	}
	if err != nil {
		return r, fmt.Errorf("cannot read organization %s: %w", id, err)
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	if r.Teams, err = listProjects(ctx, q, id, p.scopedTeams, page{limit: -1}); err != nil {
		return r, err
	}
	return r, nil
}
