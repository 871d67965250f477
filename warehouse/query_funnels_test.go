package warehouse

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// funnelRow is an event as funnelsSQL's query answers it, the time in minutes.
type funnelRow struct {
	person string
	minute int64
	steps  uint64
	value  string
}

// Steps of a 3-step funnel as masks, and an event that is no step (a strict funnel's).
const (
	stepA, stepB, stepC = 1, 2, 4
	noStep              = 0
)

// foldFunnel folds rows as funnelTallies does, and writes the tallies as talliesText.
func foldFunnel(spec funnelSpec, maxBytes int, rows []funnelRow) (string, error) {
	tallies, err := foldTallies(spec, maxBytes, rows)
	if err != nil {
		return "", err
	}
	return talliesText(tallies), nil
}

// foldTallies folds rows as funnelTallies does.
func foldTallies(spec funnelSpec, maxBytes int, rows []funnelRow) (map[string]*funnelTally, error) {
	fold := newFunnelFold(spec, maxBytes)
	current := ""
	for _, r := range rows {
		if r.person != current {
			if err := fold.endPerson(); err != nil {
				return nil, err
			}
			current = r.person
		}
		if err := fold.add(r.minute*60e6, r.steps, r.value); err != nil {
			return nil, err
		}
	}
	if err := fold.endPerson(); err != nil {
		return nil, err
	}
	return fold.tallies, nil
}

