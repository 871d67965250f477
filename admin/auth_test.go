package admin

import (
	"regexp"
	"testing"

	"github.com/google/uuid"
)

func TestAuthentication(t *testing.T) {
	env := newTestEnv(t, "")
	key := env.boot.PersonalAPIKey
	projects := "/api/organizations/{org}/projects/"
	notAuthenticated := `{"type":"authentication_error","code":"not_authenticated","detail":"Authentication credentials were not provided.","attr":null}`
	env.run(t, []scenario{
		{name: "no key", method: "GET", path: projects, status: 401, want: []string{notAuthenticated}},
		{name: "empty bearer", method: "GET", path: projects, headers: map[string]string{"Authorization": "Bearer "},
			status: 401, want: []string{notAuthenticated}},
		{name: "wrong key in header", method: "GET", path: projects, key: "phx_wrong", status: 401,
			want: []string{`{"type":"authentication_error","code":"authentication_failed","detail":"Personal API key found in request Authorization header is invalid.","attr":null}`}},
		{name: "key in header", method: "GET", path: projects, key: key, status: 200, want: []string{`"count":1`}},
		{name: "key in body", method: "GET", path: projects, body: `{"personal_api_key":"` + key + `"}`, status: 200,
			want: []string{`"count":1`}},
		{name: "wrong key in body", method: "GET", path: projects, body: `{"personal_api_key":"phx_wrong"}`, status: 401,
			want: []string{`"detail":"Personal API key found in request body is invalid."`}},
		{name: "key in query string", method: "GET", path: projects + "?personal_api_key=" + key, status: 200,
			want: []string{`"count":1`}},
		{name: "wrong key in query string", method: "GET", path: projects + "?personal_api_key=phx_wrong", status: 401,
			want: []string{`"detail":"Personal API key found in request query string is invalid."`}},
		// Only the first place that has a key counts, as in PostHog.
		{name: "wrong header wins over right query", method: "GET", path: projects + "?personal_api_key=" + key,
			key: "phx_wrong", status: 401, want: []string{"Authorization header is invalid"}},
	})

	status, _, header := env.do(t, "GET", projects, "", nil, "")
	if status != 401 || header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("401 without WWW-Authenticate: Bearer (status %d, header %q)", status, header.Get("WWW-Authenticate"))
	}
}

func TestScopesAndTenancy(t *testing.T) {
	env := newTestEnv(t, "")
	org := uuid.MustParse(env.boot.OrganizationID)
	projects := "/api/organizations/{org}/projects/"
	_, readKey := env.addUser(t, "reader@example.com", org, levelMember, "project:read")
	_, writeKey := env.addUser(t, "writer@example.com", org, levelMember, "project:write")
	_, otherScopeKey := env.addUser(t, "dash@example.com", org, levelMember, "dashboard:read", "dashboard:write")
	otherOrg, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	_, scopedAwayKey := env.addUserScoped(t, "scoped@example.com", org, otherOrg)

	env.run(t, []scenario{
		{name: "read scope", method: "GET", path: projects, key: readKey, status: 200, want: []string{`"count":1`}},
		{name: "write implies read", method: "GET", path: projects, key: writeKey, status: 200, want: []string{`"count":1`}},
		{name: "missing scope", method: "GET", path: projects, key: otherScopeKey, status: 403,
			want: []string{`{"type":"authentication_error","code":"permission_denied","detail":"API key missing required scope 'project:read'","attr":null}`}},
		{name: "other organization", method: "GET", path: projects, key: outsiderKey, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Organization not found.","attr":null}`}},
		{name: "own organization of the outsider", method: "GET", path: "/api/organizations/" + otherOrg.String() + "/projects/",
			key: outsiderKey, status: 200, want: []string{`"count":0`}},
		{name: "organization that does not exist", method: "GET", path: "/api/organizations/" + uuid.NewString() + "/projects/",
			key: env.boot.PersonalAPIKey, status: 404, want: []string{`"detail":"Organization not found."`}},
		{name: "organization id not a uuid", method: "GET", path: "/api/organizations/42/projects/",
			key: env.boot.PersonalAPIKey, status: 404, want: []string{`"detail":"Organization not found."`}},
		{name: "key scoped to another organization", method: "GET", path: projects, key: scopedAwayKey, status: 403,
			want: []string{`"detail":"API key does not have access to the requested organization: ID ` + org.String() + `."`}},
	})
}

// addUserScoped makes a member of organization whose key is scoped to scopedTo only.
func (env *testEnv) addUserScoped(t *testing.T, email string, organization, scopedTo uuid.UUID) (uuid.UUID, string) {
	t.Helper()
	_, key := env.addUser(t, email, organization, levelMember, "*")
	if _, err := env.warehouse.DB().Exec(`UPDATE meta.personal_api_keys SET scoped_organizations = ? WHERE secure_value = ?`,
		`["`+scopedTo.String()+`"]`, hashKey(key)); err != nil {
		t.Fatal(err)
	}
	return organization, key
}

func TestKeyShapes(t *testing.T) {
	personal := regexp.MustCompile(`^phx_[0-9A-Za-z]{47,48}$`)
	project := regexp.MustCompile(`^phc_[0-9A-Za-z]{43}$`)
	seen := map[string]bool{}
	for range 2000 {
		k, p := newPersonalAPIKey(), newProjectToken()
		if !personal.MatchString(k) || !project.MatchString(p) {
			t.Fatalf("bad shapes: %q %q", k, p)
		}
		if seen[k] || seen[p] {
			t.Fatal("a random key repeated")
		}
		seen[k], seen[p] = true, true
	}
	// The stored form is sha256 of the whole key (vector from sha256sum).
	if got, want := hashKey("phx_abc"), "sha256$5e26f9f4aa7f98042e671fbaa15196a12513a2635898590230de0c25e658279e"; got != want {
		t.Fatalf("hashKey = %q, want %q", got, want)
	}
}
