package warehouse

import (
	"cmp"
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

// Buckets computed from the epoch (a zone whose offset holds through the range) and
// in the zone (a range across a change of clocks, and months) both put every event in
// the interval Go's time package puts it in: the counts per interval equal a count
// made in Go, for offsets of whole and half hours, both week starts, and hours.
func TestTrendBucketsAgreeWithGo(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	start := at("2026-02-20T00:00:00Z")
	var events []Event
	var stamps []time.Time
	for range 3000 {
		ts := start.Add(time.Duration(rng.Int64N(int64(50 * 24 * time.Hour))))
		stamps = append(stamps, ts)
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "e", DistinctID: "u", Timestamp: ts, Properties: `{}`})
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	now := start.Add(52 * 24 * time.Hour)
	f := func(zone string, weekStart int, interval, from, to string) {
		t.Helper()
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		var tq TrendsQuery
		tq.Series, tq.Interval = []TrendsSeries{{}}, interval
		tq.DateRange.DateFrom, tq.DateRange.DateTo = from, to
		r, err := w.Queries().Trends(context.Background(), Scope{Team: 1, Timezone: zone, WeekStartDay: weekStart}, tq, now)
		if err != nil {
			t.Fatal(err)
		}
		line := r.Results[0]
		index := map[string]int{}
		for i, d := range line.Days {
			index[d] = i
		}
		want := make([]float64, len(line.Days))
		first, _ := time.ParseInLocation(time.DateOnly, from, loc)
		last, _ := time.ParseInLocation(time.DateOnly, to, loc)
		last = last.AddDate(0, 0, 1)
		for _, ts := range stamps {
			if ts.Before(first) || !ts.Before(last) {
				continue
			}
			local := ts.In(loc)
			var b time.Time
			switch interval {
			case "hour":
				b = local.Truncate(time.Hour) // whole-hour offsets only are asked for hours below
			case "day":
				b = time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
			case "week":
				day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
				back := (int(day.Weekday()) - weekStart + 7) % 7
				b = day.AddDate(0, 0, -back)
			case "month":
				b = time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, loc)
			}
			key := b.Format(time.DateOnly)
			if interval == "hour" {
				key = b.Format(time.DateTime)
			}
			i, ok := index[key]
			if !ok {
				t.Fatalf("%s %s %s: no bucket %s in %v", zone, interval, from, key, line.Days)
			}
			want[i]++
		}
		if !slices.Equal(line.Data, want) {
			t.Fatalf("%s %s from %s to %s (weeks from %d):\n got %v\nwant %v", zone, interval, from, to, weekStart, line.Data, want)
		}
	}
	for _, zone := range []string{"UTC", "Asia/Kolkata", "America/New_York", "Australia/Adelaide"} {
		for _, week := range []int{0, 1} {
			f(zone, week, "week", "2026-02-21", "2026-04-10") // New York and Adelaide change clocks in it
			f(zone, week, "week", "2026-03-15", "2026-03-31")
		}
		f(zone, 1, "day", "2026-02-21", "2026-04-10")
		f(zone, 1, "day", "2026-03-15", "2026-03-31")
		f(zone, 1, "month", "2026-02-21", "2026-04-10")
	}
	for _, zone := range []string{"UTC", "America/New_York"} {
		f(zone, 1, "hour", "2026-03-20", "2026-03-23")
		f(zone, 1, "hour", "2026-03-07", "2026-03-09") // New York's clocks go forward on the 8th
	}
}

