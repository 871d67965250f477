package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Signing in to the console: a wrong password is refused with PostHog's words, the
// right one opens the project, the session cookie is out of the page's reach, a
// request without the CSRF token or from another origin is refused, and the 11th
// failure in a row locks the address out.
func TestConsoleSignIn(t *testing.T) {
	c := openConsole(t)
	c.visit("/")
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-email"))) // signed out: the sign-in page
	if got := eval[string](c, `location.pathname + location.search`); got != "/login" {
		t.Errorf("signed out, / went to %s", got)
	}
	c.checkScreen("sign-in")

	c.expect("/api/login/", 400)
	c.signInAs(c.boot.UserEmail, "not the password")
	c.waitText(".error-note", "Invalid email or password.")

	// Only the keyboard: Tab to the fields, type, Enter sends the form.
	c.visit("/login")
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-email")))
	if f := c.focused(); !strings.HasPrefix(f, "input|field-email") {
		t.Errorf("the sign-in page opens with %q focused, not the e-mail field", f)
	}
	c.key(c.boot.UserEmail)
	c.tabTo("field-password")
	c.key(c.boot.AdminPassword + "\r")
	c.run(chromedp.WaitVisible(chromedp.CSS("header.top")))
	want := fmt.Sprintf("/project/%d/activity", c.boot.ProjectID)
	if got := eval[string](c, `location.pathname`); got != want {
		t.Errorf("signed in at %s, want %s", got, want)
	}
	if cookies := eval[string](c, `document.cookie`); strings.Contains(cookies, "hedge_session") || !strings.Contains(cookies, "hedge_csrftoken") {
		t.Errorf("the page reads the cookies %q: the session must be HttpOnly, the CSRF token readable", cookies)
	}

	// An unsafe request without the CSRF token is refused; with it, it passes.
	c.expect("/api/projects/", 403)
	status := eval[int](c, fmt.Sprintf(`fetch('/api/projects/%d/', {method: 'PATCH', headers: {'Content-Type': 'application/json'},
		body: JSON.stringify({name: 'Renamed'})}).then(r => r.status)`, c.boot.ProjectID))
	if status != 403 {
		t.Errorf("a PATCH without X-CSRFToken answered %d, want 403", status)
	}
	status = eval[int](c, fmt.Sprintf(`fetch('/api/projects/%d/', {method: 'PATCH', headers: {'Content-Type': 'application/json',
		'X-CSRFToken': document.cookie.match(/hedge_csrftoken=([^;]+)/)[1]}, body: JSON.stringify({name: 'Renamed'})}).then(r => r.status)`, c.boot.ProjectID))
	if status != 200 {
		t.Errorf("a PATCH with X-CSRFToken answered %d, want 200", status)
	}

	// Another origin holding the browser's cookies and even the token is refused.
	session, csrf := c.cookies()
	req, _ := http.NewRequest("PATCH", fmt.Sprintf("%s/api/projects/%d/", c.hedge.adminURL, c.boot.ProjectID), strings.NewReader(`{"name":"x"}`))
	req.Header.Set("Cookie", "hedge_session="+session+"; hedge_csrftoken="+csrf)
	req.Header.Set("X-CSRFToken", csrf)
	req.Header.Set("Origin", "http://attacker.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "Origin checking failed") {
		t.Errorf("a PATCH from another origin: %d %s", resp.StatusCode, body)
	}

	// Ten failures lock the e-mail out from this address; the right password then
	// shows the lockout, not a sign-in.
	c.expect("/api/login/", 400)
	for range 10 {
		c.signInAs(c.boot.UserEmail, "still not it")
		c.waitText(".error-note", "Invalid email or password.")
	}
	c.expect("/api/login/", 403)
	c.signInAs(c.boot.UserEmail, c.boot.AdminPassword)
	c.waitText(".error-note", "Too many failed login attempts.")
}

