package admin

import (
	"bytes"
	"compress/gzip"
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

func (a *API) bindConsole() error {
	assets, err := loadAssets(web.Assets())
	if err != nil {
		return err
	}
	a.app.Get("/assets/:name", func(c *fiber.Ctx) error { return serveAsset(c, assets, c.Params("name")) })
	for _, p := range consolePaths {
		a.app.Get(p, func(c *fiber.Ctx) error { return serveShell(c, "'none'", "same-origin") })
	}
	return nil
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

// asset is a file of the bundle as served: its bytes, and gzipped when that is smaller.
type asset struct {
	contentType string
	plain       []byte
	gzipped     []byte // nil when gzip does not make it smaller
}

// loadAssets reads the bundle's files and gzips each once, at start, so that no
// request compresses anything: the bundle is a few hundred KB and fixed for the
// binary's life (its names carry their content's hash).
func loadAssets(fsys fs.FS) (map[string]asset, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("cannot list the console's assets: %w", err)
	}
	assets := make(map[string]asset, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("cannot read the console's asset %s: %w", e.Name(), err)
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
		if _, err := zw.Write(b); err != nil {
			return nil, fmt.Errorf("cannot gzip the console's asset %s: %w", e.Name(), err)
		}
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("cannot gzip the console's asset %s: %w", e.Name(), err)
		}
		a := asset{contentType: mime.TypeByExtension(path.Ext(e.Name())), plain: b}
		if buf.Len() < len(b) {
			a.gzipped = buf.Bytes()
		}
		assets[e.Name()] = a
	}
	return assets, nil
}

// serveAsset answers a file of the bundle. Its name carries its content's hash, so it
// is cached for a year and never revalidated. It is sent gzipped to a client whose
// Accept-Encoding allows gzip (q above 0, by name or as *), else as it is; either way
// the answer varies on Accept-Encoding, so caches keep the two apart.
func serveAsset(c *fiber.Ctx, assets map[string]asset, name string) error {
	a, ok := assets[name]
	if !ok {
		return errRecordNotFound()
	}
	if a.contentType != "" {
		c.Set(fiber.HeaderContentType, a.contentType)
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	c.Vary(fiber.HeaderAcceptEncoding)
	if a.gzipped != nil && c.Get(fiber.HeaderAcceptEncoding) != "" && c.AcceptsEncodings("gzip", "identity") == "gzip" {
		c.Set(fiber.HeaderContentEncoding, "gzip")
		return c.Send(a.gzipped)
	}
	return c.Send(a.plain)
}

// wantsHTML reports whether the request prefers HTML to JSON: a browser navigating,
// not an API client (which sends no Accept, */*, or application/json).
func wantsHTML(c *fiber.Ctx) bool {
	return c.Accepts(fiber.MIMEApplicationJSON, fiber.MIMETextHTML) == fiber.MIMETextHTML
}
