// Package batchexport runs the batch exports that the management API configures: it
// turns each export's interval into windows, records a run for each window, writes the
// window's events or persons as Parquet through the warehouse, and delivers the files
// to the export's destination (a directory, or an S3 bucket), retrying failed runs with
// backoff.
//
// The runs table (meta.batch_export_runs) is the queue and the record at once: a run is
// Starting until the runner takes it, Running while it does, then Completed, or
// FailedRetryable until its next attempt, or Failed when out of attempts. A window has
// one run and one set of file names, so a retry or a backfill of it overwrites what
// was there: a destination never holds a window twice.
package batchexport

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

// Config is what the Runner needs. Zero values take the defaults noted on each field.
type Config struct {
	Warehouse *warehouse.Warehouse
	Policy    Policy
	// Tick is how often the Runner looks for windows that have ended (default 10s);
	// Wake makes it look at once.
	Tick time.Duration
	// MaxAttempts is how many times a run is tried before it is Failed (default 8).
	MaxAttempts int
	// RetryBackoff is the wait before a failed run's second attempt, doubled for each
	// further one, at most an hour (default 30s).
	RetryBackoff time.Duration
	// Now is the clock that decides which windows have ended (default time.Now); it
	// must be the warehouse's clock.
	Now    func() time.Time
	Logger *slog.Logger
}

