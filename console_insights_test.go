package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// trendsAnswer is the part of a TrendsQuery's answer the tests compare.
type trendsAnswer struct {
	Results []struct {
		BreakdownValue any       `json:"breakdown_value"`
		Data           []float64 `json:"data"`
		Days           []string  `json:"days"`
		Count          float64   `json:"count"`
		// AggregatedValue is a total's (a display of one value per line).
		AggregatedValue *float64 `json:"aggregated_value"`
	} `json:"results"`
}

// The trends builder: $pageview broken down by $browser draws one line per browser
// of the seed, with the numbers hedge computes; the display, a legend button and the
// table toggle work; the query lives in the URL; the insight is saved, listed,
// reopened by short id, renamed and put on a dashboard; a date hedge refuses shows
// hedge's reason under the date field; and the keyboard alone builds a breakdown.
func TestConsoleInsightTrends(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	project := c.boot.ProjectID
	c.visit(fmt.Sprintf("/project/%d/insights/new", project))
	c.waitText(".insight-result .legend", "$pageview")
	// The event suggestions come from HogQL over the seed, most frequent first, then
	// by name: signed_up and purchase happened once each.
	c.run(chromedp.Poll[chromedp.Void](`document.querySelectorAll('#event-names option').length === 3`, chromedp.WithPollingTimeout(10*time.Second)))
	if got := eval[[]string](c, `[...document.querySelectorAll('#event-names option')].map(o => o.value)`); !reflect.DeepEqual(got, []string{"$pageview", "purchase", "signed_up"}) {
		t.Errorf("the event suggestions are %q", got)
	}

	// Only the keyboard: Tab to the breakdown, type the property, Enter applies it.
	c.tabTo("input|field-breakdown")
	c.key("$browser\r")
	c.waitText(".insight-result .legend", "Safari")
	labels := eval[[]string](c, `[...document.querySelectorAll('.insight-result .legend-item')].map(b => b.firstChild.nextSibling.textContent.trim())`)
	if !reflect.DeepEqual(labels, []string{"Chrome", "Firefox", "Safari"}) {
		t.Fatalf("the breakdown draws %q, want one line per browser", labels)
	}

	// The numbers are hedge's: the table toggle shows each browser's counts per day.
	var want trendsAnswer
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/query/", project), map[string]any{"query": map[string]any{
		"kind": "TrendsQuery", "series": []any{map[string]any{"event": "$pageview", "math": "total"}}, "interval": "day",
		"dateRange": map[string]any{"date_from": "-7d"}, "breakdownFilter": map[string]any{"breakdown": "$browser", "breakdown_type": "event"},
	}}, &want)
	if len(want.Results) != 3 || want.Results[0].Count != 13 {
		t.Fatalf("the query API answers %+v", want)
	}
	c.run(chromedp.Click(chromedp.CSS(`.insight-result .chart-buttons button[aria-pressed]`)))
	rows := eval[[][]string](c, `[...document.querySelectorAll('.insight-result table tbody tr')].map(r => [...r.children].map(x => x.innerText))`)
	if len(rows) != len(want.Results[0].Days) {
		t.Fatalf("the table has %d rows, want %d days", len(rows), len(want.Results[0].Days))
	}
	for j, row := range rows {
		if row[0] != want.Results[0].Days[j] {
			t.Errorf("row %d is dated %s, want %s", j, row[0], want.Results[0].Days[j])
		}
		for i, line := range want.Results {
			if got, w := row[i+1], fmt.Sprint(line.Data[j]); got != w {
				t.Errorf("%v on %s: the table shows %s, the API %s", line.BreakdownValue, row[0], got, w)
			}
		}
	}
	c.run(chromedp.Click(chromedp.CSS(`.insight-result .chart-buttons button[aria-pressed]`)))
	c.waitText(".insight-result .chart-tools", "Show table")

	// A legend button hides its series and says so.
	c.run(chromedp.Click(chromedp.CSS(`.insight-result .legend li:first-child button`)))
	if got := eval[string](c, `document.querySelector('.insight-result .legend li:first-child button').getAttribute('aria-pressed')`); got != "false" {
		t.Errorf("the hidden series' legend button is aria-pressed=%s", got)
	}
	if got := c.text(".insight-result [role=status]"); !strings.Contains(got, "UTC") {
		t.Errorf("the result does not name the project's time zone: %q", got)
	}
	c.checkScreen("insight")

	// The unsaved query is in the URL: opening the link draws the same breakdown.
	link := eval[string](c, `location.href`)
	if q, _ := url.Parse(link); !strings.Contains(q.Query().Get("q"), `"breakdown":"$browser"`) {
		t.Errorf("the URL does not hold the breakdown: %s", link)
	}
	c.run(chromedp.Navigate(link))
	c.waitText(".insight-result .legend", "Safari")

	// Displays: bars, then save; the display is saved in trendsFilter.display.
	c.fill("#field-display", "ActionsBar")
	c.fill("#field-name", "Browser split of pageviews")
	c.run(chromedp.Click(chromedp.CSS(`.save-bar button[type=submit]`)))
	c.run(chromedp.Poll[chromedp.Void](`location.pathname.match(/\/insights\/[A-Za-z0-9]{8,9}$/) !== null`, chromedp.WithPollingTimeout(10*time.Second)))
	shortID := eval[string](c, `location.pathname.split('/').pop()`)
	insight := c.insightByShortID(shortID)
	if insight.Name != "Browser split of pageviews" || insight.Query.Source.TrendsFilter.Display != "ActionsBar" ||
		insight.Query.Kind != "InsightVizNode" || insight.Query.Source.BreakdownFilter.Breakdown != "$browser" {
		t.Fatalf("the saved insight is %+v", insight)
	}

	// The list finds it by name and opens it by short id, as it was saved.
	c.visit(fmt.Sprintf("/project/%d/insights", project))
	c.waitText("main table", "Browser split of pageviews")
	c.key("/")
	if f := c.focused(); !strings.HasPrefix(f, "input|field-search") {
		t.Errorf("/ focused %q, not the search", f)
	}
	c.fill("#field-search", "split of")
	c.run(chromedp.Poll[chromedp.Void](`new URLSearchParams(location.search).get('search') === 'split of'`, chromedp.WithPollingTimeout(5*time.Second)))
	// The seed project's dashboard brings five insights; the search leaves the one saved.
	c.run(chromedp.Poll[chromedp.Void](`document.querySelectorAll('main table tbody tr').length === 1`, chromedp.WithPollingTimeout(10*time.Second)))
	c.waitText("main table", "Browser split of pageviews")
	c.checkScreen("insights")
	c.run(chromedp.Click(chromedp.CSS(`main table a`)))
	c.waitText("h1", "Browser split of pageviews")
	c.waitText(".insight-result .legend", "Safari")
	if got := eval[string](c, `document.querySelector('#field-display').value`); got != "ActionsBar" {
		t.Errorf("reopened, the display is %s", got)
	}

	// Rename (PATCH) and add to the bootstrap dashboard.
	c.fill("#field-name", "Browsers")
	c.run(chromedp.Click(chromedp.CSS(`.save-bar button[type=submit]`)))
	c.waitText(".save-bar [role=status]", "Saved.")
	c.waitText("h1", "Browsers")
	c.fill("#field-dashboard", eval[string](c, `document.querySelector('#field-dashboard option:not([value=""])').value`))
	c.run(chromedp.Click(chromedp.CSS(`.add-dashboard button[type=submit]`)))
	c.waitText(".add-dashboard [role=status]", "Added to")
	insight = c.insightByShortID(shortID)
	if insight.Name != "Browsers" || len(insight.Dashboards) != 1 {
		t.Errorf("after rename and add: %+v", insight)
	}

	// A date hedge cannot read: its reason shows under the From field.
	c.expect(fmt.Sprintf("/api/projects/%d/query/", project), 400)
	c.fill("#field-date_from", "yesterday")
	c.waitText("#field-date_from-error", `"yesterday" is not a date`)
	if got := eval[string](c, `document.querySelector('#field-date_from').getAttribute('aria-describedby')`); !strings.Contains(got, "field-date_from-error") {
		t.Errorf("the From field is not described by its error: %q", got)
	}
	c.checkScreen("insight-error")

	// Unique users: each browser is one user, seen on each of the last 7 days: a line
	// of one a day, and as a table one user over the range, not the days' sum.
	c.fill("#field-date_from", "-7d")
	c.fill("#series-0-math", "dau")
	c.waitText(".insight-result .legend", "Chrome 7")
	c.fill("#field-display", "ActionsTable")
	c.waitText(".insight-result table", "Safari")
	if got := c.text(".insight-result table tbody tr:first-child td.num"); got != "1" {
		t.Errorf("the table display shows %s unique Chrome users, want 1", got)
	}
	if csv := c.downloadedCSV(".result-head button"); csv != "series,total\r\nChrome,1\r\nFirefox,1\r\nSafari,1\r\n" {
		t.Errorf("the CSV download is %q", csv)
	}
}

