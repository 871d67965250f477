package admin

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hedge-analytics/hedge/internal/records"
)

func (a *API) bindDashboards() {
	a.handle(fiber.MethodGet, "/projects/:project_id/dashboards/", "dashboard:read", a.dashboardList)
	a.handle(fiber.MethodPost, "/projects/:project_id/dashboards/", "dashboard:write", a.dashboardCreate)
	a.handle(fiber.MethodPost, "/projects/:project_id/dashboards/create_from_template_json/", "dashboard:write", a.dashboardFromTemplateJSON)
	a.handle(fiber.MethodGet, "/projects/:project_id/dashboards/:id/", "dashboard:read", a.dashboardRetrieve)
	a.handle(fiber.MethodPatch, "/projects/:project_id/dashboards/:id/", "dashboard:write", a.dashboardUpdate)
	// Not allowed, as in PostHog: dashboards are deleted with PATCH {"deleted": true}.
	a.handle(fiber.MethodDelete, "/projects/:project_id/dashboards/:id/", "dashboard:write", a.deletedWithPatch)
	a.handle(fiber.MethodPatch, "/projects/:project_id/dashboards/:id/move_tile/", "dashboard:write", a.dashboardMoveTile)
}

// dashboardRow is a row of meta.dashboards, with whether it is shared.
type dashboardRow struct {
	id, team         int64
	name             *string
	description      string
	pinned, deleted  bool
	createdAt        time.Time
	createdBy        *int64
	creationMode     string
	restrictionLevel int
	filters          rawJSON
	variables        rawJSON
	tags             []string
	useTemplate      string
	shared           bool
}

const dashboardColumns = `SELECT d.id, d.team_id, d.name, d.description, d.pinned, d.deleted, d.created_at, d.created_by,
	d.creation_mode, d.restriction_level, d.filters, d.variables, d.tags, d.use_template, coalesce(s.enabled, false)
	FROM meta.dashboards d LEFT JOIN meta.sharing_configurations s ON s.dashboard_id = d.id`

func scanDashboard(row records.Scanner) (dashboardRow, error) {
	var d dashboardRow
	var tags string
	err := row.Scan(&d.id, &d.team, &d.name, &d.description, &d.pinned, &d.deleted, &d.createdAt, &d.createdBy,
		&d.creationMode, &d.restrictionLevel, &d.filters, &d.variables, &tags, &d.useTemplate, &d.shared)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal([]byte(tags), &d.tags); err != nil {
		return d, fmt.Errorf("cannot read the tags of dashboard %d: %w", d.id, err)
	}
	return d, nil
}

// loadDashboard reads a dashboard of the project; a deleted one only when deleted is
// set. Any other answers 404.
func loadDashboard(ctx context.Context, q querier, team, id int64, deleted bool) (dashboardRow, error) {
	d, err := scanDashboard(q.QueryRowContext(ctx, dashboardColumns+` WHERE d.team_id = ? AND d.id = ? AND d.deleted = ?`, team, id, deleted))
	if errors.Is(err, sql.ErrNoRows) {
		return d, errRecordNotFound()
	}
	if err != nil {
		return d, fmt.Errorf("cannot read dashboard %d: %w", id, err)
	}
	return d, nil
}

// dashboardOf resolves the project and the :id (or :dashboard_id) dashboard of the request.
func (a *API) dashboardOf(c *fiber.Ctx) (project, dashboardRow, error) {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return pr, dashboardRow{}, err
	}
	param := c.Params("id")
	if param == "" {
		param = c.Params("dashboard_id")
	}
	id, err := strconv.ParseInt(param, 10, 64)
	if err != nil {
		return pr, dashboardRow{}, errRecordNotFound()
	}
	d, err := loadDashboard(c.UserContext(), a.db, pr.id, id, false)
	return pr, d, err
}

