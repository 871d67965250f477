package admin

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hedge-analytics/hedge/flags"
	"github.com/hedge-analytics/hedge/warehouse"
)

// The management API of cohorts: defined by person properties (and by other cohorts),
// or static, listing the distinct ids of CSV uploads. The flags package keeps their
// definitions, the warehouse the members of static ones (cohort_people); this file
// binds and renders, and counts each cohort's persons through the warehouse.

func (a *API) bindCohorts() {
	const base = "/projects/:project_id/cohorts/"
	a.handle(fiber.MethodGet, base, "cohort:read", a.cohortList)
	a.handle(fiber.MethodPost, base, "cohort:write", a.cohortCreate)
	a.handle(fiber.MethodGet, base+":id/", "cohort:read", a.cohortRetrieve)
	a.handle(fiber.MethodPatch, base+":id/", "cohort:write", a.cohortUpdate)
	a.handle(fiber.MethodGet, base+":id/persons/", "cohort:read", a.cohortPersons)
	// Not allowed, as in PostHog: cohorts are deleted with PATCH {"deleted": true}.
	a.handle(fiber.MethodDelete, base+":id/", "cohort:write", a.deletedWithPatch)
}

// cohortRecord is a cohort in PostHog's shape. hedge computes memberships when it
// reads them: a cohort is never calculating, and count is its persons now (null for a
// deleted cohort, or one whose definition no query can read).
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
	counts, err := a.cohortCounts(ctx, list)
	if err != nil {
		return nil, err
	}
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
			CreatedAt: c.CreatedAt, IsStatic: c.IsStatic, ExperimentSet: []int64{}, Count: counts[i]}
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
	ch, ids, hasCSV, err := a.cohortBody(c)
	if err != nil {
		return err
	}
	if hasCSV {
		switch {
		case ch.IsStatic == nil:
			ch.IsStatic = new(bool)
			*ch.IsStatic = true
		case !*ch.IsStatic:
			return errValidation("is_static", "invalid_input", "A cohort from a CSV file is static.")
		}
	}
	ctx := c.UserContext()
	cohort, err := a.flags.CreateCohort(ctx, pr.id, p.userID, ch)
	if err != nil {
		return a.flagsError(ctx, err)
	}
	if hasCSV {
		if _, err := a.warehouse.AddCohortPeople(ctx, pr.id, cohort.ID, ids); err != nil {
			// The cohort without its list is no use: it goes, as if never made.
			deleted := true
			a.flags.UpdateCohort(context.WithoutCancel(ctx), pr.id, cohort.ID, flags.CohortChange{Deleted: &deleted})
			return a.membersError(err)
		}
	}
	return a.sendCohort(c, fiber.StatusCreated, cohort)
}

// cohortBody reads the body of a create or update: JSON, or a multipart form with
// the distinct ids of a csv file (hasCSV).
func (a *API) cohortBody(c *fiber.Ctx) (ch flags.CohortChange, ids []string, hasCSV bool, err error) {
	if isMultipart(c) {
		return cohortForm(c)
	}
	ch, err = bindChange[flags.CohortChange](c, new(cohortInput))
	return ch, nil, false, err
}

// membersError is the answer to a failed addition to a static cohort's list: a 400
// when the list would be too long.
func (a *API) membersError(err error) error {
	var queryErr *warehouse.QueryError
	if errors.As(err, &queryErr) {
		return errValidation("csv", "invalid_input", queryErr.Detail)
	}
	return err
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
	ch, ids, hasCSV, err := a.cohortBody(c)
	if err != nil {
		return err
	}
	if hasCSV && !current.IsStatic && (ch.IsStatic == nil || !*ch.IsStatic) {
		return errValidation("csv", "invalid_input", "Only a static cohort takes a CSV file.")
	}
	ctx := c.UserContext()
	cohort, ok, err := a.flags.UpdateCohort(ctx, pr.id, current.ID, ch)
	switch {
	case err != nil:
		return a.flagsError(ctx, err)
	case !ok:
		return errRecordNotFound()
	}
	if hasCSV && cohort.IsStatic {
		if _, err := a.warehouse.AddCohortPeople(ctx, pr.id, cohort.ID, ids); err != nil {
			return a.membersError(err)
		}
	}
	return a.sendCohort(c, fiber.StatusOK, cohort)
}

// cohortCounts are how many persons are in each cohort of list now (one project's),
// counted together; nil for one that is deleted, or whose definition is one a query
// refuses (an operator hedge's queries lack), which does not fail the listing that
// shows it.
func (a *API) cohortCounts(ctx context.Context, list []*flags.Cohort) ([]*int, error) {
	counts := make([]*int, len(list))
	var resolved []*warehouse.Cohort
	var at []int // the index in list of each resolved cohort
	for i, c := range list {
		if c.Deleted {
			continue
		}
		r, err := a.cohortResolver(ctx, c.TeamID, "").cohort(c.ID, nil)
		if isRefusal(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		resolved, at = append(resolved, r), append(at, i)
	}
	if len(resolved) == 0 {
		return counts, nil
	}
	n, err := a.warehouse.CohortCounts(ctx, list[0].TeamID, resolved)
	if err != nil {
		return nil, err
	}
	for k, i := range at {
		counts[i] = n[k]
	}
	return counts, nil
}

// GET /api/projects/{project_id}/cohorts/{id}/persons/ (cohort:read)
// The persons in the cohort now, in the persons API's shape, newest first, paged.
// A cohort whose definition a query refuses is a 400 saying why.
func (a *API) cohortPersons(c *fiber.Ctx) error {
	pr, cohort, err := a.cohortOfPath(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	resolved, err := a.cohortResolver(ctx, pr.id, "").cohort(cohort.ID, nil)
	if err != nil {
		return err
	}
	pg := pageOf(c)
	persons, count, err := a.warehouse.Persons(ctx, pr.id, warehouse.PersonFilter{Cohort: resolved}, pg.limit, pg.offset)
	return a.sendPersons(c, pg, "", persons, count, err)
}