// Daily active users by a breakdown agree with a count made in Go: persons as they are
// now (an anonymous id merged into a user by $identify counts as that user), the 25
// values of most events (not of most persons) by name, and the rest as Other, where a
// person of two of those values counts once.
func TestTrendDAUBreakdownAgreesWithGo(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	rng := rand.New(rand.NewPCG(3, 9))
	start := at("2026-11-02T00:00:00Z")
	type view struct {
		person, browser string
		day             int
	}
	var events []Event
	var views []view
	for range 4000 {
		user := rng.IntN(60)
		distinctID, person := fmt.Sprintf("user-%d", user), fmt.Sprintf("user-%d", user)
		if user < 10 && rng.IntN(2) == 0 {
			distinctID = fmt.Sprintf("anon-%d", user) // merged into user-N below
		}
		browser := fmt.Sprintf("b%02d", min(rng.IntN(40), rng.IntN(40))) // skewed: b00 most
		day := rng.IntN(3)
		ts := start.Add(time.Duration(day)*24*time.Hour + time.Duration(rng.Int64N(int64(20*time.Hour))))
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$pageview", DistinctID: distinctID,
			Timestamp: ts, Properties: `{"$browser":"` + browser + `"}`})
		views = append(views, view{person, browser, day})
	}
	// A value of many events by one person: among the 25 by events, not by persons.
	for range 300 {
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$pageview", DistinctID: "user-59",
			Timestamp: start.Add(time.Hour), Properties: `{"$browser":"heavy"}`})
		views = append(views, view{"user-59", "heavy", 0})
	}
	// A value named as the rest is, sent as such by clients, among the 25: it counts
	// with the rest, as one line whose persons are counted once.
	for i := range 400 {
		user := fmt.Sprintf("user-%d", 20+i%20)
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$pageview", DistinctID: user,
			Timestamp: start.Add(time.Duration(i%3)*24*time.Hour + time.Hour), Properties: `{"$browser":"` + breakdownOther + `"}`})
		views = append(views, view{user, breakdownOther, i % 3})
	}
	// Every user has a person of their own before their anonymous id's is merged in.
	for user := range 10 {
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "signed up", DistinctID: fmt.Sprintf("user-%d", user),
			Timestamp: start, Properties: `{}`})
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	for user := range 10 {
		identify := Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$identify", DistinctID: fmt.Sprintf("user-%d", user),
			AnonDistinctID: fmt.Sprintf("anon-%d", user), Timestamp: start.Add(23 * time.Hour), Properties: `{}`}
		if err := w.Writer().Submit(&Batch{Events: []Event{identify}}); err != nil {
			t.Fatal(err)
		}
	}

	// The count in Go.
	counts := map[string]int{}
	for _, v := range views {
		counts[v.browser]++
	}
	browsers := slices.Collect(maps.Keys(counts))
	slices.SortFunc(browsers, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	top := map[string]bool{}
	for _, b := range browsers[:breakdownLimit] {
		top[b] = true
	}
	persons := map[string]map[[2]int]bool{} // value -> {day, person} seen
	for _, v := range views {
		value := v.browser
		if !top[value] {
			value = breakdownOther
		}
		if persons[value] == nil {
			persons[value] = map[[2]int]bool{}
		}
		var user int
		fmt.Sscanf(v.person, "user-%d", &user)
		persons[value][[2]int{v.day, user}] = true
	}
	want := map[string][]float64{}
	for value, seen := range persons {
		want[value] = make([]float64, 3)
		for k := range seen {
			want[value][k[0]]++
		}
	}

	pageview := "$pageview"
	tq := TrendsQuery{Series: []TrendsSeries{{Event: &pageview, Math: "dau"}}, Interval: "day",
		DateRange: DateRange{DateFrom: "2026-11-02", DateTo: "2026-11-04"}, BreakdownFilter: &BreakdownFilter{Breakdown: "$browser"}}
	r, err := w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]float64{}
	for _, l := range r.Results {
		got[fmt.Sprint(l.BreakdownValue)] = l.Data
	}
	if len(got) != len(want) || len(want) != breakdownLimit { // 24 values and the rest
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for value, data := range want {
		if !slices.Equal(got[value], data) {
			t.Fatalf("%s: got %v, want %v", value, got[value], data)
		}
	}

	// As a table (a total per line), each value counts its persons over the whole
	// range, once each however many days they came, and the lines come largest first.
	wantTotal := map[string]float64{}
	everyone := map[int]bool{}
	for value, seen := range persons {
		users := map[int]bool{}
		for k := range seen {
			users[k[1]], everyone[k[1]] = true, true
		}
		wantTotal[value] = float64(len(users))
	}
	tq.TrendsFilter = &TrendsFilter{Display: "ActionsTable"}
	if r, err = w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != len(wantTotal) {
		t.Fatalf("as a table: %d lines, want %d", len(r.Results), len(wantTotal))
	}
	for i, l := range r.Results {
		value := fmt.Sprint(l.BreakdownValue)
		if l.AggregatedValue == nil || *l.AggregatedValue != wantTotal[value] || len(l.Data) != 0 || len(l.Days) != 0 || l.Count != 0 {
			t.Fatalf("as a table, %s: %+v, want aggregated_value %g and no data", value, l, wantTotal[value])
		}
		if i > 0 && value != breakdownOther && *r.Results[i-1].AggregatedValue < *l.AggregatedValue {
			t.Fatalf("as a table, %s (%g) comes after a smaller line", value, *l.AggregatedValue)
		}
	}
	// As a number without a breakdown: the persons of the range, each once.
	tq.BreakdownFilter, tq.TrendsFilter = nil, &TrendsFilter{Display: "BoldNumber"}
	if r, err = w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 1 || r.Results[0].AggregatedValue == nil || *r.Results[0].AggregatedValue != float64(len(everyone)) {
		t.Fatalf("as a number: %+v, want aggregated_value %d", r.Results, len(everyone))
	}
}

