// Package batchexport keeps and runs the batch exports that the management API
// configures: it turns each export's interval into windows, records a run for each
// window, writes the window's events or persons as Parquet through the warehouse (by
// commit time, or by event time for a backfill's run of events: run.byEventTime), and
// delivers the files to the export's destination (a directory, or an S3 bucket),
// retrying failed runs with backoff.
//
// It owns the export tables: meta.batch_exports (exports.go; runs.go for pausing and
// deleting), and the runs, backfills and schedule (runs.go, their only writer). The
// runs table is the queue and the record at once: see the Status constants for a
// run's life. A window has one run and one set of file names, so a retry or a
// backfill of it overwrites what was there: a destination never holds a window twice.
//
// Runs are queued a bounded batch at a time: the schedule of an export, and each
// backfill, has at most Config.MaxQueuedRuns runs unfinished, and queues its next
// windows as earlier ones finish, each batch in one statement of a transaction of its
// own. Windows are counted, never listed: no span of time, however long, is held in
// memory or written in one transaction, where it would take the DuckDB memory that
// every project's ingestion shares.
package batchexport

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

// The defaults of Config.
const (
	DefaultTick          = 10 * time.Second
	DefaultMaxAttempts   = 8
	DefaultRetryBackoff  = 30 * time.Second
	DefaultMaxQueuedRuns = 100
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
	// MaxQueuedRuns bounds the unfinished runs of the schedule of an export, and of
	// each backfill (default 100): the next windows are queued as earlier runs finish.
	// It is also the most runs one transaction adds: a hundred runs take DuckDB some
	// 3 MB while the transaction lasts.
	MaxQueuedRuns int
	// Now is the clock that decides which windows have ended (default time.Now); it
	// must be the warehouse's clock.
	Now    func() time.Time
	Logger *slog.Logger
}

// Runner schedules and runs batch exports, one run at a time: a run reads a window of
// the warehouse with DuckDB's full attention, and runs of one export stay in order.
type Runner struct {
	cfg  Config
	db   *sql.DB
	wake chan struct{}
	// queueMu orders the transactions that queue runs (Backfill, the schedule, the
	// backfills' next windows) against Delete: none of them queues a run of an export
	// that Delete has deleted, and they write one at a time.
	queueMu sync.Mutex
	// cancel and done are set by Start: they stop the loop and tell it stopped.
	cancel context.CancelFunc
	done   chan struct{}
}

