package warehouse

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
