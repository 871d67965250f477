package batchexport

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

// This file is the only code that writes the run queue (meta.batch_export_runs), the
// backfills (meta.batch_export_backfills), the schedule (meta.batch_export_schedules)
// and an export's paused and deleted state: the state machine of a run in one place.

// The statuses of a run. A run is Starting until the Runner takes it, Running while
// it does, then Completed, or FailedRetryable until its next attempt, or Failed when
// out of attempts; Cancelled when its export was deleted before it ran.
const (
	StatusStarting        = "Starting"
	StatusRunning         = "Running"
	StatusCompleted       = "Completed"
	StatusFailedRetryable = "FailedRetryable"
	StatusFailed          = "Failed"
	StatusCancelled       = "Cancelled"
)

// Statuses are the statuses a run can have.
var Statuses = []string{StatusStarting, StatusRunning, StatusCompleted, StatusFailedRetryable, StatusFailed, StatusCancelled}

// Run is PostHog's BatchExportRun: one window of an export and how its export went.
// Attempts and NextAttemptAt are hedge's: how many times it ran, and when a failed run
// runs again.
type Run struct {
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

const runColumns = `SELECT r.id::VARCHAR, r.batch_export_id::VARCHAR, r.status, r.records_completed, r.bytes_exported, r.latest_error,
	r.data_interval_start, r.data_interval_end, r.attempts, r.next_attempt_at, r.backfill_id::VARCHAR, r.created_at, r.finished_at, r.last_updated_at
	FROM meta.batch_export_runs r`

func scanRun(row records.Scanner) (Run, error) {
	var r Run
	err := row.Scan(&r.ID, &r.BatchExport, &r.Status, &r.RecordsCompleted, &r.BytesExported, &r.LatestError,
		&r.DataIntervalStart, &r.DataIntervalEnd, &r.Attempts, &r.NextAttemptAt, &r.Backfill, &r.CreatedAt, &r.FinishedAt, &r.LastUpdatedAt)
	r.DataIntervalStart, r.DataIntervalEnd = r.DataIntervalStart.UTC(), r.DataIntervalEnd.UTC()
	r.CreatedAt, r.LastUpdatedAt = r.CreatedAt.UTC(), r.LastUpdatedAt.UTC()
	r.NextAttemptAt, r.FinishedAt = utc(r.NextAttemptAt), utc(r.FinishedAt)
	return r, err
}

// LatestRuns are an export's ten newest runs (PostHog's latest_runs).
func (r *Runner) LatestRuns(ctx context.Context, exportID string) ([]Run, error) {
	return records.All(ctx, r.db, "batch export runs", scanRun,
		runColumns+` WHERE r.batch_export_id = ? ORDER BY r.created_at DESC, r.id DESC LIMIT 10`, exportID)
}

// Run is the run with the given id of the given export; ok is false if there is none.
func (r *Runner) Run(ctx context.Context, exportID, runID string) (run Run, ok bool, err error) {
	id, err := uuid.Parse(runID)
	if err != nil {
		return run, false, nil
	}
	run, err = scanRun(r.db.QueryRowContext(ctx, runColumns+` WHERE r.id = ? AND r.batch_export_id = ?`, id, exportID))
	if errors.Is(err, sql.ErrNoRows) {
		return run, false, nil
	}
	if err != nil {
		return run, false, fmt.Errorf("cannot read batch export run %s: %w", runID, err)
	}
	return run, true, nil
}

// RunOrders are the columns the runs of an export can be listed by.
var RunOrders = []string{"created_at", "data_interval_start"}

// RunFilter selects a page of an export's runs.
type RunFilter struct {
	Export string
	// Statuses keeps the runs with one of these statuses; none keeps all.
	Statuses []string
	// After and Before bound created_at: After <= created_at < Before.
	After, Before *time.Time
	// OrderBy is one of RunOrders; Desc reverses it. Ties are broken by id.
	OrderBy string
	Desc    bool
	// From is where the page starts, exclusive; nil for the first page.
	From *RunCursor
	// Limit is the page's size.
	Limit int
}

// RunCursor is a position in a list of runs: the ordering value and id of a run, and
// whether the page reads backwards from it (a previous page).
type RunCursor struct {
	Value   time.Time `json:"v"`
	ID      string    `json:"id"`
	Reverse bool      `json:"r,omitempty"`
}

// Cursor is the position of run in the order of f: reverse for the page before it,
// else the page after it.
func (f RunFilter) Cursor(run Run, reverse bool) RunCursor {
	value := run.CreatedAt
	if f.OrderBy == "data_interval_start" {
		value = run.DataIntervalStart
	}
	return RunCursor{Value: value, ID: run.ID, Reverse: reverse}
}

// Runs is a page of runs in the filter's order, and whether the read found more runs
// beyond the page in the direction it read (past the end for a forward page, before
// the start for a reverse one).
func (r *Runner) Runs(ctx context.Context, f RunFilter) ([]Run, bool, error) {
	if !slices.Contains(RunOrders, f.OrderBy) {
		return nil, false, fmt.Errorf("cannot order batch export runs by %q", f.OrderBy)
	}
	if f.From != nil {
		if _, err := uuid.Parse(f.From.ID); err != nil {
			return nil, false, fmt.Errorf("cannot list batch export runs from run %q: %w", f.From.ID, err)
		}
	}
	// Both columns are of the fixed list RunOrders, never the request's text.
	column := "r." + f.OrderBy
	where := []string{"r.batch_export_id = ?"}
	args := []any{f.Export}
	if len(f.Statuses) > 0 {
		where, args = append(where, "list_contains(?::VARCHAR[], r.status)"), append(args, f.Statuses)
	}
	if f.After != nil {
		where, args = append(where, "r.created_at >= ?"), append(args, *f.After)
	}
	if f.Before != nil {
		where, args = append(where, "r.created_at < ?"), append(args, *f.Before)
	}
	// A reverse page reads backwards from its cursor and is turned around after.
	reverse := f.From != nil && f.From.Reverse
	beyond, dir := ">", "ASC"
	if f.Desc != reverse {
		beyond, dir = "<", "DESC"
	}
	if f.From != nil {
		where = append(where, "("+column+" "+beyond+" ? OR ("+column+" = ? AND r.id "+beyond+" ?::UUID))")
		args = append(args, f.From.Value, f.From.Value, f.From.ID)
	}
	runs, err := records.All(ctx, r.db, "batch export runs", scanRun,
		runColumns+" WHERE "+strings.Join(where, " AND ")+" ORDER BY "+column+" "+dir+", r.id "+dir+" LIMIT ?",
		append(args, f.Limit+1)...)
	if err != nil {
		return nil, false, err
	}
	more := len(runs) > f.Limit
	runs = runs[:min(len(runs), f.Limit)]
	if reverse {
		slices.Reverse(runs)
	}
	return runs, more, nil
}

// Backfill is PostHog's backfill: the windows of [start_at, end_at) that had ended
// when it was made, queued a batch at a time as earlier ones finish (MaxQueuedRuns).
// TotalRuns is the runs it has queued and the windows it has yet to queue. Status sums
// up both: Running while a window is yet to be queued or a run is queued or running,
// then Failed if any run failed, Cancelled if any was cancelled, else Completed.
type Backfill struct {
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

// backfillLeft is how many windows a backfill f has yet to queue.
const backfillLeft = `greatest(date_diff('second', f.queued_through, f.windows_end) // f.window_seconds, 0)`

// backfillColumns reads a backfill and sums up its runs; its arguments are the
// statuses of an unfinished run, then Failed, then Cancelled, then the unfinished
// statuses again.
const backfillColumns = `SELECT f.id::VARCHAR, f.batch_export_id::VARCHAR, f.team_id, f.start_at, f.end_at, f.created_at,
	count(r.id) + ` + backfillLeft + `,
	CASE WHEN count(*) FILTER (WHERE list_contains(?::VARCHAR[], r.status)) > 0 OR ` + backfillLeft + ` > 0 THEN 'Running'
		WHEN count(*) FILTER (WHERE r.status = ?) > 0 THEN 'Failed'
		WHEN count(*) FILTER (WHERE r.status = ?) > 0 THEN 'Cancelled'
		ELSE 'Completed' END,
	CASE WHEN count(*) FILTER (WHERE list_contains(?::VARCHAR[], r.status)) = 0 AND ` + backfillLeft + ` = 0 THEN max(r.finished_at) END
	FROM meta.batch_export_backfills f LEFT JOIN meta.batch_export_runs r ON r.backfill_id = f.id`

const backfillGroup = ` GROUP BY f.id, f.batch_export_id, f.team_id, f.start_at, f.end_at, f.created_at, f.queued_through, f.windows_end, f.window_seconds`

// unfinished are the statuses of a run that will run (again).
var unfinished = []string{StatusStarting, StatusRunning, StatusFailedRetryable}

// backfillArgs are backfillColumns' arguments followed by args.
func backfillArgs(args ...any) []any {
	return append([]any{unfinished, StatusFailed, StatusCancelled, unfinished}, args...)
}

func scanBackfill(row records.Scanner) (Backfill, error) {
	var b Backfill
	err := row.Scan(&b.ID, &b.BatchExport, &b.TeamID, &b.StartAt, &b.EndAt, &b.CreatedAt, &b.TotalRuns, &b.Status, &b.FinishedAt)
	b.StartAt, b.EndAt, b.CreatedAt, b.FinishedAt = b.StartAt.UTC(), b.EndAt.UTC(), b.CreatedAt.UTC(), utc(b.FinishedAt)
	return b, err
}

// Backfills is one page (limit, offset) of an export's backfills, newest first, and
// how many there are in all.
func (r *Runner) Backfills(ctx context.Context, exportID string, limit, offset int) ([]Backfill, int, error) {
	const list = backfillColumns + ` WHERE f.batch_export_id = ?` + backfillGroup
	return records.Page(ctx, r.db, "backfills", scanBackfill, `SELECT count(*) FROM (`+list+`)`,
		list+` ORDER BY f.created_at DESC, f.id DESC`, backfillArgs(exportID), limit, offset)
}

// ErrNoWindows is a backfill that covers no window of its export that has ended.
var ErrNoWindows = errors.New("the backfill covers no window of this export that has ended yet")

// MaxBackfillWindows bounds the windows of one backfill, and how far back the schedule
// of an export catches up: a leap year of windows of the shortest interval, 5 minutes
// (105,408), so that one backfill of any interval covers a year. A backfill over more
// windows is refused whole (TooManyWindows), never cut short: a longer span is
// backfilled in parts. Queuing is bounded apart from this (MaxQueuedRuns): the cap
// bounds the work one request asks for, and the rows it adds to the runs table.
const MaxBackfillWindows = 366 * 24 * 12

// TooManyWindows is a backfill over more than MaxBackfillWindows windows.
type TooManyWindows struct {
	// Windows is how many windows the backfill covers.
	Windows int64
}

func (e *TooManyWindows) Error() string {
	return fmt.Sprintf("the backfill covers %d windows of this export, more than the %d a backfill may cover", e.Windows, MaxBackfillWindows)
}

// Backfill queues a run for each window of the export that overlaps [from, to) and
// has ended: ErrNoWindows if there is none, TooManyWindows if there are more than
// MaxBackfillWindows. It records the backfill with its first batch of runs; the Runner
// queues the rest as earlier ones finish, so that no backfill holds more than
// MaxQueuedRuns in the queue, or writes more in one transaction. A window that has a
// run already runs again under that run, so its files are overwritten, never doubled;
// a run that is Running when the backfill reaches it runs again once it has finished,
// since it read its window before the backfill and maybe by commit time (byEventTime).
// A backfill of a deleted export queues nothing.
func (r *Runner) Backfill(ctx context.Context, e Export, from, to time.Time) (Backfill, error) {
	now := r.Now().UTC()
	first, end, n := backfillSpan(e.Interval, from, to, now)
	switch {
	case n == 0:
		return Backfill{}, ErrNoWindows
	case n > MaxBackfillWindows:
		return Backfill{}, &TooManyWindows{Windows: n}
	}
	length := intervalLengths[e.Interval]
	b := pendingBackfill{id: uuid.Must(uuid.NewV7()).String(), export: e.ID, length: length, queuedThrough: first, end: end}
	r.queueMu.Lock()
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta.batch_export_backfills (id, batch_export_id, team_id, start_at, end_at, created_at,
			window_seconds, queued_through, windows_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			b.id, e.ID, e.TeamID, from, to, now, int64(length/time.Second), first, end); err != nil {
			return err
		}
		return r.queueBackfill(ctx, tx, b, now)
	})
	r.queueMu.Unlock()
	if err != nil {
		return Backfill{}, fmt.Errorf("cannot backfill batch export %s: %w", e.ID, err)
	}
	r.Wake()
	backfill, err := scanBackfill(r.db.QueryRowContext(ctx, backfillColumns+` WHERE f.id = ?`+backfillGroup, backfillArgs(b.id)...))
	if err != nil {
		return backfill, fmt.Errorf("cannot read backfill %s: %w", b.id, err)
	}
	return backfill, nil
}

