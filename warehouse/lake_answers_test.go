package warehouse

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestLakeAnswers: the same events stored in the events table, in the lake (parts of
// many commits, some merged by a compaction, some written before and some after the
// project chose a materialized property), and stored in a table then moved to the lake
// (MoveToLake), answer every kind of query the same.
func TestLakeAnswers(t *testing.T) {
	dir := t.TempDir()
	// One clock for both, which stamps inserted_at (created_at).
	clock := func() time.Time { return at("2026-11-20T00:00:00Z") }
	table := openTestWarehouse(t, filepath.Join(dir, "table.duckdb"), Config{Now: clock})
	defer table.Close()
	lakeCfg := Config{Now: clock, LakeDir: filepath.Join(dir, "lake"), Lake: LakeConfig{CompactInterval: time.Hour, CompactParts: 4}}
	lake := openTestWarehouse(t, filepath.Join(dir, "lake.duckdb"), lakeCfg)
	defer lake.Close()
	moved := openTestWarehouse(t, filepath.Join(dir, "moved.duckdb"), Config{Now: clock})
	ctx := context.Background()

	r := rand.New(rand.NewPCG(7, 35))
	urls := []string{"/", "/pricing", "/docs", "/signup", "/blog"}
	browsers := []string{"Chrome", "Firefox", "Safari"}
	names := []string{"$pageview", "$pageview", "$pageview", "signed up", "clicked"}
	start := at("2026-11-02T00:00:00Z")
	// Each event at a time of its own: the order of events at one time is no query's.
	sent := 0
	batch := func(n int) []Event {
		events := make([]Event, 0, n)
		for range n {
			sent++
			person := r.IntN(40)
			e := Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1 + int64(r.IntN(10)/9), Name: names[r.IntN(len(names))],
				DistinctID: fmt.Sprintf("user-%d", person), Timestamp: start.Add(time.Duration(r.IntN(10*24*60))*time.Minute + time.Duration(sent)*time.Millisecond),
				Properties: fmt.Sprintf(`{"$current_url":%q,"$browser":%q,"$session_id":"s-%d-%d","plan":%q,"amount":%d}`,
					urls[r.IntN(len(urls))], browsers[r.IntN(len(browsers))], person, r.IntN(3), []string{"free", "pro"}[r.IntN(2)], r.IntN(100))}
			switch r.IntN(20) {
			case 0:
				e.Name, e.AnonDistinctID = "$identify", fmt.Sprintf("anon-%d", r.IntN(40))
				e.Set = fmt.Sprintf(`{"email":"user-%d@example.com"}`, person)
			case 1:
				e.Groups = fmt.Sprintf(`{"company":"co-%d"}`, r.IntN(4))
			}
			events = append(events, e)
		}
		return events
	}
	submit := func(events []Event) {
		t.Helper()
		for _, w := range []*Warehouse{table, lake, moved} {
			if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 12 {
		submit(batch(150))
	}
	if err := lake.lake.compact(ctx, at("2026-12-30T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	merged := 0
	for _, p := range lake.lake.parts(1) {
		if p.Level > 0 {
			merged++
		}
	}
	// Parts written with the slot of plan, and before it (read from the properties).
	for _, w := range []*Warehouse{table, lake, moved} {
		w.StartBackfill()
		if err := w.SetMaterializedProperties(ctx, 1, []string{"plan"}); err != nil {
			t.Fatal(err)
		}
		if err := w.WaitBackfill(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		submit(batch(150))
	}
	if merged == 0 || len(lake.lake.parts(1)) < 10 {
		t.Fatalf("the lake's parts of project 1: %d, %d merged; want merged ones and small ones", len(lake.lake.parts(1)), merged)
	}

	if err := moved.Close(); err != nil {
		t.Fatal(err)
	}
	movedCfg := Config{Now: clock, LakeDir: filepath.Join(dir, "moved-lake"), Lake: LakeConfig{CompactInterval: time.Hour}}
	moved = openTestWarehouse(t, filepath.Join(dir, "moved.duckdb"), movedCfg)
	defer moved.Close()
	moved.StartBackfill()
	movedDays := 0
	if err := moved.MoveToLake(ctx, func(int64, time.Time, int64) { movedDays++ }); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := moved.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&left); err != nil || left != 0 || movedDays < 10 {
		t.Fatalf("after the move the table holds %d events (%v), %d days moved", left, err, movedDays)
	}

	now := at("2026-12-01T00:00:00Z")
	pageview, signup := "$pageview", "signed up"
	scope := Scope{Team: 1, Timezone: "America/New_York"}
	queries := []struct {
		name string
		run  func(q *Queries) (any, error)
	}{
		{"hogql", func(q *Queries) (any, error) {
			return q.HogQL(ctx, scope, `SELECT event, properties.$browser AS browser, count(), count(DISTINCT person_id), sum(toInt(properties.amount))
				FROM events GROUP BY ALL ORDER BY ALL`)
		}},
		{"hogql persons", func(q *Queries) (any, error) {
			return q.HogQL(ctx, scope, `SELECT person.properties.email AS email, properties.plan AS plan, count() FROM events GROUP BY ALL ORDER BY ALL`)
		}},
		{"hogql rows", func(q *Queries) (any, error) {
			return q.HogQL(ctx, scope, `SELECT uuid, event, distinct_id, person_id, timestamp, properties, created_at FROM events ORDER BY uuid LIMIT 500`)
		}},
		{"events", func(q *Queries) (any, error) {
			return q.Events(ctx, scope, EventsQuery{Select: []string{"event", "count()"}, After: "all", OrderBy: []string{"event"},
				Properties: []PropertyFilter{{Key: "$browser", Value: "Chrome"}}}, now)
		}},
		{"trends", func(q *Queries) (any, error) {
			return q.Trends(ctx, scope, TrendsQuery{Series: []TrendsSeries{{Event: &pageview}, {Event: &signup, Math: "dau"}},
				DateRange: DateRange{DateFrom: "2026-11-01", DateTo: "2026-11-13"}, BreakdownFilter: &BreakdownFilter{Breakdown: "plan"}}, now)
		}},
		{"trends property math", func(q *Queries) (any, error) {
			return q.Trends(ctx, scope, TrendsQuery{Series: []TrendsSeries{{Event: &pageview, Math: "p90", MathProperty: "amount"}, {Event: &pageview, Math: "unique_session"}},
				DateRange: DateRange{DateFrom: "2026-11-01", DateTo: "2026-11-13"}, Interval: "week"}, now)
		}},
		{"funnel", func(q *Queries) (any, error) {
			return q.Funnels(ctx, scope, FunnelsQuery{Series: []FunnelsStep{{Event: &pageview}, {Event: &signup}},
				DateRange: DateRange{DateFrom: "2026-11-01", DateTo: "2026-11-13"}}, now)
		}},
		{"retention", func(q *Queries) (any, error) {
			return q.Retention(ctx, scope, RetentionQuery{DateRange: DateRange{DateTo: "2026-11-11"}, RetentionFilter: RetentionFilter{
				TotalIntervals: 5, TargetEntity: RetentionEntity{ID: &pageview, Type: "events"}, ReturningEntity: RetentionEntity{ID: &pageview, Type: "events"}}}, now)
		}},
		{"stickiness", func(q *Queries) (any, error) {
			return q.Stickiness(ctx, scope, StickinessQuery{Series: []TrendsSeries{{Event: &pageview}}, DateRange: DateRange{DateFrom: "2026-11-01", DateTo: "2026-11-13"}}, now)
		}},
		{"lifecycle", func(q *Queries) (any, error) {
			return q.Lifecycle(ctx, scope, LifecycleQuery{Series: []TrendsSeries{{Event: &pageview}}, DateRange: DateRange{DateFrom: "2026-11-03", DateTo: "2026-11-10"}}, now)
		}},
		{"paths", func(q *Queries) (any, error) {
			return q.Paths(ctx, scope, PathsQuery{DateRange: DateRange{DateFrom: "2026-11-01", DateTo: "2026-11-13"}}, now)
		}},
		{"web overview", func(q *Queries) (any, error) {
			return q.WebOverview(ctx, scope, WebOverviewQuery{DateRange: DateRange{DateFrom: "2026-11-07", DateTo: "2026-11-12"},
				CompareFilter: &CompareFilter{Compare: true}}, now)
		}},
		{"web stats", func(q *Queries) (any, error) {
			return q.WebStatsTable(ctx, scope, WebStatsTableQuery{BreakdownBy: "Browser", IncludeBounceRate: true,
				DateRange: DateRange{DateFrom: "2026-11-07", DateTo: "2026-11-12"}, CompareFilter: &CompareFilter{Compare: true}}, now)
		}},
	}
	queries = append(queries, struct {
		name string
		run  func(q *Queries) (any, error)
	}{"export", nil})
	for _, query := range queries {
		var answers [3]string
		for i, w := range []*Warehouse{table, lake, moved} {
			var result any
			var err error
			if query.run == nil {
				result, err = exported(w, ExportRequest{Team: 1, Model: ExportEvents, EventTime: true,
					Start: at("2026-11-01T00:00:00Z"), End: at("2026-11-14T00:00:00Z"), Dir: filepath.Join(w.StagingDir(), fmt.Sprint("export-", i))})
			} else {
				result, err = query.run(w.Queries())
			}
			if err != nil {
				t.Fatalf("%s: %v", query.name, err)
			}
			b, err := json.Marshal(result)
			if err != nil {
				t.Fatal(err)
			}
			answers[i] = string(b)
		}
		if answers[0] != answers[1] || answers[0] != answers[2] {
			t.Errorf("%s answers differ:\ntable %.2000s\nlake  %.2000s\nmoved %.2000s", query.name, answers[0], answers[1], answers[2])
		}
		if len(answers[0]) < 100 {
			t.Errorf("%s answers too little to compare: %s", query.name, answers[0])
		}
	}
}

// exported runs the export r of w and answers what its files hold: each file's date
// and rows, and a digest of the rows, read by stock DuckDB.
func exported(w *Warehouse, r ExportRequest) (any, error) {
	files, err := w.Export(context.Background(), r)
	if err != nil {
		return nil, err
	}
	var summary []string
	var paths []string
	for _, f := range files {
		summary = append(summary, fmt.Sprintf("%s %d", f.Date, f.Rows))
		paths = append(paths, f.Path)
	}
	stock, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	defer stock.Close()
	var digest string
	if err := stock.QueryRow(`SELECT md5(string_agg(concat_ws('|', uuid, event, distinct_id, person_id, "timestamp", properties, "$group_0"), ',' ORDER BY uuid))
		FROM read_parquet(?::VARCHAR[])`, paths).Scan(&digest); err != nil {
		return nil, err
	}
	return append(summary, digest), nil
}
