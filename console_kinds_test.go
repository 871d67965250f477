package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// kindsDay is the time of day d days ago (0 today) at which the insight kinds' events
// happen: 01:00, or for today halfway from midnight to now, so it is never ahead.
func kindsDay(now time.Time, d int) time.Time {
	midnight := now.UTC().Truncate(24 * time.Hour)
	if d == 0 {
		return midnight.Add(now.Sub(midnight) / 2)
	}
	return midnight.AddDate(0, 0, -d).Add(time.Hour)
}

// longTourEvent is an event whose name is cut short in a Sankey's label.
const longTourEvent = "opened_the_onboarding_checklist_from_the_product_tour_sidebar_once_more"

// sendKindsEvents sends the hand-counted events of TestConsoleInsightKinds, on top of
// the seed (which has neither of their events). opened_app, days ago by person:
//
//	ret-1: 3, 2, 0   (cohort 3 days ago; back 1 and 3 days later, after a gap)
//	ret-2: 3, 1      (cohort 3 days ago; back 2 days later)
//	ret-3: 3         (cohort 3 days ago; never back)
//	ret-4: 2, 1      (cohort 2 days ago; back the next day)
//	ret-5: 1         (cohort 1 day ago)
//
// and yesterday at 10:00, a minute apart, tour events (custom events) by five walkers:
// two go start → step → done, one start → step, one start → done, and one from the
// start to an event of a long name.
func sendKindsEvents(t *testing.T, captureURL, token string, now time.Time) {
	t.Helper()
	var batch []map[string]any
	add := func(event, distinctID string, at time.Time) {
		batch = append(batch, map[string]any{"event": event, "distinct_id": distinctID, "timestamp": at.Format(time.RFC3339Nano), "properties": map[string]any{}})
	}
	for person, days := range map[string][]int{"ret-1": {3, 2, 0}, "ret-2": {3, 1}, "ret-3": {3}, "ret-4": {2, 1}, "ret-5": {1}} {
		for _, d := range days {
			add("opened_app", person, kindsDay(now, d))
		}
	}
	tour := kindsDay(now, 1).Add(9 * time.Hour)
	for walker, steps := range map[string][]string{
		"walker-1": {"tour_start", "tour_step", "tour_done"},
		"walker-2": {"tour_start", "tour_step", "tour_done"},
		"walker-3": {"tour_start", "tour_step"},
		"walker-4": {"tour_start", "tour_done"},
		"walker-5": {"tour_start", longTourEvent},
	} {
		for i, step := range steps {
			add(step, walker, tour.Add(time.Duration(i)*time.Minute))
		}
	}
	postBatch(t, captureURL, token, batch)
}

