package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/batchexport"
	"github.com/hedge-analytics/hedge/internal/records"
	"github.com/hedge-analytics/hedge/warehouse"
)

// batchExportModels are what an export may export.
var batchExportModels = []string{warehouse.ExportEvents, warehouse.ExportPersons}

// bindBatchExports registers the batch export routes twice, as PostHog does: under an
// organization (its projects' exports) and under a project.
func (a *API) bindBatchExports() {
	for _, base := range []string{"/organizations/:organization_id/batch_exports/", "/projects/:project_id/batch_exports/"} {
		a.handle(fiber.MethodGet, base, "batch_export:read", a.batchExportList)
		a.handle(fiber.MethodPost, base, "batch_export:write", a.batchExportCreate)
		a.handle(fiber.MethodGet, base+":id/", "batch_export:read", a.batchExportRetrieve)
		a.handle(fiber.MethodPatch, base+":id/", "batch_export:write", a.batchExportUpdate)
		a.handle(fiber.MethodDelete, base+":id/", "batch_export:write", a.batchExportDelete)
		a.handle(fiber.MethodPost, base+":id/pause/", "batch_export:write", a.batchExportPause)
		a.handle(fiber.MethodPost, base+":id/unpause/", "batch_export:write", a.batchExportUnpause)
		a.handle(fiber.MethodGet, base+":id/runs/", "batch_export:read", a.batchExportRunList)
		a.handle(fiber.MethodGet, base+":id/runs/:run_id/", "batch_export:read", a.batchExportRunRetrieve)
		a.handle(fiber.MethodPost, base+":id/runs/:run_id/retry/", "batch_export:write", a.batchExportRunRetry)
		a.handle(fiber.MethodPost, base+":id/backfill/", "batch_export:write", a.batchExportBackfill)
		a.handle(fiber.MethodGet, base+":id/backfills/", "batch_export:read", a.batchExportBackfillList)
		a.handle(fiber.MethodPost, base+":id/backfills/", "batch_export:write", a.batchExportBackfillCreate)
	}
}

// exportScope is where a batch export path points: a whole organization (teamID 0)
// or one project of it, for the caller p.
type exportScope struct {
	organizationID uuid.UUID
	teamID         int64
	p              *principal
}

// exportScopeOf resolves the organization_id or project_id of the path. Any member
// may manage the exports of the projects they reach, as in PostHog.
func (a *API) exportScopeOf(c *fiber.Ctx, p *principal) (exportScope, error) {
	if c.Params("project_id") != "" {
		pr, err := a.projectOf(c, p)
		return exportScope{organizationID: pr.organizationID, teamID: pr.id, p: p}, err
	}
	m, err := a.organizationWide(c, p)
	return exportScope{organizationID: m.organizationID, p: p}, err
}

// teams are the projects whose exports the scope holds: under an organization, those
// of its projects that the caller reaches (projectLevelSQL), so that a private
// project's exports are neither listed nor found for a member not added to it.
func (a *API) exportTeams(ctx context.Context, s exportScope) ([]int64, error) {
	if s.teamID != 0 {
		return []int64{s.teamID}, nil
	}
	return records.All(ctx, a.db, "the projects of an organization", scanID,
		`SELECT id FROM meta.projects WHERE organization_id = ? AND id IN `+reachableProjectIDs, s.organizationID, s.p.userID)
}

// batchExportRecord is the OpenAPI schema's Batch export with id, team_id, created_at,
// last_updated_at and PostHog's latest_runs. destination.config never holds the secret
// fields.
type batchExportRecord struct {
	ID           string                 `json:"id"`
	TeamID       int64                  `json:"team_id"`
	Name         string                 `json:"name"`
	Model        string                 `json:"model"`
	Destination  batchExportDestination `json:"destination"`
	Interval     string                 `json:"interval"`
	Paused       bool                   `json:"paused"`
	LastPausedAt *time.Time             `json:"last_paused_at"`
	StartAt      *time.Time             `json:"start_at"`
	EndAt        *time.Time             `json:"end_at"`
	// HogQLQuery is always null: hedge exports its models, and refuses a query.
	HogQLQuery    *string           `json:"hogql_query"`
	Filters       rawJSON           `json:"filters"`
	CreatedAt     time.Time         `json:"created_at"`
	LastUpdatedAt time.Time         `json:"last_updated_at"`
	LatestRuns    []batchexport.Run `json:"latest_runs"`
}

type batchExportDestination struct {
	Type   string          `json:"type"`
	Config json.RawMessage `json:"config"`
}

