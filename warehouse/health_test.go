package warehouse

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/internal/faults"
	"github.com/hedge-analytics/hedge/internal/testlog"
)

// Once DuckDB has invalidated the database, every statement fails but Ping does not:
// Check fails, and Invalidated is closed by the time a check (as /_health runs) or the
// writer's next commit has met it; until then Check answers nil.
func TestInvalidated(t *testing.T) {
	for _, meet := range []string{"check", "commit"} {
		t.Run(meet, func(t *testing.T) {
			w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{MemoryLimit: "64MB"})
			defer w.Close()
			ctx := context.Background()
			if err := w.Check(ctx); err != nil || w.InvalidatedBy() != nil {
				t.Fatalf("a healthy database: %v, invalidated by %v", err, w.InvalidatedBy())
			}
			if err := w.Writer().Submit(&Batch{Events: []Event{testEvent(1, "before")}}); err != nil {
				t.Fatal(err)
			}
			fatal := faults.Invalidate(w.DB())
			if !invalidates(fatal) {
				t.Fatalf("the fault's error %v is not taken for an invalidation", fatal)
			}
			if err := w.DB().PingContext(ctx); err != nil {
				t.Fatalf("Ping fails on an invalidated database (%v): a check could rely on it", err)
			}
			switch meet {
			case "check":
				if err := w.Check(ctx); err == nil {
					t.Fatal("Check answers nil on an invalidated database")
				}
			case "commit":
				if err := w.Writer().Submit(&Batch{Events: []Event{testEvent(1, "after")}}); err == nil {
					t.Fatal("a commit succeeded on an invalidated database")
				}
			}
			select {
			case <-w.Invalidated():
			default:
				t.Fatalf("the %s that met the invalidation did not report it", meet)
			}
			if !invalidates(w.InvalidatedBy()) {
				t.Fatalf("invalidated by %v", w.InvalidatedBy())
			}
		})
	}
}

// The watchdog notices an invalidation that nothing of hedge's met, within
// probeInterval.
func TestInvalidatedWatchdog(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{MemoryLimit: "64MB", Logger: testlog.New()})
	defer w.Close()
	if err := faults.Invalidate(w.DB()); err == nil {
		t.Fatal("no invalidation")
	}
	select {
	case <-w.Invalidated():
	case <-time.After(2 * probeInterval):
		t.Fatal("the watchdog did not notice the invalidation")
	}
}
