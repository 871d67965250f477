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

func (a *API) bindInsights() {
	a.handle(fiber.MethodGet, "/projects/:project_id/insights/", "insight:read", a.insightList)
	a.handle(fiber.MethodPost, "/projects/:project_id/insights/", "insight:write", a.insightCreate)
	a.handle(fiber.MethodGet, "/projects/:project_id/insights/:id/", "insight:read", a.insightRetrieve)
	a.handle(fiber.MethodPatch, "/projects/:project_id/insights/:id/", "insight:write", a.insightUpdate)
}

// insightRecord is an insight in PostHog's shape, with its computed result.
type insightRecord struct {
	ID             int64         `json:"id"`
	ShortID        string        `json:"short_id"`
	Name           *string       `json:"name"`
	Description    string        `json:"description"`
	Query          rawJSON       `json:"query"`
	Result         any           `json:"result"`
	LastRefresh    *time.Time    `json:"last_refresh"`
	IsCached       bool          `json:"is_cached"`
	QueryError     *string       `json:"query_error"` // why the query could not run, if it could not
	CreatedAt      time.Time     `json:"created_at"`
	CreatedBy      *userRecord   `json:"created_by"`
	LastModifiedAt time.Time     `json:"last_modified_at"`
	LastModifiedBy *userRecord   `json:"last_modified_by"`
	Deleted        bool          `json:"deleted"`
	Tags           []string      `json:"tags"`
	Dashboards     []int64       `json:"dashboards"`
	DashboardTiles []insightTile `json:"dashboard_tiles"`
}

// insightAccessRecord is an insight as the insight endpoints answer it: with what the
// caller may do with it, PostHog's levels. Its effective restriction is the highest of
// its live dashboards' (21 on none); its privilege is 37 when the caller may edit it
// (mayEditContent's rule: edit rights on every one of those dashboards), else 21.
type insightAccessRecord struct {
	insightRecord
	EffectiveRestrictionLevel int `json:"effective_restriction_level"`
	EffectivePrivilegeLevel   int `json:"effective_privilege_level"`
}

// withAccess answers insights with the user's levels on each. It reads the project's
// restricted dashboards and the user's collaborations once, whatever the number of
// insights.
func (a *API) withAccess(ctx context.Context, pr project, userID int64, insights ...insightRecord) ([]insightAccessRecord, error) {
	out := make([]insightAccessRecord, len(insights))
	for i, r := range insights {
		out[i] = insightAccessRecord{r, restrictionEveryoneEdits, restrictionOnlyEditors}
	}
	restricted, err := records.All(ctx, a.db, fmt.Sprintf("restricted dashboards of project %d", pr.id), scanDashboard,
		dashboardColumns+` WHERE d.team_id = ? AND NOT d.deleted AND d.restriction_level >= ?`, pr.id, restrictionOnlyEditors)
	if err != nil || len(restricted) == 0 {
		return out, err
	}
	levels, err := a.collaboratorLevels(ctx, pr.id, userID)
	if err != nil {
		return nil, err
	}
	for i := range out {
		for _, d := range restricted {
			if !slices.Contains(out[i].Dashboards, d.id) {
				continue
			}
			out[i].EffectiveRestrictionLevel = max(out[i].EffectiveRestrictionLevel, d.restrictionLevel)
			if !dashboardAccessFor(d, userID, pr.level, levels[d.id]).canEdit {
				out[i].EffectivePrivilegeLevel = restrictionEveryoneEdits
			}
		}
	}
	return out, nil
}

// sendInsight answers one insight with the caller's levels on it, with status.
func (a *API) sendInsight(c *fiber.Ctx, pr project, status int, r insightRecord) error {
	out, err := a.withAccess(c.UserContext(), pr, principalOf(c).userID, r)
	if err != nil {
		return err
	}
	return c.Status(status).JSON(out[0])
}

type insightTile struct {
	ID          int64 `json:"id"`
	DashboardID int64 `json:"dashboard_id"`
}

var errInsightNotFound = errRecordNotFound()

