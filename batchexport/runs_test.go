package batchexport_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/batchexport"
	"github.com/hedge-analytics/hedge/warehouse"
)

// runsEnv is a Runner that is never started over a fresh warehouse, with one 5-minute
// export created at origin: the tests drive its state machine by hand.
type runsEnv struct {
	clock  *testClock
	wh     *warehouse.Warehouse
	runner *batchexport.Runner
	export batchexport.Export
	origin time.Time
}

func newRunsEnv(t *testing.T) *runsEnv {
	t.Helper()
	origin := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	env := &runsEnv{clock: &testClock{t: origin}, origin: origin}
	var err error
	env.wh, err = warehouse.Open(context.Background(), warehouse.Config{Path: filepath.Join(t.TempDir(), "hedge.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.wh.Close() })
	env.runner = batchexport.New(batchexport.Config{Warehouse: env.wh, Now: env.clock.Now})
	env.export = batchexport.Export{TeamID: 1, Name: "runs", Model: warehouse.ExportEvents, DestinationType: "Parquet",
		Config: map[string]any{"path": t.TempDir()}, Interval: "every 5 minutes"}
	if err := env.runner.Create(context.Background(), &env.export); err != nil {
		t.Fatal(err)
	}
	return env
}

func (env *runsEnv) at(d time.Duration) time.Time { return env.origin.Add(d) }

// backfill backfills the windows of [origin+from, origin+to) with the clock at
// origin+1h, so that they have all ended.
func (env *runsEnv) backfill(t *testing.T, from, to time.Duration) batchexport.Backfill {
	t.Helper()
	env.clock.Set(env.at(time.Hour))
	b, err := env.runner.Backfill(context.Background(), env.export, env.at(from), env.at(to))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runs are the export's runs in window order.
func (env *runsEnv) runs(t *testing.T, statuses ...string) []batchexport.Run {
	t.Helper()
	after := env.at(-24 * time.Hour)
	runs, more, err := env.runner.Runs(context.Background(), batchexport.RunFilter{Export: env.export.ID,
		Statuses: statuses, After: &after, OrderBy: "data_interval_start", Limit: 1000})
	if err != nil || more {
		t.Fatalf("runs: more=%t, %v", more, err)
	}
	return runs
}

// setStatus puts a run in a status, as the runner's own steps would.
func (env *runsEnv) setStatus(t *testing.T, id, status string, attempts int) {
	t.Helper()
	if _, err := env.wh.DB().Exec(`UPDATE meta.batch_export_runs SET status = ?, attempts = ?,
		finished_at = CASE WHEN ? THEN ?::TIMESTAMPTZ END WHERE id = ?`,
		status, attempts, status == batchexport.StatusCompleted, env.clock.Now(), id); err != nil {
		t.Fatal(err)
	}
}

// describe is each run as "<window start in minutes from origin>:<status>:<attempts>".
func (env *runsEnv) describe(runs []batchexport.Run) string {
	var parts []string
	for _, r := range runs {
		parts = append(parts, fmt.Sprintf("%d:%s:%d", int(r.DataIntervalStart.Sub(env.origin)/time.Minute), r.Status, r.Attempts))
	}
	return strings.Join(parts, " ")
}

func TestBackfillRequeuesAllButRunningRuns(t *testing.T) {
	env := newRunsEnv(t)
	first := env.backfill(t, 0, 15*time.Minute)
	if first.TotalRuns != 3 || first.Status != batchexport.StatusRunning {
		t.Fatalf("first backfill: %+v", first)
	}
	runs := env.runs(t)
	env.setStatus(t, runs[0].ID, batchexport.StatusRunning, 1)
	env.setStatus(t, runs[1].ID, batchexport.StatusCompleted, 1)
	env.setStatus(t, runs[2].ID, batchexport.StatusFailed, 8)

	second := env.backfill(t, 0, 20*time.Minute)
	got := env.runs(t)
	if want := "0:Running:1 5:Starting:0 10:Starting:0 15:Starting:0"; env.describe(got) != want {
		t.Fatalf("after the second backfill: %s, want %s", env.describe(got), want)
	}
	for i, r := range got {
		if i < len(runs) && r.ID != runs[i].ID {
			t.Errorf("run %d has a new id: a window keeps its run", i)
		}
		wantBackfill := second.ID
		if i == 0 {
			wantBackfill = first.ID // left to finish, under the backfill that queued it
		}
		if r.Backfill == nil || *r.Backfill != wantBackfill {
			t.Errorf("run %d belongs to backfill %v, want %s", i, r.Backfill, wantBackfill)
		}
		if i > 0 && (r.FinishedAt != nil || r.LatestError != nil) {
			t.Errorf("run %d was queued again with its old outcome: %+v", i, r)
		}
	}
	if second.TotalRuns != 3 {
		t.Errorf("the second backfill has %d runs, want the 3 it queued", second.TotalRuns)
	}
	backfills, count, err := env.runner.Backfills(context.Background(), env.export.ID, 10, 0)
	if err != nil || count != 2 || len(backfills) != 2 || backfills[0].ID != second.ID {
		t.Fatalf("backfills: %d %+v %v", count, backfills, err)
	}
	if _, err := env.runner.Backfill(context.Background(), env.export, env.at(2*time.Hour), env.at(3*time.Hour)); err != batchexport.ErrNoWindows {
		t.Fatalf("a backfill of windows that have not ended: %v, want ErrNoWindows", err)
	}
}

func TestDeleteCancelsQueuedRuns(t *testing.T) {
	env := newRunsEnv(t)
	env.backfill(t, 0, 20*time.Minute)
	runs := env.runs(t)
	env.setStatus(t, runs[1].ID, batchexport.StatusCompleted, 1)
	env.setStatus(t, runs[2].ID, batchexport.StatusFailedRetryable, 1)
	env.setStatus(t, runs[3].ID, batchexport.StatusRunning, 1)
	if err := env.runner.Delete(context.Background(), env.export.ID); err != nil {
		t.Fatal(err)
	}
	got := env.runs(t)
	if want := "0:Cancelled:0 5:Completed:1 10:Cancelled:1 15:Running:1"; env.describe(got) != want {
		t.Fatalf("after delete: %s, want %s", env.describe(got), want)
	}
	if got[0].FinishedAt == nil || !got[0].FinishedAt.Equal(env.clock.Now()) {
		t.Errorf("a cancelled run finished at %v, want %v", got[0].FinishedAt, env.clock.Now())
	}
	if _, ok, err := env.runner.Export(context.Background(), []int64{env.export.TeamID}, env.export.ID); ok || err != nil {
		t.Fatalf("a deleted export is found: %t %v", ok, err)
	}
}

func TestSetPaused(t *testing.T) {
	env := newRunsEnv(t)
	ctx := context.Background()
	state := func() (paused bool, lastPaused, resumed *time.Time) {
		t.Helper()
		if err := env.wh.DB().QueryRow(`SELECT paused, last_paused_at, resumed_at FROM meta.batch_exports WHERE id = ?`,
			env.export.ID).Scan(&paused, &lastPaused, &resumed); err != nil {
			t.Fatal(err)
		}
		return paused, lastPaused, resumed
	}
	step := func(at time.Duration, paused bool, wantLastPaused, wantResumed time.Duration) {
		t.Helper()
		env.clock.Set(env.at(at))
		if err := env.runner.SetPaused(ctx, env.export.ID, paused); err != nil {
			t.Fatal(err)
		}
		gotPaused, lastPaused, resumed := state()
		for _, c := range []struct {
			name string
			got  *time.Time
			want time.Duration
		}{{"last_paused_at", lastPaused, wantLastPaused}, {"resumed_at", resumed, wantResumed}} {
			if c.want < 0 && c.got != nil || c.want >= 0 && (c.got == nil || !c.got.Equal(env.at(c.want))) {
				t.Errorf("at %v paused=%t: %s %v, want origin+%v", at, paused, c.name, c.got, c.want)
			}
		}
		if gotPaused != paused {
			t.Errorf("at %v: paused %t, want %t", at, gotPaused, paused)
		}
	}
	step(time.Minute, false, -1, -1)                         // unpausing an active export changes nothing
	step(2*time.Minute, true, 2*time.Minute, -1)             // a pause
	step(3*time.Minute, true, 2*time.Minute, -1)             // pausing again keeps the real pause
	step(4*time.Minute, false, 2*time.Minute, 4*time.Minute) // an unpause keeps last_paused_at
	step(5*time.Minute, false, 2*time.Minute, 4*time.Minute)
}

func TestRunsCursor(t *testing.T) {
	env := newRunsEnv(t)
	env.backfill(t, 0, 35*time.Minute) // seven windows
	after := env.at(-24 * time.Hour)
	for _, desc := range []bool{false, true} {
		f := batchexport.RunFilter{Export: env.export.ID, After: &after, OrderBy: "data_interval_start", Desc: desc, Limit: 3}
		all := env.runs(t)
		if desc {
			slices.Reverse(all)
		}
		// Forward through the pages, then back from the last one.
		var pages [][]batchexport.Run
		for {
			runs, more, err := env.runner.Runs(context.Background(), f)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, runs)
			if !more {
				break
			}
			c := f.Cursor(runs[len(runs)-1], false)
			f.From = &c
		}
		if len(pages) != 3 || len(pages[2]) != 1 {
			t.Fatalf("desc=%t: %d pages, want 3 of 3, 3 and 1 runs", desc, len(pages))
		}
		if got := env.describe(slices.Concat(pages...)); got != env.describe(all) {
			t.Fatalf("desc=%t forward: %s, want %s", desc, got, env.describe(all))
		}
		c := f.Cursor(pages[2][0], true)
		f.From = &c
		back, more, err := env.runner.Runs(context.Background(), f)
		if err != nil || !more || env.describe(back) != env.describe(pages[1]) {
			t.Fatalf("desc=%t back: %s more=%t %v, want %s", desc, env.describe(back), more, err, env.describe(pages[1]))
		}
		c = f.Cursor(back[0], true)
		f.From = &c
		if back, more, err = env.runner.Runs(context.Background(), f); err != nil || more || env.describe(back) != env.describe(pages[0]) {
			t.Fatalf("desc=%t back to the start: %s more=%t %v", desc, env.describe(back), more, err)
		}
	}
	env.setStatus(t, env.runs(t)[2].ID, batchexport.StatusFailed, 8)
	if got := env.describe(env.runs(t, batchexport.StatusFailed, batchexport.StatusCompleted)); got != "10:Failed:8" {
		t.Errorf("runs with status Failed or Completed: %s", got)
	}
}
