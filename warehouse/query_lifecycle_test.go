package warehouse

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Lifecycle counted by hand over Nov 3-5: ada (first seen Nov 1) on Nov 3 and 4, brian
// (Nov 2) on Nov 2 and 3, chen on Nov 4 and 5, dora on Nov 2 only, eve on Nov 5.
func TestLifecycle(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	add := func(distinctID string, dates ...string) {
		events = append(events, pageviewsOn(distinctID, dates...)...)
	}
	add("ada", "2026-11-01", "2026-11-03", "2026-11-04")
	add("brian", "2026-11-02", "2026-11-03")
	add("chen", "2026-11-04", "2026-11-05")
	add("dora", "2026-11-02")
	add("eve", "2026-11-05")
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	pageview := "$pageview"
	lq := LifecycleQuery{Series: []TrendsSeries{{Event: &pageview}}, DateRange: DateRange{DateFrom: "2026-11-03", DateTo: "2026-11-05"}}
	r, err := w.Queries().Lifecycle(context.Background(), utc, lq, at("2026-11-20T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range r.Results {
		got = append(got, fmt.Sprintf("%s %s %v %g", l.Status, l.Label, l.Data, l.Count))
	}
	want := []string{
		"new $pageview - new [0 1 1] 2",                   // chen, eve
		"returning $pageview - returning [1 1 1] 3",       // brian, ada, chen
		"resurrecting $pageview - resurrecting [1 0 0] 1", // ada
		"dormant $pageview - dormant [-1 -1 -1] -3",       // dora, brian, ada
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []LifecycleQuery{{}, {Series: []TrendsSeries{{}, {}}}, {Series: lq.Series, Interval: "year"}} {
		var refused *QueryError
		if _, err := w.Queries().Lifecycle(context.Background(), utc, bad, at("2026-11-20T00:00:00Z")); !errors.As(err, &refused) {
			t.Errorf("%+v: %v, want a QueryError", bad, err)
		}
	}
}