// insight reads an insight of the project that is not deleted, its result computed
// (or taken from the cache) when withResult is set.
func (a *API) insight(ctx context.Context, team, id int64, withResult bool) (insightRecord, error) {
	var r insightRecord
	var tags string
	var createdBy, modifiedBy *int64
	err := a.db.QueryRowContext(ctx, `SELECT id, short_id, name, description, query, deleted, tags, created_at, created_by,
		last_modified_at, last_modified_by FROM meta.insights WHERE team_id = ? AND id = ? AND NOT deleted`, team, id).
		Scan(&r.ID, &r.ShortID, &r.Name, &r.Description, &r.Query, &r.Deleted, &tags, &r.CreatedAt, &createdBy, &r.LastModifiedAt, &modifiedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return r, errInsightNotFound
	}
	if err != nil {
		return r, fmt.Errorf("cannot read insight %d: %w", id, err)
	}
	r.CreatedAt, r.LastModifiedAt = r.CreatedAt.UTC(), r.LastModifiedAt.UTC()
	if err := json.Unmarshal([]byte(tags), &r.Tags); err != nil {
		return r, fmt.Errorf("cannot read the tags of insight %d: %w", id, err)
	}
	var ids []int64
	for _, u := range []*int64{createdBy, modifiedBy} {
		if u != nil {
			ids = append(ids, *u)
		}
	}
	users, err := a.usersByID(ctx, ids)
	if err != nil {
		return r, err
	}
	r.CreatedBy, r.LastModifiedBy = userOf(users, createdBy), userOf(users, modifiedBy)
	rows, err := a.db.QueryContext(ctx, `SELECT t.id, t.dashboard_id FROM meta.dashboard_tiles t JOIN meta.dashboards d ON d.id = t.dashboard_id
		WHERE t.insight_id = ? AND NOT t.deleted AND NOT d.deleted ORDER BY t.dashboard_id, t.id`, id)
	if err != nil {
		return r, fmt.Errorf("cannot read the tiles of insight %d: %w", id, err)
	}
	defer rows.Close()
	r.Dashboards, r.DashboardTiles = []int64{}, []insightTile{}
	for rows.Next() {
		var t insightTile
		if err := rows.Scan(&t.ID, &t.DashboardID); err != nil {
			return r, fmt.Errorf("cannot read the tiles of insight %d: %w", id, err)
		}
		r.DashboardTiles = append(r.DashboardTiles, t)
		if !slices.Contains(r.Dashboards, t.DashboardID) {
			r.Dashboards = append(r.Dashboards, t.DashboardID)
		}
	}
	if err := rows.Err(); err != nil {
		return r, fmt.Errorf("cannot read the tiles of insight %d: %w", id, err)
	}
	if withResult {
		if _, err := a.computeResult(ctx, team, &r, r.Query, nil); err != nil {
			return r, err
		}
	}
	return r, nil
}

// computeResult sets r's result to that of query (r's own, or as a dashboard's filters
// change it), or its query_error to why it cannot be computed: a refusal of the query,
// or queryErr, a refusal met while making query; refused is that refusal. Other errors
// are returned.
func (a *API) computeResult(ctx context.Context, team int64, r *insightRecord, query rawJSON, queryErr error) (refused *Error, err error) {
	if queryErr == nil && len(query) == 0 {
		return nil, nil
	}
	result, refreshed, cached, err := any(nil), time.Time{}, false, queryErr
	if err == nil {
		result, refreshed, cached, err = a.insightResult(ctx, team, query)
	}
	switch {
	case errors.As(err, &refused):
		r.QueryError = &refused.Detail
		return refused, nil
	case err != nil:
		return nil, err
	}
	r.Result, r.LastRefresh, r.IsCached = result, &refreshed, cached
	return nil, nil
}

// insightInput is the body of insight create and update.
type insightInput struct {
	Name        optional[string]   `json:"name"`
	Description optional[string]   `json:"description"`
	Query       optional[rawJSON]  `json:"query"`
	Tags        optional[[]string] `json:"tags"`
	Deleted     optional[bool]     `json:"deleted"`
	Dashboards  optional[[]int64]  `json:"dashboards"`
}