// downloadedCSV clicks the download button sel and answers the CSV it saves, caught
// on its way to the browser's download.
func (c *consoleTab) downloadedCSV(sel string) string {
	c.t.Helper()
	eval[bool](c, `(() => { window.__csv = null; URL.createObjectURL = (b) => { window.__csv = b; return 'about:blank'; };
		HTMLAnchorElement.prototype.click = function () {}; return true; })()`)
	c.run(chromedp.Click(chromedp.CSS(sel)))
	return eval[string](c, `window.__csv ? window.__csv.text() : ''`)
}

// The funnel builder: $pageview → signed_up → purchase over the seed, where only
// user-ada signs up and buys; by $browser, Chrome (ada's) converts fully.
func TestConsoleInsightFunnel(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/insights/new", c.boot.ProjectID))
	c.waitText(".insight-result .legend", "$pageview")
	c.run(chromedp.Click(chromedp.CSS(`.kind-switch label:nth-of-type(2) input`)))
	c.waitText("#result-title", "Funnel")
	c.fill("#series-1-event", "signed_up")
	c.run(chromedp.Click(chromedp.CSS(`fieldset.series > button`)))
	c.fill("#series-2-event", "purchase")
	c.waitText(".funnel", "3. purchase")
	if got := c.funnelCounts(".funnel"); !reflect.DeepEqual(got, []string{"3", "1", "1"}) {
		t.Errorf("the funnel counts %q, want 3 1 1", got)
	}
	c.waitText(".funnel", "33.3%")
	c.checkScreen("insight-funnel")
	if csv := c.downloadedCSV(".result-head button"); csv != "breakdown,step,event,persons\r\n,1,$pageview,3\r\n,2,signed_up,1\r\n,3,purchase,1\r\n" {
		t.Errorf("the funnel's CSV is %q", csv)
	}

	// A step's count lists who reached it, its drop-off who reached the step before
	// and not it: as many as the funnel counts, ada among the converted alone.
	persons := func(button string) []string {
		t.Helper()
		c.clickButton(button)
		c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog[open] tbody tr') !== null && !document.querySelector('.persons-dialog .loading')`, chromedp.WithPollingTimeout(10*time.Second)))
		names := eval[[]string](c, `[...document.querySelectorAll('.persons-dialog tbody tr td:first-child')].map(x => x.innerText.trim())`)
		c.key("\x1b") // Escape
		c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))
		if f := c.focused(); !strings.Contains(f, "list them") {
			t.Errorf("after Escape the focus is on %q, not the step's button", f)
		}
		return names
	}
	if got := persons("3 persons reached $pageview: list them"); len(got) != 3 {
		t.Errorf("the first step lists %q, want its 3 persons", got)
	}
	dropped := persons("2 dropped off before signed_up: list them")
	if len(dropped) != 2 || slices.ContainsFunc(dropped, func(n string) bool { return strings.Contains(n, "ada") }) {
		t.Errorf("the drop-off before signed_up lists %q, want the 2 persons other than ada", dropped)
	}
	if got := persons("1 persons reached purchase: list them"); len(got) != 1 || !strings.Contains(got[0], "ada") {
		t.Errorf("the last step lists %q, want ada", got)
	}

	c.fill("#field-order", "strict")
	c.fill("#field-breakdown", "$browser")
	c.waitText(".funnels", "Safari")
	for browser, want := range map[string][]string{"Chrome": {"1", "1", "1"}, "Firefox": {"1", "0", "0"}} {
		got := eval[[]string](c, fmt.Sprintf(`[...document.querySelectorAll('.funnels section')].filter(s => s.querySelector('h3').innerText === %q)
			.flatMap(s => [...s.querySelectorAll('.funnel-head strong')].map(x => x.innerText))`, browser))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s converts %q, want %q", browser, got, want)
		}
	}
	q, _ := url.Parse(eval[string](c, `location.href`))
	if s := q.Query().Get("q"); !strings.Contains(s, `"funnelOrderType":"strict"`) || !strings.Contains(s, `"FunnelsQuery"`) {
		t.Errorf("the URL holds %s", s)
	}
}

