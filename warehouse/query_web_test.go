package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

// webEvents are the sessions the web analytics tests count by hand, the range being
// Nov 2 to 8, 2026 (UTC) and its previous period Oct 26 to Nov 1:
//
//	s1 ada    Nov 2  / then /pricing, a $pageleave at 60 s; Desktop Chrome Mac OS X, google.com, DE
//	s2 brian  Nov 3  / and a $pageleave at 5 s (a bounce); Mobile Safari iOS, $direct, US
//	s3 ada    Nov 4  /blog and a $pageleave at 20 s (no bounce: 10 s or more); Desktop Firefox Windows, news.ycombinator.com, no country
//	s4 chen   Nov 5  /pricing, an $autocapture at 3 s (no bounce), a $pageleave at 4 s; Mobile Chrome Android, $direct, US
//	s5 dora   Nov 6  / alone (a bounce, 0 s); Desktop Chrome Mac OS X, google.com, DE
//	p1 ada    Oct 28 / then /about at 2 s
//	p2 gus    Oct 30 / alone (a bounce)
//	pb hank   Nov 1 23:59:50 /, then Nov 2 00:00:10 /docs: starts in the previous period,
//	          so its /docs, though in the range, is the previous period's
//
// and what is not counted: eve's $pageview without a session, frank's session of an
// $autocapture alone (no view), and ivan's session of Nov 10, after the range.
func webEvents(t *testing.T, w *Warehouse) {
	t.Helper()
	var events []Event
	add := func(who, session, name, ts string, props map[string]any) {
		p := map[string]any{}
		for k, v := range props {
			p[k] = v
		}
		if session != "" {
			p["$session_id"] = session
		}
		text, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: name, DistinctID: who, Timestamp: at(ts), Properties: string(text)})
	}
	view := func(path, device, browser, os, referrer, country string) map[string]any {
		p := map[string]any{"$pathname": path, "$device_type": device, "$browser": browser, "$os": os, "$referring_domain": referrer}
		if country != "" {
			p["$geoip_country_code"] = country
		}
		return p
	}
	add("ada", "s1", "$pageview", "2026-11-02T09:00:00Z", view("/", "Desktop", "Chrome", "Mac OS X", "google.com", "DE"))
	add("ada", "s1", "$pageview", "2026-11-02T09:00:30Z", view("/pricing", "Desktop", "Chrome", "Mac OS X", "google.com", "DE"))
	add("ada", "s1", "$pageleave", "2026-11-02T09:01:00Z", map[string]any{"$pathname": "/pricing"})
	add("brian", "s2", "$pageview", "2026-11-03T10:00:00Z", view("/", "Mobile", "Safari", "iOS", "$direct", "US"))
	add("brian", "s2", "$pageleave", "2026-11-03T10:00:05Z", map[string]any{"$pathname": "/"})
	add("ada", "s3", "$pageview", "2026-11-04T12:00:00Z", view("/blog", "Desktop", "Firefox", "Windows", "news.ycombinator.com", ""))
	add("ada", "s3", "$pageleave", "2026-11-04T12:00:20Z", map[string]any{"$pathname": "/blog"})
	add("chen", "s4", "$pageview", "2026-11-05T08:00:00Z", view("/pricing", "Mobile", "Chrome", "Android", "$direct", "US"))
	add("chen", "s4", "$autocapture", "2026-11-05T08:00:03Z", map[string]any{})
	add("chen", "s4", "$pageleave", "2026-11-05T08:00:04Z", map[string]any{"$pathname": "/pricing"})
	add("dora", "s5", "$pageview", "2026-11-06T08:00:00Z", view("/", "Desktop", "Chrome", "Mac OS X", "google.com", "DE"))
	add("ada", "p1", "$pageview", "2026-10-28T09:00:00Z", view("/", "Desktop", "Chrome", "Mac OS X", "google.com", "DE"))
	add("ada", "p1", "$pageview", "2026-10-28T09:00:02Z", view("/about", "Desktop", "Chrome", "Mac OS X", "google.com", "DE"))
	add("gus", "p2", "$pageview", "2026-10-30T09:00:00Z", view("/", "Desktop", "Chrome", "Linux", "$direct", "FR"))
	add("hank", "pb", "$pageview", "2026-11-01T23:59:50Z", view("/", "Desktop", "Chrome", "Linux", "$direct", "FR"))
	add("hank", "pb", "$pageview", "2026-11-02T00:00:10Z", view("/docs", "Desktop", "Chrome", "Linux", "$direct", "FR"))
	add("eve", "", "$pageview", "2026-11-06T09:00:00Z", view("/", "Desktop", "Chrome", "Linux", "$direct", "FR"))
	add("frank", "s6", "$autocapture", "2026-11-06T10:00:00Z", map[string]any{})
	add("ivan", "s7", "$pageview", "2026-11-10T10:00:00Z", view("/", "Desktop", "Chrome", "Linux", "$direct", "FR"))
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
}

