package warehouse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// trendsLines shapes rows without a database: the rows here are as trendsSQL's query
// answers them (bucket, value group, value).
func TestTrendsLines(t *testing.T) {
	axis, err := newTrendAxis(context.Background(), at("2026-11-02T00:00:00Z"), at("2026-11-03T12:00:00Z"), "day", 1)
	if err != nil || len(axis.buckets) != 2 {
		t.Fatalf("axis %v, err %v", axis, err)
	}
	pageview := "$pageview"
	f := func(series TrendsSeries, breakdown bool, rows [][]any, want string) {
		t.Helper()
		lines, err := trendsLines(context.Background(), rows, series, 1, axis, breakdown)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range lines {
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

// The Go loops of a trend stop once the request's context is done: the intervals, their
// labels, the lines.
func TestTrendsStopWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	from, to := at("2016-01-01T00:00:00Z"), at("2026-01-01T00:00:00Z")
	if _, err := bucketStarts(ctx, from, to, "day", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("bucketStarts: %v", err)
	}
	if _, err := newTrendAxis(ctx, from, to, "day", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("newTrendAxis: %v", err)
	}
	axis, err := newTrendAxis(context.Background(), from, to, "day", 1)
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]any{{"2016-01-01 00:00:00", "a", int64(1)}}
	if _, err := trendsLines(ctx, rows, TrendsSeries{}, 0, axis, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("trendsLines: %v", err)
	}
	// Every line of a trend shares one copy of the labels and days.
	lines, err := trendsLines(context.Background(), [][]any{rows[0], {"2016-01-02 00:00:00", "b", int64(1)}}, TrendsSeries{}, 0, axis, true)
	if err != nil || len(lines) != 2 || &lines[0].Labels[0] != &lines[1].Labels[0] || &lines[0].Days[0] != &lines[1].Days[0] {
		t.Fatalf("lines %d, err %v: the labels are not shared", len(lines), err)
	}
}