// funnelCounts are the step counts of the first funnel sel matches.
func (c *consoleTab) funnelCounts(sel string) []string {
	c.t.Helper()
	return eval[[]string](c, fmt.Sprintf(`[...document.querySelector(%q).querySelectorAll('.funnel-head strong')].map(x => x.innerText)`, sel))
}

// savedInsight is what the tests read of an insight.
type savedInsight struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	Dashboards []int  `json:"dashboards"`
	Query      struct {
		Kind   string `json:"kind"`
		Source struct {
			TrendsFilter struct {
				Display string `json:"display"`
			} `json:"trendsFilter"`
			BreakdownFilter struct {
				Breakdown string `json:"breakdown"`
			} `json:"breakdownFilter"`
		} `json:"source"`
	} `json:"query"`
}

// insightByShortID reads an insight through the API.
func (c *consoleTab) insightByShortID(shortID string) savedInsight {
	c.t.Helper()
	var page struct {
		Results []savedInsight `json:"results"`
	}
	c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/insights/?short_id=%s", c.boot.ProjectID, shortID), nil, &page)
	if len(page.Results) != 1 {
		c.t.Fatalf("no insight %s", shortID)
	}
	return page.Results[0]
}

// fitsTheWindow fails the test if the page is wider than the window.
func (c *consoleTab) fitsTheWindow(what string) {
	c.t.Helper()
	if w := eval[float64](c, `document.documentElement.scrollWidth`); w > eval[float64](c, `window.innerWidth`) {
		c.t.Errorf("%s: the page is %.0f px wide, wider than the window", what, w)
	}
}

// insideResultCard fails the test if the element sel matches ends right of the
// insight's result card.
func (c *consoleTab) insideResultCard(sel string) {
	c.t.Helper()
	got := eval[[]float64](c, fmt.Sprintf(`[document.querySelector(%q).getBoundingClientRect().right,
		document.querySelector('.insight-result').getBoundingClientRect().right]`, sel))
	if got[0] > got[1] {
		c.t.Errorf("%s ends at %.0f px, past its card's edge at %.0f", sel, got[0], got[1])
	}
}

// A number, totals and a table of unique users count each user once over the range,
// not once a day (hedge's aggregated_value); a number shows its first series only.
// The seed's three users came on each of the last seven days.
func TestConsoleInsightUniqueUsers(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	source := map[string]any{"kind": "TrendsQuery", "interval": "day", "dateRange": map[string]any{"date_from": "-7d"},
		"series": []any{
			map[string]any{"kind": "EventsNode", "event": "$pageview", "name": "$pageview", "math": "dau"},
			map[string]any{"kind": "EventsNode", "event": "signed_up", "name": "signed_up", "math": "total"},
		}, "trendsFilter": map[string]any{"display": "ActionsLineGraph"}}
	q, _ := json.Marshal(source)
	c.visit(fmt.Sprintf("/project/%d/insights/new?q=%s", c.boot.ProjectID, url.QueryEscape(string(q))))
	// As a line, a point a day: three users each day, 21 over the week's days.
	c.waitText(".insight-result .legend", "$pageview 21")

	c.fill("#field-display", "BoldNumber")
	c.waitText(".insight-result .bold-number", "3")
	if got := c.text(".insight-result .bold-number"); got != "3" {
		t.Errorf("the number shows %s unique users, want 3", got)
	}
	eval[bool](c, `(document.activeElement.blur(), window.scrollTo(0, 0), true)`)
	c.checkScreen("insight-number")
	c.fill("#field-display", "ActionsBarValue")
	c.waitText(".insight-result .bar-list", "signed_up")
	if got := eval[[]string](c, `[...document.querySelectorAll('.insight-result .bar-value')].map(x => x.innerText)`); strings.Join(got, " ") != "3 1" {
		t.Errorf("the totals show %q, want 3 users and 1 sign-up", got)
	}
	c.fill("#field-display", "ActionsTable")
	c.waitText(".insight-result table", "signed_up")
	if got := c.text(".insight-result table tbody tr:first-child td.num"); got != "3" {
		t.Errorf("the table shows %s unique users, want 3", got)
	}
}

