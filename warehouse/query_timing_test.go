package warehouse

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// queryBenchCopies is how many times BenchmarkQueries copies its 10,000 events: a
// project of a million events.
const queryBenchCopies = 100

// BenchmarkQueries times the query API over one project's 1,000,000 realistic events
// (bench/gen's properties, the events of 30 days), checkpointed, with the default
// configuration (memory_limit 256MB): a trend of $pageview per day, the same broken
// down by $browser, and a HogQL GROUP BY over a property.
func BenchmarkQueries(b *testing.B) {
	ctx := context.Background()
	w, err := Open(ctx, Config{Path: filepath.Join(b.TempDir(), "hedge.duckdb")})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	events, _ := benchEvents(b, 10000, true)
	now := time.Now().UTC()
	const month = 30 * 24 * time.Hour
	for i := range events {
		events[i].Timestamp = now.Add(-month + time.Duration(i)*month/time.Duration(len(events)))
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	// The copies straight into DuckDB, each a second later than the one before and its
	// own users; the last ones fall after now, out of the trends' range.
	_, err = w.DB().ExecContext(ctx, `INSERT INTO events
		SELECT gen_random_uuid(), team_id, event, distinct_id || '-' || copy, person_id,
			"timestamp" + to_seconds(copy), inserted_at, properties,
			"$group_0", "$group_1", "$group_2", "$group_3", "$group_4", lane
		FROM events, range(1, ?) AS copies(copy)`, queryBenchCopies)
	if err != nil {
		b.Fatal(err)
	}
	inserted := time.Since(start)
	if _, err := w.DB().ExecContext(ctx, "CHECKPOINT"); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d events copied in %s, checkpointed in %s", (queryBenchCopies-1)*len(events), inserted, time.Since(start)-inserted)
	scope := Scope{Team: 1, Timezone: "UTC", WeekStartDay: 1}
	pageview := "$pageview"
	trend := TrendsQuery{Series: []TrendsSeries{{Event: &pageview}}, Interval: "day"}
	trend.DateRange.DateFrom = "-30d"
	breakdown := trend
	breakdown.BreakdownFilter = &BreakdownFilter{Breakdown: "$browser"}
	for _, q := range []struct {
		name string
		run  func() error
	}{
		{"trends", func() error {
			r, err := w.Queries().Trends(ctx, scope, trend, now)
			if err == nil && (len(r.Results) != 1 || r.Results[0].Count < float64(len(events))) {
				b.Fatalf("the trend counts %+v", r.Results)
			}
			return err
		}},
		{"trends-breakdown", func() error { _, err := w.Queries().Trends(ctx, scope, breakdown, now); return err }},
		{"hogql-groupby", func() error {
			_, err := w.Queries().HogQL(ctx, scope,
				`SELECT properties.$os AS os, properties.$device_type AS device, count() AS n, uniq(distinct_id) AS users
				FROM events GROUP BY os, device ORDER BY n DESC LIMIT 20`)
			return err
		}},
	} {
		b.Run(q.name, func(b *testing.B) {
			for range b.N {
				if err := q.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
