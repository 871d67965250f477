package main

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The feature flags screens: a flag rolled out to 50% is created in the form, listed,
// found by search and switched off and on from its row, and /flags answers it for the
// users the hash puts in the 50%; a multivariate flag whose variants sum to 90% gets
// the API's error next to the variants, an invalid JSON payload is refused before
// anything is sent, and the fixed flag is saved with its payload; a release condition
// on email icontains @example.com makes /flags answer a variant for the seeded user
// with that e-mail and nothing for the others; $feature_flag_called events sent to
// capture show in the flag's usage; disable, enable and delete (through a confirm
// dialog) change what /flags answers; and a flag is created with the keyboard alone.
func TestConsoleFeatureFlags(t *testing.T) {
	c := openConsole(t)
	c.signIn()
	list := fmt.Sprintf("/project/%d/feature_flags", c.boot.ProjectID)
	c.visit(list)
	c.waitText("main", "No feature flags yet")

	// A boolean flag at 50%.
	clickText(c, "a", "New feature flag")
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-key")))
	c.fill("#field-key", "half-rollout")
	c.fill("#field-name", "Half of everyone")
	c.fill("#cond-0-rollout", "50")
	clickText(c, "button", "Create flag")
	half := c.waitFlagPage("half-rollout")
	if g := half.Filters.Groups; len(g) != 1 || g[0].RolloutPercentage == nil || *g[0].RolloutPercentage != 50 || len(g[0].Properties) != 0 || !half.Active {
		t.Errorf("the 50%% flag was saved as %+v", half)
	}
	// /flags answers it for the distinct ids whose hash falls in the first half.
	on := 0
	for i := range 40 {
		id := fmt.Sprintf("visitor-%d", i)
		got := c.evaluateFlags(id)["half-rollout"]
		want := flagHash("half-rollout", id, "") <= 0.5
		if got.Enabled != want {
			t.Errorf("/flags answers half-rollout %v for %s, the hash says %v", got.Enabled, id, want)
		}
		if want {
			on++
		}
	}
	if on == 0 || on == 40 {
		t.Errorf("the hash put %d of 40 users in the 50%%: the check proves nothing", on)
	}

	// The list: the flag, its release, search, the active switch.
	c.visit(list)
	c.waitText("table", "half-rollout")
	c.waitText("table", "50% of all users")
	c.checkScreen("feature-flags")
	c.fill("#flag-search", "nothing-like-it")
	c.waitText("main", "No flag matches these filters.")
	if got := eval[string](c, `location.search`); !strings.Contains(got, "search=nothing-like-it") {
		t.Errorf("the search is not in the URL: %q", got)
	}
	c.fill("#flag-search", "HALF")
	c.waitText("table", "half-rollout")
	c.run(chromedp.Click(chromedp.CSS(`input[role="switch"]`)))
	waitFor(c.t, 10*time.Second, "the flag switched off", func() bool { return !c.flag(half.ID).Active })
	if _, ok := c.evaluateFlags(firstOn(t))["half-rollout"]; ok {
		t.Error("/flags still answers a disabled flag")
	}
	c.fill("#flag-active", "true")
	c.waitText("main", "No flag matches these filters.")
	c.fill("#flag-active", "false")
	c.waitText("table", "half-rollout")
	c.run(chromedp.Click(chromedp.CSS(`input[role="switch"]`)))
	waitFor(c.t, 10*time.Second, "the flag switched on", func() bool { return c.flag(half.ID).Active })

	// A multivariate flag whose variants sum to 90%: the sum shows, the API refuses it,
	// and its error stands next to the variants.
	c.visit(list + "/new")
	c.fill("#field-key", "checkout-test")
	c.run(chromedp.Click(chromedp.CSS("#flag-multivariate")))
	c.run(chromedp.WaitVisible(chromedp.CSS("#variant-1-rollout")))
	c.fill("#variant-1-rollout", "40")
	c.waitText("#variant-sum", "Total: 90% (must be 100%)")
	c.expect(fmt.Sprintf("/api/projects/%d/feature_flags/", c.boot.ProjectID), 400)
	clickText(c, "button", "Create flag")
	c.waitText(".variants #variants-error", "Invalid variant definitions: Variant rollout percentages must sum to 100.")
	if n := c.countFlags("checkout-test"); n != 0 {
		t.Fatalf("a refused flag was created (%d)", n)
	}
	c.checkScreen("feature-flag-new")
	// An invalid payload is refused in the page: nothing is sent.
	c.fill("#variant-1-rollout", "50")
	c.waitText("#variant-sum", "Total: 100%")
	c.fill("#payload-0", `{color: "blue"}`)
	clickText(c, "button", "Create flag")
	c.waitText("#payload-0-error", "Not valid JSON")
	if f := c.focused(); !strings.Contains(f, "payload-0") {
		t.Errorf("after an invalid payload the focus is on %q, not the payload", f)
	}
	if n := c.countFlags("checkout-test"); n != 0 {
		t.Fatalf("a flag with an invalid payload was sent (%d)", n)
	}
	c.fill("#payload-0", `{"color": "blue"}`)
	clickText(c, "button", "Create flag")
	mv := c.waitFlagPage("checkout-test")
	if v := mv.Filters.Multivariate; v == nil || len(v.Variants) != 2 || v.Variants[0].Key != "control" || v.Variants[1].RolloutPercentage != 50 {
		t.Errorf("the variants were saved as %+v", mv.Filters.Multivariate)
	}
	if p := mv.Filters.Payloads["control"]; p != `{"color": "blue"}` {
		t.Errorf("the control payload was saved as %q", p)
	}

	// A release condition: email icontains @example.com, at 100%.
	clickText(c, "button", "Add property filter")
	c.fill("#cond-0-0-key", "email")
	c.fill("#cond-0-0-op", "icontains")
	c.fill("#cond-0-0-value", "@example.com")
	clickText(c, "button", "Save changes")
	c.waitText(".flag-submit", "Saved.")
	mv = c.flag(mv.ID)
	if g := mv.Filters.Groups; len(g) != 1 || len(g[0].Properties) != 1 || g[0].Properties[0].Key != "email" ||
		g[0].Properties[0].Operator != "icontains" || string(g[0].Properties[0].Value) != `"@example.com"` || mv.Version != 2 {
		t.Errorf("the condition was saved as %+v (version %d)", mv.Filters.Groups, mv.Version)
	}
	wantVariant := "control"
	if flagHash("checkout-test", "user-ada", "variant") >= 0.5 {
		wantVariant = "test"
	}
	waitFor(c.t, 10*time.Second, "user-ada gets a variant", func() bool {
		got := c.evaluateFlags("user-ada")["checkout-test"]
		return got.Enabled && got.Variant != nil && *got.Variant == wantVariant
	})
	if got := c.evaluateFlags("user-brian")["checkout-test"]; got.Enabled || got.Reason.Code != "no_condition_match" {
		t.Errorf("user-brian (no e-mail) gets %+v", got)
	}

	// Usage: $feature_flag_called events of this flag (and one of another) sent to capture.
	c.sendFlagCalls(map[string]int{"control": 3, "test": 2}, "checkout-test")
	c.sendFlagCalls(map[string]int{"true": 4}, "half-rollout")
	clickText(c, "button", "Refresh")
	c.waitText(".flag-usage [role=status]", "5 calls of checkout-test")
	c.waitText(".flag-usage .legend", "control 3")
	c.waitText(".flag-usage .legend", "test 2")
	eval[bool](c, `(scrollTo(0, 0), true)`)
	c.checkScreen("feature-flag")
	clickText(c, ".flag-usage button", "Show table")
	today := eval[[]string](c, `[...document.querySelectorAll('.flag-usage tbody tr:last-child > *')].map(e => e.innerText)`)
	if strings.Join(today, "|") != time.Now().UTC().Format("2006-01-02")+"|3|2" && strings.Join(today, "|") != time.Now().UTC().Format("2006-01-02")+"|2|3" {
		t.Errorf("today's row of the usage table is %q", today)
	}

	// Disable and enable from the flag's page.
	clickText(c, ".page-actions button", "Disable")
	c.waitText(".page-actions .badge", "Disabled")
	if _, ok := c.evaluateFlags("user-ada")["checkout-test"]; ok || c.flag(mv.ID).Active {
		t.Error("the disabled flag is still active or answered")
	}
	clickText(c, ".page-actions button", "Enable")
	c.waitText(".page-actions .badge", "Enabled")
	if got := c.evaluateFlags("user-ada")["checkout-test"]; !got.Enabled {
		t.Error("the enabled flag is off for user-ada")
	}

	// Delete: the dialog asks first; Esc keeps the flag, confirming soft-deletes it.
	clickText(c, ".page-actions button", "Delete")
	waitFor(c.t, 10*time.Second, "the dialog opens", func() bool { return eval[bool](c, `document.querySelector('dialog.confirm').open`) })
	if f := c.focused(); !strings.Contains(f, "Cancel") {
		t.Errorf("the delete dialog opens with %q focused, not Cancel", f)
	}
	c.key(kb.Escape)
	waitFor(c.t, 10*time.Second, "the dialog closes", func() bool { return !eval[bool](c, `document.querySelector('dialog.confirm').open`) })
	if c.flag(mv.ID).Deleted {
		t.Fatal("Esc deleted the flag")
	}
	clickText(c, ".page-actions button", "Delete")
	clickText(c, "dialog button", "Delete flag")
	c.waitText("[role=status]", "Deleted the flag checkout-test.")
	if strings.Contains(c.text("table"), "checkout-test") {
		t.Error("the deleted flag is still listed")
	}
	if !c.flag(mv.ID).Deleted {
		t.Error("the flag was not soft-deleted")
	}
	if _, ok := c.evaluateFlags("user-ada")["checkout-test"]; ok {
		t.Error("/flags answers a deleted flag")
	}

	// Only the keyboard: "/" finds the search; a new multivariate flag at 25% is made
	// by Tab, typing, Space and Enter.
	c.run(chromedp.Click(chromedp.CSS("h1")))
	c.key("/")
	if f := c.focused(); !strings.HasPrefix(f, "input|flag-search") {
		t.Errorf("/ focused %q, not the search", f)
	}
	c.run(chromedp.Click(chromedp.CSS("h1")))
	c.tabTo("New feature flag")
	c.key("\r")
	c.run(chromedp.WaitVisible(chromedp.CSS("#field-key")))
	c.tabTo("field-key")
	c.key("keyboard-flag")
	c.tabTo("cond-0-rollout")
	c.key(kb.End + kb.Backspace + kb.Backspace + kb.Backspace + "25")
	c.tabTo("flag-multivariate")
	c.key(" ")
	c.run(chromedp.WaitVisible(chromedp.CSS("#variant-0-key")))
	c.tabTo("Create flag")
	c.key("\r")
	kf := c.waitFlagPage("keyboard-flag")
	if g := kf.Filters.Groups; len(g) != 1 || g[0].RolloutPercentage == nil || *g[0].RolloutPercentage != 25 || kf.Filters.Multivariate == nil || len(kf.Filters.Multivariate.Variants) != 2 {
		t.Errorf("the keyboard's flag was saved as %+v", kf.Filters)
	}
}