// dashboardListItem carries the OpenAPI schema's dashboard list fields.
type dashboardListItem struct {
	ID                        int64       `json:"id"`
	Name                      *string     `json:"name"`
	Description               string      `json:"description"`
	Pinned                    bool        `json:"pinned"`
	CreatedAt                 time.Time   `json:"created_at"`
	CreatedBy                 *userRecord `json:"created_by"`
	IsShared                  bool        `json:"is_shared"`
	Deleted                   bool        `json:"deleted"`
	CreationMode              string      `json:"creation_mode"`
	Tags                      []string    `json:"tags"`
	RestrictionLevel          int         `json:"restriction_level"`
	EffectiveRestrictionLevel int         `json:"effective_restriction_level"`
	EffectivePrivilegeLevel   int         `json:"effective_privilege_level"`
	UserAccessLevel           string      `json:"user_access_level"`
	AccessControlVersion      string      `json:"access_control_version"`
}

// dashboardRecord is the full dashboard: the list fields and the OpenAPI schema's additions.
type dashboardRecord struct {
	dashboardListItem
	UseTemplate    string       `json:"use_template"`
	UseDashboard   *int64       `json:"use_dashboard"`
	DeleteInsights bool         `json:"delete_insights"`
	Filters        rawJSON      `json:"filters"`
	Variables      rawJSON      `json:"variables"`
	Tiles          []tileRecord `json:"tiles"`
}

func listItem(d dashboardRow, x dashboardAccess, users map[int64]userRecord) dashboardListItem {
	item := dashboardListItem{
		ID: d.id, Name: d.name, Description: d.description, Pinned: d.pinned, CreatedAt: d.createdAt.UTC(),
		IsShared: d.shared, Deleted: d.deleted, CreationMode: d.creationMode, Tags: d.tags,
		RestrictionLevel: d.restrictionLevel, EffectiveRestrictionLevel: d.restrictionLevel,
		EffectivePrivilegeLevel: x.privilege, UserAccessLevel: x.accessLevel(), AccessControlVersion: "v2",
	}
	if d.restrictionLevel > restrictionEveryoneEdits {
		item.AccessControlVersion = "v1"
	}
	if d.createdBy != nil {
		if u, ok := users[*d.createdBy]; ok {
			item.CreatedBy = &u
		}
	}
	return item
}

