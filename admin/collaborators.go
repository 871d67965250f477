package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

func (a *API) bindCollaborators() {
	a.handle(fiber.MethodGet, "/projects/:project_id/dashboards/:dashboard_id/collaborators/", "dashboard:read", a.collaboratorList)
	a.handle(fiber.MethodPost, "/projects/:project_id/dashboards/:dashboard_id/collaborators/", "dashboard:write", a.collaboratorAdd)
	a.handle(fiber.MethodDelete, "/projects/:project_id/dashboards/:dashboard_id/collaborators/:user__uuid/", "dashboard:write", a.collaboratorRemove)
}

// collaboratorRecord is a user given edit rights on a restricted dashboard.
type collaboratorRecord struct {
	ID          string     `json:"id"`
	DashboardID int64      `json:"dashboard_id"`
	User        userRecord `json:"user"`
	Level       int        `json:"level"`
	AddedAt     time.Time  `json:"added_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	UserUUID    string     `json:"user_uuid"`
}

const collaboratorColumns = `SELECT c.id::VARCHAR, c.dashboard_id, c.level, c.added_at, c.updated_at, ` + userColumns + `
	FROM meta.dashboard_collaborators c JOIN meta.users u ON u.id = c.user_id`

func scanCollaborator(row records.Scanner) (collaboratorRecord, error) {
	var r collaboratorRecord
	err := row.Scan(append([]any{&r.ID, &r.DashboardID, &r.Level, &r.AddedAt, &r.UpdatedAt}, r.User.dest()...)...)
	r.AddedAt, r.UpdatedAt, r.UserUUID = r.AddedAt.UTC(), r.UpdatedAt.UTC(), r.User.UUID
	return r, err
}

// dashboardNotFound is the answer for a collaborator route on a dashboard that is not there.
var dashboardNotFound = errNotFound("Dashboard not found.")

// collaboratorDashboard is dashboardOf for the collaborator routes: a project the caller
// cannot reach is "Project not found." as on every project route, a dashboard that is
// not there "Dashboard not found." (PostHog's words).
func (a *API) collaboratorDashboard(c *fiber.Ctx) (project, dashboardRow, error) {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return pr, dashboardRow{}, err
	}
	id, err := strconv.ParseInt(c.Params("dashboard_id"), 10, 64)
	if err != nil {
		return pr, dashboardRow{}, dashboardNotFound
	}
	d, err := loadDashboard(c.UserContext(), a.db, pr.id, id, false)
	if isNotFound(err) {
		return pr, d, dashboardNotFound
	}
	return pr, d, err
}

// GET /api/projects/{project_id}/dashboards/{dashboard_id}/collaborators/ (dashboard:read)
// The collaborators, as a plain JSON array (PostHog does not paginate them).
func (a *API) collaboratorList(c *fiber.Ctx) error {
	_, d, err := a.collaboratorDashboard(c)
	if err != nil {
		return err
	}
	rows, err := a.db.QueryContext(c.UserContext(), collaboratorColumns+` WHERE c.dashboard_id = ? ORDER BY c.added_at, c.id`, d.id)
	if err != nil {
		return fmt.Errorf("cannot list the collaborators of dashboard %d: %w", d.id, err)
	}
	defer rows.Close()
	collaborators := []collaboratorRecord{}
	for rows.Next() {
		r, err := scanCollaborator(rows)
		if err != nil {
			return fmt.Errorf("cannot read the collaborators of dashboard %d: %w", d.id, err)
		}
		collaborators = append(collaborators, r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read the collaborators of dashboard %d: %w", d.id, err)
	}
	return c.JSON(collaborators)
}

// isNotFound reports an *Error with status 404.
func isNotFound(err error) bool {
	var apiErr *Error
	return errors.As(err, &apiErr) && apiErr.Status == fiber.StatusNotFound
}

// POST /api/projects/{project_id}/dashboards/{dashboard_id}/collaborators/ (dashboard:write)
// Body {"user_uuid", "level": 37}, with PostHog's rules: only on dashboards
// restricted to collaborators, only edit access, never for those who have it already
// (its creator, project admins), never twice, only for users who reach the project.
func (a *API) collaboratorAdd(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, d, err := a.collaboratorDashboard(c)
	if err != nil {
		return err
	}
	var body struct {
		UserUUID optional[string] `json:"user_uuid"`
		Level    optional[int]    `json:"level"`
	}
	if err := bindBody(c, &body); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := a.mayEdit(ctx, d, pr, p.userID); err != nil {
		return err
	}
	if d.restrictionLevel == restrictionEveryoneEdits {
		return errValidation("", "invalid_input", "Cannot add collaborators to a dashboard on the lowest restriction level.")
	}
	if !body.Level.Set {
		return errRequired("level")
	}
	if body.Level.Value != restrictionOnlyEditors {
		return errValidation("level", "invalid_input", "Only edit access can be explicitly specified currently.")
	}
	if !body.UserUUID.Set || body.UserUUID.Value == "" {
		return errRequired("user_uuid")
	}
	userUUID, err := uuid.Parse(body.UserUUID.Value)
	if err != nil {
		return errValidation("user_uuid", "invalid_input", "User does not exist.")
	}
	var userID int64
	err = a.db.QueryRowContext(ctx, `SELECT id FROM meta.users WHERE uuid = ? AND is_active`, userUUID).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return errValidation("user_uuid", "invalid_input", "User does not exist.")
	}
	if err != nil {
		return fmt.Errorf("cannot look up user %s: %w", userUUID, err)
	}
	// The collaborator must reach the project (projectLevelSQL: a member of its
	// organization, and of the project when it is private); a project admin already
	// edits every dashboard.
	level, ok, err := projectLevelOf(ctx, a.db, pr.id, userID)
	if err != nil {
		return err
	}
	if !ok {
		return errValidation("user_uuid", "invalid_input", "Cannot add collaborators that have no access to the project.")
	}
	if (d.createdBy != nil && *d.createdBy == userID) || level >= levelAdmin {
		return errValidation("user_uuid", "invalid_input", "Cannot add collaborators that already have inherent access (the dashboard owner or a project admins).")
	}
	id, err := a.insertCollaborator(ctx, d.id, userID, body.Level.Value)
	if err != nil {
		return err
	}
	r, err := scanCollaborator(a.db.QueryRowContext(ctx, collaboratorColumns+` WHERE c.id = ?`, id))
	if err != nil {
		return fmt.Errorf("cannot read collaborator %s: %w", id, err)
	}
	return c.Status(fiber.StatusCreated).JSON(r)
}

// insertCollaborator makes the user a collaborator of the dashboard, or answers 400
// when it already is one; concurrent requests for the same user are taken one at a
// time (dashboardRowsMu), so all but the first get the 400.
func (a *API) insertCollaborator(ctx context.Context, dashboardID, userID int64, level int) (uuid.UUID, error) {
	dashboardRowsMu.Lock()
	defer dashboardRowsMu.Unlock()
	var already int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM meta.dashboard_collaborators WHERE dashboard_id = ? AND user_id = ?`,
		dashboardID, userID).Scan(&already); err != nil {
		return uuid.Nil, fmt.Errorf("cannot look up collaborators of dashboard %d: %w", dashboardID, err)
	}
	if already > 0 {
		return uuid.Nil, errValidation("user_uuid", "unique", "User already is a collaborator.")
	}
	id := uuid.Must(uuid.NewV7())
	if _, err := a.db.ExecContext(ctx, `INSERT INTO meta.dashboard_collaborators VALUES (?, ?, ?, ?, now(), now())`, id, dashboardID, userID, level); err != nil {
		return uuid.Nil, fmt.Errorf("cannot add collaborator %d to dashboard %d: %w", userID, dashboardID, err)
	}
	return id, nil
}

// DELETE /api/projects/{project_id}/dashboards/{dashboard_id}/collaborators/{user__uuid}/ (dashboard:write)
func (a *API) collaboratorRemove(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, d, err := a.collaboratorDashboard(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := a.mayEdit(ctx, d, pr, p.userID); err != nil {
		return err
	}
	if d.restrictionLevel == restrictionEveryoneEdits {
		return errValidation("", "invalid_input", "Cannot remove collaborators from a dashboard on the lowest restriction level.")
	}
	userUUID, err := uuid.Parse(c.Params("user__uuid"))
	if err != nil {
		return errRecordNotFound()
	}
	result, err := a.db.ExecContext(ctx, `DELETE FROM meta.dashboard_collaborators WHERE dashboard_id = ?
		AND user_id = (SELECT id FROM meta.users WHERE uuid = ?)`, d.id, userUUID)
	if err != nil {
		return fmt.Errorf("cannot remove a collaborator of dashboard %d: %w", d.id, err)
	}
	if n, _ := result.RowsAffected(); n == 0 {
		return errRecordNotFound()
	}
	return c.SendStatus(fiber.StatusNoContent)
}
