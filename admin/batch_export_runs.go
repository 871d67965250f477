package admin

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/batchexport"
)

// GET .../batch_exports/{id}/runs/ (batch_export:read)
// Cursor-paginated as in PostHog (?cursor=, 100 a page, ?limit= to change it), newest
// first; ?ordering= data_interval_start or -data_interval_start instead; ?status=
// (repeatable) keeps those statuses; ?after= and ?before= bound created_at (ISO 8601;
// after defaults to 7 days ago, PostHog's default).
func (a *API) batchExportRunList(c *fiber.Ctx) error {
	export, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	f, err := a.runFilterOf(c, export.ID)
	if err != nil {
		return err
	}
	runs, more, err := a.exports.Runs(c.UserContext(), f)
	if err != nil {
		return err
	}
	return sendCursorPage(c, a, runs, f.From != nil, f.From != nil && f.From.Reverse, more,
		func(run batchexport.Run, reverse bool) any { return f.Cursor(run, reverse) })
}

// runFilterOf reads the runs list's query parameters.
func (a *API) runFilterOf(c *fiber.Ctx, exportID string) (batchexport.RunFilter, error) {
	f := batchexport.RunFilter{Export: exportID, Limit: defaultPageSize}
	ordering := cmp.Or(c.Query("ordering"), "-created_at")
	f.OrderBy, f.Desc = strings.TrimPrefix(ordering, "-"), strings.HasPrefix(ordering, "-")
	if !slices.Contains(batchexport.RunOrders, f.OrderBy) {
		return f, errInvalidChoice("ordering", ordering)
	}
	for _, v := range c.Context().QueryArgs().PeekMulti("status") {
		status := string(v)
		if !slices.Contains(batchexport.Statuses, status) {
			return f, errInvalidChoice("status", status)
		}
		f.Statuses = append(f.Statuses, status)
	}
	after := a.exports.Now().UTC().Add(-7 * 24 * time.Hour)
	f.After = &after
	for _, bound := range []struct {
		name string
		dst  **time.Time
	}{{"after", &f.After}, {"before", &f.Before}} {
		if raw := c.Query(bound.name); raw != "" {
			t, err := parseTimestamp(raw)
			if err != nil {
				return f, errDatetimeFormat(bound.name)
			}
			*bound.dst = &t
		}
	}
	if n, err := strconv.Atoi(c.Query("limit")); err == nil && n > 0 {
		f.Limit = n
	}
	if raw := c.Query("cursor"); raw != "" {
		var from batchexport.RunCursor
		if err := decodeCursor(raw, &from); err != nil {
			return f, err
		}
		if _, err := uuid.Parse(from.ID); err != nil {
			return f, errInvalidCursor()
		}
		f.From = &from
	}
	return f, nil
}

// runOfPath reads the run that the path names, of the export of the path.
func (a *API) runOfPath(c *fiber.Ctx) (batchexport.Export, batchexport.Run, error) {
	export, err := a.exportOfPath(c)
	if err != nil {
		return export, batchexport.Run{}, err
	}
	run, ok, err := a.exports.Run(c.UserContext(), export.ID, c.Params("run_id"))
	if err == nil && !ok {
		err = errRecordNotFound()
	}
	return export, run, err
}

// GET .../batch_exports/{id}/runs/{run_id}/ (batch_export:read)
func (a *API) batchExportRunRetrieve(c *fiber.Ctx) error {
	_, run, err := a.runOfPath(c)
	if err != nil {
		return err
	}
	return c.JSON(run)
}

// POST .../batch_exports/{id}/runs/{run_id}/retry/ (batch_export:write)
// Runs the run's window again, as a backfill of that window: 201 {"backfill_id"}, as
// in PostHog. A run that is running is left to finish (400).
func (a *API) batchExportRunRetry(c *fiber.Ctx) error {
	export, run, err := a.runOfPath(c)
	if err != nil {
		return err
	}
	if run.Status == batchexport.StatusRunning {
		return errValidation("", "invalid_input", "Cannot retry a run that is running.")
	}
	b, err := a.backfill(c, export, run.DataIntervalStart, run.DataIntervalEnd)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"backfill_id": b.ID})
}

