package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The SQL editor: Ctrl+Enter runs the query in the textarea and shows hedge's answer
// with its column types; a refused query shows hedge's reason under the editor; the
// schema panel inserts names at the cursor; runs are kept in the browser's history;
// and the editor indents with Tab but lets a keyboard user leave with Esc then Tab.
func TestConsoleSQL(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/sql", c.boot.ProjectID))
	c.waitText(".sql-schema", "distinct_id") // the schema panel is read from hedge
	c.waitText(".sql-schema", "$browser")    // with the events' property keys

	// Only the keyboard: Tab to the editor, replace its text, Ctrl+Enter runs it.
	c.tabTo("textarea|field-query")
	eval[bool](c, `(() => { const e = document.activeElement; e.select(); return true; })()`)
	c.key("SELECT count() AS n, max(timestamp) AS latest FROM events WHERE event = '$pageview'")
	c.run(chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	c.waitText(".sql-status", "1 row in")
	// seedConsoleEvents sends 3 users × (1+2+3+1+2+3+1) pageviews = 39.
	if got := c.text(".sql-result tbody td"); got != "39" {
		t.Errorf("the count shows %q, want 39", got)
	}
	head := c.text(".sql-result thead")
	for _, want := range []string{"n", "BIGINT", "latest", "TIMESTAMP"} {
		if !strings.Contains(head, want) {
			t.Errorf("the result's header %q lacks %q", head, want)
		}
	}
	if got := eval[string](c, `new URLSearchParams(location.search).get('q')`); !strings.Contains(got, "count() AS n") {
		t.Errorf("the URL keeps the query as %q", got)
	}
	c.checkScreen("sql")
	if csv := c.downloadedCSV(".page-actions button"); !strings.HasPrefix(csv, "n,latest\r\n39,") {
		t.Errorf("the CSV download is %q", csv)
	}

	// Tab in the editor indents; Esc then Tab leaves it for the next control.
	c.run(chromedp.Focus(chromedp.CSS("#field-query")))
	eval[bool](c, `(() => { const e = document.activeElement; e.setSelectionRange(0, 0); return true; })()`)
	c.key("\t")
	if got := c.focused(); !strings.HasPrefix(got, "textarea|field-query") {
		t.Fatalf("Tab in the editor moved focus to %q", got)
	}
	if v := eval[string](c, `document.querySelector('#field-query').value`); !strings.HasPrefix(v, "  SELECT") {
		t.Errorf("Tab did not indent: %q", v)
	}
	c.key(kb.Escape)
	c.key("\t")
	if got := c.focused(); strings.HasPrefix(got, "textarea|field-query") {
		t.Errorf("Esc then Tab stayed in the editor")
	}

	// The schema panel inserts a name at the cursor.
	c.fill("#field-query", "SELECT  FROM events LIMIT 3")
	eval[bool](c, `(() => { const e = document.querySelector('#field-query'); e.setSelectionRange(7, 7); return true; })()`)
	c.run(chromedp.Click(chromedp.CSS(`.sql-schema button[data-insert="distinct_id"]`)))
	if v := eval[string](c, `document.querySelector('#field-query').value`); v != "SELECT distinct_id FROM events LIMIT 3" {
		t.Errorf("inserting a column gave %q", v)
	}
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText(".sql-status", "3 rows")
	if got := c.text(".sql-result thead"); !strings.Contains(got, "distinct_id") || !strings.Contains(got, "VARCHAR") {
		t.Errorf("the result's header is %q", got)
	}

	c.fill("#field-query", "SELECT , count() FROM events GROUP BY 1 ORDER BY 1")
	eval[bool](c, `(() => { const e = document.querySelector('#field-query'); e.setSelectionRange(7, 7); return true; })()`)
	c.run(chromedp.Click(chromedp.CSS(`.sql-schema button[data-insert="properties.$browser"]`)))
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText(".sql-status", "4 rows") // Chrome, Firefox, Safari and the events without one
	if got := c.text(".sql-result tbody tr:first-child"); !strings.Contains(got, "Chrome") || !strings.Contains(got, "13") {
		t.Errorf("the first row by browser is %q", got)
	}

	// A refused query shows hedge's reason next to the editor.
	c.expect(fmt.Sprintf("/api/projects/%d/query/", c.boot.ProjectID), 400)
	c.fill("#field-query", "SELECT * FROM read_csv('/etc/passwd')")
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText("#field-query-error", "read_csv is not allowed")
	if got := eval[string](c, `document.querySelector('#field-query').getAttribute('aria-invalid') || ''`); got != "true" {
		t.Errorf("the refused editor is not marked invalid")
	}
	c.checkScreen("sql-refused")

	// A LIMIT past what hedge answers (--query-max-rows) is refused and explained (a
	// query without one gets the default LIMIT 100).
	c.fill("#field-query", "SELECT * FROM range(100000000) LIMIT 200000")
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText("#field-query-error", "lower its LIMIT")
	c.waitText(".sql-main", "--query-max-rows")

	// The history keeps the runs, newest first, and choosing one restores it.
	c.visit(fmt.Sprintf("/project/%d/sql", c.boot.ProjectID))
	c.waitText(".sql-history", "range(")
	items := eval[[]string](c, `[...document.querySelectorAll('.sql-history li button')].map(b => b.innerText)`)
	if len(items) != 5 || !strings.Contains(items[0], "range(") || !strings.Contains(items[4], "count() AS n") {
		t.Fatalf("the history lists %q", items)
	}
	c.run(chromedp.Click(chromedp.CSS(`.sql-history li:nth-child(5) button`)))
	if v := eval[string](c, `document.querySelector('#field-query').value`); !strings.Contains(v, "count() AS n") {
		t.Errorf("choosing a past query put %q in the editor", v)
	}
}

// A large answer is shown a page at a time: 100,000 rows leave 100 in the table, and
// the pager reaches the last; the time said is until the rows were on screen.
func TestConsoleSQLLargeResult(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/sql", c.boot.ProjectID))
	c.fill("#field-query", "SELECT range AS n FROM range(100000) ORDER BY n LIMIT 100000")
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText(".sql-status", "100,000 rows in")
	if n := eval[int](c, `document.querySelectorAll('.sql-result tbody tr').length`); n != 100 {
		t.Errorf("the table holds %d rows of 100,000, want a page of 100", n)
	}
	c.waitText(".sql-pager", "Rows 1–100 of 100,000")
	c.checkScreen("sql-pages")
	c.run(chromedp.Click(chromedp.CSS(`.sql-pager button:last-child`)))
	c.waitText(".sql-pager", "Rows 99,901–100,000 of 100,000")
	if got := c.text(".sql-result tbody tr:last-child td"); got != "99,999" {
		t.Errorf("the last page ends with %q, want 99,999", got)
	}
	// By keyboard: Previous is the second of the pager's buttons.
	c.run(chromedp.Focus(chromedp.CSS(`.sql-pager button:nth-child(2)`)))
	c.key("\r")
	c.waitText(".sql-pager", "Rows 99,801–99,900 of 100,000")
}

// A running query can be cancelled: the screen stops waiting and says hedge stopped
// the query (the DELETE found it running), and the next query runs.
func TestConsoleSQLCancel(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/sql", c.boot.ProjectID))
	// Hours of counting: only a cancel ends it before the time limit.
	c.fill("#field-query", "SELECT count() FROM range(1000000) a, range(1000000) b WHERE a.range + b.range > 0")
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText(".sql-status", "Running")
	c.run(chromedp.WaitVisible(chromedp.CSS(`button.cancel-query`)))
	c.checkScreen("sql-running")
	c.run(chromedp.Click(chromedp.CSS(`button.cancel-query`)))
	c.waitText(".sql-status", "Cancelled: hedge stopped the query.")
	if eval[bool](c, `document.querySelector('button.run-query').disabled`) || eval[int](c, `document.querySelectorAll('button.cancel-query').length`) != 0 {
		t.Error("after the cancel, Run is still disabled or Cancel still offered")
	}
	c.checkScreen("sql-cancelled")
	c.fill("#field-query", "SELECT 1 AS one")
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText(".sql-status", "1 row in")
}

// DuckDB's error text keeps its line breaks on screen: its pointer to the query's
// column is a line of its own.
func TestConsoleSQLErrorLines(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	// A sum of text: DuckDB lists the candidate functions, a line each, and points at
	// the call.
	const wrong = "SELECT sum(event) FROM events"
	var refusal struct {
		Detail string `json:"detail"`
	}
	if status := c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/query/", c.boot.ProjectID),
		map[string]any{"query": map[string]any{"kind": "HogQLQuery", "query": wrong}}, &refusal); status != 400 || !strings.Contains(refusal.Detail, "\n") {
		t.Fatalf("the API answers %d %q, want a 400 of several lines", status, refusal.Detail)
	}
	c.expect(fmt.Sprintf("/api/projects/%d/query/", c.boot.ProjectID), 400)
	c.visit(fmt.Sprintf("/project/%d/sql", c.boot.ProjectID))
	c.fill("#field-query", wrong)
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText("#field-query-error", "Candidate functions")
	// innerText is the text as rendered: a line break shown is a "\n" in it.
	shown := eval[string](c, `document.querySelector('#field-query-error').innerText`)
	if strings.Count(shown, "\n") != strings.Count(strings.TrimSpace(refusal.Detail), "\n") {
		t.Errorf("the error shows as %q, want the lines of %q", shown, refusal.Detail)
	}
	c.checkScreen("sql-error-lines")
}

