package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The frame around the screens: Ctrl+K jumps by name, the theme choice applies at
// once and is kept, and a session that ends sends the user to sign in, saying why,
// and back to the same URL afterwards.
func TestConsoleFrame(t *testing.T) {
	c := openConsole(t)
	c.signIn()

	// Ctrl+K, a few letters of the bootstrap dashboard's name, Enter.
	// The app listens for keys once it has rendered: press until the palette opens.
	for range 20 {
		c.run(chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		if eval[bool](c, `!!document.querySelector('dialog.palette[open]')`) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if f := c.focused(); !strings.HasPrefix(f, "input|palette-input") {
		t.Fatalf("the palette opened with %q focused", f)
	}
	c.key("My App")
	c.waitText("#palette-list", "My App Dashboard")
	c.checkScreen("palette")
	c.key("\r")
	c.run(chromedp.WaitNotPresent(chromedp.CSS("#palette-input")))
	if got := eval[string](c, `location.pathname`); !strings.HasPrefix(got, fmt.Sprintf("/project/%d/dashboard/", c.boot.ProjectID)) {
		t.Errorf("the palette went to %s, not the dashboard", got)
	}

	// The theme select overrides the system's choice, at once and after a reload.
	c.fill(`.top-end select`, "dark")
	if got := eval[string](c, `document.documentElement.dataset.theme`); got != "dark" {
		t.Errorf("the theme is %q after choosing dark", got)
	}
	c.visit(fmt.Sprintf("/project/%d/activity", c.boot.ProjectID))
	if got := eval[string](c, `document.documentElement.dataset.theme`); got != "dark" {
		t.Errorf("the theme is %q after a reload", got)
	}
	c.fill(`.top-end select`, "system")

	// The session ends elsewhere (signed out through the API with its cookies); the
	// next request of the page answers 401, and signing in again returns to the URL.
	here := fmt.Sprintf("/project/%d/settings?tab=members", c.boot.ProjectID)
	c.visit(here)
	session, csrf := c.cookies()
	req, _ := http.NewRequest("POST", c.hedge.adminURL+"/api/logout/", nil)
	req.Header.Set("Cookie", "hedge_session="+session+"; hedge_csrftoken="+csrf)
	req.Header.Set("X-CSRFToken", csrf)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("signing out through the API: %d", resp.StatusCode)
	}
	c.expect("/api/", 401)
	c.visit(here)
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-email")))
	if got := eval[string](c, `location.pathname + location.search`); got != "/login?next="+strings.NewReplacer("/", "%2F", "?", "%3F", "=", "%3D").Replace(here)+"&expired=1" {
		t.Errorf("an ended session went to %s", got)
	}
	c.waitText(".auth-card", "Your session has expired.")
	c.fill("#field-email", c.boot.UserEmail)
	c.fill("#field-password", c.boot.AdminPassword)
	c.run(chromedp.Click(chromedp.CSS(`button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("header.top")))
	if got := eval[string](c, `location.pathname + location.search`); got != here {
		t.Errorf("signed in again at %s, want %s", got, here)
	}
}
