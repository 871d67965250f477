package admin

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// matrixCase is how the authorization matrix calls one route with the right key: the
// values of the path's :id or :user__uuid and the body, made fresh for each call (the
// call may delete what it names), and the status that means success.
type matrixCase struct {
	setup  func(t *testing.T, env *testEnv) (id, body string)
	status int
}

// routeCase is a matrixCase with what some routes need beyond it.
type routeCase struct {
	matrixCase
	// params, when set, replaces setup for a route with several parameters of its own:
	// their values by name (dashboard_id, user__uuid, ...) and the body.
	params func(t *testing.T, env *testEnv) (map[string]string, string)
	// scope, when set, is the scope the route must require, written out here rather
	// than read from the route table, so a change of the table cannot go unnoticed.
	scope string
}

var matrixSeq atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s%d", prefix, matrixSeq.Add(1)) }

func noFixture(*testing.T, *testEnv) (string, string) { return "", "" }

func withBody(body string) func(*testing.T, *testEnv) (string, string) {
	return func(*testing.T, *testEnv) (string, string) { return "", body }
}

func newDomainID(t *testing.T, env *testEnv) (string, string) {
	d := env.must(t, 201, "POST", env.orgPath("domains/"), env.owner, `{"domain":"`+unique("matrix")+`.example.com"}`)
	return d["id"].(string), `{"saml_entity_id":"https://idp.example.com"}`
}