// New is a Runner of cfg that is not running yet: it answers for the exports, runs
// and backfills it keeps, and Start makes it run them.
func New(cfg Config) *Runner {
	if cfg.Tick <= 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.MaxQueuedRuns <= 0 {
		cfg.MaxQueuedRuns = DefaultMaxQueuedRuns
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Policy.stagingDir = cfg.Warehouse.StagingDir()
	return &Runner{cfg: cfg, db: cfg.Warehouse.DB(), wake: make(chan struct{}, 1)}
}

// Start readies the runs that a previous process left Running (it stopped in the middle
// of them: they run again) and starts running exports. Close stops it.
func (r *Runner) Start() error {
	if err := r.requeueRunning(context.Background()); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go r.loop(ctx)
	return nil
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

// Close stops a started Runner. A run in progress is interrupted and queued again, to
// run from the start at the next start.
func (r *Runner) Close() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
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

// tick queues the windows that are due, of the schedules and of the backfills, then
// runs every run that is due, and again for as long as runs finish: a finished run
// makes room for the next window of its schedule or backfill.
func (r *Runner) tick(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := r.queue(ctx); err != nil {
			return err
		}
		ran := false
		for ctx.Err() == nil {
			run, ok, err := r.next(ctx)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if err := r.execute(ctx, run); err != nil {
				return err
			}
			ran = true
		}
		if !ran {
			return nil
		}
	}
	return nil
}

// queue queues the windows of the schedules, then those of the backfills.
func (r *Runner) queue(ctx context.Context) error {
	if err := r.schedule(ctx); err != nil {
		return err
	}
	return r.queueBackfills(ctx)
}

// schedule queues the windows of each active export that have ended since the
// export's last scheduled window, as many as fit under MaxQueuedRuns. A window is due
// when it lies within the export's start_at and end_at, and ended after the export was
// created and after it was last unpaused: windows that end while an export is paused
// are skipped, as in PostHog (a backfill covers them on request). An export that is
// further behind than MaxBackfillWindows windows (hedge was stopped that long) skips
// the older ones too, and the log says which.
func (r *Runner) schedule(ctx context.Context) error {
	// The clock is read before the exports: a window that has ended by now was either
	// ended before a pause that the read below misses (committed after it) or belongs
	// to an export the read sees paused. Read after them, it could take in a window
	// that ended after the pause, which would run once the export is unpaused.
	now := r.cfg.Now().UTC()
	exports, err := r.activeExports(ctx)
	if err != nil {
		return err
	}
	for _, e := range exports {
		length, ok := intervalLengths[e.interval]
		if !ok || e.unfinished >= r.cfg.MaxQueuedRuns {
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
		// The last window to add ends at or before each of these.
		end := alignDown(now, length)
		if e.endAt != nil && e.endAt.Before(end) {
			end = alignDown(*e.endAt, length)
		}
		if oldest := addWindows(end, -MaxBackfillWindows, length); first.Before(oldest) {
			r.cfg.Logger.Warn("batch export schedule skipped windows: it is further behind than a backfill may reach",
				"export", e.id, "skipped", windowsBetween(first, oldest, length), "from", first, "to", oldest)
			first = oldest
		}
		n := min(windowsBetween(first, end, length), int64(r.cfg.MaxQueuedRuns-e.unfinished))
		if n <= 0 {
			continue
		}
		if err := r.addScheduledRuns(ctx, e, first, n, length, now); err != nil {
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

// run is a run to execute, with what its export says about it now.
type run struct {
	id, exportID string
	team         int64
	window       Window
	// backfill is whether a backfill queued the run (a retry is one too).
	backfill    bool
	attempts    int
	model       string
	destination destination
	filters     []warehouse.PropertyFilter
}

// execute runs x once and records the outcome. Only a failure to record is returned:
// a run that fails is recorded as failed (and retried later), not as an error of the
// Runner. The run's record tells its project's members what failed in their terms
// (publicError); the log keeps the whole error.
func (r *Runner) execute(ctx context.Context, x run) error {
	if ok, err := r.claim(ctx, x.id); err != nil || !ok {
		return err
	}
	x.attempts++
	begin := time.Now()
	records, bytes, runErr := r.export(ctx, x)
	switch {
	case runErr != nil && ctx.Err() != nil:
		// Stopped by Close: not the run's fault. It runs again at the next start.
		return r.requeue(context.WithoutCancel(ctx), x.id)
	case runErr == nil:
		r.cfg.Logger.Info("batch export run completed", "run", x.id, "export", x.exportID, "start", x.window.Start, "end", x.window.End,
			"records", records, "took", time.Since(begin).Round(time.Millisecond))
		return r.complete(ctx, x.id, records, bytes)
	case x.attempts >= r.cfg.MaxAttempts:
		r.cfg.Logger.Error("batch export run failed", "run", x.id, "export", x.exportID, "attempts", x.attempts, "err", runErr)
		return r.fail(ctx, x.id, publicError(runErr), nil)
	default:
		retry := r.cfg.Now().UTC().Add(r.backoff(x.attempts))
		r.cfg.Logger.Warn("batch export run failed, will retry", "run", x.id, "export", x.exportID, "attempts", x.attempts, "retry_at", retry, "err", runErr)
		return r.fail(ctx, x.id, publicError(runErr), &retry)
	}
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
// exported, or why not. Its staging directory is gone when it returns. A destination
// stored before a rule that now refuses it fails here, whether or not the window has
// rows, with the rule as its error.
func (r *Runner) export(ctx context.Context, x run) (records, bytes int64, err error) {
	if err := r.cfg.Policy.Check(x.team, x.destination.kind, x.destination.config); err != nil {
		return 0, 0, err
	}
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
		Team: x.team, Model: x.model, Start: x.window.Start, End: x.window.End, EventTime: x.byEventTime(),
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

// byEventTime says whether x selects its window's events by their timestamp rather
// than by commit time (inserted_at): as in PostHog, a scheduled run by commit time and
// a backfill's run (a retry is a backfill) by event time.
//
// Scheduled windows follow the clock, and by commit time each event is in exactly one
// of them: an event that arrives late, for a window already exported, goes with the
// window it was committed in, and no window is exported again to take it.
//
// A backfill asks for the events that happened in a span: history imported now
// (historical_migration batches, past timestamps) is exported by backfilling the span
// it happened in, as well as by the scheduled window it was committed in. A backfill
// covers only windows that have ended, and its run reads what is committed when it
// runs: an event of the window that arrives after that is exported by the scheduled
// window it arrives in, and by the backfilled one only if that is backfilled again.
// Persons have no event time: their backfills select by commit time.
func (x run) byEventTime() bool {
	return x.backfill && x.model == warehouse.ExportEvents
}
