package batchexport_test

import (
	"github.com/hedge-analytics/hedge/internal/testlog"

	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/batchexport"
	"github.com/hedge-analytics/hedge/warehouse"
)

// testClock is the clock of the warehouse (inserted_at) and of the runner (which
// windows have ended): tests set it to place events in the windows they choose.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// exportEnv is a warehouse, a runner and the management API over them, on a clock
// the test moves. The runner ticks only when woken.
type exportEnv struct {
	clock   *testClock
	wh      *warehouse.Warehouse
	runner  *batchexport.Runner
	config  batchexport.Config
	apiURL  string
	key     string
	team    int64
	org     string
	dataDir string
	// origin is the start of the 5-minute window the test starts in.
	origin time.Time
}

func newExportEnv(t *testing.T) *exportEnv {
	t.Helper()
	return newExportEnvWith(t, nil)
}

// newExportEnvWith is newExportEnv with a runner's config that configure changes
// (loopback S3 endpoints are allowed unless it says otherwise).
func newExportEnvWith(t *testing.T, configure func(*batchexport.Config)) *exportEnv {
	t.Helper()
	ctx := context.Background()
	dataDir := t.TempDir()
	origin := time.Now().UTC().Truncate(5 * time.Minute)
	env := &exportEnv{clock: &testClock{t: origin.Add(time.Minute)}, dataDir: dataDir, origin: origin}
	log := testlog.New()
	var err error
	env.wh, err = warehouse.Open(ctx, warehouse.Config{Path: filepath.Join(dataDir, "hedge.duckdb"), Now: env.clock.Now, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.wh.Close() })
	boot, err := admin.BootstrapIfEmpty(ctx, env.wh.DB(), dataDir, admin.Bootstrap{UserEmail: "owner@example.com", AdminURL: "http://admin", CaptureURL: "http://capture"})
	if err != nil {
		t.Fatal(err)
	}
	env.key, env.team, env.org = boot.PersonalAPIKey, boot.ProjectID, boot.OrganizationID
	env.config = batchexport.Config{Warehouse: env.wh, Policy: batchexport.Policy{DataDir: dataDir, AllowPrivateEndpoints: true},
		Tick: time.Hour, MaxAttempts: 3, RetryBackoff: time.Second, Now: env.clock.Now, Logger: log}
	if configure != nil {
		configure(&env.config)
	}
	env.startRunner(t)
	api, err := admin.New(ctx, admin.Config{Warehouse: env.wh, Exports: env.runner, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve(ln)
	t.Cleanup(func() { api.Shutdown(context.Background()) })
	env.apiURL = "http://" + ln.Addr().String()
	return env
}

// startRunner starts a runner, as a start of hedge does.
func (env *exportEnv) startRunner(t *testing.T) {
	t.Helper()
	runner := batchexport.New(env.config)
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runner.Close)
	env.runner = runner
}

// exportDir is where a Parquet destination of the env's project with a relative path
// writes: below the project's directory of the data directory's exports.
func (env *exportEnv) exportDir(path string) string {
	return filepath.Join(env.dataDir, batchexport.ExportsDir, fmt.Sprint(env.team), path)
}

// at is the origin plus d: a time in the test's windows.
func (env *exportEnv) at(d time.Duration) time.Time { return env.origin.Add(d) }

// call sends a management API request and decodes the JSON answer into out (if any).
func (env *exportEnv) call(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, env.apiURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+env.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

func (env *exportEnv) must(t *testing.T, status int, method, path, body string) map[string]any {
	t.Helper()
	var out map[string]any
	if got := env.call(t, method, path, body, &out); got != status {
		t.Fatalf("%s %s: status %d, want %d: %v", method, path, got, status, out)
	}
	return out
}

// createExport creates a 5-minute export of the model to the destination, at the
// clock's time.
func (env *exportEnv) createExport(t *testing.T, model, destination string) string {
	t.Helper()
	return env.createExportIn(t, env.team, model, destination)
}

// createExportIn is createExport in the given project.
func (env *exportEnv) createExportIn(t *testing.T, team int64, model, destination string) string {
	t.Helper()
	e := env.must(t, 201, "POST", fmt.Sprintf("/api/projects/%d/batch_exports/", team),
		fmt.Sprintf(`{"name": "test", "model": %q, "interval": "every 5 minutes", "destination": %s}`, model, destination))
	return fmt.Sprintf("/api/projects/%d/batch_exports/%s/", team, e["id"])
}

// createProject creates another project in the env's organization.
func (env *exportEnv) createProject(t *testing.T, name string) int64 {
	t.Helper()
	p := env.must(t, 201, "POST", "/api/organizations/"+env.org+"/projects/", fmt.Sprintf(`{"name": %q}`, name))
	return int64(p["id"].(float64))
}

// testEvent is an event to ingest: its name, distinct id, timestamp and what else it
// carries for the identity model.
type testEvent struct {
	name, distinctID string
	timestamp        time.Time
	set, anon        string
}

// ingest commits events of the env's project with the clock at the given time (their
// inserted_at), and returns their uuids.
func (env *exportEnv) ingest(t *testing.T, at time.Time, events ...testEvent) []string {
	t.Helper()
	return env.ingestFor(t, env.team, at, events...)
}

// ingestFor is ingest for the given project.
func (env *exportEnv) ingestFor(t *testing.T, team int64, at time.Time, events ...testEvent) []string {
	t.Helper()
	return env.ingestOn(t, warehouse.LaneRealtime, team, at, events...)
}

// ingestOn is ingestFor through the given lane: LaneHistorical for the events of an
// import's historical_migration batches.
func (env *exportEnv) ingestOn(t *testing.T, lane warehouse.Lane, team int64, at time.Time, events ...testEvent) []string {
	t.Helper()
	env.clock.Set(at)
	batch := &warehouse.Batch{Lane: lane}
	var ids []string
	for _, e := range events {
		id := uuid.Must(uuid.NewV7())
		ids = append(ids, id.String())
		batch.Events = append(batch.Events, warehouse.Event{UUID: id, TeamID: team, Name: e.name, DistinctID: e.distinctID,
			Timestamp: e.timestamp, Properties: fmt.Sprintf(`{"$browser": "Firefox", "n": %d}`, len(ids)), Set: e.set, AnonDistinctID: e.anon})
	}
	if err := env.wh.Writer().Submit(batch); err != nil {
		t.Fatal(err)
	}
	return ids
}

type runRecord struct {
	ID                string     `json:"id"`
	Status            string     `json:"status"`
	RecordsCompleted  *int64     `json:"records_completed"`
	LatestError       *string    `json:"latest_error"`
	DataIntervalStart time.Time  `json:"data_interval_start"`
	DataIntervalEnd   time.Time  `json:"data_interval_end"`
	Attempts          int        `json:"attempts"`
	NextAttemptAt     *time.Time `json:"next_attempt_at"`
	Backfill          *string    `json:"backfill"`
}

func (env *exportEnv) runs(t *testing.T, export string) []runRecord {
	t.Helper()
	var page struct {
		Results []runRecord `json:"results"`
	}
	if status := env.call(t, "GET", export+"runs/?ordering=data_interval_start&limit=1000", "", &page); status != 200 {
		t.Fatalf("runs: %d", status)
	}
	return page.Results
}

// settle wakes the runner at the clock's time now and waits until the export's runs
// satisfy done.
func (env *exportEnv) settle(t *testing.T, export string, now time.Time, done func([]runRecord) bool) []runRecord {
	t.Helper()
	env.clock.Set(now)
	env.runner.Wake()
	deadline := time.Now().Add(30 * time.Second)
	for {
		runs := env.runs(t, export)
		if done(runs) {
			return runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs did not settle: %+v", runs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// completed is a settle condition: the export has n runs and all are Completed.
func completed(n int) func([]runRecord) bool {
	return func(runs []runRecord) bool {
		if len(runs) != n {
			return false
		}
		for _, r := range runs {
			if r.Status != "Completed" {
				return false
			}
		}
		return true
	}
}

// describeRuns is each run as "<minutes from origin>-<minutes>:<status>:<records>".
func (env *exportEnv) describeRuns(runs []runRecord) string {
	var parts []string
	for _, r := range runs {
		records := int64(-1)
		if r.RecordsCompleted != nil {
			records = *r.RecordsCompleted
		}
		parts = append(parts, fmt.Sprintf("%d-%d:%s:%d", int(r.DataIntervalStart.Sub(env.origin).Minutes()),
			int(r.DataIntervalEnd.Sub(env.origin).Minutes()), r.Status, records))
	}
	return strings.Join(parts, " ")
}

// exportedEvent is a row of an events export as read back.
type exportedEvent struct {
	uuid, event, distinctID, date, team string
	timestamp                           time.Time
}

// readEventsWithDuckDB reads every Parquet file under dir with DuckDB's read_parquet
// and Hive partitioning, the way a user would query an export.
func readEventsWithDuckDB(t *testing.T, dir string) []exportedEvent {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT uuid, event, distinct_id, "timestamp", date::VARCHAR, team_id::VARCHAR, json_extract_string(properties, '$."$browser"')
		FROM read_parquet(?, hive_partitioning = true) ORDER BY uuid`, filepath.Join(dir, "**", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var events []exportedEvent
	for rows.Next() {
		var e exportedEvent
		var browser string
		if err := rows.Scan(&e.uuid, &e.event, &e.distinctID, &e.timestamp, &e.date, &e.team, &browser); err != nil {
			t.Fatal(err)
		}
		if browser != "Firefox" {
			t.Fatalf("properties are the event's JSON: $browser %q", browser)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// readWithArrow reads one Parquet file with arrow-go's reader: its schema and columns.
func readWithArrow(t *testing.T, path string) arrow.Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	reader, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	fr, err := pqarrow.NewFileReader(reader, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	table, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(table.Release)
	return table
}

// stringColumn is a string column of an arrow table, all chunks.
func stringColumn(t *testing.T, table arrow.Table, name string) []string {
	t.Helper()
	indices := table.Schema().FieldIndices(name)
	if len(indices) != 1 {
		t.Fatalf("no column %s in %s", name, table.Schema())
	}
	var values []string
	for _, chunk := range table.Column(indices[0]).Data().Chunks() {
		strs, ok := chunk.(*array.String)
		if !ok {
			t.Fatalf("column %s is %s, want utf8", name, chunk.DataType())
		}
		for i := range strs.Len() {
			values = append(values, strs.Value(i))
		}
	}
	return values
}

// checkEventFiles reads each Parquet file under dir with arrow-go: typed columns, and
// the uuids of all files (each file's rows with it).
func checkEventFiles(t *testing.T, dir string) []string {
	t.Helper()
	var uuids []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		table := readWithArrow(t, path)
		schema := table.Schema()
		for _, c := range []struct {
			name string
			want arrow.Type
		}{{"uuid", arrow.STRING}, {"event", arrow.STRING}, {"distinct_id", arrow.STRING}, {"person_id", arrow.STRING},
			{"timestamp", arrow.TIMESTAMP}, {"inserted_at", arrow.TIMESTAMP}, {"properties", arrow.STRING},
			{"$group_0", arrow.STRING}, {"$group_4", arrow.STRING}} {
			i := schema.FieldIndices(c.name)
			if len(i) != 1 || schema.Field(i[0]).Type.ID() != c.want {
				t.Fatalf("%s: column %s is not %s: %s", path, c.name, c.want, schema)
			}
		}
		if ts := schema.Field(schema.FieldIndices("timestamp")[0]).Type.(*arrow.TimestampType); ts.TimeZone != "UTC" {
			t.Fatalf("%s: timestamps are UTC instants, got zone %q", path, ts.TimeZone)
		}
		uuids = append(uuids, stringColumn(t, table, "uuid")...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(uuids)
	return uuids
}

func sorted(lists ...[]string) []string {
	all := slices.Concat(lists...)
	slices.Sort(all)
	return all
}

// Runs over several windows with pause, unpause and backfill, to a Parquet directory:
// every event exported exactly once, by the scheduled window it was committed in or
// by the backfilled window of its timestamp.
func TestEventsExportToParquet(t *testing.T) {
	env := newExportEnv(t)
	day1 := env.origin.Add(-26 * time.Hour)
	export := env.createExport(t, "events", `{"type": "Parquet", "config": {"path": "exports"}}`)
	dir := env.exportDir("exports")

	// Window 0-5: three events over two dates, two of them late; window 5-10: two more.
	a := env.ingest(t, env.at(time.Minute), testEvent{"$pageview", "u1", day1, "", ""},
		testEvent{"$pageview", "u2", day1.Add(time.Second), "", ""}, testEvent{"signed up", "u1", env.at(time.Minute), "", ""})
	b := env.ingest(t, env.at(6*time.Minute), testEvent{"$pageview", "u3", env.at(6 * time.Minute), "", ""},
		testEvent{"$pageview", "u3", env.at(6 * time.Minute), "", ""})
	runs := env.settle(t, export, env.at(6*time.Minute), completed(1))
	if got := env.describeRuns(runs); got != "0-5:Completed:3" {
		t.Fatalf("after the first window: %s", got)
	}
	first := runs[0].ID
	for date, n := range map[time.Time]int{day1: 2, env.at(time.Minute): 1} {
		path := filepath.Join(dir, fmt.Sprintf("team_id=%d", env.team), "date="+date.Format(time.DateOnly), first+".parquet")
		if rows := readWithArrow(t, path).NumRows(); rows != int64(n) {
			t.Fatalf("%s holds %d rows, want %d", path, rows, n)
		}
	}

	// Paused from 7 to 16: the windows 5-10 and 10-15 end while paused and are not run;
	// the export resumes with 15-20.
	env.clock.Set(env.at(7 * time.Minute))
	env.must(t, 200, "POST", export+"pause/", "")
	c := env.ingest(t, env.at(12*time.Minute), testEvent{"$pageview", "u4", env.at(12 * time.Minute), "", ""})
	env.settle(t, export, env.at(16*time.Minute), completed(1))
	env.must(t, 200, "POST", export+"unpause/", "")
	d := env.ingest(t, env.at(17*time.Minute), testEvent{"$pageview", "u5", env.at(17 * time.Minute), "", ""})
	runs = env.settle(t, export, env.at(21*time.Minute), completed(2))
	if got := env.describeRuns(runs); got != "0-5:Completed:3 15-20:Completed:1" {
		t.Fatalf("after the pause: %s", got)
	}

	// A backfill of 5-15 runs the two skipped windows.
	var backfill map[string]any
	if status := env.call(t, "POST", export+"backfill/", fmt.Sprintf(`{"start_at": %q, "end_at": %q}`,
		env.at(5*time.Minute).Format(time.RFC3339), env.at(15*time.Minute).Format(time.RFC3339)), &backfill); status != 200 || backfill["backfill_id"] == nil {
		t.Fatalf("backfill: %d %v", status, backfill)
	}
	runs = env.settle(t, export, env.at(21*time.Minute), completed(4))
	if got := env.describeRuns(runs); got != "0-5:Completed:3 5-10:Completed:2 10-15:Completed:1 15-20:Completed:1" {
		t.Fatalf("after the backfill: %s", got)
	}
	want := sorted(a, b, c, d)
	checkExported := func(when string) {
		t.Helper()
		events := readEventsWithDuckDB(t, dir)
		var got []string
		for _, e := range events {
			got = append(got, e.uuid)
			if e.team != fmt.Sprint(env.team) || (e.date != e.timestamp.UTC().Format(time.DateOnly)) {
				t.Fatalf("%s: %+v is not under team_id=%d/date=<its date>", when, e, env.team)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: DuckDB reads %d events %v, want each of %d once %v", when, len(got), got, len(want), want)
		}
		if got := checkEventFiles(t, dir); !slices.Equal(got, want) {
			t.Fatalf("%s: arrow-go reads %v, want %v", when, got, want)
		}
	}
	checkExported("after the backfill")

	// Running a window again (a backfill over an exported window, a retry) rewrites its
	// files of the dates it exports: nothing is exported twice. Window 0-5 by event time
	// is the one event of the origin's date; the scheduled run's file of day1, of the
	// late events, stays as it was.
	env.must(t, 201, "POST", export+"backfills/", fmt.Sprintf(`{"start_at": %q, "end_at": %q}`,
		env.at(0).Format(time.RFC3339), env.at(time.Second).Format(time.RFC3339)))
	var retry map[string]any
	if status := env.call(t, "POST", export+"runs/"+runs[3].ID+"/retry/", "", &retry); status != 201 || retry["backfill_id"] == nil {
		t.Fatalf("retry: %d %v", status, retry)
	}
	runs = env.settle(t, export, env.at(22*time.Minute), completed(4))
	if runs[0].ID != first || runs[0].Backfill == nil || runs[3].Backfill == nil {
		t.Fatalf("a window runs again under its run: %+v", runs)
	}
	if got := env.describeRuns(runs); got != "0-5:Completed:1 5-10:Completed:2 10-15:Completed:1 15-20:Completed:1" {
		t.Fatalf("after running windows again: %s", got)
	}
	checkExported("after running windows again")

	// The runs list pages by cursor, both ways.
	var page struct {
		Next, Previous *string
		Results        []runRecord
	}
	if env.call(t, "GET", export+"runs/?limit=3&ordering=data_interval_start", "", &page); len(page.Results) != 3 || page.Next == nil || page.Previous != nil {
		t.Fatalf("first page: %d runs, next %v, previous %v", len(page.Results), page.Next, page.Previous)
	}
	next := strings.TrimPrefix(*page.Next, env.apiURL)
	if env.call(t, "GET", next, "", &page); len(page.Results) != 1 || page.Results[0].ID != runs[3].ID || page.Next != nil || page.Previous == nil {
		t.Fatalf("second page: %+v next %v previous %v", page.Results, page.Next, page.Previous)
	}
	if env.call(t, "GET", strings.TrimPrefix(*page.Previous, env.apiURL), "", &page); len(page.Results) != 3 || page.Results[0].ID != first || page.Previous != nil {
		t.Fatalf("back to the first page: %d runs, previous %v", len(page.Results), page.Previous)
	}
	var failed struct{ Results []runRecord }
	if env.call(t, "GET", export+"runs/?status=Failed", "", &failed); len(failed.Results) != 0 {
		t.Fatalf("no run failed: %+v", failed.Results)
	}

	// A deleted export's queued runs are cancelled, not run.
	env.must(t, 200, "POST", export+"pause/", "")
	env.must(t, 201, "POST", export+"backfills/", fmt.Sprintf(`{"start_at": %q, "end_at": %q}`,
		env.at(0).Format(time.RFC3339), env.at(20*time.Minute).Format(time.RFC3339)))
	var cancelled int
	env.call(t, "DELETE", export, "", nil)
	if err := env.wh.DB().QueryRow(`SELECT count(*) FROM meta.batch_export_runs WHERE status = 'Cancelled'`).Scan(&cancelled); err != nil || cancelled != 4 {
		t.Fatalf("cancelled runs: %d %v", cancelled, err)
	}
}

// runUUIDs are the uuids of the events in the files of the run under dir, sorted.
func runUUIDs(t *testing.T, dir string, run runRecord) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "team_id=*", "date=*", run.ID+"*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, path := range paths {
		uuids = append(uuids, stringColumn(t, readWithArrow(t, path), "uuid")...)
	}
	slices.Sort(uuids)
	return uuids
}

// A backfill selects the events of its windows by timestamp, the schedule by commit
// time: history imported now (historical_migration batches) is exported by the
// scheduled window it is committed in, and by a backfill of the span it happened in;
// an event that arrives late, for a window already exported, goes with the window it
// arrives in.
func TestBackfillSelectsByEventTime(t *testing.T) {
	env := newExportEnv(t)
	export := env.createExport(t, "events", `{"type": "Parquet", "config": {"path": "history"}}`)
	dir := env.exportDir("history")

	// At 2: an import of the last half hour and of one event before it, and an event
	// of now. At 7, once window 0-5 has run, an event of that window arrives late.
	history := env.ingestOn(t, warehouse.LaneHistorical, env.team, env.at(2*time.Minute),
		testEvent{"imported", "h1", env.at(-25 * time.Minute), "", ""},
		testEvent{"imported", "h1", env.at(-12 * time.Minute), "", ""},
		testEvent{"imported", "h2", env.at(-time.Second), "", ""})
	older := env.ingestOn(t, warehouse.LaneHistorical, env.team, env.at(2*time.Minute),
		testEvent{"imported", "h3", env.at(-3 * time.Hour), "", ""})
	current := env.ingest(t, env.at(2*time.Minute), testEvent{"$pageview", "u1", env.at(2 * time.Minute), "", ""})
	env.settle(t, export, env.at(6*time.Minute), completed(1))
	late := env.ingest(t, env.at(7*time.Minute), testEvent{"$pageview", "u1", env.at(time.Minute), "", ""})
	runs := env.settle(t, export, env.at(11*time.Minute), completed(2))
	if got := env.describeRuns(runs); got != "0-5:Completed:5 5-10:Completed:1" {
		t.Fatalf("the scheduled windows: %s", got)
	}
	for i, want := range [][]string{sorted(history, older, current), late} {
		if got := runUUIDs(t, dir, runs[i]); !slices.Equal(got, want) {
			t.Fatalf("scheduled window %d exported %v, want the events committed in it %v", i, got, want)
		}
	}

	// A backfill of the half hour before 0: the imported events of each window, not
	// the one before it.
	env.must(t, 201, "POST", export+"backfills/", fmt.Sprintf(`{"start_at": %q, "end_at": %q}`,
		env.at(-30*time.Minute).Format(time.RFC3339), env.at(0).Format(time.RFC3339)))
	runs = env.settle(t, export, env.at(11*time.Minute), completed(8))
	if got, want := env.describeRuns(runs),
		"-30--25:Completed:0 -25--20:Completed:1 -20--15:Completed:0 -15--10:Completed:1 -10--5:Completed:0 -5-0:Completed:1 "+
			"0-5:Completed:5 5-10:Completed:1"; got != want {
		t.Fatalf("after the backfill: %s, want %s", got, want)
	}
	var backfilled []string
	for _, r := range runs[:6] {
		backfilled = append(backfilled, runUUIDs(t, dir, r)...)
	}
	if slices.Sort(backfilled); !slices.Equal(backfilled, sorted(history)) {
		t.Fatalf("the backfill exported %v, want the events imported for its span %v", backfilled, sorted(history))
	}
}

// A backfill that reaches a window while the window's scheduled run is uploading runs
// the window again once that run has finished, by event time: the events imported for
// it meanwhile are exported, and the scheduled run's outcome is not recorded over the
// backfill's.
func TestBackfillRunsARunningWindowAgain(t *testing.T) {
	// An S3 endpoint that holds the first upload until released and keeps nothing.
	var puts atomic.Int32
	held, release := make(chan struct{}), make(chan struct{})
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPut && puts.Add(1) == 1 {
			close(held)
			<-release
		}
		w.Header().Set("ETag", `"0"`)
	}))
	t.Cleanup(endpoint.Close)
	var released sync.Once
	releaseUpload := func() { released.Do(func() { close(release) }) }
	t.Cleanup(releaseUpload) // before the endpoint closes: it waits for its requests

	env := newExportEnv(t)
	export := env.createExport(t, "events", fmt.Sprintf(`{"type": "S3", "config": {"bucket_name": "held", "region": "us-east-1",
		"endpoint_url": %q, "aws_access_key_id": "key", "aws_secret_access_key": "secret"}}`, endpoint.URL))
	env.ingest(t, env.at(time.Minute), testEvent{"$pageview", "u1", env.at(time.Minute), "", ""})
	env.clock.Set(env.at(6 * time.Minute))
	env.runner.Wake()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("window 0-5 was not uploaded")
	}
	env.ingestOn(t, warehouse.LaneHistorical, env.team, env.at(6*time.Minute), testEvent{"imported", "h1", env.at(2 * time.Minute), "", ""})
	env.must(t, 201, "POST", export+"backfills/", fmt.Sprintf(`{"start_at": %q, "end_at": %q}`,
		env.at(0).Format(time.RFC3339), env.at(5*time.Minute).Format(time.RFC3339)))
	releaseUpload()
	runs := env.settle(t, export, env.at(6*time.Minute), completed(1))
	if got := env.describeRuns(runs); got != "0-5:Completed:2" || runs[0].Backfill == nil || runs[0].Attempts != 1 {
		t.Fatalf("the window once run again: %s %+v, want its two events, by the backfill's first attempt", got, runs[0])
	}
	if n := puts.Load(); n != 2 {
		t.Fatalf("%d uploads, want the scheduled run's and the backfill's", n)
	}
}

// The schedule stops at end_at, starts at start_at, and an unpause with backfill:
// true exports the windows of the pause.
func TestScheduleBounds(t *testing.T) {
	env := newExportEnv(t)
	e := env.must(t, 201, "POST", fmt.Sprintf("/api/projects/%d/batch_exports/", env.team), fmt.Sprintf(
		`{"name": "bounded", "interval": "every 5 minutes", "start_at": %q, "end_at": %q, "destination": {"type": "Parquet", "config": {"path": "bounded"}}}`,
		env.at(5*time.Minute).Format(time.RFC3339), env.at(15*time.Minute).Format(time.RFC3339)))
	export := fmt.Sprintf("/api/projects/%d/batch_exports/%s/", env.team, e["id"])
	runs := env.settle(t, export, env.at(31*time.Minute), completed(2))
	if got := env.describeRuns(runs); got != "5-10:Completed:0 10-15:Completed:0" {
		t.Fatalf("bounded schedule: %s", got)
	}

	other := env.createExport(t, "events", `{"type": "Parquet", "config": {"path": "resumed"}}`) // at 31: first window 30-35
	env.clock.Set(env.at(32 * time.Minute))
	env.must(t, 200, "POST", other+"pause/", "")
	env.ingest(t, env.at(38*time.Minute), testEvent{"$pageview", "u1", env.at(38 * time.Minute), "", ""})
	env.clock.Set(env.at(47 * time.Minute))
	env.must(t, 200, "POST", other+"unpause/", `{"backfill": true}`)
	runs = env.settle(t, other, env.at(47*time.Minute), completed(3))
	if got := env.describeRuns(runs); got != "30-35:Completed:0 35-40:Completed:1 40-45:Completed:0" {
		t.Fatalf("unpause with backfill: %s", got)
	}
}

// The persons model: each distinct id whose person (or mapping) last changed in the
// window, with the person's properties as they are when the window runs.
func TestPersonsExport(t *testing.T) {
	env := newExportEnv(t)
	export := env.createExport(t, "persons", `{"type": "Parquet", "config": {"path": "persons"}}`)
	env.ingest(t, env.at(time.Minute), testEvent{"$identify", "user-1", env.at(time.Minute), `{"email": "one@example.com"}`, ""},
		testEvent{"$pageview", "anon-1", env.at(time.Minute), "", ""})
	env.settle(t, export, env.at(6*time.Minute), completed(1))
	// In the next window, anon-1 is merged into user-1's person; in the one after, an
	// event changes no person.
	env.ingest(t, env.at(6*time.Minute), testEvent{"$identify", "user-1", env.at(6 * time.Minute), `{"plan": "pro"}`, "anon-1"})
	env.ingest(t, env.at(11*time.Minute), testEvent{"$pageview", "user-1", env.at(11 * time.Minute), "", ""})
	runs := env.settle(t, export, env.at(16*time.Minute), completed(3))
	if got := env.describeRuns(runs); got != "0-5:Completed:2 5-10:Completed:2 10-15:Completed:0" {
		t.Fatalf("persons runs: %s", got)
	}
	// Persons have no event time: a backfill selects them by commit time too.
	env.must(t, 201, "POST", export+"backfills/", fmt.Sprintf(`{"start_at": %q, "end_at": %q}`,
		env.at(5*time.Minute).Format(time.RFC3339), env.at(10*time.Minute).Format(time.RFC3339)))
	runs = env.settle(t, export, env.at(16*time.Minute), completed(3))
	if got := env.describeRuns(runs); got != "0-5:Completed:2 5-10:Completed:2 10-15:Completed:0" || runs[1].Backfill == nil {
		t.Fatalf("persons runs after a backfill of 5-10: %s", got)
	}
	read := func(run runRecord) (ids []string, persons map[string]string, props map[string]string) {
		path := filepath.Join(env.exportDir("persons"), fmt.Sprintf("team_id=%d", env.team),
			"date="+run.DataIntervalStart.Format(time.DateOnly), run.ID+".parquet")
		table := readWithArrow(t, path)
		ids = stringColumn(t, table, "distinct_id")
		persons, props = map[string]string{}, map[string]string{}
		for i, p := range stringColumn(t, table, "person_id") {
			persons[ids[i]] = p
			props[ids[i]] = stringColumn(t, table, "properties")[i]
		}
		return ids, persons, props
	}
	ids, persons, _ := read(runs[0])
	if !slices.Equal(ids, []string{"anon-1", "user-1"}) || persons["anon-1"] == persons["user-1"] {
		t.Fatalf("first window: %v %v", ids, persons)
	}
	ids, persons, props := read(runs[1])
	if !slices.Equal(ids, []string{"anon-1", "user-1"}) || persons["anon-1"] != persons["user-1"] ||
		!strings.Contains(props["user-1"], `"plan":"pro"`) || !strings.Contains(props["user-1"], `"email":"one@example.com"`) {
		t.Fatalf("after the merge: %v %v %v", ids, persons, props)
	}
}

// A run that was running when hedge stopped (a crash, say) runs again at the next
// start, from the beginning.
func TestRunLeftRunningRunsAgain(t *testing.T) {
	env := newExportEnv(t)
	export := env.createExport(t, "events", `{"type": "Parquet", "config": {"path": "exports"}}`)
	want := env.ingest(t, env.at(time.Minute), testEvent{"$pageview", "u1", env.at(time.Minute), "", ""})
	runs := env.settle(t, export, env.at(6*time.Minute), completed(1))
	env.runner.Close()
	dir := env.exportDir("exports")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := env.wh.DB().Exec(`UPDATE meta.batch_export_runs SET status = 'Running' WHERE id = ?`, runs[0].ID); err != nil {
		t.Fatal(err)
	}
	env.startRunner(t)
	runs = env.settle(t, export, env.at(6*time.Minute), completed(1))
	if runs[0].Attempts != 1 {
		t.Fatalf("the interrupted attempt does not count: %+v", runs[0])
	}
	if got := checkEventFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("exported again: %v, want %v", got, want)
	}
}

// An export that is days behind (hedge was stopped) catches up a bounded batch of
// windows at a time, each created in a small transaction, while another tenant's
// events keep committing.
func TestScheduleCatchUpLeavesIngestionAlone(t *testing.T) {
	env := newExportEnv(t)
	export := env.createExport(t, "events", `{"type": "Parquet", "config": {"path": "behind"}}`)
	env.settle(t, export, env.at(6*time.Minute), completed(1))
	other := env.createProject(t, "Other")

	// Four days later: 1152 windows have ended since.
	env.clock.Set(env.at(4*24*time.Hour + 6*time.Minute))
	env.runner.Wake()
	var ingestErr error
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; ; n++ {
		batch := &warehouse.Batch{Lane: warehouse.LaneRealtime}
		for i := range 50 {
			batch.Events = append(batch.Events, warehouse.Event{UUID: uuid.Must(uuid.NewV7()), TeamID: other, Name: "$pageview",
				DistinctID: fmt.Sprint(i), Timestamp: env.clock.Now(), Properties: `{"n": 1}`})
		}
		if err := env.wh.Writer().Submit(batch); err != nil && ingestErr == nil {
			ingestErr = fmt.Errorf("commit %d of the other tenant's events: %w", n, err)
		}
		var all, done int
		if err := env.wh.DB().QueryRow(`SELECT count(*), count(*) FILTER (WHERE status = 'Completed') FROM meta.batch_export_runs`).Scan(&all, &done); err != nil {
			t.Fatal(err)
		}
		if all-done > 100 {
			t.Fatalf("%d runs queued at once, want at most 100", all-done)
		}
		if done > 3 && n >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the schedule did not catch up: %d runs, %d completed", all, done)
		}
		time.Sleep(20 * time.Millisecond)
	}
	env.must(t, 200, "POST", export+"pause/", "")
	if ingestErr != nil {
		t.Fatal(ingestErr)
	}
}

// A running runner works through a backfill larger than MaxQueuedRuns without waiting
// for its next tick: each finished run makes room for the next window, and no more
// than MaxQueuedRuns of them are ever queued.
func TestBackfillRunsThroughInBatches(t *testing.T) {
	env := newExportEnvWith(t, func(c *batchexport.Config) { c.MaxQueuedRuns = 3 })
	export := env.createExport(t, "events", `{"type": "Parquet", "config": {"path": "batches"}}`)
	env.ingest(t, env.at(-22*time.Minute), testEvent{"$pageview", "u1", env.at(-22 * time.Minute), "", ""})
	env.clock.Set(env.at(time.Minute))
	b := env.must(t, 201, "POST", export+"backfills/", fmt.Sprintf(`{"start_at": %q, "end_at": %q}`,
		env.at(-50*time.Minute).Format(time.RFC3339), env.at(0).Format(time.RFC3339)))
	if b["total_runs"] != float64(10) {
		t.Fatalf("a backfill of ten windows: %v", b)
	}
	most := 0
	runs := env.settle(t, export, env.at(time.Minute), func(runs []runRecord) bool {
		queued := 0
		for _, r := range runs {
			if r.Status != "Completed" {
				queued++
			}
		}
		most = max(most, queued)
		return completed(10)(runs)
	})
	if most > 3 {
		t.Fatalf("%d runs were queued at once, want at most 3", most)
	}
	if got := env.describeRuns(runs); !strings.Contains(got, "-25--20:Completed:1 ") {
		t.Fatalf("the backfill's runs: %s", got)
	}
	var list struct{ Results []map[string]any }
	if env.call(t, "GET", export+"backfills/", "", &list); len(list.Results) != 1 || list.Results[0]["status"] != "Completed" ||
		list.Results[0]["total_runs"] != float64(10) || list.Results[0]["finished_at"] == nil {
		t.Fatalf("the backfill once run: %v", list.Results)
	}
}
