package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// lakeEnv is a warehouse whose events go to a lake, reopened at will.
type lakeEnv struct {
	t    *testing.T
	path string
	cfg  Config
	w    *Warehouse
}

func newLakeEnv(t *testing.T, cfg Config) *lakeEnv {
	t.Helper()
	dir := t.TempDir()
	cfg.LakeDir = filepath.Join(dir, "lake")
	// Compactions only when a test asks.
	cfg.Lake.CompactInterval = time.Hour
	env := &lakeEnv{t: t, path: filepath.Join(dir, "hedge.duckdb"), cfg: cfg}
	env.w = openTestWarehouse(t, env.path, cfg)
	t.Cleanup(func() { env.w.Close() })
	return env
}

func (env *lakeEnv) reopen() {
	env.t.Helper()
	if err := env.w.Close(); err != nil {
		env.t.Fatal(err)
	}
	env.w = openTestWarehouse(env.t, env.path, env.cfg)
}

// count is HogQL's count of project's events.
func (env *lakeEnv) count(project int64) int64 {
	env.t.Helper()
	r, err := env.w.Queries().HogQL(context.Background(), Scope{Team: project}, `SELECT count() FROM events`)
	if err != nil {
		env.t.Fatal(err)
	}
	return r.Results[0][0].(int64)
}

