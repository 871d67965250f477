package warehouse

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Stickiness counted by hand over four days: ada active on 3 of them (twice on one),
// brian on 1, chen on 4, and dora's anonymous id merged into her person, so her two
// ids' days count as one person's.
func TestStickiness(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	add := func(distinctID string, days ...int) {
		for _, d := range days {
			events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$pageview", DistinctID: distinctID,
				Timestamp: at("2026-11-02T09:00:00Z").Add(time.Duration(d) * 24 * time.Hour), Properties: `{}`})
		}
	}
	add("ada", 0, 1, 1, 3)
	add("brian", 2)
	add("chen", 0, 1, 2, 3)
	add("dora", 0)
	add("dora-anon", 1)
	add("outside", 9) // after the range
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	merge := Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$identify", DistinctID: "dora", AnonDistinctID: "dora-anon",
		Timestamp: at("2026-11-02T10:00:00Z"), Properties: `{}`}
	if err := w.Writer().Submit(&Batch{Events: []Event{merge}}); err != nil {
		t.Fatal(err)
	}
	pageview := "$pageview"
	sq := StickinessQuery{Series: []TrendsSeries{{Event: &pageview}}, DateRange: DateRange{DateFrom: "2026-11-02", DateTo: "2026-11-05"}}
	r, err := w.Queries().Stickiness(context.Background(), utc, sq, at("2026-11-20T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 1 {
		t.Fatalf("%d lines", len(r.Results))
	}
	l := r.Results[0]
	// 1 day: brian; 2 days: dora; 3 days: ada; 4 days: chen.
	if !slices.Equal(l.Data, []float64{1, 1, 1, 1}) || l.Count != 4 || fmt.Sprint(l.Labels) != "[1 day 2 days 3 days 4 days]" || !slices.Equal(l.Days, []int{1, 2, 3, 4}) {
		t.Fatalf("got %+v", l)
	}
	sq.Interval = "week"
	if r, err = w.Queries().Stickiness(context.Background(), utc, sq, at("2026-11-20T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	// Nov 2 is a Monday (weeks start on Monday here): the four days are one week.
	if l := r.Results[0]; !slices.Equal(l.Data, []float64{4}) || l.Labels[0] != "1 week" {
		t.Fatalf("by week: %+v", l)
	}
	var refused *QueryError
	if _, err := w.Queries().Stickiness(context.Background(), utc, StickinessQuery{}, at("2026-11-20T00:00:00Z")); !errors.As(err, &refused) {
		t.Fatalf("no series: %v, want a QueryError", err)
	}
}
