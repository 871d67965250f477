package admin

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

// Filters change a query as PostHog's dashboards do: date ends replace the query's,
// properties add to its own, later layers win, and HogQL is left alone.
func TestDashboardFiltersApply(t *testing.T) {
	f := func(query string, layers []string, want string) {
		t.Helper()
		raw := make([]rawJSON, len(layers))
		for i, l := range layers {
			raw[i] = rawJSON(l)
		}
		filters, err := mergeFilters("filters", raw...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := filters.apply(rawJSON(query))
		if err != nil || string(got) != want {
			t.Fatalf("%s under %v:\n got %s (%v)\nwant %s", query, layers, got, err, want)
		}
	}
	trends := `{"kind":"TrendsQuery","series":[],"dateRange":{"date_from":"-7d","date_to":"-1d"},"properties":[{"key":"a","value":"1"}]}`
	f(trends, nil, trends)
	f(trends, []string{`{}`, `null`}, trends)
	f(trends, []string{`{"date_from":"-30d"}`},
		`{"dateRange":{"date_from":"-30d","date_to":"-1d"},"kind":"TrendsQuery","properties":[{"key":"a","value":"1"}],"series":[]}`)
	f(trends, []string{`{"properties":[{"key":"b","value":"2"}]}`},
		`{"dateRange":{"date_from":"-7d","date_to":"-1d"},"kind":"TrendsQuery","properties":[{"key":"a","value":"1"},{"key":"b","value":"2"}],"series":[]}`)
	// The dashboard's, then the tile's, then the request's: later ones win.
	f(`{"kind":"FunnelsQuery","series":[]}`, []string{`{"date_from":"-30d","properties":[{"key":"b"}]}`, `{"date_to":"-2d"}`, `{"date_from":"-90d","properties":[]}`},
		`{"dateRange":{"date_from":"-90d","date_to":"-2d"},"kind":"FunnelsQuery","series":[]}`)
	f(`{"kind":"InsightVizNode","source":{"kind":"TrendsQuery","series":[]}}`, []string{`{"date_from":"-1d","properties":[{"key":"b"}]}`},
		`{"kind":"InsightVizNode","source":{"dateRange":{"date_from":"-1d"},"kind":"TrendsQuery","properties":[{"key":"b"}],"series":[]}}`)
	f(`{"kind":"DataTableNode","source":{"kind":"EventsQuery","select":["*"]}}`, []string{`{"date_from":"-1d","date_to":"-1h"}`},
		`{"kind":"DataTableNode","source":{"after":"-1d","before":"-1h","kind":"EventsQuery","select":["*"]}}`)
	f(`{"kind":"TrendsQuery","properties":{"type":"OR","values":[]}}`, []string{`{"properties":[{"key":"b"}]}`},
		`{"kind":"TrendsQuery","properties":{"type":"AND","values":[{"type":"OR","values":[]},{"type":"AND","values":[{"key":"b"}]}]}}`)
	// A card of Web analytics: its range and its list of filters, as a trend's.
	f(`{"kind":"WebStatsTableQuery","breakdownBy":"ExitPage","dateRange":{"date_from":"-7d"},"properties":[{"key":"a","value":"1"}]}`,
		[]string{`{"date_from":"-30d","properties":[{"key":"b","value":"2"}]}`},
		`{"breakdownBy":"ExitPage","dateRange":{"date_from":"-30d"},"kind":"WebStatsTableQuery","properties":[{"key":"a","value":"1"},{"key":"b","value":"2"}]}`)
	f(`{"kind":"WebOverviewQuery","compareFilter":{"compare":true}}`, []string{`{"date_to":"-1d"}`},
		`{"compareFilter":{"compare":true},"dateRange":{"date_to":"-1d"},"kind":"WebOverviewQuery"}`)
	hogql := `{"kind":"HogQLQuery","query":"SELECT 1"}`
	f(hogql, []string{`{"date_from":"-1d"}`}, hogql)
	if _, err := mergeFilters("filters_override", rawJSON(`[1]`)); err == nil {
		t.Fatal("a list of filters was taken")
	}
}

// A dashboard's filters, a tile's overrides and ?filters_override= apply to its tiles'
// results, each computed and cached for the query it ends up as; the insight itself is
// unchanged.
func TestDashboardFilters(t *testing.T) {
	env := newTestEnv(t, "")
	now := time.Now().UTC()
	var events []warehouse.Event
	for i, e := range []struct {
		browser string
		daysAgo int
	}{{"Chrome", 1}, {"Chrome", 2}, {"Firefox", 2}, {"Chrome", 20}, {"Firefox", 20}, {"Firefox", 25}} {
		events = append(events, warehouse.Event{Name: "$pageview", DistinctID: fmt.Sprint("u", i),
			Timestamp: now.AddDate(0, 0, -e.daysAgo), Properties: fmt.Sprintf(`{"$browser":%q}`, e.browser)})
	}
	env.ingest(t, events...)
	dashboard, _ := env.dashboard(t, `{"name": "Browsers", "filters": {"properties": [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}]}}`)
	env.must(t, 201, "POST", env.project+"/insights/", env.owner, fmt.Sprintf(`{"name": "Views", "dashboards": [%d],
		"query": {"kind": "InsightVizNode", "source": {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}],
		"dateRange": {"date_from": "-7d"}, "interval": "month"}}}`, dashboard))
	total := func(path string) (float64, string) {
		t.Helper()
		d := env.must(t, 200, "GET", path, env.owner, "")
		insight := d["tiles"].([]any)[0].(map[string]any)["insight"].(map[string]any)
		if insight["query_error"] != nil {
			t.Fatalf("%s: %v", path, insight["query_error"])
		}
		var sum float64
		for _, line := range insight["result"].(map[string]any)["results"].([]any) {
			sum += line.(map[string]any)["count"].(float64)
		}
		return sum, mustText(t, insight["query"])
	}
	path := env.dashPath(dashboard, "")
	if n, query := total(path); n != 2 || query != `{"kind":"InsightVizNode","source":{"dateRange":{"date_from":"-7d"},"interval":"month","kind":"TrendsQuery","series":[{"event":"$pageview","kind":"EventsNode"}]}}` {
		t.Fatalf("the dashboard's Chrome views of the last week: %v (the insight's own query shown: %s)", n, query)
	}
	override := url.QueryEscape(`{"date_from": "-30d"}`)
	if n, _ := total(path + "?filters_override=" + override); n != 3 {
		t.Fatalf("Chrome views of the last 30 days: %v, want 3", n)
	}
	override = url.QueryEscape(`{"date_from": "-30d", "properties": []}`)
	if n, _ := total(path + "?filters_override=" + override); n != 6 {
		t.Fatalf("all views of the last 30 days: %v, want 6", n)
	}
	env.run(t, []scenario{env.refused("an override that is not an object", "GET", path+"?filters_override=%5B1%5D", "", "filters_override",
		"invalid_input", "Filters must be a dictionary with date_from, date_to and a list of properties.")})
	// The insight alone has no dashboard's filters.
	id := env.must(t, 200, "GET", env.project+"/insights/?limit=1", env.owner, "")["results"].([]any)[0].(map[string]any)["id"].(float64)
	insight := env.must(t, 200, "GET", env.insightPath(int64(id)), env.owner, "")
	var sum float64
	for _, line := range insight["result"].(map[string]any)["results"].([]any) {
		sum += line.(map[string]any)["count"].(float64)
	}
	if sum != 3 {
		t.Fatalf("the insight's own views of the last week: %v, want 3", sum)
	}
}
