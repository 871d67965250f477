package admin

import (
	"fmt"
	"io/fs"
	"mime"
	"path"

	"github.com/gofiber/fiber/v2"

	"github.com/hedge-analytics/hedge/web"
)

// The console (package web) is served on this listener, so that it and the API it
// calls share one origin: its session cookie and CSRF checks need nothing else.
// Every console path answers the same HTML shell and the app routes in the browser;
// /api/*, /metrics and /_health keep their JSON answers.

// consolePaths are the console's own paths. The shared and embedded dashboard pages
// are served by their JSON routes to browsers (sharedDashboard).
var consolePaths = []string{"/", "/login", "/signup/:invite_id", "/account", "/project/*"}

// consolePolicy is the console's Content-Security-Policy, given who may frame it: its
// own script and styles only (Preact and uPlot set styles through the CSSOM, which
// style-src allows) and requests to its own origin only.
const consolePolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors %s; base-uri 'none'; form-action 'self'"

func (a *API) bindConsole() {
	assets := web.Assets()
	a.app.Get("/assets/:name", func(c *fiber.Ctx) error { return serveAsset(c, assets, c.Params("name")) })
	for _, p := range consolePaths {
		a.app.Get(p, func(c *fiber.Ctx) error { return serveShell(c, "'none'", "same-origin") })
	}
}

// serveShell answers the console's page with its security headers. frameAncestors is
// who may frame it; referrer is its Referrer-Policy (no-referrer where the URL itself
// is the credential).
func serveShell(c *fiber.Ctx, frameAncestors, referrer string) error {
	c.Set(fiber.HeaderContentSecurityPolicy, fmt.Sprintf(consolePolicy, frameAncestors))
	c.Set(fiber.HeaderReferrerPolicy, referrer)
	if frameAncestors == "'none'" {
		c.Set(fiber.HeaderXFrameOptions, "DENY")
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(web.Shell())
}

// serveAsset answers a file of the bundle. Its name carries its content's hash, so it
// is cached for a year and never revalidated.
func serveAsset(c *fiber.Ctx, assets fs.FS, name string) error {
	b, err := fs.ReadFile(assets, name)
	if err != nil || path.Base(name) != name {
		return errRecordNotFound()
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		c.Set(fiber.HeaderContentType, t)
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	return c.Send(b)
}

// wantsHTML reports whether the request prefers HTML to JSON: a browser navigating,
// not an API client (which sends no Accept, */*, or application/json).
func wantsHTML(c *fiber.Ctx) bool {
	return c.Accepts(fiber.MIMEApplicationJSON, fiber.MIMETextHTML) == fiber.MIMETextHTML
}