// Property math, counted by hand: per day, the sum, average, extremes and quantiles of
// $revenue over the events that have a number there (text of a number counts; text
// that is none, and events without it, do not), 0 for a day without any; person
// properties too; broken down by plan, each plan aggregated over its own events; and
// as a total over the range.
func TestTrendsPropertyMath(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	day := func(d, hour int) time.Time {
		return at("2026-11-02T00:00:00Z").Add(time.Duration(d)*24*time.Hour + time.Duration(hour)*time.Hour)
	}
	event := func(distinctID string, ts time.Time, properties string) Event {
		return Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "purchase", DistinctID: distinctID, Timestamp: ts, Properties: properties}
	}
	events := []Event{
		// Day 0: 10, 20, 30 and 40 (as text), pro, pro, free, pro; one without and one not a number.
		event("a", day(0, 1), `{"$revenue": 10, "plan": "pro"}`),
		event("b", day(0, 2), `{"$revenue": 20, "plan": "pro"}`),
		event("c", day(0, 3), `{"$revenue": 30, "plan": "free"}`),
		event("a", day(0, 4), `{"$revenue": "40", "plan": "pro"}`),
		event("b", day(0, 5), `{"plan": "free"}`),
		event("c", day(0, 6), `{"$revenue": "lots", "plan": "free"}`),
		// Day 1: nothing with a number. Day 2: 5 (free).
		event("a", day(1, 1), `{"plan": "pro"}`),
		event("b", day(2, 1), `{"$revenue": 5, "plan": "free"}`),
		// Another event's revenue is not counted.
		{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "refund", DistinctID: "a", Timestamp: day(0, 7), Properties: `{"$revenue": 1000}`},
		// The persons' ages, for the person property math: a 30, b 50, c (none).
		{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$identify", DistinctID: "a", Timestamp: day(0, 0), Properties: `{}`, Set: `{"age": 30}`},
		{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$identify", DistinctID: "b", Timestamp: day(0, 0), Properties: `{}`, Set: `{"age": 50}`},
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	purchase := "purchase"
	run := func(series TrendsSeries, breakdown, display string) map[string][]float64 {
		t.Helper()
		tq := TrendsQuery{Series: []TrendsSeries{series}, Interval: "day",
			DateRange: DateRange{DateFrom: "2026-11-02", DateTo: "2026-11-04"}}
		if breakdown != "" {
			tq.BreakdownFilter = &BreakdownFilter{Breakdown: breakdown}
		}
		if display != "" {
			tq.TrendsFilter = &TrendsFilter{Display: display}
		}
		r, err := w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z"))
		if err != nil {
			t.Fatalf("%+v: %v", series, err)
		}
		got := map[string][]float64{}
		for _, l := range r.Results {
			if l.AggregatedValue != nil {
				got[fmt.Sprint(l.BreakdownValue)] = []float64{*l.AggregatedValue}
				continue
			}
			got[fmt.Sprint(l.BreakdownValue)] = l.Data
		}
		return got
	}
	f := func(math, property, propertyType, breakdown, display string, want map[string][]float64) {
		t.Helper()
		got := run(TrendsSeries{Event: &purchase, Math: math, MathProperty: property, MathPropertyType: propertyType}, breakdown, display)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s of %s (%s, by %q, %s): got %v, want %v", math, property, propertyType, breakdown, display, got, want)
		}
	}
	none := "<nil>"
	f("sum", "$revenue", "", "", "", map[string][]float64{none: {100, 0, 5}})
	f("avg", "$revenue", "", "", "", map[string][]float64{none: {25, 0, 5}})
	f("min", "$revenue", "", "", "", map[string][]float64{none: {10, 0, 5}})
	f("max", "$revenue", "", "", "", map[string][]float64{none: {40, 0, 5}})
	f("median", "$revenue", "", "", "", map[string][]float64{none: {25, 0, 5}})
	f("p90", "$revenue", "", "", "", map[string][]float64{none: {37, 0, 5}}) // 30 + 0.7 × 10
	f("sum", "$revenue", "", "plan", "", map[string][]float64{"pro": {70, 0, 0}, "free": {30, 0, 5}})
	f("avg", "$revenue", "", "", "BoldNumber", map[string][]float64{none: {21}}) // (10+20+30+40+5) / 5
	f("max", "$revenue", "", "plan", "ActionsTable", map[string][]float64{"pro": {40}, "free": {30}})
	// The persons' ages over their purchases: day 0 a, b, a, b (c's two have none), day 1
	// a, day 2 b.
	f("avg", "age", "person_properties", "", "", map[string][]float64{none: {40, 30, 50}})
	f("sum", "no such property", "", "", "", map[string][]float64{none: {0, 0, 0}})

	for _, bad := range []TrendsSeries{
		{Event: &purchase, Math: "sum"},
		{Event: &purchase, Math: "p42", MathProperty: "$revenue"},
		{Event: &purchase, Math: "avg", MathProperty: "$revenue", MathPropertyType: "group_properties"},
	} {
		_, err := w.Queries().Trends(context.Background(), utc, TrendsQuery{Series: []TrendsSeries{bad}}, at("2026-11-10T00:00:00Z"))
		var refused *QueryError
		if !errors.As(err, &refused) {
			t.Errorf("%+v: %v, want a QueryError", bad, err)
		}
	}
}

// Compared with the previous period: every line twice, the current period's first,
// each over its own days; as a total, each period's own value.
func TestTrendsCompare(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	// Two days before the range (Oct 31, Nov 1): 1 and 2 sign-ups; in it (Nov 2, 3): 3 and 4.
	for i, n := range []int{1, 2, 3, 4} {
		for range n {
			events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "signed up", DistinctID: fmt.Sprintf("u%d", i),
				Timestamp: at("2026-10-31T12:00:00Z").Add(time.Duration(i) * 24 * time.Hour), Properties: `{}`})
		}
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	signup := "signed up"
	tq := TrendsQuery{Series: []TrendsSeries{{Event: &signup}}, Interval: "day",
		DateRange: DateRange{DateFrom: "2026-11-02", DateTo: "2026-11-03"}, CompareFilter: &CompareFilter{Compare: true}}
	r, err := w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range r.Results {
		got = append(got, fmt.Sprintf("%s %v %v %v %g", l.CompareLabel, l.Compare, l.Days, l.Data, l.Count))
	}
	want := "current true [2026-11-02 2026-11-03] [3 4] 7\nprevious true [2026-10-31 2026-11-01] [1 2] 3"
	if strings.Join(got, "\n") != want {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	tq.TrendsFilter = &TrendsFilter{Display: "BoldNumber"}
	if r, err = w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 2 || *r.Results[0].AggregatedValue != 7 || *r.Results[1].AggregatedValue != 3 || r.Results[1].CompareLabel != "previous" {
		t.Fatalf("as a number: %+v", r.Results)
	}
	tq.CompareFilter = nil
	if r, err = w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z")); err != nil || len(r.Results) != 1 || r.Results[0].Compare {
		t.Fatalf("without a comparison: %+v %v", r, err)
	}
}

