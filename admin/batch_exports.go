package admin

import (
	"context"
	"database/sql"
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

	"github.com/hedge-analytics/hedge/warehouse"
	"github.com/hedge-analytics/hedge/batchexport"
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
// or one project of it.
type exportScope struct {
	organizationID uuid.UUID
	teamID         int64
}

// exportScopeOf resolves the organization_id or project_id of the path. Any member
// may manage the exports of their projects, as in PostHog.
func (a *API) exportScopeOf(c *fiber.Ctx, p *principal) (exportScope, error) {
	if c.Params("project_id") != "" {
		pr, err := a.projectOf(c, p)
		return exportScope{organizationID: pr.organizationID, teamID: pr.id}, err
	}
	m, err := a.organizationWide(c, p)
	return exportScope{organizationID: m.organizationID}, err
}

// where is the condition on meta.batch_exports b for the exports of the scope that
// are not deleted.
func (s exportScope) where() (string, []any) {
	if s.teamID != 0 {
		return `NOT b.deleted AND b.team_id = ?`, []any{s.teamID}
	}
	return `NOT b.deleted AND b.team_id IN (SELECT id FROM meta.projects WHERE organization_id = ?)`, []any{s.organizationID}
}

// batchExportRecord is the spec's Batch export with id, team_id, created_at,
// last_updated_at and PostHog's latest_runs. destination.config never holds the secret
// fields.
type batchExportRecord struct {
	ID            string                 `json:"id"`
	TeamID        int64                  `json:"team_id"`
	Name          string                 `json:"name"`
	Model         string                 `json:"model"`
	Destination   batchExportDestination `json:"destination"`
	Interval      string                 `json:"interval"`
	Paused        bool                   `json:"paused"`
	LastPausedAt  *time.Time             `json:"last_paused_at"`
	StartAt       *time.Time             `json:"start_at"`
	EndAt         *time.Time             `json:"end_at"`
	HogQLQuery    *string                `json:"hogql_query"`
	Filters       rawJSON                `json:"filters"`
	CreatedAt     time.Time              `json:"created_at"`
	LastUpdatedAt time.Time              `json:"last_updated_at"`
	LatestRuns    []batchExportRunRecord `json:"latest_runs"`
}

type batchExportDestination struct {
	Type   string          `json:"type"`
	Config json.RawMessage `json:"config"`
}

const batchExportColumns = `SELECT b.id::VARCHAR, b.team_id, b.name, b.model, b.destination_type, b.destination_config,
	b."interval", b.paused, b.last_paused_at, b.start_at, b.end_at, b.hogql_query, b.filters, b.created_at, b.last_updated_at
	FROM meta.batch_exports b`

func scanBatchExport(row interface{ Scan(...any) error }) (batchExportRecord, error) {
	var r batchExportRecord
	var config string
	if err := row.Scan(&r.ID, &r.TeamID, &r.Name, &r.Model, &r.Destination.Type, &config, &r.Interval, &r.Paused,
		&r.LastPausedAt, &r.StartAt, &r.EndAt, &r.HogQLQuery, &r.Filters, &r.CreatedAt, &r.LastUpdatedAt); err != nil {
		return r, err
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(config), &fields); err != nil {
		return r, fmt.Errorf("cannot read the destination of batch export %s: %w", r.ID, err)
	}
	for _, secret := range batchexport.SecretFields[r.Destination.Type] {
		delete(fields, secret)
	}
	r.Destination.Config = json.RawMessage(mustJSON(nonNilMap(fields)))
	r.LastPausedAt, r.StartAt, r.EndAt = utcTime(r.LastPausedAt), utcTime(r.StartAt), utcTime(r.EndAt)
	r.CreatedAt, r.LastUpdatedAt = r.CreatedAt.UTC(), r.LastUpdatedAt.UTC()
	return r, nil
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
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

// batchExport is a batch export as stored, secrets included.
type batchExport struct {
	id, name, model, interval string
	teamID                    int64
	destinationType           string
	config                    map[string]any
	paused                    bool
	startAt, endAt            *time.Time
	filters                   rawJSON
}

// apply validates the input and applies it to e, the export as it is (empty when
// creating); policy is what destinations may reach.
func (in *batchExportInput) apply(e *batchExport, creating bool, policy batchexport.Policy) error {
	if creating || in.Name.Set {
		switch {
		case !in.Name.Set || in.Name.Null:
			return errRequired("name")
		case strings.TrimSpace(in.Name.Value) == "":
			return errBlank("name")
		case utf8.RuneCountInString(in.Name.Value) > 256:
			return errMaxLength("name", 256)
		}
		e.name = in.Name.Value
	}
	if creating && (!in.Model.Set || in.Model.Null) {
		in.Model = optional[string]{Set: true, Value: "events"} // PostHog's default
	}
	if in.Model.Set {
		if err := choice("model", in.Model, batchExportModels); err != nil {
			return err
		}
		e.model = in.Model.Value
	}
	if creating || in.Interval.Set {
		if !in.Interval.Set || in.Interval.Null {
			return errRequired("interval")
		}
		if err := choice("interval", in.Interval, batchexport.Intervals); err != nil {
			return err
		}
		e.interval = in.Interval.Value
	}
	if err := in.applyDestination(e, creating, policy); err != nil {
		return err
	}
	for _, t := range []struct {
		attr string
		in   optional[string]
		dst  **time.Time
	}{{"start_at", in.StartAt, &e.startAt}, {"end_at", in.EndAt, &e.endAt}} {
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
	if e.startAt != nil && e.endAt != nil && !e.endAt.After(*e.startAt) {
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
		e.filters = in.Filters.Value // nil when null
	}
	return nil
}

// applyDestination validates the destination: a type hedge can export to, which an
// update cannot change, and the config that type needs, within what policy allows. An
// update's config is merged over the stored one, so that secrets need not be sent
// again.
func (in *batchExportInput) applyDestination(e *batchExport, creating bool, policy batchexport.Policy) error {
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
		if !creating && d.Value.Type.Value != e.destinationType {
			return errValidation("destination", "invalid_input", "The type of a batch export's destination cannot be changed.")
		}
		e.destinationType = d.Value.Type.Value
	}
	if e.config == nil {
		e.config = map[string]any{}
	}
	maps.Copy(e.config, d.Value.Config.Value)
	var invalid *batchexport.InvalidConfig
	if err := policy.Check(e.destinationType, e.config); errors.As(err, &invalid) {
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
	where, args := s.where()
	pg := pageOf(c)
	ctx := c.UserContext()
	var count int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM meta.batch_exports b WHERE `+where, args...).Scan(&count); err != nil {
		return fmt.Errorf("cannot count batch exports: %w", err)
	}
	rows, err := a.db.QueryContext(ctx, batchExportColumns+` WHERE `+where+` ORDER BY b.created_at DESC, b.id DESC LIMIT ? OFFSET ?`,
		append(args, pg.limit, pg.offset)...)
	if err != nil {
		return fmt.Errorf("cannot list batch exports: %w", err)
	}
	defer rows.Close()
	exports := []batchExportRecord{}
	for rows.Next() {
		r, err := scanBatchExport(rows)
		if err != nil {
			return fmt.Errorf("cannot read batch exports: %w", err)
		}
		exports = append(exports, r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read batch exports: %w", err)
	}
	rows.Close()
	for i := range exports {
		if exports[i].LatestRuns, err = a.latestRuns(ctx, exports[i].ID); err != nil {
			return err
		}
	}
	return a.sendPage(c, pg, count, exports)
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
	e := batchExport{id: uuid.Must(uuid.NewV7()).String(), teamID: s.teamID}
	if e.teamID == 0 {
		if err := a.teamOfOrganization(ctx, s, in.TeamID); err != nil {
			return err
		}
		e.teamID = in.TeamID.Value
	}
	if err := in.apply(&e, true, a.exportPolicy); err != nil {
		return err
	}
	e.paused = in.Paused.Set && !in.Paused.Null && in.Paused.Value
	// An export created paused has been paused since it was created: that is where
	// an unpause resumes from. created_at is on the runner's clock: its first window is
	// the one that holds it.
	now := a.exportClock()
	if _, err := a.db.ExecContext(ctx, `
		INSERT INTO meta.batch_exports (id, team_id, name, model, destination_type, destination_config, "interval",
			paused, last_paused_at, start_at, end_at, filters, created_at, last_updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, CASE WHEN ? THEN ?::TIMESTAMPTZ END, ?, ?, ?, ?, ?)`,
		e.id, e.teamID, e.name, e.model, e.destinationType, mustJSON(e.config), e.interval,
		e.paused, e.paused, now, e.startAt, e.endAt, nullableJSON(e.filters), now, now); err != nil {
		return fmt.Errorf("cannot create batch export %q for project %d: %w", e.name, e.teamID, err)
	}
	r, err := a.loadBatchExport(ctx, s, e.id)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(r)
}

func nullableJSON(j rawJSON) *string {
	if len(j) == 0 {
		return nil
	}
	s := string(j)
	return &s
}

// teamOfOrganization checks that team_id names a project of the organization.
func (a *API) teamOfOrganization(ctx context.Context, s exportScope, team optional[int64]) error {
	if !team.Set || team.Null {
		return errValidation("team_id", "required", "This field is required: the project whose data is exported.")
	}
	var ok bool
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.projects WHERE id = ? AND organization_id = ?`,
		team.Value, s.organizationID).Scan(&ok); err != nil {
		return fmt.Errorf("cannot look up project %d: %w", team.Value, err)
	}
	if !ok {
		return errValidation("team_id", "invalid_input", "Project does not exist on this organization.")
	}
	return nil
}

// loadBatchExport reads an export of the scope; a deleted one, or one of another
// scope, is not found.
func (a *API) loadBatchExport(ctx context.Context, s exportScope, id string) (batchExportRecord, error) {
	parsed, err := uuid.Parse(id)
	if err != nil {
		return batchExportRecord{}, errRecordNotFound()
	}
	where, args := s.where()
	r, err := scanBatchExport(a.db.QueryRowContext(ctx, batchExportColumns+` WHERE b.id = ? AND `+where, append([]any{parsed}, args...)...))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errRecordNotFound()
	}
	if err != nil {
		return r, fmt.Errorf("cannot read batch export %s: %w", id, err)
	}
	r.LatestRuns, err = a.latestRuns(ctx, r.ID)
	return r, err
}

// exportOfPath is the batch export that the path's id names, within the path's
// organization or project.
func (a *API) exportOfPath(c *fiber.Ctx) (batchExportRecord, error) {
	s, err := a.exportScopeOf(c, principalOf(c))
	if err != nil {
		return batchExportRecord{}, err
	}
	return a.loadBatchExport(c.UserContext(), s, c.Params("id"))
}

// loadStoredBatchExport reads what an update needs of an export, secrets included.
func (a *API) loadStoredBatchExport(ctx context.Context, s exportScope, id string) (batchExport, error) {
	r, err := a.loadBatchExport(ctx, s, id)
	if err != nil {
		return batchExport{}, err
	}
	e := batchExport{id: r.ID, name: r.Name, model: r.Model, interval: r.Interval, teamID: r.TeamID,
		destinationType: r.Destination.Type, paused: r.Paused, startAt: r.StartAt, endAt: r.EndAt,
		filters: r.Filters}
	var config string
	if err := a.db.QueryRowContext(ctx, `SELECT destination_config FROM meta.batch_exports WHERE id = ?`, r.ID).Scan(&config); err != nil {
		return e, fmt.Errorf("cannot read the destination of batch export %s: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(config), &e.config); err != nil {
		return e, fmt.Errorf("cannot read the destination of batch export %s: %w", r.ID, err)
	}
	return e, nil
}

// GET .../batch_exports/{id}/ (batch_export:read)
func (a *API) batchExportRetrieve(c *fiber.Ctx) error {
	r, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// PATCH .../batch_exports/{id}/ (batch_export:write)
// Changing paused pauses or unpauses the export, as the pause and unpause actions do.
func (a *API) batchExportUpdate(c *fiber.Ctx) error {
	s, err := a.exportScopeOf(c, principalOf(c))
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	e, err := a.loadStoredBatchExport(ctx, s, c.Params("id"))
	if err != nil {
		return err
	}
	var in batchExportInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	if err := in.apply(&e, false, a.exportPolicy); err != nil {
		return err
	}
	if _, err := a.db.ExecContext(ctx, `UPDATE meta.batch_exports SET name = ?, model = ?, destination_config = ?,
		"interval" = ?, start_at = ?, end_at = ?, filters = ?, last_updated_at = now() WHERE id = ?`,
		e.name, e.model, mustJSON(e.config), e.interval, e.startAt, e.endAt, nullableJSON(e.filters), e.id); err != nil {
		return fmt.Errorf("cannot update batch export %s: %w", e.id, err)
	}
	if in.Paused.Set && !in.Paused.Null {
		if err := a.setPaused(ctx, e.id, in.Paused.Value); err != nil {
			return err
		}
	}
	r, err := a.loadBatchExport(ctx, s, e.id)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// DELETE .../batch_exports/{id}/ (batch_export:write)
// Soft: the export disappears from the API, its row (and later its runs) stay.
func (a *API) batchExportDelete(c *fiber.Ctx) error {
	r, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if _, err := a.db.ExecContext(ctx, `UPDATE meta.batch_exports SET deleted = true, last_updated_at = now() WHERE id = ?`, r.ID); err != nil {
		return fmt.Errorf("cannot delete batch export %s: %w", r.ID, err)
	}
	// Its queued runs will not run: the runner skips the runs of deleted exports, and
	// the record says so.
	now := a.exportClock()
	if _, err := a.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = 'Cancelled', next_attempt_at = NULL, finished_at = ?,
		last_updated_at = ? WHERE batch_export_id = ? AND status IN ('Starting', 'FailedRetryable')`, now, now, r.ID); err != nil {
		return fmt.Errorf("cannot cancel the runs of batch export %s: %w", r.ID, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// POST .../batch_exports/{id}/pause/ (batch_export:write)
// 200 with no body (spec). Pausing a paused export changes nothing (last_paused_at
// stays that of the real pause), as in PostHog. The body is not read. A paused export
// starts no runs, its queued ones included, until it is unpaused.
func (a *API) batchExportPause(c *fiber.Ctx) error { return a.pauseAction(c, true) }

// POST .../batch_exports/{id}/unpause/ (batch_export:write)
// 200 with no body (spec). Unpausing an active export changes nothing; unpausing
// keeps last_paused_at, and the export resumes from the window that ends next. With
// {"backfill": true}, as in PostHog, the windows from last_paused_at until now are
// backfilled.
func (a *API) batchExportUnpause(c *fiber.Ctx) error {
	r, err := a.exportOfPath(c)
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
	if err := a.setPaused(ctx, r.ID, false); err != nil {
		return err
	}
	if body.Backfill.Value && r.Paused && r.LastPausedAt != nil {
		if _, err := a.backfill(ctx, r, *r.LastPausedAt, a.exportClock()); err != nil && !isNoWindows(err) {
			return err
		}
	}
	c.Status(fiber.StatusOK)
	return nil
}

func (a *API) pauseAction(c *fiber.Ctx, paused bool) error {
	r, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := a.setPaused(ctx, r.ID, paused); err != nil {
		return err
	}
	c.Status(fiber.StatusOK)
	return nil
}

// exportClock is the batch export runner's clock, which the times that decide an
// export's windows (created_at, last_paused_at, resumed_at) are taken from.
func (a *API) exportClock() time.Time {
	if a.exports != nil {
		return a.exports.Now().UTC()
	}
	return time.Now().UTC()
}

// setPaused pauses or unpauses an export; only a change of state writes. A real pause
// sets last_paused_at, a real unpause resumed_at: the runner skips the windows that
// ended in between.
func (a *API) setPaused(ctx context.Context, id string, paused bool) error {
	now := a.exportClock()
	if _, err := a.db.ExecContext(ctx, `UPDATE meta.batch_exports SET paused = ?, last_updated_at = ?,
		last_paused_at = CASE WHEN ? THEN ?::TIMESTAMPTZ ELSE last_paused_at END,
		resumed_at = CASE WHEN ? THEN resumed_at ELSE ?::TIMESTAMPTZ END
		WHERE id = ? AND paused <> ?`, paused, now, paused, now, paused, now, id, paused); err != nil {
		return fmt.Errorf("cannot set batch export %s paused=%t: %w", id, paused, err)
	}
	if !paused && a.exports != nil {
		a.exports.Wake()
	}
	return nil
}
