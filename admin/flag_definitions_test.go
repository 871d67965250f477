package admin

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

// definitionsProject fills the bootstrap project with a cohort, a remote
// configuration flag on it, an inactive flag that depends on it, and a deleted flag.
func definitionsProject(t *testing.T, env *testEnv) {
	t.Helper()
	env.cohort(t, `{"name":"People","filters":{"properties":{"type":"OR","values":[{"type":"AND","values":[{"key":"email","type":"person","operator":"icontains","value":"@x.com"}]}]}}}`)
	env.cohort(t, `{"name":"Listed","is_static":true}`)
	env.flag(t, `{"key":"a-base","name":"Base","evaluation_tags":["web"],"tags":["web"],"is_remote_configuration":true,
		"filters":{"groups":[{"properties":[{"key":"id","type":"cohort","value":1}],"rollout_percentage":50}],"payloads":{"true":{"x":1}}}}`)
	env.flag(t, `{"key":"b-dep","filters":{"groups":[{"properties":[{"key":"1","type":"flag","operator":"flag_evaluates_to","value":true}]}]}}`)
	env.must(t, 200, "PATCH", env.flagPath(2), env.owner, `{"active":false}`)
	env.flag(t, `{"key":"c-gone","filters":{"groups":[{"properties":[{"key":"id","type":"cohort","value":2}]}]}}`)
	env.must(t, 200, "PATCH", env.flagPath(3), env.owner, `{"deleted":true}`)
}

// The definitions of a small project to the byte: the inactive flag in, the deleted
// one out, the dependency by key with its chain, the dynamic cohort only; then
// ETags and 304s, and a new ETag after an edit and after a new group type.
func TestFlagDefinitions(t *testing.T) {
	env := newTestEnv(t, "")
	definitionsProject(t, env)
	path := "/flags/definitions?token=" + env.boot.ProjectAPIKey + "&send_cohorts"
	flag := func(id int, key, name string, active bool, version int, contexts, filters string) string {
		return fmt.Sprintf(`{"id":%d,"team_id":%d,"name":%q,"key":%q,"active":%t,"deleted":false,"ensure_experience_continuity":false,`+
			`"has_encrypted_payloads":false,"version":%d,"evaluation_runtime":"all","bucketing_identifier":"distinct_id",`+
			`"evaluation_contexts":%s,"has_experiment":false,"filters":%s}`, id, env.boot.ProjectID, name, key, active, version, contexts, filters)
	}
	want := `{"flags":[` +
		flag(1, "a-base", "Base", true, 1, `["web"]`, `{"groups":[{"properties":[{"key":"id","type":"cohort","value":1}],"rollout_percentage":50,"variant":null}],`+
			`"multivariate":null,"payloads":{"true":"{\"x\": 1}"},"aggregation_group_type_index":null}`) + `,` +
		flag(2, "b-dep", "", false, 2, `[]`, `{"groups":[{"properties":[{"key":"a-base","type":"flag","operator":"flag_evaluates_to","value":true,`+
			`"dependency_chain":["a-base"]}],"rollout_percentage":null,"variant":null}],"multivariate":null,"payloads":{},"aggregation_group_type_index":null}`) +
		`],"group_type_mapping":{},"cohorts":{"1":{"type":"OR","values":[{"type":"AND","values":[{"key":"email","type":"person","operator":"icontains","value":"@x.com"}]}]}},` +
		`"minimal_flag_called_events":false,"property_matching_version":1}`

	status, body, headers := env.do(t, "GET", path, env.owner, nil, "")
	etag := headers.Get("ETag")
	if status != 200 || body != want || len(etag) != 36 || etag[:3] != `W/"` || headers.Get("Cache-Control") != "private, must-revalidate" ||
		headers.Get("Content-Type") != "application/json" {
		t.Fatalf("definitions: %d %v\n%s\nwant\n%s", status, headers, body, want)
	}
	env.run(t, []scenario{
		{name: "the older path", method: "GET", path: "/api/feature_flag/local_evaluation?token=" + env.boot.ProjectAPIKey, key: env.owner, status: 200, want: []string{want}},
		{name: "with a slash", method: "GET", path: "/flags/definitions/?send_cohorts=true&token=" + env.boot.ProjectAPIKey, key: env.owner, status: 200, want: []string{want}},
		{name: "not modified", method: "GET", path: path, key: env.owner, headers: map[string]string{"If-None-Match": etag}, status: 304, notWant: []string{"{"}},
		{name: "not modified, strong", method: "GET", path: path, key: env.owner, headers: map[string]string{"If-None-Match": etag[2:]}, status: 304},
		{name: "another tag", method: "GET", path: path, key: env.owner, headers: map[string]string{"If-None-Match": `W/"other"`}, status: 200, want: []string{want}},
	})
	changed := func(what string) {
		t.Helper()
		status, body, headers := env.do(t, "GET", path, env.owner, map[string]string{"If-None-Match": etag}, "")
		if status != 200 || headers.Get("ETag") == etag || headers.Get("ETag") == "" {
			t.Fatalf("after %s: %d %s %s", what, status, headers.Get("ETag"), body)
		}
		etag = headers.Get("ETag")
	}
	env.must(t, 200, "PATCH", env.flagPath(2), env.owner, `{"name":"Dependent"}`)
	changed("an edit")
	env.must(t, 200, "PATCH", "/api/projects/"+fmt.Sprint(env.boot.ProjectID)+"/cohorts/1/", env.owner,
		`{"filters":{"properties":{"type":"AND","values":[{"key":"plan","type":"person","value":"pro"}]}}}`)
	changed("a cohort's edit")
	env.ingest(t, warehouse.Event{Name: "$groupidentify", DistinctID: "u", Timestamp: second(0), GroupType: "company", GroupKey: "acme"})
	changed("a new group type")
	env.run(t, []scenario{
		{name: "the group type", method: "GET", path: path, key: env.owner, status: 200,
			want: []string{`"group_type_mapping":{"0":"company"}`, `"name":"Dependent"`, `"cohorts":{"1":{"type":"AND","values":[{"key":"plan"`}},
	})
}

