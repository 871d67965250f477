package admin

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

func (a *API) bindSharing() {
	a.handle(fiber.MethodGet, "/projects/:project_id/dashboards/:dashboard_id/sharing/", "sharing_configuration:read", a.sharingRetrieve)
	a.handle(fiber.MethodPatch, "/projects/:project_id/dashboards/:dashboard_id/sharing/", "sharing_configuration:write", a.sharingUpdate)
	a.handle(fiber.MethodPost, "/projects/:project_id/dashboards/:dashboard_id/sharing/refresh/", "sharing_configuration:write", a.sharingRefresh)
	// The public link: no key, on the management listener. /embedded/ is the same
	// dashboard for an <iframe> on another site, the only console page that may be framed.
	a.app.Get("/shared/:access_token", a.sharedDashboard)
	a.app.Get("/embedded/:access_token", a.sharedDashboard)
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

// GET /shared/{access_token}, GET /embedded/{access_token} (no key)
// A shared dashboard as JSON, with its tiles and their results, while its sharing is
// enabled, in the public view (sharedDashboardRecord). Public viewers see it as
// PostHog shows it to them: restricted, view only. A browser (Accept prefers HTML)
// gets the console's page instead, which asks again for the JSON and renders it read
// only; the page's URL is the credential, so it sends no Referer.
func (a *API) sharedDashboard(c *fiber.Ctx) error {
	if wantsHTML(c) {
		framers := "'none'"
		if strings.HasPrefix(c.Path(), "/embedded/") {
			framers = "*"
		}
		return serveShell(c, framers, "no-referrer")
	}
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
	r, err := a.record(ctx, d, dashboardAccess{privilege: restrictionEveryoneEdits}, nil)
	if err != nil {
		return err
	}
	return c.JSON(publicView(r))
}

// The public view of a shared dashboard. Anyone holding the link reads it, so it
// carries only what rendering the shared tiles needs, field by field (an allowlist:
// a field added to the records the API answers its users does not reach it): the
// dashboard's name, description, filters and variables; per tile its layouts, color,
// filter overrides, place (order, which is also its key) and error; the insight's
// name, description, query and result, or the text card's body. Nothing about people (no
// user objects: no e-mail, uuid, id or distinct id), nothing about other objects (an
// insight's dashboards and tiles elsewhere, tags), and no ids of its own.

// sharedDashboardRecord is a shared dashboard in its public view.
type sharedDashboardRecord struct {
	Name                      *string            `json:"name"`
	Description               string             `json:"description"`
	Filters                   rawJSON            `json:"filters"`
	Variables                 rawJSON            `json:"variables"`
	EffectiveRestrictionLevel int                `json:"effective_restriction_level"` // 37: restricted
	EffectivePrivilegeLevel   int                `json:"effective_privilege_level"`   // 21: view only
	UserAccessLevel           string             `json:"user_access_level"`           // viewer
	Tiles                     []sharedTileRecord `json:"tiles"`
}

// sharedTileRecord is a tile of a shared dashboard: an insight or a text card.
type sharedTileRecord struct {
	Insight          *sharedInsightRecord `json:"insight"`
	Text             *sharedTextRecord    `json:"text"`
	Layouts          rawJSON              `json:"layouts"`
	Color            *string              `json:"color"`
	FiltersOverrides rawJSON              `json:"filters_overrides"`
	Order            int                  `json:"order"`
	LastRefresh      *time.Time           `json:"last_refresh"`
	IsCached         bool                 `json:"is_cached"`
	Error            *tileError           `json:"error,omitempty"`
}

// sharedInsightRecord is the insight of a shared tile: what it shows and its result.
type sharedInsightRecord struct {
	Name        *string    `json:"name"`
	Description string     `json:"description"`
	Query       rawJSON    `json:"query"`
	Result      any        `json:"result"`
	LastRefresh *time.Time `json:"last_refresh"`
	IsCached    bool       `json:"is_cached"`
	QueryError  *string    `json:"query_error"`
}

// sharedTextRecord is the text card of a shared tile.
type sharedTextRecord struct {
	Body string `json:"body"`
}

// publicView is the public view of the full dashboard r.
func publicView(r dashboardRecord) sharedDashboardRecord {
	v := sharedDashboardRecord{
		Name: r.Name, Description: r.Description, Filters: r.Filters, Variables: r.Variables,
		EffectiveRestrictionLevel: restrictionOnlyEditors, EffectivePrivilegeLevel: restrictionEveryoneEdits, UserAccessLevel: "viewer",
		Tiles: make([]sharedTileRecord, 0, len(r.Tiles)),
	}
	for _, t := range r.Tiles {
		tile := sharedTileRecord{Layouts: t.Layouts, Color: t.Color, FiltersOverrides: t.FiltersOverrides, Order: t.Order,
			LastRefresh: t.LastRefresh, IsCached: t.IsCached, Error: t.Error}
		if i := t.Insight; i != nil {
			tile.Insight = &sharedInsightRecord{Name: i.Name, Description: i.Description, Query: i.Query, Result: i.Result,
				LastRefresh: i.LastRefresh, IsCached: i.IsCached, QueryError: i.QueryError}
		}
		if t.Text != nil {
			tile.Text = &sharedTextRecord{Body: t.Text.Body}
		}
		v.Tiles = append(v.Tiles, tile)
	}
	return v
}