var webRange = DateRange{DateFrom: "2026-11-02", DateTo: "2026-11-08"}

// webNow is after the range and its day after.
var webNow = at("2026-11-20T00:00:00Z")

func TestWebOverview(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	webEvents(t, w)
	overview := func(wq WebOverviewQuery) map[string]WebOverviewItem {
		t.Helper()
		r, err := w.Queries().WebOverview(context.Background(), utc, wq, webNow)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) != 5 || wq.DateRange == webRange && (r.DateFrom != "2026-11-02T00:00:00Z" || r.DateTo != "2026-11-09T00:00:00Z") {
			t.Fatalf("got %+v", r)
		}
		items := map[string]WebOverviewItem{}
		for _, item := range r.Results {
			items[item.Key] = item
		}
		return items
	}
	type want struct {
		value, previous, change *float64
	}
	n := func(f float64) *float64 { return &f }
	check := func(what string, items map[string]WebOverviewItem, key, kind string, w want) {
		t.Helper()
		item := items[key]
		same := func(a, b *float64) bool {
			return a == nil && b == nil || a != nil && b != nil && math.Abs(*a-*b) < 1e-9
		}
		if item.Kind != kind || !same(item.Value, w.value) || !same(item.Previous, w.previous) || !same(item.ChangeFromPreviousPct, w.change) ||
			item.IsIncreaseBad != (key == "bounce rate") {
			show := func(f *float64) string {
				if f == nil {
					return "nil"
				}
				return fmt.Sprint(*f)
			}
			t.Errorf("%s: %s: %s value %s previous %s change %s, want %s %s %s", what, key, item.Kind,
				show(item.Value), show(item.Previous), show(item.ChangeFromPreviousPct), show(w.value), show(w.previous), show(w.change))
		}
	}
	// The range alone: ada, brian, chen, dora; 6 views in 5 sessions (hank's /docs is
	// his session's of Nov 1); durations 60, 5, 20, 4 and 0 s; s2 and s5 bounce.
	items := overview(WebOverviewQuery{DateRange: webRange})
	check("range", items, "visitors", "unit", want{n(4), nil, nil})
	check("range", items, "views", "unit", want{n(6), nil, nil})
	check("range", items, "sessions", "unit", want{n(5), nil, nil})
	check("range", items, "session duration", "duration_s", want{n(89.0 / 5), nil, nil})
	check("range", items, "bounce rate", "percentage", want{n(40), nil, nil})

	// Compared: the previous period has ada, gus and hank, 5 views in 3 sessions of 2,
	// 0 and 20 s, one bounce (p2).
	items = overview(WebOverviewQuery{DateRange: webRange, CompareFilter: &CompareFilter{Compare: true}})
	check("compared", items, "visitors", "unit", want{n(4), n(3), n(33)})
	check("compared", items, "views", "unit", want{n(6), n(5), n(20)})
	check("compared", items, "sessions", "unit", want{n(5), n(3), n(67)})
	check("compared", items, "session duration", "duration_s", want{n(17.8), n(22.0 / 3), n(143)})
	check("compared", items, "bounce rate", "percentage", want{n(40), n(100.0 / 3), n(20)})

	// Mobile views only: brian's and chen's sessions, of 5 and 4 s, brian's a bounce.
	items = overview(WebOverviewQuery{DateRange: webRange, Properties: []PropertyFilter{{Key: "$device_type", Value: "Mobile"}}})
	check("mobile", items, "visitors", "unit", want{n(2), nil, nil})
	check("mobile", items, "views", "unit", want{n(2), nil, nil})
	check("mobile", items, "sessions", "unit", want{n(2), nil, nil})
	check("mobile", items, "session duration", "duration_s", want{n(4.5), nil, nil})
	check("mobile", items, "bounce rate", "percentage", want{n(50), nil, nil})

	// A range without sessions: counts of 0, no averages; and a previous period of
	// none has no change.
	items = overview(WebOverviewQuery{DateRange: DateRange{DateFrom: "2026-11-15", DateTo: "2026-11-16"}, CompareFilter: &CompareFilter{Compare: true}})
	check("empty", items, "visitors", "unit", want{n(0), n(0), nil})
	check("empty", items, "session duration", "duration_s", want{nil, nil, nil})
	check("empty", items, "bounce rate", "percentage", want{nil, nil, nil})

	var refused *QueryError
	if _, err := w.Queries().WebOverview(context.Background(), utc, WebOverviewQuery{DateRange: DateRange{DateFrom: "yesterday"}}, webNow); !errors.As(err, &refused) {
		t.Fatalf("a bad date: %v, want a QueryError", err)
	}
	if _, err := w.Queries().WebOverview(context.Background(), utc, WebOverviewQuery{Properties: []PropertyFilter{{Key: "$entry_pathname", Type: "session", Value: "/"}}}, webNow); !errors.As(err, &refused) {
		t.Fatalf("a session property filter: %v, want a QueryError", err)
	}
}

