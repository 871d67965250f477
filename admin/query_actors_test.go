package admin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

// An ActorsQuery over a trend's point lists the persons whose events the point
// counted, the most events first, as their distinct ids belong now (an identified
// anonymous visitor once, with both ids), by breakdown value, in pages; a bare
// InsightActorsQuery answers the same; a point or a source it cannot list is a 400.
func TestQueryAPITrendsActors(t *testing.T) {
	env := newTestEnv(t, "")
	d0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3).Add(10 * time.Hour)
	d1 := d0.AddDate(0, 0, 1)
	view := func(id, browser string, at time.Time) warehouse.Event {
		return warehouse.Event{Name: "$pageview", DistinctID: id, Timestamp: at, Properties: `{"$browser":"` + browser + `"}`}
	}
	env.ingest(t,
		view("alice", "Chrome", d0), view("alice", "Chrome", d0.Add(time.Minute)), view("alice", "Chrome", d0.Add(2*time.Minute)),
		view("alice", "Firefox", d1),
		view("bob", "Firefox", d0),
		view("anon-c", "Chrome", d0), view("anon-c", "Chrome", d0.Add(time.Minute)),
		warehouse.Event{Name: "signup", DistinctID: "dave", Timestamp: d0},
	)
	// The anonymous visitor identifies as carol the next day: one person since.
	env.ingest(t,
		warehouse.Event{Name: "$identify", DistinctID: "carol", Timestamp: d1, Properties: `{"$anon_distinct_id":"anon-c"}`, AnonDistinctID: "anon-c"},
		view("carol", "Safari", d1.Add(time.Minute)),
	)
	trends := `{"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "signup", "math": "dau"}],
		"dateRange": {"date_from": "-7d"}%s}`
	actors := func(source, point, page string) (int, map[string]any, string) {
		t.Helper()
		body := `{"query": {"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "source": ` + source + `` + point + `}` + page + `}}`
		return env.call(t, "POST", env.project+"/query/", env.owner, body)
	}
	// persons are a page's rows as "first distinct id:event count".
	persons := func(out map[string]any) []string {
		var got []string
		for _, row := range out["results"].([]any) {
			r := row.([]any)
			actor := r[0].(map[string]any)
			ids := actor["distinct_ids"].([]any)
			got = append(got, fmt.Sprintf("%v:%v", ids[len(ids)-1], r[1]))
		}
		return got
	}
	plain := fmt.Sprintf(trends, "")
	day := func(t time.Time) string { return t.Format(time.DateOnly) }
	for _, c := range []struct {
		name, source, point, page string
		want                      []string
		hasMore                   bool
	}{
		{"the day before the identify", plain, `, "day": "` + day(d0) + `", "series": 0`, "", []string{"alice:3", "carol:2", "bob:1"}, false},
		{"the day of the identify", plain, `, "day": "` + day(d1) + `", "series": 0`, "", []string{"alice:1", "carol:1"}, false},
		{"the second series", plain, `, "day": "` + day(d0) + `", "series": 1`, "", []string{"dave:1"}, false},
		{"the whole range", fmt.Sprintf(trends, `, "trendsFilter": {"display": "ActionsTable"}`), `, "series": 0`, "", []string{"alice:4", "carol:3", "bob:1"}, false},
		{"a breakdown value", fmt.Sprintf(trends, `, "breakdownFilter": {"breakdown": "$browser"}`), `, "day": "` + day(d0) + `", "series": 0, "breakdown": "Chrome"`, "",
			[]string{"alice:3", "carol:2"}, false},
		{"another breakdown value", fmt.Sprintf(trends, `, "breakdownFilter": {"breakdown": "$browser"}`), `, "day": "` + day(d1) + `", "series": 0, "breakdown": "Safari"`, "",
			[]string{"carol:1"}, false},
		{"a first page", plain, `, "day": "` + day(d0) + `", "series": 0`, `, "limit": 2`, []string{"alice:3", "carol:2"}, true},
		{"a second page", plain, `, "day": "` + day(d0) + `", "series": 0`, `, "limit": 2, "offset": 2`, []string{"bob:1"}, false},
		{"the previous period", plain, `, "day": "` + day(d0.AddDate(0, 0, -7)) + `", "series": 0, "compare": "previous"`, "", nil, false},
	} {
		status, out, text := actors(c.source, c.point, c.page)
		if status != 200 {
			t.Errorf("%s: %d %s", c.name, status, text)
			continue
		}
		got := persons(out)
		if c.name == "the day of the identify" { // a tie, in the order of person ids
			slices.Sort(got)
		}
		if !slices.Equal(got, c.want) || out["hasMore"] != c.hasMore {
			t.Errorf("%s: persons %v hasMore %v, want %v %v", c.name, got, out["hasMore"], c.want, c.hasMore)
		}
	}

	// The actor is the person of the persons API: carol with both of her ids.
	_, out, _ := actors(plain, `, "day": "`+day(d0)+`", "series": 0`, "")
	carol := out["results"].([]any)[1].([]any)[0].(map[string]any)
	if fmt.Sprint(carol["distinct_ids"]) != "[anon-c carol]" || carol["id"] == "" || carol["id"] != carol["uuid"] {
		t.Errorf("carol as an actor: %v", carol)
	}
	if fmt.Sprint(out["columns"]) != "[actor event_count]" {
		t.Errorf("columns %v", out["columns"])
	}
	// A bare InsightActorsQuery, with the columns' default.
	bare := env.must(t, 200, "POST", env.project+"/query/", env.owner,
		`{"query": {"kind": "InsightActorsQuery", "source": `+plain+`, "day": "`+day(d0)+`", "series": 0}}`)
	if got := persons(bare); !slices.Equal(got, []string{"alice:3", "carol:2", "bob:1"}) {
		t.Errorf("a bare InsightActorsQuery: %v", got)
	}
	selected := env.must(t, 200, "POST", env.project+"/query/", env.owner,
		`{"query": {"kind": "ActorsQuery", "select": ["actor", "created_at"], "source": {"kind": "InsightActorsQuery", "source": `+plain+`, "day": "`+day(d0)+`"}}}`)
	if rows := selected["results"].([]any); len(rows) != 3 || len(rows[0].([]any)) != 2 || fmt.Sprint(selected["columns"]) != "[actor created_at]" {
		t.Errorf("selecting actor and created_at: %v", selected)
	}

	for _, c := range []struct{ name, source, point, page, says string }{
		{"no such series", plain, `, "day": "` + day(d0) + `", "series": 2`, "", "series must be the index"},
		{"a day outside the range", plain, `, "day": "2001-01-01", "series": 0`, "", "outside the query's date range"},
		{"a day that is no day", plain, `, "day": "yesterday", "series": 0`, "", "day must be a date"},
		{"a breakdown without its value", fmt.Sprintf(trends, `, "breakdownFilter": {"breakdown": "$browser"}`), `, "day": "` + day(d0) + `", "series": 0`, "", "say which value"},
		{"the rest of a breakdown", fmt.Sprintf(trends, `, "breakdownFilter": {"breakdown": "$browser"}`), `, "series": 0, "breakdown": "$$_posthog_breakdown_other_$$"`, "", "Other"},
		{"a funnel", `{"kind": "FunnelsQuery", "series": [{"event": "a"}, {"event": "b"}]}`, `, "funnelStep": 1`, "", "listed by a FunnelsActorsQuery"},
		{"a column actors do not have", plain, `, "series": 0`, `, "select": ["person.properties.email"]`, "not a column of a TrendsQuery"},
		{"a page too large", plain, `, "series": 0`, `, "limit": 100000`, "limit must be"},
	} {
		status, _, text := actors(c.source, c.point, c.page)
		if status != 400 || !strings.Contains(text, c.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.name, status, text, c.says)
		}
	}
}