// pendingBackfill is a backfill with windows yet to queue: its windows of length
// from queuedThrough to end, and how many of its runs are unfinished.
type pendingBackfill struct {
	id, export         string
	length             time.Duration
	queuedThrough, end time.Time
	unfinished         int
}

// queueBackfill queues, in tx, the next windows of b that fit under MaxQueuedRuns, and
// records how far b has queued.
func (r *Runner) queueBackfill(ctx context.Context, tx *sql.Tx, b pendingBackfill, now time.Time) error {
	n := min(int64(r.cfg.MaxQueuedRuns-b.unfinished), windowsBetween(b.queuedThrough, b.end, b.length))
	if n <= 0 {
		return nil
	}
	if err := insertRuns(ctx, tx, b.export, &b.id, b.queuedThrough, n, b.length, now); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE meta.batch_export_backfills SET queued_through = ? WHERE id = ?`,
		addWindows(b.queuedThrough, n, b.length), b.id)
	return err
}

// queueBackfills queues the next windows of each backfill of an active export that has
// windows yet to queue and fewer than MaxQueuedRuns runs unfinished, oldest backfill
// first, each batch in a transaction of its own.
func (r *Runner) queueBackfills(ctx context.Context) error {
	pending, err := records.All(ctx, r.db, "the backfills to queue", func(row records.Scanner) (pendingBackfill, error) {
		var b pendingBackfill
		var seconds int64
		err := row.Scan(&b.id, &b.export, &seconds, &b.queuedThrough, &b.end, &b.unfinished)
		b.length, b.queuedThrough, b.end = time.Duration(seconds)*time.Second, b.queuedThrough.UTC(), b.end.UTC()
		return b, err
	}, `SELECT f.id::VARCHAR, f.batch_export_id::VARCHAR, f.window_seconds, f.queued_through, f.windows_end,
			(SELECT count(*) FROM meta.batch_export_runs r WHERE r.backfill_id = f.id AND list_contains(?::VARCHAR[], r.status))
		FROM meta.batch_export_backfills f JOIN meta.batch_exports b ON b.id = f.batch_export_id
		WHERE f.queued_through < f.windows_end AND NOT b.deleted AND NOT b.paused
		ORDER BY f.created_at, f.id`, unfinished)
	if err != nil {
		return err
	}
	now := r.cfg.Now().UTC()
	for _, b := range pending {
		if b.unfinished >= r.cfg.MaxQueuedRuns {
			continue
		}
		r.queueMu.Lock()
		err := r.inTx(ctx, func(tx *sql.Tx) error { return r.queueBackfill(ctx, tx, b, now) })
		r.queueMu.Unlock()
		if err != nil {
			return fmt.Errorf("cannot queue the windows of backfill %s: %w", b.id, err)
		}
	}
	return nil
}

// insertRuns creates, in tx and in one statement, the runs of the n windows of length
// from first, of the export unless it is deleted. backfill is the backfill that queues
// them, or nil for the schedule. A window that has a run keeps it: the schedule leaves
// that run be; a backfill queues it again under itself, its attempts and outcome
// cleared. A run that is running is queued again too: the Runner records the outcome
// of a run only while it is Running (complete, fail, requeue), so the attempt in
// progress ends without a trace and the run is taken again.
func insertRuns(ctx context.Context, tx *sql.Tx, exportID string, backfill *string, first time.Time, n int64, length time.Duration, now time.Time) error {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	seconds := int64(length / time.Second)
	onConflict := `DO NOTHING`
	if backfill != nil {
		onConflict = `DO UPDATE SET status = excluded.status, attempts = 0, latest_error = NULL, next_attempt_at = NULL,
			finished_at = NULL, backfill_id = excluded.backfill_id, last_updated_at = excluded.last_updated_at`
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO meta.batch_export_runs (id, batch_export_id, team_id, data_interval_start, data_interval_end,
			status, backfill_id, created_at, last_updated_at)
		SELECT w.id::UUID, b.id, b.team_id, ?::TIMESTAMPTZ + to_seconds(w.i * ?), ?::TIMESTAMPTZ + to_seconds((w.i + 1) * ?), ?, ?::UUID, ?, ?
		FROM (SELECT unnest(?::VARCHAR[]) AS id, generate_subscripts(?::VARCHAR[], 1) - 1 AS i) w, meta.batch_exports b
		WHERE b.id = ? AND NOT b.deleted
		ON CONFLICT (batch_export_id, data_interval_start, data_interval_end) `+onConflict,
		first, seconds, first, seconds, StatusStarting, backfill, now, now, ids, ids, exportID)
	return err
}

