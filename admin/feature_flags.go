package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hedge-analytics/hedge/flags"
)

// The management API of feature flags: HTTP only. The flags package keeps them,
// checks every change and answers for the tables; this file binds, renders and maps
// its errors.

func (a *API) bindFeatureFlags() {
	const base = "/projects/:project_id/feature_flags/"
	a.handle(fiber.MethodGet, base, "feature_flag:read", a.featureFlagList)
	a.handle(fiber.MethodPost, base, "feature_flag:write", a.featureFlagCreate)
	a.handle(fiber.MethodGet, base+":id/", "feature_flag:read", a.featureFlagRetrieve)
	a.handle(fiber.MethodPatch, base+":id/", "feature_flag:write", a.featureFlagUpdate)
	// Not allowed, as in PostHog: flags are deleted with PATCH {"deleted": true}.
	a.handle(fiber.MethodDelete, base+":id/", "feature_flag:write", a.deletedWithPatch)
}

// featureFlagRecord is a flag in PostHog's shape. hedge has no experiments, surveys,
// early access features, usage dashboards or per-flag access control: those fields
// answer as a flag without them does in PostHog.
type featureFlagRecord struct {
	ID                         int64           `json:"id"`
	Name                       string          `json:"name"`
	Key                        string          `json:"key"`
	Filters                    json.RawMessage `json:"filters"`
	Deleted                    bool            `json:"deleted"`
	Active                     bool            `json:"active"`
	CreatedBy                  *userRecord     `json:"created_by"`
	CreatedAt                  time.Time       `json:"created_at"`
	UpdatedAt                  time.Time       `json:"updated_at"`
	Version                    int             `json:"version"`
	LastModifiedBy             *userRecord     `json:"last_modified_by"`
	EnsureExperienceContinuity bool            `json:"ensure_experience_continuity"`
	ExperimentSet              []int64         `json:"experiment_set"`
	Surveys                    []any           `json:"surveys"`
	Features                   []any           `json:"features"`
	RollbackConditions         any             `json:"rollback_conditions"`
	PerformedRollback          bool            `json:"performed_rollback"`
	CanEdit                    bool            `json:"can_edit"`
	Tags                       []string        `json:"tags"`
	EvaluationTags             []string        `json:"evaluation_tags"`
	UsageDashboard             *int64          `json:"usage_dashboard"`
	AnalyticsDashboards        []int64         `json:"analytics_dashboards"`
	HasEnrichedAnalytics       bool            `json:"has_enriched_analytics"`
	UserAccessLevel            string          `json:"user_access_level"`
	IsRemoteConfiguration      bool            `json:"is_remote_configuration"`
	HasEncryptedPayloads       bool            `json:"has_encrypted_payloads"`
	Status                     string          `json:"status"`
	EvaluationRuntime          string          `json:"evaluation_runtime"`
	BucketingIdentifier        string          `json:"bucketing_identifier"`
	LastCalledAt               *time.Time      `json:"last_called_at"`
}

// flagRecords renders flags for the caller (userID, in project pr), with their users.
func (a *API) flagRecords(ctx context.Context, pr project, userID int64, list []*flags.Flag) ([]featureFlagRecord, error) {
	var ids []int64
	for _, f := range list {
		ids = append(ids, f.CreatedBy, f.LastModifiedBy)
	}
	users, err := a.usersByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	records := make([]featureFlagRecord, len(list))
	for i, f := range list {
		// The creator and the project's admins (effective level 8 or more) manage a flag,
		// everyone else in the project edits it (PostHog without per-flag access control).
		access := "editor"
		if f.CreatedBy == userID || pr.level >= levelAdmin {
			access = "manager"
		}
		records[i] = featureFlagRecord{ID: f.ID, Name: f.Name, Key: f.Key, Filters: json.RawMessage(mustJSON(f.Filters)),
			Deleted: f.Deleted, Active: f.Active, CreatedBy: userOf(users, &f.CreatedBy), CreatedAt: f.CreatedAt,
			UpdatedAt: f.UpdatedAt, Version: f.Version, LastModifiedBy: userOf(users, &f.LastModifiedBy),
			EnsureExperienceContinuity: f.EnsureExperienceContinuity, ExperimentSet: []int64{}, Surveys: []any{},
			Features: []any{}, CanEdit: true, Tags: f.Tags, EvaluationTags: f.EvaluationTags, AnalyticsDashboards: []int64{},
			UserAccessLevel: access, IsRemoteConfiguration: f.IsRemoteConfiguration, HasEncryptedPayloads: f.HasEncryptedPayloads,
			Status: flagStatus(f, time.Now()), EvaluationRuntime: f.EvaluationRuntime, BucketingIdentifier: f.BucketingIdentifier}
	}
	return records, nil
}