// backfill queues the windows of the export that overlap [from, to) and have ended;
// a span without one, or with more than a backfill may cover, is the client's error.
func (a *API) backfill(c *fiber.Ctx, export batchexport.Export, from, to time.Time) (batchexport.Backfill, error) {
	b, err := a.exports.Backfill(c.UserContext(), export, from, to)
	var tooMany *batchexport.TooManyWindows
	switch {
	case errors.Is(err, batchexport.ErrNoWindows):
		return b, errValidation("", "invalid_input", "The backfill covers no window of this export that has ended yet.")
	case errors.As(err, &tooMany):
		return b, errValidation("start_at", "invalid_input", fmt.Sprintf(
			"The backfill covers %d windows of this export, and a backfill covers at most %d (a year of 5-minute windows): "+
				"start it later, or backfill the span in parts.", tooMany.Windows, batchexport.MaxBackfillWindows))
	}
	return b, err
}

// backfillInput is the body of a backfill: the span whose windows to export again.
type backfillInput struct {
	StartAt optional[string] `json:"start_at"`
	EndAt   optional[string] `json:"end_at"`
}

func (in backfillInput) span() (time.Time, time.Time, error) {
	var bounds [2]time.Time
	for i, f := range []struct {
		attr  string
		value optional[string]
	}{{"start_at", in.StartAt}, {"end_at", in.EndAt}} {
		if !f.value.Set || f.value.Null || f.value.Value == "" {
			return bounds[0], bounds[1], errRequired(f.attr)
		}
		t, err := parseTimestamp(f.value.Value)
		if err != nil {
			return bounds[0], bounds[1], errDatetimeFormat(f.attr)
		}
		bounds[i] = t
	}
	if !bounds[1].After(bounds[0]) {
		return bounds[0], bounds[1], errValidation("end_at", "invalid_input", "The end of a backfill must be after its start.")
	}
	return bounds[0], bounds[1], nil
}

// createBackfill reads the body and queues the backfill.
func (a *API) createBackfill(c *fiber.Ctx) (batchexport.Backfill, error) {
	export, err := a.exportOfPath(c)
	if err != nil {
		return batchexport.Backfill{}, err
	}
	var in backfillInput
	if err := bindBody(c, &in); err != nil {
		return batchexport.Backfill{}, err
	}
	from, to, err := in.span()
	if err != nil {
		return batchexport.Backfill{}, err
	}
	return a.backfill(c, export, from, to)
}

// POST .../batch_exports/{id}/backfill/ (batch_export:write)
// PostHog's first backfill action: {"start_at", "end_at"}, answered with
// {"backfill_id"}. Runs the windows of the span that have ended, in order; a span of
// more than batchexport.MaxBackfillWindows windows is refused (400 on start_at).
func (a *API) batchExportBackfill(c *fiber.Ctx) error {
	b, err := a.createBackfill(c)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"backfill_id": b.ID})
}

// POST .../batch_exports/{id}/backfills/ (batch_export:write)
// The same as backfill/, answered with the backfill: 201.
func (a *API) batchExportBackfillCreate(c *fiber.Ctx) error {
	b, err := a.createBackfill(c)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(b)
}

// GET .../batch_exports/{id}/backfills/ (batch_export:read)
// The export's backfills, newest first, paginated like other lists.
func (a *API) batchExportBackfillList(c *fiber.Ctx) error {
	export, err := a.exportOfPath(c)
	if err != nil {
		return err
	}
	pg := pageOf(c)
	backfills, count, err := a.exports.Backfills(c.UserContext(), export.ID, pg.limit, pg.offset)
	if err != nil {
		return err
	}
	return a.sendPage(c, pg, count, backfills)
}