// The interval now falls in is drawn dashed, for it is not over: the last segment of
// each line is a path of its own with a dash pattern, its point hollow. A range that
// ended before today has none.
func TestConsoleInsightInProgress(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/insights/new", c.boot.ProjectID)) // $pageview by day, the last 7 days and today
	c.waitText(".insight-result .legend", "$pageview")
	type line struct {
		D, Dash string
		Points  int
	}
	lines := func() []line {
		return eval[[]line](c, `[...document.querySelectorAll('.insight-result svg.plot path.line')].map(p =>
			({d: p.getAttribute('d'), dash: p.classList.contains('in-progress') ? getComputedStyle(p).strokeDasharray : '', points: (p.getAttribute('d').match(/[ML]/g) || []).length}))`)
	}
	got := lines()
	days := eval[int](c, `document.querySelectorAll('.insight-result svg.plot circle.point').length`)
	if len(got) != 2 || got[0].Dash != "" || got[0].Points != days-1 || got[1].Dash == "" || got[1].Dash == "none" || got[1].Points != 2 {
		t.Fatalf("the line is drawn as %+v over %d days, want a solid path to yesterday and a dashed one from yesterday to today", got, days)
	}
	if eval[string](c, `document.querySelector('.insight-result svg.plot circle.point:last-of-type').getAttribute('class')`) != "series-0 point in-progress" {
		t.Error("today's point is not marked in progress")
	}
	c.waitText(".insight-result", "still in progress")
	c.checkScreen("insight-in-progress")

	// A range that ended three days ago: every interval is over, the line solid.
	c.fill("#field-date_to", time.Now().UTC().AddDate(0, 0, -3).Format(time.DateOnly))
	c.run(chromedp.Poll[chromedp.Void](`document.querySelectorAll('.insight-result svg.plot path.line').length === 1`, chromedp.WithPollingTimeout(10*time.Second)))
	if got := lines(); len(got) != 1 || got[0].Dash != "" {
		t.Errorf("a past range is drawn as %+v, want one solid path", got)
	}
}

// A revenue chart: the series' math set to a property's sum (then its average), with
// the property typed, shows the sum of the purchases' amounts, as a number over the
// range and as the query API computes it.
func TestConsoleInsightPropertyMath(t *testing.T) {
	c := openConsole(t)
	// Besides the seed's purchase of 42: two more, and one without an amount.
	now := time.Now().UTC()
	var batch []map[string]any
	for i, amount := range []any{10, "20", nil} {
		props := map[string]any{}
		if amount != nil {
			props["amount"] = amount
		}
		batch = append(batch, map[string]any{"event": "purchase", "distinct_id": "user-brian",
			"timestamp": now.Add(-time.Duration(i+2) * time.Hour).Format(time.RFC3339Nano), "properties": props})
	}
	postBatch(t, c.hedge.captureURL, c.boot.ProjectAPIKey, batch)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/insights/new", c.boot.ProjectID))
	c.waitText(".insight-result .legend", "$pageview")
	c.fill("#series-0-event", "purchase")
	// Until the property is typed, hedge says what is missing, under the series.
	c.expect(fmt.Sprintf("/api/projects/%d/query/", c.boot.ProjectID), 400)
	c.fill("#series-0-math", "sum")
	c.waitText("#series-error", "needs a math_property")
	c.fill("#series-0-math-property", "amount")
	c.fill("#field-display", "BoldNumber")
	c.waitText(".insight-result .bold-number", "72")

	var want trendsAnswer
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/query/", c.boot.ProjectID), map[string]any{"query": map[string]any{
		"kind": "TrendsQuery", "series": []any{map[string]any{"event": "purchase", "math": "sum", "math_property": "amount"}},
		"dateRange": map[string]any{"date_from": "-7d"}, "trendsFilter": map[string]any{"display": "BoldNumber"},
	}}, &want)
	if len(want.Results) != 1 || want.Results[0].AggregatedValue == nil || *want.Results[0].AggregatedValue != 72 {
		t.Fatalf("the query API answers %+v, want a sum of 72", want)
	}
	eval[bool](c, `(document.activeElement.blur(), window.scrollTo(0, 0), true)`)
	c.checkScreen("insight-property-sum")
	c.fill("#series-0-math", "avg")
	c.waitText(".insight-result .bold-number", "24")
}

// A formula over two series: typed under the series, it answers one line labelled
// with it (pageviews plus purchases over the week: 39 + 1), and a formula naming a
// series that is not there is refused beside the field.
func TestConsoleInsightFormula(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	source := map[string]any{"kind": "TrendsQuery", "interval": "day", "dateRange": map[string]any{"date_from": "-7d"},
		"series": []any{
			map[string]any{"kind": "EventsNode", "event": "$pageview", "name": "$pageview", "math": "total"},
			map[string]any{"kind": "EventsNode", "event": "purchase", "name": "purchase", "math": "total"},
		}, "trendsFilter": map[string]any{"display": "BoldNumber"}}
	q, _ := json.Marshal(source)
	c.visit(fmt.Sprintf("/project/%d/insights/new?q=%s", c.boot.ProjectID, url.QueryEscape(string(q))))
	c.waitText(".insight-result .bold-number", "39")
	c.fill("#field-formula", "A + B")
	c.waitText(".insight-result .bold-number", "40")
	c.fill("#field-display", "ActionsLineGraph")
	c.waitText(".insight-result .legend", "A + B")
	eval[bool](c, `(document.activeElement.blur(), window.scrollTo(0, 0), true)`)
	c.checkScreen("insight-formula")
	c.expect(fmt.Sprintf("/api/projects/%d/query/", c.boot.ProjectID), 400)
	c.fill("#field-formula", "A / C")
	c.waitText("#field-formula-error", "names series C")
}

