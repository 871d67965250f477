package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hedge-analytics/hedge/admin"
)

// The console's browser tests drive Debian's chromium-headless-shell through chromedp
// against the real hedge binary: one browser per test binary, and per test a hedge of
// its own on a new data directory, seeded with events, and a fresh tab. Each screen's
// test checks what a user sees and does, that the page logged no error and no request
// failed unexpectedly, that axe-core finds no serious or critical violation in the
// light and the dark theme, and a keyboard-only path. make test installs the browser
// and sets HEDGE_REQUIRE_BROWSER_TESTS, under which a missing browser fails the tests
// instead of skipping them; HEDGE_CHROMIUM names another browser binary and
// HEDGE_SCREENSHOTS a directory for a PNG of each screen in each theme.

var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	axe    string
	err    error
}

// stopBrowser ends the shared browser; TestMain calls it after the tests.
func stopBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
}

// requireBrowser returns the shared browser's context, starting it the first time,
// or skips the test when no browser is installed and the tests are not required.
func requireBrowser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("HEDGE_CHROMIUM")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium-headless-shell"); err != nil {
			if path, err = exec.LookPath("chromium"); err != nil {
				if os.Getenv("HEDGE_REQUIRE_BROWSER_TESTS") != "" {
					t.Fatal("no chromium-headless-shell on PATH (apt-get install chromium-headless-shell, or set HEDGE_CHROMIUM)")
				}
				t.Skip("no chromium-headless-shell on PATH; make test installs it")
			}
		}
	}
	browser.once.Do(func() {
		axe, err := os.ReadFile(filepath.Join("web", "node_modules", "axe-core", "axe.min.js"))
		if err != nil {
			browser.err = fmt.Errorf("axe-core is not installed (npm ci --prefix web): %w", err)
			return
		}
		browser.axe = string(axe)
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.WindowSize(1280, 800),
			chromedp.Flag("hide-scrollbars", true),
			chromedp.Flag("font-render-hinting", "none"),
		)
		if os.Geteuid() == 0 {
			opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox as root (CI runs as root)
		}
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(allocCtx)
		browser.ctx, browser.cancel = ctx, func() { cancel(); cancelAlloc() }
		browser.err = chromedp.Do(ctx) // starts the browser
	})
	if browser.err != nil {
		if os.Getenv("HEDGE_REQUIRE_BROWSER_TESTS") == "" && strings.Contains(browser.err.Error(), "axe-core") {
			t.Skip(browser.err)
		}
		t.Fatal(browser.err)
	}
	return browser.ctx
}

// consoleTab is a browser tab on a hedge of its own, signed out at first.
type consoleTab struct {
	t     *testing.T
	ctx   context.Context
	hedge *process
	boot  admin.Bootstrap
	dark  bool

	mu       sync.Mutex
	problems []string // console errors, uncaught exceptions, failed requests
	// expected are response statuses (by path prefix) the test provokes on purpose,
	// such as the 400 of a wrong password, which are not problems.
	expected map[string]int
}

// openConsole starts hedge on a new data directory, sends it the seed events, and
// opens a tab in the light theme. At the end of the test the tab closes, and the test
// fails if the page logged an error or a request failed unexpectedly.
func openConsole(t *testing.T) *consoleTab {
	t.Helper()
	parent := requireBrowser(t)
	p, boot, _ := startServing(t)
	seedConsoleEvents(t, p.captureURL, boot.ProjectAPIKey)
	return newTab(t, parent, p, boot)
}

// another opens a second tab on the same hedge, in a browser context of its own (no
// cookies of c): another browser of the same or another user.
func (c *consoleTab) another() *consoleTab {
	c.t.Helper()
	return newTab(c.t, browser.ctx, c.hedge, c.boot)
}

// newTab opens a tab in a browser context of its own: no cookies or storage of
// another tab or of another test's hedge (a cookie names a host, not a port).
func newTab(t *testing.T, parent context.Context, p *process, boot admin.Bootstrap) *consoleTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	c := &consoleTab{t: t, ctx: ctx, hedge: p, boot: boot, expected: map[string]int{}}
	if err := chromedp.Listen(ctx, c.listen); err != nil {
		t.Fatal(err)
	}
	c.run(chromedp.EmulateViewport(1280, 800), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
		return err
	}))
	c.setDark(false)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range c.problems {
			t.Errorf("the page had a problem: %s", p)
		}
	})
	return c
}

