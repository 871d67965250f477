package admin

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

// personsAt is when the first event of the persons and groups fixtures happened; each
// later event is a second after the one before.
var personsAt = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func second(n int) time.Time { return personsAt.Add(time.Duration(n) * time.Second) }

// projectID is the id of a project path, /api/projects/{id}.
func projectID(t *testing.T, path string) int64 {
	t.Helper()
	var id int64
	if _, err := fmt.Sscanf(path, "/api/projects/%d", &id); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return id
}

type personPage struct {
	Count   int
	Next    *string
	Results []personRecord
}

// TestPersonsRead: the persons endpoints answer what ingestion made, for the path's
// project only: the list newest first with its filters and pages, and one person by
// its UUID with all its fields.
func TestPersonsRead(t *testing.T) {
	env := newTestEnv(t, "")
	env.ingest(t,
		warehouse.Event{Name: "pageview", DistinctID: "anon-7", Timestamp: second(0), SetOnce: `{"first_page":"/pricing"}`},
		warehouse.Event{Name: "$identify", DistinctID: "ada", Timestamp: second(1), AnonDistinctID: "anon-7", Set: `{"email":"Ada@Example.com","name":"Ada"}`},
		warehouse.Event{Name: "pageview", DistinctID: "bob-device", Timestamp: second(2), Set: `{"email":"bob@corp.test"}`},
		warehouse.Event{Name: "pageview", DistinctID: "carol", Timestamp: second(3)},
	)
	// Another project of the organization, with a person of the same distinct id.
	otherPath := env.otherProject(t)
	other := projectID(t, otherPath)
	env.ingestTo(t, other, warehouse.Event{Name: "pageview", DistinctID: "ada", Timestamp: second(4), Set: `{"email":"other@example.com"}`})

	list := func(project int64, query string) personPage {
		t.Helper()
		status, _, text := env.call(t, "GET", fmt.Sprintf("/api/projects/%d/persons/%s", project, query), env.owner, "")
		var page personPage
		if err := json.Unmarshal([]byte(text), &page); status != 200 || err != nil {
			t.Fatalf("GET persons/%s: %d %s", query, status, text)
		}
		return page
	}
	// firstIDs is each listed person's first distinct id, in list order.
	firstIDs := func(page personPage) string {
		var ids []string
		for _, p := range page.Results {
			ids = append(ids, p.DistinctIDs[0])
		}
		return fmt.Sprintf("%d %v", page.Count, ids)
	}
	if got, want := firstIDs(list(env.boot.ProjectID, "")), "3 [carol bob-device ada]"; got != want {
		t.Fatalf("persons %s, want %s (newest first)", got, want)
	}
	page := list(env.boot.ProjectID, "?limit=2")
	if got, want := firstIDs(page), "3 [carol bob-device]"; got != want || page.Next == nil || !strings.HasSuffix(*page.Next, "/persons/?limit=2&offset=2") {
		t.Fatalf("first page of 2: %s next %v, want %s", got, page.Next, want)
	}
	if got, want := firstIDs(list(env.boot.ProjectID, "?limit=2&offset=2")), "3 [ada]"; got != want {
		t.Fatalf("second page of 2: %s, want %s", got, want)
	}
	page = list(env.boot.ProjectID, "?distinct_id=anon-7")
	if len(page.Results) != 1 || page.Count != 1 || !slices.Equal(page.Results[0].DistinctIDs, []string{"ada", "anon-7"}) {
		t.Fatalf("persons/?distinct_id=anon-7: %+v", page)
	}
	ada := page.Results[0].ID
	if got := firstIDs(list(env.boot.ProjectID, "?distinct_id=nobody")); got != "0 []" {
		t.Fatalf("persons/?distinct_id=nobody: %s", got)
	}
	strangerPage := list(other, "?distinct_id=ada")
	if len(strangerPage.Results) != 1 || strangerPage.Results[0].ID == ada {
		t.Fatalf("the other project's ada: %+v", strangerPage)
	}
	stranger := strangerPage.Results[0].ID

	env.run(t, []scenario{
		{name: "retrieve", method: "GET", path: env.project + "/persons/" + ada + "/", key: env.owner, status: 200,
			want: []string{`{"id":"` + ada + `","uuid":"` + ada + `","name":"Ada@Example.com","distinct_ids":["ada","anon-7"],` +
				`"properties":{"email":"Ada@Example.com","first_page":"/pricing","name":"Ada"},"is_identified":true,"created_at":"2026-11-01T00:00:00Z"}`}},
		{name: "named by its first distinct id without email, name or username", method: "GET", path: env.project + "/persons/?distinct_id=carol",
			key: env.owner, status: 200, want: []string{`"name":"carol"`, `"properties":{}`, `"is_identified":false`, `"created_at":"2026-11-01T00:00:03Z"`}},
		{name: "unknown uuid", method: "GET", path: env.project + "/persons/" + uuid.NewString() + "/", key: env.owner, status: 404,
			want: []string{`"detail":"Not found."`}},
		{name: "not a uuid", method: "GET", path: env.project + "/persons/not-a-uuid/", key: env.owner, status: 404},
		{name: "another project's person through this one", method: "GET", path: env.project + "/persons/" + stranger + "/", key: env.owner, status: 404},
		{name: "the other project's person through it", method: "GET", path: otherPath + "/persons/" + stranger + "/", key: env.owner, status: 200,
			want: []string{`"properties":{"email":"other@example.com"}`, `"distinct_ids":["ada"]`}},
	})

	// search matches the email property or a distinct id, ignoring case, in this project only.
	for q, want := range map[string]string{
		"ADA@example": "1 [ada]",
		"anon-7":      "1 [ada]",
		"BOB-DEV":     "1 [bob-device]",
		"corp.test":   "1 [bob-device]",
		"a":           "2 [carol ada]",
		"other@":      "0 []",
		"nobody":      "0 []",
		"  carol  ":   "1 [carol]",
		"":            "3 [carol bob-device ada]",
	} {
		if got := firstIDs(list(env.boot.ProjectID, "?search="+url.QueryEscape(q))); got != want {
			t.Fatalf("search %q: %s, want %s", q, got, want)
		}
	}
}

