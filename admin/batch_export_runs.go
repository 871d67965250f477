package admin

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/batchexport"
)

// batchExportRunRecord is PostHog's BatchExportRun: one window of an export and how
// its export went. attempts and next_attempt_at are hedge's: how many times it ran,
// and when a failed run runs again.
type batchExportRunRecord struct {
	ID                string     `json:"id"`
	BatchExport       string     `json:"batch_export"`
	Status            string     `json:"status"`
	RecordsCompleted  *int64     `json:"records_completed"`
	BytesExported     *int64     `json:"bytes_exported"`
	LatestError       *string    `json:"latest_error"`
	DataIntervalStart time.Time  `json:"data_interval_start"`
	DataIntervalEnd   time.Time  `json:"data_interval_end"`
	Attempts          int        `json:"attempts"`
	NextAttemptAt     *time.Time `json:"next_attempt_at"`
	Backfill          *string    `json:"backfill"`
	CreatedAt         time.Time  `json:"created_at"`
	FinishedAt        *time.Time `json:"finished_at"`
	LastUpdatedAt     time.Time  `json:"last_updated_at"`
}

// runStatuses are the statuses a run can have (see package batchexport).
var runStatuses = []string{"Starting", "Running", "Completed", "FailedRetryable", "Failed", "Cancelled"}

const batchExportRunColumns = `SELECT r.id::VARCHAR, r.batch_export_id::VARCHAR, r.status, r.records_completed, r.bytes_exported, r.latest_error,
	r.data_interval_start, r.data_interval_end, r.attempts, r.next_attempt_at, r.backfill_id::VARCHAR, r.created_at, r.finished_at, r.last_updated_at
	FROM meta.batch_export_runs r`

func scanBatchExportRun(row interface{ Scan(...any) error }) (batchExportRunRecord, error) {
	var r batchExportRunRecord
	err := row.Scan(&r.ID, &r.BatchExport, &r.Status, &r.RecordsCompleted, &r.BytesExported, &r.LatestError,
		&r.DataIntervalStart, &r.DataIntervalEnd, &r.Attempts, &r.NextAttemptAt, &r.Backfill, &r.CreatedAt, &r.FinishedAt, &r.LastUpdatedAt)
	r.DataIntervalStart, r.DataIntervalEnd = r.DataIntervalStart.UTC(), r.DataIntervalEnd.UTC()
	r.CreatedAt, r.LastUpdatedAt = r.CreatedAt.UTC(), r.LastUpdatedAt.UTC()
	r.NextAttemptAt, r.FinishedAt = utcTime(r.NextAttemptAt), utcTime(r.FinishedAt)
	return r, err
}

