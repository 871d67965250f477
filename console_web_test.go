package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// captureWebSessions sends the sessions the Web analytics tests count: in the last 7
// days alice's session from google.com (/ then /pricing, 60 s), bob's bounce from
// nowhere (/ for 5 s) and carol's from Hacker News (/blog for 20 s); ten days ago,
// alice's bounce.
func captureWebSessions(c *consoleTab) {
	c.t.Helper()
	now := time.Now().UTC()
	var events []map[string]any
	add := func(event, who, session string, at time.Time, props map[string]any) {
		p := map[string]any{"$session_id": session}
		for k, v := range props {
			p[k] = v
		}
		events = append(events, map[string]any{"event": event, "distinct_id": who, "timestamp": at.Format(time.RFC3339Nano), "properties": p})
	}
	view := func(path, device, browser, os, referrer, country string) map[string]any {
		p := map[string]any{"$pathname": path, "$current_url": "https://example.com" + path, "$device_type": device, "$browser": browser, "$os": os,
			"$referring_domain": referrer}
		if country != "" {
			p["$geoip_country_code"] = country
		}
		return p
	}
	s1, s2, s3, p1 := now.Add(-2*24*time.Hour), now.Add(-24*time.Hour), now.Add(-3*24*time.Hour), now.Add(-10*24*time.Hour)
	add("$pageview", "web-alice", "s1", s1, view("/", "Desktop", "Chrome", "Mac OS X", "google.com", "DE"))
	add("$pageview", "web-alice", "s1", s1.Add(30*time.Second), view("/pricing", "Desktop", "Chrome", "Mac OS X", "google.com", "DE"))
	add("$pageleave", "web-alice", "s1", s1.Add(time.Minute), map[string]any{"$pathname": "/pricing"})
	add("$pageview", "web-bob", "s2", s2, view("/", "Mobile", "Safari", "iOS", "$direct", "US"))
	add("$pageleave", "web-bob", "s2", s2.Add(5*time.Second), map[string]any{"$pathname": "/"})
	add("$pageview", "web-carol", "s3", s3, view("/blog", "Desktop", "Firefox", "Windows", "news.ycombinator.com", ""))
	add("$pageleave", "web-carol", "s3", s3.Add(20*time.Second), map[string]any{"$pathname": "/blog"})
	add("$pageview", "web-alice", "p1", p1, view("/", "Desktop", "Chrome", "Mac OS X", "$direct", "DE"))
	c.capture(events...)
}

