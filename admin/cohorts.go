package admin

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hedge-analytics/hedge/flags"
)

// The management API of cohorts, as far as feature flags use them: defined by person
// properties (and by other cohorts), or static with no members. The flags package
// keeps them; this file binds and renders.

func (a *API) bindCohorts() {
	const base = "/projects/:project_id/cohorts/"
	a.handle(fiber.MethodGet, base, "cohort:read", a.cohortList)
	a.handle(fiber.MethodPost, base, "cohort:write", a.cohortCreate)
	a.handle(fiber.MethodGet, base+":id/", "cohort:read", a.cohortRetrieve)
	a.handle(fiber.MethodPatch, base+":id/", "cohort:write", a.cohortUpdate)
	// Not allowed, as in PostHog: cohorts are deleted with PATCH {"deleted": true}.
	a.handle(fiber.MethodDelete, base+":id/", "cohort:write", a.deletedWithPatch)
}

// cohortRecord is a cohort in PostHog's shape. hedge computes no memberships: a
// cohort is never calculating and has no count.
type cohortRecord struct {
	ID                int64           `json:"id"`
	Name              string          `json:"name"`
	Description       string          `json:"description"`
	Groups            []any           `json:"groups"`
	Deleted           bool            `json:"deleted"`
	Filters           json.RawMessage `json:"filters"`
	Query             any             `json:"query"`
	Version           int             `json:"version"`
	IsCalculating     bool            `json:"is_calculating"`
	CreatedBy         *userRecord     `json:"created_by"`
	CreatedAt         time.Time       `json:"created_at"`
	LastCalculation   *time.Time      `json:"last_calculation"`
	ErrorsCalculating int             `json:"errors_calculating"`
	Count             *int            `json:"count"`
	IsStatic          bool            `json:"is_static"`
	ExperimentSet     []int64         `json:"experiment_set"`
}

func (a *API) cohortRecords(ctx context.Context, list []*flags.Cohort) ([]cohortRecord, error) {
	var ids []int64
	for _, c := range list {
		ids = append(ids, c.CreatedBy)
	}
	users, err := a.usersByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	records := make([]cohortRecord, len(list))
	for i, c := range list {
		records[i] = cohortRecord{ID: c.ID, Name: c.Name, Description: c.Description, Groups: []any{}, Deleted: c.Deleted,
			Filters: json.RawMessage(mustJSON(c.Filters)), Version: c.Version, CreatedBy: userOf(users, &c.CreatedBy),
			CreatedAt: c.CreatedAt, IsStatic: c.IsStatic, ExperimentSet: []int64{}}
	}
	return records, nil
}

func (a *API) sendCohort(c *fiber.Ctx, status int, cohort *flags.Cohort) error {
	records, err := a.cohortRecords(c.UserContext(), []*flags.Cohort{cohort})
	if err != nil {
		return err
	}
	return c.Status(status).JSON(records[0])
}

// cohortInput is the body of create and update; an update changes only what is
// sent. A null name or description is empty. PostHog's legacy groups are not read:
// filters defines a cohort.
type cohortInput struct {
	Name        optional[string]  `json:"name"`
	Description optional[string]  `json:"description"`
	Deleted     optional[bool]    `json:"deleted"`
	Filters     optional[rawJSON] `json:"filters"`
	IsStatic    optional[bool]    `json:"is_static"`
}

func (in *cohortInput) change() (ch flags.CohortChange, err error) {
	for _, text := range []struct {
		in  optional[string]
		dst **string
	}{{in.Name, &ch.Name}, {in.Description, &ch.Description}} {
		if text.in.Set {
			*text.dst = &text.in.Value // "" when null
		}
	}
	if ch.Deleted, err = sent("deleted", in.Deleted); err != nil {
		return ch, err
	}
	filters, err := sent("filters", in.Filters)
	if err != nil {
		return ch, err
	}
	if filters != nil {
		ch.Filters = json.RawMessage(*filters)
	}
	ch.IsStatic, err = sent("is_static", in.IsStatic)
	return ch, err
}

// GET /api/projects/{project_id}/cohorts/ (cohort:read)
// The project's cohorts that are not deleted, newest first; ?search= matches the name.
func (a *API) cohortList(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	pg := pageOf(c)
	list, count, err := a.flags.Cohorts(ctx, pr.id, c.Query("search"), pg.limit, pg.offset)
	if err != nil {
		return err
	}
	records, err := a.cohortRecords(ctx, list)
	if err != nil {
		return err
	}
	return a.sendPage(c, pg, count, records)
}

// POST /api/projects/{project_id}/cohorts/ (cohort:write)
func (a *API) cohortCreate(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	ch, err := bindChange[flags.CohortChange](c, new(cohortInput))
	if err != nil {
		return err
	}
	cohort, err := a.flags.CreateCohort(c.UserContext(), pr.id, p.userID, ch)
	if err != nil {
		return a.flagsError(c.UserContext(), err)
	}
	return a.sendCohort(c, fiber.StatusCreated, cohort)
}

// cohortOfPath is the project and its cohort (deleted or not) that the path names.
func (a *API) cohortOfPath(c *fiber.Ctx) (project, *flags.Cohort, error) {
	return recordOfPath(a, c, a.flags.Cohort)
}

// GET /api/projects/{project_id}/cohorts/{id}/ (cohort:read)
// A deleted cohort is found too, as in PostHog.
func (a *API) cohortRetrieve(c *fiber.Ctx) error {
	_, cohort, err := a.cohortOfPath(c)
	if err != nil {
		return err
	}
	return a.sendCohort(c, fiber.StatusOK, cohort)
}

// PATCH /api/projects/{project_id}/cohorts/{id}/ (cohort:write)
// Changes the fields sent; {"deleted": true} soft-deletes the cohort. The flags that
// use it see the change at once.
func (a *API) cohortUpdate(c *fiber.Ctx) error {
	pr, current, err := a.cohortOfPath(c)
	if err != nil {
		return err
	}
	ch, err := bindChange[flags.CohortChange](c, new(cohortInput))
	if err != nil {
		return err
	}
	cohort, ok, err := a.flags.UpdateCohort(c.UserContext(), pr.id, current.ID, ch)
	switch {
	case err != nil:
		return a.flagsError(c.UserContext(), err)
	case !ok:
		return errRecordNotFound()
	}
	return a.sendCohort(c, fiber.StatusOK, cohort)
}