func (a *API) queryRuns(ctx context.Context, query string, args ...any) ([]batchExportRunRecord, error) {
	rows, err := a.db.QueryContext(ctx, batchExportRunColumns+" "+query, args...)
	if err != nil {
		return nil, fmt.Errorf("cannot list batch export runs: %w", err)
	}
	defer rows.Close()
	runs := []batchExportRunRecord{}
	for rows.Next() {
		r, err := scanBatchExportRun(rows)
		if err != nil {
			return nil, fmt.Errorf("cannot read batch export runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read batch export runs: %w", err)
	}
	return runs, nil
}

// latestRuns are an export's ten newest runs (PostHog's latest_runs).
func (a *API) latestRuns(ctx context.Context, exportID string) ([]batchExportRunRecord, error) {
	return a.queryRuns(ctx, `WHERE r.batch_export_id = ? ORDER BY r.created_at DESC, r.id DESC LIMIT 10`, exportID)
}

// runOrderings are the orderings of the runs list: the column and whether it descends.
var runOrderings = map[string]struct {
	column string
	desc   bool
}{
	"created_at": {"r.created_at", false}, "-created_at": {"r.created_at", true},
	"data_interval_start": {"r.data_interval_start", false}, "-data_interval_start": {"r.data_interval_start", true},
}

// runCursor is a position in the runs list: the sort value and id of a run, and
// whether the page runs backwards from it (a previous link). Opaque to clients.
type runCursor struct {
	Value   time.Time `json:"v"`
	ID      string    `json:"id"`
	Reverse bool      `json:"r,omitempty"`
}

func (c runCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeRunCursor(s string) (runCursor, error) {
	var c runCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err == nil {
		_, err = uuid.Parse(c.ID)
	}
	if err != nil {
		return c, errNotFound("Invalid cursor")
	}
	return c, nil
}

// cursorPage is DRF's CursorPagination envelope: no count.
type cursorPage struct {
	Next     *string `json:"next"`
	Previous *string `json:"previous"`
	Results  any     `json:"results"`
}

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
	ctx := c.UserContext()
	ordering := cmp.Or(c.Query("ordering"), "-created_at")
	order, ok := runOrderings[ordering]
	if !ok {
		return errInvalidChoice("ordering", ordering)
	}
	where := []string{"r.batch_export_id = ?"}
	args := []any{export.ID}
	var statuses []string
	for _, v := range c.Context().QueryArgs().PeekMulti("status") {
		status := string(v)
		if !slices.Contains(runStatuses, status) {
			return errInvalidChoice("status", status)
		}
		statuses = append(statuses, status)
	}
	if len(statuses) > 0 {
		where = append(where, "r.status IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(statuses)), ", ")+")")
		for _, status := range statuses {
			args = append(args, status)
		}
	}
	after := a.exportClock().Add(-7 * 24 * time.Hour)
	for _, bound := range []struct {
		name string
		op   string
		def  *time.Time
	}{{"after", ">=", &after}, {"before", "<", nil}} {
		value := bound.def
		if raw := c.Query(bound.name); raw != "" {
			t, err := parseTimestamp(raw)
			if err != nil {
				return errDatetimeFormat(bound.name)
			}
			value = &t
		}
		if value != nil {
			where, args = append(where, "r.created_at "+bound.op+" ?"), append(args, *value)
		}
	}
	limit := defaultPageSize
	if n, err := strconv.Atoi(c.Query("limit")); err == nil && n > 0 {
		limit = n
	}
	var cursor *runCursor
	if raw := c.Query("cursor"); raw != "" {
		cur, err := decodeRunCursor(raw)
		if err != nil {
			return err
		}
		cursor = &cur
	}
	// A reverse page reads backwards from its cursor and is turned around after.
	desc := order.desc
	if cursor != nil && cursor.Reverse {
		desc = !desc
	}
	beyond, dir := ">", "ASC"
	if desc {
		beyond, dir = "<", "DESC"
	}
	if cursor != nil {
		where = append(where, "("+order.column+" "+beyond+" ? OR ("+order.column+" = ? AND r.id "+beyond+" ?::UUID))")
		args = append(args, cursor.Value, cursor.Value, cursor.ID)
	}
	runs, err := a.queryRuns(ctx, "WHERE "+strings.Join(where, " AND ")+
		" ORDER BY "+order.column+" "+dir+", r.id "+dir+" LIMIT ?", append(args, limit+1)...)
	if err != nil {
		return err
	}
	more := len(runs) > limit
	runs = runs[:min(len(runs), limit)]
	reverse := cursor != nil && cursor.Reverse
	if reverse {
		slices.Reverse(runs)
	}
	sortValue := func(r batchExportRunRecord) time.Time {
		if order.column == "r.created_at" {
			return r.CreatedAt
		}
		return r.DataIntervalStart
	}
	page := cursorPage{Results: runs}
	if len(runs) > 0 {
		// Forward: more after this page if the read found more, or if this page was read
		// backwards (it came from there). Backward: the mirror image.
		if (!reverse && more) || reverse {
			last := runs[len(runs)-1]
			next := a.cursorURL(c, runCursor{Value: sortValue(last), ID: last.ID})
			page.Next = &next
		}
		if cursor != nil && (!reverse || more) {
			first := runs[0]
			prev := a.cursorURL(c, runCursor{Value: sortValue(first), ID: first.ID, Reverse: true})
			page.Previous = &prev
		}
	}
	return c.JSON(page)
}

// cursorURL is the request's URL with its cursor replaced.
func (a *API) cursorURL(c *fiber.Ctx, cursor runCursor) string {
	return a.requestURL(c, func(query url.Values) { query.Set("cursor", cursor.encode()) })
}

// loadRun reads a run of the export of the path.
func (a *API) loadRun(c *fiber.Ctx) (batchExportRecord, batchExportRunRecord, error) {
	export, err := a.exportOfPath(c)
	if err != nil {
		return export, batchExportRunRecord{}, err
	}
	ctx := c.UserContext()
	id, err := uuid.Parse(c.Params("run_id"))
	if err != nil {
		return export, batchExportRunRecord{}, errRecordNotFound()
	}
	run, err := scanBatchExportRun(a.db.QueryRowContext(ctx, batchExportRunColumns+` WHERE r.id = ? AND r.batch_export_id = ?`, id, export.ID))
	if errors.Is(err, sql.ErrNoRows) {
		return export, run, errRecordNotFound()
	}
	if err != nil {
		return export, run, fmt.Errorf("cannot read batch export run %s: %w", id, err)
	}
	return export, run, nil
}

// GET .../batch_exports/{id}/runs/{run_id}/ (batch_export:read)
func (a *API) batchExportRunRetrieve(c *fiber.Ctx) error {
	_, run, err := a.loadRun(c)
	if err != nil {
		return err
	}
	return c.JSON(run)
}

// POST .../batch_exports/{id}/runs/{run_id}/retry/ (batch_export:write)
// Runs the run's window again, as a backfill of that window: 201 {"backfill_id"}, as
// in PostHog. A run that is running is left to finish (400).
func (a *API) batchExportRunRetry(c *fiber.Ctx) error {
	export, run, err := a.loadRun(c)
	if err != nil {
		return err
	}
	if run.Status == "Running" {
		return errValidation("", "invalid_input", "Cannot retry a run that is running.")
	}
	b, err := a.backfill(c.UserContext(), export, run.DataIntervalStart, run.DataIntervalEnd)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"backfill_id": b.ID})
}

