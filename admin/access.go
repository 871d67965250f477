package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

// Who may do what: the caller's membership of the organization or project a path names,
// the membership levels, and what a member may do with a dashboard. Authentication (the
// key and its scopes) is in auth.go; every handler resolves its path through here first.

// Organization membership levels, PostHog's OrganizationMembership.Level.
const (
	levelMember = 1
	levelAdmin  = 8
	levelOwner  = 15
)

// validLevel reports whether level is one of the three membership levels.
func validLevel(level int) bool {
	return level == levelMember || level == levelAdmin || level == levelOwner
}

// membership is the caller's place in the organization named by the request path.
type membership struct {
	organizationID uuid.UUID
	userID         int64
	level          int // 1 member, 8 admin, 15 owner
}

// organizationOf resolves the organization_id path parameter for the caller. An id
// that is not a UUID, that no organization has, or whose organization the caller's
// user does not belong to all get the same 404, so other tenants' ids stay unconfirmed.
// A key scoped to other organizations gets PostHog's 403.
func (a *API) organizationOf(c *fiber.Ctx, p *principal) (membership, error) {
	notFound := errNotFound("Organization not found.")
	var id uuid.UUID
	var err error
	if c.Params("organization_id") == currentAlias {
		id, err = a.currentOrganization(c.UserContext(), p, notFound)
	} else if id, err = uuid.Parse(c.Params("organization_id")); err != nil {
		err = notFound
	}
	if err != nil {
		return membership{}, err
	}
	m := membership{organizationID: id, userID: p.userID}
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

// Project access. A project is private when its access_control is on. One rule says
// who reaches a project, on every route that names one (by path, by token or in a
// body) and in every list of projects:
//
//   - a project that is not private: every member of its organization, at their
//     organization level (1 member, 8 admin, 15 owner);
//   - a private project: the organization's admins and owners, at their organization
//     level, and the members added to it explicitly (explicit_members.go), at the
//     higher of their organization level and their explicit level (1 member, 8 admin
//     of the project);
//   - nobody else: not a member of the organization, nor a member not added to it.
//
// The effective level is what the project's own rules compare (a project admin, level
// 8 or more, may restrict dashboards, edit others' flags, manage explicit members).
// Explicit memberships hang on the organization membership, so leaving the
// organization ends them; on a project that is not private they are kept but change
// nothing, and count again if it becomes private.
//
// projectLevelSQL is the rule as SQL over a project p, the user's membership m of its
// organization and their explicit membership e of the project (projectMembersSQL): the
// effective level, NULL when the user may not reach the project. Everything that
// decides access goes through it: reachProject for a project a request names,
// reachableProjectIDs for lists, projectLevelOf for another user.
const projectLevelSQL = `CASE WHEN NOT p.access_control OR m.level >= 8 THEN m.level
	WHEN e.level IS NOT NULL THEN greatest(m.level, e.level) END`

// projectMembersSQL is the FROM clause of projectLevelSQL: the projects joined with the
// membership of the user whose id is its one parameter (projects of other
// organizations drop out) and that user's explicit memberships.
const projectMembersSQL = `meta.projects p
	JOIN meta.memberships m ON m.organization_id = p.organization_id AND m.user_id = ?
	LEFT JOIN meta.explicit_project_members e ON e.team_id = p.id AND e.membership_id = m.id`

// reachableProjectIDs is a subquery of the ids of the projects that the user whose id
// is its one parameter may reach, in any organization.
const reachableProjectIDs = `(SELECT p.id FROM ` + projectMembersSQL + ` WHERE (` + projectLevelSQL + `) IS NOT NULL)`

// errNoProjectAccess is PostHog's 403 for a member of the organization on a private
// project they were not added to.
var errNoProjectAccess = errPermissionDenied("You don't have access to the project.")

// project is a project the caller may reach, with the caller's effective level in it.
type project struct {
	id             int64
	organizationID uuid.UUID
	level          int  // the caller's effective level in the project (see projectLevelSQL)
	private        bool // access_control: only its explicit members and the organization's admins reach it
}

const projectLocal = "hedge.project"

// requireProject is the gate of every route under /api/projects/{param}/ (handle puts
// it before the handler, so no handler can skip it): the project that the path
// parameter param names must be one the caller may reach, or the request ends here.
// The handler finds the project with projectOf.
func (a *API) requireProject(param string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		pr, err := a.resolveProject(c, principalOf(c), param)
		if err != nil {
			return err
		}
		c.Locals(projectLocal, pr)
		return c.Next()
	}
}