// validate checks the query a body sends, if any.
func (in *insightInput) validate() error {
	if in.Query.Set && !in.Query.Null {
		return checkInsightQuery(in.Query.Value)
	}
	return nil
}

// insightKinds are the queries insights compute, bare or in PostHog's InsightVizNode
// or DataTableNode. A web analytics card saved from the web screen is its
// WebOverviewQuery or WebStatsTableQuery, as PostHog's "Add to dashboard" saves it.
var insightKinds = []string{"TrendsQuery", "FunnelsQuery", "StickinessQuery", "RetentionQuery", "LifecycleQuery", "PathsQuery", "EventsQuery",
	"WebOverviewQuery", "WebStatsTableQuery"}

// checkInsightQuery refuses a query that is not one of insightKinds.
func checkInsightQuery(q rawJSON) error {
	if kind, _, err := queryKind(json.RawMessage(q)); err != nil || !slices.Contains(insightKinds, kind) {
		return errValidation("query", "invalid_input", "An insight's query must be one of "+strings.Join(insightKinds, ", ")+".")
	}
	return nil
}

type newInsight struct {
	name, description, query string
	tags                     []string
}

func insertInsight(ctx context.Context, q querier, team, userID int64, in newInsight) (int64, error) {
	var name, query *string
	if in.name != "" {
		name = &in.name
	}
	if in.query != "" {
		query = &in.query
	}
	if in.tags == nil {
		in.tags = []string{}
	}
	var id int64
	err := q.QueryRowContext(ctx, `INSERT INTO meta.insights (short_id, team_id, name, description, query, tags,
		created_at, created_by, last_modified_at, last_modified_by) VALUES (?, ?, ?, ?, ?, ?, now(), ?, now(), ?) RETURNING id`,
		randomToken(6, 8), team, name, in.description, query, mustJSON(in.tags), userID, userID).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("cannot create an insight in project %d: %w", team, err)
	}
	return id, nil
}

// copyInsight copies an insight, its name marked " (Copy)", for a deep-copied tile.
func copyInsight(ctx context.Context, tx *sql.Tx, team, id, userID int64) (*int64, error) {
	var copied int64
	err := tx.QueryRowContext(ctx, `INSERT INTO meta.insights (short_id, team_id, name, description, query, tags,
		created_at, created_by, last_modified_at, last_modified_by)
		SELECT ?, team_id, coalesce(name, '') || ' (Copy)', description, query, tags, now(), ?, now(), ?
		FROM meta.insights WHERE team_id = ? AND id = ? RETURNING id`, randomToken(6, 8), userID, userID, team, id).Scan(&copied)
	if err != nil {
		return nil, fmt.Errorf("cannot copy insight %d: %w", id, err)
	}
	return &copied, nil
}

// errInsightNotEditable refuses to edit an insight on a dashboard the caller may not
// edit (mayEditContent), in PostHog's words.
var errInsightNotEditable = errPermissionDenied("This insight is on a dashboard that can only be edited by its owner, " +
	"team members invited to editing the dashboard, and project admins.")

