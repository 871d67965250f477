package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The Activity screen: an event sent to the capture listener shows up within 5 s
// without a reload, late ones too; while the reader is scrolled down or has a row open,
// new events wait behind an "N new events" button and the rows stay put; polling
// stops while the tab is hidden and once the button holds too many; a row opens by
// keyboard to show its properties; the event and property filters narrow the list and
// live in the URL; the person links to the person screen.
func TestConsoleActivity(t *testing.T) {
	c := openConsole(t)
	c.signIn() // lands on Activity
	c.run(chromedp.WaitVisible(chromedp.CSS("table.events tbody tr")))
	if got := c.rowCount(); got != 41 {
		t.Errorf("Activity shows %d events, want the 41 seeded", got)
	}
	c.checkScreen("activity")

	// Live: an event sent now appears within 5 s, on top.
	start := time.Now()
	c.capture(map[string]any{"event": "live_one", "distinct_id": "user-live", "properties": map[string]any{"$current_url": "https://example.com/live"}})
	c.waitTextWithin("table.events tbody tr:first-child", "live_one", 5*time.Second)
	t.Logf("a live event showed up after %s", time.Since(start).Round(10*time.Millisecond))
	// A late event (its timestamp ten days old) is caught too: the tail follows commits.
	c.capture(map[string]any{"event": "late_one", "distinct_id": "user-live", "timestamp": time.Now().Add(-240 * time.Hour).Format(time.RFC3339)})
	c.waitTextWithin("table.events tbody", "late_one", 5*time.Second)

	// Scrolled down: the new event waits behind the button and nothing moves.
	eval[bool](c, `(window.scrollTo(0, 300), true)`)
	before := eval[string](c, `[...document.querySelectorAll('table.events tbody tr')].slice(0, 50).map(r => r.innerText).join('\n')`)
	c.capture(map[string]any{"event": "while_scrolled", "distinct_id": "user-live"})
	c.waitTextWithin(".activity-status[role=status]", "1 new event", 5*time.Second)
	after := eval[string](c, `[...document.querySelectorAll('table.events tbody tr')].slice(0, 50).map(r => r.innerText).join('\n')`)
	if before != after || eval[float64](c, `window.scrollY`) != 300 {
		t.Errorf("the rows moved while the reader was scrolled down (scrollY %v)", eval[float64](c, `window.scrollY`))
	}
	c.run(chromedp.Click(chromedp.CSS(".new-events")))
	c.waitText("table.events tbody tr:first-child", "while_scrolled")
	if y := eval[float64](c, `window.scrollY`); y != 0 {
		t.Errorf("showing the new events left the page scrolled to %v", y)
	}

	// Keyboard only: Tab to the newest row, Enter opens it, the arrow moves on.
	c.run(chromedp.Focus(chromedp.CSS("#activity-value")))
	c.tabTo("while_scrolled")
	c.key("\r")
	c.waitText("tr.event-detail", "distinct_id")
	c.waitText("tr.event-detail", "user-live")
	if got := eval[string](c, `document.querySelector('button.event-toggle').getAttribute('aria-expanded')`); got != "true" {
		t.Errorf("the opened row's button says aria-expanded=%s", got)
	}
	c.key(kb.ArrowDown)
	if f := c.focused(); !strings.Contains(f, "live_one") && !strings.Contains(f, "late_one") {
		t.Errorf("ArrowDown moved the focus to %q, not the next row", f)
	}
	// A row is open: a new event waits too.
	c.capture(map[string]any{"event": "while_open", "distinct_id": "user-live"})
	c.waitTextWithin(".activity-status[role=status]", "1 new event", 5*time.Second)
	if strings.Contains(c.text("table.events tbody"), "while_open") {
		t.Error("a new event was put in the table while a row was open")
	}
	c.checkScreen("activity-open")
	c.run(chromedp.Focus(chromedp.CSS(".new-events")))
	c.key("\r")
	c.waitText("table.events tbody tr:first-child", "while_open")

	// Hidden tab: no polling; visible again: it resumes.
	eval[bool](c, `(Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true}),
		document.dispatchEvent(new Event('visibilitychange')), true)`)
	time.Sleep(500 * time.Millisecond) // a poll already under way ends
	if n := c.pollsDuring(4500 * time.Millisecond); n != 0 {
		t.Errorf("the hidden tab polled %d times in 4.5 s", n)
	}
	eval[bool](c, `(Object.defineProperty(document, 'visibilityState', {value: 'visible', configurable: true}),
		document.dispatchEvent(new Event('visibilitychange')), true)`)
	if n := c.pollsDuring(3 * time.Second); n == 0 {
		t.Error("polling did not resume when the tab became visible")
	}

	// Over the cap, scrolled down: the button says so and polling stops.
	eval[bool](c, `(window.scrollTo(0, 200), true)`)
	var burst []map[string]any
	for i := range 101 {
		burst = append(burst, map[string]any{"event": "burst", "distinct_id": fmt.Sprintf("burst-%d", i)})
	}
	c.capture(burst...)
	c.waitTextWithin(".activity-status[role=status]", "More than 100 new events", 5*time.Second)
	if n := c.pollsDuring(4500 * time.Millisecond); n != 0 {
		t.Errorf("with more than 100 events waiting the page polled %d times in 4.5 s", n)
	}
	c.run(chromedp.Click(chromedp.CSS(".new-events")))
	c.waitText("table.events tbody tr:first-child", "burst")
	// 146 events now: a page of 100, then the older 46 (rows are kept apart by uuid, so
	// 146 is all of them, each once).
	c.waitRows(100)
	c.run(chromedp.Click(chromedp.CSS(".activity > p > button")))
	c.waitRows(146)
	if eval[int](c, `document.querySelectorAll('.activity > p > button').length`) != 0 {
		t.Error("Load older events is still offered after the oldest event")
	}

	// Filter by event name: the URL keeps it, only purchases show.
	c.fill("#activity-event", "purchase")
	c.waitText("table.events tbody", "purchase")
	c.waitRows(1)
	if got := eval[string](c, `location.search`); got != "?event=purchase" {
		t.Errorf("the event filter put %q in the URL", got)
	}
	// Its person link opens the person.
	c.run(chromedp.Click(chromedp.CSS("table.events tbody a")))
	c.waitText("h1", "ada@example.com")
	if got := eval[string](c, `location.pathname`); !strings.Contains(got, "/persons/") {
		t.Errorf("the person link went to %s", got)
	}

	// Filter by a property, from a shared URL: Firefox is user-brian's 13 pageviews.
	c.visit(fmt.Sprintf("/project/%d/activity?key=%s&value=Firefox", c.boot.ProjectID, url.QueryEscape("$browser")))
	c.run(chromedp.WaitVisible(chromedp.CSS("table.events tbody tr")))
	c.waitRows(13)
	if got := eval[string](c, `document.querySelector('#activity-key').value + '=' + document.querySelector('#activity-value').value`); got != "$browser=Firefox" {
		t.Errorf("the property filter fields show %q", got)
	}
	if got := c.text("table.events tbody"); strings.Contains(got, "Chrome") || strings.Count(got, "$pageview") != 13 {
		t.Errorf("the Firefox filter shows other events: %q", got)
	}
	// The filter form works by keyboard as well: another value, Enter.
	c.fill("#activity-value", "Safari")
	c.key("\r")
	c.waitRows(13)
	if got := eval[string](c, `location.search`); !strings.Contains(got, "value=Safari") {
		t.Errorf("the property filter put %q in the URL", got)
	}
}

