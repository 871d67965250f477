package admin

import "testing"

// The capture listener's URL, which the console's install snippets show, is what hedge
// was told (Config.CaptureURL, without a trailing slash), read-only in the user's
// record, and null when hedge was told nothing.
func TestUserMeCaptureURL(t *testing.T) {
	env := serveAPI(t, func(cfg *Config) { cfg.CaptureURL = "https://capture.example.com/" })
	me := env.must(t, 200, "GET", "/api/users/@me/", env.owner, "")
	if me["capture_url"] != "https://capture.example.com" {
		t.Errorf("capture_url = %v, want https://capture.example.com", me["capture_url"])
	}
	// A PATCH cannot change it: the field is not the user's.
	env.must(t, 200, "PATCH", "/api/users/@me/", env.owner, `{"capture_url": "https://evil.example.com", "first_name": "Ada"}`)
	if me := env.must(t, 200, "GET", "/api/users/@me/", env.owner, ""); me["capture_url"] != "https://capture.example.com" {
		t.Errorf("after a PATCH capture_url = %v", me["capture_url"])
	}

	unknown := serveAPI(t, nil)
	if me := unknown.must(t, 200, "GET", "/api/users/@me/", unknown.owner, ""); me["capture_url"] != nil {
		t.Errorf("without a capture URL, capture_url = %v, want null", me["capture_url"])
	}
}