// SetPaused pauses or unpauses an export; only a change of state writes. A real pause
// sets last_paused_at and a real unpause resumed_at, both on the Runner's clock: the
// windows that ended in between are skipped, as in PostHog. A paused export starts no
// runs, its queued ones included, until it is unpaused.
func (r *Runner) SetPaused(ctx context.Context, id string, paused bool) error {
	now := r.Now().UTC()
	if _, err := r.db.ExecContext(ctx, `UPDATE meta.batch_exports SET paused = ?, last_updated_at = ?,
		last_paused_at = CASE WHEN ? THEN ?::TIMESTAMPTZ ELSE last_paused_at END,
		resumed_at = CASE WHEN ? THEN resumed_at ELSE ?::TIMESTAMPTZ END
		WHERE id = ? AND paused <> ?`, paused, now, paused, now, paused, now, id, paused); err != nil {
		return fmt.Errorf("cannot set batch export %s paused=%t: %w", id, paused, err)
	}
	if !paused {
		r.Wake()
	}
	return nil
}

// Delete deletes an export softly (its row and its runs stay, out of the API's sight)
// and cancels its queued runs, in one transaction: no run of a deleted export starts
// after Delete returns, and the record says why. Its schedule and its backfills queue
// no window after it either.
func (r *Runner) Delete(ctx context.Context, id string) error {
	now := r.Now().UTC()
	r.queueMu.Lock()
	defer r.queueMu.Unlock()
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE meta.batch_exports SET deleted = true, last_updated_at = ? WHERE id = ?`, now, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = ?, next_attempt_at = NULL, finished_at = ?,
			last_updated_at = ? WHERE batch_export_id = ? AND list_contains(?::VARCHAR[], status)`,
			StatusCancelled, now, now, id, []string{StatusStarting, StatusFailedRetryable})
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot delete batch export %s: %w", id, err)
	}
	return nil
}