// usersByID reads the users with the given ids.
func (a *API) usersByID(ctx context.Context, ids []int64) (map[int64]userRecord, error) {
	users := map[int64]userRecord{}
	if len(ids) == 0 {
		return users, nil
	}
	rows, err := a.db.QueryContext(ctx, `SELECT `+userColumns+` FROM meta.users u WHERE list_contains(?::BIGINT[], u.id)`, ids)
	if err != nil {
		return nil, fmt.Errorf("cannot read users: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u userRecord
		if err := rows.Scan(u.dest()...); err != nil {
			return nil, fmt.Errorf("cannot read users: %w", err)
		}
		users[u.ID] = u
	}
	return users, rows.Err()
}

// GET /api/projects/{project_id}/dashboards/ (dashboard:read)
// The project's dashboards that are not deleted: pinned first, then by name in any
// case ("apple" before "Banana", as PostHog's Postgres collation sorts), unnamed last.
func (a *API) dashboardList(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	pg, dashboards, count, err := queryPage(c, a.db, listQuery[dashboardRow]{
		what:  fmt.Sprintf("dashboards of project %d", pr.id),
		count: `SELECT count(*) FROM meta.dashboards WHERE team_id = ? AND NOT deleted`,
		list:  dashboardColumns + ` WHERE d.team_id = ? AND NOT d.deleted ORDER BY d.pinned DESC, lower(d.name) NULLS LAST, d.name, d.id`,
		args:  []any{pr.id},
		scan:  scanDashboard,
	})
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	var creators []int64
	for _, d := range dashboards {
		if d.createdBy != nil {
			creators = append(creators, *d.createdBy)
		}
	}
	users, err := a.usersByID(ctx, creators)
	if err != nil {
		return err
	}
	levels, err := a.collaboratorLevels(ctx, pr.id, p.userID)
	if err != nil {
		return err
	}
	items := make([]dashboardListItem, 0, len(dashboards))
	for _, d := range dashboards {
		items = append(items, listItem(d, dashboardAccessFor(d, p.userID, pr.level, levels[d.id]), users))
	}
	return a.sendPage(c, pg, count, items)
}

// recordFor is the full dashboard as the user sees it, its tiles' results computed
// under its filters and then override (a request's filters_override, or nil).
func (a *API) recordFor(ctx context.Context, d dashboardRow, pr project, userID int64, override rawJSON) (dashboardRecord, error) {
	x, err := a.accessTo(ctx, d, pr, userID)
	if err != nil {
		return dashboardRecord{}, err
	}
	return a.record(ctx, d, x, override)
}

// record is the full dashboard for a caller with access x (a public viewer's, on a
// shared dashboard), its tiles' results computed under its filters and then override.
func (a *API) record(ctx context.Context, d dashboardRow, x dashboardAccess, override rawJSON) (dashboardRecord, error) {
	ids := []int64{}
	if d.createdBy != nil {
		ids = append(ids, *d.createdBy)
	}
	users, err := a.usersByID(ctx, ids)
	if err != nil {
		return dashboardRecord{}, err
	}
	tiles, err := a.tiles(ctx, d, override)
	if err != nil {
		return dashboardRecord{}, err
	}
	r := dashboardRecord{dashboardListItem: listItem(d, x, users), UseTemplate: d.useTemplate, Filters: d.filters, Variables: d.variables, Tiles: tiles}
	if len(r.Filters) == 0 {
		r.Filters = rawJSON("{}")
	}
	return r, nil
}

// GET /api/projects/{project_id}/dashboards/{id}/ (dashboard:read)
// The dashboard with its tiles, each insight with its result computed under the
// dashboard's filters, the tile's filters_overrides and ?filters_override= (a JSON
// object: date_from, date_to, properties), in that order (dashboard_filters.go);
// ?refresh=true computes every tile's afresh (refreshed).
func (a *API) dashboardRetrieve(c *fiber.Ctx) error {
	pr, d, err := a.dashboardOf(c)
	if err != nil {
		return err
	}
	override := rawJSON(c.Query("filters_override"))
	if _, err := mergeFilters("filters_override", override); err != nil {
		return err
	}
	ctx, err := refreshed(c)
	if err != nil {
		return err
	}
	// Decision: PostHog notes last_accessed_at on every retrieve; hedge neither notes
	// nor shows it. The write made concurrent reads of one dashboard fail on DuckDB's
	// optimistic concurrency ("Conflict on update"), and the API's contract has no such field.
	r, err := a.recordFor(ctx, d, pr, principalOf(c).userID, override)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// dashboardInput is the body of dashboard create and update: the OpenAPI schema's writable
// fields, and PostHog's tile operations.
type dashboardInput struct {
	Name             optional[string]     `json:"name"`
	Description      optional[string]     `json:"description"`
	Pinned           optional[bool]       `json:"pinned"`
	Deleted          optional[bool]       `json:"deleted"`
	UseTemplate      optional[string]     `json:"use_template"`
	UseDashboard     optional[int64]      `json:"use_dashboard"`
	DuplicateTiles   optional[bool]       `json:"duplicate_tiles"`
	DeleteInsights   optional[bool]       `json:"delete_insights"`
	Tags             optional[[]string]   `json:"tags"`
	RestrictionLevel optional[int]        `json:"restriction_level"`
	Filters          optional[rawJSON]    `json:"filters"`
	Variables        optional[rawJSON]    `json:"variables"`
	Tiles            optional[[]tileEdit] `json:"tiles"`
}

// validate checks the fields that were sent.
func (in *dashboardInput) validate() error {
	// DRF: description and pinned are not nullable (name is).
	if in.Description.Null {
		return errNull("description")
	}
	if in.Pinned.Null {
		return errNull("pinned")
	}
	if in.Name.Set && len([]rune(in.Name.Value)) > 400 {
		return errMaxLength("name", 400)
	}
	if in.RestrictionLevel.Set && in.RestrictionLevel.Value != restrictionEveryoneEdits && in.RestrictionLevel.Value != restrictionOnlyEditors {
		return errInvalidChoice("restriction_level", strconv.Itoa(in.RestrictionLevel.Value))
	}
	if in.Filters.Set && (in.Filters.Null || !isJSONObject(in.Filters.Value)) {
		return errValidation("filters", "invalid_input", "Filters must be a dictionary")
	}
	if in.Variables.Set && !in.Variables.Null && !isJSONObject(in.Variables.Value) {
		return errValidation("variables", "invalid_input", "Variables must be a dictionary")
	}
	return nil
}

func isJSONObject(j rawJSON) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(j, &m) == nil && m != nil
}

// normalizeTags trims, lower-cases and de-duplicates tags, keeping their order
// (PostHog's tagify).
func normalizeTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// POST /api/projects/{project_id}/dashboards/ (dashboard:write)
// A new dashboard: empty, from a built-in template (use_template), or a copy of
// another dashboard's tiles (use_dashboard; duplicate_tiles copies their insights too).
func (a *API) dashboardCreate(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	var in dashboardInput
	if err := bindValid(c, &in); err != nil {
		return err
	}
	if in.UseTemplate.Set && in.UseTemplate.Value != "" && in.UseDashboard.Set && !in.UseDashboard.Null {
		return errValidation("", "invalid_input", "`use_dashboard` and `use_template` cannot be used together")
	}
	ctx := c.UserContext()
	var template *dashboardTemplate
	mode := "default"
	if in.UseTemplate.Set && in.UseTemplate.Value != "" {
		t, ok, err := builtinTemplate(in.UseTemplate.Value)
		if err != nil {
			return err
		}
		if !ok {
			return errValidation("use_template", "invalid_input", "Invalid template provided: "+in.UseTemplate.Value)
		}
		template, mode = t, "template"
	}
	var source dashboardRow
	if in.UseDashboard.Set && !in.UseDashboard.Null {
		if source, err = loadDashboard(ctx, a.db, pr.id, in.UseDashboard.Value, false); err != nil {
			return errValidation("use_dashboard", "invalid_input", "Invalid value provided")
		}
		mode = "duplicate"
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin creating a dashboard: %w", err)
	}
	defer tx.Rollback()
	name := in.Name.Value
	if !in.Name.Set && template != nil {
		name = template.TemplateName
	}
	filters := "{}"
	if in.Filters.Set {
		filters = string(in.Filters.Value)
	} else if template != nil && len(template.DashboardFilters) > 0 {
		filters = string(template.DashboardFilters)
	}
	description := in.Description.Value
	if !in.Description.Set && template != nil {
		description = template.DashboardDescription
	}
	restriction := restrictionEveryoneEdits
	if in.RestrictionLevel.Set {
		restriction = in.RestrictionLevel.Value
	}
	var variables *string
	if in.Variables.Set && !in.Variables.Null {
		v := string(in.Variables.Value)
		variables = &v
	}
	var useTemplate string
	if template != nil {
		useTemplate = in.UseTemplate.Value
	}
	id, err := insertDashboard(ctx, tx, pr.id, p.userID, newDashboard{
		name: name, description: description, pinned: in.Pinned.Value, creationMode: mode, restrictionLevel: restriction,
		filters: filters, variables: variables, tags: normalizeTags(in.Tags.Value), useTemplate: useTemplate,
	})
	if err != nil {
		return err
	}
	switch {
	case template != nil:
		err = addTemplateTiles(ctx, tx, pr.id, id, p.userID, template)
	case mode == "duplicate":
		err = copyTiles(ctx, tx, pr.id, source.id, id, p.userID, in.DuplicateTiles.Value)
	}
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit a new dashboard: %w", err)
	}
	return a.sendDashboard(c, pr, id, fiber.StatusCreated)
}