// backfillRecord is a backfill: the windows of [start_at, end_at) queued at once.
// status sums up its runs: Running while any is queued or running, then Failed if any
// failed, Cancelled if any was cancelled, else Completed.
type backfillRecord struct {
	ID          string     `json:"id"`
	BatchExport string     `json:"batch_export"`
	TeamID      int64      `json:"team_id"`
	StartAt     time.Time  `json:"start_at"`
	EndAt       time.Time  `json:"end_at"`
	Status      string     `json:"status"`
	TotalRuns   int        `json:"total_runs"`
	CreatedAt   time.Time  `json:"created_at"`
	FinishedAt  *time.Time `json:"finished_at"`
}

const backfillColumns = `SELECT f.id::VARCHAR, f.batch_export_id::VARCHAR, f.team_id, f.start_at, f.end_at, f.created_at,
	count(r.id),
	CASE WHEN count(*) FILTER (WHERE r.status IN ('Starting', 'Running', 'FailedRetryable')) > 0 THEN 'Running'
		WHEN count(*) FILTER (WHERE r.status = 'Failed') > 0 THEN 'Failed'
		WHEN count(*) FILTER (WHERE r.status = 'Cancelled') > 0 THEN 'Cancelled'
		ELSE 'Completed' END,
	CASE WHEN count(*) FILTER (WHERE r.status IN ('Starting', 'Running', 'FailedRetryable')) = 0 THEN max(r.finished_at) END
	FROM meta.batch_export_backfills f LEFT JOIN meta.batch_export_runs r ON r.backfill_id = f.id`

const backfillGroup = ` GROUP BY f.id, f.batch_export_id, f.team_id, f.start_at, f.end_at, f.created_at`

func scanBackfill(row interface{ Scan(...any) error }) (backfillRecord, error) {
	var b backfillRecord
	err := row.Scan(&b.ID, &b.BatchExport, &b.TeamID, &b.StartAt, &b.EndAt, &b.CreatedAt, &b.TotalRuns, &b.Status, &b.FinishedAt)
	b.StartAt, b.EndAt, b.CreatedAt, b.FinishedAt = b.StartAt.UTC(), b.EndAt.UTC(), b.CreatedAt.UTC(), utcTime(b.FinishedAt)
	return b, err
}

// errNoWindows is a backfill that covers no window that has ended.
var errNoWindows = errValidation("", "invalid_input", "The backfill covers no window of this export that has ended yet.")

func isNoWindows(err error) bool { return errors.Is(err, errNoWindows) }

