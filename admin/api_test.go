package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/testlog"
	"github.com/hedge-analytics/hedge/warehouse"
)

// testEnv is a management API on a real DuckDB file and a real loopback listener,
// bootstrapped like a first start: the one harness of admin's tests.
type testEnv struct {
	url       string
	dataDir   string
	warehouse *warehouse.Warehouse
	boot      *Bootstrap
	api       *API
	org       uuid.UUID // the bootstrap organization
	owner     string    // the bootstrap owner's key, scope "*"
	project   string    // the bootstrap project's path, /api/projects/{id}
}

func newTestEnv(t *testing.T, publicURL string) *testEnv {
	t.Helper()
	env := serveAPI(t, func(cfg *Config) { cfg.PublicURL = publicURL })
	withoutDashboards(t, env.warehouse, env.boot.ProjectID)
	return env
}

// serveAPI opens a warehouse in a temporary directory, bootstraps it, and serves the
// management API over it on loopback, with the Config changed by configure (if any).
func serveAPI(t *testing.T, configure func(*Config)) *testEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	wh, err := warehouse.Open(ctx, warehouse.Config{Path: dir + "/hedge.duckdb", Logger: testlog.New()})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := BootstrapIfEmpty(ctx, wh.DB(), dir, Bootstrap{UserEmail: "owner@example.com"})
	if err != nil || boot == nil {
		t.Fatalf("bootstrap: %v %v", boot, err)
	}
	cfg := Config{Warehouse: wh, Logger: testlog.New()}
	if configure != nil {
		configure(&cfg)
	}
	api, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		api.Shutdown(ctx)
		wh.Close()
	})
	return &testEnv{url: "http://" + ln.Addr().String(), dataDir: dir, warehouse: wh, boot: boot, api: api,
		org: uuid.MustParse(boot.OrganizationID), owner: boot.PersonalAPIKey, project: fmt.Sprintf("/api/projects/%d", boot.ProjectID)}
}

// withoutDashboards empties a project of the primary dashboard (and its insights)
// that bootstrap gives it, for the tests that count dashboards and insights from
// zero, as PostHog's own test team starts without one. serveAPI keeps it, and
// TestBootstrapPrimaryDashboard checks it.
func withoutDashboards(t *testing.T, wh *warehouse.Warehouse, project int64) {
	t.Helper()
	for _, query := range []string{
		`DELETE FROM meta.dashboard_tiles WHERE dashboard_id IN (SELECT id FROM meta.dashboards WHERE team_id = ?)`,
		`DELETE FROM meta.insights WHERE team_id = ?`,
		`DELETE FROM meta.dashboards WHERE team_id = ?`,
		`UPDATE meta.projects SET settings = json_merge_patch(settings, '{"primary_dashboard":null}') WHERE id = ?`,
	} {
		if _, err := wh.DB().Exec(query, project); err != nil {
			t.Fatal(err)
		}
	}
}

// scenario is one request and what must come back. In path and body, {org} stands for
// the bootstrap organization's id.
type scenario struct {
	name    string
	method  string
	path    string
	key     string // sent as Authorization: Bearer, when set
	headers map[string]string
	body    string
	status  int
	// want is the exact body when it starts with '{' or '[', else fragments that
	// must all appear in it.
	want    []string
	notWant []string
}

func (env *testEnv) run(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			status, body, _ := env.do(t, sc.method, sc.path, sc.key, sc.headers, sc.body)
			if status != sc.status {
				t.Fatalf("%s %s: status %d, want %d; body %s", sc.method, sc.path, status, sc.status, body)
			}
			for _, want := range sc.want {
				want = env.expand(want)
				if strings.HasPrefix(want, "{") || strings.HasPrefix(want, "[") {
					if body != want {
						t.Fatalf("body\n%s\nwant\n%s", body, want)
					}
				} else if !strings.Contains(body, want) {
					t.Fatalf("body %s\ndoes not contain %s", body, want)
				}
			}
			for _, notWant := range sc.notWant {
				if strings.Contains(body, env.expand(notWant)) {
					t.Fatalf("body %s\ncontains %s", body, notWant)
				}
			}
		})
	}
}

