package admin

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestOrganizations(t *testing.T) {
	env := serveAPI(t, nil)
	otherOrg, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	_, readKey := env.member(t, "reader@example.com", levelMember, "organization:read")
	_, scopedKey := env.addUserScoped(t, "scoped@example.com", env.org, otherOrg)
	env.run(t, []scenario{
		{name: "list", method: "GET", path: "/api/organizations/", key: env.owner, status: 200,
			want:    []string{`"count":1`, `"id":"{org}"`, `"name":"Default organization"`, `"membership_level":15`, `"teams":[{"id":1,`},
			notWant: []string{otherOrg.String()}},
		{name: "list of the outsider has only its own", method: "GET", path: "/api/organizations/", key: outsiderKey, status: 200,
			want: []string{`"count":1`, otherOrg.String()}, notWant: []string{"{org}"}},
		{name: "retrieve", method: "GET", path: "/api/organizations/{org}/", key: readKey, status: 200,
			want: []string{`"id":"{org}"`, `"membership_level":1`, `"created_at":"`, `Z","updated_at"`}},
		{name: "retrieve another tenant's", method: "GET", path: "/api/organizations/" + otherOrg.String() + "/", key: env.owner, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Organization not found.","attr":null}`}},
		{name: "retrieve with a key scoped elsewhere", method: "GET", path: "/api/organizations/{org}/", key: scopedKey, status: 403,
			want: []string{`"detail":"API key does not have access to the requested organization: ID {org}."`}},
		{name: "a key scoped elsewhere lists only that", method: "GET", path: "/api/organizations/", key: scopedKey, status: 200,
			want: []string{`"count":0`}},
		{name: "create needs a name", method: "POST", path: "/api/organizations/", key: env.owner, body: `{}`, status: 400,
			want: []string{`{"type":"validation_error","code":"required","detail":"This field is required.","attr":"name"}`}},
		{name: "create with a blank name", method: "POST", path: "/api/organizations/", key: env.owner, body: `{"name":"  "}`, status: 400,
			want: []string{`"code":"blank"`, `"attr":"name"`}},
		{name: "create with a long name", method: "POST", path: "/api/organizations/", key: env.owner, body: `{"name":"` + strings.Repeat("x", 65) + `"}`,
			status: 400, want: []string{`"code":"max_length"`, `"attr":"name"`}},
		{name: "create with a name of the wrong type", method: "POST", path: "/api/organizations/", key: env.owner, body: `{"name":5}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Not a valid string.","attr":"name"}`}},
		{name: "create needs organization:write", method: "POST", path: "/api/organizations/", key: readKey, body: `{"name":"X"}`,
			status: 403, want: []string{`"detail":"API key missing required scope 'organization:write'"`}},
	})

	writerKey := readKeyWith(t, env, "organization:write", "organization_member:read")
	created := env.must(t, 201, "POST", "/api/organizations/", writerKey, `{"name":"Second","ignored":1}`)
	if created["name"] != "Second" || created["membership_level"] != float64(levelOwner) {
		t.Fatalf("created %v", created)
	}
	teams := created["teams"].([]any)
	if len(teams) != 1 {
		t.Fatalf("a new organization has its default project: %v", teams)
	}
	team := teams[0].(map[string]any)
	if id, ok := env.api.ProjectTokens().Team(team["api_token"].(string)); !ok || float64(id) != team["id"] {
		t.Fatalf("the new project's token is not accepted for capture: %v", team)
	}
	// The creator is the new organization's owner: its members list says so.
	members := env.must(t, 200, "GET", "/api/organizations/"+created["id"].(string)+"/members/", writerKey, "")
	if members["count"] != float64(1) || !strings.Contains(mustText(t, members), `"email":"writer-org@example.com"`) {
		t.Fatalf("members of the new organization: %v", members)
	}
}

// readKeyWith makes a member of the bootstrap organization with a key of scopes,
// e-mail writer-org@example.com.
func readKeyWith(t *testing.T, env *testEnv, scopes ...string) string {
	t.Helper()
	_, key := env.member(t, "writer-org@example.com", levelMember, scopes...)
	return key
}