// talliesText writes tallies as "value: counts times-into-each-step (s)", one line per
// value, values sorted; each step's times in the order they were tallied.
func talliesText(tallies map[string]*funnelTally) string {
	var lines []string
	for value, t := range tallies {
		lines = append(lines, fmt.Sprintf("%q: %v %v", value, t.counts, t.times))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// The fold without a database: each case is one person (or a few), its answer counted
// by hand from the rules of funnelFold. Windows are of 60 minutes.
func TestFunnelFold(t *testing.T) {
	spec := func(order string) funnelSpec {
		return funnelSpec{steps: 3, order: order, window: 60 * 60e6}
	}
	f := func(name string, spec funnelSpec, rows []funnelRow, want string) {
		t.Helper()
		got, err := foldFunnel(spec, 1<<20, rows)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Fatalf("%s:\n%s\nwant\n%s", name, got, want)
		}
	}
	row := func(person string, minute int64, steps uint64) funnelRow { return funnelRow{person, minute, steps, ""} }

	// Ordered. The latest first step starts the attempt that converts: A@5, not A@0,
	// so B is 5 minutes in (300 s) and C 10 more (600 s).
	f("ordered, the latest start", spec(funnelOrdered), []funnelRow{row("p", 0, stepA), row("p", 5, stepA), row("p", 10, stepB), row("p", 20, stepC)},
		`"": [1 1 1] [[] [300] [600]]`)
	// A person counts once, at their furthest step; persons without the first step not at all.
	f("ordered, drop-off", spec(funnelOrdered), []funnelRow{
		row("p1", 0, stepA), row("p1", 10, stepB), row("p1", 20, stepC),
		row("p2", 0, stepA), row("p2", 30, stepB),
		row("p3", 0, stepA), row("p3", 1, stepA),
		row("p4", 0, stepB), row("p4", 1, stepC),
	}, `"": [3 2 1] [[] [600 1800] [600]]`)
	// The window counts from the first step: C@70 is 70 minutes after A@0, too late;
	// the attempt of A@50 goes on with B@80 and C@90 (30 and 10 minutes). The furthest
	// step's attempt gives the times: A@50, B@80, C@90.
	f("ordered, window", spec(funnelOrdered), []funnelRow{
		row("p", 0, stepA), row("p", 30, stepB), row("p", 50, stepA), row("p", 70, stepC), row("p", 80, stepB), row("p", 90, stepC),
	}, `"": [1 1 1] [[] [1800] [600]]`)
	// The window's end is in it: B exactly 60 minutes after A converts, 61 does not.
	f("ordered, window's end", spec(funnelOrdered), []funnelRow{
		row("p1", 0, stepA), row("p1", 60, stepB), row("p2", 0, stepA), row("p2", 61, stepB),
	}, `"": [2 1 0] [[] [3600] []]`)
	// An event that is two steps (a funnel $pageview -> $pageview -> C) is one step of
	// an attempt: one pageview is step 1 only, two are steps 1 and 2.
	f("ordered, an event of two steps", spec(funnelOrdered), []funnelRow{
		row("p1", 0, stepA|stepB),
		row("p2", 0, stepA|stepB), row("p2", 10, stepA|stepB), row("p2", 15, stepC),
	}, `"": [2 1 1] [[] [600] [300]]`)
	// Events of one time convert in the funnel's order, whatever their order: B and A
	// at minute 0 are steps 1 and 2, in no time, which the times leave out.
	f("ordered, one time", spec(funnelOrdered), []funnelRow{row("p", 0, stepB), row("p", 0, stepA), row("p", 5, stepC)},
		`"": [1 1 1] [[] [] [300]]`)

	// Strict: any event between two steps breaks the attempt; the next attempt may
	// still convert, and the first to reach the furthest step gives the times.
	f("strict", spec(funnelStrict), []funnelRow{
		row("x", 0, stepA), row("x", 5, noStep), row("x", 10, stepB), row("x", 20, stepC),
		row("y", 0, stepA), row("y", 10, stepB), row("y", 15, noStep), row("y", 20, stepA), row("y", 25, stepB), row("y", 30, stepC),
		row("z", 0, stepA), row("z", 5, stepA), row("z", 10, stepB), row("z", 15, stepC),
	}, `"": [3 2 2] [[] [300 300] [300 300]]`)
	// The same events in an ordered funnel: x converts through the event between.
	f("ordered, not strict", spec(funnelOrdered), []funnelRow{
		row("x", 0, stepA), row("x", 10, stepB), row("x", 20, stepC),
	}, `"": [1 1 1] [[] [600] [600]]`)

	// Unordered: the steps in any order within the window; the times between them sorted.
	f("unordered", spec(funnelUnordered), []funnelRow{
		row("p1", 0, stepC), row("p1", 10, stepB), row("p1", 20, stepA),
		// C@0 leaves the window before A@80: B@70 and A@80 are two steps.
		row("p2", 0, stepC), row("p2", 70, stepB), row("p2", 80, stepA),
		// An event of two steps counts for the one not done yet.
		row("p3", 0, stepA|stepB), row("p3", 10, stepA|stepB),
	}, `"": [3 3 1] [[] [600 600 600] [600]]`)

	// The breakdown value is the person's first event's, or last's.
	rows := []funnelRow{{"p", 0, stepA, "first"}, {"p", 10, stepB, "last"}}
	f("first touch", funnelSpec{steps: 3, order: funnelOrdered, window: 60 * 60e6, breakdown: true}, rows, `"first": [1 1 0] [[] [600] []]`)
	f("last touch", funnelSpec{steps: 3, order: funnelOrdered, window: 60 * 60e6, breakdown: true, lastTouch: true}, rows, `"last": [1 1 0] [[] [600] []]`)

	// What the fold holds is bounded: an unordered window of 200 events at 8 bytes.
	var many []funnelRow
	for i := range 200 {
		many = append(many, row("p", int64(i/10), stepA))
	}
	_, err := foldFunnel(spec(funnelUnordered), 1000, many)
	var qe *QueryError
	if !errors.As(err, &qe) || !strings.Contains(qe.Detail, "the funnel holds more than") {
		t.Fatalf("past the bytes bound: %v", err)
	}
}

// funnelsResults shapes tallies without a database: the steps in PostHog's shape, and
// breakdown values past the 25 largest as one "Other" funnel, sorted with the rest.
func TestFunnelsResults(t *testing.T) {
	a, b := "$pageview", "signed up"
	fq := FunnelsQuery{Series: []FunnelsStep{{Event: &a}, {Event: &b, CustomName: &b}}}
	tally := func(first, second int64, times ...float64) *funnelTally {
		return &funnelTally{counts: []int64{first, second}, times: [][]float64{nil, times}}
	}
	ordered := funnelSpec{steps: 2, order: funnelOrdered}
	r, err := funnelsResults(context.Background(), map[string]*funnelTally{"": tally(4, 3, 60, 10, 30)}, fq, ordered)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(r)
	want := `[{"action_id":"$pageview","name":"$pageview","custom_name":null,"order":0,"people":[],"count":4,"type":"events","average_conversion_time":null,"median_conversion_time":null},` +
		`{"action_id":"signed up","name":"signed up","custom_name":"signed up","order":1,"people":[],"count":3,"type":"events","average_conversion_time":33.333333333333336,"median_conversion_time":30}]`
	if string(text) != want {
		t.Fatalf("steps\n%s\nwant\n%s", text, want)
	}
	// No person entered: no steps.
	if r, _ := funnelsResults(context.Background(), map[string]*funnelTally{}, fq, ordered); fmt.Sprint(r) != "[]" {
		t.Fatalf("no person: %v", r)
	}
	// Unordered steps are named by how many were done.
	r, _ = funnelsResults(context.Background(), map[string]*funnelTally{"": tally(2, 1, 5, 15)}, fq, funnelSpec{steps: 2, order: funnelUnordered})
	if steps := r.([]FunnelStepResult); *steps[0].Name != "Completed 1 step" || *steps[1].Name != "Completed 2 steps" || steps[1].ActionID != nil ||
		*steps[1].MedianConversionTime != 10 {
		t.Fatalf("unordered %+v", steps)
	}

	// 27 values of 10 persons each, one of whom converts: the 25 first by value, then
	// k25 and k26 together as Other, whose 2 conversions put it first; its times are
	// both values' (10 and 30 s).
	tallies := map[string]*funnelTally{}
	for i := range 27 {
		tallies[fmt.Sprintf("k%02d", i)] = tally(10, 1, 1)
	}
	tallies["k25"], tallies["k26"] = tally(10, 1, 10), tally(10, 1, 30)
	withBreakdown := funnelSpec{steps: 2, order: funnelOrdered, breakdown: true}
	r, err = funnelsResults(context.Background(), tallies, fq, withBreakdown)
	if err != nil {
		t.Fatal(err)
	}
	funnels := r.([][]FunnelStepResult)
	var order []string
	for _, f := range funnels {
		order = append(order, fmt.Sprintf("%s:%d/%d", *f[0].Breakdown, f[0].Count, f[1].Count))
	}
	if len(order) != 26 || order[0] != "Other:20/2" || order[1] != "k00:10/1" || order[25] != "k24:10/1" {
		t.Fatalf("breakdown order: %s", strings.Join(order, " "))
	}
	if other := funnels[0][1]; *other.BreakdownValue != "Other" || *other.AverageConversionTime != 20 || *other.MedianConversionTime != 20 {
		t.Fatalf("Other's second step %+v", other)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := funnelsResults(ctx, tallies, fq, withBreakdown); !errors.Is(err, context.Canceled) {
		t.Fatalf("with a cancelled context: %v", err)
	}
}

// TestFunnelsQuery runs funnels over events the Writer committed, each answer counted
// by hand. The funnel is $pageview (A) -> signed up (B) -> paid (C), on 2 November
// 2026 in UTC unless said:
//
//	p1  A 10:00 Chrome, B 10:30, C 11:00                 every step
//	p2  A 10:00 Safari, B 12:00                          B two hours after A
//	p3  A 10:00 Chrome                                   A only
//	p4  B 09:00 Firefox, C 09:30                         no A
//	p5  A 10:00, B on 4 November 10:00                   B two days after A
//	p6  A 10:00 Chrome, clicked 10:10, B 10:20, C 10:30  an event between A and B
//	p7  C 10:00 Firefox, B 10:10, A 10:20 Chrome         the steps backwards
//	p8  user-8: clicked 08:00; anon-8: A 10:00 Chrome; then user-8: $identify of
//	    anon-8 10:05, B 10:10, C 10:20                   two persons merged midway
//
// and project 2's stranger does A, B and C, which no funnel of project 1 counts. The
// funnels run twice: with p8's merge in person_overrides, and squashed into the events.
func TestFunnelsQuery(t *testing.T) {
	t.Run("overrides", func(t *testing.T) { testFunnelsQuery(t, false) })
	t.Run("squashed", func(t *testing.T) { testFunnelsQuery(t, true) })
}

func testFunnelsQuery(t *testing.T, squashed bool) {
	cfg := Config{}
	if squashed {
		cfg.SquashInterval = time.Nanosecond // after every commit
	}
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), cfg)
	defer w.Close()
	e := func(team int64, name, distinctID, ts, props string) Event {
		return Event{UUID: uuid.Must(uuid.NewV7()), TeamID: team, Name: name, DistinctID: distinctID, Timestamp: at(ts), Properties: props}
	}
	day := func(hhmm string) string { return "2026-11-02T" + hhmm + ":00Z" }
	submit := func(events ...Event) {
		t.Helper()
		if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
			t.Fatal(err)
		}
	}
	submit(
		e(1, "$pageview", "p1", day("10:00"), `{"$browser":"Chrome"}`), e(1, "signed up", "p1", day("10:30"), `{}`), e(1, "paid", "p1", day("11:00"), `{}`),
		e(1, "$pageview", "p2", day("10:00"), `{"$browser":"Safari"}`), e(1, "signed up", "p2", day("12:00"), `{}`),
		e(1, "$pageview", "p3", day("10:00"), `{"$browser":"Chrome"}`),
		e(1, "signed up", "p4", day("09:00"), `{"$browser":"Firefox"}`), e(1, "paid", "p4", day("09:30"), `{}`),
		e(1, "$pageview", "p5", day("10:00"), `{}`), e(1, "signed up", "p5", "2026-11-04T10:00:00Z", `{}`),
		e(1, "$pageview", "p6", day("10:00"), `{"$browser":"Chrome"}`), e(1, "clicked", "p6", day("10:10"), `{}`),
		e(1, "signed up", "p6", day("10:20"), `{}`), e(1, "paid", "p6", day("10:30"), `{}`),
		e(1, "paid", "p7", day("10:00"), `{"$browser":"Firefox"}`), e(1, "signed up", "p7", day("10:10"), `{}`),
		e(1, "$pageview", "p7", day("10:20"), `{"$browser":"Chrome"}`),
		e(1, "clicked", "user-8", day("08:00"), `{}`), e(1, "$pageview", "anon-8", day("10:00"), `{"$browser":"Chrome"}`),
		e(2, "$pageview", "stranger", day("10:00"), `{}`), e(2, "signed up", "stranger", day("10:01"), `{}`), e(2, "paid", "stranger", day("10:02"), `{}`),
	)
	identify := e(1, "$identify", "user-8", day("10:05"), `{}`)
	identify.AnonDistinctID = "anon-8"
	submit(identify)
	submit(e(1, "signed up", "user-8", day("10:10"), `{}`), e(1, "paid", "user-8", day("10:20"), `{}`))
	// Unsquashed, p8's events carry the two persons they were ingested under: a funnel
	// that went by them would count anon-8 at A, and user-8 nowhere (no A). The squash
	// follows a commit: wait for it.
	stored, overrides := 2, 1
	if squashed {
		stored, overrides = 1, 0
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var persons, rows int
		if err := w.db.QueryRow(`SELECT (SELECT count(DISTINCT person_id) FROM events WHERE distinct_id IN ('anon-8', 'user-8')),
			(SELECT count(*) FROM person_overrides)`).Scan(&persons, &rows); err != nil {
			t.Fatal(err)
		}
		if persons == stored && rows == overrides {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("p8's events are of %d persons and %d overrides, want %d and %d", persons, rows, stored, overrides)
		}
	}

	now := at("2026-11-20T00:00:00Z")
	// funnel runs the funnel A -> B -> C over 1-15 November, with more fields of the
	// funnelsFilter (filter), and more fields of the query (more) that replace its own.
	funnel := func(filter, more string) (*FunnelsResult, error) {
		t.Helper()
		query := map[string]json.RawMessage{}
		for _, part := range []string{`{"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"},
			{"kind": "EventsNode", "event": "signed up"}, {"kind": "EventsNode", "event": "paid"}],
			"dateRange": {"date_from": "2026-11-01", "date_to": "2026-11-15"}}`,
			`{"funnelsFilter": {"funnelVizType": "steps"` + filter + `}` + more + `}`} {
			if err := json.Unmarshal([]byte(part), &query); err != nil {
				t.Fatalf("%s: %v", part, err)
			}
		}
		body, _ := json.Marshal(query)
		var fq FunnelsQuery
		if err := json.Unmarshal(body, &fq); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return w.Queries().Funnels(context.Background(), utc, fq, now)
	}
	// counts writes a funnel's counts, and with times its steps' mean and median
	// conversion times: "7 5 3" or "7 5/36720/1800 3/1000/600".
	counts := func(steps []FunnelStepResult, times bool) string {
		var parts []string
		for _, s := range steps {
			part := fmt.Sprint(s.Count)
			if times && s.AverageConversionTime != nil {
				part += fmt.Sprintf("/%.6g/%.6g", *s.AverageConversionTime, *s.MedianConversionTime)
			}
			parts = append(parts, part)
		}
		return strings.Join(parts, " ")
	}
	f := func(name, filter, more string, want string) {
		t.Helper()
		r, err := funnel(filter, more)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		steps, _ := r.Results.([]FunnelStepResult)
		if got := counts(steps, true); got != want {
			t.Fatalf("%s: %s, want %s", name, got, want)
		}
	}

	// Ordered, 14 days: A p1 p2 p3 p5 p6 p7 p8 (7); B p1 p2 p5 p6 p8 (5; p7's B is
	// before its A); C p1 p6 p8 (3). p8 is one person through its merge.
	// Into B: 1800 (p1), 7200 (p2), 172800 (p5), 1200 (p6), 600 (p8): mean 36720,
	// median 1800. Into C: 1800 (p1), 600 (p6), 600 (p8): mean 1000, median 600.
	f("ordered", "", "", "7 5/36720/1800 3/1000/600")
	// With 30 steps, the range's microseconds and the steps do not fit one number:
	// the rows hold them apart, to the same answer.
	thirty := `, "series": [{"event": "$pageview"}, {"event": "signed up"}, {"event": "paid"}` + strings.Repeat(`, {"event": "never"}`, 27) + `]`
	f("ordered, 30 steps", "", thirty, "7 5/36720/1800 3/1000/600"+strings.Repeat(" 0", 27))
	// 15 days are 41 bits of microseconds, 626 years 55 (more than a time.Duration holds).
	for _, c := range []struct {
		from              string
		steps, packedBits int
	}{{"2026-11-01", 3, 3}, {"2026-11-01", 21, 21}, {"2026-11-01", 22, 0}, {"2026-11-01", 30, 0}, {"1400-11-16", 7, 7}, {"1400-11-16", 8, 0}} {
		fq := FunnelsQuery{Series: make([]FunnelsStep, c.steps)}
		spec, err := checkFunnel(fq)
		if err != nil {
			t.Fatal(err)
		}
		if query, err := funnelsSQL(fq, spec, at(c.from+"T00:00:00Z"), at("2026-11-16T00:00:00Z")); err != nil || query.packedBits != c.packedBits {
			t.Fatalf("%d steps from %s: %d bits of steps in the time column (%v), want %d", c.steps, c.from, query.packedBits, err, c.packedBits)
		}
	}
	r, err := funnel("", "")
	if err != nil {
		t.Fatal(err)
	}
	first := r.Results.([]FunnelStepResult)[0]
	if *first.Name != "$pageview" || *first.ActionID != "$pageview" || first.Type != "events" || first.Order != 0 || r.Timezone != "UTC" {
		t.Fatalf("the first step %+v", first)
	}
	// The window expires: in 1 day p5's B (2 days) is out; in 1 hour p2's B (2 hours)
	// too, while p1's C, 60 minutes after its A, is just in.
	f("a window of 1 day", `, "funnelWindowInterval": 1, "funnelWindowIntervalUnit": "day"`, "", "7 4/2700/1500 3/1000/600")
	f("a window of 1 hour", `, "funnelWindowInterval": 1, "funnelWindowIntervalUnit": "hour"`, "", "7 3/1200/1200 3/1000/600")
	// Strict: p6's click breaks it after A, and p8's $identify; p2 and p5 have
	// nothing between A and B. A 7, B p1 p2 p5 (3), C p1 (1).
	f("strict", `, "funnelOrderType": "strict"`, "", "7 3/60600/7200 1/1800/1800")
	// Unordered: the steps in any order within 14 days. 1 step: all 8 persons; 2: all
	// but p3 (p4 did B and C); 3: p1 p6 p7 p8. Into the second: 1800 (p1), 7200 (p2),
	// 1800 (p4), 172800 (p5), 1200 (p6), 600 (p7), 600 (p8): mean 186000/7, median
	// 1800. Into the third: 1800 (p1), 600 (p6, p7, p8): mean 900, median 600.
	f("unordered", `, "funnelOrderType": "unordered"`, "", "8 7/26571.4/1800 4/900/600")
	// A property filter on a step: A must be on Chrome, so p2's and p5's As are no
	// step; p7's is, with nothing after. A p1 p3 p6 p7 p8, B and C p1 p6 p8.
	f("a filtered step", "", `, "series": [{"event": "$pageview", "properties": [{"key": "$browser", "value": "Chrome"}]},
		{"event": "signed up"}, {"event": "paid"}]`, "5 3/1200/1200 3/1000/600")
	// Two steps of one event: an event is read once, as both steps when it passes both
	// (the steps of one name share a scan). Each person has one $pageview, which can be
	// an attempt's A but not also its B: A 7, B none. Were it read twice, as A and as
	// A or B, the Chrome ones (p1 p3 p6 p7 p8) would do B too.
	f("one event, two steps", "", `, "series": [{"event": "$pageview"},
		{"event": "$pageview", "properties": [{"key": "$browser", "value": "Chrome"}]}, {"event": "paid"}]`, "7 0 0")
	// The default date range, the last 7 days, holds no event: no steps.
	if r, err := funnel("", `, "dateRange": {}`); err != nil || fmt.Sprint(r.Results) != "[]" {
		t.Fatalf("the last 7 days: %v %v", r, err)
	}

	// A breakdown by $browser: a person's value is that of the first event of theirs
	// the funnel reads (first touch), "" without it. Chrome: p1 p3 p6 p8 (A 4, B and C
	// 3); Safari: p2 (A, B); "": p5 (A, B); Firefox: p7, whose first step event is C.
	// Largest last steps first, then by value.
	r, err = funnel("", `, "breakdownFilter": {"breakdown": "$browser"}`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, steps := range r.Results.([][]FunnelStepResult) {
		got = append(got, fmt.Sprintf("%q:%s", *steps[0].BreakdownValue, counts(steps, false)))
		if *steps[2].Breakdown != *steps[0].BreakdownValue {
			t.Fatalf("the steps of %q differ in breakdown", *steps[0].BreakdownValue)
		}
	}
	if strings.Join(got, " ") != `"Chrome":4 3 3 "":1 1 0 "Safari":1 1 0 "Firefox":1 0 0` {
		t.Fatalf("breakdown by $browser: %s", strings.Join(got, " "))
	}

	// Refusals name the field.
	for _, c := range []struct{ filter, more, want string }{
		{"", `, "series": [{"event": "$pageview"}]`, "a funnel has from 2 to 30 steps in series, not 1"},
		{"", `, "series": [{"event": "$pageview"}, {"kind": "ActionsNode", "id": 3}]`, `series[1]: a funnel step must be an EventsNode, not "ActionsNode"`},
		{`, "funnelOrderType": "random"`, "", `funnelsFilter.funnelOrderType must be ordered, strict or unordered, not "random"`},
		{`, "funnelVizType": "trends"`, "", `funnelsFilter.funnelVizType must be steps, not "trends": only the steps view is supported`},
		{`, "funnelWindowInterval": 0`, "", "funnelsFilter.funnelWindowInterval must be from 1 to 100000, not 0"},
		{`, "funnelWindowIntervalUnit": "year"`, "", `funnelsFilter.funnelWindowIntervalUnit must be second, minute, hour, day, week or month, not "year"`},
		{`, "breakdownAttributionType": "all_events"`, "", `funnelsFilter.breakdownAttributionType must be first_touch or last_touch, not "all_events"`},
		{`, "exclusions": [{"event": "x", "funnelFromStep": 0, "funnelToStep": 1}]`, "", "funnelsFilter.exclusions are not supported"},
		{"", `, "aggregation_group_type_index": 0`, "funnels count persons: aggregation_group_type_index and funnelsFilter.funnelAggregateByHogQL are not supported"},
		{"", `, "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "cohort"}`, `breakdown_type must be event or person, not "cohort"`},
	} {
		_, err := funnel(c.filter, c.more)
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Detail != c.want {
			t.Fatalf("%s%s: %v, want %q", c.filter, c.more, err, c.want)
		}
	}
	many := `, "series": [` + strings.TrimSuffix(strings.Repeat(`{"event": "a"}, `, 31), ", ") + `]`
	if _, err := funnel("", many); err == nil || err.Error() != "a funnel has from 2 to 30 steps in series, not 31" {
		t.Fatalf("31 steps: %v", err)
	}
}

