package warehouse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// The database's health. DuckDB invalidates the database after some errors: the
// instance after a fatal error (out of memory while rolling back a transaction), the
// attached file when a checkpoint cannot write it (a full disk). From then on every
// statement on it fails, on every connection, until the process opens the file again,
// while database/sql's Ping still succeeds, for it runs nothing. hedge cannot reopen
// the file under its running readers and writer, so it reports the invalidation
// (Invalidated) for the process to exit and its supervisor to restart it; the restart
// replays the WAL, which holds every acknowledged commit.

const (
	// probeInterval is how often the watchdog runs the probe, so that an invalidation
	// that only a request of the management API or of flags met (their errors are
	// answered, not inspected) is noticed within it.
	probeInterval = 5 * time.Second
	// probeTimeout bounds one probe: a pool busy with long queries makes it wait.
	probeTimeout = 2 * time.Second
)

// invalidation records the first error that said DuckDB invalidated the database.
type invalidation struct {
	once sync.Once
	done chan struct{} // closed once err is set
	err  error
}

func newInvalidation() *invalidation { return &invalidation{done: make(chan struct{})} }

// note records err when it is DuckDB's fatal error, and reports whether it is.
func (v *invalidation) note(err error) bool {
	if !invalidates(err) {
		return false
	}
	v.set(err)
	return true
}

// set records err, unless an error was recorded already.
func (v *invalidation) set(err error) {
	v.once.Do(func() {
		v.err = err
		close(v.done)
	})
}

// invalidates reports whether err is DuckDB's fatal error, which invalidates the
// database ("Non-recoverable. The DB enters an invalid state and must be restarted"),
// or the error of a statement run after it, which is fatal too. Only the driver's
// error type is trusted, not the text: an error may quote what a client sent.
func invalidates(err error) bool {
	var duck *duckdb.Error
	return errors.As(err, &duck) && duck.Type == duckdb.ErrorTypeFatal
}

// probeInvalidated reports whether err, the probe's, says the database is
// invalidated: a fatal error, or the IO error of a statement on an attached file that
// a failed checkpoint invalidated (`Database "hedge" has been invalidated because
// checkpointing failed`), which is not fatal to the instance. The probe's text is
// fixed, so its error quotes nothing a client sent.
func probeInvalidated(err error) bool {
	return invalidates(err) || strings.Contains(err.Error(), "has been invalidated")
}

// suspect is told of a failed commit or checkpoint of the writer: a fatal error is
// noted at once, and any other makes a check of the database, in the background, for
// an error of a write may be the first sign of an attached file that a failed
// checkpoint invalidated.
func (w *Warehouse) suspect(err error) {
	if !w.invalid.note(err) {
		go w.Check(context.Background())
	}
}

// Invalidated is closed once DuckDB has invalidated the database: nothing can be read
// or written until the process opens the file again, so hedge serve stops and exits
// with status 1 for its supervisor to restart it. InvalidatedBy says why.
func (w *Warehouse) Invalidated() <-chan struct{} { return w.invalid.done }

// InvalidatedBy is the error that said the database was invalidated, or nil while it
// is not.
func (w *Warehouse) InvalidatedBy() error {
	select {
	case <-w.invalid.done:
		return w.invalid.err
	default:
		return nil
	}
}

// Check runs a query that reads the database (its schema version), as both listeners'
// /_health do, and returns its error. An error that says the database is invalidated
// closes Invalidated. Concurrent calls share one query, so a flood of health checks
// holds one connection of the pool at most.
func (w *Warehouse) Check(ctx context.Context) error {
	w.probe.mu.Lock()
	call := w.probe.call
	if call == nil {
		call = &probeCall{done: make(chan struct{})}
		w.probe.call = call
		go w.runProbe(call)
	}
	w.probe.mu.Unlock()
	select {
	case <-call.done:
		return call.err
	case <-ctx.Done():
		return fmt.Errorf("cannot check the database: %w", ctx.Err())
	}
}

// probe is the query of Check in flight, if any.
type probe struct {
	mu   sync.Mutex
	call *probeCall
}

type probeCall struct {
	done chan struct{} // closed once err is set
	err  error
}

func (w *Warehouse) runProbe(call *probeCall) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var version int
	if err := w.db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM meta.schema_migrations`).Scan(&version); err != nil {
		call.err = fmt.Errorf("cannot read the database: %w", err)
		if probeInvalidated(err) {
			w.invalid.set(err)
		}
	}
	w.probe.mu.Lock()
	w.probe.call = nil
	w.probe.mu.Unlock()
	close(call.done)
}

// watch runs Check every probeInterval until stop is closed.
func (w *Warehouse) watch(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	ticker := time.NewTicker(probeInterval)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-w.invalid.done:
			return
		case <-ticker.C:
			w.Check(context.Background())
		}
	}
}