// Signing in goes back to ?next= only when it is a path of the console: one that the
// browser's URL parser reads as another site (it drops tabs and newlines, and takes \
// for /) lands on the console's first screen instead.
func TestConsoleSignInNextStaysHome(t *testing.T) {
	c := openConsole(t)
	home := fmt.Sprintf("%s/project/%d/activity", c.hedge.adminURL, c.boot.ProjectID)
	for _, next := range []string{"/%09/evil.invalid", "/%0A/evil.invalid", "/%5C/evil.invalid", "/%5Cevil.invalid",
		"//evil.invalid", "https://evil.invalid/"} {
		c.visit("/login?next=" + next)
		c.fill("#field-email", c.boot.UserEmail)
		c.fill("#field-password", c.boot.AdminPassword)
		c.run(chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
		var href string
		waitFor(t, 20*time.Second, "the sign-in to go home or away", func() bool {
			var err error
			href, err = chromedp.Run(c.ctx, chromedp.Evaluate[string](`location.href`))
			return err == nil && (href == home || !strings.HasPrefix(href, c.hedge.adminURL))
		})
		if href != home {
			t.Fatalf("signed in with ?next=%s at %s, want %s", next, href, home)
		}
		c.run(chromedp.WaitVisible(chromedp.CSS("header.top")))
	}
}

// cookies are the tab's session and CSRF cookies, read through the DevTools protocol
// (the page itself cannot read the session's).
func (c *consoleTab) cookies() (session, csrf string) {
	c.t.Helper()
	for _, k := range c.browserCookies() {
		switch k.Name {
		case "hedge_session":
			session = k.Value
			if !k.HTTPOnly || k.SameSite != network.CookieSameSiteLax {
				c.t.Errorf("the session cookie is HttpOnly=%v SameSite=%s, want HttpOnly and Lax", k.HTTPOnly, k.SameSite)
			}
		case "hedge_csrftoken":
			csrf = k.Value
		}
	}
	if session == "" || csrf == "" {
		c.t.Fatal("the browser holds no session or CSRF cookie")
	}
	return session, csrf
}

// An invite link lets a new user choose a password and signs them in; changing it on
// the account page needs the current one (an error next to that field otherwise) and
// signs out the user's other browsers, whose next request returns to sign-in.
func TestConsoleInviteAndPassword(t *testing.T) {
	c := openConsole(t)
	var invite struct {
		ID string `json:"id"`
	}
	if status := c.adminAPI("POST", "/api/organizations/"+c.boot.OrganizationID+"/invites/", map[string]any{"target_email": "grace@example.com"}, &invite); status != 201 {
		t.Fatalf("creating an invite: %d", status)
	}
	const password, newPassword = "a long first password", "a longer second password"

	first := c.another()
	first.visit("/signup/" + invite.ID)
	first.waitText("form.auth-card", "g****@example.com")
	first.checkScreen("signup")
	first.fill("#field-first_name", "Grace")
	first.fill("#field-password", password)
	first.run(chromedp.Click(chromedp.CSS(`button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("header.top")))
	first.waitText(`.top-end a[href="/account"]`, "Grace")

	// The same user in another browser.
	second := c.another()
	second.signInAs("grace@example.com", password)
	second.run(chromedp.WaitVisible(chromedp.CSS("header.top")))

	first.visit("/account")
	first.fill("#field-current_password", "not my password")
	first.fill("#field-password", newPassword)
	first.expect("/api/users/@me/", 400)
	first.run(chromedp.Click(chromedp.CSS(`form[aria-labelledby="password-title"] button[type="submit"]`)))
	first.waitText("#field-current_password-error", "Your current password is incorrect.")
	first.checkScreen("account-error")
	// Once the password changes, the other browser's session ends: its requests from
	// then on (the screen it shows polls) are answered 401, its next screen asks to
	// sign in again, and the new password does.
	second.expect("/api/", 401)
	first.fill("#field-current_password", password)
	first.run(chromedp.Click(chromedp.CSS(`form[aria-labelledby="password-title"] button[type="submit"]`)))
	first.waitText(`form[aria-labelledby="password-title"] [role="status"]`, "Password changed.")

	second.visit(fmt.Sprintf("/project/%d/persons", c.boot.ProjectID))
	second.run(chromedp.WaitVisible(chromedp.CSS("#field-email")))
	second.signInAs("grace@example.com", newPassword)
	second.run(chromedp.WaitVisible(chromedp.CSS("header.top")))
	// The browser that changed it is still signed in.
	first.visit("/account")
	first.waitText("main h1", "Your account")
}
