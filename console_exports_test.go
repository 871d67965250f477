package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Batch exports: a Parquet export to a local directory made in the form (by keyboard),
// S3's secret asked for write-only, a backfill of the last three days whose runs
// appear with their status and write Parquet files, a retry, pause and unpause, and a
// failing export's runs showing hedge's error text.
func TestConsoleBatchExports(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	list := fmt.Sprintf("/project/%d/batch_exports", c.boot.ProjectID)
	c.visit(list)
	c.waitText("#main", "No batch exports yet")

	// Keyboard only: New export, fill the form, Enter creates it.
	c.tabTo("New export")
	c.key("\r")
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-name")))
	c.tabTo("field-name")
	c.key("Nightly parquet")
	c.fill("#field-interval", "day")
	// S3 asks for its secret in a password field and never shows one back.
	c.fill("#field-destination__type", "S3")
	if typ := eval[string](c, `document.querySelector('#field-destination__config__aws_secret_access_key').type`); typ != "password" {
		t.Errorf("the S3 secret is asked for in a %q field", typ)
	}
	c.fill("#field-destination__type", "Parquet")
	c.tabTo("field-destination__config__path")
	c.key("nightly")
	c.checkScreen("batch-exports-new")
	c.key("\r")
	c.waitText("h1", "Nightly parquet")
	c.waitText("#main", "No runs yet")
	c.waitText(".export-state", "Active")
	exportPath := eval[string](c, `location.pathname`)
	if !strings.HasPrefix(exportPath, list+"/") {
		t.Fatalf("after creating, the page is %s", exportPath)
	}
	id := strings.TrimPrefix(exportPath, list+"/")

	// A backfill of the last three days (the form's default) runs a window a day.
	c.run(chromedp.Click(chromedp.CSS(`form[aria-labelledby="backfill-title"] button[type="submit"]`)))
	c.waitText(".saved", "Backfill queued")
	runs := func() []map[string]any {
		var page struct{ Results []map[string]any }
		c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/batch_exports/%s/runs/", c.boot.ProjectID, id), nil, &page)
		return page.Results
	}
	waitFor(t, 20*time.Second, "the backfill's runs to complete", func() bool {
		rs := runs()
		for _, r := range rs {
			if r["status"] != "Completed" {
				return false
			}
		}
		return len(rs) >= 3
	})
	records := 0.0
	for _, r := range runs() {
		records += r["records_completed"].(float64)
	}
	if records == 0 {
		t.Error("the backfill exported no events, though the last days have some")
	}
	c.waitText(`section[aria-labelledby="runs-title"] table`, "Completed")
	if n := eval[int](c, `document.querySelectorAll('section[aria-labelledby="runs-title"] tbody tr').length`); n != len(runs()) {
		t.Errorf("the page lists %d runs, hedge has %d", n, len(runs()))
	}
	files, _ := filepath.Glob(filepath.Join(dataDirOf(t, c), "exports", fmt.Sprint(c.boot.ProjectID), "nightly", "team_id=*", "date=*", "*.parquet"))
	if len(files) == 0 {
		t.Error("the backfill wrote no Parquet file")
	}
	c.checkScreen("batch-exports")

	// Retry the newest run: it runs again, under a backfill of its own, and completes.
	first, queuedBy := runs()[0]["id"].(string), runs()[0]["backfill"]
	c.run(chromedp.Click(chromedp.CSS(`section[aria-labelledby="runs-title"] tbody tr:first-child button`)))
	c.waitText(".saved", "runs again")
	waitFor(t, 20*time.Second, "the retried run to complete again", func() bool {
		for _, r := range runs() {
			if r["id"] == first {
				return r["status"] == "Completed" && r["backfill"] != queuedBy
			}
		}
		return false
	})

	// Pause and unpause.
	var exp struct{ Paused bool }
	c.run(chromedp.Click(chromedp.CSS(".page-actions button:first-child")))
	c.waitText(".export-state", "Paused since")
	c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/batch_exports/%s/", c.boot.ProjectID, id), nil, &exp)
	if !exp.Paused {
		t.Error("Pause did not pause the export")
	}
	c.waitText(".page-actions button:first-child", "Unpause")
	c.run(chromedp.Click(chromedp.CSS(".page-actions button:first-child")))
	c.waitText(".export-state", "Active")
	c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/batch_exports/%s/", c.boot.ProjectID, id), nil, &exp)
	if exp.Paused {
		t.Error("Unpause left the export paused")
	}

	// A directory that leads out of the project's own fails its runs, and the page
	// shows why in the export's terms.
	projectDir := filepath.Join(dataDirOf(t, c), "exports", fmt.Sprint(c.boot.ProjectID))
	if err := os.Symlink(t.TempDir(), filepath.Join(projectDir, "escape")); err != nil {
		t.Fatal(err)
	}
	var bad struct{ ID string }
	if status := c.adminAPI("POST", fmt.Sprintf("/api/projects/%d/batch_exports/", c.boot.ProjectID),
		map[string]any{"name": "Escaping", "interval": "day", "destination": map[string]any{"type": "Parquet", "config": map[string]any{"path": "escape"}}}, &bad); status != 201 {
		t.Fatalf("creating the failing export: %d", status)
	}
	c.visit(list + "/" + bad.ID)
	c.run(chromedp.Click(chromedp.CSS(`form[aria-labelledby="backfill-title"] button[type="submit"]`)))
	c.waitText(`section[aria-labelledby="runs-title"] table`, "FailedRetryable")
	c.waitText(".run-error", "escape")
	c.checkScreen("batch-exports-failed")

	c.visit(list)
	c.waitText("#main table", "Nightly parquet")
	c.waitText("#main table", "Escaping")
	c.checkScreen("batch-exports-list")
}

// dataDirOf is the data directory of the tab's hedge.
func dataDirOf(t *testing.T, c *consoleTab) string {
	t.Helper()
	for _, kv := range c.hedge.cmd.Env {
		if dir, ok := strings.CutPrefix(kv, "HEDGE_DATA="); ok {
			return dir
		}
	}
	t.Fatal("the hedge process has no HEDGE_DATA")
	return ""
}