// Who may download definitions and remote configuration: the three SDK paths, with
// every kind of key.
func TestFlagDefinitionsAuthorization(t *testing.T) {
	env := newTestEnv(t, "")
	definitionsProject(t, env)
	_, readKey := env.member(t, "reader@example.com", levelMember, "feature_flag:read")
	_, writeKey := env.member(t, "writer@example.com", levelMember, "feature_flag:write")
	_, otherScopeKey := env.member(t, "insights@example.com", levelMember, "insight:read")
	_, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	other := env.otherProject(t)
	scopedKey, _, err := insertScopedPersonalAPIKey(t.Context(), env.warehouse.DB(), env.userID(t, "owner@example.com"), "scoped",
		[]string{"feature_flag:read"}, nil, []int64{projectID(t, other)})
	if err != nil {
		t.Fatal(err)
	}
	errorBody := func(typ, code, detail string) []string {
		return []string{fmt.Sprintf(`{"type":%q,"code":%q,"detail":%q,"attr":null}`, typ, code, detail)}
	}
	// A session is no key: the capture listener serves these routes to any origin.
	session, _ := env.signIn(t, env.boot.UserEmail, env.boot.AdminPassword)
	for _, base := range []string{"/flags/definitions?send_cohorts&token=", "/api/feature_flag/local_evaluation?token=",
		"/api/projects/@current/feature_flags/a-base/remote_config?token="} {
		path := base + env.boot.ProjectAPIKey
		env.run(t, []scenario{
			{name: base + " no key", method: "GET", path: path, status: 401,
				want: errorBody("authentication_error", "not_authenticated", "Authentication credentials were not provided.")},
			{name: base + " a session", method: "GET", path: path, headers: withSession(session, ""), status: 401,
				want: errorBody("authentication_error", "not_authenticated", "Authentication credentials were not provided.")},
			{name: base + " a key that is not", method: "GET", path: path, key: "phx_notakey", status: 401,
				want: errorBody("authentication_error", "authentication_failed", "Personal API key found in request Authorization header is invalid.")},
			{name: base + " another scope", method: "GET", path: path, key: otherScopeKey, status: 403,
				want: errorBody("authentication_error", "permission_denied", "API key missing required scope 'feature_flag:read'")},
			{name: base + " read", method: "GET", path: path, key: readKey, status: 200},
			{name: base + " write implies read", method: "GET", path: path, key: writeKey, status: 200},
			{name: base + " the key in the query", method: "GET", path: path + "&personal_api_key=" + readKey, status: 200},
			{name: base + " no token", method: "GET", path: base, key: readKey, status: 401,
				want: errorBody("authentication_error", "not_authenticated", "No API token provided. Please include a valid API token in your request.")},
			{name: base + " unknown token", method: "GET", path: base + "phc_unknown", key: readKey, status: 401,
				want: errorBody("authentication_error", "authentication_failed", "The provided API key is invalid or has expired. Please check your API key and try again.")},
			{name: base + " another organization's key", method: "GET", path: path, key: outsiderKey, status: 403,
				want: errorBody("authentication_error", "permission_denied", "You don't have access to the project.")},
			{name: base + " a key scoped to another project", method: "GET", path: path, key: scopedKey, status: 403,
				want: errorBody("authentication_error", "permission_denied", fmt.Sprintf("API key does not have access to the requested project: ID %d.", env.boot.ProjectID))},
		})
	}
	if status, _, headers := env.do(t, "GET", "/flags/definitions?token="+env.boot.ProjectAPIKey, "", nil, ""); status != http.StatusUnauthorized ||
		headers.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("401 without WWW-Authenticate: %d %v", status, headers)
	}
}