// recordOfExport is what the API shows of e: its destination without the secret
// fields, and its latest runs.
func (a *API) recordOfExport(ctx context.Context, e batchexport.Export) (batchExportRecord, error) {
	config := maps.Clone(e.Config)
	for _, secret := range batchexport.SecretFields[e.DestinationType] {
		delete(config, secret)
	}
	runs, err := a.exports.LatestRuns(ctx, e.ID)
	return batchExportRecord{ID: e.ID, TeamID: e.TeamID, Name: e.Name, Model: e.Model,
		Destination: batchExportDestination{Type: e.DestinationType, Config: json.RawMessage(mustJSON(config))}, Interval: e.Interval,
		Paused: e.Paused, LastPausedAt: e.LastPausedAt, StartAt: e.StartAt, EndAt: e.EndAt, Filters: rawJSON(e.Filters),
		CreatedAt: e.CreatedAt, LastUpdatedAt: e.LastUpdatedAt, LatestRuns: runs}, err
}

// batchExportInput is the body of POST and PATCH; PATCH changes only what is sent.
// last_paused_at is managed by pausing and ignored here.
type batchExportInput struct {
	TeamID      optional[int64]                       `json:"team_id"`
	Name        optional[string]                      `json:"name"`
	Model       optional[string]                      `json:"model"`
	Destination optional[batchExportDestinationInput] `json:"destination"`
	Interval    optional[string]                      `json:"interval"`
	Paused      optional[bool]                        `json:"paused"`
	StartAt     optional[string]                      `json:"start_at"`
	EndAt       optional[string]                      `json:"end_at"`
	HogQLQuery  optional[string]                      `json:"hogql_query"`
	Filters     optional[rawJSON]                     `json:"filters"`
}

type batchExportDestinationInput struct {
	Type   optional[string]         `json:"type"`
	Config optional[map[string]any] `json:"config"`
}

// apply validates the input and applies it to e, the export as it is (empty when
// creating); policy is what destinations may reach.
func (in *batchExportInput) apply(e *batchexport.Export, creating bool, policy batchexport.Policy) error {
	if creating || in.Name.Set {
		switch {
		case !in.Name.Set || in.Name.Null:
			return errRequired("name")
		case strings.TrimSpace(in.Name.Value) == "":
			return errBlank("name")
		case utf8.RuneCountInString(in.Name.Value) > 256:
			return errMaxLength("name", 256)
		}
		e.Name = in.Name.Value
	}
	if creating && (!in.Model.Set || in.Model.Null) {
		in.Model = optional[string]{Set: true, Value: "events"} // PostHog's default
	}
	if in.Model.Set {
		if err := choice("model", in.Model, batchExportModels); err != nil {
			return err
		}
		e.Model = in.Model.Value
	}
	if creating || in.Interval.Set {
		if !in.Interval.Set || in.Interval.Null {
			return errRequired("interval")
		}
		if err := choice("interval", in.Interval, batchexport.Intervals); err != nil {
			return err
		}
		e.Interval = in.Interval.Value
	}
	if err := in.applyDestination(e, creating, policy); err != nil {
		return err
	}
	for _, t := range []struct {
		attr string
		in   optional[string]
		dst  **time.Time
	}{{"start_at", in.StartAt, &e.StartAt}, {"end_at", in.EndAt, &e.EndAt}} {
		if !t.in.Set {
			continue
		}
		*t.dst = nil
		if !t.in.Null {
			at, err := parseTimestamp(t.in.Value)
			if err != nil {
				return errDatetimeFormat(t.attr)
			}
			*t.dst = &at
		}
	}
	if e.StartAt != nil && e.EndAt != nil && !e.EndAt.After(*e.StartAt) {
		return errValidation("end_at", "invalid_input", "The end of a batch export must be after its start.")
	}
	if in.HogQLQuery.Set && !in.HogQLQuery.Null && in.HogQLQuery.Value != "" {
		// PostHog can export the rows of a custom query; hedge exports its models,
		// which filters and include_events/exclude_events narrow. Refused rather than
		// stored and ignored.
		return errValidation("hogql_query", "invalid_input",
			"hedge exports the events or persons model: narrow it with filters, or include_events and exclude_events in the destination's config, instead of a hogql_query.")
	}
	if in.Filters.Set {
		if err := checkJSONKind("filters", in.Filters.Value, '['); err != nil {
			return err
		}
		if len(in.Filters.Value) > 0 {
			var filters []warehouse.PropertyFilter
			if err := json.Unmarshal(in.Filters.Value, &filters); err != nil {
				return errValidation("filters", "invalid_input", "filters must be a list of property filters, e.g. [{\"key\": \"$browser\", \"value\": \"Chrome\", \"type\": \"event\"}].")
			}
			if err := warehouse.CheckExportFilters(filters); err != nil {
				return errValidation("filters", "invalid_input", err.Error())
			}
		}
		e.Filters = json.RawMessage(in.Filters.Value) // nil when null
	}
	return nil
}

