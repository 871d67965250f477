package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/hedge-analytics/hedge/warehouse"
)

// Project setup: the snippets carry the project's token and the capture listener's
// address (never the console's), "waiting for events" turns to "received" when the
// first event reaches capture, a rename shows in the header's project switch, a
// member's level changes and a member is removed through a confirm dialog by keyboard
// alone, an invite gives a /signup/ link that opens the sign-up page signed out, and a
// new personal API key is shown once, then only as its mask.
func TestConsoleProjectSetup(t *testing.T) {
	c := openConsole(t)
	// A new project has no events yet: the state a user setting hedge up is in.
	var fresh struct {
		ID       int64  `json:"id"`
		APIToken string `json:"api_token"`
	}
	if status := c.adminAPI("POST", "/api/organizations/"+c.boot.OrganizationID+"/projects/", map[string]any{"name": "Fresh site"}, &fresh); status != 201 {
		t.Fatalf("creating a project: %d", status)
	}
	other := addMember(t, c, "grace@example.com")
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/settings", fresh.ID))

	web, curl := c.text("#snippet-web"), c.text("#snippet-curl")
	for name, snippet := range map[string]string{"posthog-js": web, "curl": curl} {
		if !strings.Contains(snippet, fresh.APIToken) || !strings.Contains(snippet, c.hedge.captureURL) {
			t.Errorf("the %s snippet lacks the token %s or the capture URL %s:\n%s", name, fresh.APIToken, c.hedge.captureURL, snippet)
		}
		if strings.Contains(snippet, c.hedge.adminURL) {
			t.Errorf("the %s snippet names the management listener %s:\n%s", name, c.hedge.adminURL, snippet)
		}
	}
	if want := fmt.Sprintf("posthog.init('%s', {\n    api_host: '%s'", fresh.APIToken, c.hedge.captureURL); !strings.Contains(web, want) || !strings.Contains(web, "<script") {
		t.Errorf("the posthog-js snippet has no <script> and %q:\n%s", want, web)
	}
	if want := "curl -X POST " + c.hedge.captureURL + "/capture/"; !strings.Contains(curl, want) {
		t.Errorf("the curl snippet lacks %q:\n%s", want, curl)
	}
	c.waitText(".event-check", "Waiting for the first event")
	c.checkScreen("settings")

	// The curl snippet's own request, sent: the page notices within a few seconds.
	body := fmt.Sprintf(`{"api_key": %q, "event": "hello from curl", "distinct_id": "setup-check"}`, fresh.APIToken)
	resp, err := http.Post(c.hedge.captureURL+"/capture/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.waitText(".event-check.received", "Events received: 1")
	c.waitText("#ingestion .ingestion-path", "Events go through the event log")

	// Keyboard only: Tab to the name, replace it, Enter saves; the header follows.
	c.tabTo("field-name")
	c.key(strings.Repeat(kb.Backspace, len("Fresh site")) + "Shop front\r")
	c.waitText(".saved", "Saved.")
	c.waitText(".project-switch select", "Shop front")
	if got := eval[string](c, `document.querySelector('.project-switch select').selectedOptions[0].textContent`); got != "Shop front" {
		t.Errorf("the project switch shows %q after the rename", got)
	}
	c.fill("#field-timezone", "Europe/Berlin")
	c.run(chromedp.Click(chromedp.CSS(`form[aria-labelledby="project-title"] button[type="submit"]`)))
	c.waitText(".saved", "Saved.")
	var saved struct{ Name, Timezone string }
	c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/", fresh.ID), nil, &saved)
	if saved.Name != "Shop front" || saved.Timezone != "Europe/Berlin" {
		t.Errorf("the project is %+v after saving", saved)
	}

	// Members: make Grace an admin, then remove her, by keyboard through the dialog.
	c.waitText("#main", "grace@example.com")
	c.fill(`section[aria-labelledby="members-title"] td select`, "8")
	waitFor(t, 20*time.Second, "Grace's level to become admin", func() bool { return memberLevel(t, c, other) == 8 })
	c.tabTo("Remove grace@example.com")
	c.key("\r")
	c.run(chromedp.WaitVisible(chromedp.CSS("dialog.confirm[open]")))
	if f := c.focused(); !strings.Contains(f, "Cancel") {
		t.Errorf("the confirm dialog opens with %q focused, not Cancel", f)
	}
	c.checkScreen("settings-confirm")
	c.tabTo("Remove member")
	c.key("\r")
	waitFor(t, 20*time.Second, "Grace to be removed", func() bool { return memberLevel(t, c, other) == 0 })
	c.run(chromedp.WaitNotPresent(chromedp.CSS("dialog.confirm[open]")))

	// An invite without SMTP: the link to copy is the console's sign-up page.
	c.fill("#field-target_email", "lin@example.com")
	c.run(chromedp.Click(chromedp.CSS(`.invite-form button[type="submit"]`)))
	c.waitText(".invite-result", "no SMTP server")
	link := c.text(".invite-result code")
	if !strings.HasPrefix(link, c.hedge.adminURL+"/signup/") {
		t.Fatalf("the invite link is %q, want %s/signup/<id>", link, c.hedge.adminURL)
	}
	if n := eval[int](c, `document.querySelectorAll('.invite-result button').length`); n != 1 {
		t.Error("the invite link has no copy button")
	}
	c.waitText(`section[aria-labelledby="invites-title"] table`, "lin@example.com")
	c.checkScreen("settings-invited")
	signedOut, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	defer cancel()
	if err := chromedp.Do(signedOut, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#signup-title"))); err != nil {
		t.Fatalf("opening the invite link signed out: %v", err)
	}
	var got string
	waitFor(t, 20*time.Second, "the sign-up page of the invite", func() bool {
		got, _ = chromedp.Run(signedOut, chromedp.Text(chromedp.CSS("form.auth-card")))
		return strings.Contains(got, "You were invited to join") && strings.Contains(got, "Join and sign in")
	})

	// A personal API key: shown once with a copy button, then only its mask.
	c.visit("/account")
	c.fill("#field-label", "ci deploys")
	c.run(chromedp.Click(chromedp.CSS(`form[aria-label="New personal API key"] button[type="submit"]`)))
	c.waitText(".new-key", "only this once")
	key := c.text(".key-value")
	if !strings.HasPrefix(key, "phx_") {
		t.Fatalf("the new key shows as %q", key)
	}
	if n := eval[int](c, `document.querySelectorAll('.new-key button').length`); n < 2 {
		t.Error("the new key has no copy button")
	}
	req, _ := http.NewRequest("GET", c.hedge.adminURL+"/api/users/@me/", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("the key shown does not work: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	c.waitText("#api-keys table", "ci deploys")
	c.checkScreen("account-new-key")
	// The list says the key was used (by the request above) instead of "never".
	c.visit("/account")
	c.waitText("#api-keys table", "ci deploys")
	if row := eval[string](c, `[...document.querySelectorAll('#api-keys tbody tr')].find(r => r.innerText.includes('ci deploys')).innerText`); !strings.Contains(row, "within the last hour") {
		t.Errorf("the used key's row says %q, want it used within the last hour", row)
	}
	if page := c.text("#main"); strings.Contains(page, key) || !strings.Contains(page, key[len(key)-4:]) {
		t.Errorf("after a reload the page shows the key, or not its mask:\n%s", page)
	}
	c.checkScreen("account")

	// Deleting it asks first, then the key stops working.
	c.run(chromedp.Click(chromedp.CSS(`button[aria-label="Delete the key ci deploys"]`)))
	c.run(chromedp.WaitVisible(chromedp.CSS("dialog.confirm[open]")))
	c.run(chromedp.Click(chromedp.CSS("dialog.confirm[open] button.danger")))
	c.run(chromedp.WaitNotPresent(chromedp.CSS("dialog.confirm[open]")))
	waitFor(t, 20*time.Second, "the deleted key to leave the list", func() bool { return !strings.Contains(c.text("#api-keys"), "ci deploys") })
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("the deleted key still answers: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// addMember makes a user of the bootstrap organization through an invite and
// returns their uuid.
func addMember(t *testing.T, c *consoleTab, email string) string {
	t.Helper()
	var invite struct{ ID string }
	if status := c.adminAPI("POST", "/api/organizations/"+c.boot.OrganizationID+"/invites/", map[string]any{"target_email": email}, &invite); status != 201 {
		t.Fatalf("inviting %s: %d", email, status)
	}
	resp, err := http.Post(c.hedge.adminURL+"/api/signup/"+invite.ID+"/", "application/json", strings.NewReader(`{"first_name": "Grace"}`))
	if err != nil {
		t.Fatal(err)
	}
	var user struct{ UUID string }
	json.NewDecoder(resp.Body).Decode(&user)
	resp.Body.Close()
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("signing up %s: %d", email, resp.StatusCode)
	}
	var members struct {
		Results []struct {
			User struct{ UUID, Email string }
		}
	}
	c.adminAPI("GET", "/api/organizations/"+c.boot.OrganizationID+"/members/", nil, &members)
	for _, m := range members.Results {
		if m.User.Email == email {
			return m.User.UUID
		}
	}
	t.Fatalf("%s is not a member after signing up", email)
	return ""
}

// memberLevel is the organization level of the user, or 0 when they are not a member.
func memberLevel(t *testing.T, c *consoleTab, uuid string) int {
	t.Helper()
	var members struct {
		Results []struct {
			Level int
			User  struct{ UUID string }
		}
	}
	c.adminAPI("GET", "/api/organizations/"+c.boot.OrganizationID+"/members/", nil, &members)
	for _, m := range members.Results {
		if m.User.UUID == uuid {
			return m.Level
		}
	}
	return 0
}

// TestConsoleIngestion: with the event log on, the settings page says that capture
// answers once the events are on disk in the log, and shows each partition's backlog
// and the dead letters, from the instance status; with the lake, its parts, and in an
// alert the part set aside once damaged.
func TestConsoleIngestion(t *testing.T) {
	parent := requireBrowser(t)
	dataDir := t.TempDir()
	p := startProcess(t, []string{"HEDGE_DATA=" + dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=127.0.0.1:0", "HEDGE_LOG=jetstream", "HEDGE_STORAGE=lake"})
	if p.captureURL == "" {
		t.Fatalf("hedge did not start:\n%s", p.log())
	}
	boot := readBootstrap(t, dataDir)
	seedConsoleEvents(t, p.captureURL, boot.ProjectAPIKey)
	// Once the events are in parts, the first is damaged; the next query sets it aside.
	project := fmt.Sprintf("%s/api/projects/%d/query/", p.adminURL, boot.ProjectID)
	count := `{"query":{"kind":"HogQLQuery","query":"SELECT count() FROM events"}}`
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, body := request(t, http.MethodPost, project, boot.PersonalAPIKey, count); !strings.Contains(body, `"results":[[0]]`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the seeded events were not queryable within 30 s")
		}
	}
	// The listing follows the catalog within a second.
	var files []string
	waitFor(t, 10*time.Second, "the lake's listing of the parts", func() bool {
		var err error
		if files, err = warehouse.LakeFiles(filepath.Join(dataDir, lakeDir), boot.ProjectID); err != nil {
			t.Fatal(err)
		}
		return len(files) > 0
	})
	if err := os.WriteFile(files[0], []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if status, body := request(t, http.MethodPost, project, boot.PersonalAPIKey, count); status != http.StatusOK {
		t.Fatalf("a query beside a damaged part: %d %s", status, body)
	}
	c := newTab(t, parent, p, boot)
	c.signIn()
	c.visit(fmt.Sprintf("/project/%d/settings", boot.ProjectID))
	c.waitText("#ingestion .ingestion-path", "Events go through the event log")
	c.waitText("#ingestion .ingestion-path", "on this node")
	c.waitText("#ingestion .ingestion-backlog", "No dead letters.")
	c.waitText("#ingestion .ingestion-storage", "Events are kept in the lake:")
	c.waitText("#ingestion .ingestion-quarantine", "1 part (")
	if n := eval[int](c, `document.querySelectorAll('#ingestion tbody tr').length`); n != 4 {
		t.Errorf("the backlog table has %d rows, want one for each of the 4 partitions", n)
	}
	c.run(chromedp.ScrollIntoView("#ingestion"))
	c.checkScreen("settings-ingestion")
}