// listen records what a user of the page would call broken.
func (c *consoleTab) listen(ev any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		c.problems = append(c.problems, "uncaught: "+exceptionText(ev.ExceptionDetails))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value))
			}
			c.problems = append(c.problems, "console.error: "+strings.Join(parts, " "))
		}
	case *log.EventEntryAdded:
		// Failed loads are reported below with their status; CSP violations and the
		// like land here.
		if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
			c.problems = append(c.problems, "log: "+ev.Entry.Text)
		}
	case *network.EventResponseReceived:
		status := int(ev.Response.Status)
		if status < 400 {
			return
		}
		u := ev.Response.URL
		if i := strings.Index(u, "//"); i >= 0 {
			if j := strings.Index(u[i+2:], "/"); j >= 0 {
				u = u[i+2+j:]
			}
		}
		for prefix, want := range c.expected {
			if status == want && strings.HasPrefix(u, prefix) {
				return
			}
		}
		c.problems = append(c.problems, fmt.Sprintf("%d from %s", status, u))
	case *network.EventLoadingFailed:
		if !ev.Canceled {
			c.problems = append(c.problems, "request failed: "+ev.ErrorText)
		}
	}
}

// expect marks status answers to paths under prefix as provoked by the test.
func (c *consoleTab) expect(prefix string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expected[prefix] = status
}

