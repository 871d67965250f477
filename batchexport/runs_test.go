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
	return newRunsEnvWith(t, batchexport.Config{})
}

// newRunsEnvWith is newRunsEnv with a runner of cfg, on the env's warehouse and clock.
func newRunsEnvWith(t *testing.T, cfg batchexport.Config) *runsEnv {
	t.Helper()
	origin := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	env := &runsEnv{clock: &testClock{t: origin}, origin: origin}
	var err error
	env.wh, err = warehouse.Open(context.Background(), warehouse.Config{Path: filepath.Join(t.TempDir(), "hedge.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.wh.Close() })
	cfg.Warehouse, cfg.Now = env.wh, env.clock.Now
	env.runner = batchexport.New(cfg)
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
	return env.runsOf(t, env.export.ID, statuses...)
}

// runsOf are the runs of the given export in window order.
func (env *runsEnv) runsOf(t *testing.T, export string, statuses ...string) []batchexport.Run {
	t.Helper()
	after := env.at(-24 * time.Hour)
	runs, more, err := env.runner.Runs(context.Background(), batchexport.RunFilter{Export: export,
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

// A backfill queues each of its windows again under itself, whatever its run's
// status: a running run runs again once it has finished.
func TestBackfillRequeuesRuns(t *testing.T) {
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
	if want := "0:Starting:0 5:Starting:0 10:Starting:0 15:Starting:0"; env.describe(got) != want {
		t.Fatalf("after the second backfill: %s, want %s", env.describe(got), want)
	}
	for i, r := range got {
		if i < len(runs) && r.ID != runs[i].ID {
			t.Errorf("run %d has a new id: a window keeps its run", i)
		}
		if r.Backfill == nil || *r.Backfill != second.ID {
			t.Errorf("run %d belongs to backfill %v, want %s", i, r.Backfill, second.ID)
		}
		if r.FinishedAt != nil || r.LatestError != nil {
			t.Errorf("run %d was queued again with its old outcome: %+v", i, r)
		}
	}
	if second.TotalRuns != 4 {
		t.Errorf("the second backfill has %d runs, want the 4 it queued", second.TotalRuns)
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

// Windows align the same way in any era: a backfill of two days of the 16th century
// runs those two days, not the windows of an aligning that overflowed.
func TestBackfillWindowsOfAnyEra(t *testing.T) {
	env := newRunsEnv(t)
	daily := batchexport.Export{TeamID: 1, Name: "daily", Model: warehouse.ExportEvents, DestinationType: "Parquet",
		Config: map[string]any{"path": "daily"}, Interval: "day"}
	if err := env.runner.Create(context.Background(), &daily); err != nil {
		t.Fatal(err)
	}
	from := time.Date(1500, 1, 1, 12, 0, 0, 0, time.UTC)
	b, err := env.runner.Backfill(context.Background(), daily, from, from.Add(36*time.Hour))
	if err != nil || b.TotalRuns != 2 {
		t.Fatalf("backfill of 1500-01-01T12:00 to 1500-01-03: %+v %v, want 2 runs", b, err)
	}
	after := time.Time{}
	runs, _, err := env.runner.Runs(context.Background(), batchexport.RunFilter{Export: daily.ID, After: &after, OrderBy: "data_interval_start", Limit: 10})
	if err != nil || len(runs) != 2 || !runs[0].DataIntervalStart.Equal(time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)) ||
		!runs[1].DataIntervalEnd.Equal(time.Date(1500, 1, 3, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("runs: %+v %v, want the days 1500-01-01 and 1500-01-02", runs, err)
	}
}

// unscheduled ends the export's schedule where it starts (its end_at at its
// creation), so that only backfills queue its windows.
func (env *runsEnv) unscheduled(t *testing.T) {
	t.Helper()
	env.export.EndAt = &env.origin
	if err := env.runner.Update(context.Background(), env.export); err != nil {
		t.Fatal(err)
	}
}

// queue queues what a tick would, and fails the test if it cannot.
func (env *runsEnv) queue(t *testing.T) {
	t.Helper()
	if err := env.runner.Queue(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// backfillOf is the backfill with the given id, as the API lists it.
func (env *runsEnv) backfillOf(t *testing.T, id string) batchexport.Backfill {
	t.Helper()
	backfills, _, err := env.runner.Backfills(context.Background(), env.export.ID, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backfills {
		if b.ID == id {
			return b
		}
	}
	t.Fatalf("no backfill %s", id)
	return batchexport.Backfill{}
}

// complete marks each unfinished run of the export Completed, as running them would.
func (env *runsEnv) complete(t *testing.T, export string) {
	t.Helper()
	for _, r := range env.runsOf(t, export, batchexport.StatusStarting) {
		env.setStatus(t, r.ID, batchexport.StatusCompleted, 1)
	}
}

// A backfill queues MaxQueuedRuns of its windows at once and the next ones as earlier
// runs finish; its total counts the windows it has yet to queue, and it is Running
// until the last has run. A window that is running under another backfill when the
// backfill reaches it is queued again under it.
func TestBackfillQueuesAsRunsFinish(t *testing.T) {
	env := newRunsEnvWith(t, batchexport.Config{MaxQueuedRuns: 3})
	env.unscheduled(t)
	b := env.backfill(t, 0, 50*time.Minute) // ten windows
	if b.TotalRuns != 10 || b.Status != batchexport.StatusRunning {
		t.Fatalf("a backfill of ten windows: %+v", b)
	}
	step := func(want string) {
		t.Helper()
		env.queue(t)
		if got := env.describe(env.runs(t)); got != want {
			t.Fatalf("runs: %s, want %s", got, want)
		}
	}
	step("0:Starting:0 5:Starting:0 10:Starting:0") // none finished: nothing more
	runs := env.runs(t)
	env.setStatus(t, runs[0].ID, batchexport.StatusCompleted, 1)
	env.setStatus(t, runs[1].ID, batchexport.StatusFailedRetryable, 1) // still unfinished
	step("0:Completed:1 5:FailedRetryable:1 10:Starting:0 15:Starting:0")

	// The window 25-30 is running under a backfill of its own when the first reaches it.
	other := env.backfill(t, 25*time.Minute, 30*time.Minute)
	env.setStatus(t, env.runs(t)[4].ID, batchexport.StatusRunning, 1)
	env.complete(t, env.export.ID)
	env.setStatus(t, env.runs(t)[1].ID, batchexport.StatusCompleted, 2)
	step("0:Completed:1 5:Completed:2 10:Completed:1 15:Completed:1 20:Starting:0 25:Starting:0 30:Starting:0")
	if got := env.backfillOf(t, b.ID); got.TotalRuns != 10 || got.Status != batchexport.StatusRunning || got.FinishedAt != nil {
		t.Fatalf("the backfill with a window taken from another: %+v, want 10 runs, Running", got)
	}
	if got := env.backfillOf(t, other.ID); got.TotalRuns != 0 {
		t.Fatalf("the backfill whose window was taken: %+v, want no runs left", got)
	}
	for range 3 {
		env.complete(t, env.export.ID)
		env.queue(t)
	}
	got := env.runs(t)
	if want := "0:Completed:1 5:Completed:2 10:Completed:1 15:Completed:1 20:Completed:1 25:Completed:1 30:Completed:1 35:Completed:1 40:Completed:1 45:Completed:1"; env.describe(got) != want {
		t.Fatalf("runs: %s, want %s", env.describe(got), want)
	}
	if *got[5].Backfill != b.ID {
		t.Errorf("the window that was running belongs to backfill %s, want %s", *got[5].Backfill, b.ID)
	}
	if done := env.backfillOf(t, b.ID); done.TotalRuns != 10 || done.Status != batchexport.StatusCompleted || done.FinishedAt == nil {
		t.Fatalf("the backfill once its runs finished: %+v", done)
	}
}

// Delete stops a backfill: its queued runs are cancelled and no further window is
// queued, by the runner or by a backfill made with the export read before the delete.
func TestDeleteStopsBackfills(t *testing.T) {
	env := newRunsEnvWith(t, batchexport.Config{MaxQueuedRuns: 3})
	env.unscheduled(t)
	env.backfill(t, 0, 50*time.Minute)
	if err := env.runner.Delete(context.Background(), env.export.ID); err != nil {
		t.Fatal(err)
	}
	env.queue(t)
	if _, err := env.runner.Backfill(context.Background(), env.export, env.at(0), env.at(50*time.Minute)); err != nil {
		t.Fatal(err)
	}
	env.queue(t)
	if got, want := env.describe(env.runs(t)), "0:Cancelled:0 5:Cancelled:0 10:Cancelled:0"; got != want {
		t.Fatalf("runs after delete: %s, want %s", got, want)
	}
}

// The schedule keeps MaxQueuedRuns of its windows queued at most, and catches up at
// most MaxBackfillWindows windows: an export left for two years resumes a year back.
// An export whose start_at is in year 1 starts with the window it was created in, and
// one paused for years resumes with the window that ends next.
func TestScheduleIsBounded(t *testing.T) {
	env := newRunsEnvWith(t, batchexport.Config{MaxQueuedRuns: 3})
	ctx := context.Background()
	env.clock.Set(env.at(7 * time.Minute))
	env.queue(t)
	if got := env.describe(env.runs(t)); got != "0:Starting:0" {
		t.Fatalf("the first window: %s", got)
	}
	env.complete(t, env.export.ID)

	later := env.at(2*366*24*time.Hour + 2*time.Minute)
	env.clock.Set(later)
	env.queue(t)
	env.queue(t)
	runs := env.runs(t)
	oldest := later.Truncate(5 * time.Minute).Add(-batchexport.MaxBackfillWindows * 5 * time.Minute)
	if len(runs) != 4 || !runs[1].DataIntervalStart.Equal(oldest) || !runs[3].DataIntervalEnd.Equal(oldest.Add(15*time.Minute)) {
		t.Fatalf("two years later: %s, want three windows from %s", env.describe(runs), oldest)
	}
	env.complete(t, env.export.ID)
	env.queue(t)
	if runs = env.runs(t); len(runs) != 7 || !runs[6].DataIntervalEnd.Equal(oldest.Add(30*time.Minute)) {
		t.Fatalf("after the first three ran: %s", env.describe(runs))
	}

	ancient := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	early := batchexport.Export{TeamID: 1, Name: "early", Model: warehouse.ExportEvents, DestinationType: "Parquet",
		Config: map[string]any{"path": "early"}, Interval: "hour", StartAt: &ancient}
	if err := env.runner.Create(ctx, &early); err != nil {
		t.Fatal(err)
	}
	paused := batchexport.Export{TeamID: 1, Name: "paused", Model: warehouse.ExportEvents, DestinationType: "Parquet",
		Config: map[string]any{"path": "paused"}, Interval: "every 5 minutes", Paused: true}
	if err := env.runner.Create(ctx, &paused); err != nil {
		t.Fatal(err)
	}
	env.clock.Set(later.Add(3 * 366 * 24 * time.Hour))
	if err := env.runner.SetPaused(ctx, paused.ID, false); err != nil {
		t.Fatal(err)
	}
	env.queue(t)
	if runs := env.runsOf(t, early.ID); len(runs) != 3 || !runs[0].DataIntervalStart.Equal(later.Truncate(time.Hour)) {
		t.Fatalf("an export from year 1 created at %s: %s, want three hours from its creation", later, env.describe(runs))
	}
	if runs := env.runsOf(t, paused.ID); len(runs) != 0 {
		t.Fatalf("an export paused for years queued %d windows on its unpause", len(runs))
	}
	env.clock.Set(env.clock.Now().Add(5 * time.Minute))
	env.queue(t)
	if runs := env.runsOf(t, paused.ID); len(runs) != 1 || !runs[0].DataIntervalEnd.Equal(env.clock.Now().Truncate(5*time.Minute)) {
		t.Fatalf("an export paused for years, five minutes after its unpause: %d runs", len(runs))
	}
}
