package admin

import (
	"regexp"
	"testing"

	"github.com/google/uuid"
)

func TestSignup(t *testing.T) {
	env := serveAPI(t, nil)
	invite := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"Ada@Example.com","level":8,"first_name":"Ada"}`)
	id := invite["id"].(string)
	signup := "/api/signup/" + id + "/"
	// A second invite to the same e-mail from another organization stays.
	otherOrg, otherKey := env.addUser(t, "other-owner@example.com", uuid.Nil, levelOwner, "*")
	env.must(t, 201, "POST", "/api/organizations/"+otherOrg.String()+"/invites/", otherKey, `{"target_email":"ada@example.com"}`)

	env.run(t, []scenario{
		{name: "an unknown invite", method: "POST", path: "/api/signup/" + uuid.NewString() + "/", body: `{"first_name":"Ada"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"The provided invite ID is not valid.","attr":null}`}},
		{name: "not an invite id", method: "POST", path: "/api/signup/nope/", body: `{"first_name":"Ada"}`, status: 400},
		{name: "first_name of the wrong type", method: "POST", path: signup, body: `{"first_name":1}`, status: 400,
			want: []string{`"attr":"first_name"`}},
		{name: "a blank first_name", method: "POST", path: signup, body: `{"first_name":" "}`, status: 400,
			want: []string{`"code":"required"`, `"attr":"first_name"`}},
	})

	status, answer, text := env.call(t, "POST", signup, "", `{"first_name":"Augusta","last_name":"King"}`)
	if status != 201 {
		t.Fatalf("signup: %d %s", status, text)
	}
	key, _ := answer["personal_api_key"].(string)
	if !regexp.MustCompile(`^phx_[0-9A-Za-z]{47,48}$`).MatchString(key) || answer["email"] != "ada@example.com" ||
		answer["first_name"] != "Augusta" || answer["last_name"] != "King" {
		t.Fatalf("signup answer %s", text)
	}
	if org := answer["organization"].(map[string]any); org["id"] != env.org.String() || org["membership_level"] != float64(levelAdmin) {
		t.Fatalf("joined %v", org)
	}
	env.run(t, []scenario{
		{name: "the new key works", method: "GET", path: "/api/organizations/{org}/members/?email=ada@example.com", key: key, status: 200,
			want: []string{`"count":1`, `"level":8`, `"first_name":"Augusta"`}},
		{name: "the new key has scope * and no restriction", method: "GET", path: "/api/personal_api_keys/", key: key, status: 200,
			want:    []string{`"label":"signup"`, `"value":null`, `"scopes":["*"],"scoped_teams":[],"scoped_organizations":[]}]`},
			notWant: []string{`},{`}},
		{name: "the invite is consumed", method: "GET", path: "/api/organizations/{org}/invites/", key: key, status: 200,
			want: []string{`"count":0`}},
		{name: "a used invite", method: "POST", path: signup, body: `{"first_name":"Ada"}`, status: 400,
			want: []string{`"detail":"The provided invite ID is not valid."`}},
		{name: "the other organization's invite stays", method: "GET", path: "/api/organizations/" + otherOrg.String() + "/invites/", key: otherKey,
			status: 200, want: []string{`"count":1`}},
	})

	// An invite to an existing user: accepted with that user's key, not by anyone.
	second, _ := env.must(t, 201, "POST", "/api/organizations/"+otherOrg.String()+"/invites/", otherKey, `{"target_email":"ada@example.com"}`)["id"].(string)
	_, strangerKey := env.member(t, "stranger@example.com", levelMember, "*")
	adaKey := func(body string) string {
		t.Helper()
		return env.must(t, 201, "POST", "/api/personal_api_keys/", key, body)["value"].(string)
	}
	readOnly := adaKey(`{"label":"read","scopes":["organization:read","organization_member:read"]}`)
	scopedHere := adaKey(`{"label":"here","scopes":["*"],"scoped_organizations":["` + env.org.String() + `"]}`)
	oneProject := adaKey(`{"label":"one project","scopes":["*"],"scoped_teams":[1]}`)
	env.run(t, []scenario{
		{name: "not with a key without organization_member:write", method: "POST", path: "/api/signup/" + second + "/", key: readOnly, status: 403,
			want: []string{`{"type":"authentication_error","code":"permission_denied","detail":"API key missing required scope 'organization_member:write'","attr":null}`}},
		{name: "not with a key scoped to other organizations", method: "POST", path: "/api/signup/" + second + "/", key: scopedHere, status: 403,
			want: []string{`"detail":"API key does not have access to the requested organization: ID ` + otherOrg.String() + `."`}},
		{name: "not with a key scoped to some projects", method: "POST", path: "/api/signup/" + second + "/", key: oneProject, status: 403,
			want: []string{`"detail":"API keys with scoped projects are only supported on project-based endpoints."`}},
		{name: "the refused attempts left the invite", method: "GET", path: "/api/organizations/" + otherOrg.String() + "/invites/", key: otherKey,
			status: 200, want: []string{`"count":1`, `"id":"` + second + `"`}},
		{name: "an existing user cannot be signed up without a key", method: "POST", path: "/api/signup/" + second + "/", body: `{"first_name":"Ada"}`,
			status: 400, want: []string{`"code":"user_already_exists"`}},
		{name: "nor with another user's key", method: "POST", path: "/api/signup/" + second + "/", key: strangerKey, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_recipient","detail":"This invite is intended for another email address.","attr":null}`}},
		{name: "nor with a key that is not valid", method: "POST", path: "/api/signup/" + second + "/", key: "phx_wrong", status: 401},
		{name: "the invited user accepts with their key", method: "POST", path: "/api/signup/" + second + "/", key: key, status: 200,
			want: []string{`"email":"ada@example.com"`, `"organization":{"id":"` + otherOrg.String() + `"`, `"personal_api_key":null`}},
		{name: "and is a member there", method: "GET", path: "/api/organizations/" + otherOrg.String() + "/", key: key, status: 200,
			want: []string{`"membership_level":1`}},
	})

	// Expired invites cannot be accepted.
	expired := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"late@example.com"}`)["id"].(string)
	env.exec(t, `UPDATE meta.invites SET created_at = now() - INTERVAL 3 DAY - INTERVAL 1 MINUTE WHERE id = ?`, expired)
	env.run(t, []scenario{{name: "an expired invite", method: "POST", path: "/api/signup/" + expired + "/", body: `{"first_name":"Late"}`,
		status: 400, want: []string{`{"type":"validation_error","code":"expired","detail":"This invite has expired. Please ask your admin for a new one.","attr":null}`}}})

	// Without first_name, the invite's is used.
	named := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"named@example.com","first_name":"Named"}`)["id"].(string)
	env.run(t, []scenario{{name: "the invite's first_name", method: "POST", path: "/api/signup/" + named + "/", status: 201,
		want: []string{`"first_name":"Named"`, `"membership_level":1`}}})
}