// placeOnDashboards makes ids the live dashboards the insight is on (current are those
// it is on now): a tile on each one of ids that lacks one, its tiles taken off the
// others. The caller must be able to edit every dashboard it adds the insight to or
// takes it off (403 naming the dashboard). On an update the caller may already edit
// every dashboard the insight is on (mayEditContent), so taking it off one is refused
// only if a collaboration went away meanwhile.
func (a *API) placeOnDashboards(ctx context.Context, tx *sql.Tx, pr project, userID, insightID int64, current, ids []int64) error {
	levels, err := a.collaboratorLevels(ctx, pr.id, userID)
	if err != nil {
		return err
	}
	mayEdit := func(d dashboardRow) bool { return dashboardAccessFor(d, userID, pr.level, levels[d.id]).canEdit }
	for i, id := range ids {
		d, err := loadDashboard(ctx, tx, pr.id, id, false)
		if isNotFound(err) {
			return errValidation(fmt.Sprintf("dashboards__%d", i), "invalid_input", fmt.Sprintf("Dashboard %d does not exist in this project.", id))
		}
		if err != nil {
			return err
		}
		var live int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM meta.dashboard_tiles WHERE dashboard_id = ? AND insight_id = ? AND NOT deleted`,
			id, insightID).Scan(&live); err != nil {
			return fmt.Errorf("cannot read the tiles of dashboard %d: %w", id, err)
		}
		if live > 0 {
			continue
		}
		if !mayEdit(d) {
			return errPermissionDenied(fmt.Sprintf("You don't have permission to add insights to dashboard: %d", id))
		}
		if err := insertTile(ctx, tx, id, &insightID, nil, "{}", nil, "{}"); err != nil {
			return err
		}
	}
	var removed []int64
	for _, id := range current {
		if slices.Contains(ids, id) {
			continue
		}
		d, err := loadDashboard(ctx, tx, pr.id, id, false)
		if isNotFound(err) {
			continue // deleted meanwhile: its tiles are deleted with it
		}
		if err != nil {
			return err
		}
		if !mayEdit(d) {
			return errPermissionDenied(fmt.Sprintf("You don't have permission to remove insights from dashboard: %d", id))
		}
		removed = append(removed, id)
	}
	if len(removed) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta.dashboard_tiles SET deleted = true
		WHERE insight_id = ? AND NOT deleted AND list_contains(?::BIGINT[], dashboard_id)`, insightID, removed); err != nil {
		return fmt.Errorf("cannot take insight %d off dashboards: %w", insightID, err)
	}
	return nil
}

// GET /api/projects/{project_id}/insights/ (insight:read)
// The project's insights that are not deleted, last modified first; ?search= matches
// the name, ?short_id= finds one. Results are computed on retrieve only.
func (a *API) insightList(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	where := ` WHERE team_id = ? AND NOT deleted`
	args := []any{pr.id}
	if search := c.Query("search"); search != "" {
		where, args = where+` AND contains(lower(coalesce(name, '')), lower(?))`, append(args, search)
	}
	if short := c.Query("short_id"); short != "" {
		where, args = where+` AND short_id = ?`, append(args, short)
	}
	pg, ids, count, err := queryPage(c, a.db, listQuery[int64]{
		what:  fmt.Sprintf("insights of project %d", pr.id),
		count: `SELECT count(*) FROM meta.insights` + where,
		list:  `SELECT id FROM meta.insights` + where + ` ORDER BY last_modified_at DESC, id DESC`,
		args:  args,
		scan:  scanID,
	})
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	insights := make([]insightRecord, 0, len(ids))
	for _, id := range ids {
		r, err := a.insight(ctx, pr.id, id, false)
		if err != nil {
			return err
		}
		insights = append(insights, r)
	}
	withAccess, err := a.withAccess(ctx, pr, principalOf(c).userID, insights...)
	if err != nil {
		return err
	}
	return a.sendPage(c, pg, count, withAccess)
}

// POST /api/projects/{project_id}/insights/ (insight:write)
// A new insight; dashboards puts it on those dashboards.
func (a *API) insightCreate(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	var in insightInput
	if err := bindValid(c, &in); err != nil {
		return err
	}
	ctx := c.UserContext()
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin creating an insight: %w", err)
	}
	defer tx.Rollback()
	id, err := insertInsight(ctx, tx, pr.id, p.userID, newInsight{name: in.Name.Value, description: in.Description.Value,
		query: string(in.Query.Value), tags: normalizeTags(in.Tags.Value)})
	if err != nil {
		return err
	}
	if in.Dashboards.Set {
		if err := a.placeOnDashboards(ctx, tx, pr, p.userID, id, nil, in.Dashboards.Value); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit a new insight: %w", err)
	}
	r, err := a.insight(ctx, pr.id, id, true)
	if err != nil {
		return err
	}
	return a.sendInsight(c, pr, fiber.StatusCreated, r)
}