// staleAfter is how old a fully rolled out flag is before PostHog calls it stale.
const staleAfter = 30 * 24 * time.Hour

// flagStatus is PostHog's status of a flag: DELETED, STALE (active, older than 30
// days, and rolled out to everyone: a condition without properties at 100% that, for a
// multivariate flag, gives one variant 100% or names a variant), else ACTIVE.
func flagStatus(f *flags.Flag, now time.Time) string {
	switch {
	case f.Deleted:
		return "DELETED"
	case !f.Active || now.Sub(f.CreatedAt) < staleAfter:
		return "ACTIVE"
	}
	multivariate := f.Filters.Multivariate != nil && len(f.Filters.Multivariate.Variants) > 0
	oneVariant := false
	if multivariate {
		for _, v := range f.Filters.Multivariate.Variants {
			oneVariant = oneVariant || v.RolloutPercentage == 100
		}
	}
	for _, c := range f.Filters.Groups {
		if len(c.Properties) > 0 || c.RolloutPercentage == nil || *c.RolloutPercentage != 100 {
			continue
		}
		if !multivariate || oneVariant || (c.Variant != nil && *c.Variant != "") {
			return "STALE"
		}
	}
	return "ACTIVE"
}

// featureFlagInput is the body of create and update; an update changes only what is
// sent. version is the version the change was made from.
type featureFlagInput struct {
	Name                       optional[string]   `json:"name"`
	Key                        optional[string]   `json:"key"`
	Filters                    optional[rawJSON]  `json:"filters"`
	Deleted                    optional[bool]     `json:"deleted"`
	Active                     optional[bool]     `json:"active"`
	Version                    optional[int]      `json:"version"`
	EnsureExperienceContinuity optional[bool]     `json:"ensure_experience_continuity"`
	Tags                       optional[[]string] `json:"tags"`
	EvaluationTags             optional[[]string] `json:"evaluation_tags"`
	IsRemoteConfiguration      optional[bool]     `json:"is_remote_configuration"`
	HasEncryptedPayloads       optional[bool]     `json:"has_encrypted_payloads"`
	EvaluationRuntime          optional[string]   `json:"evaluation_runtime"`
	BucketingIdentifier        optional[string]   `json:"bucketing_identifier"`
}

// sent is a field's value when the body has one: nil when it does not, DRF's null
// error when it is null.
func sent[T any](attr string, o optional[T]) (*T, error) {
	switch {
	case !o.Set:
		return nil, nil
	case o.Null:
		return nil, errNull(attr)
	}
	return &o.Value, nil
}

// change is the flags.FlagChange of the body; nulls are refused in the order of
// PostHog's fields, and tags are normalized.
func (in *featureFlagInput) change() (ch flags.FlagChange, err error) {
	if ch.Name, err = sent("name", in.Name); err != nil {
		return ch, err
	}
	if ch.Key, err = sent("key", in.Key); err != nil {
		return ch, err
	}
	filters, err := sent("filters", in.Filters)
	if err != nil {
		return ch, err
	}
	if filters != nil {
		ch.Filters = json.RawMessage(*filters)
	}
	if ch.Deleted, err = sent("deleted", in.Deleted); err != nil {
		return ch, err
	}
	if ch.Active, err = sent("active", in.Active); err != nil {
		return ch, err
	}
	if ch.Version, err = sent("version", in.Version); err != nil {
		return ch, err
	}
	if ch.EnsureExperienceContinuity, err = sent("ensure_experience_continuity", in.EnsureExperienceContinuity); err != nil {
		return ch, err
	}
	for _, tags := range []struct {
		attr string
		in   optional[[]string]
		dst  *[]string
	}{{"tags", in.Tags, &ch.Tags}, {"evaluation_tags", in.EvaluationTags, &ch.EvaluationTags}} {
		list, err := sent(tags.attr, tags.in)
		if err != nil {
			return ch, err
		}
		if list != nil {
			*tags.dst = normalizeTags(*list)
		}
	}
	if ch.IsRemoteConfiguration, err = sent("is_remote_configuration", in.IsRemoteConfiguration); err != nil {
		return ch, err
	}
	if ch.HasEncryptedPayloads, err = sent("has_encrypted_payloads", in.HasEncryptedPayloads); err != nil {
		return ch, err
	}
	if ch.EvaluationRuntime, err = sent("evaluation_runtime", in.EvaluationRuntime); err != nil {
		return ch, err
	}
	ch.BucketingIdentifier, err = sent("bucketing_identifier", in.BucketingIdentifier)
	return ch, err
}