// The insight kinds beyond trends and funnels, each built in the console from the
// events of sendKindsEvents, its numbers read off the screen against the hand counts,
// saved, put on a dashboard and read there: a retention's cohort table, its mean and
// the persons of a cohort; a lifecycle's four statuses; a stickiness' persons by days
// active; a paths Sankey's edges, with a start point.
func TestConsoleInsightKinds(t *testing.T) {
	c := openConsole(t)
	now := time.Now().UTC()
	sendKindsEvents(t, c.hedge.captureURL, c.boot.ProjectAPIKey, now)
	c.signIn()
	project := c.boot.ProjectID
	var board struct{ ID int }
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/dashboards/", project), map[string]any{"name": "Kinds"}, &board)
	day := func(d int) string { return kindsDay(now, d).Format("02-Jan-2006") }
	iso := func(d int) string { return kindsDay(now, d).Format(time.DateOnly) }
	// saveOnBoard saves the insight being built as name and adds it to the Kinds
	// dashboard, and answers the saved insight's query kind.
	saveOnBoard := func(name string) string {
		t.Helper()
		c.fill("#field-name", name)
		c.run(chromedp.Click(chromedp.CSS(`.save-bar button[type=submit]`)))
		c.run(chromedp.Poll[chromedp.Void](`location.pathname.match(/\/insights\/[A-Za-z0-9]{8,9}$/) !== null`, chromedp.WithPollingTimeout(10*time.Second)))
		c.waitText("h1", name)
		waitFor(t, 10*time.Second, "the Kinds dashboard to choose", func() bool {
			return eval[bool](c, fmt.Sprintf(`!!document.querySelector('#field-dashboard option[value="%d"]')`, board.ID))
		})
		c.fill("#field-dashboard", fmt.Sprint(board.ID))
		c.run(chromedp.Click(chromedp.CSS(`.add-dashboard button[type=submit]`)))
		c.waitText(".add-dashboard [role=status]", "Added to Kinds.")
		var page struct {
			Results []struct {
				Query struct {
					Kind   string `json:"kind"`
					Source struct {
						Kind string `json:"kind"`
					} `json:"source"`
				} `json:"query"`
			} `json:"results"`
		}
		c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/insights/?short_id=%s", project, eval[string](c, `location.pathname.split('/').pop()`)), nil, &page)
		if len(page.Results) != 1 || page.Results[0].Query.Kind != "InsightVizNode" {
			t.Fatalf("%s is saved as %+v", name, page)
		}
		return page.Results[0].Query.Source.Kind
	}
	chartTable := func() [][]string {
		t.Helper()
		c.run(chromedp.Click(chromedp.CSS(`.insight-result .chart-buttons button[aria-pressed="false"]`)))
		rows := eval[[][]string](c, `[...document.querySelectorAll('.insight-result .chart table tbody tr')].map(r => [...r.children].map(x => x.innerText.trim()))`)
		c.run(chromedp.Click(chromedp.CSS(`.insight-result .chart-buttons button[aria-pressed="true"]`)))
		return rows
	}
	rowOf := func(rows [][]string, first string) []string {
		for _, r := range rows {
			if len(r) > 0 && r[0] == first {
				return r
			}
		}
		t.Fatalf("no row %s in %q", first, rows)
		return nil
	}

	// Retention: opened_app, first time, by day, 4 cohorts.
	c.visit(fmt.Sprintf("/project/%d/insights/new", project))
	c.waitText(".insight-result .legend", "$pageview")
	if got := eval[[]string](c, `[...document.querySelectorAll('.kind-switch label')].map(l => l.innerText.trim())`); !reflect.DeepEqual(got, []string{"Trends", "Funnel", "Retention", "Paths", "Stickiness", "Lifecycle"}) {
		t.Errorf("the insight types are %q", got)
	}
	c.run(chromedp.Click(chromedp.CSS(`.kind-switch input[value=RetentionQuery]`)))
	c.waitText("#result-title", "Retention")
	c.fill("#field-target", "opened_app")
	c.fill("#field-returning", "opened_app")
	c.fill("#field-periods", "4")
	c.waitText(".retention-table thead", "Day 3")
	c.run(chromedp.Poll[chromedp.Void](`document.querySelectorAll('.retention-table tbody tr').length === 4 && !document.querySelector('.insight-result [role=status]').innerText.includes('Updating')`, chromedp.WithPollingTimeout(10*time.Second)))
	cells := eval[[][]string](c, `[...document.querySelectorAll('.retention-table tbody tr')].map(r => [...r.children].map(x => x.innerText.trim()))`)
	want := [][]string{
		{day(3), "3", "100%", "33.3%", "33.3%", "33.3%"},
		{day(2), "1", "100%", "100%", "0%", ""},
		{day(1), "1", "100%", "0%", "", ""},
		{day(0), "0", "0%", "", "", ""},
	}
	if !reflect.DeepEqual(cells, want) {
		t.Errorf("the cohort table is\n%q, want\n%q", cells, want)
	}
	if got := eval[string](c, `document.querySelector('.retention-table tbody tr:first-child td:last-child').title`); got != day(3)+", Day 3: 1 of 3 persons (33.3%)" {
		t.Errorf("the cell of the first cohort's Day 3 says %q", got)
	}
	// The mean share per period, of the cohorts that reached it with persons.
	c.run(chromedp.Click(chromedp.CSS(`.retention .chart-buttons button[aria-pressed="false"]`)))
	mean := eval[[][]string](c, `[...document.querySelectorAll('.retention .chart table tbody tr')].map(r => [...r.children].map(x => x.innerText.trim()))`)
	if want := [][]string{{"Day 0", "100"}, {"Day 1", "44.4"}, {"Day 2", "16.7"}, {"Day 3", "33.3"}}; !reflect.DeepEqual(mean, want) {
		t.Errorf("the mean retention is %q, want %q", mean, want)
	}
	c.run(chromedp.Click(chromedp.CSS(`.retention .chart-buttons button[aria-pressed="true"]`)))
	c.run(chromedp.WaitVisible(chromedp.CSS(`.retention circle.point[data-j="1"]`)))
	xy := eval[[]float64](c, `(() => { const r = document.querySelector('.retention circle.point[data-j="1"]').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`)
	c.run(chromedp.MouseEvent("mouseMoved", xy[0], xy[1]))
	c.waitText(".retention .chart-tip", "Day 1")
	if got := c.text(".retention .chart-tip-row"); !strings.Contains(got, "Mean") || !strings.HasSuffix(strings.TrimSpace(got), "44.4%") {
		t.Errorf("the mean's tooltip reads %q", got)
	}
	c.run(chromedp.MouseEvent("mouseMoved", 5, 5))
	c.checkScreen("insight-retention")

	// A cell opens its cohort's persons, with the periods each came back in, those who
	// came back most first; Escape closes it and focus goes back to the cohort.
	c.run(chromedp.Click(chromedp.CSS(`.retention-table tbody tr:first-child td:nth-of-type(3)`)))
	c.waitText(".persons-dialog h2", "Cohort of "+day(3))
	c.run(chromedp.Poll[chromedp.Void](`document.querySelectorAll('.persons-dialog[open] tbody tr').length === 3`, chromedp.WithPollingTimeout(10*time.Second)))
	persons := eval[[][]string](c, `[...document.querySelectorAll('.persons-dialog tbody tr')].map(r => [...r.children].map(x => x.innerText.trim()))`)
	if want := [][]string{{"ret-1", "Day 1, Day 3"}, {"ret-2", "Day 2"}, {"ret-3", "—"}}; !reflect.DeepEqual(persons, want) {
		t.Errorf("the cohort's persons are %q, want %q", persons, want)
	}
	c.checkScreen("insight-retention-persons")
	c.key(kb.Escape)
	c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))
	if f := c.focused(); !strings.Contains(f, "show them") {
		t.Errorf("after Escape the focus is on %q, not the cohort", f)
	}
	// The query is in the URL: the link draws the same table.
	link := eval[string](c, `location.href`)
	if q, _ := url.Parse(link); !strings.Contains(q.Query().Get("q"), `"totalIntervals":4`) {
		t.Errorf("the URL holds %s", q.Query().Get("q"))
	}
	c.run(chromedp.Navigate(link))
	c.waitText(".retention-table tbody tr:first-child", "33.3%")
	// A number of periods hedge refuses: its reason under the field.
	c.expect(fmt.Sprintf("/api/projects/%d/query/", project), 400)
	c.fill("#field-periods", "500")
	c.waitText("#field-periods-error", "totalIntervals must be from 1 to 120")
	c.fill("#field-periods", "4")
	c.waitText(".retention-table tbody tr:first-child", "33.3%")
	if kind := saveOnBoard("App retention"); kind != "RetentionQuery" {
		t.Errorf("the retention is saved as a %s", kind)
	}

	// Lifecycle of opened_app by day: new, returning, resurrecting, dormant (negative).
	c.visit(fmt.Sprintf("/project/%d/insights/new", project))
	c.waitText(".insight-result .legend", "$pageview")
	c.run(chromedp.Click(chromedp.CSS(`.kind-switch input[value=LifecycleQuery]`)))
	c.waitText("#result-title", "Lifecycle")
	if eval[bool](c, `!!document.querySelector('#series-1-event') || [...document.querySelectorAll('fieldset.series button')].some(b => b.innerText === 'Add series')`) {
		t.Error("a lifecycle offers more than one event")
	}
	c.fill("#series-0-event", "opened_app")
	c.waitText(".insight-result .legend", "Dormant -6")
	rows := chartTable()
	for d, want := range map[int][]string{3: {"3", "0", "0", "0"}, 2: {"1", "1", "0", "-2"}, 1: {"1", "1", "1", "-1"}, 0: {"0", "0", "1", "-3"}} {
		if got := rowOf(rows, iso(d))[1:]; !reflect.DeepEqual(got, want) {
			t.Errorf("the lifecycle %d days ago is %q (new, returning, resurrecting, dormant), want %q", d, got, want)
		}
	}
	if got := eval[[]string](c, `[...document.querySelectorAll('.insight-result .legend-label')].map(x => x.innerText)`); !reflect.DeepEqual(got, []string{"New", "Returning", "Resurrecting", "Dormant"}) {
		t.Errorf("the lifecycle's legend is %q", got)
	}
	// The dormant bars go below the axis: under the 0 tick.
	if !eval[bool](c, `(() => { const zero = [...document.querySelectorAll('.insight-result .tick')].find(g => g.textContent === '0');
		const y = Number(zero.querySelector('line').getAttribute('y1'));
		const bars = [...document.querySelectorAll('.insight-result rect.series-3')].filter(r => Number(r.getAttribute('height')) > 0);
		return bars.length === 3 && bars.every(r => Number(r.getAttribute('y')) >= y - 0.5); })()`) {
		t.Error("the dormant bars are not below the axis")
	}
	// Hovering a column shows every status' value there, dormant's negative.
	xy = eval[[]float64](c, `(() => { const r = [...document.querySelectorAll('.insight-result rect.series-3')].filter(r => Number(r.getAttribute('height')) > 0)
		.sort((a, b) => a.getBoundingClientRect().x - b.getBoundingClientRect().x)[0].getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`)
	c.run(chromedp.MouseEvent("mouseMoved", xy[0], xy[1]))
	c.waitText(".insight-result .chart-tip", day(2))
	if got := eval[[]string](c, `[...document.querySelectorAll('.insight-result .chart-tip-row')].map(r => r.innerText.replace(/\s+/g, ' ').trim())`); !reflect.DeepEqual(got, []string{"New 1", "Returning 1", "Resurrecting 0", "Dormant -2"}) {
		t.Errorf("the tooltip of %s reads %q", day(2), got)
	}
	c.checkScreen("insight-lifecycle")
	c.run(chromedp.MouseEvent("mouseMoved", 5, 5))
	if kind := saveOnBoard("App lifecycle"); kind != "LifecycleQuery" {
		t.Errorf("the lifecycle is saved as a %s", kind)
	}

	// Stickiness of opened_app over the last 7 days: persons by days active.
	c.visit(fmt.Sprintf("/project/%d/insights/new", project))
	c.waitText(".insight-result .legend", "$pageview")
	c.run(chromedp.Click(chromedp.CSS(`.kind-switch input[value=StickinessQuery]`)))
	c.waitText("#result-title", "Stickiness")
	c.fill("#series-0-event", "opened_app")
	c.waitText(".insight-result .legend", "opened_app 5")
	c.fill("#field-display", "ActionsBar")
	rows = chartTable()
	if len(rows) < 4 {
		t.Fatalf("the stickiness has %d rows", len(rows))
	}
	if got := rows[:4]; !reflect.DeepEqual(got, [][]string{{"1 day", "2"}, {"2 days", "2"}, {"3 days", "1"}, {"4 days", "0"}}) {
		t.Errorf("the stickiness is %q, want 2 persons on 1 day, 2 on 2, 1 on 3", got)
	}
	c.checkScreen("insight-stickiness")
	if kind := saveOnBoard("App stickiness"); kind != "StickinessQuery" {
		t.Errorf("the stickiness is saved as a %s", kind)
	}

	// Paths of custom events: a band per edge, as thick as its paths.
	c.visit(fmt.Sprintf("/project/%d/insights/new", project))
	c.waitText(".insight-result .legend", "$pageview")
	c.run(chromedp.Click(chromedp.CSS(`.kind-switch input[value=PathsQuery]`)))
	c.waitText("#result-title", "Paths")
	c.run(chromedp.Click(chromedp.CSS(`.include-types label:nth-of-type(3) input`)))
	c.run(chromedp.Poll[chromedp.Void](`!document.querySelector('.include-types label:nth-of-type(1) input').disabled`, chromedp.WithPollingTimeout(5*time.Second)))
	c.run(chromedp.Click(chromedp.CSS(`.include-types label:nth-of-type(1) input`)))
	edges := func(want map[string]string) {
		t.Helper()
		js := `Object.fromEntries([...document.querySelectorAll('.sankey-link')].map(p => [p.dataset.source + ' > ' + p.dataset.target, p.dataset.value]))`
		waitFor(t, 10*time.Second, fmt.Sprintf("the Sankey's edges %v", want), func() bool {
			return reflect.DeepEqual(eval[map[string]string](c, js), want)
		})
	}
	all := map[string]string{"1_tour_start > 2_tour_step": "3", "2_tour_step > 3_tour_done": "2", "1_tour_start > 2_tour_done": "1", "1_tour_start > 2_" + longTourEvent: "1"}
	edges(all)
	if got := eval[string](c, `document.querySelector('.sankey-link[data-target="2_tour_step"] title').textContent`); !strings.HasPrefix(got, "1. tour_start → 2. tour_step: 3 paths") {
		t.Errorf("the edge's title says %q", got)
	}
	if got := eval[string](c, `document.querySelector('.sankey-node[data-node="1_tour_start"] title').textContent`); got != "1. tour_start: 5 paths" {
		t.Errorf("the first node's title says %q", got)
	}
	// A long name is cut with an ellipsis; its title has it whole.
	if got := eval[[]string](c, `(n => [n.querySelector('text').firstChild.textContent, n.querySelector('title').textContent])(document.querySelector('.sankey-node[data-node="2_`+longTourEvent+`"]'))`); !strings.HasSuffix(got[0], "…") || len(got[0]) >= len(longTourEvent) || got[1] != "2. "+longTourEvent+": 1 path, 1 ends here" {
		t.Errorf("the long node is labelled %q", got)
	}
	// The keyboard: one Tab stop, the arrow keys go from band to band, each read out.
	c.tabTo("path||1. tour_start")
	first := c.focused()
	c.key(kb.ArrowRight)
	if f := c.focused(); f == first || !strings.HasPrefix(f, "path||") {
		t.Errorf("ArrowRight moved the focus from %q to %q", first, f)
	}
	if got, want := c.text(".sankey-hot"), strings.TrimPrefix(c.focused(), "path||"); !strings.HasPrefix(want, got) || got == "" {
		t.Errorf("the focused band is read out as %q, its label is %q", got, want)
	}
	c.checkScreen("insight-paths")
	// A start point starts each path at it.
	c.fill("#field-start", "tour_step")
	edges(map[string]string{"1_tour_step > 2_tour_done": "2"})
	c.fill("#field-start", "")
	edges(all)
	if kind := saveOnBoard("Product tour paths, from the first screen of the tour to its very last one"); kind != "PathsQuery" {
		t.Errorf("the paths are saved as a %s", kind)
	}

	// The dashboard draws the four as the insight screen does.
	c.visit(fmt.Sprintf("/project/%d/dashboard/%d", project, board.ID))
	c.waitTiles(4)
	c.waitTileText("App retention", "33.3%")
	c.waitTileText("App lifecycle", "Dormant -6")
	c.waitTileText("App stickiness", "opened_app 5")
	paths := tileJS("Product tour paths, from the first screen of the tour to its very last one")
	c.waitJSText("the paths tile", paths+`.querySelector('.sankey-link[data-target="2_tour_step"]')?.dataset.value || ''`, "3", 20*time.Second)
	if got := eval[[]string](c, tileJS("App retention")+`.querySelector('.retention-table tbody tr').innerText.split('\t').map(s => s.trim())`); !reflect.DeepEqual(got, want[0]) {
		t.Errorf("the retention tile's first cohort is %q, want %q", got, want[0])
	}
	// A tile's cohort lists its persons too.
	eval[bool](c, tileJS("App retention")+`.querySelector('.retention-table tbody tr:nth-child(2) td:nth-of-type(3)').click(), true`)
	c.waitText(".persons-dialog h2", "Cohort of "+day(2))
	c.run(chromedp.Poll[chromedp.Void](`document.querySelectorAll('.persons-dialog[open] tbody tr').length === 1`, chromedp.WithPollingTimeout(10*time.Second)))
	if got := c.text(".persons-dialog tbody tr"); !strings.Contains(got, "ret-4") || !strings.Contains(got, "Day 1") {
		t.Errorf("the tile's cohort of %s lists %q, want ret-4 back on Day 1", day(2), got)
	}
	c.key(kb.Escape)
	c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))
	c.fitsTheWindow("the dashboard of the insight kinds")
	c.checkScreen("dashboard-kinds")

	// The list of insights names their types.
	c.visit(fmt.Sprintf("/project/%d/insights", project))
	c.waitText("main table", "App retention")
	types := eval[map[string]string](c, `Object.fromEntries([...document.querySelectorAll('main table tbody tr')].map(r => [r.children[0].innerText.trim(), r.children[1].innerText.trim()]))`)
	for name, want := range map[string]string{"App retention": "Retention", "App lifecycle": "Lifecycle", "App stickiness": "Stickiness", "Product tour paths, from the first screen of the tour to its very last one": "Paths"} {
		if types[name] != want {
			t.Errorf("the list says %s is a %q, want %s", name, types[name], want)
		}
	}
}

