package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// The backfill of the materialized property columns (materialized.go): the rows stored
// before migration 14 added them, from meta.property_backfill's next_row up to its
// end_row, are filled a chunk of rowids at a time, each chunk one transaction that
// also moves next_row, so that a restart resumes after the last chunk committed.
// Events rows are never deleted, so a row keeps its rowid, and the rows from end_row
// on are the Writer's, which fills the columns itself.
//
// It yields to ingestion: it runs at the priority of users' queries (onLoweredThread),
// and while the Writer commits events it rests as long as each chunk took, so that it
// takes at most about half of the time the database has for writes. A chunk holds no
// lock the Writer needs (DuckDB's transactions conflict only on the same rows, and the
// Writer only appends): the Writer waits for it only at the chunk's commit, and for a
// checkpoint, which DuckDB postpones while a chunk is open.

var (
	backfillRowsTotal = metrics.NewCounter(`hedge_property_backfill_rows_total`)
	// backfillPending is the rows still to fill; 0 once the columns are whole.
	backfillPending = metrics.NewGauge(`hedge_property_backfill_pending_rows`, nil)
)

// DefaultBackfillRows is the rows of a backfill chunk: about a second of work on the
// 2-core development machine, a short wait for a Writer commit that meets its commit.
const DefaultBackfillRows = 100_000

// propertyBackfill is the state of the backfill, which the query engine reads: until
// done, a materialized column is read as coalesce(column, JSON).
type propertyBackfill struct {
	done    atomic.Bool
	db      *sql.DB
	rows    int64
	nice    int
	commits func() uint64 // the Writer's commits so far: ingestion is active when it moves
	log     *slog.Logger

	mu      sync.Mutex
	stop    context.CancelFunc
	stopped chan struct{} // closed when the running backfill ends
	err     error
}

// loadBackfill reads where the backfill stands.
func loadBackfill(ctx context.Context, db *sql.DB, cfg *Config) (*propertyBackfill, error) {
	b := &propertyBackfill{db: db, rows: int64(cfg.BackfillRows), nice: cfg.Query.Nice, log: cfg.Logger}
	next, end, err := b.position(ctx)
	if err != nil {
		return nil, err
	}
	b.done.Store(next >= end)
	backfillPending.Set(float64(max(0, end-next)))
	return b, nil
}

func (b *propertyBackfill) position(ctx context.Context) (next, end int64, err error) {
	err = b.db.QueryRowContext(ctx, `SELECT next_row, end_row FROM meta.property_backfill`).Scan(&next, &end)
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read the property backfill's position: %w", err)
	}
	return next, end, nil
}

// start runs the backfill in the background until it is done or stop is called.
func (b *propertyBackfill) start() {
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
			b.log.Info("materialized property columns backfilled", "took", time.Since(begin).Round(time.Millisecond))
		case ctx.Err() == nil:
			b.log.Error("cannot backfill the materialized property columns", "err", err)
		}
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}()
}

// wait blocks until the backfill started is done (nil, or its error) or ctx ends.
func (b *propertyBackfill) wait(ctx context.Context) error {
	b.mu.Lock()
	stopped := b.stopped
	b.mu.Unlock()
	if b.done.Load() {
		return nil
	}
	if stopped == nil {
		return errors.New("cannot wait for the property backfill: it was not started")
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
func (b *propertyBackfill) close() {
	b.mu.Lock()
	stop, stopped := b.stop, b.stopped
	b.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
}

// run fills chunks until none is left.
func (b *propertyBackfill) run(ctx context.Context) error {
	next, end, err := b.position(ctx)
	if err != nil {
		return err
	}
	var sets []string
	for i, k := range materializedKeys {
		sets = append(sets, fmt.Sprintf(`"%s" = v[%d]`, materializedColumn(k), i+1))
	}
	// The values of a chunk, each row's text parsed once, joined back on rowid.
	update := `UPDATE events SET ` + strings.Join(sets, ", ") + `
		FROM (SELECT rowid AS r, json_extract_string(properties, ` + materializedPaths() + `) AS v
			FROM events WHERE rowid >= $1 AND rowid < $2) chunk
		WHERE events.rowid = chunk.r`
	for next < end {
		to := min(end, next+b.rows)
		commits := b.commits()
		begin := time.Now()
		_, err := onLoweredThread(b.nice, func() (struct{}, error) { return struct{}{}, b.chunk(ctx, update, next, to) })
		if err != nil {
			return err
		}
		took := time.Since(begin)
		backfillRowsTotal.Add(int(to - next))
		backfillPending.Set(float64(end - to))
		b.log.Debug("property backfill chunk", "from", next, "to", to, "of", end, "took", took)
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
func (b *propertyBackfill) chunk(ctx context.Context, update string, from, to int64) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin a property backfill chunk: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, update, from, to); err != nil {
		return fmt.Errorf("cannot fill the materialized properties of rows %d to %d: %w", from, to, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta.property_backfill SET next_row = $1`, to); err != nil {
		return fmt.Errorf("cannot record the property backfill's position: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit a property backfill chunk: %w", err)
	}
	return nil
}