// projectOf is the project of the path, as requireProject resolved it.
func (a *API) projectOf(c *fiber.Ctx, p *principal) (project, error) {
	if pr, ok := c.Locals(projectLocal).(project); ok {
		return pr, nil
	}
	return a.resolveProject(c, p, "project_id")
}

// resolveProject resolves the path parameter param (a project id) for the caller, as
// organizationOf does for organizations: a project id that is not a number, that no
// project has, or whose organization the caller's user does not belong to all get the
// same 404. A key scoped to other projects or organizations gets PostHog's 403, and so
// does a member of the organization on a private project they were not added to
// (PostHog's "You don't have access to the project.").
func (a *API) resolveProject(c *fiber.Ctx, p *principal, param string) (project, error) {
	notFound := errNotFound("Project not found.")
	if c.Params(param) == currentAlias {
		id, err := a.currentProject(c.UserContext(), p, notFound)
		if err != nil {
			return project{}, err
		}
		return a.reachProject(c.UserContext(), p, id, notFound, errNoProjectAccess)
	}
	id, err := strconv.ParseInt(c.Params(param), 10, 64)
	if err != nil {
		return project{}, notFound
	}
	return a.reachProject(c.UserContext(), p, id, notFound, errNoProjectAccess)
}

// currentAlias stands in a path for the caller's current organization or project, as
// in PostHog (/api/projects/@current/..., /api/organizations/@current/).
const currentAlias = "@current"

// currentProject is the project @current names for the caller, the team of GET
// /api/users/@me/: PostHog keeps a current project per user, which its web app
// switches; hedge has none to remember, so it is the first project (lowest id) the key
// reaches in the first organization the user joined that has one (among the projects
// and organizations a scoped key names). notFound is the answer when it reaches none.
func (a *API) currentProject(ctx context.Context, p *principal, notFound error) (int64, error) {
	var id int64
	err := a.db.QueryRowContext(ctx, `SELECT p.id FROM meta.projects p
		JOIN meta.memberships m ON m.organization_id = p.organization_id AND m.user_id = ?
		WHERE p.id IN `+reachableProjectIDs+`
		AND (len(?::BIGINT[]) = 0 OR list_contains(?::BIGINT[], p.id))
		AND (len(?::VARCHAR[]) = 0 OR list_contains(?::VARCHAR[], p.organization_id::VARCHAR))
		ORDER BY m.joined_at, m.id, p.id LIMIT 1`, p.userID, p.userID, nonNil(p.scopedTeams), nonNil(p.scopedTeams),
		nonNil(p.scopedOrganizations), nonNil(p.scopedOrganizations)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, notFound
	}
	if err != nil {
		return 0, fmt.Errorf("cannot find the current project of user %d: %w", p.userID, err)
	}
	return id, nil
}

// currentOrganization is the organization @current names for the caller, the
// organization of GET /api/users/@me/: the first the user joined that the key may use.
// notFound is the answer when there is none.
func (a *API) currentOrganization(ctx context.Context, p *principal, notFound error) (uuid.UUID, error) {
	var id uuid.UUID
	err := a.db.QueryRowContext(ctx, `SELECT organization_id FROM meta.memberships WHERE user_id = ?
		AND (len(?::VARCHAR[]) = 0 OR list_contains(?::VARCHAR[], organization_id::VARCHAR))
		ORDER BY joined_at, id LIMIT 1`, p.userID, nonNil(p.scopedOrganizations), nonNil(p.scopedOrganizations)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return uuid.UUID{}, notFound
	}
	if err != nil {
		return uuid.UUID{}, fmt.Errorf("cannot find the current organization of user %d: %w", p.userID, err)
	}
	return id, nil
}