// files are the files of the lake directory, relative to it, but the listings.
func (env *lakeEnv) files() []string {
	env.t.Helper()
	var files []string
	err := filepath.WalkDir(env.cfg.LakeDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != listingName {
			rel, _ := filepath.Rel(env.cfg.LakeDir, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		env.t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// catalog are the paths of meta.lake_parts, sorted.
func (env *lakeEnv) catalog() []string {
	env.t.Helper()
	rows, err := env.w.DB().Query(`SELECT path FROM meta.lake_parts ORDER BY path`)
	if err != nil {
		env.t.Fatal(err)
	}
	defer rows.Close()
	var paths []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			env.t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func lakeEvents(team int64, day string, n int) []Event {
	events := make([]Event, n)
	for i := range events {
		events[i] = Event{UUID: uuid.Must(uuid.NewV7()), TeamID: team, Name: "$pageview", DistinctID: "user-" + string(rune('a'+i%5)),
			Timestamp: at(day + "T10:00:00Z").Add(time.Duration(i) * time.Second), Properties: `{"$browser":"Firefox","n":` + string(rune('0'+i%10)) + `}`}
	}
	return events
}

// TestLakeParts: each commit stores its events as a part per project and day, in the
// catalog and in the project's listing, none in the events table; a failed commit
// leaves no file; a file no part names is removed at start; the deduplication window
// holds the parts' uuids across a restart; stock DuckDB reads the listed files.
func TestLakeParts(t *testing.T) {
	env := newLakeEnv(t, Config{})
	ctx := context.Background()
	first := append(lakeEvents(1, "2026-11-02", 30), lakeEvents(2, "2026-11-02", 5)...)
	first = append(first, lakeEvents(1, "2026-11-03", 10)...)
	if err := env.w.Writer().Submit(&Batch{Events: first}); err != nil {
		t.Fatal(err)
	}
	second := lakeEvents(1, "2026-11-03", 7)
	if err := env.w.Writer().Submit(&Batch{Events: second, Position: LogPosition{Partition: 3, Sequence: 41}}); err != nil {
		t.Fatal(err)
	}
	if got := env.catalog(); len(got) != 4 || !slices.Equal(got, env.files()) {
		t.Fatalf("catalog %v, files %v: want the 4 parts of the two commits (2 projects and days, then 1)", got, env.files())
	}
	// The listing is written off the commits' path, within listingInterval.
	listed := func() []string {
		files, err := LakeFiles(env.cfg.LakeDir, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range files {
			rel, _ := filepath.Rel(env.cfg.LakeDir, f)
			files[i] = filepath.ToSlash(rel)
		}
		slices.Sort(files)
		return files
	}
	var project1 []string
	for _, p := range env.catalog() {
		if strings.HasPrefix(p, "team_id=1/") {
			project1 = append(project1, p)
		}
	}
	for deadline := time.Now().Add(listingInterval + 5*time.Second); !slices.Equal(listed(), project1); {
		if time.Now().After(deadline) {
			t.Fatalf("project 1's listing %v, its parts %v", listed(), project1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got, want := env.count(1), int64(47); got != want {
		t.Fatalf("project 1 counts %d events, want %d", got, want)
	}
	if got := env.count(2); got != 5 {
		t.Fatalf("project 2 counts %d events, want 5", got)
	}
	var tableRows int
	if err := env.w.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&tableRows); err != nil || tableRows != 0 {
		t.Fatalf("the events table holds %d rows (%v), want none", tableRows, err)
	}
	if positions, err := env.w.LogPositions(ctx); err != nil || positions[3] != 41 {
		t.Fatalf("log positions %v (%v): want partition 3 at 41, recorded with the part", positions, err)
	}

	// A commit that fails leaves no file behind.
	bad := lakeEvents(1, "2026-11-04", 1)
	bad[0].Properties = "{\"bad\":\"\xff\"}"
	if err := env.w.Writer().Submit(&Batch{Events: bad}); err == nil {
		t.Fatal("an event whose properties are not UTF-8 was stored")
	}
	if got := env.files(); len(got) != 4 {
		t.Fatalf("after a failed commit the lake holds %v", got)
	}

	// A file no part names (a commit that crashed before its COMMIT) goes at start.
	stray := filepath.Join(env.cfg.LakeDir, "team_id=1", "date=2026-11-02", "1-1.parquet")
	if err := os.WriteFile(stray, []byte("half a part"), 0o600); err != nil {
		t.Fatal(err)
	}
	env.reopen()
	if got := env.files(); !slices.Equal(got, env.catalog()) || len(got) != 4 {
		t.Fatalf("after a restart the lake holds %v, the catalog %v", got, env.catalog())
	}
	// The same events again, as a retry after the restart: stored once.
	retry := &Batch{Events: slices.Clone(first)}
	if err := env.w.Writer().Submit(retry); err != nil {
		t.Fatal(err)
	}
	if retry.Duplicates != len(first) || env.count(1) != 47 {
		t.Fatalf("a retry of %d events after a restart: %d duplicates, project 1 counts %d", len(first), retry.Duplicates, env.count(1))
	}

	// Stock DuckDB, which knows nothing of hedge, reads the listed files.
	files, err := LakeFiles(env.cfg.LakeDir, 1)
	if err != nil || len(files) != 3 {
		t.Fatalf("project 1's listing: %v (%v), want its 3 parts", files, err)
	}
	stock, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer stock.Close()
	var n, uuids int
	var earliest time.Time
	var types string
	list := "['" + strings.Join(files, "', '") + "']"
	if err := stock.QueryRow(`SELECT count(*), count(DISTINCT uuid), min("timestamp") FROM read_parquet(`+list+`)`).Scan(&n, &uuids, &earliest); err != nil {
		t.Fatal(err)
	}
	if err := stock.QueryRow(`SELECT string_agg(column_name || ' ' || column_type, ', ') FROM (DESCRIBE SELECT uuid, person_id, "timestamp", properties FROM read_parquet(` + list + `))`).Scan(&types); err != nil {
		t.Fatal(err)
	}
	if n != 47 || uuids != 47 || !earliest.Equal(at("2026-11-02T10:00:00Z")) ||
		types != `uuid UUID, person_id UUID, timestamp TIMESTAMP WITH TIME ZONE, properties VARCHAR` {
		t.Fatalf("stock DuckDB reads %d events, %d uuids, from %s, columns %s", n, uuids, earliest, types)
	}
}

// TestLakeCompaction: the small parts of a project and day become one, each uuid
// once, every row counted once at every step, the files replaced removed after the
// grace only.
func TestLakeCompaction(t *testing.T) {
	// DedupEvents 1: the window forgets at once, so a retry is stored twice, and the
	// compaction is what keeps one.
	env := newLakeEnv(t, Config{DedupEvents: 1, Lake: LakeConfig{CompactParts: 3, Grace: time.Minute}})
	ctx := context.Background()
	var sent []Event
	for range 4 {
		events := lakeEvents(1, "2026-11-02", 20)
		sent = append(sent, events...)
		if err := env.w.Writer().Submit(&Batch{Events: events}); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.w.Writer().Submit(&Batch{Events: sent[:5]}); err != nil { // stored again
		t.Fatal(err)
	}
	other := lakeEvents(1, "2026-11-20", 3) // a day of one part: nothing to merge
	if err := env.w.Writer().Submit(&Batch{Events: other}); err != nil {
		t.Fatal(err)
	}
	if got := len(env.catalog()); got != 6 {
		t.Fatalf("%d parts before the compaction, want 6", got)
	}
	if got := env.count(1); got != 88 {
		t.Fatalf("%d events before the compaction, want 88 (5 stored twice)", got)
	}
	before := env.files()
	now := at("2026-11-21T12:00:00Z")
	if err := env.w.lake.compact(ctx, now); err != nil {
		t.Fatal(err)
	}
	parts := env.w.lake.parts(1)
	if len(parts) != 2 || parts[1].Level != 1 || parts[1].Rows != 80 || parts[0].Rows != 3 {
		t.Fatalf("after the compaction: %+v, want the day's part of 3 and one of 80 merged", parts)
	}
	if got := env.count(1); got != 83 {
		t.Fatalf("%d events after the compaction, want 83", got)
	}
	// The replaced files stay for the grace, for the queries that listed them.
	if got := env.files(); len(got) != len(before)+1 {
		t.Fatalf("right after the compaction the lake holds %v", got)
	}
	if err := env.w.lake.removeGarbage(ctx, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := env.files(); len(got) != len(before)+1 {
		t.Fatalf("within the grace the lake holds %v", got)
	}
	if err := env.w.lake.removeGarbage(ctx, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := env.files(); !slices.Equal(got, env.catalog()) || len(got) != 2 {
		t.Fatalf("after the grace the lake holds %v, the catalog %v", got, env.catalog())
	}
	// The merged part reads as a part the Writer wrote, and survives a restart.
	env.reopen()
	if got := env.count(1); got != 83 {
		t.Fatalf("%d events after a restart, want 83", got)
	}
	if err := env.w.lake.compact(ctx, now); err != nil || len(env.w.lake.parts(1)) != 2 {
		t.Fatalf("a second compaction: %v, parts %+v", err, env.w.lake.parts(1))
	}
	var missing error
	for _, f := range env.files() {
		if _, err := os.Stat(filepath.Join(env.cfg.LakeDir, f)); err != nil {
			missing = errors.Join(missing, err)
		}
	}
	if missing != nil {
		t.Fatal(missing)
	}
}

// TestLakeQuarantine: a damaged part fails neither the queries of its project nor the
// compaction: the first to meet it quarantines it (out of the catalog, its file aside,
// counted), and the query answers from the other parts.
func TestLakeQuarantine(t *testing.T) {
	env := newLakeEnv(t, Config{Lake: LakeConfig{CompactParts: 3}})
	ctx := context.Background()
	for _, day := range []string{"2026-11-02", "2026-11-02", "2026-11-03", "2026-11-02"} {
		if err := env.w.Writer().Submit(&Batch{Events: lakeEvents(1, day, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	damage := func(p lakePart) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(env.cfg.LakeDir, p.Path), []byte("PAR1 not a part any more PAR1"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	parts := env.w.lake.parts(1)
	damage(parts[2]) // the day of one part, read as the query runs
	r, err := env.w.Queries().HogQL(ctx, Scope{Team: 1}, `SELECT count() FROM events`)
	if err != nil || r.Results[0][0].(int64) != 30 {
		t.Fatalf("a query beside a damaged part: %v (%v), want the other parts' 30 events", r, err)
	}
	// The first part, whose footer the events view reads for its columns.
	damage(parts[0])
	r, err = env.w.Queries().HogQL(ctx, Scope{Team: 1}, `SELECT count() FROM events`)
	if err != nil || r.Results[0][0].(int64) != 20 {
		t.Fatalf("a query beside a damaged first part: %v (%v), want the other parts' 20 events", r, err)
	}
	// The compaction meets the next one.
	damage(parts[1])
	if err := env.w.lake.compact(ctx, at("2026-12-01T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if s, err := env.w.Lake(ctx); err != nil || s.QuarantinedParts != 3 || s.QuarantinedEvents != 30 || s.Parts != 1 || s.Events != 10 {
		t.Fatalf("the lake's status: %+v (%v); want 1 part of 10 events, and 3 of 30 quarantined", s, err)
	}
	if got := env.count(1); got != 10 {
		t.Fatalf("%d events after the compaction, want the part left's 10", got)
	}
	env.reopen() // the quarantined files are not strays
	aside, err := filepath.Glob(filepath.Join(env.cfg.LakeDir, quarantineDir, "*.parquet"))
	if err != nil || len(aside) != 3 {
		t.Fatalf("the quarantine directory holds %v (%v)", aside, err)
	}
	if got := env.count(1); got != 10 {
		t.Fatalf("%d events after a restart, want 10", got)
	}
}
