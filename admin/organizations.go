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
	pg, ids, count, err := queryPage(c, a.db, listQuery[uuid.UUID]{
		what:  fmt.Sprintf("organizations of user %d", p.userID),
		count: `SELECT count(*) FROM meta.organizations o JOIN meta.memberships m ON m.organization_id = o.id WHERE ` + organizationVisible,
		list: `SELECT o.id FROM meta.organizations o JOIN meta.memberships m ON m.organization_id = o.id WHERE ` + organizationVisible +
			` ORDER BY o.created_at, o.id`,
		args: []any{p.userID, nonNil(p.scopedOrganizations), nonNil(p.scopedOrganizations)},
		scan: scanUUID,
	})
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	organizations := make([]organizationRecord, 0, len(ids))
	for _, id := range ids {
		r, err := a.loadOrganization(ctx, a.db, id, p)
		if err != nil {
			return err
		}
		organizations = append(organizations, r)
	}
	return a.sendPage(c, pg, count, organizations)
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
	if err := bindValid(c, &in); err != nil {
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
	a.tokens.set(token, projectID, defaultProjectFields().Timezone)
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
	if r.Teams, err = listProjects(ctx, q, id, p, 0); err != nil {
		return r, err
	}
	return r, nil
}
