package main

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// trendsAnswer is the part of a TrendsQuery's answer the tests compare.
type trendsAnswer struct {
	Results []struct {
		BreakdownValue any       `json:"breakdown_value"`
		Data           []float64 `json:"data"`
		Days           []string  `json:"days"`
		Count          float64   `json:"count"`
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

	// Unique users: each browser is one user, seen on each of the last 7 days.
	c.fill("#field-date_from", "-7d")
	c.fill("#series-0-math", "dau")
	c.waitText(".insight-result .legend", "Chrome 7")
	c.fill("#field-display", "ActionsTable")
	c.waitText(".insight-result table", "Safari")
	if got := c.text(".insight-result table tbody tr:first-child td.num"); got != "7" {
		t.Errorf("the table display shows %s unique Chrome users, want 7", got)
	}
	if csv := c.downloadedCSV(".result-head button"); !strings.HasPrefix(csv, "date,Chrome,Firefox,Safari\r\n") || strings.Count(csv, "\r\n") != 1+len(want.Results[0].Days) {
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
