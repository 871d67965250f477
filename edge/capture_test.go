package edge_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/edge"
	"github.com/hedge-analytics/hedge/warehouse"
)

// captureEnv is a capture listener on loopback over a real warehouse whose project
// tokens come from a real bootstrap.
type captureEnv struct {
	url       string
	token     string
	team      int64
	warehouse *warehouse.Warehouse
}

func newCaptureEnv(t *testing.T) *captureEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	wh, err := warehouse.Open(ctx, warehouse.Config{Path: dir + "/hedge.duckdb", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := admin.BootstrapIfEmpty(ctx, wh.DB(), dir, admin.Bootstrap{UserEmail: "admin@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	api, err := admin.New(ctx, admin.Config{DB: wh.DB(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := edge.New(edge.Config{Writer: wh.Writer(), Teams: api.ProjectTokens().Team, Logger: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		wh.Close()
	})
	return &captureEnv{url: "http://" + ln.Addr().String(), token: boot.ProjectAPIKey, team: boot.ProjectID, warehouse: wh}
}

func (env *captureEnv) post(t *testing.T, method, path, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, env.url+path, strings.NewReader(strings.ReplaceAll(body, "{token}", env.token)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp, string(text)
}

func (env *captureEnv) events(t *testing.T) int {
	t.Helper()
	var n int
	if err := env.warehouse.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCaptureStoresEvent(t *testing.T) {
	env := newCaptureEnv(t)
	body := `{"api_key":"{token}","event":"$pageview","distinct_id":"user-1",
		"uuid":"01a20156-1f95-71cb-957f-d58a41919584","timestamp":"2026-11-22T03:39:11.125Z",
		"properties":{"$current_url":"https://example.com/?a=1&b=2","nested":{"x":[1,"two"]}}}`
	resp, text := env.post(t, "POST", "/capture/", body, map[string]string{"Content-Type": "application/json"})
	if resp.StatusCode != 200 || text != `{"status": 1}` {
		t.Fatalf("capture: %d %s", resp.StatusCode, text)
	}
	var team int64
	var name, distinctID, properties string
	var ts time.Time
	err := env.warehouse.DB().QueryRow(`SELECT team_id, event, distinct_id, "timestamp", properties FROM events
		WHERE uuid = '01a20156-1f95-71cb-957f-d58a41919584'`).Scan(&team, &name, &distinctID, &ts, &properties)
	if err != nil {
		t.Fatal(err)
	}
	if team != env.team || name != "$pageview" || distinctID != "user-1" ||
		!ts.Equal(time.Date(2026, 11, 22, 3, 39, 11, 125_000_000, time.UTC)) ||
		properties != `{"$current_url":"https://example.com/?a=1&b=2","nested":{"x":[1,"two"]}}` {
		t.Fatalf("stored team=%d event=%q distinct_id=%q ts=%v properties=%s", team, name, distinctID, ts, properties)
	}
}

func TestCaptureAnswers(t *testing.T) {
	env := newCaptureEnv(t)
	type scenario struct {
		name    string
		method  string
		path    string
		body    string
		headers map[string]string
		status  int
		want    string // exact body, or a fragment when it does not start with '{'
		stored  int    // events in the table afterwards, cumulative
	}
	huge := `{"api_key":"{token}","event":"big","distinct_id":"u","properties":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`
	for _, sc := range []scenario{
		{name: "token in api_key", method: "POST", path: "/capture/", body: `{"api_key":"{token}","event":"e","distinct_id":"u"}`,
			status: 200, want: `{"status": 1}`, stored: 1},
		{name: "token in token, no trailing slash", method: "POST", path: "/capture", body: `{"token":"{token}","event":"e","distinct_id":7}`,
			status: 200, want: `{"status": 1}`, stored: 2},
		{name: "no event name: skipped, still 200", method: "POST", path: "/capture/", body: `{"api_key":"{token}","distinct_id":"u"}`,
			status: 200, want: `{"status": 1}`, stored: 2},
		{name: "no distinct_id: skipped, still 200", method: "POST", path: "/capture/", body: `{"api_key":"{token}","event":"e"}`,
			status: 200, want: `{"status": 1}`, stored: 2},
		{name: "empty distinct_id: skipped, still 200", method: "POST", path: "/capture/", body: `{"api_key":"{token}","event":"e","distinct_id":""}`,
			status: 200, want: `{"status": 1}`, stored: 2},
		{name: "missing token", method: "POST", path: "/capture/", body: `{"event":"e","distinct_id":"u"}`, status: 401,
			want: `{"type":"authentication_error","code":"missing_api_key","detail":"API key not provided. You can find your project API key in PostHog project settings.","attr":null}`, stored: 2},
		{name: "unknown token", method: "POST", path: "/capture/", body: `{"api_key":"phc_nobody","event":"e","distinct_id":"u"}`, status: 401,
			want: `{"type":"authentication_error","code":"invalid_api_key","detail":"Project API key invalid. You can find your project API key in PostHog project settings.","attr":null}`, stored: 2},
		{name: "empty body", method: "POST", path: "/capture/", body: ``, status: 400, want: `"code":"no_data"`, stored: 2},
		{name: "malformed JSON", method: "POST", path: "/capture/", body: `{"api_key":"{token}","event":`, status: 400,
			want: `"code":"invalid_payload"`, stored: 2},
		{name: "properties not an object", method: "POST", path: "/capture/", body: `{"api_key":"{token}","event":"e","distinct_id":"u","properties":[1]}`,
			status: 400, want: `"code":"invalid_payload"`, stored: 2},
		{name: "invalid uuid", method: "POST", path: "/capture/", body: `{"api_key":"{token}","event":"e","distinct_id":"u","uuid":"nope"}`,
			status: 400, want: `"code":"invalid_payload"`, stored: 2},
		{name: "2 MB body", method: "POST", path: "/capture/", body: huge, status: 413,
			want: `{"type":"client_error","code":"request_too_large","detail":"Request too large.","attr":null}`, stored: 2},
		{name: "GET", method: "GET", path: "/capture/", status: 405, want: `"code":"method_not_allowed"`, stored: 2},
		{name: "unknown path", method: "POST", path: "/nowhere", body: `{}`, status: 404, want: `"code":"not_found"`, stored: 2},
		{name: "health", method: "GET", path: "/_health", status: 200, want: `{"status":"ok"}`, stored: 2},
	} {
		t.Run(sc.name, func(t *testing.T) {
			resp, text := env.post(t, sc.method, sc.path, sc.body, sc.headers)
			if resp.StatusCode != sc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, sc.status, text)
			}
			if strings.HasPrefix(sc.want, "{") && text != sc.want || !strings.Contains(text, sc.want) {
				t.Fatalf("body %s, want %s", text, sc.want)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") == "" {
				t.Fatal("answer without Access-Control-Allow-Origin")
			}
			if got := env.events(t); got != sc.stored {
				t.Fatalf("%d events stored, want %d", got, sc.stored)
			}
		})
	}
}

func TestCaptureCORS(t *testing.T) {
	env := newCaptureEnv(t)
	resp, _ := env.post(t, "OPTIONS", "/capture/", "", map[string]string{
		"Origin":                         "https://app.example.com",
		"Access-Control-Request-Method":  "POST",
		"Access-Control-Request-Headers": "content-type",
	})
	h := resp.Header
	if resp.StatusCode != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		h.Get("Access-Control-Allow-Credentials") != "true" || h.Get("Access-Control-Allow-Methods") != "POST, OPTIONS" ||
		h.Get("Access-Control-Allow-Headers") != "content-type" {
		t.Fatalf("preflight answered %d %v", resp.StatusCode, h)
	}
	resp, _ = env.post(t, "PUT", "/capture/", "{}", nil)
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST, OPTIONS" {
		t.Fatalf("PUT answered %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
