package admin

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

// Web analytics through the query API, in PostHog's shapes (the warehouse's tests count
// the figures by hand over more sessions): two sessions of yesterday, alice's of two
// views over 30 s from google.com and bob's single view from nowhere (a bounce), and
// one of the day before, alice's bounce; the refusals are 400s in the flat shape.
func TestQueryAPIWebAnalytics(t *testing.T) {
	env := newTestEnv(t, "")
	yesterday := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1).Add(10 * time.Hour)
	before := yesterday.AddDate(0, 0, -1)
	view := func(id, session, path, referrer string, at time.Time) warehouse.Event {
		return warehouse.Event{Name: "$pageview", DistinctID: id, Timestamp: at,
			Properties: fmt.Sprintf(`{"$session_id":%q,"$pathname":%q,"$referring_domain":%q,"$device_type":"Desktop"}`, session, path, referrer)}
	}
	env.ingest(t,
		view("alice", "a1", "/", "google.com", yesterday), view("alice", "a1", "/pricing", "google.com", yesterday.Add(30*time.Second)),
		view("bob", "b1", "/", "$direct", yesterday.Add(time.Hour)),
		view("alice", "a0", "/", "$direct", before),
	)
	query := func(body string) (int, map[string]any, string) {
		t.Helper()
		return env.call(t, "POST", env.project+"/query/", env.owner, `{"query": `+body+`}`)
	}
	// The range is yesterday alone, and the period compared is the day before.
	dates := fmt.Sprintf(`"dateRange": {"date_from": %q, "date_to": %q}`, yesterday.Format(time.DateOnly), yesterday.Format(time.DateOnly))
	status, out, text := query(`{"kind": "WebOverviewQuery", ` + dates + `, "properties": [], "compareFilter": {"compare": true}}`)
	if status != 200 {
		t.Fatalf("WebOverviewQuery: %d %s", status, text)
	}
	var items []string
	for _, item := range out["results"].([]any) {
		i := item.(map[string]any)
		items = append(items, fmt.Sprintf("%v %v %v %v %v", i["key"], i["kind"], i["value"], i["previous"], i["changeFromPreviousPct"]))
	}
	want := []string{"visitors unit 2 1 100", "views unit 3 1 200", "sessions unit 2 1 100",
		"session duration duration_s 15 0 <nil>", "bounce rate percentage 50 100 -50"}
	if fmt.Sprint(items) != fmt.Sprint(want) || out["dateFrom"] != yesterday.Truncate(24*time.Hour).Format(time.RFC3339) {
		t.Fatalf("WebOverviewQuery:\n got %v\nwant %v\n%s", items, want, text)
	}

	status, out, text = query(`{"kind": "WebStatsTableQuery", "breakdownBy": "Page", "includeBounceRate": true, ` + dates + `, "properties": [], "limit": 1}`)
	if status != 200 {
		t.Fatalf("WebStatsTableQuery: %d %s", status, text)
	}
	results, _ := json.Marshal(out["results"])
	if string(results) != `[["/",[2,null],[2,null],[0.5,null]]]` || out["hasMore"] != true || out["limit"] != 1.0 ||
		fmt.Sprint(out["columns"]) != "[context.columns.breakdown_value context.columns.visitors context.columns.views context.columns.bounce_rate]" {
		t.Fatalf("WebStatsTableQuery by page: %s", text)
	}
	status, out, text = query(`{"kind": "WebStatsTableQuery", "breakdownBy": "InitialReferringDomain", ` + dates + `}`)
	if results, _ := json.Marshal(out["results"]); status != 200 || string(results) != `[["google.com",[1,null],[2,null]],["$direct",[1,null],[1,null]]]` {
		t.Fatalf("WebStatsTableQuery by referrer: %d %s", status, text)
	}

	for _, c := range []struct{ body, attr, detail string }{
		{`{"kind": "WebStatsTableQuery", "breakdownBy": "Planet"}`, "query", "breakdownBy must be Page, InitialPage"},
		{`{"kind": "WebStatsTableQuery", "breakdownBy": "Page", "limit": 100000}`, "query", "limit must be between 1 and 10000"},
		{`{"kind": "WebStatsTableQuery", "breakdownBy": "Page", "orderBy": ["BounceRate", "DESC"]}`, "query", "orderBy BounceRate needs includeBounceRate"},
		{`{"kind": "WebStatsTableQuery", "breakdownBy": "Page", "limit": "all"}`, "query__limit", "valid integer"},
		{`{"kind": "WebOverviewQuery", "dateRange": {"date_from": "soon"}}`, "query", "is not a date"},
		{`{"kind": "WebOverviewQuery", "properties": [{"key": "$entry_pathname", "type": "session", "value": "/"}]}`, "query", "property filters of type \"session\""},
		{`{"kind": "WebOverviewQuery", "compareFilter": {"compare": "yes"}}`, "query__compareFilter__compare", "valid boolean"},
	} {
		status, out, text := query(c.body)
		if status != 400 || out["type"] != "validation_error" || out["attr"] != c.attr || !strings.Contains(fmt.Sprint(out["detail"]), c.detail) {
			t.Errorf("%s: %d %s, want 400 on %s saying %q", c.body, status, text, c.attr, c.detail)
		}
	}
}