func TestFlagRemoteConfig(t *testing.T) {
	env := newTestEnv(t, "")
	definitionsProject(t, env)
	env.flag(t, `{"key":"rc-empty","is_remote_configuration":true}`)
	gone := env.flag(t, `{"key":"rc-gone","is_remote_configuration":true,"filters":{"groups":[{"properties":[]}],"payloads":{"true":"\"x\""}}}`)
	env.must(t, 200, "PATCH", env.flagPath(gone), env.owner, `{"deleted":true}`)
	remote := func(key string) string {
		return "/api/projects/@current/feature_flags/" + key + "/remote_config?token=" + env.boot.ProjectAPIKey
	}
	env.run(t, []scenario{
		{name: "the payload, a JSON string", method: "GET", path: remote("a-base"), key: env.owner, status: 200, want: []string{`"{\"x\": 1}"`}},
		{name: "by id", method: "GET", path: remote("1"), key: env.owner, status: 200, want: []string{`"{\"x\": 1}"`}},
		{name: "with a slash", method: "GET", path: "/api/projects/@current/feature_flags/a-base/remote_config/?token=" + env.boot.ProjectAPIKey, key: env.owner, status: 200, want: []string{`"{\"x\": 1}"`}},
		{name: "no payload", method: "GET", path: remote("rc-empty"), key: env.owner, status: 200, notWant: []string{`"`, "{"}},
		{name: "not a remote configuration", method: "GET", path: remote("b-dep"), key: env.owner, status: 404, notWant: []string{"{"}},
		{name: "deleted", method: "GET", path: remote("rc-gone"), key: env.owner, status: 404, notWant: []string{"{"}},
		{name: "no such flag", method: "GET", path: remote("nothing"), key: env.owner, status: 404, notWant: []string{"{"}},
	})
	if _, body, _ := env.do(t, "GET", remote("rc-empty"), env.owner, nil, ""); body != "" {
		t.Fatalf("no payload answered %q", body)
	}
}
