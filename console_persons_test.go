package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The Persons screens: the list pages and finds a person by e-mail (set by an event's
// $set) or by distinct id; a person shows its properties, every distinct id and its
// whole event history newest first, a page at a time, older than a day too; a person
// merged by $identify shows both ids and the events of both.
func TestConsolePersons(t *testing.T) {
	c := openConsole(t)
	now := time.Now().UTC()
	var more []map[string]any
	for i := range 60 {
		more = append(more, map[string]any{"event": "$pageview", "distinct_id": fmt.Sprintf("bulk-%02d", i)})
		// Ada's older history: one event a day from 10 to 69 days ago.
		more = append(more, map[string]any{"event": "old_visit", "distinct_id": "user-ada",
			"timestamp": now.Add(-time.Duration(10+i) * 24 * time.Hour).Format(time.RFC3339)})
	}
	// An anonymous visitor who then signs in as user-brian: one person, two ids.
	more = append(more, map[string]any{"event": "anon_visit", "distinct_id": "anon-merge", "timestamp": now.Add(-3 * time.Hour).Format(time.RFC3339)})
	// A company, and a second one to search past.
	for _, g := range [][2]string{{"acme", "Acme Inc"}, {"globex", "Globex"}} {
		more = append(more, map[string]any{"event": "$groupidentify", "distinct_id": "user-chen", "properties": map[string]any{
			"$group_type": "company", "$group_key": g[0], "$group_set": map[string]any{"name": g[1], "plan": "enterprise-" + g[0]}}})
	}
	// Events of Acme's (and one of Globex's, with a key that is SQL if read as text).
	for i, g := range []string{"acme", "acme", "globex' OR '1'='1"} {
		more = append(more, map[string]any{"event": fmt.Sprintf("company_event_%d", i), "distinct_id": "user-chen",
			"timestamp": now.Add(-time.Duration(i+1) * time.Minute).Format(time.RFC3339), "properties": map[string]any{"$groups": map[string]any{"company": g}}})
	}
	c.capture(more...)
	c.capture(map[string]any{"event": "$identify", "distinct_id": "user-brian", "properties": map[string]any{"$anon_distinct_id": "anon-merge"}})
	c.signIn()

	// The list: 63 persons, 50 a page.
	c.visit(fmt.Sprintf("/project/%d/persons", c.boot.ProjectID))
	c.waitText("[role=status]", "1–50 of 63 persons")
	c.checkScreen("persons")
	c.run(chromedp.Click(chromedp.CSS(".pager button:last-child")))
	c.waitText("[role=status]", "51–63 of 63 persons")
	if got := eval[string](c, `location.search`); got != "?offset=50" {
		t.Errorf("the second page's URL has %q", got)
	}

	// Keyboard only: Tab to the search, type, Enter; Tab to the person, Enter.
	c.run(chromedp.Focus(chromedp.CSS("a.skip-link")))
	c.tabTo("persons-search")
	c.key("ADA@example\r")
	c.waitText("[role=status]", "1–1 of 1 person")
	if got := c.text("table tbody"); !strings.Contains(got, "ada@example.com") || !strings.Contains(got, "user-ada") {
		t.Errorf("searching ada@example finds %q", got)
	}
	if got := eval[string](c, `location.search`); got != "?search=ADA%40example" {
		t.Errorf("the search put %q in the URL", got)
	}
	c.tabTo("ada@example.com")
	c.key("\r")
	c.waitText("h1", "ada@example.com")
	c.waitText("#person-ids + ul", "user-ada")
	c.waitText(".person table.props", "ada@example.com") // the email property
	// History: newest first, 50 of 75 events, then Load more reaches 69 days back.
	c.run(chromedp.WaitVisible(chromedp.CSS("table.events tbody tr")))
	if n := c.rowCount(); n != 50 {
		t.Errorf("the history's first page has %d events, want 50", n)
	}
	c.checkHistoryOrder()
	c.checkScreen("person")
	c.tabTo("Load more")
	c.key("\r")
	c.waitText(".history-status", "75 events shown, all there are")
	c.checkHistoryOrder()
	oldest := eval[string](c, `[...document.querySelectorAll('table.events time')].pop().getAttribute('datetime')`)
	if ts, err := time.Parse(time.RFC3339, oldest); err != nil || now.Sub(ts) < 68*24*time.Hour {
		t.Errorf("the oldest event shown is from %s, want 69 days ago", oldest)
	}
	if eval[int](c, `document.querySelectorAll('.history-status + button').length`) != 0 {
		t.Error("Load more is still offered after the last page")
	}

	// A distinct id finds its person; the merged person shows both ids and both
	// ids' events.
	c.visit(fmt.Sprintf("/project/%d/persons?search=anon-merge", c.boot.ProjectID))
	c.waitText("[role=status]", "1–1 of 1 person")
	c.run(chromedp.Click(chromedp.CSS("table tbody a")))
	c.waitText("#person-ids + ul", "anon-merge")
	c.waitText("#person-ids + ul", "user-brian")
	c.run(chromedp.WaitVisible(chromedp.CSS("table.events tbody tr")))
	c.waitText(".history-status", "all there are")
	history := c.text("table.events tbody")
	if !strings.Contains(history, "anon_visit") || !strings.Contains(history, "$identify") || strings.Count(history, "$pageview") != 13 {
		t.Errorf("the merged person's history is %q", history)
	}
	c.checkScreen("person-merged")

	// A search that finds nobody says so.
	c.visit(fmt.Sprintf("/project/%d/persons?search=nobody-here", c.boot.ProjectID))
	c.waitText("[role=status]", "No person matches")

	// Groups: the company type is a tab beside Persons; its list finds a group by key,
	// whose page shows its properties.
	c.run(chromedp.Click(chromedp.CSS(`nav.people-nav a[href$="/groups/0"]`)))
	c.waitText("h1", "company")
	c.waitText("[role=status]", "1–2 of 2")
	c.checkScreen("groups")
	c.fill("#groups-search", "ACME")
	c.key("\r")
	c.waitText("[role=status]", "1–1 of 1")
	c.run(chromedp.Click(chromedp.CSS("table tbody a")))
	c.waitText("h1", "Acme Inc")
	c.waitText("table.props", "enterprise-acme")
	if got := eval[string](c, `location.pathname`); got != fmt.Sprintf("/project/%d/groups/0/acme", c.boot.ProjectID) {
		t.Errorf("the group's page is at %s", got)
	}
	// Its events, newest first, and no other group's.
	c.waitText(`section[aria-labelledby="group-events"]`, "2 events shown, all there are")
	if got := c.text(`section[aria-labelledby="group-events"] tbody`); !strings.Contains(got, "company_event_0") || !strings.Contains(got, "company_event_1") ||
		strings.Index(got, "company_event_0") > strings.Index(got, "company_event_1") || strings.Contains(got, "company_event_2") {
		t.Errorf("the group's events: %q", got)
	}
	c.checkScreen("group")
}

// checkHistoryOrder fails the test unless the history's times go newest first.
func (c *consoleTab) checkHistoryOrder() {
	c.t.Helper()
	if !eval[bool](c, `[...document.querySelectorAll('table.events time')].map(t => Date.parse(t.getAttribute('datetime')))
		.every((v, i, a) => i === 0 || a[i - 1] >= v)`) {
		c.t.Error("the history is not newest first")
	}
}