// refused is a scenario of the owner's request refused with DRF's 400 validation_error
// of code, detail and attr ("" for null).
func (env *testEnv) refused(name, method, path, body, attr, code, detail string) scenario {
	a := "null"
	if attr != "" {
		a = `"` + attr + `"`
	}
	return scenario{name: name, method: method, path: path, key: env.owner, body: body, status: 400,
		want: []string{fmt.Sprintf(`{"type":"validation_error","code":%q,"detail":%q,"attr":%s}`, code, detail, a)}}
}

func (env *testEnv) expand(s string) string {
	return strings.ReplaceAll(s, "{org}", env.boot.OrganizationID)
}

func (env *testEnv) do(t *testing.T, method, path, key string, headers map[string]string, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, env.url+env.expand(path), strings.NewReader(env.expand(body)))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(text), resp.Header
}

// call makes a request and decodes a JSON answer (nil when there is no body).
func (env *testEnv) call(t *testing.T, method, path, key, body string) (int, map[string]any, string) {
	t.Helper()
	status, text, _ := env.do(t, method, path, key, nil, body)
	var decoded map[string]any
	if strings.HasPrefix(text, "{") {
		if err := json.Unmarshal([]byte(text), &decoded); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %s", method, path, text)
		}
	}
	return status, decoded, text
}

// must makes a request that must answer status, and returns its JSON object.
func (env *testEnv) must(t *testing.T, status int, method, path, key, body string) map[string]any {
	t.Helper()
	got, decoded, text := env.call(t, method, path, key, body)
	if got != status {
		t.Fatalf("%s %s: status %d, want %d; body %s", method, path, got, status, text)
	}
	return decoded
}

// member adds a user to the bootstrap organization at level with a key of scopes and
// returns the user's uuid and key.
func (env *testEnv) member(t *testing.T, email string, level int, scopes ...string) (string, string) {
	t.Helper()
	_, key := env.addUser(t, email, env.org, level, scopes...)
	return env.userUUID(t, email), key
}

