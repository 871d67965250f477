package admin

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestOrganizations(t *testing.T) {
	env := newMgmtEnv(t, nil)
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
func readKeyWith(t *testing.T, env *mgmtEnv, scopes ...string) string {
	t.Helper()
	_, key := env.member(t, "writer-org@example.com", levelMember, scopes...)
	return key
}

func TestUserMe(t *testing.T) {
	env := newMgmtEnv(t, nil)
	second := env.must(t, 201, "POST", "/api/organizations/", env.owner, `{"name":"Second"}`)["id"].(string)
	_, scopedKey := env.addUserScoped(t, "scoped@example.com", env.org, env.org)
	env.run(t, []scenario{
		{name: "the key's user and organizations", method: "GET", path: "/api/users/@me/", key: env.owner, status: 200,
			want: []string{`"email":"owner@example.com"`, `"uuid":"`, `"distinct_id":"`, `"date_joined":"`,
				`"organization":{"id":"{org}","name":"Default organization","membership_level":15}`,
				`"id":"` + second + `","name":"Second","membership_level":15}`, `"team":{"id":1,`}},
		{name: "a scoped key sees only its organizations", method: "GET", path: "/api/users/@me/", key: scopedKey, status: 200,
			want: []string{`"organizations":[{"id":"{org}"`}, notWant: []string{second}},
		{name: "needs user:read", method: "GET", path: "/api/users/@me/", key: readKeyWith(t, env, "project:read"), status: 403,
			want: []string{`API key missing required scope 'user:read'`}},
	})
}