// savedFlag is what the tests read of a flag from the management API.
type savedFlag struct {
	ID      int64  `json:"id"`
	Key     string `json:"key"`
	Active  bool   `json:"active"`
	Deleted bool   `json:"deleted"`
	Version int    `json:"version"`
	Filters struct {
		Groups []struct {
			Properties []struct {
				Key      string          `json:"key"`
				Operator string          `json:"operator"`
				Value    json.RawMessage `json:"value"`
			} `json:"properties"`
			RolloutPercentage *float64 `json:"rollout_percentage"`
		} `json:"groups"`
		Multivariate *struct {
			Variants []struct {
				Key               string  `json:"key"`
				RolloutPercentage float64 `json:"rollout_percentage"`
			} `json:"variants"`
		} `json:"multivariate"`
		Payloads map[string]string `json:"payloads"`
	} `json:"filters"`
}

// flag reads a flag by id.
func (c *consoleTab) flag(id int64) savedFlag {
	c.t.Helper()
	var f savedFlag
	if status := c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/feature_flags/%d/", c.boot.ProjectID, id), nil, &f); status != 200 {
		c.t.Fatalf("reading flag %d: %d", id, status)
	}
	return f
}

// countFlags is how many flags have exactly key.
func (c *consoleTab) countFlags(key string) int {
	c.t.Helper()
	var page struct{ Results []savedFlag }
	c.adminAPI("GET", fmt.Sprintf("/api/projects/%d/feature_flags/?search=%s", c.boot.ProjectID, key), nil, &page)
	n := 0
	for _, f := range page.Results {
		if f.Key == key {
			n++
		}
	}
	return n
}