// sendDashboard answers with the full dashboard id, as the caller sees it.
func (a *API) sendDashboard(c *fiber.Ctx, pr project, id int64, status int) error {
	ctx := c.UserContext()
	d, err := loadDashboard(ctx, a.db, pr.id, id, false)
	if err != nil {
		d, err = loadDashboard(ctx, a.db, pr.id, id, true) // just soft-deleted
		if err != nil {
			return err
		}
	}
	r, err := a.recordFor(ctx, d, pr, principalOf(c).userID, nil)
	if err != nil {
		return err
	}
	return c.Status(status).JSON(r)
}

type newDashboard struct {
	name, description, creationMode, filters, useTemplate string
	pinned                                                bool
	restrictionLevel                                      int
	variables                                             *string
	tags                                                  []string
}

func insertDashboard(ctx context.Context, q querier, team, userID int64, d newDashboard) (int64, error) {
	var id int64
	var name *string
	if d.name != "" {
		name = &d.name
	}
	err := q.QueryRowContext(ctx, `INSERT INTO meta.dashboards (team_id, name, description, pinned, created_at, created_by,
		creation_mode, restriction_level, filters, variables, tags, use_template)
		VALUES (?, ?, ?, ?, now(), ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		team, name, d.description, d.pinned, userID, d.creationMode, d.restrictionLevel, d.filters, d.variables, mustJSON(d.tags), d.useTemplate).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("cannot create a dashboard in project %d: %w", team, err)
	}
	return id, nil
}

// POST /api/projects/{project_id}/dashboards/create_from_template_json/ (dashboard:write)
// A dashboard from a template in the body ({"template": {...}}), checked against
// schemas/dashboard_template_schema.json; 200 with the dashboard, as PostHog answers.
func (a *API) dashboardFromTemplateJSON(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	var body struct {
		Template json.RawMessage `json:"template"`
	}
	if err := bindBody(c, &body); err != nil {
		return err
	}
	if len(body.Template) == 0 || string(body.Template) == "null" {
		return errRequired("template")
	}
	template, err := parseTemplate(body.Template, "template")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin creating a dashboard: %w", err)
	}
	defer tx.Rollback()
	id, err := insertDashboard(ctx, tx, pr.id, p.userID, newDashboard{
		name: template.TemplateName, description: template.DashboardDescription, creationMode: "template",
		restrictionLevel: restrictionEveryoneEdits, filters: string(template.DashboardFilters), tags: normalizeTags(template.Tags),
	})
	if err != nil {
		return err
	}
	if err := addTemplateTiles(ctx, tx, pr.id, id, p.userID, template); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit a dashboard from a template: %w", err)
	}
	return a.sendDashboard(c, pr, id, fiber.StatusOK)
}

// PATCH /api/projects/{project_id}/dashboards/{id}/ (dashboard:write)
// Changes the fields sent. {"deleted": true} soft-deletes the dashboard and its tiles
// (and, with delete_insights, the insights that are on no other dashboard); a body of
// exactly {"deleted": false} restores a deleted one.
func (a *API) dashboardUpdate(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil {
		return errRecordNotFound()
	}
	ctx := c.UserContext()
	if isExactlyUndelete(c.Body()) {
		if d, err := loadDashboard(ctx, a.db, pr.id, id, true); err == nil {
			return a.undelete(c, pr, d)
		}
	}
	d, err := loadDashboard(ctx, a.db, pr.id, id, false)
	if err != nil {
		return err
	}
	// Edit rights first, then the body, as DRF checks object permissions before the
	// serializer: a viewer gets 403 whatever it sends.
	x, err := a.accessTo(ctx, d, pr, p.userID)
	if err != nil {
		return err
	}
	if !x.canEdit {
		return errNoEditRights
	}
	var in dashboardInput
	if err := bindValid(c, &in); err != nil {
		return err
	}
	if in.RestrictionLevel.Set && in.RestrictionLevel.Value != d.restrictionLevel && !x.canRestrict {
		return errPermissionDenied("Only the dashboard owner and project admins have the restriction rights required to change the dashboard's restriction level.")
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin updating dashboard %d: %w", d.id, err)
	}
	defer tx.Rollback()
	sets := columnSets{}
	sets.setName(in.Name)
	if in.Description.Set {
		sets["description"] = in.Description.Value
	}
	if in.Pinned.Set {
		sets["pinned"] = in.Pinned.Value
	}
	if in.Tags.Set {
		sets["tags"] = mustJSON(normalizeTags(in.Tags.Value))
	}
	if in.RestrictionLevel.Set {
		sets["restriction_level"] = in.RestrictionLevel.Value
	}
	if in.Filters.Set {
		sets["filters"] = string(in.Filters.Value)
	}
	sets.setJSON("variables", in.Variables)
	if err := updateColumns(ctx, tx, "meta.dashboards", d.id, sets); err != nil {
		return err
	}
	if in.Tiles.Set {
		if err := a.editTiles(ctx, tx, pr, d.id, p.userID, in.Tiles.Value); err != nil {
			return err
		}
	}
	if in.Deleted.Set && in.Deleted.Value {
		if err := softDeleteDashboard(ctx, tx, d.id, in.DeleteInsights.Value); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit dashboard %d: %w", d.id, err)
	}
	return a.sendDashboard(c, pr, d.id, fiber.StatusOK)
}

// isExactlyUndelete reports a body of exactly {"deleted": false}: the only update a
// deleted dashboard takes (PostHog's rule).
func isExactlyUndelete(body []byte) bool {
	var fields map[string]json.RawMessage
	return json.Unmarshal(body, &fields) == nil && len(fields) == 1 && string(fields["deleted"]) == "false"
}

// columnSets are the columns an update sets, by name: names come from this package,
// values are bound by updateColumns.
type columnSets map[string]any

// setName sets name if it was sent: a null or empty name is stored as NULL, the
// record's "unnamed" state in PostHog.
func (s columnSets) setName(name optional[string]) {
	switch {
	case !name.Set:
	case name.Null || name.Value == "":
		s["name"] = nil
	default:
		s["name"] = name.Value
	}
}

// setJSON sets a JSON text column if it was sent; null stores NULL.
func (s columnSets) setJSON(column string, v optional[rawJSON]) {
	switch {
	case !v.Set:
	case v.Null:
		s[column] = nil
	default:
		s[column] = string(v.Value)
	}
}

// updateColumns sets the columns of a row.
func updateColumns(ctx context.Context, q querier, table string, id int64, sets columnSets) error {
	if len(sets) == 0 {
		return nil
	}
	columns := make([]string, 0, len(sets))
	for column := range sets {
		columns = append(columns, column)
	}
	slices.Sort(columns)
	args := make([]any, 0, len(sets)+1)
	assignments := make([]string, 0, len(sets))
	for _, column := range columns {
		assignments = append(assignments, column+" = ?")
		args = append(args, sets[column])
	}
	if _, err := q.ExecContext(ctx, `UPDATE `+table+` SET `+strings.Join(assignments, ", ")+` WHERE id = ?`, append(args, id)...); err != nil {
		return fmt.Errorf("cannot update %s %d: %w", table, id, err)
	}
	return nil
}

// softDeleteDashboard marks the dashboard and its tiles deleted, and with
// deleteInsights the insights that are on no other live dashboard.
func softDeleteDashboard(ctx context.Context, tx *sql.Tx, id int64, deleteInsights bool) error {
	if deleteInsights {
		if _, err := tx.ExecContext(ctx, `UPDATE meta.insights SET deleted = true WHERE id IN (
			SELECT t.insight_id FROM meta.dashboard_tiles t WHERE t.dashboard_id = ? AND t.insight_id IS NOT NULL AND NOT t.deleted
			AND NOT EXISTS (SELECT 1 FROM meta.dashboard_tiles o JOIN meta.dashboards od ON od.id = o.dashboard_id
				WHERE o.insight_id = t.insight_id AND o.dashboard_id <> t.dashboard_id AND NOT o.deleted AND NOT od.deleted))`, id); err != nil {
			return fmt.Errorf("cannot delete the insights of dashboard %d: %w", id, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta.dashboard_tiles SET deleted = true WHERE dashboard_id = ?`, id); err != nil {
		return fmt.Errorf("cannot delete the tiles of dashboard %d: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta.dashboards SET deleted = true WHERE id = ?`, id); err != nil {
		return fmt.Errorf("cannot delete dashboard %d: %w", id, err)
	}
	return nil
}

// undelete restores a deleted dashboard, its tiles and their deleted insights: those
// the caller may edit (mayEditContent), as restoring an insight is editing it. An
// insight also on a restricted dashboard the caller may not edit stays deleted.
func (a *API) undelete(c *fiber.Ctx, pr project, d dashboardRow) error {
	ctx := c.UserContext()
	userID := principalOf(c).userID
	if err := a.mayEdit(ctx, d, pr, userID); err != nil {
		return err
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin restoring dashboard %d: %w", d.id, err)
	}
	defer tx.Rollback()
	for _, statement := range []string{
		`UPDATE meta.dashboards SET deleted = false WHERE id = ?`,
		`UPDATE meta.dashboard_tiles SET deleted = false WHERE dashboard_id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, statement, d.id); err != nil {
			return fmt.Errorf("cannot restore dashboard %d: %w", d.id, err)
		}
	}
	deleted, err := records.All(ctx, tx, fmt.Sprintf("deleted insights of dashboard %d", d.id), scanID,
		`SELECT id FROM meta.insights WHERE deleted AND id IN (SELECT insight_id FROM meta.dashboard_tiles WHERE dashboard_id = ?) ORDER BY id`, d.id)
	if err != nil {
		return err
	}
	for _, id := range deleted {
		ok, err := a.mayEditContent(ctx, tx, pr, userID, insightContent, id)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE meta.insights SET deleted = false WHERE id = ?`, id); err != nil {
			return fmt.Errorf("cannot restore insight %d: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit restoring dashboard %d: %w", d.id, err)
	}
	return a.sendDashboard(c, pr, d.id, fiber.StatusOK)
}

// PATCH /api/projects/{project_id}/dashboards/{id}/move_tile/ (dashboard:write)
// Moves {"tile": {"id": N}} to {"toDashboard": M} of the same project, keeping the tile's
// id; 200 with no body, as PostHog.
func (a *API) dashboardMoveTile(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, d, err := a.dashboardOf(c)
	if err != nil {
		return err
	}
	var body struct {
		Tile *struct {
			ID *int64 `json:"id"`
		} `json:"tile"`
		ToDashboard *int64 `json:"toDashboard"`
	}
	if err := bindBody(c, &body); err != nil {
		return err
	}
	if body.Tile == nil || body.Tile.ID == nil {
		return errValidation("tile", "required", "A tile with an id is required.")
	}
	if body.ToDashboard == nil {
		return errRequired("toDashboard")
	}
	ctx := c.UserContext()
	if err := a.mayEdit(ctx, d, pr, p.userID); err != nil {
		return err
	}
	target, err := loadDashboard(ctx, a.db, pr.id, *body.ToDashboard, false)
	if err != nil {
		return errNotFound("Dashboard not found.")
	}
	if err := a.mayEdit(ctx, target, pr, p.userID); err != nil {
		return err
	}
	result, err := a.db.ExecContext(ctx, `UPDATE meta.dashboard_tiles SET dashboard_id = ? WHERE id = ? AND dashboard_id = ? AND NOT deleted`,
		target.id, *body.Tile.ID, d.id)
	if err != nil {
		return fmt.Errorf("cannot move tile %d: %w", *body.Tile.ID, err)
	}
	if n, _ := result.RowsAffected(); n == 0 {
		return errValidation("tile", "invalid_input", fmt.Sprintf("Tile %d is not on dashboard %d.", *body.Tile.ID, d.id))
	}
	c.Status(fiber.StatusOK)
	return nil
}
