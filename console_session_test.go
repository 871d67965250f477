package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A session that ends while a form is half filled in: hedge answers the form's
// submission 401, the sign-in page says the session expired, and after signing in
// again the user is back on the form with what they had typed, which then saves.
// The draft is given back once: the form opened again later is empty.
func TestConsoleSessionExpired(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	newFlag := fmt.Sprintf("/project/%d/feature_flags/new", c.boot.ProjectID)
	c.visit(newFlag)
	c.fill("#field-key", "checkout-redesign")
	c.fill("#field-name", "The new checkout")
	c.fill("#cond-0-rollout", "30")

	// The session ends on the server (signed out elsewhere, or expired) while the
	// browser still holds its cookies.
	session, csrf := c.cookies()
	req, _ := http.NewRequest("POST", c.hedge.adminURL+"/api/logout/", nil)
	req.Header.Set("Cookie", "hedge_session="+session+"; hedge_csrftoken="+csrf)
	req.Header.Set("X-CSRFToken", csrf)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ending the session: %d", resp.StatusCode)
	}

	c.expect(fmt.Sprintf("/api/projects/%d/feature_flags/", c.boot.ProjectID), 401)
	clickText(c, "button", "Create flag")
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-email")))
	c.waitText(".auth-card", "Your session has expired.")
	c.checkScreen("sign-in-expired")
	c.fill("#field-email", c.boot.UserEmail)
	c.fill("#field-password", c.boot.AdminPassword)
	c.run(chromedp.Click(chromedp.CSS(`button[type="submit"]`)))

	c.waitText(".flag-form", "Your unsaved changes were kept")
	if got := eval[string](c, `location.pathname`); got != newFlag {
		t.Errorf("signed in again at %s, want back at %s", got, newFlag)
	}
	for sel, want := range map[string]string{"#field-key": "checkout-redesign", "#field-name": "The new checkout", "#cond-0-rollout": "30"} {
		if got := eval[string](c, fmt.Sprintf(`document.querySelector(%q).value`, sel)); got != want {
			t.Errorf("after signing in again %s holds %q, want %q", sel, got, want)
		}
	}
	c.checkScreen("flag-draft-restored")
	clickText(c, "button", "Create flag")
	f := c.waitFlagPage("checkout-redesign")
	if g := f.Filters.Groups; len(g) != 1 || g[0].RolloutPercentage == nil || *g[0].RolloutPercentage != 30 {
		t.Errorf("the restored flag was saved as %+v", f)
	}

	c.visit(newFlag)
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-key")))
	if got := eval[string](c, `document.querySelector('#field-key').value`); got != "" || strings.Contains(c.text("main"), "were kept") {
		t.Errorf("the draft came back twice: the key holds %q", got)
	}
}