// GET /api/projects/{project_id}/insights/{id}/ (insight:read)
// The insight with its result: computed, or cached until the project has new events
// or the cache's time to live passes; ?refresh=true computes it afresh (refreshed).
func (a *API) insightRetrieve(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil {
		return errInsightNotFound
	}
	ctx, err := refreshed(c)
	if err != nil {
		return err
	}
	r, err := a.insight(ctx, pr.id, id, true)
	if err != nil {
		return err
	}
	return a.sendInsight(c, pr, fiber.StatusOK, r)
}

// PATCH /api/projects/{project_id}/insights/{id}/ (insight:write)
// Changes the fields sent; {"deleted": true} soft-deletes it (its tiles show nothing
// more), dashboards sets the dashboards it is on. An insight on dashboards needs edit
// rights on every one of them (mayEditContent): one on a restricted dashboard is
// edited only by those who may edit that dashboard, whatever other dashboard it is on.
func (a *API) insightUpdate(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil {
		return errInsightNotFound
	}
	ctx := c.UserContext()
	if isExactlyUndelete(c.Body()) {
		restored, err := a.undeleteInsight(ctx, pr, p.userID, id)
		if err != nil {
			return err
		}
		if restored {
			r, err := a.insight(ctx, pr.id, id, true)
			if err != nil {
				return err
			}
			return a.sendInsight(c, pr, fiber.StatusOK, r)
		}
	}
	current, err := a.insight(ctx, pr.id, id, false)
	if err != nil {
		return err
	}
	// Edit rights first, then the body, as DRF checks object permissions before the
	// serializer.
	if ok, err := a.mayEditContent(ctx, a.db, pr, p.userID, insightContent, id); err != nil {
		return err
	} else if !ok {
		return errInsightNotEditable
	}
	var in insightInput
	if err := bindValid(c, &in); err != nil {
		return err
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin updating insight %d: %w", id, err)
	}
	defer tx.Rollback()
	sets := columnSets{"last_modified_at": time.Now().UTC(), "last_modified_by": p.userID}
	sets.setName(in.Name)
	if in.Description.Set {
		sets["description"] = in.Description.Value
	}
	sets.setJSON("query", in.Query)
	if in.Tags.Set {
		sets["tags"] = mustJSON(normalizeTags(in.Tags.Value))
	}
	if in.Deleted.Set {
		sets["deleted"] = in.Deleted.Value
	}
	if err := updateColumns(ctx, tx, "meta.insights", id, sets); err != nil {
		return err
	}
	if in.Dashboards.Set {
		if err := a.placeOnDashboards(ctx, tx, pr, p.userID, id, current.Dashboards, in.Dashboards.Value); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit insight %d: %w", id, err)
	}
	if in.Deleted.Set && in.Deleted.Value {
		return c.JSON(fiber.Map{"id": id, "deleted": true})
	}
	r, err := a.insight(ctx, pr.id, id, true)
	if err != nil {
		return err
	}
	return a.sendInsight(c, pr, fiber.StatusOK, r)
}

// undeleteInsight restores a soft-deleted insight of the project, as a body of exactly
// {"deleted": false} does in PostHog (the only update a deleted insight takes): the
// console's Undo after a delete. restored is false when there is no such deleted
// insight, and the request goes on as any update. Restoring needs the same edit rights
// as any change: on every dashboard the insight is on.
func (a *API) undeleteInsight(ctx context.Context, pr project, userID, id int64) (restored bool, err error) {
	var n int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM meta.insights WHERE team_id = ? AND id = ? AND deleted`, pr.id, id).Scan(&n); err != nil {
		return false, fmt.Errorf("cannot read insight %d: %w", id, err)
	}
	if n == 0 {
		return false, nil
	}
	if ok, err := a.mayEditContent(ctx, a.db, pr, userID, insightContent, id); err != nil {
		return false, err
	} else if !ok {
		return false, errInsightNotEditable
	}
	sets := columnSets{"deleted": false, "last_modified_at": time.Now().UTC(), "last_modified_by": userID}
	if err := updateColumns(ctx, a.db, "meta.insights", id, sets); err != nil {
		return false, err
	}
	return true, nil
}