// Unique sessions, counted by hand: the distinct $session_id a day, events without one
// left out; broken down, each value's sessions, and the rest's counted once.
func TestTrendsUniqueSessions(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	add := func(day int, session, browser string) {
		props := `{"$browser":"` + browser + `"}`
		if session != "" {
			props = `{"$browser":"` + browser + `","$session_id":"` + session + `"}`
		}
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$pageview", DistinctID: "u-" + session,
			Timestamp: at("2026-11-02T10:00:00Z").Add(time.Duration(day) * 24 * time.Hour), Properties: props})
	}
	// Day 0: sessions s1 (twice, Chrome), s2 (Safari), one without; day 1: s1 (Chrome), s3 (Chrome).
	add(0, "s1", "Chrome")
	add(0, "s1", "Chrome")
	add(0, "s2", "Safari")
	add(0, "", "Safari")
	add(1, "s1", "Chrome")
	add(1, "s3", "Chrome")
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	pageview := "$pageview"
	tq := TrendsQuery{Series: []TrendsSeries{{Event: &pageview, Math: "unique_session"}}, Interval: "day",
		DateRange: DateRange{DateFrom: "2026-11-02", DateTo: "2026-11-03"}}
	f := func(want string) {
		t.Helper()
		r, err := w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range r.Results {
			if l.AggregatedValue != nil {
				got = append(got, fmt.Sprintf("%v %g", l.BreakdownValue, *l.AggregatedValue))
				continue
			}
			got = append(got, fmt.Sprintf("%v %v", l.BreakdownValue, l.Data))
		}
		if strings.Join(got, "; ") != want {
			t.Fatalf("got %s, want %s", strings.Join(got, "; "), want)
		}
	}
	f("<nil> [2 2]")
	tq.BreakdownFilter = &BreakdownFilter{Breakdown: "$browser"}
	f("Chrome [1 2]; Safari [1 0]")
	tq.TrendsFilter = &TrendsFilter{Display: "ActionsTable"}
	f("Chrome 2; Safari 1") // s1 and s3 over the range, s1 once
}