func TestUserMe(t *testing.T) {
	env := serveAPI(t, nil)
	second := env.must(t, 201, "POST", "/api/organizations/", env.owner, `{"name":"Second"}`)["id"].(string)
	_, scopedKey := env.addUserScoped(t, "scoped@example.com", env.org, env.org)
	// The scoped key's user belongs to both organizations, so that only the key's
	// scoping keeps the second one out of its answer.
	env.exec(t, `INSERT INTO meta.memberships (id, organization_id, user_id, level, joined_at, updated_at)
		SELECT uuid(), ?::UUID, id, 1, now(), now() FROM meta.users WHERE email = 'scoped@example.com'`, second)
	var scopedUser int64
	if err := env.warehouse.DB().QueryRow(`SELECT id FROM meta.users WHERE email = 'scoped@example.com'`).Scan(&scopedUser); err != nil {
		t.Fatal(err)
	}
	unscoped, err := insertPersonalAPIKey(context.Background(), env.warehouse.DB(), scopedUser, "all", []string{"user:read"})
	if err != nil {
		t.Fatal(err)
	}
	projectKey := env.must(t, 201, "POST", "/api/personal_api_keys/", env.owner, `{"label":"one project","scopes":["user:read"],"scoped_teams":[1]}`)["value"].(string)
	env.run(t, []scenario{
		{name: "the same user's unscoped key sees both", method: "GET", path: "/api/users/@me/", key: unscoped, status: 200,
			want: []string{`"email":"scoped@example.com"`, `"id":"{org}"`, `"id":"` + second + `"`}},
		{name: "the key's user and organizations", method: "GET", path: "/api/users/@me/", key: env.owner, status: 200,
			want: []string{`"email":"owner@example.com"`, `"uuid":"`, `"distinct_id":"`, `"date_joined":"`,
				`"organization":{"id":"{org}","name":"Default organization","membership_level":15}`,
				`"id":"` + second + `","name":"Second","membership_level":15}`, `"team":{"id":1,`}},
		{name: "a scoped key sees only its organizations", method: "GET", path: "/api/users/@me/", key: scopedKey, status: 200,
			want: []string{`"email":"scoped@example.com"`, `"organizations":[{"id":"{org}"`}, notWant: []string{second}},
		// PostHog exempts the user's own record from the rule that keys scoped to some
		// projects use only project-based endpoints.
		{name: "a key scoped to a project reads its user", method: "GET", path: "/api/users/@me/", key: projectKey, status: 200,
			want: []string{`"email":"owner@example.com"`, `"team":{"id":1,`}},
		{name: "needs user:read", method: "GET", path: "/api/users/@me/", key: readKeyWith(t, env, "project:read"), status: 403,
			want: []string{`API key missing required scope 'user:read'`}},
	})
}

// A key scoped to some projects uses only endpoints about one project: every route
// under /api/organizations/ but a project of it answers PostHog's 403 before doing
// anything, whatever the method.
func TestProjectScopedKeyOnOrganizationRoutes(t *testing.T) {
	env := serveAPI(t, nil)
	key := env.must(t, 201, "POST", "/api/personal_api_keys/", env.owner,
		`{"label":"one project","scopes":["*"],"scoped_teams":[1]}`)["value"].(string)
	paths := strings.NewReplacer(":organization_id", env.org.String(), ":user__uuid", env.userUUID(t, "owner@example.com"),
		":run_id", uuid.NewString(), ":id", uuid.NewString())
	denied := []string{`{"type":"authentication_error","code":"permission_denied","detail":"API keys with scoped projects are only supported on project-based endpoints.","attr":null}`}
	var scenarios []scenario
	for _, r := range env.api.routes {
		if !strings.HasPrefix(r.path, "/api/organizations/") || r.path == "/api/organizations/:organization_id/projects/:id/" {
			continue
		}
		scenarios = append(scenarios, scenario{name: r.method + " " + r.path, method: r.method, path: paths.Replace(r.path),
			key: key, body: `{"name":"x","target_email":"x@example.com","domain":"x.example.com"}`, status: 403, want: denied})
	}
	if len(scenarios) < 19 {
		t.Fatalf("only %d organization routes", len(scenarios))
	}
	env.run(t, append(scenarios,
		scenario{name: "its project", method: "GET", path: "/api/organizations/{org}/projects/1/", key: key, status: 200,
			want: []string{`"id":1,`}},
		scenario{name: "its project's dashboards", method: "GET", path: "/api/projects/1/dashboards/", key: key, status: 200},
		scenario{name: "nothing was created", method: "GET", path: "/api/organizations/", key: env.owner, status: 200,
			want: []string{`"count":1`}},
		scenario{name: "nor invited", method: "GET", path: "/api/organizations/{org}/invites/", key: env.owner, status: 200,
			want: []string{`"count":0`}},
	))
}
