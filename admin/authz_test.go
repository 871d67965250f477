package admin

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
)

// matrixCase is how the authorization matrix calls one route with the right key: the
// values of the path's :id or :user__uuid and the body, made fresh for each call (the
// call may delete what it names), and the status that means success.
type matrixCase struct {
	setup  func(t *testing.T, env *mgmtEnv) (id, body string)
	status int
}

var matrixSeq atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s%d", prefix, matrixSeq.Add(1)) }

func noFixture(*testing.T, *mgmtEnv) (string, string) { return "", "" }

func withBody(body string) func(*testing.T, *mgmtEnv) (string, string) {
	return func(*testing.T, *mgmtEnv) (string, string) { return "", body }
}

func newDomainID(t *testing.T, env *mgmtEnv) (string, string) {
	d := env.must(t, 201, "POST", env.orgPath("domains/"), env.owner, `{"domain":"`+unique("matrix")+`.example.com"}`)
	return d["id"].(string), `{"saml_entity_id":"https://idp.example.com"}`
}

func newInviteID(t *testing.T, env *mgmtEnv) (string, string) {
	i := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"`+unique("invitee")+`@example.com"}`)
	return i["id"].(string), ""
}

func newMemberUUID(t *testing.T, env *mgmtEnv) (string, string) {
	id, _ := env.member(t, unique("member")+"@example.com", levelMember, "*")
	return id, `{"level":8}`
}

func newKeyID(t *testing.T, env *mgmtEnv) (string, string) {
	k := env.must(t, 201, "POST", "/api/personal_api_keys/", env.owner, `{"label":"matrix","scopes":["project:read"]}`)
	return k["id"].(string), ""
}

func newExportID(body string) func(*testing.T, *mgmtEnv) (string, string) {
	return func(t *testing.T, env *mgmtEnv) (string, string) {
		e := env.must(t, 201, "POST", env.orgPath("batch_exports/"), env.owner, exportBody(env))
		return e["id"].(string), body
	}
}

func exportBody(env *mgmtEnv) string {
	return `{"name":"matrix","interval":"hour","team_id":` + strconv.FormatInt(env.boot.ProjectID, 10) +
		`,"destination":{"type":"Parquet","config":{"path":"exports"}}}`
}

// matrixCases covers the routes of this package's organization-level API; routes
// without a case (other resources') get the generic checks only.
func matrixCases(env *mgmtEnv) map[string]matrixCase {
	cases := map[string]matrixCase{
		"GET /api/organizations/":                                         {noFixture, 200},
		"POST /api/organizations/":                                        {withBody(`{"name":"Matrix"}`), 201},
		"GET /api/organizations/:organization_id/":                        {noFixture, 200},
		"GET /api/users/@me/":                                             {noFixture, 200},
		"GET /api/personal_api_keys/":                                     {noFixture, 200},
		"POST /api/personal_api_keys/":                                    {withBody(`{"label":"m","scopes":["project:read"]}`), 201},
		"GET /api/personal_api_keys/:id/":                                 {newKeyID, 200},
		"DELETE /api/personal_api_keys/:id/":                              {newKeyID, 204},
		"GET /api/organizations/:organization_id/members/":                {noFixture, 200},
		"PATCH /api/organizations/:organization_id/members/:user__uuid/":  {newMemberUUID, 200},
		"DELETE /api/organizations/:organization_id/members/:user__uuid/": {newMemberUUID, 204},
		"GET /api/organizations/:organization_id/invites/":                {noFixture, 200},
		"POST /api/organizations/:organization_id/invites/": {func(*testing.T, *mgmtEnv) (string, string) {
			return "", `{"target_email":"` + unique("new") + `@example.com"}`
		}, 201},
		"POST /api/organizations/:organization_id/invites/bulk/": {func(*testing.T, *mgmtEnv) (string, string) {
			return "", `[{"target_email":"` + unique("bulk") + `@example.com"}]`
		}, 200},
		"DELETE /api/organizations/:organization_id/invites/:id/": {newInviteID, 204},
		"GET /api/organizations/:organization_id/domains/":        {noFixture, 200},
		"POST /api/organizations/:organization_id/domains/": {func(*testing.T, *mgmtEnv) (string, string) {
			return "", `{"domain":"` + unique("new") + `.example.com"}`
		}, 201},
		"GET /api/organizations/:organization_id/domains/:id/":         {newDomainID, 200},
		"PATCH /api/organizations/:organization_id/domains/:id/":       {newDomainID, 200},
		"DELETE /api/organizations/:organization_id/domains/:id/":      {newDomainID, 204},
		"POST /api/organizations/:organization_id/domains/:id/verify/": {newDomainID, 200},
		"GET /api/organizations/:organization_id/projects/":            {noFixture, 200},
		"POST /api/organizations/:organization_id/projects/":           {withBody(`{"name":"Matrix"}`), 201},
		"GET /api/organizations/:organization_id/projects/:id/": {func(*testing.T, *mgmtEnv) (string, string) {
			return strconv.FormatInt(env.boot.ProjectID, 10), ""
		}, 200},
	}
	for _, base := range []string{"/api/organizations/:organization_id/batch_exports/", "/api/projects/:project_id/batch_exports/"} {
		cases["GET "+base] = matrixCase{noFixture, 200}
		cases["POST "+base] = matrixCase{func(t *testing.T, env *mgmtEnv) (string, string) { return "", exportBody(env) }, 201}
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
// key. Routes added later are walked too: those without a matrixCase get the first
// three checks and must not refuse the right key.
func TestAuthorizationMatrix(t *testing.T) {
	dnsAddr, _ := startDNS(t) // verify gets a quick NXDOMAIN, never the network
	env := newMgmtEnv(t, func(cfg *Config) { cfg.DNSServer = dnsAddr })
	_, noScopeKey := env.member(t, "noscope@example.com", levelOwner, "unrelated_object:read")
	_, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	cases := matrixCases(env)
	notAuthenticated := `{"type":"authentication_error","code":"not_authenticated","detail":"Authentication credentials were not provided.","attr":null}`
	covered := 0
	for _, r := range env.api.routes {
		name := r.method + " " + r.path
		t.Run(name, func(t *testing.T) {
			tc, known := cases[name]
			if known {
				covered++
			} else {
				tc = matrixCase{setup: noFixture}
			}
			path := func(id string) string {
				p := strings.ReplaceAll(r.path, ":organization_id", env.org.String())
				p = strings.ReplaceAll(p, ":project_id", strconv.FormatInt(env.boot.ProjectID, 10))
				if id == "" {
					id = uuid.NewString() // a route of another resource: any id will do
				}
				p = strings.ReplaceAll(p, ":id", id)
				p = strings.ReplaceAll(p, ":user__uuid", id)
				return routeParam.ReplaceAllString(p, id) // any other parameter
			}

			id, body := tc.setup(t, env)
			if status, _, text := env.call(t, r.method, path(id), "", body); status != 401 || text != notAuthenticated {
				t.Fatalf("no key: %d %s", status, text)
			}
			want403 := fmt.Sprintf(`{"type":"authentication_error","code":"permission_denied","detail":"API key missing required scope '%s'","attr":null}`, r.scope)
			if status, _, text := env.call(t, r.method, path(id), noScopeKey, body); status != 403 || text != want403 {
				t.Fatalf("key without %s: %d %s", r.scope, status, text)
			}
			if strings.Contains(r.path, ":") {
				if status, _, text := env.call(t, r.method, path(id), outsiderKey, body); status != 404 {
					t.Fatalf("key of another organization: %d %s", status, text)
				}
			}

			id, body = tc.setup(t, env)
			status, _, text := env.call(t, r.method, path(id), env.owner, body)
			switch {
			case known && status != tc.status:
				t.Fatalf("right key: %d, want %d: %s", status, tc.status, text)
			case status == 401 || status == 403:
				t.Fatalf("right key refused: %d %s", status, text)
			case status == 404 && (strings.Contains(text, "Organization not found.") || strings.Contains(text, "Project not found.")):
				t.Fatalf("right key treated as another tenant: %s", text)
			}
		})
	}
	if covered != len(cases) {
		t.Errorf("%d of %d matrix cases match a route: a case names a route that is not registered", covered, len(cases))
	}
}
