package admin

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/google/uuid"
)

// addProjects adds n projects to the bootstrap organization; with the bootstrap one
// the organization then has n+1, ids 1..n+1.
func (env *testEnv) addProjects(t *testing.T, n int) {
	t.Helper()
	org := uuid.MustParse(env.boot.OrganizationID)
	for i := range n {
		if _, _, err := insertProject(context.Background(), env.warehouse.DB(), org, "Project "+strconv.Itoa(i+2)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestProjectListPagination(t *testing.T) {
	env := newTestEnv(t, "")
	env.addProjects(t, 4)
	key := env.boot.PersonalAPIKey
	base := env.url + "/api/organizations/{org}/projects/"
	env.run(t, []scenario{
		{name: "first page", method: "GET", path: "/api/organizations/{org}/projects/?limit=2", key: key, status: 200,
			want:    []string{`"count":5`, `"next":"` + base + `?limit=2&offset=2"`, `"previous":null`, `"name":"Default project"`, `"name":"Project 2"`},
			notWant: []string{`"name":"Project 3"`}},
		{name: "middle page", method: "GET", path: "/api/organizations/{org}/projects/?limit=2&offset=2", key: key, status: 200,
			want: []string{`"next":"` + base + `?limit=2&offset=4"`, `"previous":"` + base + `?limit=2"`, `"name":"Project 3"`, `"name":"Project 4"`}},
		{name: "last page", method: "GET", path: "/api/organizations/{org}/projects/?limit=2&offset=4", key: key, status: 200,
			want: []string{`"next":null`, `"previous":"` + base + `?limit=2&offset=2"`, `"name":"Project 5"`}},
		{name: "past the end", method: "GET", path: "/api/organizations/{org}/projects/?offset=10", key: key, status: 200,
			want: []string{`"count":5`, `"results":[]`}},
		{name: "invalid limit gives the default page", method: "GET", path: "/api/organizations/{org}/projects/?limit=abc", key: key, status: 200,
			want: []string{`"count":5`, `"next":null`, `"name":"Project 5"`}},
		{name: "zero limit gives the default page", method: "GET", path: "/api/organizations/{org}/projects/?limit=0", key: key, status: 200,
			want: []string{`"next":null`, `"name":"Project 5"`}},
		{name: "other parameters kept, keys sorted", method: "GET", path: "/api/organizations/{org}/projects/?zeta=1&limit=2&alpha=x", key: key, status: 200,
			want: []string{`"next":"` + base + `?alpha=x&limit=2&offset=2&zeta=1"`}},
	})
}

func TestProjectListPublicURL(t *testing.T) {
	env := newTestEnv(t, "https://hedge.example.com/")
	env.addProjects(t, 1)
	env.run(t, []scenario{{
		name: "links start with the public URL", method: "GET", path: "/api/organizations/{org}/projects/?limit=1",
		key: env.boot.PersonalAPIKey, status: 200,
		want: []string{`"next":"https://hedge.example.com/api/organizations/{org}/projects/?limit=1&offset=1"`},
	}})
}

func TestProjectListItems(t *testing.T) {
	env := newTestEnv(t, "")
	env.addProjects(t, 2)
	status, body, _ := env.do(t, "GET", "/api/organizations/{org}/projects/", env.boot.PersonalAPIKey, nil, "")
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var page struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	// Exactly the spec's list item fields, nothing more.
	want := []string{"access_control", "api_token", "completed_snippet_onboarding", "has_completed_onboarding_for",
		"id", "ingested_event", "is_demo", "name", "organization", "timezone", "uuid"}
	first := page.Results[0]
	var keys []string
	for k := range first {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !slices.Equal(keys, want) {
		t.Fatalf("list item fields %v, want %v", keys, want)
	}
	if first["id"] != float64(env.boot.ProjectID) || first["api_token"] != env.boot.ProjectAPIKey ||
		first["organization"] != env.boot.OrganizationID || first["timezone"] != "UTC" {
		t.Fatalf("bootstrap project listed as %v", first)
	}
}

func TestProjectListScopedTeams(t *testing.T) {
	env := newTestEnv(t, "")
	env.addProjects(t, 2)
	_, key := env.addUser(t, "scoped@example.com", uuid.MustParse(env.boot.OrganizationID), levelMember, "project:read")
	if _, err := env.warehouse.DB().Exec(`UPDATE meta.personal_api_keys SET scoped_teams = '[3]' WHERE secure_value = ?`, hashKey(key)); err != nil {
		t.Fatal(err)
	}
	env.run(t, []scenario{{
		name: "only the scoped project", method: "GET", path: "/api/organizations/{org}/projects/", key: key, status: 200,
		want: []string{`"count":1`, `"id":3`}, notWant: []string{`"id":1,`, `"id":2,`},
	}})
}
