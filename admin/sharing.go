package admin

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

func (a *API) bindSharing() {
	a.handle(fiber.MethodGet, "/projects/:project_id/dashboards/:dashboard_id/sharing/", "sharing_configuration:read", a.sharingRetrieve)
	a.handle(fiber.MethodPatch, "/projects/:project_id/dashboards/:dashboard_id/sharing/", "sharing_configuration:write", a.sharingUpdate)
	a.handle(fiber.MethodPost, "/projects/:project_id/dashboards/:dashboard_id/sharing/refresh/", "sharing_configuration:write", a.sharingRefresh)
	// The public link: no key, on the management listener.
	a.app.Get("/shared/:access_token", a.sharedDashboard)
}

// sharingRecord is a dashboard's sharing configuration.
type sharingRecord struct {
	CreatedAt   time.Time `json:"created_at"`
	Enabled     bool      `json:"enabled"`
	AccessToken string    `json:"access_token"`
}

// newAccessToken is PostHog's secrets.token_urlsafe(22): 30 url-safe characters.
func newAccessToken() string {
	b := make([]byte, 22)
	rand.Read(b) // never returns an error: crypto/rand panics instead
	return base64.RawURLEncoding.EncodeToString(b)
}

// sharing returns the dashboard's sharing configuration, made (disabled, with a token)
// the first time it is asked for. Decision: PostHog answers an unsaved configuration
// with a new token each time until the first change; hedge keeps the first, so the
// link a user sees is the link they will share.
func (a *API) sharing(ctx context.Context, d dashboardRow) (sharingRecord, error) {
	r, err := a.readSharing(ctx, d.id)
	if !errors.Is(err, sql.ErrNoRows) {
		return r, err
	}
	// Concurrent first reads: the first one in makes it, the others answer it.
	dashboardRowsMu.Lock()
	defer dashboardRowsMu.Unlock()
	if r, err := a.readSharing(ctx, d.id); !errors.Is(err, sql.ErrNoRows) {
		return r, err
	}
	if _, err := a.db.ExecContext(ctx, `INSERT INTO meta.sharing_configurations (dashboard_id, team_id, enabled, access_token, created_at)
		VALUES (?, ?, false, ?, now())`, d.id, d.team, newAccessToken()); err != nil {
		return r, fmt.Errorf("cannot create the sharing configuration of dashboard %d: %w", d.id, err)
	}
	return a.readSharing(ctx, d.id)
}

// dashboardRowsMu serializes the check-then-insert of the rows a dashboard has at most
// one of: its sharing configuration, a collaborator record per user. DuckDB finds a
// duplicate key only when the second transaction commits, possibly before the first
// one's row is visible to a re-read, so concurrent first requests would fail on the
// key (ON CONFLICT DO NOTHING included) instead of finding the row. One process owns
// the database file, so a lock in the process is enough.
var dashboardRowsMu sync.Mutex

// readSharing reads the dashboard's sharing configuration; sql.ErrNoRows when it has none yet.
func (a *API) readSharing(ctx context.Context, dashboardID int64) (sharingRecord, error) {
	var r sharingRecord
	err := a.db.QueryRowContext(ctx, `SELECT created_at, enabled, access_token FROM meta.sharing_configurations WHERE dashboard_id = ?`, dashboardID).
		Scan(&r.CreatedAt, &r.Enabled, &r.AccessToken)
	if errors.Is(err, sql.ErrNoRows) {
		return r, err
	}
	if err != nil {
		return r, fmt.Errorf("cannot read the sharing configuration of dashboard %d: %w", dashboardID, err)
	}
	r.CreatedAt = r.CreatedAt.UTC()
	return r, nil
}

// GET /api/projects/{project_id}/dashboards/{dashboard_id}/sharing/ (sharing_configuration:read)
func (a *API) sharingRetrieve(c *fiber.Ctx) error {
	_, d, err := a.dashboardOf(c)
	if err != nil {
		return err
	}
	r, err := a.sharing(c.UserContext(), d)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// PATCH /api/projects/{project_id}/dashboards/{dashboard_id}/sharing/ (sharing_configuration:write)
// {"enabled": true} opens the dashboard's public link, false closes it.
func (a *API) sharingUpdate(c *fiber.Ctx) error {
	d, err := a.editableDashboard(c)
	if err != nil {
		return err
	}
	var body struct {
		Enabled optional[bool] `json:"enabled"`
	}
	if err := bindBody(c, &body); err != nil {
		return err
	}
	ctx := c.UserContext()
	if _, err := a.sharing(ctx, d); err != nil {
		return err
	}
	if body.Enabled.Set && !body.Enabled.Null {
		if _, err := a.db.ExecContext(ctx, `UPDATE meta.sharing_configurations SET enabled = ? WHERE dashboard_id = ?`, body.Enabled.Value, d.id); err != nil {
			return fmt.Errorf("cannot change the sharing of dashboard %d: %w", d.id, err)
		}
	}
	r, err := a.sharing(ctx, d)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// POST /api/projects/{project_id}/dashboards/{dashboard_id}/sharing/refresh/ (sharing_configuration:write)
// A new access token: the old public link stops working at once.
func (a *API) sharingRefresh(c *fiber.Ctx) error {
	d, err := a.editableDashboard(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if _, err := a.sharing(ctx, d); err != nil {
		return err
	}
	if _, err := a.db.ExecContext(ctx, `UPDATE meta.sharing_configurations SET access_token = ? WHERE dashboard_id = ?`, newAccessToken(), d.id); err != nil {
		return fmt.Errorf("cannot rotate the access token of dashboard %d: %w", d.id, err)
	}
	r, err := a.sharing(ctx, d)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// GET /shared/{access_token} (no key)
// A shared dashboard as JSON, with its tiles and their results, while its sharing is
// enabled. Public viewers see it as PostHog shows it to them: restricted, view only.
func (a *API) sharedDashboard(c *fiber.Ctx) error {
	ctx := c.UserContext()
	var team, id int64
	err := a.db.QueryRowContext(ctx, `SELECT team_id, dashboard_id FROM meta.sharing_configurations WHERE access_token = ? AND enabled`,
		c.Params("access_token")).Scan(&team, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return errRecordNotFound()
	}
	if err != nil {
		return fmt.Errorf("cannot look up a shared dashboard: %w", err)
	}
	d, err := loadDashboard(ctx, a.db, team, id, false)
	if err != nil {
		return err
	}
	r, err := a.record(ctx, d, dashboardAccess{privilege: restrictionEveryoneEdits})
	if err != nil {
		return err
	}
	r.EffectiveRestrictionLevel, r.UserAccessLevel = restrictionOnlyEditors, "viewer"
	return c.JSON(r)
}