// run runs actions in the tab and fails the test on an error.
func (c *consoleTab) run(actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	if err := chromedp.Do(c.ctx, actions...); err != nil {
		c.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) in the page.
func eval[T any](c *consoleTab, expression string) T {
	c.t.Helper()
	v, err := chromedp.Run(c.ctx, chromedp.Evaluate[T](expression, chromedp.EvalAwaitPromise))
	if err != nil {
		c.t.Fatalf("evaluating %s: %v", expression, err)
	}
	return v
}

// text is the visible text of the first element sel matches, once it is visible.
func (c *consoleTab) text(sel string) string {
	c.t.Helper()
	c.run(chromedp.WaitVisible(chromedp.CSS(sel)))
	s, err := chromedp.Run(c.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		c.t.Fatalf("browser: %v", err)
	}
	return s
}

// waitText waits until the first element sel matches contains want.
func (c *consoleTab) waitText(sel, want string) {
	c.t.Helper()
	c.waitTextWithin(sel, want, 20*time.Second)
}

// waitTextWithin is waitText with a deadline of its own: a promise the screen makes.
func (c *consoleTab) waitTextWithin(sel, want string, within time.Duration) {
	c.t.Helper()
	c.waitJSText(sel, fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ''`, sel), want, within)
}

// waitJSText waits until the text the expression js gives contains want; what names
// it in the failure.
func (c *consoleTab) waitJSText(what, js, want string, within time.Duration) {
	c.t.Helper()
	var got string
	waitFor(c.t, within, fmt.Sprintf("%s to show %q", what, want), func() bool {
		got = eval[string](c, js)
		return strings.Contains(got, want)
	})
}

// waitFor polls cond every 100 ms until it holds, and fails the test after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
	}
}

// visit opens a console path and waits for the main landmark.
func (c *consoleTab) visit(path string) {
	c.t.Helper()
	c.run(chromedp.Navigate(c.hedge.adminURL+path), chromedp.WaitReady(chromedp.CSS("main")))
}

// signIn signs the bootstrap user in through the sign-in page and waits for the
// first screen.
func (c *consoleTab) signIn() {
	c.t.Helper()
	c.signInAs(c.boot.UserEmail, c.boot.AdminPassword)
	c.run(chromedp.WaitVisible(chromedp.CSS("header.top")))
}

// signInAs fills and sends the sign-in form.
func (c *consoleTab) signInAs(email, password string) {
	c.t.Helper()
	c.visit("/login")
	c.fill("#field-email", email)
	c.fill("#field-password", password)
	c.run(chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
}

// fill sets the value of the input, textarea or select sel matches as typing or
// choosing would: through the element's own value setter, then input and change
// events, so that the app's state follows.
func (c *consoleTab) fill(sel, value string) {
	c.t.Helper()
	c.run(chromedp.WaitVisible(chromedp.CSS(sel)))
	js, _ := json.Marshal(value)
	eval[bool](c, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.focus();
		Object.getOwnPropertyDescriptor(Object.getPrototypeOf(e), 'value').set.call(e, %s);
		e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, sel, js))
}

// setDark switches the emulated prefers-color-scheme, as a user's system setting
// would, without reloading.
func (c *consoleTab) setDark(dark bool) {
	c.t.Helper()
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	c.dark = dark
	c.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	}))
}

// axeViolation is what a failed check reports of axe-core's result.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// checkScreen checks the page as it is in both themes: axe-core finds no serious or
// critical violation, and, when HEDGE_SCREENSHOTS is set, a screenshot of each theme
// is written as <name>-light.png and <name>-dark.png. It leaves the light theme on.
func (c *consoleTab) checkScreen(name string) {
	c.t.Helper()
	for _, dark := range []bool{false, true} {
		c.setDark(dark)
		theme := map[bool]string{false: "light", true: "dark"}[dark]
		time.Sleep(150 * time.Millisecond) // charts redraw on the theme's change event
		if !eval[bool](c, `typeof axe !== 'undefined'`) {
			if _, err := chromedp.Run(c.ctx, chromedp.Evaluate[*runtime.RemoteObject](browser.axe)); err != nil {
				c.t.Fatalf("cannot load axe-core: %v", err)
			}
		}
		found := eval[[]axeViolation](c, `axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
			.filter(v => v.impact === 'serious' || v.impact === 'critical')
			.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))})))`)
		for _, v := range found {
			c.t.Errorf("%s (%s theme): axe %s %s: %s at %v", name, theme, v.Impact, v.ID, v.Help, v.Nodes)
		}
		if dir := os.Getenv("HEDGE_SCREENSHOTS"); dir != "" {
			png, err := chromedp.Run(c.ctx, chromedp.CaptureScreenshot())
			if err != nil {
				c.t.Fatalf("screenshot: %v", err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				c.t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+"-"+theme+".png"), png, 0o644); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	c.setDark(false)
}

// browserCookies are the tab's cookies for hedge's admin listener, HttpOnly ones
// included (read through the DevTools protocol).
func (c *consoleTab) browserCookies() []*network.Cookie {
	c.t.Helper()
	var cookies []*network.Cookie
	c.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{c.hedge.adminURL}})
		cookies = res.Cookies
		return err
	}))
	return cookies
}

// key sends keys (kb constants or text) to the focused element.
func (c *consoleTab) key(keys string) {
	c.t.Helper()
	c.run(chromedp.KeyEvent(keys))
}

// focused describes the focused element: its tag, id, text and label.
func (c *consoleTab) focused() string {
	c.t.Helper()
	return eval[string](c, `(() => { const e = document.activeElement; if (!e) return '';
		return [e.tagName.toLowerCase(), e.id, (e.getAttribute('aria-label') || e.innerText || e.value || '').trim().slice(0, 60)].join('|'); })()`)
}

// tabTo presses Tab until the focused element's description contains want, and fails
// after 60 presses: the way a keyboard user reaches a control.
func (c *consoleTab) tabTo(want string) {
	c.t.Helper()
	for range 60 {
		c.key("\t")
		if strings.Contains(c.focused(), want) {
			return
		}
	}
	c.t.Fatalf("Tab never reached %q", want)
}

// adminAPI calls the management API with the bootstrap user's personal API key and
// decodes the answer into out (when not nil).
func (c *consoleTab) adminAPI(method, path string, body any, out any) int {
	c.t.Helper()
	var reader *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		reader = strings.NewReader(string(b))
	} else {
		reader = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, c.hedge.adminURL+path, reader)
	req.Header.Set("Authorization", "Bearer "+c.boot.PersonalAPIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			c.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// seedConsoleEvents sends the events the console tests look for: three users over the
// last week, pageviews with $browser and $current_url, a sign-up, and an identified
// user with an e-mail.
func seedConsoleEvents(t *testing.T, captureURL, token string) {
	t.Helper()
	now := time.Now().UTC()
	var batch []map[string]any
	add := func(event, distinctID string, ago time.Duration, props map[string]any) {
		batch = append(batch, map[string]any{
			"event": event, "distinct_id": distinctID, "timestamp": now.Add(-ago).Format(time.RFC3339Nano), "properties": props,
		})
	}
	browsers := []string{"Chrome", "Firefox", "Safari"}
	for day := range 7 {
		for i, user := range []string{"user-ada", "user-brian", "user-chen"} {
			for n := range day%3 + 1 {
				add("$pageview", user, time.Duration(day)*24*time.Hour+time.Duration(i*60+n)*time.Minute,
					map[string]any{"$browser": browsers[i], "$current_url": fmt.Sprintf("https://example.com/page-%d", n), "$pathname": fmt.Sprintf("/page-%d", n)})
			}
		}
	}
	add("signed_up", "user-ada", 2*time.Hour, map[string]any{"plan": "pro", "$set": map[string]any{"email": "ada@example.com", "name": "Ada"}})
	add("purchase", "user-ada", time.Hour, map[string]any{"amount": 42})
	postBatch(t, captureURL, token, batch)
}

// postBatch sends events to the capture listener's /batch/, fails the test unless
// they are stored, and waits until they are queryable.
func postBatch(t *testing.T, captureURL, token string, batch []map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"api_key": token, "batch": batch})
	resp, err := http.Post(captureURL+"/batch/", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sending %d events: %d", len(batch), resp.StatusCode)
	}
	waitApplied(t, captureURL)
}

// exceptionText is an uncaught exception's message.
func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}
