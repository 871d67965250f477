package warehouse

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Retention counted by hand, four daily cohorts Nov 2-5: ada on Nov 2, 3 and 5; brian on
// Nov 3 and 4; chen on Oct 20 (before the cohorts) and Nov 4; dora on Nov 2; eve's two
// ids, merged, on Nov 3 and 4 (one person).
func TestRetention(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	add := func(distinctID string, dates ...string) {
		events = append(events, pageviewsOn(distinctID, dates...)...)
	}
	add("ada", "2026-11-02", "2026-11-03", "2026-11-05")
	add("brian", "2026-11-03", "2026-11-04")
	add("chen", "2026-10-20", "2026-11-04")
	add("dora", "2026-11-02")
	add("eve", "2026-11-03")
	add("eve-anon", "2026-11-04")
	add("late", "2026-11-09") // after the last cohort
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	merge := Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$identify", DistinctID: "eve", AnonDistinctID: "eve-anon",
		Timestamp: at("2026-11-03T10:00:00Z"), Properties: `{}`}
	if err := w.Writer().Submit(&Batch{Events: []Event{merge}}); err != nil {
		t.Fatal(err)
	}
	pageview := "$pageview"
	rq := RetentionQuery{DateRange: DateRange{DateTo: "2026-11-05"}, RetentionFilter: RetentionFilter{
		TotalIntervals: 4, TargetEntity: RetentionEntity{ID: &pageview, Type: "events"}, ReturningEntity: RetentionEntity{ID: &pageview, Type: "events"}}}
	f := func(want string) {
		t.Helper()
		r, err := w.Queries().Retention(context.Background(), utc, rq, at("2026-11-20T00:00:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range r.Results {
			var counts []string
			for _, v := range c.Values {
				counts = append(counts, fmt.Sprint(v.Count))
			}
			got = append(got, c.Date[:10]+" "+c.Label+": "+strings.Join(counts, " "))
		}
		if strings.Join(got, "; ") != want {
			t.Fatalf("got  %s\nwant %s", strings.Join(got, "; "), want)
		}
	}
	// First time: chen's first pageview is before the cohorts, so chen is in none.
	f("2026-11-02 Day 0: 2 1 0 1; 2026-11-03 Day 1: 2 2 0; 2026-11-04 Day 2: 0 0; 2026-11-05 Day 3: 0")
	rq.RetentionFilter.RetentionType = "retention_recurring"
	f("2026-11-02 Day 0: 2 1 0 1; 2026-11-03 Day 1: 3 2 1; 2026-11-04 Day 2: 3 0; 2026-11-05 Day 3: 1")
	for _, bad := range []RetentionFilter{{Period: "Fortnight"}, {TotalIntervals: 1000}, {RetentionType: "retention_sometimes"},
		{TargetEntity: RetentionEntity{Type: "actions"}}} {
		var refused *QueryError
		if _, err := w.Queries().Retention(context.Background(), utc, RetentionQuery{RetentionFilter: bad}, at("2026-11-20T00:00:00Z")); !errors.As(err, &refused) {
			t.Errorf("%+v: %v, want a QueryError", bad, err)
		}
	}
}

// pageviewsOn are a $pageview of distinctID at 09:00 UTC on each date (YYYY-MM-DD).
func pageviewsOn(distinctID string, dates ...string) []Event {
	var events []Event
	for _, d := range dates {
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$pageview", DistinctID: distinctID,
			Timestamp: at(d + "T09:00:00Z"), Properties: `{}`})
	}
	return events
}

// Retention of random events in several zones, periods and kinds against the cohorts
// and returns of retentionPlanOf joined row by row (what RetentionActors reads), which
// the masks of Retention must count alike.
func TestRetentionMasks(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	rng := rand.New(rand.NewPCG(3, 5))
	var events []Event
	start := at("2026-02-20T00:00:00Z")
	for p := range 150 {
		// Each person's events in 15 days from a time of their own, some in bursts.
		from := start.Add(time.Duration(rng.Int64N(int64(95 * 24 * time.Hour))))
		for range 1 + rng.IntN(40) {
			name := []string{"$pageview", "$pageview", "signed up", "clicked"}[rng.IntN(4)]
			events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: name, DistinctID: fmt.Sprintf("p%d", p),
				Timestamp: from.Add(time.Duration(rng.Int64N(int64([]time.Duration{15 * 24, 6}[rng.IntN(2)] * time.Hour)))), Properties: `{}`})
		}
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	q := w.Queries()
	ctx := context.Background()
	now := at("2026-06-10T00:00:00Z")
	pageview, signup := "$pageview", "signed up"
	entities := [][2]*string{{&pageview, &pageview}, {&signup, &pageview}, {nil, &signup}}
	for _, zone := range []string{"UTC", "America/Santiago", "Asia/Kolkata", "Europe/Paris"} {
		for _, period := range []string{"Hour", "Day", "Week", "Month"} {
			for _, kind := range []string{"retention_first_time", "retention_recurring"} {
				for e, pair := range entities {
					n := []int{4, 11, 70}[(e+len(period))%3]
					switch period {
					case "Month":
						n = 4
					case "Hour":
						n = 70
					}
					scope := Scope{Team: 1, Timezone: zone, WeekStartDay: e % 2}
					rq := RetentionQuery{DateRange: DateRange{DateTo: []string{"2026-04-07", "2026-05-20", "2026-03-29"}[e]}, RetentionFilter: RetentionFilter{
						Period: period, TotalIntervals: n, RetentionType: kind,
						TargetEntity: RetentionEntity{ID: pair[0], Type: "events"}, ReturningEntity: RetentionEntity{ID: pair[1], Type: "events"}}}
					r, err := q.Retention(ctx, scope, rq, now)
					if err != nil {
						t.Fatal(err)
					}
					got := map[string]int64{}
					for i, c := range r.Results {
						for k, v := range c.Values {
							if v.Count != 0 {
								got[fmt.Sprintf("%d+%d", i, k)] = v.Count
							}
						}
					}
					want := map[string]int64{}
					func() {
						ctx, done, err := q.begin(ctx, scope)
						if err != nil {
							t.Fatal(err)
						}
						defer done()
						plan, err := q.retentionPlanOf(ctx, scope, rq, now)
						if err != nil {
							t.Fatal(err)
						}
						rows, err := q.run(ctx, scope, plan.ctes+`
							SELECT strftime(c, '%Y-%m-%d %H:%M:%S'), 0, count(*) FROM retention_cohorts GROUP BY ALL
							UNION ALL
							SELECT strftime(c, '%Y-%m-%d %H:%M:%S'), date_diff('`+plan.interval+`', c, r), count(DISTINCT person_id)
								FROM retention_cohorts JOIN retention_returns USING (person_id) WHERE r > c GROUP BY ALL`, plan.persons, q.maxRows, plan.args...)
						if err != nil {
							t.Fatal(err)
						}
						for _, row := range rows.Results {
							i := slices.IndexFunc(plan.starts, func(s time.Time) bool { return s.Format(time.DateTime) == row[0] })
							if i >= 0 {
								want[fmt.Sprintf("%d+%v", i, row[1])] = int64(toFloat(row[2]))
							}
						}
					}()
					if len(want) == 0 && period != "Hour" || !maps.Equal(got, want) {
						t.Fatalf("%s %s %s %d, entities %d:\ngot  %v\nwant %v", zone, period, kind, n, e, got, want)
					}
				}
			}
		}
	}
}