// inTx runs f in a transaction and commits it if f succeeds.
func (r *Runner) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// requeueRunning queues again the runs a previous process left Running: it stopped in
// the middle of them, and they run again from the start.
func (r *Runner) requeueRunning(ctx context.Context) error {
	if _, err := r.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = ?, attempts = attempts - 1 WHERE status = ?`,
		StatusStarting, StatusRunning); err != nil {
		return fmt.Errorf("cannot requeue the batch export runs left running: %w", err)
	}
	return nil
}

// scheduled is what scheduling needs of an active export.
type scheduled struct {
	id                      string
	interval                string
	createdAt               time.Time
	startAt, endAt, resumed *time.Time
	// scheduledThrough is the end of its last scheduled window, nil before the first.
	scheduledThrough *time.Time
	// unfinished is how many runs the schedule queued that are not finished.
	unfinished int
}

// activeExports are the exports that are neither paused nor deleted, with how far
// each is scheduled.
func (r *Runner) activeExports(ctx context.Context) ([]scheduled, error) {
	return records.All(ctx, r.db, "the batch exports to schedule", func(row records.Scanner) (scheduled, error) {
		var e scheduled
		err := row.Scan(&e.id, &e.interval, &e.createdAt, &e.startAt, &e.endAt, &e.resumed, &e.scheduledThrough, &e.unfinished)
		return e, err
	}, `SELECT b.id::VARCHAR, b."interval", b.created_at, b.start_at, b.end_at, b.resumed_at, s.scheduled_through,
			(SELECT count(*) FROM meta.batch_export_runs r
				WHERE r.batch_export_id = b.id AND r.backfill_id IS NULL AND list_contains(?::VARCHAR[], r.status))
		FROM meta.batch_exports b LEFT JOIN meta.batch_export_schedules s ON s.batch_export_id = b.id
		WHERE NOT b.deleted AND NOT b.paused`, unfinished)
}

// addScheduledRuns records the runs of the n windows of length from first and how far
// the export is scheduled, in one transaction. A window that already has a run (a
// backfill got there first) keeps it.
func (r *Runner) addScheduledRuns(ctx context.Context, e scheduled, first time.Time, n int64, length time.Duration, now time.Time) error {
	r.queueMu.Lock()
	defer r.queueMu.Unlock()
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		if err := insertRuns(ctx, tx, e.id, nil, first, n, length, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO meta.batch_export_schedules VALUES (?, ?)
			ON CONFLICT (batch_export_id) DO UPDATE SET scheduled_through = excluded.scheduled_through`,
			e.id, addWindows(first, n, length))
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot schedule batch export %s: %w", e.id, err)
	}
	return nil
}