// A card of Web analytics saved as an insight on a dashboard, as the web screen saves
// it: its result is the query's, in the query API's shape; the dashboard's date range
// and property filters change its answer as they change a trend's, and ?refresh=
// computes it afresh. alice's session of yesterday exits on /pricing after two views;
// bob's of twenty days ago on /docs after one.
func TestQueryAPIWebInsights(t *testing.T) {
	env := newTestEnv(t, "")
	now := time.Now().UTC()
	view := func(id, session, path, browser string, at time.Time) warehouse.Event {
		return warehouse.Event{Name: "$pageview", DistinctID: id, Timestamp: at,
			Properties: fmt.Sprintf(`{"$session_id":%q,"$pathname":%q,"$browser":%q}`, session, path, browser)}
	}
	env.ingest(t,
		view("alice", "a1", "/", "Chrome", now.Add(-24*time.Hour)), view("alice", "a1", "/pricing", "Chrome", now.Add(-24*time.Hour+10*time.Second)),
		view("bob", "b1", "/docs", "Firefox", now.Add(-20*24*time.Hour)),
	)
	dashboard, _ := env.dashboard(t, `{"name": "Web"}`)
	exits := env.must(t, 201, "POST", env.project+"/insights/", env.owner, fmt.Sprintf(`{"name": "Exit pages", "dashboards": [%d],
		"query": {"kind": "WebStatsTableQuery", "breakdownBy": "ExitPage", "dateRange": {"date_from": "-7d"}, "properties": [], "limit": 10}}`, dashboard))
	if results, _ := json.Marshal(exits["result"].(map[string]any)["results"]); string(results) != `[["/pricing",[1,null],[2,null]]]` {
		t.Fatalf("the saved exit pages: %s", results)
	}
	env.must(t, 201, "POST", env.project+"/insights/", env.owner, fmt.Sprintf(`{"name": "Overview", "dashboards": [%d],
		"query": {"kind": "WebOverviewQuery", "dateRange": {"date_from": "-7d"}, "properties": [], "compareFilter": {"compare": true}}}`, dashboard))

	// tiles is each tile's insight name and its figures: the exit pages' rows, the
	// overview's visitors, views and sessions.
	tiles := func(rest string) string {
		t.Helper()
		d := env.must(t, 200, "GET", env.dashPath(dashboard, rest), env.owner, "")
		var out []string
		for _, tile := range d["tiles"].([]any) {
			insight := tile.(map[string]any)["insight"].(map[string]any)
			if insight["query_error"] != nil {
				t.Fatalf("%s: %v", insight["name"], insight["query_error"])
			}
			result := insight["result"].(map[string]any)
			switch insight["name"] {
			case "Exit pages":
				rows, _ := json.Marshal(result["results"])
				out = append(out, "exits "+string(rows))
			case "Overview":
				var items []string
				for _, item := range result["results"].([]any)[:3] {
					items = append(items, fmt.Sprint(item.(map[string]any)["value"]))
				}
				out = append(out, "overview "+strings.Join(items, " "))
			}
		}
		slices.Sort(out)
		return strings.Join(out, "; ")
	}
	if got, want := tiles(""), `exits [["/pricing",[1,null],[2,null]]]; overview 1 2 1`; got != want {
		t.Fatalf("the dashboard: %s, want %s", got, want)
	}
	// The dashboard's range, saved: the last 30 days hold bob's session too.
	env.must(t, 200, "PATCH", env.dashPath(dashboard, ""), env.owner, `{"filters": {"date_from": "-30d"}}`)
	if got, want := tiles(""), `exits [["/pricing",[1,null],[2,null]],["/docs",[1,null],[1,null]]]; overview 2 3 2`; got != want {
		t.Fatalf("the dashboard over 30 days: %s, want %s", got, want)
	}
	// And a viewer's property filter over it: Firefox views alone.
	override := url.QueryEscape(`{"properties": [{"key": "$browser", "value": "Firefox", "operator": "exact", "type": "event"}]}`)
	if got, want := tiles("?filters_override="+override), `exits [["/docs",[1,null],[1,null]]]; overview 1 1 1`; got != want {
		t.Fatalf("the dashboard's Firefox views: %s, want %s", got, want)
	}

	// The insight alone keeps its own range, served from the cache; ?refresh=true
	// computes it afresh all the same, and new events make it stale.
	id := int64(exits["id"].(float64))
	if got := env.must(t, 200, "GET", env.insightPath(id), env.owner, ""); got["is_cached"] != true || len(got["result"].(map[string]any)["results"].([]any)) != 1 {
		t.Fatalf("the insight read again: cached %v, %v", got["is_cached"], got["result"])
	}
	if got := env.must(t, 200, "GET", env.insightPath(id)+"?refresh=true", env.owner, ""); got["is_cached"] != false {
		t.Fatalf("the insight refreshed: cached %v", got["is_cached"])
	}
	env.ingest(t, view("carol", "c1", "/blog", "Safari", now.Add(-time.Hour)))
	got := env.must(t, 200, "GET", env.insightPath(id), env.owner, "")
	if rows, _ := json.Marshal(got["result"].(map[string]any)["results"]); got["is_cached"] != false || string(rows) != `[["/pricing",[1,null],[2,null]],["/blog",[1,null],[1,null]]]` {
		t.Fatalf("the insight after an event: cached %v, %s", got["is_cached"], rows)
	}
}
