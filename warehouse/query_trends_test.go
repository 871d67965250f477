package warehouse

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// trendsLines shapes rows without a database: the rows here are as trendsSQL's query
// answers them (bucket, value group, value).
func TestTrendsLines(t *testing.T) {
	buckets := []time.Time{at("2026-11-02T00:00:00Z"), at("2026-11-03T00:00:00Z")}
	pageview := "$pageview"
	f := func(series TrendsSeries, breakdown bool, rows [][]any, want string) {
		t.Helper()
		var got []string
		for _, l := range trendsLines(rows, series, 1, "day", buckets, breakdown) {
			got = append(got, fmt.Sprintf("%s %v %v %g %s/%s/%s/%d", l.Label, l.BreakdownValue, l.Data, l.Count,
				l.Action.ID, l.Action.Name, l.Action.Math, l.Action.Order))
		}
		if strings.Join(got, "\n") != want {
			t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), want)
		}
	}
	// Without a breakdown: one line, of zeros when no rows; a bucket outside the range
	// is left out.
	f(TrendsSeries{Event: &pageview}, false, nil, "$pageview <nil> [0 0] 0 $pageview/$pageview/total/1")
	f(TrendsSeries{Name: "views", Math: "dau"}, false, [][]any{
		{"2026-11-03 00:00:00", breakdownOther, int64(3)},
		{"2026-11-02 00:00:00", breakdownOther, 2.0},
		{"2026-11-04 00:00:00", breakdownOther, int64(9)},
	}, "views <nil> [2 3] 5 /views/dau/1")
	// With a breakdown: a line per value, largest count first, ties by label, Other
	// last; no rows, no lines.
	f(TrendsSeries{}, true, nil, "")
	f(TrendsSeries{}, true, [][]any{
		{"2026-11-02 00:00:00", breakdownOther, int64(9)},
		{"2026-11-02 00:00:00", "Safari", int64(2)},
		{"2026-11-03 00:00:00", breakdownNull, int64(2)},
		{"2026-11-02 00:00:00", "Chrome", int64(1)},
		{"2026-11-03 00:00:00", "Chrome", "2"},
	}, strings.Join([]string{
		"Chrome Chrome [1 2] 3 /All events/total/1",
		"None $$_posthog_breakdown_null_$$ [0 2] 2 /All events/total/1",
		"Safari Safari [2 0] 2 /All events/total/1",
		"Other $$_posthog_breakdown_other_$$ [9 0] 9 /All events/total/1",
	}, "\n"))
}