// An ActorsQuery over a retention's cohort lists its persons, those who came back most
// often first, each with the periods they came back in (0, the cohort's own, first).
func TestQueryAPIRetentionActors(t *testing.T) {
	env := newTestEnv(t, "")
	d0 := time.Date(2026, 10, 5, 12, 0, 0, 0, time.UTC)
	view := func(id string, day int) warehouse.Event {
		return warehouse.Event{Name: "$pageview", DistinctID: id, Timestamp: d0.AddDate(0, 0, day)}
	}
	env.ingest(t, view("p1", 0), view("p1", 1), view("p1", 3), view("p1", 3), view("p2", 0), view("p3", 1), view("p3", 2))
	retention := `{"kind": "RetentionQuery", "dateRange": {"date_to": "2026-10-09"}, "retentionFilter": {"period": "Day", "totalIntervals": 5,
		"targetEntity": {"id": "$pageview", "type": "events"}, "returningEntity": {"id": "$pageview", "type": "events"}}}`
	cohort := func(interval int) (int, map[string]any, string) {
		return env.call(t, "POST", env.project+"/query/", env.owner, fmt.Sprintf(
			`{"query": {"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "source": %s, "interval": %d}}}`, retention, interval))
	}
	rows := func(out map[string]any) []string {
		var got []string
		for _, row := range out["results"].([]any) {
			r := row.([]any)
			got = append(got, fmt.Sprintf("%v:%v", r[0].(map[string]any)["distinct_ids"], r[1]))
		}
		return got
	}
	for interval, want := range [][]string{{"[p1]:[0 1 3]", "[p2]:[0]"}, {"[p3]:[0 1]"}, nil, nil, nil} {
		status, out, text := cohort(interval)
		if status != 200 || !slices.Equal(rows(out), want) || fmt.Sprint(out["columns"]) != "[actor appearances]" {
			t.Errorf("cohort %d: %d %s, want %v", interval, status, text, want)
		}
	}
	if status, _, text := cohort(5); status != 400 || !strings.Contains(text, "one of the query's 5 cohorts") {
		t.Errorf("a cohort past the last: %d %s", status, text)
	}
}

