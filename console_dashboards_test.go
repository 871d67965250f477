package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The seed (seedConsoleEvents) sends 3 users' pageviews on each of the last 7 days,
// day%3+1 each: 39 in the last 14 days, 13 a browser, and 21 daily active users summed
// over the days.
const seededPageviews = 39

// Dashboards: the list links the bootstrap dashboard; its 5 tiles render their results
// in their sm layouts on a 12-column grid; a tile moved by keyboard and one moved by
// dragging keep their places after a reload; the date range changes the tiles'
// numbers; a text card is added and removed. The grid compacts as PostHog's does: a
// tile moved down into empty room rises back, and two tiles swap when one is dragged
// past the other.
func TestConsoleDashboard(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/dashboards", c.boot.ProjectID))
	c.waitText("main table", "My App Dashboard")
	if got := c.text("main table tbody tr"); !strings.Contains(got, "Pinned") {
		t.Errorf("the bootstrap dashboard's row says %q, want it pinned", got)
	}
	c.checkScreen("dashboards")

	// Keyboard only: Tab to the dashboard's link, Enter opens it.
	c.tabTo("My App Dashboard")
	c.key("\r")
	c.waitText("main h1", "My App Dashboard")
	dashboardPath := fmt.Sprintf("/project/%d/dashboard/", c.boot.ProjectID)
	if got := eval[string](c, `location.pathname`); !strings.HasPrefix(got, dashboardPath) {
		t.Fatalf("the link opened %s", got)
	}
	id := strings.TrimPrefix(eval[string](c, `location.pathname`), dashboardPath)
	api := fmt.Sprintf("/api/projects/%d/dashboards/%s/", c.boot.ProjectID, id)

	c.waitTiles(5)
	if n := eval[int](c, `getComputedStyle(document.querySelector('.dash-grid')).gridTemplateColumns.split(' ').length`); n != 12 {
		t.Errorf("the grid has %d columns, want 12", n)
	}
	// Each tile sits where its sm layout says: column and span, row and span.
	want := map[string][4]int{
		"Daily active users (DAUs)": {0, 0, 6, 5}, "Weekly active users (WAUs)": {6, 0, 6, 5},
		"Pageviews": {0, 5, 6, 5}, "Pageviews by browser": {6, 5, 6, 5}, "Latest events": {0, 10, 12, 6},
	}
	for name, l := range want {
		if got := c.tileGrid(name); got != fmt.Sprintf("%d / span %d|%d / span %d", l[0]+1, l[2], l[1]+1, l[3]) {
			t.Errorf("%s is placed at %s, want its sm layout %v", name, got, l)
		}
	}
	// Same-row tiles side by side, the events table below them across the grid.
	pos := eval[map[string]float64](c, `(() => { const r = n => [...document.querySelectorAll('.tile')].find(t => t.querySelector('h2').innerText === n).getBoundingClientRect();
		const a = r('Daily active users (DAUs)'), b = r('Weekly active users (WAUs)'), e = r('Latest events'), g = document.querySelector('.dash-grid').getBoundingClientRect();
		return {sameRow: Math.abs(a.top - b.top), leftOf: b.left - a.right, below: e.top - a.bottom, wide: e.width / g.width}; })()`)
	if pos["sameRow"] > 1 || pos["leftOf"] < 0 || pos["below"] <= 0 || pos["wide"] < 0.99 {
		t.Errorf("the tiles are not laid out on the grid: %v", pos)
	}
	// Results computed by hedge from the seed.
	c.waitTileText("Pageviews", fmt.Sprint(seededPageviews))
	for _, browser := range []string{"Chrome 13", "Firefox 13", "Safari 13"} {
		c.waitTileText("Pageviews by browser", browser)
	}
	c.waitTileText("Daily active users (DAUs)", "$pageview 21")
	c.waitTileText("Latest events", "user-ada")
	if eval[bool](c, `!!document.querySelector('.move-handle')`) {
		t.Error("move handles show outside edit mode")
	}
	c.checkScreen("dashboard")

	// The events tile downloads its rows as CSV (the file is caught before it is saved).
	csv := eval[string](c, `new Promise(resolve => {
		const create = URL.createObjectURL, click = HTMLAnchorElement.prototype.click;
		let blob;
		URL.createObjectURL = b => { blob = b; URL.createObjectURL = create; return create(b); };
		HTMLAnchorElement.prototype.click = function () { HTMLAnchorElement.prototype.click = click; blob.text().then(t => resolve(this.download + '\n' + t)); };
		[...document.querySelectorAll('button')].find(b => b.getAttribute('aria-label') === 'Download Latest events as CSV').click();
	})`)
	if !strings.HasPrefix(csv, "Latest events.csv\nevent,distinct_id,properties.$current_url,timestamp\r\n") || !strings.Contains(csv, "$pageview,user-ada,https://example.com/page-0,") {
		t.Errorf("the Latest events CSV is %.200q", csv)
	}

	// The dashboard-wide date range: Today counts only today's pageviews, as hedge
	// computes them for the same filters_override; the URL keeps it.
	var today struct {
		Tiles []struct {
			Insight struct {
				Name   string
				Result json.RawMessage
			}
		}
	}
	c.adminAPI("GET", api+`?filters_override={"date_from":"dStart"}`, nil, &today)
	todays := -1
	for _, tile := range today.Tiles {
		var trends struct{ Results []struct{ Count float64 } }
		if tile.Insight.Name == "Pageviews" && json.Unmarshal(tile.Insight.Result, &trends) == nil && len(trends.Results) == 1 {
			todays = int(trends.Results[0].Count)
		}
	}
	if todays < 1 || todays >= seededPageviews {
		t.Fatalf("hedge counts %d pageviews today, want between 1 and %d", todays, seededPageviews-1)
	}
	c.fill("#date-range", "dStart")
	c.waitTileText("Pageviews", fmt.Sprintf("$pageview %d", todays))
	if got := eval[string](c, `location.search`); !strings.Contains(got, "date_from=dStart") {
		t.Errorf("the URL does not keep the date range: %q", got)
	}
	// Saved for everyone: it holds after a reload without the URL's range, and going
	// back to each tile's own range saves that.
	c.clickButton("Save filters")
	c.waitText(".dash-status", "Filters saved for everyone.")
	c.visit(dashboardPath + id)
	c.waitTileText("Pageviews", fmt.Sprintf("$pageview %d", todays))
	if got := eval[string](c, `document.querySelector('#date-range').value`); got != "dStart" {
		t.Errorf("after a reload the date range is %q, want the saved dStart", got)
	}
	c.fill("#date-range", "")
	c.waitTileText("Pageviews", fmt.Sprintf("$pageview %d", seededPageviews))
	var filters struct{ Filters map[string]any }
	c.adminAPI("GET", api, nil, &filters)
	if filters.Filters["date_from"] != nil {
		t.Errorf("hedge keeps the dashboard's filters %v, want no date_from", filters.Filters)
	}

	// Custom dates, today to today: today's pageviews again, the dates in the URL.
	c.fill("#date-range", "custom")
	day := time.Now().UTC().Format(time.DateOnly)
	c.fill("#date-from", day)
	c.fill("#date-to", day)
	c.clickButton("Apply dates")
	c.waitTileText("Pageviews", fmt.Sprintf("$pageview %d", todays))
	if got := eval[string](c, `location.search`); !strings.Contains(got, "date_from="+day) || !strings.Contains(got, "date_to="+day) {
		t.Errorf("the URL does not keep the custom dates: %q", got)
	}
	c.clickButton("Discard")
	c.waitTileText("Pageviews", fmt.Sprintf("$pageview %d", seededPageviews))

	// A property filter over every tile: the Pageviews tile counts Chrome's, as hedge
	// computes them for the same filters_override; shown as a chip, removed by its ×.
	var chrome struct {
		Tiles []struct {
			Insight struct {
				Name   string
				Result json.RawMessage
			}
		}
	}
	c.adminAPI("GET", api+`?filters_override={"properties":[{"key":"$browser","operator":"exact","value":"Chrome","type":"event"}]}`, nil, &chrome)
	chromes := -1
	for _, tile := range chrome.Tiles {
		var trends struct{ Results []struct{ Count float64 } }
		if tile.Insight.Name == "Pageviews" && json.Unmarshal(tile.Insight.Result, &trends) == nil && len(trends.Results) == 1 {
			chromes = int(trends.Results[0].Count)
		}
	}
	if chromes < 1 || chromes >= seededPageviews {
		t.Fatalf("hedge counts %d Chrome pageviews, want between 1 and %d", chromes, seededPageviews-1)
	}
	c.clickButton("Add filter")
	c.fill("#filter-key", "$browser")
	c.fill("#filter-value", "Chrome")
	c.run(chromedp.Click(chromedp.CSS(`.dash-filter-form button[type="submit"]`)))
	c.waitTileText("Pageviews", fmt.Sprintf("$pageview %d", chromes))
	c.waitText(".dash-filters .chip", "$browser equals Chrome")
	c.checkScreen("dashboard-filters")
	c.clickButton("Remove filter $browser equals Chrome")
	c.waitTileText("Pageviews", fmt.Sprintf("$pageview %d", seededPageviews))

	// Each tile says when it was computed; Refresh has hedge compute every tile afresh.
	if n := eval[int](c, `document.querySelectorAll('.tile-computed').length`); n != 5 {
		t.Errorf("%d tiles say when they were computed, want 5", n)
	}
	c.clickButton("Refresh")
	c.run(chromedp.WaitEnabled(chromedp.CSS(`.dash-refresh button`)))
	if !eval[bool](c, `performance.getEntriesByType('resource').some(e => e.name.includes('/dashboards/'+`+fmt.Sprintf("%q", id)+`+'/?refresh=true'))`) {
		t.Error("Refresh did not ask hedge for fresh results")
	}
	c.waitText(".dash-refresh", "Computed just now")

	// Edit mode, then a keyboard move: the Latest events tile two rows down and four
	// columns narrower, saved with Enter: nothing is above it to leave room for, so it
	// rises back to row 11 and only its width holds. Escape puts an unsaved move back.
	c.clickButton("Edit layout")
	c.run(chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Move Latest events"]`)))
	c.checkScreen("dashboard-edit")
	c.tabTo("Move Latest events")
	c.key(kb.ArrowDown)
	c.key(kb.ArrowDown)
	for range 4 {
		c.run(chromedp.KeyEvent(kb.ArrowLeft, chromedp.KeyModifiers(chromedp.ModifierShift)))
	}
	c.waitText(".dash-status", "Latest events: column 1, row 13, 8 wide, 6 high.")
	c.key("\r")
	c.waitText(".dash-status", "Latest events saved at column 1, row 11.")
	c.key(kb.ArrowUp)
	c.key(kb.Escape)
	c.waitText(".dash-status", "Latest events put back.")
	if got := c.tileGrid("Latest events"); got != "1 / span 8|11 / span 6" {
		t.Errorf("after Escape the tile is at %s", got)
	}

	// A drag: the DAU tile's handle five rows down, past the Pageviews tile below it.
	// The two swap, and both are saved.
	c.drag(`button[aria-label="Move Daily active users (DAUs)"]`, 0, 5)
	c.waitText(".dash-status", "Daily active users (DAUs) saved at column 1, row 6.")
	if got := c.tileGrid("Pageviews"); got != "1 / span 6|1 / span 5" {
		t.Errorf("the covered Pageviews tile is at %s, want risen to row 1", got)
	}
	// Its corner resizes a tile: the WAU tile two columns narrower.
	c.drag(fmt.Sprintf(`%s.querySelector('.resize-corner')`, tileJS("Weekly active users (WAUs)")), -2, 0)
	c.waitText(".dash-status", "Weekly active users (WAUs) saved at column 7, row 1.")

	// After a reload (edit mode off) the places hold, on screen and in hedge.
	c.visit(dashboardPath + id)
	c.waitTiles(5)
	for name, want := range map[string]string{
		"Latest events": "1 / span 8|11 / span 6", "Daily active users (DAUs)": "1 / span 6|6 / span 5", "Pageviews": "1 / span 6|1 / span 5",
		"Weekly active users (WAUs)": "7 / span 4|1 / span 5",
	} {
		if got := c.tileGrid(name); got != want {
			t.Errorf("after a reload %s is at %s, want %s", name, got, want)
		}
	}
	var saved struct {
		Tiles []struct {
			Insight *struct{ Name string }
			Layouts struct{ SM struct{ X, Y, W, H int } }
		}
	}
	c.adminAPI("GET", api, nil, &saved)
	for _, tile := range saved.Tiles {
		if tile.Insight != nil && tile.Insight.Name == "Latest events" && tile.Layouts.SM != (struct{ X, Y, W, H int }{0, 10, 8, 6}) {
			t.Errorf("hedge keeps Latest events at %+v", tile.Layouts.SM)
		}
	}

	// A text card added while editing, then removed (and the removal undone once).
	c.clickButton("Edit layout")
	c.clickButton("Add text")
	c.fill("#field-tiles__0__text__body", "Numbers for the Monday meeting.")
	c.run(chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	c.waitTiles(6)
	c.waitTileText("Text", "Numbers for the Monday meeting.")
	c.clickButton("Remove Text")
	c.waitTiles(5)
	c.clickButton("Undo")
	c.waitTiles(6)
	c.clickButton("Remove Text")
	c.waitTiles(5)
	c.visit(dashboardPath + id)
	c.waitTiles(5)

	// A member who may not edit it (the dashboard restricted to its editors) sees the
	// tiles and no edit control.
	c.adminAPI("PATCH", api, map[string]any{"restriction_level": 37}, nil)
	viewer, password := c.member("viewer@example.com")
	c.signOut()
	c.signInAs(viewer, password)
	c.run(chromedp.WaitVisible(chromedp.CSS("header.top")))
	c.visit(fmt.Sprintf("/project/%d/dashboards", c.boot.ProjectID))
	c.waitText("main table", "View only")
	c.visit(dashboardPath + id)
	c.waitTiles(5)
	c.waitTileText("Pageviews", fmt.Sprint(seededPageviews))
	for _, control := range []string{"Edit layout", "Share", "Add text", "Add insight", "Save filters"} {
		if eval[bool](c, fmt.Sprintf(`[...document.querySelectorAll('button')].some(b => b.innerText.trim() === %q)`, control)) {
			t.Errorf("a viewer sees %q", control)
		}
	}
	c.visit(dashboardPath + id + "?edit=1")
	c.waitTiles(5)
	if eval[bool](c, `!!document.querySelector('.move-handle, .resize-corner')`) || eval[bool](c, `[...document.querySelectorAll('button')].some(b => /^Remove /.test(b.getAttribute('aria-label') || ''))`) {
		t.Error("a viewer gets edit controls with ?edit=1")
	}
}

// member invites email to the organization as a member and accepts the invite with a
// password, answering the e-mail and the password to sign in with.
func (c *consoleTab) member(email string) (string, string) {
	c.t.Helper()
	var invite struct{ ID string }
	if status := c.adminAPI("POST", "/api/organizations/"+c.boot.OrganizationID+"/invites/",
		map[string]any{"target_email": email, "level": 1, "send_email": false}, &invite); status != http.StatusCreated {
		c.t.Fatalf("inviting %s: %d", email, status)
	}
	password := "viewer-password-42"
	resp, err := http.Post(c.hedge.adminURL+"/api/signup/"+invite.ID+"/", "application/json", strings.NewReader(`{"first_name": "Vi", "password": "`+password+`"}`))
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		c.t.Fatalf("accepting the invite of %s: %d", email, resp.StatusCode)
	}
	return email, password
}

// A shared dashboard: sharing on gives a link that opens signed out as a read-only
// page with the tiles' results and nobody's e-mail, fetches again with ?refresh=,
// is dark with ?theme=dark, and after "Rotate link" the old link says it no longer
// works while the new one opens.
func TestConsoleSharedDashboard(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/dashboards", c.boot.ProjectID))
	c.run(chromedp.Click(chromedp.CSS("main table a")))
	c.waitTiles(5)
	link := c.enableSharing()
	if !strings.Contains(link, "/shared/") || !strings.Contains(link, "refresh=60") {
		t.Fatalf("the share link is %q, want /shared/… with refresh=60", link)
	}
	c.checkScreen("share-dialog")

	// Signed out, the link opens the page (HTML, not JSON), read only.
	c.signOut()
	c.run(chromedp.Navigate(link))
	c.waitTiles(5)
	c.waitTileText("Pageviews", fmt.Sprint(seededPageviews))
	c.waitTileText("Latest events", "user-ada")
	if got := eval[string](c, `document.contentType`); got != "text/html" {
		t.Errorf("the link answered %s to the browser", got)
	}
	if got := eval[string](c, `document.querySelector('h1').innerText`); got != "My App Dashboard" {
		t.Errorf("the page's heading is %q", got)
	}
	controls := eval[[]string](c, `[...document.querySelectorAll('button, a, input, select, textarea')]
		.map(e => (e.getAttribute('aria-label') || e.innerText || e.value || '').trim())
		.filter(s => /edit|share|remove|move|rotate|add text|sign|save/i.test(s))`)
	if len(controls) > 0 {
		t.Errorf("the public page offers edit controls: %q", controls)
	}
	if html := eval[string](c, `document.documentElement.outerHTML`); strings.Contains(html, c.boot.UserEmail) {
		t.Errorf("the public page shows the creator's e-mail %s", c.boot.UserEmail)
	}
	if got := c.text(".shared-updated"); !strings.Contains(got, "again every 60 s") {
		t.Errorf("the page says %q, want it refreshing every 60 s", got)
	}
	c.checkScreen("shared-dashboard")

	// ?refresh= below the minimum is raised to it; new events show without a reload.
	short := strings.Replace(link, "refresh=60", "refresh=1", 1)
	c.run(chromedp.Navigate(short))
	c.waitTiles(5)
	c.waitText(".shared-updated", "again every 10 s")
	eval[bool](c, `(window.__stay = true)`)
	sendPageviews(t, c.hedge.captureURL, c.boot.ProjectAPIKey, 2)
	c.waitTileTextWithin("Pageviews", fmt.Sprintf("$pageview %d", seededPageviews+2), 30*time.Second)
	if !eval[bool](c, `window.__stay === true`) {
		t.Error("the page reloaded itself instead of fetching its data")
	}

	// ?theme=dark is dark whatever the system prefers.
	c.setDark(false)
	c.run(chromedp.Navigate(strings.Replace(link, "refresh=60", "theme=dark", 1)))
	c.waitTiles(5)
	if got := eval[string](c, `document.documentElement.dataset.theme`); got != "dark" {
		t.Errorf("?theme=dark shows the %s theme", got)
	}
	// The embedded twin renders the same tiles.
	c.run(chromedp.Navigate(strings.Replace(strings.Split(link, "?")[0], "/shared/", "/embedded/", 1)))
	c.waitTiles(5)

	// Rotate: signed in again, "Rotate link" makes a new link.
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/dashboards", c.boot.ProjectID))
	c.run(chromedp.Click(chromedp.CSS("main table a")))
	c.waitTiles(5)
	c.clickButton("Share")
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-share_link")))
	c.clickButton("Rotate link")
	c.waitText(".share-note", "the old one no longer works")
	old := strings.Split(link, "?")[0]
	deadline := time.Now().Add(10 * time.Second)
	var rotated string
	for rotated == "" || rotated == old {
		if time.Now().After(deadline) {
			t.Fatal("the link did not change after Rotate link")
		}
		time.Sleep(100 * time.Millisecond)
		rotated = eval[string](c, `document.querySelector('#field-share_link').value`)
	}

	c.signOut()
	c.expect("/shared/", 404)
	c.run(chromedp.Navigate(old))
	c.waitText("main h1", "This link no longer works")
	c.checkScreen("shared-dashboard-gone")
	c.run(chromedp.Navigate(rotated))
	c.waitTiles(5)
}

// waitTiles waits until the grid shows n tiles.
func (c *consoleTab) waitTiles(n int) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := eval[int](c, `document.querySelectorAll('.dash-grid .tile').length`)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the grid shows %d tiles, want %d", got, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tileJS is an expression for the tile whose heading is name.
func tileJS(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('.tile')].find(t => t.querySelector('h2').innerText.trim() === %q)`, name)
}

// tileGrid is where the tile named name sits: its grid column and row, as computed.
func (c *consoleTab) tileGrid(name string) string {
	c.t.Helper()
	return eval[string](c, fmt.Sprintf(`(() => { const t = %s; if (!t) return 'missing';
		const s = getComputedStyle(t); return s.gridColumn + '|' + s.gridRow; })()`, tileJS(name)))
}

// waitTileText waits until the tile named name shows want.
func (c *consoleTab) waitTileText(name, want string) {
	c.t.Helper()
	c.waitTileTextWithin(name, want, 20*time.Second)
}

func (c *consoleTab) waitTileTextWithin(name, want string, d time.Duration) {
	c.t.Helper()
	c.waitJSText("the "+name+" tile", fmt.Sprintf(`(() => { const t = %s; return t ? t.innerText : ''; })()`, tileJS(name)), want, d)
}

// clickButton clicks the visible button whose text or label is name.
func (c *consoleTab) clickButton(name string) {
	c.t.Helper()
	sel := fmt.Sprintf(`[...document.querySelectorAll('button')].find(b => b.offsetParent !== null && ((b.getAttribute('aria-label') || b.innerText).trim() === %q))`, name)
	deadline := time.Now().Add(20 * time.Second)
	for !eval[bool](c, `!!`+sel) {
		if time.Now().After(deadline) {
			c.t.Fatalf("no button %q", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	eval[bool](c, `(`+sel+`).click(), true`)
}

// drag presses the mouse on an element and moves it by cols columns and rows rows of
// the dashboard grid before releasing it. The element is the one a CSS selector
// matches, or a JavaScript expression's when el starts with "[...".
func (c *consoleTab) drag(el string, cols, rows int) {
	c.t.Helper()
	if !strings.HasPrefix(el, "[...") {
		el = fmt.Sprintf(`document.querySelector(%q)`, el)
	}
	at := eval[map[string]float64](c, fmt.Sprintf(`(() => { const e = %s; e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();
		const g = document.querySelector('.dash-grid'); const gap = parseFloat(getComputedStyle(g).columnGap);
		return {x: r.left + r.width / 2, y: r.top + r.height / 2, col: (g.clientWidth + gap) / 12, row: parseFloat(getComputedStyle(g).gridAutoRows) + gap}; })()`, el))
	c.run(chromedp.DragAndDropXY(at["x"], at["y"], at["x"]+float64(cols)*at["col"], at["y"]+float64(rows)*at["row"], 12))
}

// enableSharing opens the share dialog, turns sharing on, asks for a refresh every
// minute, and answers the link shown.
func (c *consoleTab) enableSharing() string {
	c.t.Helper()
	c.clickButton("Share")
	c.run(chromedp.WaitVisible(chromedp.CSS(`dialog input[type="checkbox"]`)))
	c.run(chromedp.Click(chromedp.CSS(`dialog input[type="checkbox"]`)))
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-share_link")))
	c.fill("#field-share_refresh", "60")
	return eval[string](c, `document.querySelector('#field-share_link').value`)
}

// signOut drops the browser's cookies of this hedge: the next page is a signed-out
// visitor's.
func (c *consoleTab) signOut() {
	c.t.Helper()
	for _, k := range c.browserCookies() {
		c.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Call(ctx, network.DeleteCookies, network.DeleteCookiesParams{Name: k.Name, URL: c.hedge.adminURL})
			return err
		}))
	}
}

// sendPageviews sends n pageviews of a new user now.
func sendPageviews(t *testing.T, captureURL, token string, n int) {
	t.Helper()
	var batch []map[string]any
	for i := range n {
		batch = append(batch, map[string]any{"event": "$pageview", "distinct_id": "user-late",
			"timestamp": time.Now().UTC().Add(-time.Duration(i) * time.Second).Format(time.RFC3339Nano), "properties": map[string]any{"$browser": "Chrome"}})
	}
	postBatch(t, captureURL, token, batch)
}

// A new dashboard is not a dead end: its empty grid offers "Add insight", which adds
// saved insights found by name and makes new ones; each new tile takes the grid's
// first free spot (the right half before a new row), and a tile dragged away leaves no
// gap, the tiles below it rising into its place. A member who may only view it sees
// no edit control, and its insights open as view only, saved as their own copy
// instead of a Save that hedge refuses.
func TestConsoleNewDashboard(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/dashboards", c.boot.ProjectID))
	c.fill("#field-name", "Launch week")
	c.run(chromedp.Click(chromedp.CSS(`form[aria-label="New dashboard"] button[type=submit]`)))
	c.waitText("main h1", "Launch week")
	c.waitText("main .empty", "This dashboard is empty.")
	dashboardURL := eval[string](c, `location.pathname`)
	id := strings.TrimPrefix(dashboardURL, fmt.Sprintf("/project/%d/dashboard/", c.boot.ProjectID))
	c.checkScreen("dashboard-empty")

	// Saved insights by name: the bootstrap dashboard's five are there.
	c.clickButton("Add insight")
	c.run(chromedp.WaitVisible(chromedp.CSS("dialog[open] .insight-picks")))
	c.fill("#field-insight_search", "pageviews")
	c.waitText("dialog[open] .insight-picks", "Pageviews by browser")
	c.checkScreen("dashboard-add-insight")
	c.clickButton("Add Pageviews")
	c.waitTiles(1)
	c.waitText(".dash-status", "Pageviews added at column 1, row 1.")
	// The next ones fill the right half, then a new row.
	for n, tile := range []struct{ name, search, at string }{
		{"Daily active users (DAUs)", "daily", "7 / span 6|1 / span 5"},
		{"Pageviews by browser", "browser", "1 / span 6|6 / span 5"},
	} {
		c.clickButton("Add insight")
		c.fill("#field-insight_search", tile.search)
		c.clickButton("Add " + tile.name)
		c.waitTiles(n + 2)
		c.run(chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))
		if got := c.tileGrid(tile.name); got != tile.at {
			t.Errorf("the added %s is at %s, want %s", tile.name, got, tile.at)
		}
	}
	c.waitTiles(3)
	c.waitTileText("Pageviews", fmt.Sprint(seededPageviews))
	// Already on the dashboard: marked, not offered again.
	c.clickButton("Add insight")
	c.fill("#field-insight_search", "daily")
	c.waitText("dialog[open] .insight-picks", "On this dashboard")
	c.clickButton("Cancel")

	// Dragging the first tile down past the one below it: that one rises into the
	// place it left, and it goes below, with no gap above either.
	if got := eval[string](c, `location.search`); got != "?edit=1" {
		t.Errorf("the new dashboard opened with %q, want in edit mode", got)
	}
	c.drag(`button[aria-label="Move Pageviews"]`, 0, 5)
	c.waitText(".dash-status", "Pageviews saved at column 1, row 6.")
	c.visit(dashboardURL)
	c.waitTiles(3)
	for name, want := range map[string]string{
		"Pageviews by browser": "1 / span 6|1 / span 5", "Pageviews": "1 / span 6|6 / span 5", "Daily active users (DAUs)": "7 / span 6|1 / span 5",
	} {
		if got := c.tileGrid(name); got != want {
			t.Errorf("after the drag and a reload %s is at %s, want %s", name, got, want)
		}
	}
	// A text card too takes the first free spot: beside Pageviews.
	c.visit(dashboardURL + "?edit=1")
	c.waitTiles(3)
	c.clickButton("Add text")
	c.fill("#field-tiles__0__text__body", "Launch numbers.")
	c.run(chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	c.waitTiles(4)
	if got := c.tileGrid("Text"); got != "7 / span 6|6 / span 2" {
		t.Errorf("the text card is at %s, want beside Pageviews", got)
	}

	// A new insight from the dialog is saved onto the dashboard, in the next free spot.
	c.clickButton("Add insight")
	c.run(chromedp.Click(chromedp.CSS(`dialog[open] a.button`)))
	c.waitText(".save-bar button[type=submit]", "Save to dashboard")
	c.fill("#field-name", "Launch pageviews")
	c.run(chromedp.Click(chromedp.CSS(`.save-bar button[type=submit]`)))
	c.waitText("main h1", "Launch week")
	c.waitTiles(5)
	c.waitTileText("Launch pageviews", "$pageview")
	if got := c.tileGrid("Launch pageviews"); got != "7 / span 6|8 / span 5" {
		t.Errorf("the new insight's tile is at %s, want under the text card", got)
	}
	c.checkScreen("dashboard-new")

	// A member who may only view it: no edit control, and its insights are view only.
	c.adminAPI("PATCH", fmt.Sprintf("/api/projects/%d/dashboards/%s/", c.boot.ProjectID, id), map[string]any{"restriction_level": 37}, nil)
	viewer, password := c.member("viewer@example.com")
	c.signOut()
	c.signInAs(viewer, password)
	c.run(chromedp.WaitVisible(chromedp.CSS("header.top")))
	c.visit(dashboardURL)
	c.waitTiles(5)
	for _, control := range []string{"Edit layout", "Share", "Add text", "Add insight", "Save filters"} {
		if eval[bool](c, fmt.Sprintf(`[...document.querySelectorAll('button')].some(b => b.innerText.trim() === %q)`, control)) {
			t.Errorf("a viewer sees %q", control)
		}
	}
	eval[bool](c, fmt.Sprintf(`%s.querySelector('h2 a').click(), true`, tileJS("Launch pageviews")))
	c.waitText(".save-bar", "View only.")
	if got := c.text(".save-bar button[type=submit]"); got != "Save as a new insight" {
		t.Errorf("a viewer's save button says %q", got)
	}
	if eval[bool](c, `!!document.querySelector('.add-dashboard')`) {
		t.Error("a viewer is offered to add a view-only insight to dashboards")
	}
	c.checkScreen("insight-view-only")
	c.fill("#field-name", "My launch pageviews")
	c.run(chromedp.Click(chromedp.CSS(`.save-bar button[type=submit]`)))
	c.waitText("main h1", "My launch pageviews")
	var page struct {
		Results []savedInsight `json:"results"`
	}
	c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/insights/?search=launch", c.boot.ProjectID), nil, &page)
	names := map[string]bool{}
	for _, i := range page.Results {
		names[i.Name] = true
	}
	if len(names) != 2 || !names["Launch pageviews"] || !names["My launch pageviews"] {
		t.Errorf("after the viewer's save the insights are %v, want the original untouched and a copy", names)
	}
}

// "Add to dashboard" on an insight: a placeholder until the user picks one of the
// dashboards, named, that the insight is not on; nothing is added before, and the
// one picked is the one added, not the first.
func TestConsoleInsightAddToDashboard(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	dashboards := map[string]int{}
	for _, name := range []string{"Alpha", "Zeta"} {
		var d struct{ ID int }
		c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/dashboards/", c.boot.ProjectID), map[string]any{"name": name}, &d)
		dashboards[name] = d.ID
	}
	made := struct {
		ShortID string `json:"short_id"`
	}{}
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/insights/", c.boot.ProjectID), map[string]any{"name": "Signups",
		"query": map[string]any{"kind": "InsightVizNode", "source": map[string]any{"kind": "TrendsQuery", "series": []any{map[string]any{"kind": "EventsNode", "event": "signed_up"}}}}}, &made)
	c.visit(fmt.Sprintf("/project/%d/insights/%s", c.boot.ProjectID, made.ShortID))
	c.waitText(".add-dashboard", "On no dashboard yet.")
	waitFor(t, 10*time.Second, "the dashboards to choose from", func() bool {
		return eval[int](c, `document.querySelectorAll('#field-dashboard option').length`) >= 3
	})
	options := eval[[]string](c, `[...document.querySelectorAll('#field-dashboard option')].map(o => o.innerText)`)
	if strings.Join(options, "|") != "Choose a dashboard…|My App Dashboard|Alpha|Zeta" && strings.Join(options, "|") != "Choose a dashboard…|Alpha|My App Dashboard|Zeta" {
		t.Errorf("the dashboard choice offers %q", options)
	}
	if got := eval[string](c, `(s => s.selectedIndex < 0 ? '(blank)' : s.options[s.selectedIndex].innerText)(document.querySelector('#field-dashboard'))`); got != "Choose a dashboard…" {
		t.Errorf("the dashboard choice shows %q before one is picked", got)
	}
	if !eval[bool](c, `document.querySelector('.add-dashboard button[type=submit]').disabled`) {
		t.Error("Add works before a dashboard is picked")
	}
	c.checkScreen("insight-add-to-dashboard")
	// Enter in the form before a choice adds nothing either.
	eval[bool](c, `document.querySelector('.add-dashboard').requestSubmit(), true`)
	time.Sleep(300 * time.Millisecond)
	if got := c.insightByShortID(made.ShortID).Dashboards; len(got) != 0 {
		t.Fatalf("without a choice the insight went on %v", got)
	}
	// Tab reaches the choice; Zeta picked, Add adds it.
	c.tabTo("select|field-dashboard")
	c.fill("#field-dashboard", fmt.Sprint(dashboards["Zeta"]))
	c.run(chromedp.Click(chromedp.CSS(`.add-dashboard button[type=submit]`)))
	c.waitText(".add-dashboard [role=status]", "Added to Zeta.")
	if got := c.insightByShortID(made.ShortID).Dashboards; len(got) != 1 || got[0] != dashboards["Zeta"] {
		t.Errorf("the insight is on %v, want only Zeta (%d)", got, dashboards["Zeta"])
	}
	if got := eval[[]string](c, `[...document.querySelectorAll('#field-dashboard option')].map(o => o.innerText)`); strings.Contains(strings.Join(got, "|"), "Zeta") {
		t.Errorf("Zeta is still offered: %q", got)
	}
}

// A dashboard tile draws the interval that includes now dashed, as the insight screen
// does, with "now" on the project's clocks: the tile's trend counts days in the
// project's time zone (Kiritimati, UTC+14), which the browser's (Pago Pago, UTC-11)
// is always one or two days behind. With the browser's clock the tile would draw two
// or more days dashed.
func TestConsoleDashboardInProgress(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	const project, browser = "Pacific/Kiritimati", "Pacific/Pago_Pago"
	c.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: browser})
		return err
	}))
	if status := c.adminAPI("PATCH", fmt.Sprintf("/api/projects/%d/", c.boot.ProjectID), map[string]any{"timezone": project}, nil); status != 200 {
		t.Fatalf("setting the project's time zone answers %d", status)
	}
	var dashboard struct{ ID int }
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/dashboards/", c.boot.ProjectID), map[string]any{"name": "This week"}, &dashboard)
	if status := c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/insights/", c.boot.ProjectID), map[string]any{
		"name": "Pageviews this week", "dashboards": []int{dashboard.ID},
		"query": map[string]any{"kind": "InsightVizNode", "source": map[string]any{"kind": "TrendsQuery", "interval": "day",
			"dateRange": map[string]any{"date_from": "-7d"}, "series": []any{map[string]any{"kind": "EventsNode", "event": "$pageview"}}}},
	}, nil); status != 201 {
		t.Fatalf("creating the insight answers %d", status)
	}

	c.visit(fmt.Sprintf("/project/%d/dashboard/%d", c.boot.ProjectID, dashboard.ID))
	c.waitTiles(1)
	if got := eval[string](c, `Intl.DateTimeFormat().resolvedOptions().timeZone`); got != browser {
		t.Fatalf("the browser runs in %s, want %s", got, browser)
	}
	c.waitTileText("Pageviews this week", "still in progress")
	type line struct {
		D, Dash string
		Points  int
	}
	got := eval[[]line](c, `[...document.querySelectorAll('.tile svg.plot path.line')].map(p =>
		({d: p.getAttribute('d'), dash: p.classList.contains('in-progress') ? getComputedStyle(p).strokeDasharray : '', points: (p.getAttribute('d').match(/[ML]/g) || []).length}))`)
	days := eval[[]string](c, `[...document.querySelectorAll('.tile svg.plot circle.point')].map(p => p.getAttribute('class'))`)
	if len(days) != 8 || len(got) != 2 || got[0].Dash != "" || got[0].Points != len(days)-1 || got[1].Dash == "" || got[1].Dash == "none" || got[1].Points != 2 {
		t.Fatalf("the tile's line is drawn as %+v over %d days, want a solid path to yesterday and a dashed one from yesterday to today in %s", got, len(days), project)
	}
	for i, class := range days {
		if inProgress := strings.Contains(class, "in-progress"); inProgress != (i == len(days)-1) {
			t.Errorf("day %d of %d is drawn %q", i+1, len(days), class)
		}
	}
	// The note saying what the dashes mean fits in the tile with the chart.
	if got := eval[map[string]float64](c, `(b => ({scroll: b.scrollHeight, client: b.clientHeight}))(document.querySelector('.tile-body'))`); got["scroll"] > got["client"] {
		t.Errorf("the tile's body scrolls (%v): its chart and note do not fit", got)
	}
	c.checkScreen("dashboard-in-progress")
}

// dashboardsByName lists the project's dashboards (not deleted) through the API, by
// name, each as the API answers it.
// deleteRowWithUndo deletes the row of name from the project's list (insights or
// dashboards) with its Delete button, checks that the row and the API's listing
// (byName) lose it, then brings it back with Undo and checks both have it again.
func (c *consoleTab) deleteRowWithUndo(list, name string, byName func() map[string]map[string]any) {
	c.t.Helper()
	c.visit(fmt.Sprintf("/project/%d/%s", c.boot.ProjectID, list))
	c.waitText("main table", name)
	c.clickButton("Delete " + name)
	c.waitText("main [role=status]", name+" deleted.")
	waitFor(c.t, 10*time.Second, "the row to go", func() bool {
		return !strings.Contains(c.text("main table"), name)
	})
	if _, listed := byName()[name]; listed {
		c.t.Fatalf("%s, deleted from the list of %s, is still listed", name, list)
	}
	c.checkScreen(list + "-row-deleted")
	c.clickButton("Undo")
	c.waitText("main table", name)
	if _, listed := byName()[name]; !listed {
		c.t.Fatalf("after the list's Undo %s is not listed", name)
	}
}

func (c *consoleTab) dashboardsByName() map[string]map[string]any {
	c.t.Helper()
	var page struct {
		Results []map[string]any `json:"results"`
	}
	c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/dashboards/?limit=200", c.boot.ProjectID), nil, &page)
	out := map[string]map[string]any{}
	for _, r := range page.Results {
		out[fmt.Sprint(r["name"])] = r
	}
	return out
}

// A dashboard is renamed in place, duplicated into "<name> (copy)" with the same
// tiles, which opens, and deleted: the screen says so with Undo, which brings it back,
// and a link to the list. A member who may only view it is offered Duplicate only.
func TestConsoleDashboardManage(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	var d struct{ ID int }
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/dashboards/", c.boot.ProjectID), map[string]any{"name": "Weekly"}, &d)
	c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/insights/", c.boot.ProjectID), map[string]any{"name": "Signups", "dashboards": []int{d.ID},
		"query": map[string]any{"kind": "InsightVizNode", "source": map[string]any{"kind": "TrendsQuery", "series": []any{map[string]any{"kind": "EventsNode", "event": "signed_up"}}}}}, nil)
	path := fmt.Sprintf("/project/%d/dashboard/%d", c.boot.ProjectID, d.ID)
	c.visit(path)
	c.waitTiles(1)

	// Rename in place.
	c.clickButton("Rename")
	if got := eval[string](c, `document.querySelector('#field-name').value`); got != "Weekly" {
		t.Errorf("the name field starts with %q", got)
	}
	c.fill("#field-name", "Weekly review")
	c.checkScreen("dashboard-rename")
	c.clickButton("Save name")
	c.waitText("main h1", "Weekly review")
	c.waitText(".dash-status", "Renamed to Weekly review.")
	if _, ok := c.dashboardsByName()["Weekly review"]; !ok {
		t.Fatalf("the dashboards after a rename: %v", slices.Sorted(maps.Keys(c.dashboardsByName())))
	}
	c.checkScreen("dashboard-manage")

	// Duplicate: a new dashboard with the same tiles, opened at once.
	c.clickButton("Duplicate")
	c.waitText("main h1", "Weekly review (copy)")
	c.waitTiles(1)
	copied, ok := c.dashboardsByName()["Weekly review (copy)"]
	if !ok {
		t.Fatalf("no copy among %v", slices.Sorted(maps.Keys(c.dashboardsByName())))
	}
	copyPath := fmt.Sprintf("/project/%d/dashboard/%v", c.boot.ProjectID, copied["id"])
	if got := eval[string](c, `location.pathname`); got != copyPath {
		t.Errorf("Duplicate opened %s, not the copy %s", got, copyPath)
	}
	var full struct {
		Tiles []struct {
			Insight struct{ Name string } `json:"insight"`
		} `json:"tiles"`
	}
	c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/dashboards/%v/", c.boot.ProjectID, copied["id"]), nil, &full)
	if len(full.Tiles) != 1 || full.Tiles[0].Insight.Name != "Signups" {
		t.Errorf("the copy's tiles: %+v", full.Tiles)
	}

	// Delete the copy: the screen says so, the list no longer has it.
	c.clickButton("Delete")
	c.waitText("main", "Weekly review (copy) deleted.")
	if _, listed := c.dashboardsByName()["Weekly review (copy)"]; listed {
		t.Fatal("the deleted dashboard is still listed")
	}
	if got := eval[string](c, `[...document.querySelectorAll('main a')].filter(a => a.innerText === 'Back to dashboards').map(a => a.pathname).join()`); got != fmt.Sprintf("/project/%d/dashboards", c.boot.ProjectID) {
		t.Errorf("the link back to the list goes to %q", got)
	}
	c.checkScreen("dashboard-deleted")

	// Undo brings it back, with its tile, on screen and in the list.
	c.clickButton("Undo")
	c.waitText("main h1", "Weekly review (copy)")
	c.waitTiles(1)
	c.waitText(".dash-status", "Weekly review (copy) is back.")
	if _, listed := c.dashboardsByName()["Weekly review (copy)"]; !listed {
		t.Fatal("after Undo the dashboard is not listed")
	}

	// The list deletes a row too, with Undo.
	c.deleteRowWithUndo("dashboards", "Weekly review (copy)", c.dashboardsByName)

	// A member who may only view it sees neither Rename nor Delete.
	c.adminAPI("PATCH", fmt.Sprintf("/api/projects/%d/dashboards/%d/", c.boot.ProjectID, d.ID), map[string]any{"restriction_level": 37}, nil)
	viewer, password := c.member("viewer@example.com")
	c.signOut()
	c.signInAs(viewer, password)
	c.run(chromedp.WaitVisible(chromedp.CSS("header.top")))
	c.visit(path)
	c.waitTiles(1)
	if got := eval[[]string](c, `[...document.querySelectorAll('main button')].filter(b => !b.disabled).map(b => b.innerText.trim())`); slices.Contains(got, "Delete") || slices.Contains(got, "Rename") ||
		!slices.Contains(got, "Duplicate") {
		t.Errorf("a viewer's enabled buttons: %q", got)
	}
	c.checkScreen("dashboard-manage-viewer")
	// Nor has its row a Delete.
	c.visit(fmt.Sprintf("/project/%d/dashboards", c.boot.ProjectID))
	c.waitText("main table", "View only")
	if got := eval[[]string](c, `[...document.querySelectorAll('main table button')].map(b => b.getAttribute('aria-label'))`); slices.Contains(got, "Delete Weekly review") ||
		!slices.Contains(got, "Delete Weekly review (copy)") {
		t.Errorf("a viewer's list offers %q", got)
	}
}