// The Web analytics screen, counted by hand over captureWebSessions. The seed events
// have no $session_id, and count nowhere. The screen is reached from the menu, shows
// the tiles with their change from the period before and the tables (each card's tabs
// picked in turn), and follows a range chosen to the URL.
func TestConsoleWebAnalytics(t *testing.T) {
	c := openConsole(t)
	captureWebSessions(c)
	c.signIn()

	// From the menu, as PostHog puts it: top level.
	c.visit(fmt.Sprintf("/project/%d/activity", c.boot.ProjectID))
	c.run(chromedp.Click(chromedp.CSS(`header.top nav a[href$="/web"]`)))
	c.waitText("h1", "Web analytics")
	if got := eval[string](c, `document.querySelector('header.top nav a[aria-current=page]').innerText`); got != "Web analytics" {
		t.Errorf("the menu marks %q as the current screen", got)
	}

	// The tiles of the last 7 days against the 7 or 8 before: 3 visitors (1 before), 4
	// views (1), 3 sessions (1) of 60, 5 and 20 s (0 s before: no change to say), one
	// bounce in three (100% before: down, which is good).
	tiles := func() string {
		return eval[string](c, `[...document.querySelectorAll('.web-tile')].map(t => t.dataset.key + ': ' +
			t.querySelector('.web-tile-value').innerText + ', ' + t.querySelector('.web-tile-change').innerText.replace(/\s+/g, ' ').trim() +
			(t.querySelector('.web-good') ? ' (good)' : t.querySelector('.web-bad') ? ' (bad)' : '')).join('\n')`)
	}
	c.run(chromedp.WaitVisible(chromedp.CSS(".web-tile")))
	want := strings.Join([]string{
		"visitors: 3, ▲ up 200% (good)",
		"views: 4, ▲ up 300% (good)",
		"sessions: 3, ▲ up 200% (good)",
		"session-duration: 28s, 0s before",
		"bounce-rate: 33%, ▼ down 67% (good)",
	}, "\n")
	if got := tiles(); got != want {
		t.Errorf("the tiles:\n%s\nwant\n%s", got, want)
	}

	// The tables: each row's value, visitors, views (and bounce rate).
	tableJS := func(by string) string {
		return `[...document.querySelectorAll('section[data-breakdown="` + by + `"] tbody tr')].map(r =>
			[...r.children].map(c => c.innerText.trim()).join(' | ')).join('\n')`
	}
	table := func(by string) string {
		t.Helper()
		if eval[bool](c, `!!document.querySelector('[role=tab][data-tab="`+by+`"]')`) {
			c.run(chromedp.Click(chromedp.CSS(`[role=tab][data-tab="` + by + `"]`)))
		}
		c.run(chromedp.WaitVisible(chromedp.CSS(`section[data-breakdown="` + by + `"] table`)))
		return eval[string](c, tableJS(by))
	}
	for _, tc := range []struct{ by, want string }{
		// / by alice and bob, entered by alice's session and bob's bounce; nobody entered on /pricing.
		{"Page", "/ | 2 | 2 | 50%\n/blog | 1 | 1 | 0%\n/pricing | 1 | 1 | –"},
		{"InitialPage", "/ | 2 | 3 | 50%\n/blog | 1 | 1 | 0%"},
		// alice's session exits on /pricing, bob's on / and carol's on /blog.
		{"ExitPage", "/pricing | 1 | 2\n/ | 1 | 1\n/blog | 1 | 1"},
		{"InitialReferringDomain", "google.com | 1 | 2\nDirect | 1 | 1\nnews.ycombinator.com | 1 | 1"},
		{"DeviceType", "Desktop | 2 | 3\nMobile | 1 | 1"},
		{"Browser", "Chrome | 1 | 2\nFirefox | 1 | 1\nSafari | 1 | 1"},
		{"OS", "Mac OS X | 1 | 2\nWindows | 1 | 1\niOS | 1 | 1"},
		// carol's view has no country, and is left out.
		{"Country", "Germany DE | 1 | 2\nUnited States US | 1 | 1"},
	} {
		if got := table(tc.by); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.by, got, tc.want)
		}
	}
	c.checkScreen("web-analytics")

	// The last 30 days hold alice's session of ten days ago too: 3 visitors, 5 views, 4
	// sessions of 85 s in all, two bounces; nothing before them.
	c.fill("#web-range", "-30d")
	if got := eval[string](c, `location.search`); got != "?date_from=-30d" {
		t.Errorf("the range put %q in the URL", got)
	}
	c.waitJSText("the tiles", `[...document.querySelectorAll('.web-tile-value')].map(v => v.innerText).join(' ')`, "3 5 4 21s 50%", 20*time.Second)
	if got := c.text(`.web-tile[data-key="visitors"] .web-tile-change`); got != "0 before" {
		t.Errorf("the visitors before the last 30 days: %q", got)
	}
	c.run(chromedp.Click(chromedp.CSS(`[role=tab][data-tab="Page"]`)))
	c.waitJSText("the pages of 30 days", tableJS("Page"), "/ | 2 | 3 | 67%\n/blog | 1 | 1 | 0%\n/pricing | 1 | 1 | –", 20*time.Second)

	// The tabs by keyboard: the arrows move along a card's tabs, and show each.
	eval[bool](c, `(document.querySelector('[role=tab][data-tab="Page"]').focus(), true)`)
	c.key(kb.ArrowRight)
	if got := c.focused(); !strings.Contains(got, "Entry pages") {
		t.Errorf("ArrowRight from Pages focused %q", got)
	}
	c.waitJSText("the entry pages by keyboard", `document.querySelector('[role=tab][aria-selected=true][data-tab="InitialPage"]') ? 'shown' : ''`, "shown", 10*time.Second)

	// Without the comparison the tiles say nothing of the period before.
	c.run(chromedp.Click(chromedp.CSS(`#web-compare`)))
	if got := eval[string](c, `location.search`); got != "?date_from=-30d&compare=false" {
		t.Errorf("the comparison put %q in the URL", got)
	}
	c.waitJSText("the tiles without a comparison", `[...document.querySelectorAll('.web-tile')].map(t => t.querySelector('.web-tile-value').innerText + '/' + t.querySelector('.web-tile-change').innerText.trim()).join(' ')`,
		"3/ 5/ 4/ 21s/ 50%/", 20*time.Second)
}