// Compared with the previous period: the chart draws each series twice, the previous
// period's line named so, with the numbers of the week before (the seed has none).
func TestConsoleInsightCompare(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/insights/new", c.boot.ProjectID))
	c.waitText(".insight-result .legend", "$pageview")
	c.run(chromedp.Click(chromedp.CSS("#field-compare")))
	c.waitText(".insight-result .legend", "$pageview (previous period) 0")
	if got := eval[int](c, `document.querySelectorAll('.insight-result .legend-item').length`); got != 2 {
		t.Errorf("the legend has %d lines, want the period and the previous one", got)
	}
	// Only the current period has an interval in progress: one dashed path, not two.
	if got := eval[int](c, `document.querySelectorAll('.insight-result path.line.in-progress').length`); got != 1 {
		t.Errorf("%d lines end dashed, want only the current period's", got)
	}
	eval[bool](c, `(document.activeElement.blur(), window.scrollTo(0, 0), true)`)
	c.checkScreen("insight-compare")
}

// insightsByName lists the project's insights (not deleted) through the API, by name,
// each as the API answers it.
func (c *consoleTab) insightsByName() map[string]map[string]any {
	c.t.Helper()
	var page struct {
		Results []map[string]any `json:"results"`
	}
	c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/insights/?limit=100", c.boot.ProjectID), nil, &page)
	out := map[string]map[string]any{}
	for _, r := range page.Results {
		out[fmt.Sprint(r["name"])] = r
	}
	return out
}

// An insight is renamed by its Name field and "Save changes" alone (the query
// unchanged), duplicated into "<name> (copy)" with the same query, which opens, and
// deleted: the screen says so with Undo, which brings it back, and a link to the list.
// A member who may only view it (it is on a restricted dashboard) gets Delete disabled.
func TestConsoleInsightManage(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	var made struct {
		ID      int    `json:"id"`
		ShortID string `json:"short_id"`
	}
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/insights/", c.boot.ProjectID), map[string]any{"name": "Signups",
		"query": map[string]any{"kind": "InsightVizNode", "source": map[string]any{"kind": "TrendsQuery", "series": []any{map[string]any{"kind": "EventsNode", "event": "signed_up"}}}}}, &made)
	path := fmt.Sprintf("/project/%d/insights/%s", c.boot.ProjectID, made.ShortID)
	c.visit(path)
	c.waitText("main h1", "Signups")

	// Rename: a changed name is an unsaved change, saved by "Save changes".
	c.fill("#field-name", "Sign-ups")
	c.waitText(".save-bar [role=status]", "Unsaved changes.")
	c.clickButton("Save changes")
	c.waitText(".save-bar [role=status]", "Saved.")
	c.waitText("main h1", "Sign-ups")
	if got := c.insightByShortID(made.ShortID).Name; got != "Sign-ups" {
		t.Fatalf("renamed to %q, want Sign-ups", got)
	}
	c.checkScreen("insight-manage")

	// Duplicate: a new insight of the same query, opened at once.
	c.clickButton("Duplicate")
	c.waitText("main h1", "Sign-ups (copy)")
	waitFor(t, 10*time.Second, "the copy's own address", func() bool {
		return eval[string](c, `location.pathname`) != path
	})
	all := c.insightsByName()
	original, copied := all["Sign-ups"], all["Sign-ups (copy)"]
	if original == nil || copied == nil {
		t.Fatalf("after Duplicate the insights are %v", slices.Sorted(maps.Keys(all)))
	}
	if a, b := mustJSON(t, original["query"]), mustJSON(t, copied["query"]); a != b {
		t.Errorf("the copy's query %s is not the original's %s", b, a)
	}
	if got := eval[string](c, `location.pathname`); got != fmt.Sprintf("/project/%d/insights/%s", c.boot.ProjectID, copied["short_id"]) {
		t.Errorf("Duplicate opened %s, not the copy", got)
	}
	if got := eval[string](c, `document.querySelector('#field-name').value`); got != "Sign-ups (copy)" {
		t.Errorf("the copy's name field shows %q", got)
	}

	// Delete the original: the screen says so, the list no longer has it.
	c.visit(path)
	c.waitText("main h1", "Sign-ups")
	c.clickButton("Delete")
	c.waitText("main", "Sign-ups deleted.")
	if _, listed := c.insightsByName()["Sign-ups"]; listed {
		t.Fatal("the deleted insight is still listed")
	}
	if got := eval[string](c, `[...document.querySelectorAll('main a')].filter(a => a.innerText === 'Back to insights').map(a => a.pathname).join()`); got != fmt.Sprintf("/project/%d/insights", c.boot.ProjectID) {
		t.Errorf("the link back to the list goes to %q", got)
	}
	c.checkScreen("insight-deleted")

	// Undo brings it back, on screen and in the list.
	c.clickButton("Undo")
	c.waitText("main .save-bar", "Save changes")
	c.waitText("main h1", "Sign-ups")
	if _, listed := c.insightsByName()["Sign-ups"]; !listed {
		t.Fatal("after Undo the insight is not listed")
	}

	// The list deletes a row too, with Undo.
	c.deleteRowWithUndo("insights", "Sign-ups (copy)", c.insightsByName)

	// A member who may only view it: Delete is disabled, and says why.
	var d struct{ ID int }
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/dashboards/", c.boot.ProjectID), map[string]any{"name": "Guarded"}, &d)
	c.adminAPI("PATCH", fmt.Sprintf("/api/projects/%d/dashboards/%d/", c.boot.ProjectID, d.ID), map[string]any{"restriction_level": 37}, nil)
	c.adminAPI("PATCH", fmt.Sprintf("/api/projects/%d/insights/%d/", c.boot.ProjectID, made.ID), map[string]any{"dashboards": []int{d.ID}}, nil)
	viewer, password := c.member("viewer@example.com")
	c.signOut()
	c.signInAs(viewer, password)
	c.run(chromedp.WaitVisible(chromedp.CSS("header.top")))
	c.visit(path)
	c.waitText(".save-bar", "View only.")
	deletes := eval[[]map[string]any](c, `[...document.querySelectorAll('main button')].filter(b => b.innerText.trim() === 'Delete').map(b => ({disabled: b.disabled, title: b.title}))`)
	if len(deletes) != 1 || deletes[0]["disabled"] != true || !strings.Contains(fmt.Sprint(deletes[0]["title"]), "editors") {
		t.Errorf("a viewer's Delete buttons: %v", deletes)
	}
	c.checkScreen("insight-manage-viewer")
	// Nor has its row a Delete.
	c.visit(fmt.Sprintf("/project/%d/insights", c.boot.ProjectID))
	c.waitText("main table", "Sign-ups (copy)")
	if got := eval[[]string](c, `[...document.querySelectorAll('main table button')].map(b => b.getAttribute('aria-label'))`); slices.Contains(got, "Delete Sign-ups") ||
		!slices.Contains(got, "Delete Sign-ups (copy)") {
		t.Errorf("a viewer's list offers %q", got)
	}
}

