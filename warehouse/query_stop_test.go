package warehouse

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// longQuery runs until its time limit, a minute here: a table function streams its
// rows, and DuckDB stops it between two of them when told to.
const longQuery = `SELECT count(*) FROM range(1000000000000)`

// startLong runs longQuery for project 1 in the background and returns what it
// answers, once it has run for a while.
func startLong(t *testing.T, w *Warehouse, ctx context.Context) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := w.Queries().HogQL(ctx, utc, longQuery)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the long query ended at once: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	return done
}

// endsWithin waits for done for at most d after since.
func endsWithin(t *testing.T, done <-chan error, since time.Time, d time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(d - time.Since(since)):
		t.Fatalf("the query still runs %s after it was stopped", d)
		return nil
	}
}

// Stop interrupts the running queries at once and refuses new ones; so does Close,
// whose checkpoint and file close then go through.
func TestQueriesStop(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{Query: QueryLimits{Timeout: time.Minute}})
	t.Cleanup(func() { w.Close() })
	done := startLong(t, w, context.Background())
	start := time.Now()
	w.Queries().Stop()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Stop took %s", took)
	}
	if err := endsWithin(t, done, start, time.Second); !errors.Is(err, ErrQueriesStopped) {
		t.Fatalf("the stopped query: %v", err)
	}
	if _, err := w.Queries().HogQL(context.Background(), utc, `SELECT 1`); !errors.Is(err, ErrQueriesStopped) {
		t.Fatalf("a query after Stop: %v", err)
	}
	if _, err := w.Queries().Trends(context.Background(), utc, TrendsQuery{Series: []TrendsSeries{{}}}, time.Now()); !errors.Is(err, ErrQueriesStopped) {
		t.Fatalf("a trend after Stop: %v", err)
	}
}

func TestCloseStopsQueries(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{Query: QueryLimits{Timeout: time.Minute}})
	done := startLong(t, w, context.Background())
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	if err := endsWithin(t, done, start, time.Second); !errors.Is(err, ErrQueriesStopped) {
		t.Fatalf("the query running at Close: %v", err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close still runs after 5s")
	}
}

// A request whose caller goes away stops as promptly.
func TestQueryCancelled(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{Query: QueryLimits{Timeout: time.Minute}})
	t.Cleanup(func() { w.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := startLong(t, w, ctx)
	start := time.Now()
	cancel()
	if err := endsWithin(t, done, start, time.Second); err == nil {
		t.Fatal("the cancelled query answered")
	}
}

// readResult stops reading once the request's context is done.
func TestReadResultStops(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	t.Cleanup(func() { w.Close() })
	rows, err := w.Queries().db.QueryContext(context.Background(), `SELECT * FROM range(10)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := readResult(ctx, rows, 100, 1<<20); !errors.Is(err, context.Canceled) {
		t.Fatalf("readResult with a done context: %v", err)
	}
}