// A query that names no LIMIT answers PostHog's default 100 rows, and the screen says
// so as PostHog's SQL editor does (the default limit was reached, write a LIMIT for
// more); a query with a LIMIT of its own answers its rows, a page at a time, without
// that note.
func TestConsoleSQLDefaultLimit(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/sql", c.boot.ProjectID))
	c.fill("#field-query", "SELECT range AS n FROM range(250) ORDER BY n")
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText(".sql-status", "100 rows in")
	if n := eval[int](c, `document.querySelectorAll('.sql-result tbody tr').length`); n != 100 {
		t.Errorf("the table holds %d rows, want the default 100", n)
	}
	c.waitText(".sql-more", "Default limit of 100 rows reached")
	if got := c.text(".sql-more"); !strings.Contains(got, "add a LIMIT") || strings.Contains(got, "--query-max-rows") {
		t.Errorf("the note says %q, want it to ask for a LIMIT of the query's own (and not to blame --query-max-rows)", got)
	}
	if eval[bool](c, `!!document.querySelector('.sql-pager')`) {
		t.Error("100 rows are paged")
	}
	c.checkScreen("sql-default-limit")

	c.fill("#field-query", "SELECT range AS n FROM range(250) ORDER BY n LIMIT 150")
	c.run(chromedp.Click(chromedp.CSS(`button.run-query`)))
	c.waitText(".sql-status", "150 rows in")
	c.waitText(".sql-pager", "Rows 1–100 of 150")
	if eval[bool](c, `!!document.querySelector('.sql-more')`) {
		t.Errorf("a query with its own LIMIT shows the default limit's note: %q", c.text(".sql-more"))
	}
	c.run(chromedp.Click(chromedp.CSS(`.sql-pager button:last-child`)))
	c.waitText(".sql-pager", "Rows 101–150 of 150")
	if got := c.text(".sql-result tbody tr:last-child td"); got != "149" {
		t.Errorf("the last page ends with %q, want 149", got)
	}
}