// mustJSON is v as JSON, for comparing what the API answers.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The persons behind a trend's point: three persons view pages on one day (alice 3
// times, carol twice, bob once). Hovering the day's point shows a tooltip with the
// day's value; clicking it opens a dialog listing alice 3, carol 2, bob 1, most events
// first, each name a link to the person; Escape closes it and puts focus back on the
// point, Enter opens it again. A breakdown's point lists only that value's persons,
// and a formula's points open nothing.
func TestConsoleTrendPersons(t *testing.T) {
	parent := requireBrowser(t)
	p, boot, _ := startServing(t)
	day := time.Now().UTC().AddDate(0, 0, -2)
	noon := time.Date(day.Year(), day.Month(), day.Day(), 12, 0, 0, 0, time.UTC)
	var batch []map[string]any
	for _, who := range []struct {
		name, browser string
		views         int
	}{{"alice", "Chrome", 3}, {"bob", "Safari", 1}, {"carol", "Chrome", 2}} {
		for n := range who.views {
			batch = append(batch, map[string]any{
				"event": "$pageview", "distinct_id": who.name, "timestamp": noon.Add(time.Duration(n) * time.Minute).Format(time.RFC3339Nano),
				"properties": map[string]any{"$browser": who.browser, "$set": map[string]any{"email": who.name + "@example.com"}},
			})
		}
	}
	postBatch(t, p.captureURL, boot.ProjectAPIKey, batch)
	c := newTab(t, parent, p, boot)
	project := boot.ProjectID
	waitFor(t, 30*time.Second, "the six pageviews to be queryable", func() bool {
		var got struct{ Results [][]float64 }
		c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/query/", project), map[string]any{"query": map[string]any{
			"kind": "HogQLQuery", "query": "SELECT count() FROM events"}}, &got)
		return len(got.Results) == 1 && got.Results[0][0] == 6
	})
	c.signIn()
	label := noon.Format("02-Jan-2006")
	trend := func(extra map[string]any) string {
		q := map[string]any{"kind": "TrendsQuery", "series": []any{map[string]any{"kind": "EventsNode", "event": "$pageview", "name": "$pageview", "math": "total"}},
			"interval": "day", "dateRange": map[string]any{"date_from": "-7d"}, "trendsFilter": map[string]any{"display": "ActionsLineGraph"}}
		maps.Copy(q, extra)
		b, _ := json.Marshal(q)
		return fmt.Sprintf("/project/%d/insights/new?q=%s", project, url.QueryEscape(string(b)))
	}
	// point is the circle of series i on the seeded day, and its centre on the page.
	point := func(i int) (string, float64, float64) {
		t.Helper()
		sel := fmt.Sprintf(`.insight-result svg.plot circle.point[data-series="%d"][data-j="%d"]`, i, dayIndex(t, c, noon, "-7d"))
		c.run(chromedp.WaitVisible(chromedp.CSS(sel)))
		xy := eval[[]float64](c, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`, sel))
		return sel, xy[0], xy[1]
	}
	// listed are the dialog's rows: a person's name and their events.
	listed := func() [][]string {
		t.Helper()
		c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog[open] tbody tr') !== null && !document.querySelector('.persons-dialog .loading')`, chromedp.WithPollingTimeout(10*time.Second)))
		return eval[[][]string](c, `[...document.querySelectorAll('.persons-dialog tbody tr')].map(r => [...r.children].map(x => x.innerText.trim()))`)
	}

	c.visit(trend(nil))
	c.waitText(".insight-result .legend", "$pageview")
	sel, x, y := point(0)
	if got, want := eval[string](c, fmt.Sprintf(`document.querySelector(%q).getAttribute('aria-label')`, sel)), "$pageview on "+label+": 6, show persons"; got != want {
		t.Errorf("the point is labelled %q, want %q", got, want)
	}
	c.run(chromedp.MouseEvent("mouseMoved", x, y))
	c.waitText(".insight-result .chart-tip", label)
	if got := c.text(".insight-result .chart-tip-row"); !strings.Contains(got, "$pageview") || !strings.HasSuffix(strings.TrimSpace(got), "6") {
		t.Errorf("the tooltip's row reads %q, want $pageview's 6", got)
	}
	c.checkScreen("trend-tooltip")

	c.run(chromedp.MouseClickXY(x, y))
	c.waitText(".persons-dialog h2", "$pageview on "+label)
	if got, want := listed(), [][]string{{"alice@example.com", "3"}, {"carol@example.com", "2"}, {"bob@example.com", "1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the dialog lists %q, want %q", got, want)
	}
	c.waitText(".persons-dialog [role=status]", "3 persons shown, all there are")
	c.checkScreen("trend-persons")
	c.key("\x1b") // Escape
	c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))
	if f := c.focused(); !strings.Contains(f, "show persons") {
		t.Errorf("after Escape the focus is on %q, not the point", f)
	}
	// The chart is one Tab stop: arrow keys move between its points. Enter on the
	// focused point opens it again; Enter on Close closes it for good.
	c.key(kb.ArrowLeft)
	if f, want := c.focused(), "$pageview on "+noon.AddDate(0, 0, -1).Format("02-Jan-2006")+": 0"; !strings.Contains(f, want) {
		t.Errorf("ArrowLeft focused %q, want %q", f, want)
	}
	c.key(kb.ArrowRight)
	c.key("\r")
	if got := listed(); len(got) != 3 {
		t.Errorf("Enter on the point lists %q", got)
	}
	c.run(chromedp.Focus(chromedp.CSS(`.persons-dialog .confirm-actions button`)))
	c.key("\r")
	c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))
	time.Sleep(300 * time.Millisecond)
	if eval[bool](c, `document.querySelector('.persons-dialog') !== null`) {
		t.Error("Enter on Close opened the dialog again")
	}
	// A name opens the person.
	c.key("\r")
	listed()
	href := eval[string](c, `document.querySelector('.persons-dialog tbody tr a').getAttribute('href')`)
	c.run(chromedp.Click(chromedp.CSS(`.persons-dialog tbody tr a`)))
	c.run(chromedp.Poll[chromedp.Void](fmt.Sprintf(`location.pathname === %q`, href), chromedp.WithPollingTimeout(10*time.Second)))
	if !strings.Contains(href, fmt.Sprintf("/project/%d/persons/", project)) {
		t.Errorf("alice's name links to %q, not her person", href)
	}
	c.waitText("main", "alice@example.com")

	// A breakdown by browser: Chrome's point lists Chrome's viewers only.
	c.visit(trend(map[string]any{"breakdownFilter": map[string]any{"breakdown": "$browser", "breakdown_type": "event"}}))
	c.waitText(".insight-result .legend", "Safari")
	labels := eval[[]string](c, `[...document.querySelectorAll('.insight-result .legend-label')].map(b => b.textContent)`)
	chrome := slices.Index(labels, "Chrome")
	if chrome < 0 {
		t.Fatalf("the breakdown draws %q", labels)
	}
	_, x, y = point(chrome)
	c.run(chromedp.MouseClickXY(x, y))
	c.waitText(".persons-dialog h2", "Chrome on "+label)
	if got, want := listed(), [][]string{{"alice@example.com", "3"}, {"carol@example.com", "2"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Chrome's point lists %q, want %q", got, want)
	}
	c.run(chromedp.Click(chromedp.CSS(`.persons-dialog .confirm-actions button`)))
	c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))

	// On a dashboard, under a range of the URL's (-14d), a tile's point lists the same
	// persons: the tile's query is the insight's under the dashboard's filters.
	var dashboard struct{ ID int }
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/dashboards/", project), map[string]any{"name": "Views"}, &dashboard)
	if status := c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/insights/", project), map[string]any{
		"name": "Pageviews", "dashboards": []int{dashboard.ID},
		"query": map[string]any{"kind": "InsightVizNode", "source": map[string]any{"kind": "TrendsQuery", "interval": "day",
			"dateRange": map[string]any{"date_from": "-7d"}, "series": []any{map[string]any{"kind": "EventsNode", "event": "$pageview", "name": "$pageview"}}}},
	}, nil); status != 201 {
		t.Fatalf("creating the insight answers %d", status)
	}
	c.visit(fmt.Sprintf("/project/%d/dashboard/%d?date_from=-14d", project, dashboard.ID))
	tile := fmt.Sprintf(`.tile svg.plot circle.point[data-series="0"][data-j="%d"]`, dayIndex(t, c, noon, "-14d"))
	c.run(chromedp.WaitVisible(chromedp.CSS(tile)))
	c.run(chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).getAttribute('role') === 'button'`, tile), chromedp.WithPollingTimeout(10*time.Second)))
	c.run(chromedp.Focus(chromedp.CSS(tile)))
	c.waitText(".tile .chart-tip", label)
	c.checkScreen("tile-tooltip")
	c.key("\r")
	c.waitText(".persons-dialog h2", "$pageview on "+label)
	if got, want := listed(), [][]string{{"alice@example.com", "3"}, {"carol@example.com", "2"}, {"bob@example.com", "1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the tile's point lists %q, want %q", got, want)
	}
	c.checkScreen("tile-persons")
	c.run(chromedp.Click(chromedp.CSS(`.persons-dialog .confirm-actions button`)))
	c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))

	// A formula's line is no series: its points are not buttons.
	c.visit(trend(map[string]any{"series": []any{
		map[string]any{"kind": "EventsNode", "event": "$pageview", "name": "$pageview", "math": "total"},
		map[string]any{"kind": "EventsNode", "event": "$pageview", "name": "$pageview", "math": "dau"},
	}, "trendsFilter": map[string]any{"display": "ActionsLineGraph", "formula": "A/B"}}))
	c.run(chromedp.Poll[chromedp.Void](`document.querySelectorAll('.insight-result svg.plot circle.point').length > 0`, chromedp.WithPollingTimeout(10*time.Second)))
	if n := eval[int](c, `document.querySelectorAll('.insight-result svg.plot [role=button]').length`); n != 0 {
		t.Errorf("a formula's chart has %d points to press", n)
	}
}

// dayIndex is the index of day's interval in a trend by day from dateFrom, as the
// query API names its days (the chart's x positions).
func dayIndex(t *testing.T, c *consoleTab, day time.Time, dateFrom string) int {
	t.Helper()
	var answer trendsAnswer
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/query/", c.boot.ProjectID), map[string]any{"query": map[string]any{
		"kind": "TrendsQuery", "series": []any{map[string]any{"event": "$pageview", "math": "total"}}, "interval": "day",
		"dateRange": map[string]any{"date_from": dateFrom},
	}}, &answer)
	if len(answer.Results) == 0 {
		t.Fatal("the trend has no line")
	}
	j := slices.Index(answer.Results[0].Days, day.Format("2006-01-02"))
	if j < 0 {
		t.Fatalf("%s is not among the days %q", day.Format("2006-01-02"), answer.Results[0].Days)
	}
	return j
}

// The trend builder's filters beyond the event's properties: a person property
// filter, a breakdown by a person property, a filter of one series and a cohort
// filter, each drawn with the count hedge's query API answers for the same query.
func TestConsoleInsightPersonFilters(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	project := c.boot.ProjectID
	var cohort struct{ ID int64 }
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/cohorts/", project), map[string]any{"name": "Ada's", "filters": map[string]any{"properties": map[string]any{
		"type": "AND", "values": []any{map[string]any{"type": "person", "key": "email", "operator": "icontains", "value": "ada"}}}}}, &cohort)
	// total is the query API's count of $pageview over the last 7 days under
	// properties (of the query) and series (of the series), by breakdown value.
	total := func(properties, series []any, breakdown map[string]any) map[string]float64 {
		t.Helper()
		s := map[string]any{"event": "$pageview", "math": "total"}
		if series != nil {
			s["properties"] = series
		}
		q := map[string]any{"kind": "TrendsQuery", "series": []any{s}, "interval": "day", "dateRange": map[string]any{"date_from": "-7d"}}
		if properties != nil {
			q["properties"] = properties
		}
		if breakdown != nil {
			q["breakdownFilter"] = breakdown
		}
		var answer trendsAnswer
		if status := c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/query/", project), map[string]any{"query": q}, &answer); status != 200 {
			t.Fatalf("the query API answers %d", status)
		}
		out := map[string]float64{}
		for _, r := range answer.Results {
			out[fmt.Sprint(r.BreakdownValue)] = r.Count
		}
		return out
	}
	// legend is each drawn line's label and total.
	legend := func() map[string]string {
		return eval[map[string]string](c, `Object.fromEntries([...document.querySelectorAll('.insight-result .legend-item')].map(b => [b.firstChild.nextSibling.textContent.trim(), b.lastChild.textContent.trim()]))`)
	}
	waitLegend := func(want map[string]float64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got := legend()
			ok := len(got) == len(want)
			for k, v := range want {
				label := map[string]string{"<nil>": "$pageview", "$$_posthog_breakdown_null_$$": "(none)"}[k]
				if label == "" {
					label = k
				}
				ok = ok && got[label] == fmt.Sprint(v)
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the legend reads %v, want %v (the URL's query: %s)", got, want, eval[string](c, `decodeURIComponent(location.search)`))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	c.visit(fmt.Sprintf("/project/%d/insights/new", project))
	c.waitText(".insight-result .legend", "$pageview")

	// A person property: emails with "ada".
	person := []any{map[string]any{"type": "person", "key": "email", "operator": "icontains", "value": "ada"}}
	ada := total(person, nil, nil)
	if ada["<nil>"] < 1 || ada["<nil>"] >= total(nil, nil, nil)["<nil>"] {
		t.Fatalf("the query API counts %v of Ada's pageviews", ada)
	}
	c.clickButton("Add filter")
	c.fill("#filter-0-type", "person")
	c.fill("#filter-0-key", "email")
	c.fill("#filter-0-op", "icontains")
	c.fill("#filter-0-value", "ada")
	waitLegend(ada)

	// The same persons as a cohort.
	c.fill("#filter-0-type", "cohort")
	c.run(chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('#filter-0-value option')].some(o => o.textContent === "Ada's")`, chromedp.WithPollingTimeout(10*time.Second)))
	c.fill("#filter-0-value", fmt.Sprint(cohort.ID))
	if got := total([]any{map[string]any{"type": "cohort", "key": "id", "operator": "in", "value": cohort.ID}}, nil, nil); got["<nil>"] != ada["<nil>"] {
		t.Fatalf("the query API counts %v in the cohort, %v by the property", got, ada)
	}
	waitLegend(ada)
	c.fill("#filter-0-op", "not_in")
	waitLegend(total([]any{map[string]any{"type": "cohort", "key": "id", "operator": "not_in", "value": cohort.ID}}, nil, nil))
	c.checkScreen("insight-cohort-filter")
	c.clickButton("Remove filter 1")

	// A filter of the series alone: Chrome's pageviews.
	c.clickButton("Add a filter to series 1")
	c.fill("#series-0-filter-0-key", "$browser")
	c.fill("#series-0-filter-0-value", "Chrome")
	waitLegend(total(nil, []any{map[string]any{"type": "event", "key": "$browser", "operator": "exact", "value": "Chrome"}}, nil))
	c.clickButton("Remove series 1 filter 1")

	// A breakdown by the person's email.
	c.fill("#field-breakdown-type", "person")
	c.fill("#field-breakdown", "email")
	waitLegend(total(nil, nil, map[string]any{"breakdown": "email", "breakdown_type": "person"}))
	c.checkScreen("insight-person-breakdown")
}
