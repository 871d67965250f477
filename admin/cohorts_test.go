package admin

import "testing"

func TestCohorts(t *testing.T) {
	env := newTestEnv(t, "")
	_, readKey := env.member(t, "reader@example.com", levelMember, "cohort:read")
	cohorts := env.project + "/cohorts/"
	people := `{"properties":{"type":"OR","values":[{"type":"AND","values":[{"key":"email","type":"person","operator":"icontains","value":"@x.com"}]}]}}`
	status, body, _ := env.do(t, "POST", cohorts, env.owner, nil, `{"name":"People","description":"With an x.com address","filters":`+people+`,"groups":[]}`)
	want := `{"id":1,"name":"People","description":"With an x.com address","groups":[],"deleted":false,"filters":` + people +
		`,"query":null,"version":1,"is_calculating":false,"created_by":"<owner@example.com>","created_at":"<time>","last_calculation":null,` +
		`"errors_calculating":0,"count":0,"is_static":false,"experiment_set":[]}`
	if status != 201 || stable(body) != want {
		t.Fatalf("create: %d\n%s\nwant\n%s", status, stable(body), want)
	}
	nested := `{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":1}]}}`
	env.run(t, []scenario{
		{name: "static, no members", method: "POST", path: cohorts, key: env.owner, body: `{"name":"Listed","is_static":true}`, status: 201,
			want: []string{`"id":2`, `"filters":{"properties":{"type":"AND","values":[]}}`, `"is_static":true`}},
		{name: "a cohort of a cohort", method: "POST", path: cohorts, key: env.owner, body: `{"name":"Nested","filters":` + nested + `}`, status: 201,
			want: []string{`"id":3`}},
		{name: "list, newest first", method: "GET", path: cohorts, key: readKey, status: 200,
			want: []string{`"count":3`, `"results":[{"id":3,`}},
		{name: "search", method: "GET", path: cohorts + "?search=peo", key: readKey, status: 200, want: []string{`"count":1`, `"name":"People"`}},
		{name: "retrieve", method: "GET", path: cohorts + "1/", key: readKey, status: 200, want: []string{`"name":"People"`}},
		{name: "a reader does not write", method: "PATCH", path: cohorts + "1/", key: readKey, body: `{"name":"x"}`, status: 403,
			want: []string{`"detail":"API key missing required scope 'cohort:write'"`}},
		{name: "update", method: "PATCH", path: cohorts + "1/", key: env.owner, body: `{"name":"Everyone","description":null}`, status: 200,
			want: []string{`"name":"Everyone"`, `"description":""`, `"version":2`, `"filters":` + people}},
		env.refused("no filters", "POST", cohorts, `{"name":"x"}`, "filters", "invalid_input", "Filters must be a dictionary with a 'properties' key."),
		env.refused("filters without properties", "POST", cohorts, `{"filters":{"groups":[]}}`, "filters", "invalid_input",
			"Filters must be a dictionary with a 'properties' key."),
		env.refused("group type", "POST", cohorts, `{"filters":{"properties":{"type":"NOT","values":[]}}}`, "filters", "invalid_input",
			"Filters are not valid (a property group's type must be AND or OR)"),
		env.refused("unknown cohort", "POST", cohorts, `{"filters":{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":99}]}}}`, "",
			"invalid_input", "Invalid Cohort ID in filter"),
		env.refused("loop", "PATCH", cohorts+"1/", `{"filters":{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":3}]}}}`, "",
			"invalid_input", "Cohorts cannot reference other cohorts in a loop."),
		{name: "delete", method: "PATCH", path: cohorts + "2/", key: env.owner, body: `{"deleted":true}`, status: 200, want: []string{`"deleted":true`}},
		{name: "not listed", method: "GET", path: cohorts, key: env.owner, status: 200, want: []string{`"count":2`}},
		{name: "still readable", method: "GET", path: cohorts + "2/", key: env.owner, status: 200, want: []string{`"deleted":true`}},
		{name: "DELETE is not allowed", method: "DELETE", path: cohorts + "1/", key: env.owner, status: 405, notWant: []string{"{"}},
		{name: "no such cohort", method: "GET", path: cohorts + "99/", key: env.owner, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}},
	})
}