// reachProject is the project with the given id if the caller may reach it (the rule
// of projectLevelSQL), with a key not scoped to other projects or organizations
// (PostHog's 403s). refused is the answer when the project does not exist or the
// caller is not a member of its organization; denied when the caller is a member who
// may not reach it.
func (a *API) reachProject(ctx context.Context, p *principal, id int64, refused, denied error) (project, error) {
	pr := project{id: id}
	var level sql.NullInt64
	err := a.db.QueryRowContext(ctx, `SELECT p.organization_id, p.access_control, `+projectLevelSQL+` FROM `+projectMembersSQL+`
		WHERE p.id = ?`, p.userID, id).Scan(&pr.organizationID, &pr.private, &level)
	if errors.Is(err, sql.ErrNoRows) {
		return project{}, refused
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
	if !level.Valid {
		return project{}, denied
	}
	pr.level = int(level.Int64)
	return pr, nil
}

// projectLevelOf is another user's effective level in a project; ok is false when the
// user may not reach it (not a member of its organization, or a member not added to
// a private project).
func projectLevelOf(ctx context.Context, q querier, team, userID int64) (level int, ok bool, err error) {
	var l sql.NullInt64
	err = q.QueryRowContext(ctx, `SELECT `+projectLevelSQL+` FROM `+projectMembersSQL+` WHERE p.id = ?`, userID, team).Scan(&l)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("cannot look up the access of user %d to project %d: %w", userID, team, err)
	}
	return int(l.Int64), l.Valid, nil
}

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
// use them, as in PostHog.
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

// Dashboard restriction levels (and collaborator privilege levels), PostHog's.
const (
	restrictionEveryoneEdits = 21 // everyone in the project can edit; as a privilege: can view
	restrictionOnlyEditors   = 37 // only collaborators can edit; as a privilege: can edit
)

// dashboardAccess is what the caller may do with a dashboard, by PostHog's rules (with
// every feature on, so that a dashboard's effective restriction is its restriction).
type dashboardAccess struct {
	canRestrict bool // the creator or a project admin: may change the restriction level
	canEdit     bool
	privilege   int // effective_privilege_level: 37 can edit, 21 can view
}

// accessLevel is user_access_level: manager, editor or viewer.
func (x dashboardAccess) accessLevel() string {
	switch {
	case x.canRestrict:
		return "manager"
	case x.canEdit:
		return "editor"
	}
	return "viewer"
}

// dashboardAccess computes access for a user whose project level is level, knowing
// the user's explicit collaborator level on the dashboard (0 for none).
func dashboardAccessFor(d dashboardRow, userID int64, level, collaboratorLevel int) dashboardAccess {
	x := dashboardAccess{canRestrict: (d.createdBy != nil && *d.createdBy == userID) || level >= levelAdmin}
	switch {
	case d.restrictionLevel == restrictionEveryoneEdits || x.canRestrict:
		x.privilege = restrictionOnlyEditors
	case collaboratorLevel > 0:
		x.privilege = collaboratorLevel
	default:
		x.privilege = restrictionEveryoneEdits
	}
	x.canEdit = d.restrictionLevel < restrictionOnlyEditors || x.privilege >= restrictionOnlyEditors
	return x
}

// collaboratorLevels are the user's explicit levels on the dashboards of the project.
func (a *API) collaboratorLevels(ctx context.Context, team, userID int64) (map[int64]int, error) {
	rows, err := a.db.QueryContext(ctx, `SELECT c.dashboard_id, c.level FROM meta.dashboard_collaborators c
		JOIN meta.dashboards d ON d.id = c.dashboard_id WHERE d.team_id = ? AND c.user_id = ?`, team, userID)
	if err != nil {
		return nil, fmt.Errorf("cannot read the collaborations of user %d: %w", userID, err)
	}
	defer rows.Close()
	levels := map[int64]int{}
	for rows.Next() {
		var id int64
		var level int
		if err := rows.Scan(&id, &level); err != nil {
			return nil, fmt.Errorf("cannot read the collaborations of user %d: %w", userID, err)
		}
		levels[id] = level
	}
	return levels, rows.Err()
}

