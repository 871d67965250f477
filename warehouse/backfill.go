package warehouse

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// A backfill rewrites the rows stored before a migration changed how events are
// stored: those from its position table's next_row up to its end_row are updated a
// chunk of rowids at a time, each chunk one transaction that also moves next_row, so
// that a restart resumes after the last chunk committed. Events rows are never
// deleted, so a row keeps its rowid, and the rows from end_row on are the Writer's,
// which writes them the new way itself. Two run this way: the materialized property
// columns' (materialized.go), and the move of the properties text to its zstd column
// (properties_text.go).
//
// It yields to ingestion: it runs at the priority of users' queries (onLoweredThread),
// and while the Writer commits events it rests as long as each chunk took, so that it
// takes at most about half of the time the database has for writes. A chunk holds no
// lock the Writer needs (DuckDB's transactions conflict only on the same rows and
// columns, and the Writer only appends): the Writer waits for it only at the chunk's
// commit, and for a checkpoint, which DuckDB postpones while a chunk is open.

// DefaultBackfillRows is the rows of a backfill chunk: about a second of work on the
// 2-core development machine, a short wait for a Writer commit that meets its commit.
const DefaultBackfillRows = 100_000

// backfillJob is what one backfill does.
type backfillJob struct {
	what   string // what it fills, for its logs and errors
	table  string // the table of its position, one row: next_row, end_row
	update string // the UPDATE of the rows [$1, $2)
	rows   int64  // the most rows of a chunk (0: Config.BackfillRows)
	// filled counts the rows filled; pending is the rows still to fill, 0 once done.
	filled  *metrics.Counter
	pending *metrics.Gauge
}

// rowBackfill is the state of a backfill, which the query engine reads: until done,
// the rows it has yet to fill are read the old way.
type rowBackfill struct {
	backfillJob
	done    atomic.Bool
	db      *sql.DB
	nice    int
	commits func() uint64 // the Writer's commits so far: ingestion is active when it moves
	after   *rowBackfill  // a backfill that must be done before this one begins, or nil
	log     *slog.Logger

	mu      sync.Mutex
	stop    context.CancelFunc
	stopped chan struct{} // closed when the running backfill ends
	err     error
}

var (
	materializedFilled = metrics.NewCounter(`hedge_property_backfill_rows_total`)
	// materializedPending is the rows still to fill; 0 once the columns are whole.
	materializedPending = metrics.NewGauge(`hedge_property_backfill_pending_rows`, nil)
)

// materializedBackfill is the job of the materialized property columns (migration 14):
// each row's text parsed once, its values joined back on rowid.
func materializedBackfill() backfillJob {
	var sets []string
	for i, k := range materializedKeys {
		sets = append(sets, fmt.Sprintf(`"%s" = v[%d]`, materializedColumn(k), i+1))
	}
	return backfillJob{what: "materialized property columns", table: "meta.property_backfill",
		update: `UPDATE events SET ` + strings.Join(sets, ", ") + `
			FROM (SELECT rowid AS r, json_extract_string(` + PropertiesText + `, ` + materializedPaths() + `) AS v
				FROM events WHERE rowid >= $1 AND rowid < $2) chunk
			WHERE events.rowid = chunk.r`,
		filled: materializedFilled, pending: materializedPending}
}

// loadBackfill reads where job stands. Its chunks are at most job.rows rows, or
// cfg.BackfillRows when fewer.
func loadBackfill(ctx context.Context, db *sql.DB, cfg *Config, job backfillJob) (*rowBackfill, error) {
	job.rows = min(cmp.Or(job.rows, int64(cfg.BackfillRows)), int64(cfg.BackfillRows))
	b := &rowBackfill{backfillJob: job, db: db, nice: cfg.Query.Nice, log: cfg.Logger}
	next, end, err := b.position(ctx)
	if err != nil {
		return nil, err
	}
	b.done.Store(next >= end)
	b.pending.Set(float64(max(0, end-next)))
	return b, nil
}

func (b *rowBackfill) position(ctx context.Context) (next, end int64, err error) {
	err = b.db.QueryRowContext(ctx, `SELECT next_row, end_row FROM `+b.table).Scan(&next, &end)
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read the position of the backfill of the %s: %w", b.what, err)
	}
	return next, end, nil
}

// start runs the backfill in the background until it is done or stop is called.
func (b *rowBackfill) start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped != nil || b.done.Load() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stop, b.stopped = cancel, make(chan struct{})
	go func() {
		defer close(b.stopped)
		begin := time.Now()
		err := b.run(ctx)
		switch {
		case err == nil:
			b.log.Info("backfill done", "of", b.what, "took", time.Since(begin).Round(time.Millisecond))
		case ctx.Err() == nil:
			b.log.Error("cannot backfill", "of", b.what, "err", err)
		}
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}()
}

// wait blocks until the backfill started is done (nil, or its error) or ctx ends.
func (b *rowBackfill) wait(ctx context.Context) error {
	b.mu.Lock()
	stopped := b.stopped
	b.mu.Unlock()
	if b.done.Load() {
		return nil
	}
	if stopped == nil {
		return fmt.Errorf("cannot wait for the backfill of the %s: it was not started", b.what)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// close stops a running backfill and waits for it to end: the chunk in progress is
// rolled back, and the next start does it again.
func (b *rowBackfill) close() {
	b.mu.Lock()
	stop, stopped := b.stop, b.stopped
	b.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
}

// run fills chunks until none is left, once b.after is done.
func (b *rowBackfill) run(ctx context.Context) error {
	if b.after != nil {
		if err := b.after.wait(ctx); err != nil {
			return err
		}
	}
	next, end, err := b.position(ctx)
	if err != nil {
		return err
	}
	for next < end {
		to := min(end, next+b.rows)
		commits := b.commits()
		begin := time.Now()
		_, err := onLoweredThread(b.nice, func() (struct{}, error) { return struct{}{}, b.chunk(ctx, next, to) })
		if err != nil {
			return err
		}
		took := time.Since(begin)
		b.filled.Add(int(to - next))
		b.pending.Set(float64(end - to))
		b.log.Debug("backfill chunk", "of", b.what, "from", next, "to", to, "end", end, "took", took)
		next = to
		if next < end && b.commits() != commits {
			select {
			case <-time.After(took):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	b.done.Store(true)
	return nil
}

// chunk fills rows [from, to) and records next_row = to, in one transaction.
func (b *rowBackfill) chunk(ctx context.Context, from, to int64) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin a chunk of the backfill of the %s: %w", b.what, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, b.update, from, to); err != nil {
		return fmt.Errorf("cannot fill the %s of rows %d to %d: %w", b.what, from, to, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+b.table+` SET next_row = $1`, to); err != nil {
		return fmt.Errorf("cannot record the position of the backfill of the %s: %w", b.what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit a chunk of the backfill of the %s: %w", b.what, err)
	}
	return nil
}