// The persons behind a lifecycle's bar, a stickiness' bar and a paths' band, node and
// drop-off, from the events of sendKindsEvents: clicked (or Enter) on the insight screen and on
// dashboard tiles, each dialog's persons read off it against the hand counts.
func TestConsoleKindsPersons(t *testing.T) {
	c := openConsole(t)
	now := time.Now().UTC()
	sendKindsEvents(t, c.hedge.captureURL, c.boot.ProjectAPIKey, now)
	c.signIn()
	project := c.boot.ProjectID
	day := func(d int) string { return kindsDay(now, d).Format("02-Jan-2006") }
	lifecycle := map[string]any{"kind": "LifecycleQuery", "series": []any{map[string]any{"kind": "EventsNode", "event": "opened_app", "name": "opened_app"}},
		"interval": "day", "dateRange": map[string]any{"date_from": "-7d"}}
	stickiness := map[string]any{"kind": "StickinessQuery", "series": []any{map[string]any{"kind": "EventsNode", "event": "opened_app", "name": "opened_app"}},
		"interval": "day", "dateRange": map[string]any{"date_from": "-7d"}, "stickinessFilter": map[string]any{"display": "ActionsBar"}}
	paths := map[string]any{"kind": "PathsQuery", "dateRange": map[string]any{"date_from": "-7d"}, "pathsFilter": map[string]any{"includeEventTypes": []string{"custom_event"}}}
	build := func(q map[string]any) string {
		b, _ := json.Marshal(q)
		return fmt.Sprintf("/project/%d/insights/new?q=%s", project, url.QueryEscape(string(b)))
	}
	// listed are the dialog's rows once loaded: a person's name and their count,
	// sorted (ties of counts come in the order of person ids).
	listed := func() [][]string {
		t.Helper()
		c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog[open] tbody tr') !== null && !document.querySelector('.persons-dialog .loading')`, chromedp.WithPollingTimeout(10*time.Second)))
		rows := eval[[][]string](c, `[...document.querySelectorAll('.persons-dialog tbody tr')].map(r => [...r.children].map(x => x.innerText.trim()))`)
		slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(strings.Join(a, " "), strings.Join(b, " ")) })
		return rows
	}
	closeDialog := func() {
		t.Helper()
		c.run(chromedp.Click(chromedp.CSS(`.persons-dialog .confirm-actions button`)))
		c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))
	}
	// click clicks the element js finds, in the middle of it.
	click := func(js string) {
		t.Helper()
		c.run(chromedp.Poll[chromedp.Void](js+` != null`, chromedp.WithPollingTimeout(10*time.Second)))
		xy := eval[[]float64](c, `(() => { const r = (`+js+`).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`)
		c.run(chromedp.MouseClickXY(xy[0], xy[1]))
	}
	// dayIndex is the index of the interval d days ago among q's days.
	dayIndex := func(q map[string]any, d int) int {
		var answer trendsAnswer
		c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/query/", project), map[string]any{"query": q}, &answer)
		j := slices.Index(answer.Results[0].Days, kindsDay(now, d).Format(time.DateOnly))
		if j < 0 {
			t.Fatalf("%d days ago is not among the lifecycle's days %q", d, answer.Results[0].Days)
		}
		return j
	}
	two := dayIndex(lifecycle, 2)
	// bar is the JS of the bar of series i at interval j, within root.
	bar := func(root string, i, j int) string {
		return fmt.Sprintf(`%s.querySelector('svg.plot rect.bar[data-series="%d"][data-j="%d"]')`, root, i, j)
	}

	// Lifecycle: two days ago ret-4 was new, ret-1 returning, and ret-2 and ret-3
	// dormant (the day before, not back).
	c.visit(build(lifecycle))
	c.waitText(".insight-result .legend", "Dormant -6")
	click(bar("document", 3, two))
	c.waitText(".persons-dialog h2", "Dormant on "+day(2))
	if got, want := listed(), [][]string{{"ret-2", "0"}, {"ret-3", "0"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the dormant of %s are %q, want %q", day(2), got, want)
	}
	c.waitText(".persons-dialog [role=status]", "2 persons shown, all there are")
	c.checkScreen("lifecycle-persons")
	c.key(kb.Escape)
	c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))
	if f := c.focused(); !strings.Contains(f, "Dormant on") || !strings.Contains(f, "show persons") {
		t.Errorf("after Escape the focus is on %q, not the bar", f)
	}
	// The keyboard: up to the returning bar of the same day, Enter lists it.
	c.key(kb.ArrowUp)
	c.key(kb.ArrowUp)
	if f := c.focused(); !strings.Contains(f, "Returning on") {
		t.Fatalf("ArrowUp twice focused %q", f)
	}
	c.key("\r")
	c.waitText(".persons-dialog h2", "Returning on "+day(2))
	if got, want := listed(), [][]string{{"ret-1", "1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the returning of %s are %q, want %q", day(2), got, want)
	}
	closeDialog()

	// Stickiness: ret-1 alone was active on 3 days, ret-2 and ret-4 on 2.
	c.visit(build(stickiness))
	c.waitText(".insight-result .legend", "opened_app 5")
	click(bar("document", 0, 2))
	c.waitText(".persons-dialog h2", "opened_app: active 3 days")
	if got, want := listed(), [][]string{{"ret-1", "3"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the persons of 3 days are %q, want %q", got, want)
	}
	c.waitText(".persons-dialog [role=status]", "1 person shown, all there are")
	c.checkScreen("stickiness-persons")
	closeDialog()
	click(bar("document", 0, 1))
	c.waitText(".persons-dialog h2", "opened_app: active 2 days")
	if got, want := listed(), [][]string{{"ret-2", "2"}, {"ret-4", "2"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the persons of 2 days are %q, want %q", got, want)
	}
	closeDialog()

	// Paths: the band tour_start → tour_step, taken by walkers 1 to 3; the node
	// 3. tour_done, reached by walkers 1 and 2.
	c.visit(build(paths))
	c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.sankey-link[data-target="2_tour_step"]') !== null`, chromedp.WithPollingTimeout(10*time.Second)))
	click(`document.querySelector('.sankey-link[data-source="1_tour_start"][data-target="2_tour_step"]')`)
	c.waitText(".persons-dialog h2", "1. tour_start → 2. tour_step")
	if got, want := listed(), [][]string{{"walker-1", "1"}, {"walker-2", "1"}, {"walker-3", "1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the band's persons are %q, want %q", got, want)
	}
	if got := c.text(".persons-dialog thead"); !strings.Contains(got, "Paths") {
		t.Errorf("the dialog's heading is %q, want a column of paths", got)
	}
	c.checkScreen("paths-band-persons")
	closeDialog()
	click(`document.querySelector('.sankey-node[data-node="3_tour_done"] rect')`)
	c.waitText(".persons-dialog h2", "Reached 3. tour_done")
	if got, want := listed(), [][]string{{"walker-1", "1"}, {"walker-2", "1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the node's persons are %q, want %q", got, want)
	}
	c.checkScreen("paths-node-persons")
	closeDialog()
	// The node's darker lower part: walker-3's path ended at 2. tour_step.
	if got := eval[string](c, `document.querySelector('.sankey-end[data-end="2_tour_step"]').getAttribute('aria-label')`); got != "2. tour_step: 1 path ends here, show persons" {
		t.Errorf("the drop-off of 2. tour_step is labelled %q", got)
	}
	click(`document.querySelector('.sankey-end[data-end="2_tour_step"]')`)
	c.waitText(".persons-dialog h2", "Ended at 2. tour_step")
	if got, want := listed(), [][]string{{"walker-3", "1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the persons who ended at 2. tour_step are %q, want %q", got, want)
	}
	c.checkScreen("paths-end-persons")
	closeDialog()
	click(`document.querySelector('.sankey-node[data-node="3_tour_done"] rect')`)
	c.waitText(".persons-dialog h2", "Reached 3. tour_done")
	closeDialog()
	// The keyboard: focus is back on the node, whose Enter lists it again; the arrow
	// keys go on to the bands (after the nodes, round to the first), each read out,
	// and Enter on one lists its persons.
	if f := c.focused(); !strings.HasPrefix(f, "rect||3. tour_done: 2 paths") || !strings.Contains(f, "show persons") {
		t.Errorf("after Close the focus is on %q, not the node", f)
	}
	c.key("\r")
	c.waitText(".persons-dialog h2", "Reached 3. tour_done")
	if got := listed(); len(got) != 2 {
		t.Errorf("Enter on the node lists %q", got)
	}
	c.key(kb.Escape)
	c.run(chromedp.Poll[chromedp.Void](`document.querySelector('.persons-dialog') === null`, chromedp.WithPollingTimeout(5*time.Second)))
	for range 12 {
		if strings.HasPrefix(c.focused(), "path||") {
			break
		}
		c.key(kb.ArrowRight)
	}
	band := c.focused()
	if !strings.HasPrefix(band, "path||") {
		t.Fatalf("the arrow keys never reached a band: %q", band)
	}
	if got := c.text(".sankey-hot"); got == "" || !strings.HasPrefix(strings.TrimPrefix(band, "path||"), got[:min(len(got), 20)]) {
		t.Errorf("the focused band %q is read out as %q", band, got)
	}
	c.key("\r")
	c.waitText(".persons-dialog h2", " → ")
	if n := len(listed()); n < 1 {
		t.Errorf("Enter on %q lists no persons", band)
	}
	closeDialog()

	// On a dashboard, each tile's bar, band or node lists the same persons.
	var board struct{ ID int }
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/dashboards/", project), map[string]any{"name": "Kinds persons"}, &board)
	for name, q := range map[string]map[string]any{"App lifecycle": lifecycle, "App stickiness": stickiness, "Tour paths": paths} {
		if status := c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/insights/", project), map[string]any{
			"name": name, "dashboards": []int{board.ID}, "query": map[string]any{"kind": "InsightVizNode", "source": q}}, nil); status != 201 {
			t.Fatalf("creating %s answers %d", name, status)
		}
	}
	c.visit(fmt.Sprintf("/project/%d/dashboard/%d", project, board.ID))
	c.waitTiles(3)
	c.waitTileText("App lifecycle", "Dormant -6")
	for _, tile := range []struct {
		name, element, title string
		want                 [][]string
	}{
		{"App lifecycle", bar(tileJS("App lifecycle"), 3, two), "Dormant on " + day(2), [][]string{{"ret-2", "0"}, {"ret-3", "0"}}},
		{"App stickiness", bar(tileJS("App stickiness"), 0, 2), "opened_app: active 3 days", [][]string{{"ret-1", "3"}}},
		{"Tour paths", tileJS("Tour paths") + `.querySelector('.sankey-link[data-source="2_tour_step"][data-target="3_tour_done"]')`, "2. tour_step → 3. tour_done",
			[][]string{{"walker-1", "1"}, {"walker-2", "1"}}},
	} {
		c.run(chromedp.Poll[chromedp.Void](tile.element+`?.getAttribute('role') === 'button'`, chromedp.WithPollingTimeout(20*time.Second)))
		eval[bool](c, `(`+tile.element+`).scrollIntoView({block: 'center'}), true`)
		click(tile.element)
		c.waitText(".persons-dialog h2", tile.title)
		if got := listed(); !reflect.DeepEqual(got, tile.want) {
			t.Errorf("the %s tile lists %q, want %q", tile.name, got, tile.want)
		}
		if tile.name == "Tour paths" {
			c.checkScreen("tile-paths-persons")
		}
		closeDialog()
	}
}
