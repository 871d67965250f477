package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/admin"
)

// identityEnv is a running hedge, driven through its capture listener and read through
// its management API, for the identity scenarios (issue 5).
type identityEnv struct {
	t    *testing.T
	s    *server
	boot admin.Bootstrap
	at   time.Time // the next event's timestamp: each event is a second after the last
}

func newIdentityEnv(t *testing.T) *identityEnv {
	t.Helper()
	s := startTestServer(t, t.TempDir())
	t.Cleanup(func() { s.stop() })
	return &identityEnv{t: t, s: s, boot: *s.bootstrap, at: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
}

// event is one event to send; properties is a JSON object's inside, without braces.
type event struct {
	name, distinctID, properties string
	uuid                         string
}

func ev(name, distinctID, properties string) event {
	return event{name: name, distinctID: distinctID, properties: properties}
}

// send posts events as one /batch/ request, each a second after the previous one.
func (env *identityEnv) send(historical bool, events ...event) {
	env.t.Helper()
	var items []string
	for _, e := range events {
		id := e.uuid
		if id == "" {
			id = uuid.NewString()
		}
		items = append(items, fmt.Sprintf(`{"event":%q,"distinct_id":%q,"uuid":%q,"timestamp":%q,"properties":{%s}}`,
			e.name, e.distinctID, id, env.at.Format(time.RFC3339Nano), e.properties))
		env.at = env.at.Add(time.Second)
	}
	body := fmt.Sprintf(`{"api_key":%q,"historical_migration":%t,"batch":[%s]}`, env.boot.ProjectAPIKey, historical, strings.Join(items, ","))
	if status, text := request(env.t, "POST", env.s.captureURL+"/batch/", "", body); status != 200 {
		env.t.Fatalf("batch answered %d %s", status, text)
	}
}

type personView struct {
	ID           string         `json:"id"`
	DistinctIDs  []string       `json:"distinct_ids"`
	Properties   map[string]any `json:"properties"`
	IsIdentified bool           `json:"is_identified"`
	CreatedAt    time.Time      `json:"created_at"`
}

func (env *identityEnv) get(path string, into any) {
	env.t.Helper()
	status, text := request(env.t, "GET", env.s.adminURL+fmt.Sprintf("/api/projects/%d", env.boot.ProjectID)+path, env.boot.PersonalAPIKey, "")
	if status != 200 {
		env.t.Fatalf("GET %s: %d %s", path, status, text)
	}
	if err := json.Unmarshal([]byte(text), into); err != nil {
		env.t.Fatalf("GET %s: %v: %s", path, err, text)
	}
}

// person is the person of distinctID through the read API, or nil.
func (env *identityEnv) person(distinctID string) *personView {
	env.t.Helper()
	var page struct{ Results []personView }
	env.get("/persons/?distinct_id="+url.QueryEscape(distinctID), &page)
	if len(page.Results) == 0 {
		return nil
	}
	return &page.Results[0]
}

func (env *identityEnv) persons() []personView {
	env.t.Helper()
	var page struct{ Results []personView }
	env.get("/persons/?limit=100000", &page)
	return page.Results
}

// eventPerson is the person_id stored with the event.
func (env *identityEnv) eventPerson(eventUUID string) string {
	env.t.Helper()
	var id string
	if err := env.s.warehouse.DB().QueryRow(`SELECT person_id::VARCHAR FROM events WHERE uuid = ?`, eventUUID).Scan(&id); err != nil {
		env.t.Fatal(err)
	}
	return id
}

func (env *identityEnv) warnings(typ string) int {
	env.t.Helper()
	var n int
	env.s.warehouse.DB().QueryRow(`SELECT count(*) FROM ingestion_warnings WHERE type = ?`, typ).Scan(&n)
	return n
}

func propsJSON(p *personView) string {
	b, _ := json.Marshal(p.Properties)
	return string(b)
}

func TestIdentitySetPrecedence(t *testing.T) {
	env := newIdentityEnv(t)
	env.send(false,
		ev("e1", "u", `"$set":{"a":1,"b":1},"$set_once":{"c":1}`),
		// $set_once does not touch a, which exists; d is new.
		ev("e2", "u", `"$set_once":{"a":2,"d":2},"$set":{"b":2},"$unset":["c"]`),
		// e did not exist before this event: the $unset leaves it.
		ev("e3", "u", `"$set":{"e":1},"$unset":["e"]`),
		// a existed before: in both $set and $unset, the unset wins.
		ev("e4", "u", `"$set":{"a":3},"$unset":["a"]`),
		// Within one event $set wins over $set_once.
		ev("e5", "u", `"$set_once":{"f":1},"$set":{"f":2}`),
	)
	// posthog-go sends $set at the top level; it is merged over the properties' own.
	body := fmt.Sprintf(`{"api_key":%q,"batch":[{"event":"$identify","distinct_id":"u","$set":{"g":"top","h":"top"},"properties":{"$set":{"h":"props","i":"props"}}}]}`, env.boot.ProjectAPIKey)
	if status, _ := request(t, "POST", env.s.captureURL+"/batch/", "", body); status != 200 {
		t.Fatal(status)
	}
	p := env.person("u")
	if got, want := propsJSON(p), `{"b":2,"d":2,"e":1,"f":2,"g":"top","h":"top","i":"props"}`; got != want {
		t.Fatalf("properties %s, want %s", got, want)
	}
	if p.IsIdentified || len(env.persons()) != 1 {
		t.Fatalf("ordinary events: identified %v, %d persons", p.IsIdentified, len(env.persons()))
	}
}

func TestIdentityIdentify(t *testing.T) {
	env := newIdentityEnv(t)
	// With $anon_distinct_id: the anonymous person and the user become one, identified.
	env.send(false, ev("pageview", "anon-1", `"$set":{"first_page":"/pricing"}`))
	env.send(false, ev("$identify", "user-1", `"$anon_distinct_id":"anon-1","$set":{"email":"u1@example.com"}`))
	p := env.person("user-1")
	if p == nil || !slices.Equal(p.DistinctIDs, []string{"anon-1", "user-1"}) || !p.IsIdentified ||
		p.Properties["email"] != "u1@example.com" || p.Properties["first_page"] != "/pricing" {
		t.Fatalf("identified person %+v", p)
	}
	// Without it: only $set, no merge (spec rule 8), nothing identified.
	env.send(false, ev("pageview", "anon-2", ``), ev("$identify", "user-2", `"$set":{"email":"u2@example.com"}`))
	if a, u := env.person("anon-2"), env.person("user-2"); a == nil || u == nil || a.ID == u.ID || u.IsIdentified || u.Properties["email"] != "u2@example.com" {
		t.Fatalf("identify without $anon_distinct_id merged or failed: %+v %+v", a, u)
	}
}

func TestIdentityAliasDirection(t *testing.T) {
	env := newIdentityEnv(t)
	env.send(false, ev("e", "device-id", `"$set":{"shared":"device","only_device":1}`))
	env.send(false, ev("e", "account-id", `"$set":{"shared":"account","only_account":1}`))
	aliasTarget := env.person("account-id")
	env.send(false, ev("$create_alias", "device-id", `"alias":"account-id"`))
	// Spec rule 5: the event's distinct_id is merged into the alias; the alias's person survives.
	p := env.person("device-id")
	if p == nil || p.ID != aliasTarget.ID || !slices.Equal(p.DistinctIDs, []string{"account-id", "device-id"}) {
		t.Fatalf("after alias: %+v, want the alias's person %s with both ids", p, aliasTarget.ID)
	}
	if got, want := propsJSON(p), `{"only_account":1,"only_device":1,"shared":"account"}`; got != want {
		t.Fatalf("merged properties %s, want %s (the survivor wins conflicts)", got, want)
	}
	if len(env.persons()) != 1 {
		t.Fatal("the merged-away person is still listed")
	}
}

func TestIdentityMergeConflicts(t *testing.T) {
	env := newIdentityEnv(t)
	env.send(false, ev("e", "older", `"$set":{"x":1,"shared":"source"}`)) // created first
	env.send(false, ev("e", "newer", `"$set":{"y":2,"shared":"target"}`))
	olderCreated := env.person("older").CreatedAt
	env.send(false, ev("$identify", "newer", `"$anon_distinct_id":"older","$set":{"z":3}`))
	p := env.person("older")
	if got, want := propsJSON(p), `{"shared":"target","x":1,"y":2,"z":3}`; got != want {
		t.Fatalf("merged properties %s, want %s", got, want)
	}
	if !p.CreatedAt.Equal(olderCreated) || !p.IsIdentified || len(p.DistinctIDs) != 2 {
		t.Fatalf("merged person %+v: want the older created_at %v, identified, both ids", p, olderCreated)
	}
}

func TestIdentityIllegalIDs(t *testing.T) {
	env := newIdentityEnv(t)
	illegal := []string{" ", "anonymous", "GUEST", "distinctid", "distinct_id", "id", "not_authenticated", "email",
		"undefined", "true", "False", "[object Object]", "NaN", "None", "none", "null", "0", `'null'`, `"undefined"`}
	env.send(false, ev("e", "good-user", ``))
	var events []event
	for _, id := range illegal {
		events = append(events, ev("$identify", "good-user", fmt.Sprintf(`"$anon_distinct_id":%q`, id)))
	}
	env.send(false, events...)
	p := env.person("good-user")
	if !slices.Equal(p.DistinctIDs, []string{"good-user"}) || p.IsIdentified {
		t.Fatalf("merged with an illegal id: %+v", p)
	}
	if n := env.warnings("cannot_merge_with_illegal_distinct_id"); n != len(illegal) {
		t.Fatalf("%d illegal-id warnings, want %d", n, len(illegal))
	}
	var kept int
	env.s.warehouse.DB().QueryRow(`SELECT count(*) FROM events WHERE event = '$identify'`).Scan(&kept)
	if kept != len(illegal) {
		t.Fatalf("%d $identify events kept, want all %d", kept, len(illegal))
	}
	// Legal ids that only look alike still merge.
	env.send(false, ev("$identify", "good-user", `"$anon_distinct_id":"null-ish"`))
	if p := env.person("good-user"); len(p.DistinctIDs) != 2 {
		t.Fatalf("a legal id did not merge: %+v", p)
	}
}

func TestIdentityAlreadyIdentified(t *testing.T) {
	env := newIdentityEnv(t)
	env.send(false, ev("$identify", "alice", `"$anon_distinct_id":"alice-anon"`)) // alice: identified
	env.send(false, ev("$identify", "bob", `"$anon_distinct_id":"bob-anon"`))     // bob: identified
	// $identify of alice with bob-anon as the anonymous id: bob's person is identified,
	// so it is not merged away; the event is kept with a warning.
	env.send(false, ev("$identify", "alice", `"$anon_distinct_id":"bob-anon","$set":{"kept":true}`))
	alice, bob := env.person("alice"), env.person("bob")
	if alice.ID == bob.ID || len(alice.DistinctIDs) != 2 || len(bob.DistinctIDs) != 2 || alice.Properties["kept"] != true {
		t.Fatalf("an identified person was merged away: alice %+v bob %+v", alice, bob)
	}
	if env.warnings("cannot_merge_already_identified") != 1 {
		t.Fatal("no cannot_merge_already_identified warning")
	}
	// $merge_dangerously merges it all the same.
	env.send(false, ev("$merge_dangerously", "alice", `"alias":"bob"`))
	alice = env.person("alice")
	if len(alice.DistinctIDs) != 4 || env.person("bob").ID != alice.ID {
		t.Fatalf("$merge_dangerously did not merge: %+v", alice)
	}
}

func TestIdentityPersonless(t *testing.T) {
	env := newIdentityEnv(t)
	before := []event{
		{name: "pageview", distinctID: "visitor", properties: `"$process_person_profile":false,"$set":{"stripped":true}`, uuid: uuid.NewString()},
		{name: "clicked", distinctID: "visitor", properties: `"$process_person_profile":false`, uuid: uuid.NewString()},
	}
	env.send(false, before...)
	if env.person("visitor") != nil || len(env.persons()) != 0 {
		t.Fatal("personless events created a person")
	}
	var props string
	env.s.warehouse.DB().QueryRow(`SELECT properties FROM events WHERE uuid = ?`, before[0].uuid).Scan(&props)
	if strings.Contains(props, "$set") {
		t.Fatalf("personless event stored with its $set: %s", props)
	}
	// identify: the person is made now, and the personless events already carry its id.
	env.send(false, ev("$identify", "customer", `"$anon_distinct_id":"visitor","$set":{"email":"c@example.com"}`))
	p := env.person("customer")
	if p == nil || !slices.Equal(p.DistinctIDs, []string{"customer", "visitor"}) {
		t.Fatalf("person after identify %+v", p)
	}
	for _, e := range before {
		if got := env.eventPerson(e.uuid); got != p.ID {
			t.Fatalf("personless event has person_id %s, the identified person is %s", got, p.ID)
		}
	}
	// A personless event of an identified distinct id names its person without changing it.
	later := event{name: "later", distinctID: "customer", properties: `"$process_person_profile":false,"$set":{"email":"changed"}`, uuid: uuid.NewString()}
	env.send(false, later)
	if got := env.eventPerson(later.uuid); got != p.ID || env.person("customer").Properties["email"] != "c@example.com" {
		t.Fatalf("personless event of a known person: person_id %s, email %v", got, env.person("customer").Properties["email"])
	}
}

func TestIdentityGroups(t *testing.T) {
	env := newIdentityEnv(t)
	var events []event
	for i, typ := range []string{"company", "team", "project", "workspace", "region", "sixth"} {
		events = append(events, ev("$groupidentify", "u", fmt.Sprintf(`"$group_type":%q,"$group_key":"k%d","$group_set":{"n":%d}`, typ, i, i)))
	}
	events = append(events, ev("$groupidentify", "u", `"$group_type":"company","$group_key":"k0","$group_set":{"plan":"pro"}`))
	env.send(false, events...)
	var types []struct {
		GroupType      string `json:"group_type"`
		GroupTypeIndex int    `json:"group_type_index"`
	}
	env.get("/groups_types/", &types)
	if len(types) != 5 || types[0].GroupType != "company" || types[4].GroupType != "region" || types[4].GroupTypeIndex != 4 {
		t.Fatalf("group types %+v: want the first five, in order", types)
	}
	var company struct {
		GroupKey        string         `json:"group_key"`
		GroupProperties map[string]any `json:"group_properties"`
	}
	env.get("/groups/find/?group_type_index=0&group_key=k0", &company)
	if company.GroupProperties["n"] != float64(0) || company.GroupProperties["plan"] != "pro" {
		t.Fatalf("$group_set not merged into the group: %+v", company)
	}
	var sixth struct{ Count int }
	env.get("/groups/?group_type_index=4", &sixth)
	if sixth.Count != 1 {
		t.Fatalf("%d groups of index 4, want 1 (region); the sixth type has none", sixth.Count)
	}

	// $groups fills the event's columns and never creates a group.
	e := event{name: "used feature", distinctID: "u", properties: `"$groups":{"company":"never-identified","team":"k1","sixth":"s"}`, uuid: uuid.NewString()}
	env.send(false, e)
	var g0, g1 string
	var g5 *string
	env.s.warehouse.DB().QueryRow(`SELECT "$group_0", "$group_1", "$group_4" FROM events WHERE uuid = ?`, e.uuid).Scan(&g0, &g1, &g5)
	if g0 != "never-identified" || g1 != "k1" || g5 != nil {
		t.Fatalf("event groups %q %q %v", g0, g1, g5)
	}
	status, _ := request(t, "GET", env.s.adminURL+fmt.Sprintf("/api/projects/%d/groups/find/?group_type_index=0&group_key=never-identified", env.boot.ProjectID), env.boot.PersonalAPIKey, "")
	if status != 404 {
		t.Fatalf("a $groups key created a group (find answered %d)", status)
	}
	// $groupidentify never touches the person.
	if p := env.person("u"); p == nil || len(p.Properties) != 0 {
		t.Fatalf("$groupidentify changed its person: %+v", p)
	}
}

// Historical batches replay in the order sent.
func TestIdentityHistoricalOrder(t *testing.T) {
	env := newIdentityEnv(t)
	var events []event
	for i := range 50 {
		events = append(events, ev("imported", "migrated", fmt.Sprintf(`"$set":{"plan":"p%02d"}`, i)))
	}
	env.send(true, events[:25]...)
	env.send(true, events[25:]...)
	if p := env.person("migrated"); p.Properties["plan"] != "p49" {
		t.Fatalf("after the migration plan is %v, want the last sent, p49", p.Properties["plan"])
	}
}

// Persons survive a restart: the distinct-id map is rebuilt from the database.
func TestIdentityRestart(t *testing.T) {
	dataDir := t.TempDir()
	s := startTestServer(t, dataDir)
	env := &identityEnv{t: t, s: s, boot: *s.bootstrap, at: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	env.send(false, ev("$identify", "user", `"$anon_distinct_id":"anon","$set":{"v":1}`))
	before := env.person("user")
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	env.s = startTestServer(t, dataDir)
	defer env.s.stop()
	env.send(false, ev("later", "anon", `"$set":{"v":2}`))
	after := env.person("user")
	if after.ID != before.ID || after.Properties["v"] != float64(2) || len(env.persons()) != 1 {
		t.Fatalf("after a restart: %+v, before %+v", after, before)
	}
}

// Illegal distinct ids on the other side of a merge from TestIdentityIllegalIDs: the
// event's own distinct_id, which $identify, $create_alias and $merge_dangerously merge
// into, and the alias of $create_alias and $merge_dangerously. Either side illegal: no
// merge, a cannot_merge_with_illegal_distinct_id warning, the event kept (reference
// posthog-behaviour.md §9.3).
func TestIdentityIllegalAliasTarget(t *testing.T) {
	env := newIdentityEnv(t)
	env.send(false, ev("e", "real-user", `"$set":{"x":1}`))
	illegal := []string{"anonymous", "Guest", "distinct_id", "null", "None", "undefined", "[object Object]", "NaN", "0", `'null'`, `"undefined"`}
	var events []event
	for _, id := range illegal {
		events = append(events,
			ev("$create_alias", id, `"alias":"real-user"`),                       // into an illegal id
			ev("$identify", id, `"$anon_distinct_id":"real-user"`),               // into an illegal id
			ev("$create_alias", "real-user", fmt.Sprintf(`"alias":%q`, id)),      // an illegal alias
			ev("$merge_dangerously", "real-user", fmt.Sprintf(`"alias":%q`, id))) // an illegal alias
	}
	env.send(false, events...)
	p := env.person("real-user")
	if p == nil || !slices.Equal(p.DistinctIDs, []string{"real-user"}) || p.IsIdentified || p.Properties["x"] != float64(1) {
		t.Fatalf("merged with an illegal id: %+v", p)
	}
	if n := env.warnings("cannot_merge_with_illegal_distinct_id"); n != len(events) {
		t.Fatalf("%d illegal-id warnings, want %d", n, len(events))
	}
	var kept int
	env.s.warehouse.DB().QueryRow(`SELECT count(*) FROM events WHERE event IN ('$create_alias', '$identify', '$merge_dangerously')`).Scan(&kept)
	if kept != len(events) {
		t.Fatalf("%d merge events kept, want all %d", kept, len(events))
	}
	for _, id := range illegal {
		if q := env.person(id); q != nil && (q.ID == p.ID || len(q.DistinctIDs) != 1 || q.IsIdentified) {
			t.Fatalf("the person of the illegal id %q: %+v", id, q)
		}
	}
}

// TestPersonsRead: the persons endpoints answer what ingestion made, for the key's
// project only: one person by its UUID with all its fields, and the list's search.
func TestPersonsRead(t *testing.T) {
	env := newIdentityEnv(t)
	first := env.at
	env.send(false, ev("pageview", "anon-7", `"$set_once":{"first_page":"/pricing"}`))
	env.send(false, ev("$identify", "ada", `"$anon_distinct_id":"anon-7","$set":{"email":"Ada@Example.com","name":"Ada"}`))
	env.send(false, ev("pageview", "bob-device", `"$set":{"email":"bob@corp.test"}`), ev("pageview", "carol", ``))
	ada := env.person("ada")
	projectPath := func(project int64) string { return fmt.Sprintf("%s/api/projects/%d", env.s.adminURL, project) }

	var got struct {
		ID, UUID, Name string
		DistinctIDs    []string        `json:"distinct_ids"`
		Properties     json.RawMessage `json:"properties"`
		IsIdentified   bool            `json:"is_identified"`
		CreatedAt      time.Time       `json:"created_at"`
	}
	env.get("/persons/"+ada.ID+"/", &got)
	var props map[string]any
	json.Unmarshal(got.Properties, &props)
	propsText, _ := json.Marshal(props)
	if got.ID != ada.ID || got.UUID != ada.ID || got.Name != "Ada@Example.com" || !slices.Equal(got.DistinctIDs, []string{"ada", "anon-7"}) ||
		string(propsText) != `{"email":"Ada@Example.com","first_page":"/pricing","name":"Ada"}` || !got.IsIdentified || !got.CreatedAt.Equal(first) {
		t.Fatalf("GET persons/{uuid}/: %+v (properties %s), want created at %v", got, propsText, first)
	}
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		if status, text := request(t, "GET", projectPath(env.boot.ProjectID)+"/persons/"+id+"/", env.boot.PersonalAPIKey, ""); status != 404 {
			t.Fatalf("GET persons/%s/: %d %s", id, status, text)
		}
	}

	// Another project of the organization, with a person of the same distinct id.
	status, text := request(t, "POST", fmt.Sprintf("%s/api/organizations/%s/projects/", env.s.adminURL, env.boot.OrganizationID),
		env.boot.PersonalAPIKey, `{"name": "Other"}`)
	var other struct {
		ID       int64  `json:"id"`
		APIToken string `json:"api_token"`
	}
	if err := json.Unmarshal([]byte(text), &other); status != 201 && status != 200 || err != nil || other.APIToken == "" {
		t.Fatalf("creating a project: %d %s", status, text)
	}
	body := fmt.Sprintf(`{"api_key":%q,"batch":[{"event":"pageview","distinct_id":"ada","timestamp":%q,"properties":{"$set":{"email":"other@example.com"}}}]}`,
		other.APIToken, env.at.Format(time.RFC3339))
	if status, text := request(t, "POST", env.s.captureURL+"/batch/", "", body); status != 200 {
		t.Fatalf("batch to the other project: %d %s", status, text)
	}
	var page struct {
		Count   int
		Results []personView
	}
	status, text = request(t, "GET", projectPath(other.ID)+"/persons/?distinct_id=ada", env.boot.PersonalAPIKey, "")
	if err := json.Unmarshal([]byte(text), &page); status != 200 || err != nil || len(page.Results) != 1 || page.Results[0].ID == ada.ID {
		t.Fatalf("the other project's ada: %d %s", status, text)
	}
	stranger := page.Results[0].ID
	if status, text := request(t, "GET", projectPath(env.boot.ProjectID)+"/persons/"+stranger+"/", env.boot.PersonalAPIKey, ""); status != 404 {
		t.Fatalf("another project's person through this one: %d %s", status, text)
	}
	if status, _ := request(t, "GET", projectPath(other.ID)+"/persons/"+stranger+"/", env.boot.PersonalAPIKey, ""); status != 200 {
		t.Fatalf("the other project's person through it: %d", status)
	}

	// search matches the email property or a distinct id, ignoring case, in this project only.
	search := func(q string) string {
		t.Helper()
		page.Count, page.Results = 0, nil
		env.get("/persons/?search="+url.QueryEscape(q), &page)
		var ids []string
		for _, p := range page.Results {
			ids = append(ids, p.DistinctIDs[0])
		}
		slices.Sort(ids)
		return fmt.Sprintf("%d %v", page.Count, ids)
	}
	for q, want := range map[string]string{
		"ADA@example": "1 [ada]",
		"anon-7":      "1 [ada]",
		"BOB-DEV":     "1 [bob-device]",
		"corp.test":   "1 [bob-device]",
		"a":           "2 [ada carol]",
		"other@":      "0 []",
		"nobody":      "0 []",
		"  carol  ":   "1 [carol]",
		"":            "3 [ada bob-device carol]",
	} {
		if got := search(q); got != want {
			t.Fatalf("search %q: %s, want %s", q, got, want)
		}
	}
}
