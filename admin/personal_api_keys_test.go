package admin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestPersonalAPIKeys(t *testing.T) {
	env := serveAPI(t, nil)
	otherOrg, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	_, limitedKey := env.member(t, "limited@example.com", levelAdmin, "personal_api_key:write", "project:read")
	_, scopedKey := env.addUserScoped(t, "scoped@example.com", env.org, env.org)

	created := env.must(t, 201, "POST", "/api/personal_api_keys/", env.owner,
		`{"label":"ci","scopes":["project:read","organization_member:write"],"scoped_organizations":["`+env.org.String()+`"]}`)
	value, _ := created["value"].(string)
	if !regexp.MustCompile(`^phx_[0-9A-Za-z]{47,48}$`).MatchString(value) {
		t.Fatalf("the create answer carries the key: %v", created)
	}
	if created["mask_value"] != value[:4]+"..."+value[len(value)-4:] || created["user_id"] != float64(1) {
		t.Fatalf("created %v", created)
	}
	id := created["id"].(string)
	// The new key works, with its scopes and no more.
	env.must(t, 200, "GET", env.orgPath("projects/"), value, "")
	env.must(t, 200, "GET", env.orgPath("members/"), value, "")
	env.must(t, 403, "GET", env.orgPath("domains/"), value, "")

	env.run(t, []scenario{
		{name: "list shows masks, never keys", method: "GET", path: "/api/personal_api_keys/", key: env.owner, status: 200,
			want: []string{`"id":"` + id + `","label":"ci","value":null,"mask_value":"` + created["mask_value"].(string) + `"`,
				`"scopes":["project:read","organization_member:write"]`, `"scoped_organizations":["{org}"]`, `"scoped_teams":[]`,
				`"label":"bootstrap"`},
			notWant: []string{value, env.owner}},
		{name: "retrieve", method: "GET", path: "/api/personal_api_keys/" + id + "/", key: env.owner, status: 200,
			want: []string{`"id":"` + id + `"`, `"value":null`}},
		{name: "retrieve the request's own key", method: "GET", path: "/api/personal_api_keys/@current/", key: value, status: 403,
			want: []string{`API key missing required scope 'personal_api_key:read'`}},
		{name: "@current", method: "GET", path: "/api/personal_api_keys/@current/", key: env.owner, status: 200,
			want: []string{`"label":"bootstrap"`}},
		{name: "another user's key is not found", method: "GET", path: "/api/personal_api_keys/" + id + "/", key: outsiderKey, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}},
		{name: "another user's key cannot be deleted", method: "DELETE", path: "/api/personal_api_keys/" + id + "/", key: outsiderKey, status: 404},
		{name: "an id that is not a uuid", method: "GET", path: "/api/personal_api_keys/42/", key: env.owner, status: 404},

		{name: "label required", method: "POST", path: "/api/personal_api_keys/", key: env.owner, body: `{"scopes":["*"]}`, status: 400,
			want: []string{`{"type":"validation_error","code":"required","detail":"This field is required.","attr":"label"}`}},
		{name: "label at most 40", method: "POST", path: "/api/personal_api_keys/", key: env.owner,
			body: `{"label":"` + strings.Repeat("l", 41) + `","scopes":["*"]}`, status: 400, want: []string{`"code":"max_length"`, `"attr":"label"`}},
		{name: "scopes required", method: "POST", path: "/api/personal_api_keys/", key: env.owner, body: `{"label":"x"}`, status: 400,
			want: []string{`"code":"required"`, `"attr":"scopes"`}},
		{name: "scopes not empty", method: "POST", path: "/api/personal_api_keys/", key: env.owner, body: `{"label":"x","scopes":[]}`, status: 400,
			want: []string{`"code":"empty"`, `"attr":"scopes"`}},
		{name: "scopes of the wrong type", method: "POST", path: "/api/personal_api_keys/", key: env.owner, body: `{"label":"x","scopes":"*"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"not_a_list","detail":"Expected a list of items but got type \"str\".","attr":"scopes"}`}},
		{name: "an invalid scope", method: "POST", path: "/api/personal_api_keys/", key: env.owner, body: `{"label":"x","scopes":["project:delete"]}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Invalid scope: project:delete","attr":"scopes"}`}},
		{name: "an organization the user is not in", method: "POST", path: "/api/personal_api_keys/", key: env.owner,
			body: `{"label":"x","scopes":["*"],"scoped_organizations":["` + otherOrg.String() + `"]}`, status: 400,
			want: []string{`"detail":"You must be a member of all organizations that you are scoping the key to."`, `"attr":"scoped_organizations"`}},
		{name: "an organization id that is not a uuid", method: "POST", path: "/api/personal_api_keys/", key: env.owner,
			body: `{"label":"x","scopes":["*"],"scoped_organizations":["nope"]}`, status: 400, want: []string{`"detail":"Invalid organization UUID"`}},
		{name: "a project the user cannot reach", method: "POST", path: "/api/personal_api_keys/", key: env.owner,
			body: `{"label":"x","scopes":["*"],"scoped_teams":[999]}`, status: 400,
			want: []string{`"detail":"You must be a member of all teams that you are scoping the key to."`, `"attr":"scoped_teams"`}},

		// A key never grants more than the key that makes it.
		{name: "no scope the creating key lacks", method: "POST", path: "/api/personal_api_keys/", key: limitedKey,
			body: `{"label":"x","scopes":["project:write"]}`, status: 403,
			want: []string{`{"type":"authentication_error","code":"permission_denied","detail":"This API key cannot grant scope 'project:write', which it does not have.","attr":null}`}},
		{name: "no * from a key without *", method: "POST", path: "/api/personal_api_keys/", key: limitedKey,
			body: `{"label":"x","scopes":["*"]}`, status: 403, want: []string{`cannot grant scope '*'`}},
		{name: "read from write", method: "POST", path: "/api/personal_api_keys/", key: limitedKey,
			body: `{"label":"x","scopes":["project:read","personal_api_key:read"]}`, status: 201, want: []string{`"value":"phx_`}},
		{name: "no organization outside the creating key's", method: "POST", path: "/api/personal_api_keys/", key: scopedKey,
			body: `{"label":"x","scopes":["project:read"],"scoped_organizations":["` + uuid.NewString() + `"]}`, status: 403,
			want: []string{`This API key does not have access to the requested organization`}},
		{name: "a scoped key's keys inherit its scoping", method: "POST", path: "/api/personal_api_keys/", key: scopedKey,
			body: `{"label":"x","scopes":["project:read"]}`, status: 201, want: []string{`"scoped_organizations":["{org}"]`}},
	})

	// Ten keys at most.
	for i := 2; i < maxPersonalAPIKeys; i++ { // the bootstrap key and "ci" exist
		env.must(t, 201, "POST", "/api/personal_api_keys/", env.owner, fmt.Sprintf(`{"label":"k%d","scopes":["project:read"]}`, i))
	}
	env.run(t, []scenario{{name: "an eleventh key", method: "POST", path: "/api/personal_api_keys/", key: env.owner,
		body: `{"label":"x","scopes":["*"]}`, status: 400,
		want: []string{`{"type":"validation_error","code":"invalid_input","detail":"You can only have 10 personal API keys. Remove an existing key before creating a new one.","attr":null}`}}})

	// Deleting revokes.
	env.must(t, 204, "DELETE", "/api/personal_api_keys/"+id+"/", env.owner, "")
	env.must(t, 401, "GET", env.orgPath("projects/"), value, "")
	env.must(t, 404, "DELETE", "/api/personal_api_keys/"+id+"/", env.owner, "")
	list := env.must(t, 200, "GET", "/api/organizations/"+env.org.String()+"/", env.owner, "")
	if list["id"] != env.org.String() {
		t.Fatal("the other keys still work")
	}
}