// An ActorsQuery over a FunnelsActorsQuery lists the persons of a funnel's step: those
// who reached it, or (a negative step) those who reached the step before and not it,
// as their distinct ids belong now (an anonymous visitor who identified midway once),
// by breakdown value, in pages; each step's persons are as many as the funnel counts.
func TestQueryAPIFunnelsActors(t *testing.T) {
	env := newTestEnv(t, "")
	d0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3).Add(10 * time.Hour)
	at := func(name, id string, minute int, props string) warehouse.Event {
		return warehouse.Event{Name: name, DistinctID: id, Timestamp: d0.Add(time.Duration(minute) * time.Minute), Properties: props}
	}
	chrome, firefox := `{"$browser":"Chrome"}`, `{"$browser":"Firefox"}`
	env.ingest(t,
		at("$pageview", "alice", 0, chrome), at("signup", "alice", 1, ""), at("purchase", "alice", 2, ""), // step 3
		at("$pageview", "bob", 0, firefox), at("signup", "bob", 5, ""), // step 2
		at("$pageview", "anon-c", 0, chrome),                                 // step 2 once identified as carol
		at("$pageview", "dave", 0, chrome),                                   // step 1
		at("signup", "erin", 0, ""),                                          // not in the funnel
		at("$pageview", "frank", 0, firefox), at("purchase", "frank", 1, ""), // step 1: no signup between
	)
	env.ingest(t,
		warehouse.Event{Name: "$identify", DistinctID: "carol", Timestamp: d0.Add(10 * time.Minute), Properties: `{"$anon_distinct_id":"anon-c"}`, AnonDistinctID: "anon-c"},
		at("signup", "carol", 11, ""),
	)
	funnel := `{"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "signup"},
		{"kind": "EventsNode", "event": "purchase"}], "dateRange": {"date_from": "-7d"}%s}`
	plain, byBrowser := fmt.Sprintf(funnel, ""), fmt.Sprintf(funnel, `, "breakdownFilter": {"breakdown": "$browser"}`)
	actors := func(source, point, page string) (int, map[string]any, string) {
		t.Helper()
		body := `{"query": {"kind": "ActorsQuery", "source": {"kind": "FunnelsActorsQuery", "source": ` + source + point + `}` + page + `}}`
		return env.call(t, "POST", env.project+"/query/", env.owner, body)
	}
	// persons are a page's persons by their last distinct id, sorted (the page's order
	// is the fold's, by a hash of the person).
	persons := func(out map[string]any) []string {
		got := []string{}
		for _, row := range out["results"].([]any) {
			ids := row.([]any)[0].(map[string]any)["distinct_ids"].([]any)
			got = append(got, fmt.Sprint(ids[len(ids)-1]))
		}
		slices.Sort(got)
		return got
	}
	for _, c := range []struct {
		name, source, point string
		want                []string
	}{
		{"who reached the first step", plain, `, "funnelStep": 1`, []string{"alice", "bob", "carol", "dave", "frank"}},
		{"who reached the second", plain, `, "funnelStep": 2`, []string{"alice", "bob", "carol"}},
		{"who converted", plain, `, "funnelStep": 3`, []string{"alice"}},
		{"who dropped off before the second", plain, `, "funnelStep": -2`, []string{"dave", "frank"}},
		{"who dropped off before the third", plain, `, "funnelStep": -3`, []string{"bob", "carol"}},
		{"a breakdown value", byBrowser, `, "funnelStep": 2, "funnelStepBreakdown": "Chrome"`, []string{"alice", "carol"}},
		{"a breakdown value as a list of one", byBrowser, `, "funnelStep": -2, "funnelStepBreakdown": ["Firefox"]`, []string{"frank"}},
	} {
		status, out, text := actors(c.source, c.point, "")
		if status != 200 || !slices.Equal(persons(out), c.want) || out["hasMore"] != false {
			t.Errorf("%s: %d %s, want %v", c.name, status, text, c.want)
		}
	}

	// Each step's persons are the funnel's count of it.
	steps := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query": `+plain+`}`)["results"].([]any)
	for i, step := range steps {
		_, out, _ := actors(plain, fmt.Sprintf(`, "funnelStep": %d`, i+1), "")
		if n := len(out["results"].([]any)); float64(n) != step.(map[string]any)["count"] {
			t.Errorf("step %d: %d persons, the funnel counts %v", i+1, n, step.(map[string]any)["count"])
		}
	}

	// Pages of two: each person once across them.
	var paged []string
	for offset, more := 0, true; more; offset += 2 {
		status, out, text := actors(plain, `, "funnelStep": 1`, fmt.Sprintf(`, "limit": 2, "offset": %d`, offset))
		if status != 200 || len(out["results"].([]any)) > 2 {
			t.Fatalf("page at %d: %d %s", offset, status, text)
		}
		paged, more = append(paged, persons(out)...), out["hasMore"] == true
	}
	if slices.Sort(paged); !slices.Equal(paged, []string{"alice", "bob", "carol", "dave", "frank"}) {
		t.Errorf("the pages' persons: %v", paged)
	}

	// A bare FunnelsActorsQuery answers the actor alone, carol with both ids.
	bare := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query": {"kind": "FunnelsActorsQuery", "source": `+plain+`, "funnelStep": -3}}`)
	if fmt.Sprint(bare["columns"]) != "[actor]" || !slices.Equal(persons(bare), []string{"bob", "carol"}) {
		t.Errorf("a bare FunnelsActorsQuery: %v", bare)
	}
	for _, row := range bare["results"].([]any) {
		if ids := fmt.Sprint(row.([]any)[0].(map[string]any)["distinct_ids"]); ids != "[bob]" && ids != "[anon-c carol]" {
			t.Errorf("an actor's distinct ids: %s", ids)
		}
	}

	for _, c := range []struct{ name, source, point, says string }{
		{"no step", plain, ``, "funnelStep must be"},
		{"a step past the last", plain, `, "funnelStep": 4`, "funnelStep must be"},
		{"dropped off before the first", plain, `, "funnelStep": -1`, "funnelStep must be"},
		{"a breakdown without its value", byBrowser, `, "funnelStep": 1`, "say which value"},
		{"the rest of a breakdown", byBrowser, `, "funnelStep": 1, "funnelStepBreakdown": "Other"`, "Other"},
		{"a trend", `{"kind": "TrendsQuery", "series": [{"event": "a"}]}`, `, "funnelStep": 1`, "by an InsightActorsQuery"},
	} {
		status, _, text := actors(c.source, c.point, "")
		if status != 400 || !strings.Contains(text, c.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.name, status, text, c.says)
		}
	}
}

