package admin

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hedge-analytics/hedge/web"
)

// The console is served on the management listener: every console path answers its
// HTML shell with a Content-Security-Policy that allows only its own script, the
// shell's assets are served immutable, and the API's routes keep their JSON.
func TestConsoleServing(t *testing.T) {
	env := newTestEnv(t, "")
	for _, path := range []string{"/", "/login", "/signup/abc", "/account", "/project/1/activity", "/project/1/insights/xyz"} {
		status, body, h := env.do(t, "GET", path, "", nil, "")
		if status != 200 || !strings.HasPrefix(body, "<!doctype html>") || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s %q", path, status, h.Get("Content-Type"), body)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Fatalf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("GET %s: headers %v", path, h)
		}
	}
	_, shell, _ := env.do(t, "GET", "/", "", nil, "")
	assets := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(shell, -1)
	if len(assets) != 2 {
		t.Fatalf("the shell loads %d assets, want a script and a style sheet:\n%s", len(assets), shell)
	}
	for _, a := range assets {
		status, body, h := env.do(t, "GET", a[1], "", nil, "")
		wantType := map[bool]string{true: "text/javascript", false: "text/css"}[strings.HasSuffix(a[1], ".js")]
		if status != 200 || len(body) == 0 || !strings.HasPrefix(h.Get("Content-Type"), wantType) ||
			h.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Fatalf("GET %s: %d %q %q", a[1], status, h.Get("Content-Type"), h.Get("Cache-Control"))
		}
	}
	env.run(t, []scenario{
		{name: "an unknown asset", method: "GET", path: "/assets/main-XXXXXXXX.js", status: 404, want: []string{`"code":"not_found"`}},
		{name: "a path out of the assets", method: "GET", path: "/assets/..%2findex.html", status: 404},
		{name: "an API path stays JSON for a browser", method: "GET", path: "/api/nothing/", headers: map[string]string{"Accept": "text/html"},
			status: 404, want: []string{`"type":"invalid_request"`}},
		{name: "an API route without a key", method: "GET", path: "/api/users/@me/", headers: map[string]string{"Accept": "text/html"},
			status: 401, want: []string{`"type":"authentication_error"`}},
		{name: "not a console path", method: "GET", path: "/elsewhere", headers: map[string]string{"Accept": "text/html"}, status: 404},
	})
}

// The bundle's assets are served gzipped to a client that accepts gzip, and as they
// are to one that does not (or refuses gzip with q=0), with Vary: Accept-Encoding and
// the Content-Length of the bytes sent; the gzipped body is the asset.
func TestConsoleAssetsCompressed(t *testing.T) {
	env := newTestEnv(t, "")
	_, shell, _ := env.do(t, "GET", "/", "", nil, "")
	script := regexp.MustCompile(`src="(/assets/[^"]+\.js)"`).FindStringSubmatch(shell)
	if script == nil {
		t.Fatalf("the shell loads no script:\n%s", shell)
	}
	plain, err := fs.ReadFile(web.Assets(), strings.TrimPrefix(script[1], "/assets/"))
	if err != nil {
		t.Fatal(err)
	}
	// A transport that neither asks for gzip on its own nor undoes it: the test sees
	// the bytes hedge sends.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, tc := range []struct {
		accept string
		gzip   bool
	}{
		{"", false},
		{"gzip", true},
		{"gzip, deflate, br, zstd", true},
		{"br;q=1.0, gzip;q=0.8, *;q=0.1", true},
		{"*", true},
		{"gzip;q=0", false},
		{"identity", false},
		{"br", false},
	} {
		for _, method := range []string{"GET", "HEAD"} {
			req, _ := http.NewRequest(method, env.url+script[1], nil)
			if tc.accept != "" {
				req.Header.Set("Accept-Encoding", tc.accept)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			encoding := resp.Header.Get("Content-Encoding")
			if resp.StatusCode != 200 || resp.Header.Get("Vary") != "Accept-Encoding" || (encoding == "gzip") != tc.gzip ||
				(encoding != "gzip" && encoding != "") {
				t.Fatalf("%s with Accept-Encoding %q: %d, Content-Encoding %q, Vary %q", method, tc.accept, resp.StatusCode, encoding, resp.Header.Get("Vary"))
			}
			if method == "HEAD" {
				continue
			}
			if resp.ContentLength != int64(len(body)) {
				t.Fatalf("Accept-Encoding %q: Content-Length %d for %d bytes", tc.accept, resp.ContentLength, len(body))
			}
			if tc.gzip {
				if len(body) >= len(plain)/2 {
					t.Fatalf("Accept-Encoding %q: %d bytes gzipped for %d", tc.accept, len(body), len(plain))
				}
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatalf("Accept-Encoding %q: the body is not gzip: %v", tc.accept, err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatalf("Accept-Encoding %q: the body does not gunzip: %v", tc.accept, err)
				}
			}
			if !bytes.Equal(body, plain) {
				t.Fatalf("Accept-Encoding %q: the body (%d bytes) is not the asset (%d bytes)", tc.accept, len(body), len(plain))
			}
		}
	}
}

// A shared dashboard's link answers a browser with the console's page, which fetches
// the dashboard as JSON; API clients get the JSON as before. The page sends no
// Referer (its URL is the credential), and only /embedded/ may be framed.
func TestConsoleSharedPage(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Shared"}`)
	token := env.must(t, 200, "GET", env.dashPath(id, "sharing/"), env.owner, "")["access_token"].(string)
	env.must(t, 200, "PATCH", env.dashPath(id, "sharing/"), env.owner, `{"enabled": true}`)
	browser := map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
	for _, tc := range []struct {
		path, framers string
	}{{"/shared/" + token, "frame-ancestors 'none'"}, {"/embedded/" + token, "frame-ancestors *"}} {
		status, body, h := env.do(t, "GET", tc.path, "", browser, "")
		if status != 200 || !strings.HasPrefix(body, "<!doctype html>") || h.Get("Referrer-Policy") != "no-referrer" ||
			!strings.Contains(h.Get("Content-Security-Policy"), tc.framers) {
			t.Fatalf("a browser on %s: %d %v %s", tc.path, status, h, body)
		}
		for _, accept := range []string{"", "*/*", "application/json"} {
			status, body, _ := env.do(t, "GET", tc.path, "", map[string]string{"Accept": accept}, "")
			if status != 200 || !strings.Contains(body, `"name":"Shared"`) {
				t.Fatalf("Accept %q on %s: %d %s", accept, tc.path, status, body)
			}
		}
	}
	if _, _, h := env.do(t, "GET", "/embedded/"+token, "", browser, ""); h.Get("X-Frame-Options") != "" {
		t.Fatalf("the embedded page forbids framing: X-Frame-Options %q", h.Get("X-Frame-Options"))
	}
}