// waitFlagPage waits for the page of the flag key, opened after its creation, and
// returns the flag as saved.
func (c *consoleTab) waitFlagPage(key string) savedFlag {
	c.t.Helper()
	c.waitText("h1", key)
	path := eval[string](c, `location.pathname`)
	id, err := strconv.ParseInt(path[strings.LastIndex(path, "/")+1:], 10, 64)
	if err != nil {
		c.t.Fatalf("the flag's page is at %s", path)
	}
	f := c.flag(id)
	if f.Key != key {
		c.t.Fatalf("the page of %s shows flag %d, %s", key, id, f.Key)
	}
	return f
}

// flagAnswer is one flag of a /flags?v=2 answer.
type flagAnswer struct {
	Enabled bool    `json:"enabled"`
	Variant *string `json:"variant"`
	Reason  struct {
		Code string `json:"code"`
	} `json:"reason"`
}

// evaluateFlags asks the capture listener's /flags/?v=2 for distinctID, as an SDK does.
func (c *consoleTab) evaluateFlags(distinctID string) map[string]flagAnswer {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{"token": c.boot.ProjectAPIKey, "distinct_id": distinctID})
	resp, err := http.Post(c.hedge.captureURL+"/flags/?v=2", "application/json", strings.NewReader(string(body)))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Flags map[string]flagAnswer `json:"flags"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		c.t.Fatalf("/flags: %d %v", resp.StatusCode, err)
	}
	return out.Flags
}

// sendFlagCalls sends $feature_flag_called events for key: n of each response.
func (c *consoleTab) sendFlagCalls(responses map[string]int, key string) {
	c.t.Helper()
	var batch []map[string]any
	for response, n := range responses {
		for i := range n {
			batch = append(batch, map[string]any{"event": "$feature_flag_called", "distinct_id": fmt.Sprintf("caller-%s-%d", response, i),
				"properties": map[string]any{"$feature_flag": key, "$feature_flag_response": response}})
		}
	}
	c.capture(batch...)
}

// firstOn is a distinct id the 50% flag half-rollout is on for.
func firstOn(t *testing.T) string {
	for i := range 40 {
		if id := fmt.Sprintf("visitor-%d", i); flagHash("half-rollout", id, "") <= 0.5 {
			return id
		}
	}
	t.Fatal("no visitor in the 50%")
	return ""
}

// flagHash is PostHog's flag hash (feature-flags.md §8.2), computed here on its own:
// the first 15 hex digits of sha1("<key>.<id><salt>") over 0xFFFFFFFFFFFFFFF.
func flagHash(key, id, salt string) float64 {
	sum := sha1.Sum([]byte(key + "." + id + salt))
	v, _ := strconv.ParseUint(hex.EncodeToString(sum[:])[:15], 16, 64)
	return float64(v) / float64(0xFFFFFFFFFFFFFFF)
}

// clickText clicks the first element sel matches whose text is text, once it is there.
func clickText(c *consoleTab, sel, text string) {
	c.t.Helper()
	js := fmt.Sprintf(`(() => { const e = [...document.querySelectorAll(%q)].find(e => e.innerText.trim() === %q);
		if (!e) return false; e.click(); return true; })()`, sel, text)
	waitFor(c.t, 10*time.Second, fmt.Sprintf("a %s reading %q", sel, text), func() bool { return eval[bool](c, js) })
}