// kindsFixture ingests the persons of the lifecycle, stickiness and paths actors'
// tests, counted by hand in each: pat, who browsed as anon-p on Oct 6 and as pat on
// Oct 7 before the two were merged by an $identify (one person since, first seen Oct
// 6), then again on Oct 9; quinn, first seen Oct 4, on Oct 5 and 6 (and a signup on
// Oct 5); rae on Oct 8 only; on Oct 10, paths: pat /home (as anon-p, before the
// merge) → /pricing → /signup, quinn /home → /pricing, rae /home → /docs. Another
// project has a quinn and a pat of its own on every day, who never appear.
func kindsFixture(t *testing.T, env *testEnv) {
	t.Helper()
	at := func(day, minute int) time.Time { return time.Date(2026, 10, day, 12, minute, 0, 0, time.UTC) }
	view := func(id string, day, minute int, url string) warehouse.Event {
		return warehouse.Event{Name: "$pageview", DistinctID: id, Timestamp: at(day, minute), Properties: `{"$current_url":"` + url + `"}`}
	}
	env.ingest(t,
		view("anon-p", 6, 0, "/home"), view("pat", 7, 0, "/home"),
		view("quinn", 4, 0, "/home"), view("quinn", 5, 0, "/home"), view("quinn", 6, 0, "/home"),
		warehouse.Event{Name: "signup", DistinctID: "quinn", Timestamp: at(5, 1)},
		view("rae", 8, 0, "/home"),
		view("anon-p", 10, 0, "/home"), view("pat", 10, 1, "/pricing"),
	)
	env.ingest(t,
		warehouse.Event{Name: "$identify", DistinctID: "pat", Timestamp: at(7, 5), Properties: `{"$anon_distinct_id":"anon-p"}`, AnonDistinctID: "anon-p"},
		view("anon-p", 7, 6, "/home"), view("pat", 9, 0, "/home"),
		view("pat", 10, 2, "/signup"),
		view("quinn", 10, 0, "/home"), view("quinn", 10, 1, "/pricing"),
		view("rae", 10, 0, "/home"), view("rae", 10, 1, "/docs"),
	)
	other := env.otherProject(t)
	id, err := strconv.ParseInt(strings.TrimPrefix(other, "/api/projects/"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var theirs []warehouse.Event
	for day := 4; day <= 10; day++ {
		theirs = append(theirs, view("quinn", day, 0, "/home"), view("quinn", day, 1, "/pricing"), view("pat", day, 0, "/home"))
	}
	env.ingestTo(t, id, theirs...)
}

// actorsOf posts an ActorsQuery of source and answers its persons as "last distinct
// id:event_count", in the page's order, and the answer.
func actorsOf(t *testing.T, env *testEnv, source string) (int, []string, map[string]any, string) {
	t.Helper()
	status, out, text := env.call(t, "POST", env.project+"/query/", env.owner, `{"query": {"kind": "ActorsQuery", "source": `+source+`}}`)
	var got []string
	if status == 200 {
		for _, row := range out["results"].([]any) {
			r := row.([]any)
			ids := r[0].(map[string]any)["distinct_ids"].([]any)
			got = append(got, fmt.Sprintf("%v:%v", ids[len(ids)-1], r[1]))
		}
	}
	return status, got, out, text
}

// An ActorsQuery over a lifecycle's bar lists the persons of its status in its
// interval: each bar's persons are as many as the lifecycle counts (its dormant ones
// negative), a merged person once.
func TestQueryAPILifecycleActors(t *testing.T) {
	env := newTestEnv(t, "")
	kindsFixture(t, env)
	lifecycle := `{"kind": "LifecycleQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}], "dateRange": {"date_from": "2026-10-06", "date_to": "2026-10-09"}}`
	bar := func(day, status string) string {
		return `{"kind": "InsightActorsQuery", "source": ` + lifecycle + `, "day": "` + day + `", "status": "` + status + `"}`
	}
	want := map[string][]string{ // day status → persons:events of the day
		"2026-10-06 new": {"pat:1"}, "2026-10-06 returning": {"quinn:1"},
		"2026-10-07 returning": {"pat:2"}, "2026-10-07 dormant": {"quinn:0"},
		"2026-10-08 new": {"rae:1"}, "2026-10-08 dormant": {"pat:0"},
		"2026-10-09 resurrecting": {"pat:1"}, "2026-10-09 dormant": {"rae:0"},
	}
	figure := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query": `+lifecycle+`}`)["results"].([]any)
	for _, l := range figure {
		line := l.(map[string]any)
		for i, day := range line["days"].([]any) {
			key := fmt.Sprintf("%s %s", day, line["status"])
			status, got, _, text := actorsOf(t, env, bar(day.(string), line["status"].(string)))
			if status != 200 || !slices.Equal(got, want[key]) {
				t.Errorf("%s: %d %s, want %v", key, status, text, want[key])
			}
			if n := line["data"].([]any)[i].(float64); float64(len(got)) != max(n, -n) {
				t.Errorf("%s: %d persons, the lifecycle counts %v", key, len(got), n)
			}
		}
	}
	for _, c := range []struct{ name, source, says string }{
		{"an unknown status", bar("2026-10-07", "lapsed"), "status must be one of new, returning, resurrecting, dormant"},
		{"no status", `{"kind": "InsightActorsQuery", "source": ` + lifecycle + `, "day": "2026-10-07"}`, "status must be"},
		{"a day outside the range", bar("2026-10-05", "new"), "outside the query's date range"},
		{"a day after it", bar("2026-10-10", "dormant"), "outside the query's date range"},
		{"no day", `{"kind": "InsightActorsQuery", "source": ` + lifecycle + `, "status": "new"}`, "day is required"},
		{"a day that is a number", `{"kind": "InsightActorsQuery", "source": ` + lifecycle + `, "day": 3, "status": "new"}`, "Not a valid string"},
	} {
		if status, _, _, text := actorsOf(t, env, c.source); status != 400 || !strings.Contains(text, c.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.name, status, text, c.says)
		}
	}
}

// An ActorsQuery over a stickiness' bar lists the persons active on exactly its number
// of intervals (PostHog's day), the most events first: as many as the bar counts, a
// merged person's days counted together.
func TestQueryAPIStickinessActors(t *testing.T) {
	env := newTestEnv(t, "")
	kindsFixture(t, env)
	stickiness := `{"kind": "StickinessQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "signup"}],
		"dateRange": {"date_from": "2026-10-05", "date_to": "2026-10-09"}}`
	bar := func(day, series string) string {
		return `{"kind": "InsightActorsQuery", "source": ` + stickiness + `, "day": ` + day + `, "series": ` + series + `}`
	}
	want := [][][]string{
		{{"rae:1"}, {"quinn:2"}, {"pat:4"}, nil, nil}, // pat: anon-p on Oct 6, pat and anon-p on 7, pat on 9
		{{"quinn:1"}, nil, nil, nil, nil},
	}
	figure := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query": `+stickiness+`}`)["results"].([]any)
	for s, l := range figure {
		data := l.(map[string]any)["data"].([]any)
		if len(data) != 5 {
			t.Fatalf("series %d: %v", s, data)
		}
		for k := range data {
			status, got, _, text := actorsOf(t, env, bar(strconv.Itoa(k+1), strconv.Itoa(s)))
			if status != 200 || !slices.Equal(got, want[s][k]) {
				t.Errorf("series %d, %d days: %d %s, want %v", s, k+1, status, text, want[s][k])
			}
			if float64(len(got)) != data[k].(float64) {
				t.Errorf("series %d, %d days: %d persons, the stickiness counts %v", s, k+1, len(got), data[k])
			}
		}
	}
	for _, c := range []struct{ name, source, says string }{
		{"no days", bar("0", "0"), "day must be a number of intervals from 1 to the range's 5"},
		{"more days than the range", bar("6", "0"), "day must be a number of intervals"},
		{"a day that is a date", bar(`"2026-10-06"`, "0"), "whole number"},
		{"no day", `{"kind": "InsightActorsQuery", "source": ` + stickiness + `}`, "whole number"},
		{"no such series", bar("1", "2"), "series must be the index"},
	} {
		if status, _, _, text := actorsOf(t, env, c.source); status != 400 || !strings.Contains(text, c.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.name, status, text, c.says)
		}
	}
}