func TestWebStatsTable(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	webEvents(t, w)
	table := func(wq WebStatsTableQuery) *WebStatsTableResult {
		t.Helper()
		wq.DateRange = webRange
		r, err := w.Queries().WebStatsTable(context.Background(), utc, wq, webNow)
		if err != nil {
			t.Fatalf("%s: %v", wq.BreakdownBy, err)
		}
		return r
	}
	rows := func(r *WebStatsTableResult) string {
		text, _ := json.Marshal(r.Results)
		return string(text)
	}
	f := func(wq WebStatsTableQuery, want string) {
		t.Helper()
		if got := rows(table(wq)); got != want {
			t.Errorf("%s (bounce %v, compare %v):\n got %s\nwant %s", wq.BreakdownBy, wq.IncludeBounceRate, wq.CompareFilter != nil, got, want)
		}
	}
	compare := &CompareFilter{Compare: true}
	// Pages: / seen by ada, brian and dora; /pricing by ada and chen; /blog by ada. A
	// page's bounce rate is its entrants': / by s1, s2 (a bounce) and s5 (a bounce);
	// before, by p1, p2 (a bounce) and pb. /about and /docs are the previous period's only.
	f(WebStatsTableQuery{BreakdownBy: "Page", IncludeBounceRate: true, CompareFilter: compare},
		`[["/",[3,3],[3,3],[0.6666666666666666,0.3333333333333333]],["/pricing",[2,0],[2,0],[0,null]],["/blog",[1,0],[1,0],[0,null]]]`)
	f(WebStatsTableQuery{BreakdownBy: "Page"}, `[["/",[3,null],[3,null]],["/pricing",[2,null],[2,null]],["/blog",[1,null],[1,null]]]`)
	// Entry pages: s1, s2, s5 on /, with s1's two views; ties by name.
	f(WebStatsTableQuery{BreakdownBy: "InitialPage", IncludeBounceRate: true},
		`[["/",[3,null],[4,null],[0.6666666666666666,null]],["/blog",[1,null],[1,null],[0,null]],["/pricing",[1,null],[1,null],[0,null]]]`)
	// Exit pages: s1 and s4 on /pricing, s2 and s5 on /.
	f(WebStatsTableQuery{BreakdownBy: "ExitPage"}, `[["/pricing",[2,null],[3,null]],["/",[2,null],[2,null]],["/blog",[1,null],[1,null]]]`)
	f(WebStatsTableQuery{BreakdownBy: "InitialReferringDomain"},
		`[["google.com",[2,null],[3,null]],["$direct",[2,null],[2,null]],["news.ycombinator.com",[1,null],[1,null]]]`)
	f(WebStatsTableQuery{BreakdownBy: "DeviceType"}, `[["Desktop",[2,null],[4,null]],["Mobile",[2,null],[2,null]]]`)
	f(WebStatsTableQuery{BreakdownBy: "Browser"}, `[["Chrome",[3,null],[4,null]],["Firefox",[1,null],[1,null]],["Safari",[1,null],[1,null]]]`)
	f(WebStatsTableQuery{BreakdownBy: "OS"}, `[["Mac OS X",[2,null],[3,null]],["Android",[1,null],[1,null]],["Windows",[1,null],[1,null]],["iOS",[1,null],[1,null]]]`)
	// Countries: s3's view has none, and is left out.
	f(WebStatsTableQuery{BreakdownBy: "Country"}, `[["DE",[2,null],[3,null]],["US",[2,null],[2,null]]]`)
	// Filtered to desktop views, ordered by views ascending.
	f(WebStatsTableQuery{BreakdownBy: "Browser", Properties: []PropertyFilter{{Key: "$device_type", Value: "Desktop"}}, OrderBy: []string{"Views", "ASC"}},
		`[["Firefox",[1,null],[1,null]],["Chrome",[2,null],[3,null]]]`)
	f(WebStatsTableQuery{BreakdownBy: "Page", IncludeBounceRate: true, OrderBy: []string{"BounceRate", "DESC"}},
		`[["/",[3,null],[3,null],[0.6666666666666666,null]],["/pricing",[2,null],[2,null],[0,null]],["/blog",[1,null],[1,null],[0,null]]]`)

	// Pages of two rows: the first two, and there are more; then from the third.
	r := table(WebStatsTableQuery{BreakdownBy: "Page", Limit: 2})
	if rows(r) != `[["/",[3,null],[3,null]],["/pricing",[2,null],[2,null]]]` || !r.HasMore || r.Limit != 2 || r.Offset != 0 ||
		fmt.Sprint(r.Columns) != "[context.columns.breakdown_value context.columns.visitors context.columns.views]" {
		t.Errorf("limit 2: %+v", r)
	}
	r = table(WebStatsTableQuery{BreakdownBy: "Page", Limit: 2, Offset: 2})
	if rows(r) != `[["/blog",[1,null],[1,null]]]` || r.HasMore {
		t.Errorf("offset 2: %+v", r)
	}
	if r = table(WebStatsTableQuery{BreakdownBy: "Page", IncludeBounceRate: true}); r.Columns[3] != "context.columns.bounce_rate" || r.Limit != DefaultWebStatsLimit {
		t.Errorf("columns: %+v", r)
	}

	for _, wq := range []WebStatsTableQuery{
		{BreakdownBy: "Planet"},
		{},
		{BreakdownBy: "Page", Limit: -1},
		{BreakdownBy: "Page", Limit: MaxWebStatsLimit + 1},
		{BreakdownBy: "Page", Offset: -1},
		{BreakdownBy: "Page", OrderBy: []string{"BounceRate", "DESC"}},
		{BreakdownBy: "Page", OrderBy: []string{"Visitors", "UP"}},
		{BreakdownBy: "Page", OrderBy: []string{"Visitors"}},
		{BreakdownBy: "Page", Properties: []PropertyFilter{{Key: "$browser", Operator: "near"}}},
	} {
		var refused *QueryError
		if _, err := w.Queries().WebStatsTable(context.Background(), utc, wq, webNow); !errors.As(err, &refused) {
			t.Errorf("%+v: %v, want a QueryError", wq, err)
		}
	}
}