// capture sends events to the capture listener with the project's token.
func (c *consoleTab) capture(events ...map[string]any) {
	c.t.Helper()
	postBatch(c.t, c.hedge.captureURL, c.boot.ProjectAPIKey, events)
}

// rowCount is how many events the events table shows.
func (c *consoleTab) rowCount() int {
	c.t.Helper()
	return eval[int](c, `document.querySelectorAll('table.events tbody tr.event-row').length`)
}

// waitRows waits until the events table shows n events.
func (c *consoleTab) waitRows(n int) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.rowCount() != n {
		if time.Now().After(deadline) {
			c.t.Fatalf("the events table shows %d events, want %d", c.rowCount(), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pollsDuring counts the query requests the page sends in d.
func (c *consoleTab) pollsDuring(d time.Duration) int {
	c.t.Helper()
	eval[bool](c, `(performance.clearResourceTimings(), true)`)
	time.Sleep(d)
	return eval[int](c, `performance.getEntriesByType('resource').filter(e => e.name.includes('/query/')).length`)
}

// A screen a newcomer fills with a long name keeps its shape: an event named with
// 180 characters neither pushes Activity's columns off the screen nor widens the page
// through the event select, and a trend's legend and totals stay inside their card;
// each cut name is whole in its title.
func TestConsoleLongEventName(t *testing.T) {
	c := openConsole(t)
	long := "checkout_" + strings.Repeat("step_with_a_rather_long_name_", 6)[:171]
	if len(long) != 180 {
		t.Fatalf("the name has %d characters", len(long))
	}
	c.capture(map[string]any{"event": long, "distinct_id": "user-ada", "properties": map[string]any{"$current_url": "https://example.com/" + strings.Repeat("path/", 40)}})
	c.signIn() // lands on Activity
	c.waitText("table.events tbody tr:first-child", "checkout_")
	c.run(chromedp.Poll[chromedp.Void](fmt.Sprintf(`[...document.querySelectorAll('#activity-event option')].some(o => o.value === %q)`, long),
		chromedp.WithPollingTimeout(10*time.Second)))
	c.fitsTheWindow("Activity")
	if right := eval[float64](c, `document.querySelector('table.events thead th:last-child').getBoundingClientRect().right`); right > 1280 {
		t.Errorf("the Time column ends at %.0f px, past the window's 1280", right)
	}
	if got := eval[string](c, `document.querySelector('table.events tbody tr:first-child button.event-toggle').title`); got != long {
		t.Errorf("the event's button has the title %q, want the whole name", got)
	}
	if got := eval[string](c, fmt.Sprintf(`[...document.querySelectorAll('#activity-event option')].find(o => o.value === %q).title`, long)); got != long {
		t.Errorf("the event's option has the title %q, want the whole name", got)
	}
	c.checkScreen("activity-long-name")

	// A trend of it: the legend stays in the chart's card; so do its total and table.
	source := map[string]any{"kind": "TrendsQuery", "series": []any{map[string]any{"kind": "EventsNode", "event": long, "name": long, "math": "total"}},
		"interval": "day", "dateRange": map[string]any{"date_from": "-7d"}, "trendsFilter": map[string]any{"display": "ActionsLineGraph"}}
	q, _ := json.Marshal(source)
	c.visit(fmt.Sprintf("/project/%d/insights/new?q=%s", c.boot.ProjectID, url.QueryEscape(string(q))))
	c.waitText(".insight-result .legend", "checkout_")
	c.fitsTheWindow("the trend")
	c.insideResultCard(".insight-result .legend-item")
	if got := eval[string](c, `document.querySelector('.insight-result .legend-item').title`); !strings.HasPrefix(got, long+":") {
		t.Errorf("the legend's title is %q, want the whole name and its total", got)
	}
	c.checkScreen("insight-long-name")
	for display, sel := range map[string]string{"ActionsBarValue": ".insight-result .bar-label", "ActionsTable": ".insight-result tbody .clip"} {
		c.fill("#field-display", display)
		c.waitText(sel, "checkout_")
		c.fitsTheWindow(display)
		c.insideResultCard(sel)
		if got := eval[string](c, fmt.Sprintf(`document.querySelector(%q).title`, sel)); got != long {
			t.Errorf("%s: the name's title is %q, want the whole name", display, got)
		}
	}
}