// submitFunnelEvents stores 6,000 events of 300 persons in w, each an A, B or C at
// random over 14 days, and returns the funnel query of A, B and C over them (a window
// of 2 days) and its rows as funnelsSQL's query orders them (by person, time, steps).
func submitFunnelEvents(t *testing.T, w *Warehouse) (funnelQuery, funnelSpec, []funnelRow) {
	t.Helper()
	random := rand.New(rand.NewPCG(17, 2026))
	names := []string{"A", "B", "C"}
	start := at("2026-11-01T00:00:00Z")
	var events []Event
	var rows []funnelRow
	for p := range 300 {
		person := fmt.Sprint("p", p)
		for range 20 {
			step, minute := random.IntN(3), int64(random.IntN(14*24*60))
			events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: names[step], DistinctID: person,
				Timestamp: start.Add(time.Duration(minute) * time.Minute), Properties: `{}`})
			rows = append(rows, funnelRow{person: person, minute: start.Unix()/60 + minute, steps: 1 << step})
		}
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rows, func(a, b funnelRow) int {
		return cmp.Or(strings.Compare(a.person, b.person), cmp.Compare(a.minute, b.minute), cmp.Compare(a.steps, b.steps))
	})
	fq := FunnelsQuery{Series: []FunnelsStep{{Event: &names[0]}, {Event: &names[1]}, {Event: &names[2]}}}
	spec := funnelSpec{steps: 3, order: funnelOrdered, window: 2 * 86400e6}
	query, err := funnelsSQL(fq, spec, start, start.AddDate(0, 0, 14))
	if err != nil {
		t.Fatal(err)
	}
	return query, spec, rows
}