// next is the due run of the oldest window: queued, or failed and past its backoff,
// of an export that is neither paused nor deleted.
func (r *Runner) next(ctx context.Context) (run, bool, error) {
	var x run
	var config string
	var filters sql.NullString
	err := r.db.QueryRowContext(ctx, `SELECT r.id::VARCHAR, r.batch_export_id::VARCHAR, r.team_id, r.data_interval_start, r.data_interval_end,
			r.backfill_id IS NOT NULL, r.attempts, b.model, b.destination_type, b.destination_config, b.filters
		FROM meta.batch_export_runs r JOIN meta.batch_exports b ON b.id = r.batch_export_id
		WHERE NOT b.deleted AND NOT b.paused
			AND (r.status = ? OR (r.status = ? AND r.next_attempt_at <= ?))
		ORDER BY r.data_interval_start, r.created_at, r.id LIMIT 1`, StatusStarting, StatusFailedRetryable, r.cfg.Now().UTC()).Scan(
		&x.id, &x.exportID, &x.team, &x.window.Start, &x.window.End, &x.backfill, &x.attempts, &x.model, &x.destination.kind, &config, &filters)
	if errors.Is(err, sql.ErrNoRows) {
		return x, false, nil
	}
	if err != nil {
		return x, false, fmt.Errorf("cannot read the next batch export run: %w", err)
	}
	if err := json.Unmarshal([]byte(config), &x.destination.config); err != nil {
		return x, false, fmt.Errorf("cannot read the destination of batch export %s: %w", x.exportID, err)
	}
	if filters.Valid {
		if err := json.Unmarshal([]byte(filters.String), &x.filters); err != nil {
			return x, false, fmt.Errorf("cannot read the filters of batch export %s: %w", x.exportID, err)
		}
	}
	return x, true, nil
}