func (env *testEnv) userUUID(t *testing.T, email string) string {
	t.Helper()
	var id string
	if err := env.warehouse.DB().QueryRow(`SELECT uuid::VARCHAR FROM meta.users WHERE email = ?`, strings.ToLower(email)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// exec runs SQL against the test's database: fixtures only (ageing an invite), never
// instead of the API under test.
func (env *testEnv) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := env.warehouse.DB().Exec(query, args...); err != nil {
		t.Fatal(err)
	}
}

// ingest commits events of the bootstrap project through the real Writer.
func (env *testEnv) ingest(t *testing.T, events ...warehouse.Event) {
	t.Helper()
	env.ingestTo(t, env.boot.ProjectID, events...)
}

// ingestTo commits events of a project through the real Writer, as one batch, each
// with a new uuid and at least empty properties.
func (env *testEnv) ingestTo(t *testing.T, project int64, events ...warehouse.Event) {
	t.Helper()
	for i := range events {
		events[i].UUID, events[i].TeamID = uuid.Must(uuid.NewV7()), project
		if events[i].Properties == "" {
			events[i].Properties = "{}"
		}
	}
	if err := env.warehouse.Writer().Submit(&warehouse.Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
}

// orgPath is a path under the bootstrap organization.
func (env *testEnv) orgPath(rest string) string {
	return "/api/organizations/" + env.org.String() + "/" + rest
}

// addUser makes a user with a key of the given scopes in a new organization, or as a
// member of organization when it is not uuid.Nil.
func (env *testEnv) addUser(t *testing.T, email string, organization uuid.UUID, level int, scopes ...string) (uuid.UUID, string) {
	t.Helper()
	ctx := context.Background()
	db := env.warehouse.DB()
	var err error
	if organization == uuid.Nil {
		if organization, err = insertOrganization(ctx, db, "Org of "+email); err != nil {
			t.Fatal(err)
		}
	}
	userID, err := insertUser(ctx, db, email, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := insertMembership(ctx, db, organization, userID, level); err != nil {
		t.Fatal(err)
	}
	key, err := insertPersonalAPIKey(ctx, db, userID, "test", scopes)
	if err != nil {
		t.Fatal(err)
	}
	return organization, key
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	env := newTestEnv(t, "")
	key := env.boot.PersonalAPIKey
	env.run(t, []scenario{
		{name: "unknown api route", method: "GET", path: "/api/nothing/here/", key: key, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}},
		{name: "unknown route without key", method: "GET", path: "/nowhere", status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}},
		{name: "wrong method", method: "PUT", path: "/api/organizations/{org}/projects/", key: key, status: 405,
			want: []string{`{"type":"invalid_request","code":"method_not_allowed","detail":"Method \"PUT\" not allowed.","attr":null}`}},
		{name: "wrong method delete", method: "DELETE", path: "/api/organizations/{org}/projects/", key: key, status: 405,
			want: []string{`"detail":"Method \"DELETE\" not allowed."`}},
		{name: "health", method: "GET", path: "/_health", status: 200, want: []string{`{"status":"ok"}`}},
		{name: "without trailing slash", method: "GET", path: "/api/organizations/{org}/projects", key: key, status: 200,
			want: []string{`"count":1`}},
	})
}

// A handler that panics fails its own request with the generic 500, and the listener
// keeps serving.
func TestPanicAnswers500(t *testing.T) {
	env := newTestEnv(t, "")
	env.api.app.Get("/api/panics", func(*fiber.Ctx) error { panic("a bug") })
	resp, err := env.api.app.Test(httptest.NewRequest("GET", "/api/panics", nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if want := `{"type":"server_error","code":"error","detail":"A server error occurred.","attr":null}`; resp.StatusCode != 500 || string(body) != want {
		t.Fatalf("panic answered %d %s, want 500 %s", resp.StatusCode, body, want)
	}
	env.run(t, []scenario{{name: "still serving", method: "GET", path: "/_health", status: 200, want: []string{`{"status":"ok"}`}}})
	if got := resp.Header.Get("Cache-Control") + " " + resp.Header.Get("X-Content-Type-Options"); got != "no-store nosniff" {
		t.Fatalf("the panic's answer has Cache-Control, X-Content-Type-Options %q", got)
	}
}

// Every answer is nosniff, and no answer is cached unless its handler says it may be:
// answers carry keys and people's data. Errors are answers too.
func TestResponseHeaders(t *testing.T) {
	env := newTestEnv(t, "")
	token := env.boot.ProjectAPIKey
	for _, r := range []struct {
		method, path, key, body string
		status                  int
		cacheControl            string
	}{
		{"POST", "/api/personal_api_keys/", env.owner, `{"label":"ci","scopes":["*"]}`, 201, "no-store"},
		{"GET", "/api/organizations/{org}/projects/", env.owner, "", 200, "no-store"},
		{"GET", "/api/organizations/{org}/projects/", "", "", 401, "no-store"},
		{"GET", "/api/nowhere/", env.owner, "", 404, "no-store"},
		{"GET", "/_health", "", "", 200, "no-store"},
		// Flag definitions are revalidated with their ETag, and hold no key.
		{"GET", "/flags/definitions?token=" + token, env.owner, "", 200, "private, must-revalidate"},
	} {
		status, body, header := env.do(t, r.method, r.path, r.key, nil, r.body)
		if status != r.status {
			t.Fatalf("%s %s: %d %s", r.method, r.path, status, body)
		}
		if got := header.Get("Cache-Control"); got != r.cacheControl {
			t.Errorf("%s %s: Cache-Control %q, want %q", r.method, r.path, got, r.cacheControl)
		}
		if got := header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options %q", r.method, r.path, got)
		}
	}
}