// TestGroupsRead: the group endpoints answer what $groupidentify made, for the path's
// project only: its group types in index order, the groups of one type newest first
// with search and pages, and one group by type and key.
func TestGroupsRead(t *testing.T) {
	env := newTestEnv(t, "")
	env.ingest(t,
		warehouse.Event{Name: "$groupidentify", DistinctID: "u", Timestamp: second(0), GroupType: "company", GroupKey: "acme", GroupSet: `{"plan":"pro"}`},
		warehouse.Event{Name: "$groupidentify", DistinctID: "u", Timestamp: second(1), GroupType: "company", GroupKey: "Beta Corp"},
		warehouse.Event{Name: "$groupidentify", DistinctID: "u", Timestamp: second(2), GroupType: "team", GroupKey: "core", GroupSet: `{"size":3}`},
		// $groups names a group without creating it.
		warehouse.Event{Name: "e", DistinctID: "u", Timestamp: second(3), Groups: `{"company":"never-identified"}`},
	)
	otherPath := env.otherProject(t)
	env.ingestTo(t, projectID(t, otherPath), warehouse.Event{Name: "$groupidentify", DistinctID: "u", Timestamp: second(4), GroupType: "org", GroupKey: "acme", GroupSet: `{"plan":"free"}`})
	groups := env.project + "/groups/?group_type_index="
	acme := `{"group_type_index":0,"group_key":"acme","group_properties":{"plan":"pro"},"created_at":"2026-11-01T00:00:00Z"}`
	beta := `{"group_type_index":0,"group_key":"Beta Corp","group_properties":{},"created_at":"2026-11-01T00:00:01Z"}`
	badIndex := []string{`"type":"validation_error"`, `"attr":"group_type_index"`, `"detail":"A group type index from 0 to 4 is required."`}
	env.run(t, []scenario{
		{name: "group types", method: "GET", path: env.project + "/groups_types/", key: env.owner, status: 200,
			want: []string{`[{"group_type":"company","group_type_index":0,"name_singular":null,"name_plural":null},` +
				`{"group_type":"team","group_type_index":1,"name_singular":null,"name_plural":null}]`}},
		{name: "the other project's group types", method: "GET", path: otherPath + "/groups_types/", key: env.owner, status: 200,
			want: []string{`[{"group_type":"org","group_type_index":0,"name_singular":null,"name_plural":null}]`}},
		{name: "list newest first", method: "GET", path: groups + "0", key: env.owner, status: 200,
			want: []string{`{"count":2,"next":null,"previous":null,"results":[` + beta + `,` + acme + `]}`}},
		{name: "list of the other type", method: "GET", path: groups + "1", key: env.owner, status: 200,
			want: []string{`"count":1`, `"group_key":"core","group_properties":{"size":3}`}},
		{name: "list of a type the project does not have", method: "GET", path: groups + "4", key: env.owner, status: 200,
			want: []string{`{"count":0,"next":null,"previous":null,"results":[]}`}},
		{name: "search ignores case", method: "GET", path: groups + "0&search=ACM", key: env.owner, status: 200,
			want: []string{`{"count":1,"next":null,"previous":null,"results":[` + acme + `]}`}},
		{name: "first page", method: "GET", path: groups + "0&limit=1", key: env.owner, status: 200,
			want: []string{`"count":2`, `/groups/?group_type_index=0&limit=1&offset=1"`, `"results":[` + beta + `]`}},
		{name: "second page", method: "GET", path: groups + "0&limit=1&offset=1", key: env.owner, status: 200,
			want: []string{`"next":null`, `"results":[` + acme + `]`}},
		{name: "find", method: "GET", path: env.project + "/groups/find/?group_type_index=0&group_key=acme", key: env.owner, status: 200,
			want: []string{acme}},
		{name: "find a key with a space", method: "GET", path: env.project + "/groups/find/?group_type_index=0&group_key=Beta%20Corp", key: env.owner, status: 200,
			want: []string{beta}},
		{name: "find in the other project", method: "GET", path: otherPath + "/groups/find/?group_type_index=0&group_key=acme", key: env.owner, status: 200,
			want: []string{`"group_properties":{"plan":"free"}`}},
		{name: "find a key of another type", method: "GET", path: env.project + "/groups/find/?group_type_index=1&group_key=acme", key: env.owner, status: 404},
		{name: "find a key only $groups named", method: "GET", path: env.project + "/groups/find/?group_type_index=0&group_key=never-identified", key: env.owner, status: 404,
			want: []string{`"detail":"Not found."`}},
		{name: "list without an index", method: "GET", path: env.project + "/groups/", key: env.owner, status: 400, want: badIndex},
		{name: "list with index 5", method: "GET", path: groups + "5", key: env.owner, status: 400, want: badIndex},
		{name: "find with a word for index", method: "GET", path: env.project + "/groups/find/?group_type_index=x&group_key=acme", key: env.owner, status: 400, want: badIndex},
	})
}