// applyDestination validates the destination: a type hedge can export to, which an
// update cannot change, and the config that type needs, within what policy allows. An
// update's config is merged over the stored one, so that secrets need not be sent
// again, unless it changes where they are sent (an S3 endpoint_url): then each secret
// field is required.
func (in *batchExportInput) applyDestination(e *batchexport.Export, creating bool, policy batchexport.Policy) error {
	d := in.Destination
	if !creating && !d.Set {
		return nil
	}
	if !d.Set || d.Null {
		return errRequired("destination")
	}
	if creating || d.Value.Type.Set {
		if !d.Value.Type.Set || d.Value.Type.Null {
			return errValidation("destination", "required", "A destination needs a type: one of S3, Parquet.")
		}
		if !slices.Contains(batchexport.DestinationTypes, d.Value.Type.Value) {
			return errValidation("destination", "invalid_choice",
				fmt.Sprintf("%q is not a valid destination type: hedge exports to S3 and Parquet.", d.Value.Type.Value))
		}
		if !creating && d.Value.Type.Value != e.DestinationType {
			return errValidation("destination", "invalid_input", "The type of a batch export's destination cannot be changed.")
		}
		e.DestinationType = d.Value.Type.Value
	}
	if e.Config == nil {
		e.Config = map[string]any{}
	}
	if !creating {
		if secret := batchexport.MissingSecret(e.DestinationType, e.Config, d.Value.Config.Value); secret != "" {
			return errRequired("destination__config__" + secret)
		}
	}
	maps.Copy(e.Config, d.Value.Config.Value)
	var invalid *batchexport.InvalidConfig
	if err := policy.Check(e.TeamID, e.DestinationType, e.Config); errors.As(err, &invalid) {
		return errValidation("destination__config", invalid.Code, invalid.Detail)
	} else if err != nil {
		return err
	}
	return nil
}

// choice checks that a sent string is one of choices (DRF's ChoiceField message).
func choice(attr string, v optional[string], choices []string) error {
	if v.Null || !slices.Contains(choices, v.Value) {
		value := v.Value
		if v.Null {
			value = "None"
		}
		return errInvalidChoice(attr, value)
	}
	return nil
}

// parseTimestamp reads ISO 8601 timestamps as DRF does; without a zone it is UTC.
func parseTimestamp(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot parse %q as a timestamp", s)
}

// GET .../batch_exports/ (batch_export:read)
// The exports of the organization's projects, or of the project, newest first.
func (a *API) batchExportList(c *fiber.Ctx) error {
	s, err := a.exportScopeOf(c, principalOf(c))
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	teams, err := a.exportTeams(ctx, s)
	if err != nil {
		return err
	}
	pg := pageOf(c)
	exports, count, err := a.exports.Exports(ctx, teams, pg.limit, pg.offset)
	if err != nil {
		return err
	}
	list := make([]batchExportRecord, len(exports))
	for i, e := range exports {
		if list[i], err = a.recordOfExport(ctx, e); err != nil {
			return err
		}
	}
	return a.sendPage(c, pg, count, list)
}

// POST .../batch_exports/ (batch_export:write)
// Under a project the export is that project's; under an organization the body names
// the project in team_id.
func (a *API) batchExportCreate(c *fiber.Ctx) error {
	s, err := a.exportScopeOf(c, principalOf(c))
	if err != nil {
		return err
	}
	var in batchExportInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	ctx := c.UserContext()
	e := batchexport.Export{TeamID: s.teamID}
	if e.TeamID == 0 {
		if err := a.teamOfOrganization(ctx, s, in.TeamID); err != nil {
			return err
		}
		e.TeamID = in.TeamID.Value
	}
	if err := in.apply(&e, true, a.exports.Policy()); err != nil {
		return err
	}
	e.Paused = in.Paused.Set && !in.Paused.Null && in.Paused.Value
	if err := a.exports.Create(ctx, &e); err != nil {
		return err
	}
	r, err := a.recordOfExport(ctx, e)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(r)
}