// Filters and cards of the Web analytics screen, over captureWebSessions: the exit
// pages' tab, a click on a row's value that filters every figure by it (a chip in the
// URL, removed again), and a card saved to a dashboard, whose tile shows the table
// the card showed.
func TestConsoleWebFiltersAndCards(t *testing.T) {
	c := openConsole(t)
	captureWebSessions(c)
	var dashboard struct {
		ID int64 `json:"id"`
	}
	if status := c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/dashboards/", c.boot.ProjectID), map[string]any{"name": "Marketing"}, &dashboard); status != 201 {
		t.Fatalf("creating the dashboard: %d", status)
	}
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/web", c.boot.ProjectID))
	tiles := `[...document.querySelectorAll('.web-tile-value')].map(v => v.innerText).join(' ')`
	c.waitJSText("the tiles", tiles, "3 4 3 28s 33%", 20*time.Second)

	// The exit pages: alice's session ends on /pricing (after a $pageleave), bob's on /,
	// carol's on /blog.
	exits := `[...document.querySelectorAll('section[data-breakdown="ExitPage"] tbody tr')].map(r =>
		[...r.children].map(c => c.innerText.trim()).join(' | ')).join('\n')`
	c.run(chromedp.Click(chromedp.CSS(`[role=tab][data-tab="ExitPage"]`)))
	c.waitJSText("the exit pages", exits, "/pricing | 1 | 2\n/ | 1 | 1\n/blog | 1 | 1", 20*time.Second)
	if got := eval[string](c, `document.querySelector('[role=tab][aria-selected=true][data-tab]').closest('section').dataset.breakdown`); got != "ExitPage" {
		t.Errorf("the paths card shows %q", got)
	}

	// A click on /pricing filters by the views of /pricing: alice's session alone, its
	// one view of /pricing, 60 s, no bounce.
	c.run(chromedp.Click(chromedp.CSS(`section[data-breakdown="ExitPage"] tbody tr:first-child .web-pick`)))
	c.waitText(".web-filters .chip", "$pathname equals /pricing")
	if got := eval[string](c, `new URLSearchParams(location.search).get('properties')`); got != `[{"key":"$pathname","value":"/pricing","operator":"exact","type":"event"}]` {
		t.Errorf("the filter in the URL: %s", got)
	}
	c.waitJSText("the filtered tiles", tiles, "1 1 1 1m 0s 0%", 20*time.Second)
	c.waitJSText("the filtered exit pages", exits, "/pricing | 1 | 1", 20*time.Second)
	if got := eval[string](c, exits); got != "/pricing | 1 | 1" {
		t.Errorf("the filtered exit pages: %q", got)
	}
	c.checkScreen("web-analytics-filtered")

	// Removed, every figure is back.
	c.run(chromedp.Click(chromedp.CSS(`.web-filters .chip button`)))
	c.waitJSText("the tiles unfiltered", tiles, "3 4 3 28s 33%", 20*time.Second)
	if got := eval[string](c, `location.search`); got != "" {
		t.Errorf("the URL after removing the filter: %q", got)
	}

	// The exit pages card, filtered again, saved to the dashboard.
	c.run(chromedp.Click(chromedp.CSS(`section[data-breakdown="ExitPage"] tbody tr:first-child .web-pick`)))
	c.waitJSText("the filtered exit pages", exits, "/pricing | 1 | 1", 20*time.Second)
	c.run(chromedp.Click(chromedp.CSS(`section[data-breakdown="ExitPage"] .web-save`)))
	waitFor(t, 20*time.Second, "the dashboards to choose from", func() bool {
		return eval[bool](c, `!!document.querySelector('dialog[open] #field-dashboards option[value="`+fmt.Sprint(dashboard.ID)+`"]')`)
	})
	if got := eval[string](c, `document.querySelector('dialog[open] #field-name').value`); got != "Exit pages · Last 7 days" {
		t.Errorf("the name offered: %q", got)
	}
	c.fill("dialog[open] #field-dashboards", fmt.Sprint(dashboard.ID))
	c.checkScreen("web-analytics-save")
	c.run(chromedp.Click(chromedp.CSS(`dialog[open] button[type="submit"]`)))
	c.waitText("dialog[open] .web-saved", "Saved as Exit pages · Last 7 days on Marketing.")

	// And the overview, under the same filter.
	c.run(chromedp.Click(chromedp.CSS(`dialog[open] .confirm-actions button.secondary`)))
	c.run(chromedp.Click(chromedp.CSS(`.web-overview .web-save`)))
	waitFor(t, 20*time.Second, "the dashboards to choose from", func() bool {
		return eval[bool](c, `!!document.querySelector('dialog[open] #field-dashboards option[value="`+fmt.Sprint(dashboard.ID)+`"]')`)
	})
	c.fill("dialog[open] #field-dashboards", fmt.Sprint(dashboard.ID))
	c.run(chromedp.Click(chromedp.CSS(`dialog[open] button[type="submit"]`)))
	c.waitText("dialog[open] .web-saved", "Saved as Web overview · Last 7 days on Marketing.")

	// The dashboard's tiles show the card's table and the overview's numbers, under
	// their filter.
	c.run(chromedp.Click(chromedp.CSS(`dialog[open] .web-saved a[href$="/dashboard/` + fmt.Sprint(dashboard.ID) + `"]`)))
	tile := `[...document.querySelectorAll('article.tile tbody tr')].map(r => [...r.children].map(c => c.innerText.trim()).join(' | ')).join('\n')`
	c.waitJSText("the dashboard's table tile", tile, "/pricing | 1 | 1", 20*time.Second)
	c.waitJSText("the dashboard's overview tile", `[...document.querySelectorAll('article.tile .web-tile-value')].map(v => v.innerText).join(' ')`,
		"1 1 1 1m 0s 0%", 20*time.Second)
	if got := eval[string](c, `[...document.querySelectorAll('article.tile h2')].map(h => h.innerText).sort().join(', ')`); got != "Exit pages · Last 7 days, Web overview · Last 7 days" {
		t.Errorf("the tiles' names: %q", got)
	}
	c.checkScreen("web-dashboard")

	// Its insight page shows the same, with where it came from.
	c.run(chromedp.Click(chromedp.CSS(`article.tile:has(table) h2 a`)))
	c.waitText("h1", "Exit pages · Last 7 days")
	c.waitJSText("the insight's table", `[...document.querySelectorAll('.web-insight tbody tr')].map(r => [...r.children].map(c => c.innerText.trim()).join(' | ')).join('\n')`,
		"/pricing | 1 | 1", 20*time.Second)
	c.waitText(".web-insight-about", "exit pages, from -7d where $pathname equals /pricing")
	c.checkScreen("web-insight")
}
