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