// flagsError is the answer to an error of the flags store: a refusal is DRF's 400,
// an update from an older version that conflicts PostHog's 409 naming who changed
// the flag last; anything else is not the caller's.
func (a *API) flagsError(ctx context.Context, err error) error {
	var invalid *flags.ValidationError
	var conflict *flags.ConflictError
	switch {
	case errors.As(err, &invalid):
		return errValidation(invalid.Attr, invalid.Code, invalid.Detail)
	case errors.As(err, &conflict):
		who := "another user"
		users, err := a.usersByID(ctx, []int64{conflict.LastModifiedBy})
		if err != nil {
			return err
		}
		if u, ok := users[conflict.LastModifiedBy]; ok {
			who = u.Email
		}
		return errConflict(fmt.Sprintf("The feature flag was updated by %s since you started editing it. Please refresh and try again.", who))
	}
	return err
}

// GET /api/projects/{project_id}/feature_flags/ (feature_flag:read)
// The project's flags that are not deleted, newest first; ?search= (key or name),
// ?active=true|false, ?type=boolean|multivariant|remote_config|experiment,
// ?evaluation_runtime=, ?created_by_id= narrow them.
func (a *API) featureFlagList(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	filter := flags.FlagFilter{Search: c.Query("search"), Type: c.Query("type"), EvaluationRuntime: c.Query("evaluation_runtime")}
	switch c.Query("active") {
	case "true":
		filter.Active = new(true)
	case "false":
		filter.Active = new(false)
	}
	if id := c.Query("created_by_id"); id != "" {
		if filter.CreatedBy, err = strconv.ParseInt(id, 10, 64); err != nil {
			return errValidation("created_by_id", "invalid_input", "A valid integer is required.")
		}
	}
	ctx := c.UserContext()
	pg := pageOf(c)
	list, count, err := a.flags.Flags(ctx, pr.id, filter, pg.limit, pg.offset)
	if err != nil {
		return err
	}
	records, err := a.flagRecords(ctx, pr, p.userID, list)
	if err != nil {
		return err
	}
	return a.sendPage(c, pg, count, records)
}

// sendFlag answers with one flag.
func (a *API) sendFlag(c *fiber.Ctx, status int, pr project, f *flags.Flag) error {
	records, err := a.flagRecords(c.UserContext(), pr, principalOf(c).userID, []*flags.Flag{f})
	if err != nil {
		return err
	}
	return c.Status(status).JSON(records[0])
}

// POST /api/projects/{project_id}/feature_flags/ (feature_flag:write)
// A new flag, checked as PostHog checks it; flags deleted with the same key are
// removed, the key is the new flag's.
func (a *API) featureFlagCreate(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	ch, err := bindChange[flags.FlagChange](c, new(featureFlagInput))
	if err != nil {
		return err
	}
	f, err := a.flags.CreateFlag(c.UserContext(), pr.id, p.userID, ch)
	if err != nil {
		return a.flagsError(c.UserContext(), err)
	}
	return a.sendFlag(c, fiber.StatusCreated, pr, f)
}

// flagOfPath is the project and the flag (deleted or not) that the path names.
func (a *API) flagOfPath(c *fiber.Ctx) (project, *flags.Flag, error) {
	return recordOfPath(a, c, a.flags.Flag)
}

// GET /api/projects/{project_id}/feature_flags/{id}/ (feature_flag:read)
// A deleted flag is found too, as in PostHog: an update restores it.
func (a *API) featureFlagRetrieve(c *fiber.Ctx) error {
	pr, f, err := a.flagOfPath(c)
	if err != nil {
		return err
	}
	return a.sendFlag(c, fiber.StatusOK, pr, f)
}

// PATCH /api/projects/{project_id}/feature_flags/{id}/ (feature_flag:write)
// Changes the fields sent and makes a new version; {"deleted": true} soft-deletes
// the flag, {"deleted": false} restores it. A version older than the flag's that
// comes with a change of a field changed since is refused with 409.
func (a *API) featureFlagUpdate(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, current, err := a.flagOfPath(c)
	if err != nil {
		return err
	}
	ch, err := bindChange[flags.FlagChange](c, new(featureFlagInput))
	if err != nil {
		return err
	}
	f, ok, err := a.flags.UpdateFlag(c.UserContext(), pr.id, current.ID, p.userID, ch)
	switch {
	case err != nil:
		return a.flagsError(c.UserContext(), err)
	case !ok:
		return errRecordNotFound()
	}
	return a.sendFlag(c, fiber.StatusOK, pr, f)
}