// sortedTimes sorts each step's conversion times of tallies, which are in the order
// the persons were folded in, and returns them.
func sortedTimes(tallies map[string]*funnelTally) map[string]*funnelTally {
	for _, tally := range tallies {
		for _, times := range tally.times {
			slices.Sort(times)
		}
	}
	return tallies
}

// A funnel's reader (DuckDB's Arrow reader in builds with the duckdb_arrow tag, else
// the driver's rows) hands its rows over a chunk of 2,048 at a time: a funnel of more,
// whose persons' events straddle chunks, tallies as the fold of the same rows in one
// piece, ordered as the query orders them; so do its rows read unsorted and grouped.
func TestFunnelReadsChunks(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	query, spec, rows := submitFunnelEvents(t, w)
	tallies, err := foldTallies(spec, 1<<30, rows)
	if err != nil {
		t.Fatal(err)
	}
	want := talliesText(sortedTimes(tallies))
	for _, grouped := range []bool{false, true} {
		text := query.text
		if !grouped {
			text += " ORDER BY " + query.order
		}
		got, err := w.Queries().readFunnelTallies(context.Background(), utc, text, query, spec, grouped)
		if err != nil {
			t.Fatal(err)
		}
		if got := talliesText(sortedTimes(got)); got != want || !strings.Contains(want, "[300 ") {
			t.Fatalf("the funnel read in chunks (grouped %t) tallies\n%.300s\nwant\n%.300s", grouped, got, want)
		}
	}
}