// claim marks a due run Running and counts the attempt; ok is false if the run is no
// longer due (taken back since it was read: its export deleted, say).
func (r *Runner) claim(ctx context.Context, id string) (ok bool, err error) {
	res, err := r.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = ?, attempts = attempts + 1, last_updated_at = ?
		WHERE id = ? AND list_contains(?::VARCHAR[], status)`,
		StatusRunning, r.cfg.Now().UTC(), id, []string{StatusStarting, StatusFailedRetryable})
	if err != nil {
		return false, fmt.Errorf("cannot start batch export run %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// requeue gives back a claimed run that was interrupted (the Runner closed): the
// attempt does not count, and it runs again at the next start. Like complete and fail,
// it changes a run that is still Running only: one that a backfill queued again in the
// meantime is queued already, its attempts counted afresh.
func (r *Runner) requeue(ctx context.Context, id string) error {
	if _, err := r.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = ?, attempts = attempts - 1, last_updated_at = ?
		WHERE id = ? AND status = ?`, StatusStarting, r.cfg.Now().UTC(), id, StatusRunning); err != nil {
		return fmt.Errorf("cannot requeue batch export run %s: %w", id, err)
	}
	return nil
}

// complete records a run that exported records rows in bytes bytes, unless a backfill
// queued it again while it ran (requeue).
func (r *Runner) complete(ctx context.Context, id string, records, bytes int64) error {
	now := r.cfg.Now().UTC()
	if _, err := r.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = ?, records_completed = ?, bytes_exported = ?,
		latest_error = NULL, next_attempt_at = NULL, finished_at = ?, last_updated_at = ? WHERE id = ? AND status = ?`,
		StatusCompleted, records, bytes, now, now, id, StatusRunning); err != nil {
		return fmt.Errorf("cannot record the outcome of batch export run %s: %w", id, err)
	}
	return nil
}

// fail records a failed attempt of a run, and cause, what its latest_error shows:
// FailedRetryable until retryAt, or Failed for good when retryAt is nil; unless a
// backfill queued it again while it ran (requeue).
func (r *Runner) fail(ctx context.Context, id string, cause string, retryAt *time.Time) error {
	now := r.cfg.Now().UTC()
	status, finished := StatusFailedRetryable, (*time.Time)(nil)
	if retryAt == nil {
		status, finished = StatusFailed, &now
	}
	if _, err := r.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = ?, latest_error = ?, next_attempt_at = ?,
		finished_at = ?, last_updated_at = ? WHERE id = ? AND status = ?`, status, cause, retryAt, finished, now, id, StatusRunning); err != nil {
		return fmt.Errorf("cannot record the outcome of batch export run %s: %w", id, err)
	}
	return nil
}