func (a *API) accessTo(ctx context.Context, d dashboardRow, pr project, userID int64) (dashboardAccess, error) {
	levels, err := a.collaboratorLevels(ctx, pr.id, userID)
	if err != nil {
		return dashboardAccess{}, err
	}
	return dashboardAccessFor(d, userID, pr.level, levels[d.id]), nil
}

// mayEdit is nil when the user may edit the dashboard, else PostHog's 403.
func (a *API) mayEdit(ctx context.Context, d dashboardRow, pr project, userID int64) error {
	x, err := a.accessTo(ctx, d, pr, userID)
	if err != nil {
		return err
	}
	if !x.canEdit {
		return errNoEditRights
	}
	return nil
}

var errNoEditRights = errPermissionDenied("You don't have edit permissions for this dashboard.")

// Content shared between dashboards. An insight may be placed on several dashboards,
// and a shallow copy of a dashboard (use_dashboard without duplicate_tiles) puts the
// very insights and text cards of the original on the copy. The rule: an insight or a
// text card is edited (changed, deleted, restored) only by whoever may edit every live
// dashboard it is on, so that the content of a restricted dashboard stays its editors'
// whichever dashboard, or the insight itself, it is reached through. Content on no live
// dashboard is anyone's in the project. A tile's own fields (layouts, color, filter
// overrides, being on the dashboard at all) are its dashboard's, and need edit rights
// on that dashboard only.

// contentKind is the column of meta.dashboard_tiles that points at a kind of content.
type contentKind string

const (
	insightContent contentKind = "insight_id"
	textContent    contentKind = "text_id"
)

// mayEditContent reports whether the user may edit the insight or text card id of the
// project, by the rule above. q is the transaction when a write is under way, so that
// the tiles it changed count.
func (a *API) mayEditContent(ctx context.Context, q querier, pr project, userID int64, kind contentKind, id int64) (bool, error) {
	dashboards, err := records.All(ctx, q, fmt.Sprintf("dashboards of %s %d", kind, id), scanDashboard, dashboardColumns+`
		WHERE d.team_id = ? AND NOT d.deleted
		AND d.id IN (SELECT dashboard_id FROM meta.dashboard_tiles WHERE `+string(kind)+` = ? AND NOT deleted)`, pr.id, id)
	if err != nil || len(dashboards) == 0 {
		return err == nil, err
	}
	levels, err := a.collaboratorLevels(ctx, pr.id, userID)
	if err != nil {
		return false, err
	}
	for _, d := range dashboards {
		if !dashboardAccessFor(d, userID, pr.level, levels[d.id]).canEdit {
			return false, nil
		}
	}
	return true, nil
}

// editableDashboard is the request's dashboard when the caller may edit it.
func (a *API) editableDashboard(c *fiber.Ctx) (dashboardRow, error) {
	pr, d, err := a.dashboardOf(c)
	if err != nil {
		return d, err
	}
	return d, a.mayEdit(c.UserContext(), d, pr, principalOf(c).userID)
}

// recordOfPath is the project the path names and its record whose integer id is the
// path's :id, read by find; an id that is not an integer, or a record the project does
// not have, is DRF's "Not found.".
func recordOfPath[T any](a *API, c *fiber.Ctx, find func(ctx context.Context, team, id int64) (T, bool, error)) (project, T, error) {
	var none T
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return pr, none, err
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil {
		return pr, none, errRecordNotFound()
	}
	record, ok, err := find(c.UserContext(), pr.id, id)
	if err == nil && !ok {
		err = errRecordNotFound()
	}
	return pr, record, err
}

// deletedWithPatch answers the DELETE of a record that is deleted with PATCH
// {"deleted": true}, as PostHog does: 405 with no body, changing nothing, once the key,
// its scope and the project are checked.
func (a *API) deletedWithPatch(c *fiber.Ctx) error {
	if _, err := a.projectOf(c, principalOf(c)); err != nil {
		return err
	}
	c.Set(fiber.HeaderAllow, "GET, PATCH")
	c.Status(fiber.StatusMethodNotAllowed)
	return nil
}