func newInviteID(t *testing.T, env *testEnv) (string, string) {
	i := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"`+unique("invitee")+`@example.com"}`)
	return i["id"].(string), ""
}

func newMemberUUID(t *testing.T, env *testEnv) (string, string) {
	id, _ := env.member(t, unique("member")+"@example.com", levelMember, "*")
	return id, `{"level":8}`
}

// newExplicitUUID makes a member of the organization an explicit member of the
// bootstrap project (which the matrix makes private).
func newExplicitUUID(body string) func(*testing.T, *testEnv) (string, string) {
	return func(t *testing.T, env *testEnv) (string, string) {
		id, _ := env.member(t, unique("explicit")+"@example.com", levelMember, "*")
		env.addExplicit(t, matrixProject(env), id, explicitMember)
		return id, body
	}
}

// newKeyID makes a key of the owner, gone after the route's test: the owner may hold
// only 10 keys.
func newKeyID(t *testing.T, env *testEnv) (string, string) {
	k := env.must(t, 201, "POST", "/api/personal_api_keys/", env.owner, `{"label":"matrix","scopes":["project:read"]}`)
	id := k["id"].(string)
	t.Cleanup(func() { env.exec(t, `DELETE FROM meta.personal_api_keys WHERE id::VARCHAR = ?`, id) })
	return id, ""
}

// newKeyBody is the body of a new key whose label the route's test then deletes.
func newKeyBody(t *testing.T, env *testEnv) (string, string) {
	t.Cleanup(func() { env.exec(t, `DELETE FROM meta.personal_api_keys WHERE label = 'matrix new key'`) })
	return "", `{"label":"matrix new key","scopes":["personal_api_key:read"]}`
}

func newExportID(body string) func(*testing.T, *testEnv) (string, string) {
	return func(t *testing.T, env *testEnv) (string, string) {
		e := env.must(t, 201, "POST", env.orgPath("batch_exports/"), env.owner, exportBody(env))
		return e["id"].(string), body
	}
}

func exportBody(env *testEnv) string {
	return `{"name":"matrix","interval":"hour","team_id":` + strconv.FormatInt(env.boot.ProjectID, 10) +
		`,"destination":{"type":"Parquet","config":{"path":"exports"}}}`
}

// matrixCases covers the routes of this package's organization-level API; routes
// without a case (other resources') get the generic checks only.
func matrixCases(env *testEnv) map[string]matrixCase {
	cases := map[string]matrixCase{
		"GET /api/organizations/":                                         {noFixture, 200},
		"POST /api/organizations/":                                        {withBody(`{"name":"Matrix"}`), 201},
		"GET /api/organizations/:organization_id/":                        {noFixture, 200},
		"GET /api/users/@me/":                                             {noFixture, 200},
		"GET /api/instance_status/":                                       {noFixture, 200},
		"GET /api/personal_api_keys/":                                     {noFixture, 200},
		"POST /api/personal_api_keys/":                                    {newKeyBody, 201},
		"GET /api/personal_api_keys/:id/":                                 {newKeyID, 200},
		"DELETE /api/personal_api_keys/:id/":                              {newKeyID, 204},
		"GET /api/organizations/:organization_id/members/":                {noFixture, 200},
		"PATCH /api/organizations/:organization_id/members/:user__uuid/":  {newMemberUUID, 200},
		"DELETE /api/organizations/:organization_id/members/:user__uuid/": {newMemberUUID, 204},
		"GET /api/organizations/:organization_id/invites/":                {noFixture, 200},
		"POST /api/organizations/:organization_id/invites/": {func(*testing.T, *testEnv) (string, string) {
			return "", `{"target_email":"` + unique("new") + `@example.com"}`
		}, 201},
		"POST /api/organizations/:organization_id/invites/bulk/": {func(*testing.T, *testEnv) (string, string) {
			return "", `[{"target_email":"` + unique("bulk") + `@example.com"}]`
		}, 200},
		"DELETE /api/organizations/:organization_id/invites/:id/": {newInviteID, 204},
		"GET /api/organizations/:organization_id/domains/":        {noFixture, 200},
		"POST /api/organizations/:organization_id/domains/": {func(*testing.T, *testEnv) (string, string) {
			return "", `{"domain":"` + unique("new") + `.example.com"}`
		}, 201},
		"GET /api/organizations/:organization_id/domains/:id/":         {newDomainID, 200},
		"PATCH /api/organizations/:organization_id/domains/:id/":       {newDomainID, 200},
		"DELETE /api/organizations/:organization_id/domains/:id/":      {newDomainID, 204},
		"POST /api/organizations/:organization_id/domains/:id/verify/": {newDomainID, 200},
		"GET /api/organizations/:organization_id/projects/":            {noFixture, 200},
		"POST /api/organizations/:organization_id/projects/":           {withBody(`{"name":"Matrix"}`), 201},
		"GET /api/organizations/:organization_id/projects/:id/": {func(*testing.T, *testEnv) (string, string) {
			return strconv.FormatInt(env.boot.ProjectID, 10), ""
		}, 200},
		"PATCH /api/organizations/:organization_id/projects/:id/": {func(*testing.T, *testEnv) (string, string) {
			return strconv.FormatInt(env.boot.ProjectID, 10), `{"name":"Matrix"}`
		}, 200},
		"GET /api/projects/:project_id/":                  {noFixture, 200},
		"PATCH /api/projects/:project_id/":                {withBody(`{"name":"Matrix"}`), 200},
		"GET /api/projects/:project_id/explicit_members/": {noFixture, 200},
		"POST /api/projects/:project_id/explicit_members/": {func(t *testing.T, env *testEnv) (string, string) {
			id, _ := env.member(t, unique("explicit")+"@example.com", levelMember, "*")
			return "", `{"user_uuid":"` + id + `"}`
		}, 201},
		"GET /api/projects/:project_id/explicit_members/:user__uuid/":    {newExplicitUUID(""), 200},
		"PATCH /api/projects/:project_id/explicit_members/:user__uuid/":  {newExplicitUUID(`{"level":8}`), 200},
		"DELETE /api/projects/:project_id/explicit_members/:user__uuid/": {newExplicitUUID(""), 204},
	}
	newFlag := func(body string) func(*testing.T, *testEnv) (string, string) {
		return func(t *testing.T, env *testEnv) (string, string) {
			return strconv.FormatInt(env.flag(t, `{"key":"`+unique("matrix")+`"}`), 10), body
		}
	}
	newCohort := func(body string) func(*testing.T, *testEnv) (string, string) {
		return func(t *testing.T, env *testEnv) (string, string) {
			return strconv.FormatInt(env.cohort(t, `{"name":"matrix","is_static":true}`), 10), body
		}
	}
	for _, c := range []struct {
		base string
		body func() string
		item func(string) func(*testing.T, *testEnv) (string, string)
	}{
		{"/api/projects/:project_id/feature_flags/", func() string { return `{"key":"` + unique("matrix") + `"}` }, newFlag},
		{"/api/projects/:project_id/cohorts/", func() string { return `{"name":"matrix","is_static":true}` }, newCohort},
	} {
		cases["GET "+c.base] = matrixCase{noFixture, 200}
		cases["POST "+c.base] = matrixCase{func(*testing.T, *testEnv) (string, string) { return "", c.body() }, 201}
		cases["GET "+c.base+":id/"] = matrixCase{c.item(""), 200}
		cases["PATCH "+c.base+":id/"] = matrixCase{c.item(`{"name":"renamed"}`), 200}
		cases["DELETE "+c.base+":id/"] = matrixCase{c.item(""), 405}
	}
	for _, base := range []string{"/api/organizations/:organization_id/batch_exports/", "/api/projects/:project_id/batch_exports/"} {
		cases["GET "+base] = matrixCase{noFixture, 200}
		cases["POST "+base] = matrixCase{func(t *testing.T, env *testEnv) (string, string) { return "", exportBody(env) }, 201}
		cases["GET "+base+":id/"] = matrixCase{newExportID(""), 200}
		cases["PATCH "+base+":id/"] = matrixCase{newExportID(`{"name":"renamed"}`), 200}
		cases["DELETE "+base+":id/"] = matrixCase{newExportID(""), 204}
		cases["POST "+base+":id/pause/"] = matrixCase{newExportID(""), 200}
		cases["POST "+base+":id/unpause/"] = matrixCase{newExportID(""), 200}
	}
	return cases
}

// TestAuthorizationMatrix walks the route table: every authenticated route answers
// 401 without a key, 403 to a key without its scope, 404 to a key of a user outside
// the organization (when the path names something of one), and success to the right
// keys: the owner's "*" key and a key of the owner with exactly the route's scope.
// Routes added later are walked too: those without a matrixCase get the first three
// checks and must not refuse the right key; routes of dashboards and insights must
// have a case.
//
// The bootstrap project, which every route under a project is called on, is private,
// and every route under /api/projects/{project_id}/ gets the private-project column:
// 403 "You don't have access to the project." to a member of the organization not
// added to it, success to an explicit admin of the project and to an admin of the
// organization, and no access refusal to an explicit member (the same success on
// reads). The organization's batch export routes, whose exports are the bootstrap
// project's, do not show them to the member not added to it.
func TestAuthorizationMatrix(t *testing.T) {
	dnsAddr, _ := startDNS(t) // verify gets a quick NXDOMAIN, never the network
	env := serveAPI(t, func(cfg *Config) { cfg.DNSServer = dnsAddr })
	_, noScopeKey := env.member(t, "noscope@example.com", levelOwner, "unrelated_object:read")
	_, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	env.exec(t, `UPDATE meta.projects SET access_control = true WHERE id = ?`, env.boot.ProjectID) // hedge has no project update route
	_, plainMemberKey := env.member(t, "plain@example.com", levelMember, "*")
	explicitMemberUUID, explicitMemberKey := env.member(t, "explicit-member@example.com", levelMember, "*")
	projectAdminUUID, projectAdminKey := env.member(t, "project-admin@example.com", levelMember, "*")
	_, orgAdminKey := env.member(t, "org-admin@example.com", levelAdmin, "*")
	env.addExplicit(t, matrixProject(env), explicitMemberUUID, explicitMember)
	env.addExplicit(t, matrixProject(env), projectAdminUUID, explicitAdmin)
	var ownerID int64
	if err := env.warehouse.DB().QueryRow(`SELECT id FROM meta.users WHERE email = 'owner@example.com'`).Scan(&ownerID); err != nil {
		t.Fatal(err)
	}
	// The session column: the owner signed in acts as the owner's * key does.
	ownerHash, err := newHasher().hash(t.Context(), "the owner's password")
	if err != nil {
		t.Fatal(err)
	}
	if err := setPassword(t.Context(), env.warehouse.DB(), ownerID, ownerHash); err != nil {
		t.Fatal(err)
	}
	ownerSession, ownerCSRF := env.signIn(t, "owner@example.com", "the owner's password")
	cases := dashboardMatrixCases()
	maps.Copy(cases, exportRunMatrixCases())
	for name, tc := range matrixCases(env) {
		cases[name] = routeCase{matrixCase: tc}
	}
	notAuthenticated := `{"type":"authentication_error","code":"not_authenticated","detail":"Authentication credentials were not provided.","attr":null}`
	covered := 0
	for _, r := range env.api.routes {
		name := r.method + " " + r.path
		t.Run(name, func(t *testing.T) {
			tc, known := cases[name]
			if known {
				covered++
			} else if strings.Contains(r.path, "/dashboards/") || strings.Contains(r.path, "/insights/") {
				t.Fatal("no matrix case: the route is only called with ids of nothing")
			} else {
				tc = routeCase{matrixCase: matrixCase{setup: noFixture}}
			}
			scope := r.scope
			if tc.scope != "" {
				if tc.scope != r.scope {
					t.Fatalf("the route requires scope %q, want %q", r.scope, tc.scope)
				}
				scope = tc.scope
			}
			fixture := func() (map[string]string, string) {
				if tc.params != nil {
					return tc.params(t, env)
				}
				id, body := tc.setup(t, env)
				if id == "" {
					return nil, body
				}
				return map[string]string{"*": id}, body
			}
			// path fills the route's parameters: the organization and project of the
			// bootstrap, then those of params by name, then params["*"] for any other
			// (a random UUID without one: a route of another resource).
			path := func(params map[string]string) string {
				return routeParam.ReplaceAllStringFunc(r.path, func(param string) string {
					switch name := param[1:]; {
					case name == "organization_id":
						return env.org.String()
					case name == "project_id":
						return strconv.FormatInt(env.boot.ProjectID, 10)
					case params[name] != "":
						return params[name]
					case params["*"] != "":
						return params["*"]
					}
					return uuid.NewString()
				})
			}

			params, body := fixture()
			if status, _, text := env.call(t, r.method, path(params), "", body); status != 401 || text != notAuthenticated {
				t.Fatalf("no key: %d %s", status, text)
			}
			want403 := fmt.Sprintf(`{"type":"authentication_error","code":"permission_denied","detail":"API key missing required scope '%s'","attr":null}`, scope)
			if status, _, text := env.call(t, r.method, path(params), noScopeKey, body); status != 403 || text != want403 {
				t.Fatalf("key without %s: %d %s", scope, status, text)
			}
			if strings.Contains(r.path, ":") {
				detail := "Not found."
				switch {
				case strings.HasPrefix(r.path, "/api/organizations/:organization_id/"):
					detail = "Organization not found."
				case strings.HasPrefix(r.path, "/api/projects/:project_id/"):
					detail = "Project not found."
				}
				want404 := `{"type":"invalid_request","code":"not_found","detail":"` + detail + `","attr":null}`
				if status, _, text := env.call(t, r.method, path(params), outsiderKey, body); status != 404 || text != want404 {
					t.Fatalf("key of another organization: %d %s, want 404 %s", status, text, want404)
				}
			}

			scopedKey, err := insertPersonalAPIKey(t.Context(), env.warehouse.DB(), ownerID, "matrix", []string{scope})
			if err != nil {
				t.Fatal(err)
			}
			// Gone after the route's test: the owner may hold only 10 keys.
			t.Cleanup(func() { env.exec(t, `DELETE FROM meta.personal_api_keys WHERE secure_value = ?`, hashKey(scopedKey)) })
			succeeds := func(name, key string, headers map[string]string) {
				t.Helper()
				params, body := fixture()
				status, text, _ := env.do(t, r.method, path(params), key, headers, body)
				switch {
				case known && status != tc.status:
					t.Fatalf("%s: %d, want %d: %s", name, status, tc.status, text)
				case status == 401 || status == 403:
					t.Fatalf("%s refused: %d %s", name, status, text)
				case status == 404 && (strings.Contains(text, "Organization not found.") || strings.Contains(text, "Project not found.")):
					t.Fatalf("%s treated as another tenant: %s", name, text)
				}
			}
			succeeds("the owner's * key", env.owner, nil)
			succeeds("a key of scope "+scope, scopedKey, nil)
			succeeds("the owner's session", "", withSession(ownerSession, ownerCSRF.Value))

			// The private-project column.
			const organizationExports = "/api/organizations/:organization_id/batch_exports/"
			switch {
			case strings.HasPrefix(r.path, "/api/projects/:project_id/"):
				params, body := fixture()
				if status, _, text := env.call(t, r.method, path(params), plainMemberKey, body); status != 403 || text != noProjectAccess {
					t.Fatalf("a member not added to the private project: %d %s", status, text)
				}
				succeeds("an explicit admin of the private project", projectAdminKey, nil)
				succeeds("an admin of the organization", orgAdminKey, nil)
				params, body = fixture()
				status, _, text := env.call(t, r.method, path(params), explicitMemberKey, body)
				switch {
				case text == noProjectAccess:
					t.Fatalf("an explicit member of the private project refused: %s", text)
				case r.method == "GET" && known && status != tc.status:
					t.Fatalf("an explicit member of the private project: %d, want %d: %s", status, tc.status, text)
				}
			case strings.HasPrefix(r.path, organizationExports):
				params, body := fixture()
				status, _, text := env.call(t, r.method, path(params), plainMemberKey, body)
				switch {
				case r.path == organizationExports && r.method == "GET":
					if status != 200 || !strings.Contains(text, `"count":0,`) {
						t.Fatalf("a member not added to the private project lists its exports: %d %s", status, text)
					}
				case r.path == organizationExports:
					if status != 403 || text != noProjectAccess {
						t.Fatalf("a member not added to the private project creates an export of it: %d %s", status, text)
					}
				case status != 404 || !strings.Contains(text, `"detail":"Not found."`):
					t.Fatalf("a member not added to the private project reaches its export: %d %s", status, text)
				}
				succeeds("an explicit admin of the private project", projectAdminKey, nil)
				succeeds("an admin of the organization", orgAdminKey, nil)
			}
		})
	}
	if covered != len(cases) {
		t.Errorf("%d of %d matrix cases match a route: a case names a route that is not registered", covered, len(cases))
	}
}

// exportRunMatrixCases covers the runs and backfills of batch exports, under an
// organization and under a project, with an export that has a run.
func exportRunMatrixCases() map[string]routeCase {
	backfill := func(hoursAgo int) string {
		now := time.Now().UTC().Truncate(time.Hour)
		return fmt.Sprintf(`{"start_at": %q, "end_at": %q}`, now.Add(-time.Duration(hoursAgo)*time.Hour).Format(time.RFC3339),
			now.Add(-time.Duration(hoursAgo-1)*time.Hour).Format(time.RFC3339))
	}
	withRun := func(body string) func(*testing.T, *testEnv) (map[string]string, string) {
		return func(t *testing.T, env *testEnv) (map[string]string, string) {
			id, _ := newExportID("")(t, env)
			env.must(t, 201, "POST", env.orgPath("batch_exports/"+id+"/backfills/"), env.owner, backfill(3))
			var run string
			if err := env.warehouse.DB().QueryRow(`SELECT id::VARCHAR FROM meta.batch_export_runs WHERE batch_export_id = ?`, id).Scan(&run); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"id": id, "run_id": run}, body
		}
	}
	cases := map[string]routeCase{}
	for _, base := range []string{"/api/organizations/:organization_id/batch_exports/:id/", "/api/projects/:project_id/batch_exports/:id/"} {
		cases["GET "+base+"runs/"] = routeCase{params: withRun(""), matrixCase: matrixCase{status: 200}, scope: "batch_export:read"}
		cases["GET "+base+"runs/:run_id/"] = routeCase{params: withRun(""), matrixCase: matrixCase{status: 200}, scope: "batch_export:read"}
		cases["POST "+base+"runs/:run_id/retry/"] = routeCase{params: withRun(""), matrixCase: matrixCase{status: 201}, scope: "batch_export:write"}
		cases["POST "+base+"backfill/"] = routeCase{params: withRun(backfill(2)), matrixCase: matrixCase{status: 200}, scope: "batch_export:write"}
		cases["GET "+base+"backfills/"] = routeCase{params: withRun(""), matrixCase: matrixCase{status: 200}, scope: "batch_export:read"}
		cases["POST "+base+"backfills/"] = routeCase{params: withRun(backfill(2)), matrixCase: matrixCase{status: 201}, scope: "batch_export:write"}
	}
	return cases
}

// dashboardMatrixCases covers the routes of dashboards, their collaborators and
// sharing, and insights, each called with a real dashboard or insight of the project
// (made by the owner, so the other-organization key is refused for the project, never
// for a missing id). Scopes are written out: PostHog documents none for move_tile (28)
// and create_from_template_json (29), and hedge gives them dashboard:write.
func dashboardMatrixCases() map[string]routeCase {
	const (
		dashboards = "/api/projects/:project_id/dashboards/"
		insights   = "/api/projects/:project_id/insights/"
	)
	byID := func(status int, scope, body string, setup func(*testing.T, *testEnv) string) routeCase {
		return routeCase{matrixCase{func(t *testing.T, env *testEnv) (string, string) { return setup(t, env), body }, status}, nil, scope}
	}
	plain := func(status int, scope string, setup func(*testing.T, *testEnv) (string, string)) routeCase {
		return routeCase{matrixCase{setup, status}, nil, scope}
	}
	return map[string]routeCase{
		"GET " + dashboards:  plain(200, "dashboard:read", noFixture),
		"POST " + dashboards: plain(201, "dashboard:write", withBody(`{"name":"Matrix"}`)),
		"POST " + dashboards + "create_from_template_json/": plain(200, "dashboard:write", withBody(`{"template":{"template_name":"Matrix",
			"dashboard_description":"","dashboard_filters":{},"tiles":[{"type":"TEXT","body":"x"}]}}`)),
		"GET " + dashboards + ":id/":    byID(200, "dashboard:read", "", matrixDashboard(21)),
		"PATCH " + dashboards + ":id/":  byID(200, "dashboard:write", `{"name":"Renamed"}`, matrixDashboard(21)),
		"DELETE " + dashboards + ":id/": byID(405, "dashboard:write", "", matrixDashboard(21)),
		"PATCH " + dashboards + ":id/move_tile/": plain(200, "dashboard:write", func(t *testing.T, env *testEnv) (string, string) {
			from, to := matrixDashboard(21)(t, env), matrixDashboard(21)(t, env)
			d := env.must(t, 200, "PATCH", matrixProject(env)+"/dashboards/"+from+"/", env.owner, `{"tiles":[{"text":{"body":"moving"}}]}`)
			tile := d["tiles"].([]any)[0].(map[string]any)["id"].(float64)
			return from, fmt.Sprintf(`{"tile":{"id":%d},"toDashboard":%s}`, int64(tile), to)
		}),
		"GET " + dashboards + ":dashboard_id/collaborators/": byID(200, "dashboard:read", "", matrixDashboard(37)),
		"POST " + dashboards + ":dashboard_id/collaborators/": plain(201, "dashboard:write", func(t *testing.T, env *testEnv) (string, string) {
			user, _ := newExplicitUUID("")(t, env)
			return matrixDashboard(37)(t, env), `{"user_uuid":"` + user + `","level":37}`
		}),
		"DELETE " + dashboards + ":dashboard_id/collaborators/:user__uuid/": {matrixCase: matrixCase{status: 204}, scope: "dashboard:write",
			params: func(t *testing.T, env *testEnv) (map[string]string, string) {
				user, _ := newExplicitUUID("")(t, env)
				dashboard := matrixDashboard(37)(t, env)
				env.must(t, 201, "POST", matrixProject(env)+"/dashboards/"+dashboard+"/collaborators/", env.owner, `{"user_uuid":"`+user+`","level":37}`)
				return map[string]string{"dashboard_id": dashboard, "user__uuid": user}, ""
			}},
		"GET " + dashboards + ":dashboard_id/sharing/":          byID(200, "sharing_configuration:read", "", matrixDashboard(21)),
		"PATCH " + dashboards + ":dashboard_id/sharing/":        byID(200, "sharing_configuration:write", `{"enabled":true}`, matrixDashboard(21)),
		"POST " + dashboards + ":dashboard_id/sharing/refresh/": byID(200, "sharing_configuration:write", "", matrixDashboard(21)),
		"GET " + insights:            plain(200, "insight:read", noFixture),
		"POST " + insights:           plain(201, "insight:write", withBody(`{"name":"Matrix"}`)),
		"GET " + insights + ":id/":   byID(200, "insight:read", "", matrixInsight),
		"PATCH " + insights + ":id/": byID(200, "insight:write", `{"name":"Renamed"}`, matrixInsight),
	}
}

func matrixProject(env *testEnv) string {
	return "/api/projects/" + strconv.FormatInt(env.boot.ProjectID, 10)
}

// matrixDashboard makes a dashboard of the bootstrap project at a restriction level.
func matrixDashboard(level int) func(*testing.T, *testEnv) string {
	return func(t *testing.T, env *testEnv) string {
		d := env.must(t, 201, "POST", matrixProject(env)+"/dashboards/", env.owner, fmt.Sprintf(`{"name":%q,"restriction_level":%d}`, unique("matrix"), level))
		return strconv.FormatInt(int64(d["id"].(float64)), 10)
	}
}

// matrixInsight makes an insight of the bootstrap project on a dashboard of it.
func matrixInsight(t *testing.T, env *testEnv) string {
	i := env.must(t, 201, "POST", matrixProject(env)+"/insights/", env.owner, fmt.Sprintf(`{"name":%q,"dashboards":[%s]}`, unique("matrix"), matrixDashboard(37)(t, env)))
	return strconv.FormatInt(int64(i["id"].(float64)), 10)
}

// levelCase is a request whose answer depends on the caller's level in the
// organization: prepare makes its fixtures (as the bootstrap owner, or as the caller
// when the attack needs a step of the caller's own) and returns the request; check,
// when set, looks at the fixtures afterwards (unchanged by a refusal).
type levelCase struct {
	name    string
	prepare func(t *testing.T, env *testEnv, key string) (method, path, body string, check func(t *testing.T, status int, answer string))
	want    map[int]int // status by the caller's level
}

// TestLevelMatrix walks the requests where the level decides, each with a member, an
// admin and an owner (not the bootstrap owner: no creator's rights): an invite may
// never end up above its inviter's level, and the insights and text cards of a
// restricted dashboard are edited only by those who may edit that dashboard, through
// whatever dashboard they are reached.
func TestLevelMatrix(t *testing.T) {
	env := newTestEnv(t, "")
	keys := map[int]string{}
	for _, level := range []int{levelMember, levelAdmin, levelOwner} {
		_, keys[level] = env.member(t, unique("level")+"@example.com", level, "*")
	}
	names := map[int]string{levelMember: "member", levelAdmin: "admin", levelOwner: "owner"}
	invites := env.orgPath("invites/")

	// pendingInvite is an invite the bootstrap owner made at level, and a check that
	// the invite (id, level) is still there, unchanged, when the caller was refused.
	pendingInvite := func(t *testing.T, level int) (string, func(t *testing.T, status int)) {
		email := unique("pending") + "@example.com"
		id := env.must(t, 201, "POST", invites, env.owner, fmt.Sprintf(`{"target_email":%q,"level":%d}`, email, level))["id"].(string)
		return email, func(t *testing.T, status int) {
			t.Helper()
			if status < 400 {
				return
			}
			var level2 int
			if err := env.warehouse.DB().QueryRow(`SELECT level FROM meta.invites WHERE id = ?`, id).Scan(&level2); err != nil || level2 != level {
				t.Fatalf("a refused request changed the pending invite: level %d, %v", level2, err)
			}
		}
	}
	// combine is an invite at level 1 to the e-mail of a pending invite at level,
	// combined with it: refused, the pending invite unchanged and no id answered,
	// unless the caller could have made the pending invite itself.
	combine := func(level int, bulk bool) func(*testing.T, *testEnv, string) (string, string, string, func(*testing.T, int, string)) {
		return func(t *testing.T, env *testEnv, key string) (string, string, string, func(*testing.T, int, string)) {
			email, unchanged := pendingInvite(t, level)
			body := fmt.Sprintf(`{"target_email":%q,"level":1,"combine_pending_invites":true}`, email)
			path := invites
			if bulk {
				body, path = "["+body+"]", invites+"bulk/"
			}
			return "POST", path, body, func(t *testing.T, status int, answer string) {
				unchanged(t, status)
				if status == 201 && !strings.Contains(answer, fmt.Sprintf(`"level":%d`, level)) {
					t.Fatalf("combined into %s, want level %d", answer, level)
				}
			}
		}
	}
	// restricted is a dashboard only its editors edit, made by the bootstrap owner,
	// with an insight and a text card; copy is the caller's shallow copy of it
	// (use_dashboard without duplicate_tiles), which shares them.
	restricted := func(t *testing.T, key string) (insight, copyID, copyText int64, check func(t *testing.T, status int, answer string)) {
		d, _ := env.dashboard(t, fmt.Sprintf(`{"name":%q,"restriction_level":37}`, unique("restricted")))
		insight = env.insight(t, fmt.Sprintf(`{"name":"Guarded","query":%s,"dashboards":[%d]}`, viewsQuery, d))
		env.must(t, 200, "PATCH", env.dashPath(d, ""), env.owner, `{"tiles":[{"text":{"body":"guarded"}}]}`)
		c := env.must(t, 201, "POST", env.project+"/dashboards/", key, fmt.Sprintf(`{"name":"Copy","use_dashboard":%d}`, d))
		copyID = int64(c["id"].(float64))
		for _, tile := range c["tiles"].([]any) {
			if tile.(map[string]any)["text"] != nil {
				copyText = int64(tile.(map[string]any)["id"].(float64))
			}
		}
		return insight, copyID, copyText, func(t *testing.T, status int, _ string) {
			t.Helper()
			if status < 400 {
				return
			}
			original := env.must(t, 200, "GET", env.dashPath(d, ""), env.owner, "")
			text := mustText(t, original["tiles"])
			if !strings.Contains(text, `"name":"Guarded"`) || !strings.Contains(text, `"body":"guarded"`) || !strings.Contains(text, `"deleted":false`) {
				t.Fatalf("a refused edit changed the restricted dashboard: %s", text)
			}
		}
	}

	onlyOwners := map[int]int{levelMember: 403, levelAdmin: 403, levelOwner: 201}
	adminsUp := map[int]int{levelMember: 403, levelAdmin: 201, levelOwner: 201}
	editors := map[int]int{levelMember: 403, levelAdmin: 200, levelOwner: 200}
	for _, lc := range []levelCase{
		{"combine with a pending owner invite", combine(levelOwner, false), onlyOwners},
		{"combine with a pending admin invite", combine(levelAdmin, false), adminsUp},
		{"bulk: combine with a pending owner invite", combine(levelOwner, true), map[int]int{levelMember: 403, levelAdmin: 403, levelOwner: 200}},
		{"replace a pending owner invite", func(t *testing.T, env *testEnv, key string) (string, string, string, func(*testing.T, int, string)) {
			email, unchanged := pendingInvite(t, levelOwner)
			return "POST", invites, fmt.Sprintf(`{"target_email":%q,"level":1}`, email), func(t *testing.T, status int, _ string) { unchanged(t, status) }
		}, onlyOwners},
		{"rename the insight of a restricted dashboard reached through a copy", func(t *testing.T, env *testEnv, key string) (string, string, string, func(*testing.T, int, string)) {
			insight, _, _, check := restricted(t, key)
			return "PATCH", env.insightPath(insight), `{"name":"Mine"}`, check
		}, editors},
		{"delete the insight of a restricted dashboard reached through a copy", func(t *testing.T, env *testEnv, key string) (string, string, string, func(*testing.T, int, string)) {
			insight, _, _, check := restricted(t, key)
			return "PATCH", env.insightPath(insight), `{"deleted":true}`, func(t *testing.T, status int, answer string) {
				check(t, status, answer)
				if status == 200 {
					env.must(t, 404, "GET", env.insightPath(insight), env.owner, "")
				}
			}
		}, editors},
		{"edit the text card of a restricted dashboard through a copy", func(t *testing.T, env *testEnv, key string) (string, string, string, func(*testing.T, int, string)) {
			_, copyID, tile, check := restricted(t, key)
			return "PATCH", env.dashPath(copyID, ""), fmt.Sprintf(`{"tiles":[{"id":%d,"text":{"body":"mine"}}]}`, tile), check
		}, editors},
	} {
		for _, level := range []int{levelMember, levelAdmin, levelOwner} {
			t.Run(lc.name+"/"+names[level], func(t *testing.T) {
				method, path, body, check := lc.prepare(t, env, keys[level])
				status, answer, _ := env.do(t, method, path, keys[level], nil, body)
				if status != lc.want[level] {
					t.Fatalf("%s %s: %d, want %d: %s", method, path, status, lc.want[level], answer)
				}
				if check != nil {
					check(t, status, answer)
				}
			})
		}
	}
}