// Weekly actives, counted by hand: each day the distinct persons of the 7 days up to it,
// a person active before the range counting in its first days; monthly as a total: the
// persons of the 30 days that end with the range; both by browser, a person under each
// browser they used.
func TestTrendsActiveUsers(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	add := func(person, date, browser string) {
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$pageview", DistinctID: person,
			Timestamp: at(date + "T12:00:00Z"), Properties: `{"$browser":"` + browser + `"}`})
	}
	add("before", "2026-10-30", "Safari") // counts Oct 30 - Nov 5
	add("ada", "2026-11-02", "Chrome")    // Nov 2 - Nov 8
	add("ada", "2026-11-03", "Safari")    // Nov 3 - Nov 9 (ada once a day)
	add("brian", "2026-11-05", "Chrome")  // Nov 5 - Nov 11
	add("old", "2026-09-01", "Chrome")    // outside every window
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	pageview := "$pageview"
	tq := TrendsQuery{Series: []TrendsSeries{{Event: &pageview, Math: "weekly_active"}}, Interval: "day",
		DateRange: DateRange{DateFrom: "2026-11-02", DateTo: "2026-11-11"}}
	r, err := w.Queries().Trends(context.Background(), utc, tq, at("2026-11-20T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	//               Nov 2 3 4 5 6 7 8 9 10 11
	want := []float64{2, 2, 2, 3, 2, 2, 2, 2, 1, 1}
	if len(r.Results) != 1 || !slices.Equal(r.Results[0].Data, want) {
		t.Fatalf("weekly actives %+v, want %v", r.Results, want)
	}
	tq.Series[0].Math, tq.TrendsFilter = "monthly_active", &TrendsFilter{Display: "BoldNumber"}
	if r, err = w.Queries().Trends(context.Background(), utc, tq, at("2026-11-20T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if got := *r.Results[0].AggregatedValue; got != 3 { // before, ada, brian
		t.Fatalf("monthly actives over the range's 30 days: %g, want 3", got)
	}
	// By browser: a line per browser, each day its persons of the week up to it.
	byBrowser := func(tq TrendsQuery) map[string]string {
		t.Helper()
		tq.BreakdownFilter = &BreakdownFilter{Breakdown: "$browser"}
		r, err := w.Queries().Trends(context.Background(), utc, tq, at("2026-11-20T00:00:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]string{}
		for _, l := range r.Results {
			if l.AggregatedValue != nil {
				lines[fmt.Sprint(l.BreakdownValue)] = fmt.Sprint(*l.AggregatedValue)
			} else {
				lines[fmt.Sprint(l.BreakdownValue)] = fmt.Sprint(l.Data)
			}
		}
		return lines
	}
	weekly := TrendsQuery{Series: []TrendsSeries{{Event: &pageview, Math: "weekly_active"}}, Interval: "day", DateRange: tq.DateRange}
	//                                               Nov 2 3 4 5 6 7 8 9 10 11
	if got := byBrowser(weekly); len(got) != 2 || got["Chrome"] != "[1 1 1 2 2 2 2 1 1 1]" || got["Safari"] != "[1 2 2 2 1 1 1 1 0 0]" {
		t.Errorf("weekly actives by browser: %v", got)
	}
	if got := byBrowser(tq); len(got) != 2 || got["Chrome"] != "2" || got["Safari"] != "2" { // ada under both
		t.Errorf("monthly actives by browser: %v", got)
	}
	for _, bad := range []TrendsQuery{
		{Series: tq.Series, Interval: "week"},
	} {
		var refused *QueryError
		if _, err := w.Queries().Trends(context.Background(), utc, bad, at("2026-11-20T00:00:00Z")); !errors.As(err, &refused) {
			t.Errorf("%+v: %v, want a QueryError", bad, err)
		}
	}
}
