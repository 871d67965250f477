package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The Cohorts screen, from the People tabs: a dynamic cohort of the persons whose
// email contains @example.com (Ada alone among the seeded three) and a static one
// from a CSV of user-brian, user-chen and an id no event named are made in the forms,
// and a second file adds user-ada to the static one;
// each's page says its kind and count and lists its persons; the list reads names,
// kinds and counts; a flag released to the static cohort reads "in cohort “Listed”"
// in the flags' list and on its page; a cohort is deleted from the list and comes
// back with Undo; a trend filtered by the static cohort counts its persons' events.
func TestConsoleCohorts(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	list := fmt.Sprintf("/project/%d/cohorts", c.boot.ProjectID)
	c.visit(fmt.Sprintf("/project/%d/persons", c.boot.ProjectID))
	clickText(c, "nav.people-nav a", "Cohorts")
	c.waitText("main", "No cohorts yet")
	if got := eval[string](c, `location.pathname`); got != list {
		t.Errorf("the People tab Cohorts opened %s", got)
	}

	// A dynamic cohort: email contains @example.com.
	clickText(c, "a", "New cohort")
	c.fill("#field-name", "Example people")
	c.fill("#group-0-0-key", "email")
	c.fill("#group-0-0-op", "icontains")
	c.fill("#group-0-0-value", "@example.com")
	clickText(c, "button", "Create cohort")
	c.waitText("h1", "Example people")
	c.waitText("main", "Dynamic cohort of 1 person.")
	c.waitText("table", "ada@example.com")
	c.checkScreen("cohort-dynamic")

	// A static cohort from a CSV file.
	csv := filepath.Join(t.TempDir(), "listed.csv")
	if err := os.WriteFile(csv, []byte("distinct_id\nuser-brian\nuser-chen\nnot-seen-yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.visit(list + "/new")
	c.fill("#field-name", "Listed")
	clickText(c, "label", "Static: a list of distinct IDs from a CSV file")
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-csv")), chromedp.SetUploadFiles(chromedp.CSS("#field-csv"), []string{csv}))
	clickText(c, "button", "Create cohort")
	c.waitText("h1", "Listed")
	c.waitText("main", "Static cohort of 2 persons.")
	c.waitText("table", "user-brian")
	c.waitText("table", "user-chen")
	listedID := eval[string](c, `location.pathname.split('/').pop()`)
	c.checkScreen("cohort-static")
	// Another file adds to the list: user-ada, and user-chen again (kept once).
	more := filepath.Join(t.TempDir(), "more.csv")
	if err := os.WriteFile(more, []byte("user-ada\nuser-chen\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.run(chromedp.SetUploadFiles(chromedp.CSS("#field-csv"), []string{more}))
	clickText(c, "button", "Save")
	c.waitText("main", "Static cohort of 3 persons.")
	c.waitText("table", "ada@example.com")

	// The list.
	c.visit(list)
	c.waitText("table", "Listed")
	rows := eval[[]string](c, `[...document.querySelectorAll('tbody tr')].map(r => [...r.cells].slice(0, 3).map(td => td.innerText.trim()).join(' | '))`)
	if want := []string{"Listed | Static | 3 persons", "Example people | Dynamic | 1 person"}; strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("the cohorts' list reads\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	c.checkScreen("cohorts")

	// A flag released to the static cohort names it.
	var flag struct{ ID int64 }
	if status := c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/feature_flags/", c.boot.ProjectID), map[string]any{
		"key": "listed-only", "filters": map[string]any{"groups": []any{map[string]any{"rollout_percentage": 100,
			"properties": []any{map[string]any{"key": "id", "type": "cohort", "operator": "in", "value": listedID}}}}},
	}, &flag); status != 201 {
		t.Fatalf("creating the flag: %d", status)
	}
	c.visit(fmt.Sprintf("/project/%d/feature_flags", c.boot.ProjectID))
	c.waitText("table", "100% of users matching in cohort “Listed”")
	c.checkScreen("flags-cohort")
	c.visit(fmt.Sprintf("/project/%d/feature_flags/%d", c.boot.ProjectID, flag.ID))
	c.waitJSText("the flag's cohort", `(() => { const s = document.querySelector('#cond-0-0-value'); return s ? s.selectedOptions[0].innerText : ''; })()`, "Listed", 10e9)
	eval[bool](c, `(document.querySelector('#cond-0-0-value').scrollIntoView({block: 'center'}), true)`)
	c.checkScreen("flag-cohort")
	for id, want := range map[string]bool{"user-brian": true, "user-ada": true, "not-seen-yet": true, "someone-else": false} {
		if got := c.evaluateFlags(id)["listed-only"].Enabled; got != want {
			t.Errorf("/flags answers listed-only %v for %s, want %v (a static cohort's member)", got, id, want)
		}
	}

	// A trend of the static cohort's persons: their pageviews.
	var trend struct {
		Results []struct{ Count float64 }
	}
	body := map[string]any{"query": map[string]any{"kind": "TrendsQuery", "series": []any{map[string]any{"event": "$pageview"}},
		"dateRange":  map[string]any{"date_from": "-14d"},
		"properties": []any{map[string]any{"type": "cohort", "key": "id", "value": listedID}}}}
	if status := c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/query/", c.boot.ProjectID), body, &trend); status != 200 || len(trend.Results) != 1 {
		t.Fatalf("the trend of the cohort: %d %+v", status, trend)
	}
	// seedConsoleEvents: each of the three views day%3+1 pages on each of 7 days: 13.
	if trend.Results[0].Count != 39 {
		t.Errorf("the cohort's pageviews: %v, want 39 (13 each of user-ada, user-brian and user-chen)", trend.Results[0].Count)
	}

	// Delete from the list, then Undo.
	c.visit(list)
	c.waitText("table", "Example people")
	c.run(chromedp.Click(chromedp.CSS(`button[aria-label="Delete Example people"]`)))
	c.waitText(".dash-status", "Example people deleted.")
	c.waitJSText("the rows", `document.querySelectorAll('tbody tr').length + ''`, "1", 10e9)
	clickText(c, ".dash-status button", "Undo")
	c.waitJSText("the rows", `document.querySelectorAll('tbody tr').length + ''`, "2", 10e9)

	// Delete from its own page, then Undo there.
	clickText(c, "a", "Example people")
	c.waitText("main", "Dynamic cohort of 1 person.")
	clickText(c, "button", "Delete")
	c.waitText(".deleted-note", "Example people deleted.")
	clickText(c, ".deleted-note button", "Undo")
	c.waitText("main", "Dynamic cohort of 1 person.")
	var back struct{ Deleted bool }
	path := eval[string](c, `location.pathname`)
	if status := c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/cohorts/%s/", c.boot.ProjectID, path[strings.LastIndex(path, "/")+1:]), nil, &back); status != 200 || back.Deleted {
		t.Errorf("after Undo on its page the cohort reads %d, deleted %v", status, back.Deleted)
	}
}