// An ActorsQuery over a paths' edge or node, by PostHog's keys in the pathsFilter (or
// beside it on the InsightActorsQuery), lists the persons whose paths took the edge,
// reached or left the node, or ended there: an edge's persons as many as its paths
// here, a path begun before a merge one person's.
func TestQueryAPIPathsActors(t *testing.T) {
	env := newTestEnv(t, "")
	kindsFixture(t, env)
	paths := func(keys string) string {
		return `{"kind": "PathsQuery", "dateRange": {"date_from": "2026-10-10", "date_to": "2026-10-10"}, "pathsFilter": {"includeEventTypes": ["$pageview"]` + keys + `}}`
	}
	node := func(keys string) string { return `{"kind": "InsightActorsQuery", "source": ` + paths(keys) + `}` }
	sorted := func(s []string) []string { slices.Sort(s); return s }
	edges := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query": `+paths("")+`}`)["results"].([]any)
	if len(edges) != 3 {
		t.Fatalf("edges %v", edges)
	}
	wantEdges := map[string][]string{
		"1_/home→2_/pricing":   {"pat:1", "quinn:1"},
		"2_/pricing→3_/signup": {"pat:1"},
		"1_/home→2_/docs":      {"rae:1"},
	}
	for _, e := range edges {
		edge := e.(map[string]any)
		key := fmt.Sprintf("%s→%s", edge["source"], edge["target"])
		status, got, _, text := actorsOf(t, env, node(fmt.Sprintf(`, "pathStartKey": %q, "pathEndKey": %q`, edge["source"], edge["target"])))
		if status != 200 || !slices.Equal(sorted(got), wantEdges[key]) {
			t.Errorf("edge %s: %d %s, want %v", key, status, text, wantEdges[key])
		}
		if float64(len(got)) != edge["value"].(float64) {
			t.Errorf("edge %s: %d persons, the paths count %v", key, len(got), edge["value"])
		}
	}
	for _, c := range []struct {
		name, source string
		want         []string
	}{
		{"who reached a node", node(`, "pathEndKey": "2_/pricing"`), []string{"pat:1", "quinn:1"}},
		{"who went on from a node", node(`, "pathStartKey": "1_/home"`), []string{"pat:1", "quinn:1", "rae:1"}},
		{"who dropped off at a node", node(`, "pathDropoffKey": "2_/pricing"`), []string{"quinn:1"}},
		{"who dropped off at the last step", node(`, "pathDropoffKey": "3_/signup"`), []string{"pat:1"}},
		{"nobody drops off at the first", node(`, "pathDropoffKey": "1_/home"`), nil},
		{"the keys beside the pathsFilter", `{"kind": "InsightActorsQuery", "source": ` + paths("") + `, "pathDropoffKey": "2_/docs"}`, []string{"rae:1"}},
	} {
		status, got, _, text := actorsOf(t, env, c.source)
		if status != 200 || !slices.Equal(sorted(got), c.want) {
			t.Errorf("%s: %d %s, want %v", c.name, status, text, c.want)
		}
	}
	// Pages of one, each person once across them; created_at as a column.
	var paged []string
	for offset, more := 0, true; more; offset++ {
		out := env.must(t, 200, "POST", env.project+"/query/", env.owner, fmt.Sprintf(
			`{"query": {"kind": "ActorsQuery", "select": ["actor", "created_at"], "limit": 1, "offset": %d, "source": %s}}`, offset, node(`, "pathStartKey": "1_/home"`)))
		rows := out["results"].([]any)
		if len(rows) != 1 || rows[0].([]any)[1] == nil || fmt.Sprint(out["columns"]) != "[actor created_at]" {
			t.Fatalf("page at %d: %v", offset, out)
		}
		ids := rows[0].([]any)[0].(map[string]any)["distinct_ids"].([]any)
		paged, more = append(paged, fmt.Sprint(ids[len(ids)-1])), out["hasMore"] == true
	}
	if !slices.Equal(sorted(paged), []string{"pat", "quinn", "rae"}) {
		t.Errorf("the pages' persons: %v", paged)
	}
	for _, c := range []struct{ name, source, says string }{
		{"no key", node(""), "say which edge or node"},
		{"a key without its step", node(`, "pathEndKey": "/pricing"`), "pathEndKey must be a node of the paths"},
		{"a step 0", node(`, "pathDropoffKey": "0_/home"`), "pathDropoffKey must be a node"},
		{"a step that is no number", node(`, "pathStartKey": "x_/home"`), "pathStartKey must be a node"},
		{"an edge over two steps", node(`, "pathStartKey": "1_/home", "pathEndKey": "3_/signup"`), "an edge goes from a step to the next"},
	} {
		if status, _, _, text := actorsOf(t, env, c.source); status != 400 || !strings.Contains(text, c.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.name, status, text, c.says)
		}
	}
}