// The tables and the overview agree: the views of the pages add up to the overview's
// when every view has a page.
func TestWebTotals(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	webEvents(t, w)
	o, err := w.Queries().WebOverview(context.Background(), utc, WebOverviewQuery{DateRange: webRange}, webNow)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := w.Queries().WebStatsTable(context.Background(), utc, WebStatsTableQuery{BreakdownBy: "Page", DateRange: webRange}, webNow)
	if err != nil {
		t.Fatal(err)
	}
	var views float64
	for _, row := range pages.Results {
		views += row[2].([]any)[0].(float64)
	}
	if views != *o.Results[1].Value {
		t.Fatalf("pages' views %v, overview's %v", views, *o.Results[1].Value)
	}
}

// Exit pages, the UTM tables and property filters, counted by hand over sessions of
// several views in the range of webRange (plan is the person property each person has):
//
//	x1 amy (pro)  Nov 3  /a, /b, /c, then a $pageleave: exits on /c; utm newsletter/email/launch
//	              on its first view (twitter on its second, which does not count)
//	x2 ben (free) Nov 4  /a, /b, then an $autocapture: its last event is no view, it exits on /b;
//	              utm twitter/social/launch
//	x3 cat (pro)  Nov 5  /b alone (a bounce): exits on /b; no utm
//	x4 amy        Nov 6  /c, /a: exits on /a; utm newsletter/email/spring
//
// and project 2's amy, whose session is also called x1 (/a then /z, utm newsletter),
// which project 1 never counts.
func TestWebExitPagesAndFilters(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	add := func(team int64, who, session, name, ts, set string, props map[string]any) {
		p := map[string]any{"$session_id": session}
		for k, v := range props {
			p[k] = v
		}
		text, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: team, Name: name, DistinctID: who, Timestamp: at(ts), Properties: string(text), Set: set})
	}
	view := func(path string, utm ...string) map[string]any {
		p := map[string]any{"$pathname": path}
		for k, key := range []string{"utm_source", "utm_medium", "utm_campaign"} {
			if k < len(utm) {
				p[key] = utm[k]
			}
		}
		return p
	}
	add(1, "amy", "x1", "$pageview", "2026-11-03T10:00:00Z", `{"plan":"pro"}`, view("/a", "newsletter", "email", "launch"))
	add(1, "amy", "x1", "$pageview", "2026-11-03T10:00:10Z", "", view("/b", "twitter"))
	add(1, "amy", "x1", "$pageview", "2026-11-03T10:00:20Z", "", view("/c"))
	add(1, "amy", "x1", "$pageleave", "2026-11-03T10:02:00Z", "", view("/c"))
	add(1, "ben", "x2", "$pageview", "2026-11-04T10:00:00Z", `{"plan":"free"}`, view("/a", "twitter", "social", "launch"))
	add(1, "ben", "x2", "$pageview", "2026-11-04T10:00:30Z", "", view("/b"))
	add(1, "ben", "x2", "$autocapture", "2026-11-04T10:00:40Z", "", view("/b"))
	add(1, "cat", "x3", "$pageview", "2026-11-05T10:00:00Z", `{"plan":"pro"}`, view("/b"))
	add(1, "amy", "x4", "$pageview", "2026-11-06T10:00:00Z", "", view("/c", "newsletter", "email", "spring"))
	add(1, "amy", "x4", "$pageview", "2026-11-06T10:00:05Z", "", view("/a"))
	add(2, "amy", "x1", "$pageview", "2026-11-03T11:00:00Z", `{"plan":"pro"}`, view("/a", "newsletter", "email", "launch"))
	add(2, "amy", "x1", "$pageview", "2026-11-03T11:00:10Z", "", view("/z"))
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	other := Scope{Team: 2, Timezone: "UTC", WeekStartDay: 1}
	f := func(scope Scope, wq WebStatsTableQuery, want string) {
		t.Helper()
		wq.DateRange = webRange
		r, err := w.Queries().WebStatsTable(context.Background(), scope, wq, webNow)
		if err != nil {
			t.Fatalf("%s: %v", wq.BreakdownBy, err)
		}
		if got, _ := json.Marshal(r.Results); string(got) != want {
			t.Errorf("%s %+v (project %d):\n got %s\nwant %s", wq.BreakdownBy, wq.Properties, scope.Team, got, want)
		}
	}
	overview := func(scope Scope, properties []PropertyFilter, want string) {
		t.Helper()
		r, err := w.Queries().WebOverview(context.Background(), scope, WebOverviewQuery{DateRange: webRange, Properties: properties}, webNow)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, item := range r.Results[:3] {
			got = append(got, fmt.Sprintf("%s %v", item.Key, *item.Value))
		}
		if fmt.Sprint(got) != want {
			t.Errorf("overview %+v (project %d): %v, want %s", properties, scope.Team, got, want)
		}
	}

	// Exit pages: /b by x2 and x3 (2 and 1 views), /c by x1 (3 views), /a by x4 (2);
	// of those only x3 bounces.
	f(utc, WebStatsTableQuery{BreakdownBy: "ExitPage", IncludeBounceRate: true},
		`[["/b",[2,null],[3,null],[0.5,null]],["/c",[1,null],[3,null],[0,null]],["/a",[1,null],[2,null],[0,null]]]`)
	// The UTM tables, by each session's first view; x3 has none and is left out.
	f(utc, WebStatsTableQuery{BreakdownBy: "InitialUTMSource"}, `[["newsletter",[1,null],[5,null]],["twitter",[1,null],[2,null]]]`)
	f(utc, WebStatsTableQuery{BreakdownBy: "InitialUTMMedium"}, `[["email",[1,null],[5,null]],["social",[1,null],[2,null]]]`)
	f(utc, WebStatsTableQuery{BreakdownBy: "InitialUTMCampaign"}, `[["launch",[2,null],[5,null]],["spring",[1,null],[2,null]]]`)
	f(utc, WebStatsTableQuery{BreakdownBy: "InitialUTMTerm"}, `[]`)
	overview(utc, nil, "[visitors 3 views 8 sessions 4]")

	// A person property: the pro persons' sessions x1, x3 and x4 (amy's and cat's).
	pro := []PropertyFilter{{Key: "plan", Value: "pro", Type: "person"}}
	f(utc, WebStatsTableQuery{BreakdownBy: "ExitPage", Properties: pro}, `[["/c",[1,null],[3,null]],["/a",[1,null],[2,null]],["/b",[1,null],[1,null]]]`)
	f(utc, WebStatsTableQuery{BreakdownBy: "InitialUTMCampaign", Properties: pro}, `[["launch",[1,null],[3,null]],["spring",[1,null],[2,null]]]`)
	overview(utc, pro, "[visitors 2 views 6 sessions 3]")
	// An event property, as a click on the page /b filters: its views alone count, in
	// the sessions that have one; their exit pages stay the sessions' own.
	page := []PropertyFilter{{Key: "$pathname", Value: "/b", Operator: "exact", Type: "event"}}
	f(utc, WebStatsTableQuery{BreakdownBy: "ExitPage", Properties: page}, `[["/b",[2,null],[2,null]],["/c",[1,null],[1,null]]]`)
	f(utc, WebStatsTableQuery{BreakdownBy: "Page", Properties: page}, `[["/b",[3,null],[3,null]]]`)
	overview(utc, page, "[visitors 3 views 3 sessions 3]")
	// Both: x1's and x3's views of /b.
	overview(utc, append(pro, page...), "[visitors 2 views 2 sessions 2]")

	// Project 2 sees its own x1 alone, which exits on /z.
	f(other, WebStatsTableQuery{BreakdownBy: "ExitPage"}, `[["/z",[1,null],[2,null]]]`)
	f(other, WebStatsTableQuery{BreakdownBy: "InitialUTMSource", Properties: pro}, `[["newsletter",[1,null],[2,null]]]`)
	overview(other, nil, "[visitors 1 views 2 sessions 1]")
}