// backfill queues a run for each window of the export that overlaps [from, to) and
// has ended. A window that has a run already runs again under that run (its files are
// overwritten, never doubled), unless it is running right now.
func (a *API) backfill(ctx context.Context, export batchExportRecord, from, to time.Time) (backfillRecord, error) {
	now := a.exportClock()
	windows := batchexport.Windows(export.Interval, from, to, now)
	if len(windows) == 0 {
		return backfillRecord{}, errNoWindows
	}
	id := uuid.Must(uuid.NewV7()).String()
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return backfillRecord{}, fmt.Errorf("cannot backfill batch export %s: %w", export.ID, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta.batch_export_backfills VALUES (?, ?, ?, ?, ?, ?)`,
		id, export.ID, export.TeamID, from, to, now); err != nil {
		return backfillRecord{}, fmt.Errorf("cannot backfill batch export %s: %w", export.ID, err)
	}
	for _, w := range windows {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta.batch_export_runs (id, batch_export_id, team_id, data_interval_start, data_interval_end,
				status, backfill_id, created_at, last_updated_at) VALUES (?, ?, ?, ?, ?, 'Starting', ?, ?, ?)
			ON CONFLICT (batch_export_id, data_interval_start, data_interval_end) DO UPDATE SET status = 'Starting', attempts = 0,
				latest_error = NULL, next_attempt_at = NULL, finished_at = NULL, backfill_id = excluded.backfill_id,
				last_updated_at = excluded.last_updated_at
			WHERE batch_export_runs.status <> 'Running'`,
			uuid.Must(uuid.NewV7()).String(), export.ID, export.TeamID, w.Start, w.End, id, now, now); err != nil {
			return backfillRecord{}, fmt.Errorf("cannot backfill batch export %s: %w", export.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return backfillRecord{}, fmt.Errorf("cannot backfill batch export %s: %w", export.ID, err)
	}
	if a.exports != nil {
		a.exports.Wake()
	}
	return a.loadBackfill(ctx, export.ID, id)
}

func (a *API) loadBackfill(ctx context.Context, exportID, id string) (backfillRecord, error) {
	b, err := scanBackfill(a.db.QueryRowContext(ctx, backfillColumns+` WHERE f.id = ? AND f.batch_export_id = ?`+backfillGroup, id, exportID))
	if errors.Is(err, sql.ErrNoRows) {
		return b, errRecordNotFound()
	}
	if err != nil {
		return b, fmt.Errorf("cannot read backfill %s: %w", id, err)
	}
	return b, nil
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
func (a *API) createBackfill(c *fiber.Ctx) (backfillRecord, error) {
	export, err := a.exportOfPath(c)
	if err != nil {
		return backfillRecord{}, err
	}
	ctx := c.UserContext()
	var in backfillInput
	if err := bindBody(c, &in); err != nil {
		return backfillRecord{}, err
	}
	from, to, err := in.span()
	if err != nil {
		return backfillRecord{}, err
	}
	return a.backfill(ctx, export, from, to)
}

// POST .../batch_exports/{id}/backfill/ (batch_export:write)
// PostHog's first backfill action: {"start_at", "end_at"}, answered with
// {"backfill_id"}. Runs the windows of the span that have ended, in order.
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
	ctx := c.UserContext()
	pg := pageOf(c)
	var count int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM meta.batch_export_backfills WHERE batch_export_id = ?`, export.ID).Scan(&count); err != nil {
		return fmt.Errorf("cannot count backfills: %w", err)
	}
	rows, err := a.db.QueryContext(ctx, backfillColumns+` WHERE f.batch_export_id = ?`+backfillGroup+` ORDER BY f.created_at DESC, f.id DESC LIMIT ? OFFSET ?`,
		export.ID, pg.limit, pg.offset)
	if err != nil {
		return fmt.Errorf("cannot list backfills: %w", err)
	}
	defer rows.Close()
	backfills := []backfillRecord{}
	for rows.Next() {
		b, err := scanBackfill(rows)
		if err != nil {
			return fmt.Errorf("cannot read backfills: %w", err)
		}
		backfills = append(backfills, b)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read backfills: %w", err)
	}
	return a.sendPage(c, pg, count, backfills)
}
