package admin

import (
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bytedance/sonic"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

// principal is the authenticated caller of a request: a personal API key and its user.
// It lives in the request's Locals for the length of the request.
type principal struct {
	userID              int64
	scopes              []string
	scopedOrganizations []string // empty: every organization of the user
	scopedTeams         []int64  // empty: every project of those organizations
}

const principalLocal = "hedge.principal"

// allows reports whether the key's scopes grant scope ("<object>:<read|write>"):
// "*" grants everything and "<object>:write" implies "<object>:read".
func (p *principal) allows(scope string) bool {
	object, action, _ := strings.Cut(scope, ":")
	for _, s := range p.scopes {
		if s == "*" || s == scope || (action == "read" && s == object+":write") {
			return true
		}
	}
	return false
}

// require authenticates the request and checks that its key grants scope; the
// handlers after it find the caller with principalOf.
func (a *API) require(scope string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p, err := a.authenticate(c)
		if err != nil {
			return err
		}
		if !p.allows(scope) {
			return errPermissionDenied(fmt.Sprintf("API key missing required scope '%s'", scope))
		}
		c.Locals(principalLocal, p)
		return c.Next()
	}
}

func principalOf(c *fiber.Ctx) *principal {
	return c.Locals(principalLocal).(*principal)
}

var bearerPattern = regexp.MustCompile(`^Bearer\s+(\S.+)$`)

// findKey looks for a personal API key where PostHog does, and only the first place
// that has one counts: the Authorization header, the JSON body field
// personal_api_key, the query string. source names the place for error messages.
func findKey(c *fiber.Ctx) (key, source string) {
	// pha_ tokens are OAuth access tokens, which hedge does not issue.
	if m := bearerPattern.FindStringSubmatch(c.Get(fiber.HeaderAuthorization)); m != nil && !strings.HasPrefix(m[1], "pha_") {
		return m[1], "Authorization header"
	}
	if body := c.Body(); len(body) > 0 && strings.HasPrefix(c.Get(fiber.HeaderContentType), fiber.MIMEApplicationJSON) {
		if node, err := sonic.Get(body, "personal_api_key"); err == nil {
			if s, err := node.String(); err == nil && s != "" {
				return s, "body"
			}
		}
	}
	if key := c.Query("personal_api_key"); key != "" {
		return key, "query string"
	}
	return "", ""
}

// authenticate finds the request's personal API key and its active user. Keys are
// looked up by their sha256, the only form stored.
func (a *API) authenticate(c *fiber.Ctx) (*principal, error) {
	key, source := findKey(c)
	if key == "" {
		return nil, errNotAuthenticated()
	}
	hashed := hashKey(key)
	var stored, scopes, organizations, teams string
	var p principal
	err := a.db.QueryRowContext(c.UserContext(), `
		SELECT k.secure_value, k.user_id, k.scopes, k.scoped_organizations, k.scoped_teams
		FROM meta.personal_api_keys k JOIN meta.users u ON u.id = k.user_id
		WHERE k.secure_value = ? AND u.is_active`, hashed).
		Scan(&stored, &p.userID, &scopes, &organizations, &teams)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && subtle.ConstantTimeCompare([]byte(stored), []byte(hashed)) != 1) {
		return nil, errAuthenticationFailed("Personal API key found in request " + source + " is invalid.")
	}
	if err != nil {
		return nil, fmt.Errorf("cannot look up a personal API key: %w", err)
	}
	if err := decodeJSONColumns(
		jsonColumn{"scopes", scopes, &p.scopes},
		jsonColumn{"scoped_organizations", organizations, &p.scopedOrganizations},
		jsonColumn{"scoped_teams", teams, &p.scopedTeams},
	); err != nil {
		return nil, fmt.Errorf("cannot read personal API key of user %d: %w", p.userID, err)
	}
	return &p, nil
}

// membership is the caller's place in the organization named by the request path.
type membership struct {
	organizationID uuid.UUID
	level          int // 1 member, 8 admin, 15 owner
}

// organizationOf resolves the organization_id path parameter for the caller. An id
// that is not a UUID, that no organization has, or whose organization the caller's
// user does not belong to all get the same 404, so other tenants' ids stay unconfirmed.
// A key scoped to other organizations gets PostHog's 403.
func (a *API) organizationOf(c *fiber.Ctx, p *principal) (membership, error) {
	notFound := errNotFound("Organization not found.")
	id, err := uuid.Parse(c.Params("organization_id"))
	if err != nil {
		return membership{}, notFound
	}
	m := membership{organizationID: id}
	err = a.db.QueryRowContext(c.UserContext(),
		`SELECT level FROM meta.memberships WHERE organization_id = ? AND user_id = ?`, id, p.userID).Scan(&m.level)
	if errors.Is(err, sql.ErrNoRows) {
		return membership{}, notFound
	}
	if err != nil {
		return membership{}, fmt.Errorf("cannot look up membership of user %d in %s: %w", p.userID, id, err)
	}
	if len(p.scopedOrganizations) > 0 && !slices.Contains(p.scopedOrganizations, id.String()) {
		return membership{}, errPermissionDenied(fmt.Sprintf("API key does not have access to the requested organization: ID %s.", id))
	}
	return m, nil
}

// project is a project the caller may reach, with the caller's place in its organization.
type project struct {
	id             int64
	organizationID uuid.UUID
	level          int // the caller's membership level in the project's organization
}

// projectOf resolves the project_id path parameter for the caller, as organizationOf
// does for organizations: a project id that is not a number, that no project has, or
// whose organization the caller's user does not belong to all get the same 404. A key
// scoped to other projects or organizations gets PostHog's 403.
func (a *API) projectOf(c *fiber.Ctx, p *principal) (project, error) {
	notFound := errNotFound("Project not found.")
	id, err := strconv.ParseInt(c.Params("project_id"), 10, 64)
	if err != nil {
		return project{}, notFound
	}
	pr := project{id: id}
	err = a.db.QueryRowContext(c.UserContext(), `
		SELECT p.organization_id, m.level FROM meta.projects p
		JOIN meta.memberships m ON m.organization_id = p.organization_id AND m.user_id = ?
		WHERE p.id = ?`, p.userID, id).Scan(&pr.organizationID, &pr.level)
	if errors.Is(err, sql.ErrNoRows) {
		return project{}, notFound
	}
	if err != nil {
		return project{}, fmt.Errorf("cannot look up project %d for user %d: %w", id, p.userID, err)
	}
	if len(p.scopedTeams) > 0 && !slices.Contains(p.scopedTeams, id) {
		return project{}, errPermissionDenied(fmt.Sprintf("API key does not have access to the requested project: ID %d.", id))
	}
	if len(p.scopedOrganizations) > 0 && !slices.Contains(p.scopedOrganizations, pr.organizationID.String()) {
		return project{}, errPermissionDenied(fmt.Sprintf("API key does not have access to the requested organization: ID %s.", pr.organizationID))
	}
	return pr, nil
}

// jsonColumn is a JSON text column to decode into target.
type jsonColumn struct {
	name   string
	text   string
	target any
}

func decodeJSONColumns(columns ...jsonColumn) error {
	for _, col := range columns {
		if err := sonic.UnmarshalString(col.text, col.target); err != nil {
			return fmt.Errorf("cannot decode column %s: %w", col.name, err)
		}
	}
	return nil
}