// Runner schedules and runs batch exports, one run at a time: a run reads a window of
// the warehouse with DuckDB's full attention, and runs of one export stay in order.
type Runner struct {
	cfg    Config
	db     *sql.DB
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// Start readies the runs that a previous process left Running (it stopped in the middle
// of them: they run again) and starts the Runner. Close stops it.
func Start(cfg Config) (*Runner, error) {
	if cfg.Tick <= 0 {
		cfg.Tick = 10 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runner{cfg: cfg, db: cfg.Warehouse.DB(), wake: make(chan struct{}, 1), done: make(chan struct{})}
	if _, err := r.db.Exec(`UPDATE meta.batch_export_runs SET status = 'Starting', attempts = attempts - 1 WHERE status = 'Running'`); err != nil {
		return nil, fmt.Errorf("cannot requeue the batch export runs left running: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.loop(ctx)
	return r, nil
}

// Policy is what destinations may reach.
func (r *Runner) Policy() Policy { return r.cfg.Policy }

// Now is the Runner's clock: a window has ended when its end is before Now.
func (r *Runner) Now() time.Time { return r.cfg.Now() }

// Wake makes the Runner look for due windows and runs now rather than at its next
// tick: after a backfill, a retry or an unpause.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Close stops the Runner. A run in progress is interrupted and queued again, to run
// from the start at the next start.
func (r *Runner) Close() {
	r.cancel()
	<-r.done
}

func (r *Runner) loop(ctx context.Context) {
	defer close(r.done)
	ticker := time.NewTicker(r.cfg.Tick)
	defer ticker.Stop()
	for {
		if err := r.tick(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("batch exports", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-r.wake:
		}
	}
}

// tick schedules the windows that have ended, then runs every run that is due.
func (r *Runner) tick(ctx context.Context) error {
	if err := r.schedule(ctx); err != nil {
		return err
	}
	for ctx.Err() == nil {
		run, ok, err := r.next(ctx)
		if err != nil || !ok {
			return err
		}
		if err := r.execute(ctx, run); err != nil {
			return err
		}
	}
	return nil
}

// maxWindowsPerTick bounds the runs one tick adds for one export (a 5-minute export
// after a long stop has many windows to catch up on); the next tick adds the rest.
const maxWindowsPerTick = 1000

// schedule records a run for each window of each active export that has ended since
// the export's last scheduled window. A window is due when it lies within the export's
// start_at and end_at, and ended after the export was created and after it was last
// unpaused: windows that end while an export is paused are skipped, as in PostHog (a
// backfill covers them on request).
func (r *Runner) schedule(ctx context.Context) error {
	rows, err := r.db.QueryContext(ctx, `SELECT b.id::VARCHAR, b.team_id, b."interval", b.created_at, b.start_at, b.end_at, b.resumed_at, s.scheduled_through
		FROM meta.batch_exports b LEFT JOIN meta.batch_export_schedules s ON s.batch_export_id = b.id
		WHERE NOT b.deleted AND NOT b.paused`)
	if err != nil {
		return fmt.Errorf("cannot read the batch exports to schedule: %w", err)
	}
	type export struct {
		id                      string
		team                    int64
		interval                string
		createdAt               time.Time
		startAt, endAt, resumed *time.Time
		scheduledThrough        *time.Time
	}
	var exports []export
	for rows.Next() {
		var e export
		if err := rows.Scan(&e.id, &e.team, &e.interval, &e.createdAt, &e.startAt, &e.endAt, &e.resumed, &e.scheduledThrough); err != nil {
			rows.Close()
			return fmt.Errorf("cannot read the batch exports to schedule: %w", err)
		}
		exports = append(exports, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read the batch exports to schedule: %w", err)
	}
	now := r.cfg.Now().UTC()
	for _, e := range exports {
		length, ok := intervalLengths[e.interval]
		if !ok {
			continue
		}
		// The first window to add starts at or after each of these.
		first := alignDown(e.createdAt, length)
		if e.resumed != nil {
			first = later(first, alignDown(*e.resumed, length))
		}
		if e.startAt != nil {
			first = later(first, alignUp(*e.startAt, length))
		}
		if e.scheduledThrough != nil {
			first = later(first, alignUp(*e.scheduledThrough, length))
		}
		var windows []Window
		for start := first; len(windows) < maxWindowsPerTick; start = start.Add(length) {
			end := start.Add(length)
			if end.After(now) || (e.endAt != nil && end.After(*e.endAt)) {
				break
			}
			windows = append(windows, Window{Start: start, End: end})
		}
		if len(windows) == 0 {
			continue
		}
		if err := r.addScheduledRuns(ctx, e.id, e.team, windows, now); err != nil {
			return err
		}
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// addScheduledRuns records the runs of windows and how far the export is scheduled,
// in one transaction. A window that already has a run (a backfill got there first)
// keeps it.
func (r *Runner) addScheduledRuns(ctx context.Context, exportID string, team int64, windows []Window, now time.Time) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot schedule batch export %s: %w", exportID, err)
	}
	defer tx.Rollback()
	for _, w := range windows {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta.batch_export_runs (id, batch_export_id, team_id, data_interval_start, data_interval_end,
			status, created_at, last_updated_at) VALUES (?, ?, ?, ?, ?, 'Starting', ?, ?) ON CONFLICT DO NOTHING`,
			uuid.Must(uuid.NewV7()).String(), exportID, team, w.Start, w.End, now, now); err != nil {
			return fmt.Errorf("cannot schedule batch export %s: %w", exportID, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta.batch_export_schedules VALUES (?, ?)
		ON CONFLICT (batch_export_id) DO UPDATE SET scheduled_through = excluded.scheduled_through`,
		exportID, windows[len(windows)-1].End); err != nil {
		return fmt.Errorf("cannot schedule batch export %s: %w", exportID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot schedule batch export %s: %w", exportID, err)
	}
	return nil
}

// run is a run to execute, with what its export says about it now.
type run struct {
	id, exportID string
	team         int64
	window       Window
	attempts     int
	model        string
	destination  destination
	filters      []warehouse.PropertyFilter
}

// next is the due run of the oldest window: queued, or failed and past its backoff,
// of an export that is neither paused nor deleted.
func (r *Runner) next(ctx context.Context) (run, bool, error) {
	var x run
	var config string
	var filters sql.NullString
	err := r.db.QueryRowContext(ctx, `SELECT r.id::VARCHAR, r.batch_export_id::VARCHAR, r.team_id, r.data_interval_start, r.data_interval_end,
			r.attempts, b.model, b.destination_type, b.destination_config, b.filters
		FROM meta.batch_export_runs r JOIN meta.batch_exports b ON b.id = r.batch_export_id
		WHERE NOT b.deleted AND NOT b.paused
			AND (r.status = 'Starting' OR (r.status = 'FailedRetryable' AND r.next_attempt_at <= ?))
		ORDER BY r.data_interval_start, r.created_at, r.id LIMIT 1`, r.cfg.Now().UTC()).Scan(
		&x.id, &x.exportID, &x.team, &x.window.Start, &x.window.End, &x.attempts, &x.model, &x.destination.kind, &config, &filters)
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

// execute runs x once and records the outcome. Only a failure to record is returned:
// a run that fails is recorded as failed (and retried later), not as an error of the
// Runner.
func (r *Runner) execute(ctx context.Context, x run) error {
	now := r.cfg.Now().UTC()
	res, err := r.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = 'Running', attempts = attempts + 1, last_updated_at = ?
		WHERE id = ? AND status IN ('Starting', 'FailedRetryable')`, now, x.id)
	if err != nil {
		return fmt.Errorf("cannot start batch export run %s: %w", x.id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // taken back (its export deleted, say) since it was read
	}
	x.attempts++
	begin := time.Now()
	records, bytes, runErr := r.export(ctx, x)
	if runErr != nil && ctx.Err() != nil {
		// Stopped by Close: not the run's fault. It runs again at the next start.
		_, err := r.db.ExecContext(context.WithoutCancel(ctx), `UPDATE meta.batch_export_runs
			SET status = 'Starting', attempts = attempts - 1, last_updated_at = ? WHERE id = ?`, r.cfg.Now().UTC(), x.id)
		return err
	}
	now = r.cfg.Now().UTC()
	if runErr == nil {
		_, err = r.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = 'Completed', records_completed = ?, bytes_exported = ?,
			latest_error = NULL, next_attempt_at = NULL, finished_at = ?, last_updated_at = ? WHERE id = ?`, records, bytes, now, now, x.id)
		r.cfg.Logger.Info("batch export run completed", "run", x.id, "export", x.exportID, "start", x.window.Start, "end", x.window.End,
			"records", records, "took", time.Since(begin).Round(time.Millisecond))
	} else if x.attempts >= r.cfg.MaxAttempts {
		_, err = r.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = 'Failed', latest_error = ?, next_attempt_at = NULL,
			finished_at = ?, last_updated_at = ? WHERE id = ?`, runErr.Error(), now, now, x.id)
		r.cfg.Logger.Error("batch export run failed", "run", x.id, "export", x.exportID, "attempts", x.attempts, "err", runErr)
	} else {
		retry := now.Add(r.backoff(x.attempts))
		_, err = r.db.ExecContext(ctx, `UPDATE meta.batch_export_runs SET status = 'FailedRetryable', latest_error = ?, next_attempt_at = ?,
			last_updated_at = ? WHERE id = ?`, runErr.Error(), retry, now, x.id)
		r.cfg.Logger.Warn("batch export run failed, will retry", "run", x.id, "export", x.exportID, "attempts", x.attempts, "retry_at", retry, "err", runErr)
	}
	if err != nil {
		return fmt.Errorf("cannot record the outcome of batch export run %s: %w", x.id, err)
	}
	return nil
}

// backoff is the wait after the given number of failed attempts.
func (r *Runner) backoff(attempts int) time.Duration {
	d := r.cfg.RetryBackoff
	for range attempts - 1 {
		if d *= 2; d >= time.Hour {
			return time.Hour
		}
	}
	return d
}

// export writes the run's window to staging and delivers it: the records and bytes
// exported, or why not. Its staging directory is gone when it returns.
func (r *Runner) export(ctx context.Context, x run) (records, bytes int64, err error) {
	include, exclude, err := x.destination.filters()
	if err != nil {
		return 0, 0, err
	}
	dir := filepath.Join(r.cfg.Warehouse.StagingDir(), x.id)
	if err := os.RemoveAll(dir); err != nil {
		return 0, 0, fmt.Errorf("cannot clear %s: %w", dir, err)
	}
	defer os.RemoveAll(dir)
	files, err := r.cfg.Warehouse.Export(ctx, warehouse.ExportRequest{
		Team: x.team, Model: x.model, Start: x.window.Start, End: x.window.End,
		IncludeEvents: include, ExcludeEvents: exclude, Properties: x.filters,
		Compression: x.destination.compression(), Dir: dir,
	})
	if err != nil {
		return 0, 0, err
	}
	if err := r.cfg.Policy.deliver(ctx, x.destination, x.team, x.id, files); err != nil {
		return 0, 0, err
	}
	for _, f := range files {
		records, bytes = records+f.Rows, bytes+f.Bytes
	}
	return records, bytes, nil
}