func TestPersonalAPIKeyScopedTeams(t *testing.T) {
	env := serveAPI(t, nil)
	second := env.must(t, 201, "POST", env.orgPath("projects/"), env.owner, `{"name":"Second"}`)["id"].(float64)
	created := env.must(t, 201, "POST", "/api/personal_api_keys/", env.owner,
		`{"label":"one project","scopes":["*"],"scoped_teams":[`+strconv.Itoa(int(second))+`]}`)
	key := created["value"].(string)
	env.run(t, []scenario{
		{name: "lists no projects: not a project-based endpoint", method: "GET", path: "/api/organizations/{org}/projects/", key: key, status: 403,
			want: []string{`"detail":"API keys with scoped projects are only supported on project-based endpoints."`}},
		{name: "another project of the organization", method: "GET", path: "/api/organizations/{org}/projects/1/", key: key, status: 403,
			want: []string{`"detail":"API key does not have access to the requested project: ID 1."`}},
		{name: "its project", method: "GET", path: fmt.Sprintf("/api/organizations/{org}/projects/%d/", int(second)), key: key, status: 200},
		{name: "organization-wide endpoints", method: "GET", path: "/api/organizations/{org}/members/", key: key, status: 403,
			want: []string{`"detail":"API keys with scoped projects are only supported on project-based endpoints."`}},
		{name: "its keys stay scoped to its project", method: "POST", path: "/api/personal_api_keys/", key: key,
			body: `{"label":"x","scopes":["project:read"],"scoped_teams":[1]}`, status: 403,
			want: []string{`"detail":"This API key does not have access to the requested project: ID 1."`}},
	})
}

// A key's last_used_at is set when it authenticates a request, and rewritten only once
// the stored time is an hour old (PostHog's rule), so a busy key costs a write an hour.
// Each step uses the key once and says whether the stored time moved; ageing the
// stored time stands in for waiting.
func TestPersonalAPIKeyLastUsed(t *testing.T) {
	env := serveAPI(t, nil)
	created := env.must(t, 201, "POST", "/api/personal_api_keys/", env.owner, `{"label":"script","scopes":["project:read"]}`)
	key, path := created["value"].(string), "/api/personal_api_keys/"+created["id"].(string)+"/"
	lastUsed := func() string {
		t.Helper()
		v, _ := env.must(t, 200, "GET", path, env.owner, "")["last_used_at"].(string)
		return v
	}
	if got := lastUsed(); got != "" || created["last_used_at"] != nil {
		t.Fatalf("a key never used says last_used_at %q", got)
	}
	before := lastUsed()
	for _, step := range []struct {
		name    string
		age     string // the stored time is set this far back first ("" leaves it)
		written bool
	}{
		{"the first use sets it", "", true},
		{"a use a moment later leaves it", "", false},
		{"a use 59 minutes later leaves it", "59 minutes", false},
		{"a use an hour later writes it", "61 minutes", true},
		{"and the next use leaves it again", "", false},
	} {
		if step.age != "" {
			env.exec(t, `UPDATE meta.personal_api_keys SET last_used_at = now() - ?::INTERVAL WHERE id = ?::UUID`, step.age, created["id"])
			before = lastUsed()
		}
		start := time.Now()
		env.must(t, 200, "GET", env.orgPath("projects/"), key, "")
		after := lastUsed()
		if written := after != before; written != step.written {
			t.Fatalf("%s: last_used_at went from %q to %q", step.name, before, after)
		}
		if at, err := time.Parse(time.RFC3339Nano, after); err != nil || (step.written && at.Before(start.Add(-time.Second))) {
			t.Fatalf("%s: last_used_at is %q, want the time of the use (%s)", step.name, after, start)
		}
		before = after
	}
}