// teamOfOrganization checks that team_id names a project of the organization that the
// caller reaches, as a path naming it must (a private project they were not added to:
// 403 "You don't have access to the project.").
func (a *API) teamOfOrganization(ctx context.Context, s exportScope, team optional[int64]) error {
	if !team.Set || team.Null {
		return errValidation("team_id", "required", "This field is required: the project whose data is exported.")
	}
	notHere := errValidation("team_id", "invalid_input", "Project does not exist on this organization.")
	var ok bool
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.projects WHERE id = ? AND organization_id = ?`,
		team.Value, s.organizationID).Scan(&ok); err != nil {
		return fmt.Errorf("cannot look up project %d: %w", team.Value, err)
	}
	if !ok {
		return notHere
	}
	_, err := a.reachProject(ctx, s.p, team.Value, notHere, errNoProjectAccess)
	return err
}

// exportOfPath is the batch export that the path's id names, secrets included, within
// the path's organization or project; a deleted one, or one of another scope, is not
// found.
func (a *API) exportOfPath(c *fiber.Ctx) (batchexport.Export, error) {
	s, err := a.exportScopeOf(c, principalOf(c))
	if err != nil {
		return batchexport.Export{}, err
	}
	ctx := c.UserContext()
	teams, err := a.exportTeams(ctx, s)
	if err != nil {
		return batchexport.Export{}, err
	}
	e, ok, err := a.exports.Export(ctx, teams, c.Params("id"))
	if err == nil && !ok {
		err = errRecordNotFound()
	}
	return e, err
}

// sendExport answers with the export as the API shows it.
func (a *API) sendExport(c *fiber.Ctx, e batchexport.Export) error {
	r, err := a.recordOfExport(c.UserContext(), e)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// GET .../batch_exports/{id}/ (batch_export:read)
func (a *API) batchExportRetrieve(c *fiber.Ctx) error {
	e, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	return a.sendExport(c, e)
}

// PATCH .../batch_exports/{id}/ (batch_export:write)
// Changing paused pauses or unpauses the export, as the pause and unpause actions do.
func (a *API) batchExportUpdate(c *fiber.Ctx) error {
	e, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	var in batchExportInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	if err := in.apply(&e, false, a.exports.Policy()); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := a.exports.Update(ctx, e); err != nil {
		return err
	}
	if in.Paused.Set && !in.Paused.Null {
		if err := a.exports.SetPaused(ctx, e.ID, in.Paused.Value); err != nil {
			return err
		}
	}
	e, err = a.exportOfPath(c)
	if err != nil {
		return err
	}
	return a.sendExport(c, e)
}

// DELETE .../batch_exports/{id}/ (batch_export:write)
// Soft: the export disappears from the API, its row and its runs stay; its queued
// runs are cancelled.
func (a *API) batchExportDelete(c *fiber.Ctx) error {
	e, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	if err := a.exports.Delete(c.UserContext(), e.ID); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// POST .../batch_exports/{id}/pause/ (batch_export:write)
// 200 with no body, as in PostHog. Pausing a paused export changes nothing
// (last_paused_at stays that of the real pause). The body is not read. A paused export
// starts no runs, its queued ones included, until it is unpaused.
func (a *API) batchExportPause(c *fiber.Ctx) error {
	e, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	if err := a.exports.SetPaused(c.UserContext(), e.ID, true); err != nil {
		return err
	}
	c.Status(fiber.StatusOK)
	return nil
}

// POST .../batch_exports/{id}/unpause/ (batch_export:write)
// 200 with no body, as in PostHog. Unpausing an active export changes nothing;
// unpausing keeps last_paused_at, and the export resumes from the window that ends
// next. With {"backfill": true}, as in PostHog, the windows from last_paused_at until
// now are backfilled: the backfill is made first, so that a pause too long for one
// (more than batchexport.MaxBackfillWindows windows) is refused with the export still
// paused (400 on backfill).
func (a *API) batchExportUnpause(c *fiber.Ctx) error {
	e, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	var body struct {
		Backfill optional[bool] `json:"backfill"`
	}
	if len(c.Body()) > 0 {
		if err := bindBody(c, &body); err != nil {
			return err
		}
	}
	if body.Backfill.Value && e.Paused && e.LastPausedAt != nil {
		_, err := a.exports.Backfill(ctx, e, *e.LastPausedAt, a.exports.Now())
		var tooMany *batchexport.TooManyWindows
		switch {
		case errors.As(err, &tooMany):
			return errValidation("backfill", "invalid_input", fmt.Sprintf(
				"Backfilling the pause would cover %d windows of this export, and a backfill covers at most %d (a year of 5-minute windows): "+
					"unpause without backfill, then backfill the pause in parts.", tooMany.Windows, batchexport.MaxBackfillWindows))
		case err != nil && !errors.Is(err, batchexport.ErrNoWindows):
			return err
		}
	}
	if err := a.exports.SetPaused(ctx, e.ID, false); err != nil {
		return err
	}
	c.Status(fiber.StatusOK)
	return nil
}
