package warehouse_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/testlog"
	"github.com/hedge-analytics/hedge/warehouse"
)

// The identity model as the Writer applies it: persons, their distinct ids and
// properties, merges, and groups, driven through Writer.Submit and read back through
// the warehouse's own reads of persons and groups.
//
// The events are built as the edge hands them over: it has already taken $set,
// $set_once, $unset, $anon_distinct_id, alias, $groups and the $groupidentify fields
// out of the properties (merging a top-level $set into the properties' one), marked
// $process_person_profile: false as Personless, and skipped the events it refuses
// (a personless $identify, an overlong $group_key): those are the edge's rules and
// are tested there (edge/identity_test.go, edge/decode_test.go).

// event is one event as the edge hands it to the Writer; send fills in its uuid,
// project, timestamp and properties.
type event = warehouse.Event

// team is the project of the scenarios' events.
const team = 1

// identityEnv is a real warehouse on a DuckDB file of the test's own.
type identityEnv struct {
	t    *testing.T
	path string
	cfg  warehouse.Config
	w    *warehouse.Warehouse
	at   time.Time // the next event's timestamp: each event is a second after the last
}

var firstEventTime = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// distinctCacheSize, when not zero, is the DistinctIDCacheSize of the warehouses that
// newIdentityEnv opens: TestIdentityTinyDistinctCache sets it while it runs the
// scenarios again. Tests of this package do not run in parallel.
var distinctCacheSize int

func newIdentityEnv(t *testing.T, cfg warehouse.Config) *identityEnv {
	t.Helper()
	if distinctCacheSize != 0 {
		cfg.DistinctIDCacheSize = distinctCacheSize
	}
	env := &identityEnv{t: t, path: filepath.Join(t.TempDir(), "hedge.duckdb"), cfg: cfg, at: firstEventTime}
	env.open()
	t.Cleanup(func() { env.w.Close() })
	return env
}

func (env *identityEnv) open() {
	env.t.Helper()
	cfg := env.cfg
	cfg.Path, cfg.Logger = env.path, testlog.New()
	w, err := warehouse.Open(context.Background(), cfg)
	if err != nil {
		env.t.Fatal(err)
	}
	env.w = w
}

// restart closes the warehouse and opens its file again, with the same configuration:
// the Writer starts over with what it reads from the database.
func (env *identityEnv) restart() {
	env.t.Helper()
	if err := env.w.Close(); err != nil {
		env.t.Fatal(err)
	}
	env.open()
}

// send submits events as one realtime batch, each a second after the previous one.
func (env *identityEnv) send(events ...event) {
	env.t.Helper()
	env.sendLane(warehouse.LaneRealtime, events...)
}

func (env *identityEnv) sendLane(lane warehouse.Lane, events ...event) {
	env.t.Helper()
	for i := range events {
		e := &events[i]
		if e.UUID == uuid.Nil {
			e.UUID = uuid.Must(uuid.NewV7())
		}
		if e.TeamID == 0 {
			e.TeamID = team
		}
		if e.Properties == "" {
			e.Properties = "{}"
		}
		e.Timestamp = env.at
		env.at = env.at.Add(time.Second)
	}
	if err := env.w.Writer().Submit(&warehouse.Batch{Lane: lane, Events: events}); err != nil {
		env.t.Fatalf("submit: %v", err)
	}
}

// person is the person of distinctID in the scenarios' project, or nil.
func (env *identityEnv) person(distinctID string) *warehouse.Person {
	env.t.Helper()
	persons, _, err := env.w.Persons(context.Background(), team, warehouse.PersonFilter{DistinctID: distinctID}, 2, 0)
	if err != nil {
		env.t.Fatal(err)
	}
	switch len(persons) {
	case 0:
		return nil
	case 1:
		return &persons[0]
	}
	env.t.Fatalf("distinct id %q belongs to %d persons", distinctID, len(persons))
	return nil
}

// persons are every person of the project.
func (env *identityEnv) persons(project int64) []warehouse.Person {
	env.t.Helper()
	persons, count, err := env.w.Persons(context.Background(), project, warehouse.PersonFilter{}, 100000, 0)
	if err != nil {
		env.t.Fatal(err)
	}
	if count != len(persons) {
		env.t.Fatalf("%d persons counted, %d listed", count, len(persons))
	}
	return persons
}

// show is a person as the scenarios compare it: its distinct ids, its properties and
// whether it is identified.
func show(p *warehouse.Person) string {
	if p == nil {
		return "no person"
	}
	state := "anonymous"
	if p.IsIdentified {
		state = "identified"
	}
	return fmt.Sprintf("%v %s %s", p.DistinctIDs, p.Properties, state)
}

func (env *identityEnv) wantPerson(distinctID, want string) *warehouse.Person {
	env.t.Helper()
	p := env.person(distinctID)
	if got := show(p); got != want {
		env.t.Fatalf("person of %q:\n got %s\nwant %s", distinctID, got, want)
	}
	return p
}

// eventPerson is the person_id stored with the event.
func (env *identityEnv) eventPerson(eventUUID uuid.UUID) uuid.UUID {
	env.t.Helper()
	var id uuid.UUID
	if err := env.w.DB().QueryRow(`SELECT person_id FROM events WHERE uuid = ?`, eventUUID.String()).Scan(&id); err != nil {
		env.t.Fatal(err)
	}
	return id
}

// count runs a count(*) query.
func (env *identityEnv) count(query string, args ...any) int {
	env.t.Helper()
	var n int
	if err := env.w.DB().QueryRow(query, args...).Scan(&n); err != nil {
		env.t.Fatal(err)
	}
	return n
}

// warnings are the ingestion warnings of a type, as "event distinct_id", in the order
// written.
func (env *identityEnv) warnings(typ string) []string {
	env.t.Helper()
	rows, err := env.w.DB().Query(`SELECT event || ' ' || distinct_id FROM ingestion_warnings WHERE type = ? ORDER BY rowid`, typ)
	if err != nil {
		env.t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			env.t.Fatal(err)
		}
		got = append(got, w)
	}
	return got
}

// $set_once fills only keys the person lacks; $set overwrites and, within one event,
// wins over $set_once; $unset removes a key that existed before the event, after the
// sets, so it wins over a $set of that key, and leaves a key that only the same event
// set. Ordinary events never identify a person.
func TestIdentitySetPrecedence(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	env.send(
		event{Name: "e1", DistinctID: "u", Set: `{"a":1,"b":1}`, SetOnce: `{"c":1}`},
		// $set_once does not touch a, which exists; d is new.
		event{Name: "e2", DistinctID: "u", SetOnce: `{"a":2,"d":2}`, Set: `{"b":2}`, Unset: `["c"]`},
		// e did not exist before this event: the $unset leaves it.
		event{Name: "e3", DistinctID: "u", Set: `{"e":1}`, Unset: `["e"]`},
		// a existed before: in both $set and $unset, the unset wins.
		event{Name: "e4", DistinctID: "u", Set: `{"a":3}`, Unset: `["a"]`},
		// Within one event $set wins over $set_once.
		event{Name: "e5", DistinctID: "u", SetOnce: `{"f":1}`, Set: `{"f":2}`},
		// A $set that the edge merged from the event's top level and its properties
		// (posthog-go sends $set at the top level) is one object to the Writer; an
		// $identify without $anon_distinct_id only sets.
		event{Name: "$identify", DistinctID: "u", Set: `{"h":"top","i":"props","g":"top"}`},
		// $unset may be an object: its keys are unset.
		event{Name: "e6", DistinctID: "u", Unset: `{"i":null}`},
		// A $set, $set_once or $unset of the wrong kind is ignored.
		event{Name: "e7", DistinctID: "u", Set: `"x"`, SetOnce: `[1]`, Unset: `"b"`},
	)
	env.wantPerson("u", `[u] {"b":2,"d":2,"e":1,"f":2,"g":"top","h":"top"} anonymous`)
	if n := len(env.persons(team)); n != 1 {
		t.Fatalf("%d persons, want 1", n)
	}
}

// $identify with $anon_distinct_id makes the anonymous person and the user's one
// person, identified, with the properties of both; without it, it only sets.
func TestIdentityIdentify(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	env.send(event{Name: "pageview", DistinctID: "anon-1", Set: `{"first_page":"/pricing"}`})
	anon := env.person("anon-1")
	env.send(event{Name: "$identify", DistinctID: "user-1", AnonDistinctID: "anon-1", Set: `{"email":"u1@example.com"}`})
	p := env.wantPerson("user-1", `[anon-1 user-1] {"email":"u1@example.com","first_page":"/pricing"} identified`)
	// user-1 had no person: it joins the anonymous one.
	if p.ID != anon.ID {
		t.Fatalf("identified person %s, want the anonymous person %s", p.ID, anon.ID)
	}

	env.send(event{Name: "pageview", DistinctID: "anon-2"}, event{Name: "$identify", DistinctID: "user-2", Set: `{"email":"u2@example.com"}`})
	a := env.wantPerson("anon-2", `[anon-2] {} anonymous`)
	u := env.wantPerson("user-2", `[user-2] {"email":"u2@example.com"} anonymous`)
	if a.ID == u.ID || len(env.persons(team)) != 3 {
		t.Fatalf("identify without $anon_distinct_id merged: %s %s, %d persons", a.ID, u.ID, len(env.persons(team)))
	}
}

// $create_alias merges the event's distinct_id into the person of its alias: the
// alias's person survives and wins conflicting properties.
func TestIdentityAliasDirection(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	env.send(event{Name: "e", DistinctID: "device-id", Set: `{"shared":"device","only_device":1}`})
	env.send(event{Name: "e", DistinctID: "account-id", Set: `{"shared":"account","only_account":1}`})
	aliasTarget := env.person("account-id")
	env.send(event{Name: "$create_alias", DistinctID: "device-id", Alias: "account-id"})
	p := env.wantPerson("device-id", `[account-id device-id] {"only_account":1,"only_device":1,"shared":"account"} identified`)
	if p.ID != aliasTarget.ID {
		t.Fatalf("after the alias the person is %s, want the alias's person %s", p.ID, aliasTarget.ID)
	}
	if n := len(env.persons(team)); n != 1 {
		t.Fatalf("%d persons: the merged-away person is still there", n)
	}
}

// A merge keeps the surviving person's value of a conflicting property, gains the
// properties it lacks, keeps the earlier created_at of the two, and is identified.
func TestIdentityMergeConflicts(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	env.send(event{Name: "e", DistinctID: "older", Set: `{"x":1,"shared":"source"}`}) // created first
	env.send(event{Name: "e", DistinctID: "newer", Set: `{"y":2,"shared":"target"}`})
	older, newer := env.person("older"), env.person("newer")
	if !older.CreatedAt.Equal(firstEventTime) {
		t.Fatalf("created_at %v, want its first event's time %v", older.CreatedAt, firstEventTime)
	}
	env.send(event{Name: "$identify", DistinctID: "newer", AnonDistinctID: "older", Set: `{"z":3}`})
	p := env.wantPerson("older", `[newer older] {"shared":"target","x":1,"y":2,"z":3} identified`)
	if p.ID != newer.ID || !p.CreatedAt.Equal(older.CreatedAt) {
		t.Fatalf("merged person %s created %v: want the distinct_id's person %s with the older created_at %v",
			p.ID, p.CreatedAt, newer.ID, older.CreatedAt)
	}
}

// illegalIDs are distinct ids that never merge: blank, the placeholders broken
// clients send, whatever their case where they are words, and quoted.
var illegalIDs = []string{" ", "anonymous", "GUEST", "distinctid", "distinct_id", "id", "not_authenticated", "email",
	"undefined", "true", "False", "[object Object]", "NaN", "None", "none", "null", "0", `'null'`, `"undefined"`}

// An $identify whose $anon_distinct_id is illegal merges nothing and is kept, with a
// cannot_merge_with_illegal_distinct_id warning each; legal ids that only look alike
// still merge.
func TestIdentityIllegalIDs(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	env.send(event{Name: "e", DistinctID: "good-user"})
	var events []event
	var want []string
	for _, id := range illegalIDs {
		events = append(events, event{Name: "$identify", DistinctID: "good-user", AnonDistinctID: id})
		want = append(want, "$identify good-user")
	}
	env.send(events...)
	env.wantPerson("good-user", `[good-user] {} anonymous`)
	if got := env.warnings("cannot_merge_with_illegal_distinct_id"); !slices.Equal(got, want) {
		t.Fatalf("illegal-id warnings %q, want %q", got, want)
	}
	if kept := env.count(`SELECT count(*) FROM events WHERE event = '$identify'`); kept != len(illegalIDs) {
		t.Fatalf("%d $identify events kept, want all %d", kept, len(illegalIDs))
	}
	for _, id := range illegalIDs {
		if p := env.person(id); p != nil {
			t.Fatalf("the illegal id %q got a person: %s", id, show(p))
		}
	}
	env.send(
		event{Name: "$identify", DistinctID: "good-user", AnonDistinctID: "null-ish"},
		event{Name: "$identify", DistinctID: "good-user", AnonDistinctID: "'guest"},
		event{Name: "$identify", DistinctID: "good-user", AnonDistinctID: "00"},
	)
	env.wantPerson("good-user", `['guest 00 good-user null-ish] {} identified`)
}

// An identified person is not merged away by $identify: the event is kept, with a
// cannot_merge_already_identified warning. $merge_dangerously merges it all the same.
func TestIdentityAlreadyIdentified(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	env.send(event{Name: "$identify", DistinctID: "alice", AnonDistinctID: "alice-anon"})
	env.send(event{Name: "$identify", DistinctID: "bob", AnonDistinctID: "bob-anon"})
	// bob-anon's person, bob's, is identified.
	env.send(event{Name: "$identify", DistinctID: "alice", AnonDistinctID: "bob-anon", Set: `{"kept":true}`})
	alice := env.wantPerson("alice", `[alice alice-anon] {"kept":true} identified`)
	bob := env.wantPerson("bob", `[bob bob-anon] {} identified`)
	if alice.ID == bob.ID {
		t.Fatal("alice and bob are one person")
	}
	if got := env.warnings("cannot_merge_already_identified"); !slices.Equal(got, []string{"$identify alice"}) {
		t.Fatalf("already-identified warnings %q, want one of alice's $identify", got)
	}

	// $merge_dangerously merges its alias's person into the person of its distinct_id.
	env.send(event{Name: "$merge_dangerously", DistinctID: "alice", Alias: "bob"})
	p := env.wantPerson("bob", `[alice alice-anon bob bob-anon] {"kept":true} identified`)
	if p.ID != alice.ID || len(env.persons(team)) != 1 {
		t.Fatalf("after $merge_dangerously: person %s, want alice's %s alone", p.ID, alice.ID)
	}
	if n := len(env.warnings("cannot_merge_already_identified")); n != 1 {
		t.Fatalf("%d already-identified warnings after $merge_dangerously, want still 1", n)
	}
}

// A personless event creates and changes no person, even with a $set, yet carries the
// person id its distinct id will have: the person a later merge creates for it.
func TestIdentityPersonless(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	before := []event{
		{UUID: uuid.New(), Name: "pageview", DistinctID: "visitor", Personless: true, Set: `{"stripped":true}`},
		{UUID: uuid.New(), Name: "clicked", DistinctID: "visitor", Personless: true},
	}
	env.send(before...)
	if p, n := env.person("visitor"), len(env.persons(team)); p != nil || n != 0 {
		t.Fatalf("personless events made %d persons: %s", n, show(p))
	}
	env.send(event{Name: "$identify", DistinctID: "customer", AnonDistinctID: "visitor", Set: `{"email":"c@example.com"}`})
	p := env.wantPerson("customer", `[customer visitor] {"email":"c@example.com"} identified`)
	for _, e := range before {
		if got := env.eventPerson(e.UUID); got != p.ID {
			t.Fatalf("personless event %s has person_id %s, the identified person is %s", e.Name, got, p.ID)
		}
	}
	// A personless event of a known distinct id names its person without changing it.
	later := event{UUID: uuid.New(), Name: "later", DistinctID: "customer", Personless: true, Set: `{"email":"changed"}`, Unset: `["email"]`}
	env.send(later)
	if got := env.eventPerson(later.UUID); got != p.ID {
		t.Fatalf("personless event of a known person: person_id %s, want %s", got, p.ID)
	}
	env.wantPerson("customer", `[customer visitor] {"email":"c@example.com"} identified`)
}

// groups lists every group of the project as "index/key properties", index by index.
func (env *identityEnv) groups(project int64) []string {
	env.t.Helper()
	var got []string
	for i := range 5 {
		groups, count, err := env.w.Groups(context.Background(), project, i, "", 100000, 0)
		if err != nil {
			env.t.Fatal(err)
		}
		if count != len(groups) {
			env.t.Fatalf("%d groups counted, %d listed", count, len(groups))
		}
		for _, g := range groups {
			got = append(got, fmt.Sprintf("%d/%s %s", g.TypeIndex, g.Key, g.Properties))
		}
	}
	slices.Sort(got)
	return got
}

func (env *identityEnv) groupTypes(project int64) string {
	env.t.Helper()
	types, err := env.w.GroupTypes(context.Background(), project)
	if err != nil {
		env.t.Fatal(err)
	}
	var got []string
	for _, ty := range types {
		got = append(got, fmt.Sprintf("%d:%s", ty.Index, ty.Name))
	}
	return strings.Join(got, " ")
}

// eventGroups is the $group_0..$group_4 columns of the event, "-" for NULL.
func (env *identityEnv) eventGroups(eventUUID uuid.UUID) string {
	env.t.Helper()
	var got string
	err := env.w.DB().QueryRow(`SELECT concat_ws(' ', coalesce("$group_0", '-'), coalesce("$group_1", '-'), coalesce("$group_2", '-'),
		coalesce("$group_3", '-'), coalesce("$group_4", '-')) FROM events WHERE uuid = ?`, eventUUID.String()).Scan(&got)
	if err != nil {
		env.t.Fatal(err)
	}
	return got
}

// A project has at most five group types, indexed in the order they first appear;
// $groupidentify creates its group or merges its $group_set into it, and never touches
// the person; $groups fills the event's $group_N columns and never creates a group.
func TestIdentityGroups(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	var events []event
	for i, typ := range []string{"company", "team", "project", "workspace", "region", "sixth"} {
		events = append(events, event{Name: "$groupidentify", DistinctID: "u", Set: `{"not_for_the_person":1}`,
			GroupType: typ, GroupKey: fmt.Sprintf("k%d", i), GroupSet: fmt.Sprintf(`{"n":%d}`, i)})
	}
	events = append(events, event{Name: "$groupidentify", DistinctID: "u", GroupType: "company", GroupKey: "k0", GroupSet: `{"plan":"pro"}`})
	env.send(events...)
	if got, want := env.groupTypes(team), "0:company 1:team 2:project 3:workspace 4:region"; got != want {
		t.Fatalf("group types %s, want %s: the first five, in order", got, want)
	}
	want := []string{`0/k0 {"n":0,"plan":"pro"}`, `1/k1 {"n":1}`, `2/k2 {"n":2}`, `3/k3 {"n":3}`, `4/k4 {"n":4}`}
	if got := env.groups(team); !slices.Equal(got, want) {
		t.Fatalf("groups\n%q\nwant\n%q (the sixth type has none)", got, want)
	}
	g, ok, err := env.w.Group(context.Background(), team, 0, "k0")
	if err != nil || !ok || g.Properties != `{"n":0,"plan":"pro"}` || !g.CreatedAt.Equal(firstEventTime) {
		t.Fatalf("group 0/k0: %+v %v %v, want created by its first $groupidentify", g, ok, err)
	}

	used := event{UUID: uuid.New(), Name: "used feature", DistinctID: "u", Groups: `{"company":"never-identified","team":"k1","sixth":"s"}`}
	env.send(used)
	if got, want := env.eventGroups(used.UUID), "never-identified k1 - - -"; got != want {
		t.Fatalf("event groups %s, want %s", got, want)
	}
	if _, ok, err := env.w.Group(context.Background(), team, 0, "never-identified"); ok || err != nil {
		t.Fatalf("a $groups key created a group (%v)", err)
	}
	if got := env.groups(team); !slices.Equal(got, want) {
		t.Fatalf("groups after $groups\n%q\nwant\n%q", got, want)
	}
	env.wantPerson("u", `[u] {} anonymous`)

	// New types in one event's $groups get indexes in the order the object lists them.
	const other = 2
	fresh := event{UUID: uuid.New(), TeamID: other, Name: "e", DistinctID: "u", Groups: `{"zeta":"z1","alpha":"a1","mid":7}`}
	env.send(fresh)
	if got, want := env.groupTypes(other), "0:zeta 1:alpha 2:mid"; got != want {
		t.Fatalf("project %d group types %s, want %s", other, got, want)
	}
	if got, want := env.eventGroups(fresh.UUID), "z1 a1 7 - -"; got != want {
		t.Fatalf("event groups %s, want %s", got, want)
	}
	if got := env.groups(other); len(got) != 0 {
		t.Fatalf("$groups created groups: %q", got)
	}
}

// A historical batch is applied in the order its events were sent, and historical
// batches in the order submitted.
func TestIdentityHistoricalOrder(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	var events []event
	for i := range 50 {
		events = append(events, event{Name: "imported", DistinctID: "migrated", Set: fmt.Sprintf(`{"plan":"p%02d"}`, i)})
	}
	env.sendLane(warehouse.LaneHistorical, events[:25]...)
	env.sendLane(warehouse.LaneHistorical, events[25:]...)
	env.wantPerson("migrated", `[migrated] {"plan":"p49"} anonymous`)
}

// Persons, distinct ids, group types and groups survive a restart: the Writer loads
// the group types from the database and reads distinct ids, persons and groups back as
// it needs them.
func TestIdentityRestart(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	env.send(
		event{Name: "$identify", DistinctID: "user", AnonDistinctID: "anon", Set: `{"v":1,"kept":true}`},
		event{Name: "$groupidentify", DistinctID: "user", GroupType: "company", GroupKey: "c1", GroupSet: `{"a":1}`},
	)
	before := env.person("user")
	env.restart()
	after := event{UUID: uuid.New(), Name: "later", DistinctID: "anon", Set: `{"v":2}`, Groups: `{"team":"t1","company":"c1"}`}
	env.send(after,
		event{Name: "$groupidentify", DistinctID: "user", GroupType: "company", GroupKey: "c1", GroupSet: `{"b":2}`},
		event{Name: "$identify", DistinctID: "user", AnonDistinctID: "fresh"},
	)
	p := env.wantPerson("anon", `[anon fresh user] {"kept":true,"v":2} identified`)
	if p.ID != before.ID || !p.CreatedAt.Equal(before.CreatedAt) || len(env.persons(team)) != 1 {
		t.Fatalf("after a restart: person %s created %v, before %s created %v; %d persons",
			p.ID, p.CreatedAt, before.ID, before.CreatedAt, len(env.persons(team)))
	}
	if got, want := env.groupTypes(team), "0:company 1:team"; got != want {
		t.Fatalf("group types after a restart %s, want %s", got, want)
	}
	if got, want := env.eventGroups(after.UUID), "c1 t1 - - -"; got != want {
		t.Fatalf("event groups after a restart %s, want %s", got, want)
	}
	if got, want := env.groups(team), []string{`0/c1 {"a":1,"b":2}`}; !slices.Equal(got, want) {
		t.Fatalf("groups after a restart %q, want %q", got, want)
	}
}

// An illegal id on either side of a merge refuses it: the event's own distinct_id,
// which $identify, $create_alias and $merge_dangerously merge into or from, and the
// alias of $create_alias and $merge_dangerously. Each event is kept with a
// cannot_merge_with_illegal_distinct_id warning.
func TestIdentityIllegalAliasTarget(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	env.send(event{Name: "e", DistinctID: "real-user", Set: `{"x":1}`})
	illegal := []string{"anonymous", "Guest", "distinct_id", "null", "None", "undefined", "[object Object]", "NaN", "0", `'null'`, `"undefined"`}
	var events []event
	for _, id := range illegal {
		events = append(events,
			event{Name: "$create_alias", DistinctID: id, Alias: "real-user"},      // an illegal distinct_id
			event{Name: "$identify", DistinctID: id, AnonDistinctID: "real-user"}, // into an illegal id
			event{Name: "$create_alias", DistinctID: "real-user", Alias: id},      // an illegal alias
			event{Name: "$merge_dangerously", DistinctID: "real-user", Alias: id}) // an illegal alias
	}
	env.send(events...)
	p := env.wantPerson("real-user", `[real-user] {"x":1} anonymous`)
	if n := len(env.warnings("cannot_merge_with_illegal_distinct_id")); n != len(events) {
		t.Fatalf("%d illegal-id warnings, want %d", n, len(events))
	}
	kept := env.count(`SELECT count(*) FROM events WHERE event IN ('$create_alias', '$identify', '$merge_dangerously')`)
	if kept != len(events) {
		t.Fatalf("%d merge events kept, want all %d", kept, len(events))
	}
	// The events of an illegal distinct_id still have a person of that id alone.
	for _, id := range illegal {
		q := env.wantPerson(id, fmt.Sprintf("[%s] {} anonymous", id))
		if q.ID == p.ID {
			t.Fatalf("the illegal id %q shares real-user's person", id)
		}
	}
}

// Distinct ids are a project's own: the same id in two projects is two persons, and a
// merge in one project leaves the other's alone.
func TestIdentityProjectsApart(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	const other = 2
	env.send(event{Name: "e", DistinctID: "anon", Set: `{"p":1}`})
	env.send(event{TeamID: other, Name: "e", DistinctID: "anon", Set: `{"p":2}`})
	env.send(event{Name: "$identify", DistinctID: "ada", AnonDistinctID: "anon"})
	env.wantPerson("anon", `[ada anon] {"p":1} identified`)
	persons := env.persons(other)
	if len(persons) != 1 || show(&persons[0]) != `[anon] {"p":2} anonymous` || persons[0].ID == env.person("anon").ID {
		t.Fatalf("project %d persons %v", other, persons)
	}
	if _, ok, err := env.w.Person(context.Background(), other, env.person("anon").ID); ok || err != nil {
		t.Fatalf("project %d reads project %d's person (%v)", other, team, err)
	}
}

// After a restart the distinct ids stored before it resolve to their persons, which the
// Writer reads back from the database (Open loads none): an event of a stored id changes
// its person, a personless one names it, merges move stored ids, and no id gets a second
// person.
func TestIdentityRestartStoredIDs(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	var events []event
	for i := range 20 {
		events = append(events, event{Name: "e", DistinctID: fmt.Sprintf("u%d", i), Set: fmt.Sprintf(`{"i":%d}`, i)})
	}
	env.send(events...)
	u3 := env.person("u3")
	env.restart()
	personless := event{UUID: uuid.New(), Name: "e", DistinctID: "u3", Personless: true}
	env.send(
		event{Name: "e", DistinctID: "u1", Set: `{"after":true}`},
		personless,
		event{Name: "$identify", DistinctID: "u4", AnonDistinctID: "u5"},   // two stored persons
		event{Name: "$create_alias", DistinctID: "u6", Alias: "new-alias"}, // a new id joins a stored person
	)
	env.wantPerson("u1", `[u1] {"after":true,"i":1} anonymous`)
	if got := env.eventPerson(personless.UUID); got != u3.ID {
		t.Fatalf("a personless event of a stored id has person_id %s, want %s", got, u3.ID)
	}
	env.wantPerson("u5", `[u4 u5] {"i":4} identified`)
	env.wantPerson("new-alias", `[new-alias u6] {"i":6} identified`)
	if persons, ids := len(env.persons(team)), env.count(`SELECT count(*) FROM person_distinct_ids`); persons != 19 || ids != 21 {
		t.Fatalf("%d persons and %d distinct ids, want 19 (one merged away) and 21", persons, ids)
	}
}

// The scenarios again, over a distinct-id cache of two ids: nearly every distinct id an
// event names is read back from the database, by the Writer and by the lookups.
func TestIdentityTinyDistinctCache(t *testing.T) {
	for _, scenario := range []struct {
		name string
		test func(*testing.T)
	}{
		{"SetPrecedence", TestIdentitySetPrecedence},
		{"Identify", TestIdentityIdentify},
		{"AliasDirection", TestIdentityAliasDirection},
		{"MergeConflicts", TestIdentityMergeConflicts},
		{"IllegalIDs", TestIdentityIllegalIDs},
		{"AlreadyIdentified", TestIdentityAlreadyIdentified},
		{"Personless", TestIdentityPersonless},
		{"Groups", TestIdentityGroups},
		{"HistoricalOrder", TestIdentityHistoricalOrder},
		{"Restart", TestIdentityRestart},
		{"RestartStoredIDs", TestIdentityRestartStoredIDs},
		{"IllegalAliasTarget", TestIdentityIllegalAliasTarget},
		{"ProjectsApart", TestIdentityProjectsApart},
		{"Randomized", TestIdentityRandomized},
		{"LookupPersonProperties", TestLookupPersonProperties},
		{"LookupRestart", TestLookupRestart},
		{"LookupRandomized", TestLookupRandomized},
		{"LookupBatchedMisses", TestLookupBatchedMisses},
		{"LookupConcurrent", TestLookupConcurrent},
	} {
		t.Run(scenario.name, func(t *testing.T) {
			distinctCacheSize = 2
			defer func() { distinctCacheSize = 0 }()
			scenario.test(t)
		})
	}
}

// The events of a merged person, and the personless events of an id identified into a
// known person, count for that person through person_overrides; the Writer's squash
// then writes that person into the events themselves, empties the table and gives the
// project a new data version.
func TestIdentityOverridesSquash(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{SquashInterval: time.Hour}) // the first commit's squash finds none
	env.send(event{Name: "signed up", DistinctID: "user"}, event{Name: "opened", DistinctID: "laptop"},
		event{Name: "pageview", DistinctID: "visitor", Personless: true})
	env.send(event{Name: "$identify", DistinctID: "user", AnonDistinctID: "visitor"},
		event{Name: "$merge_dangerously", DistinctID: "user", Alias: "laptop"})
	user := env.wantPerson("user", `[laptop user visitor] {} identified`)
	const (
		stored = `SELECT count(DISTINCT person_id) FROM events`
		now    = `SELECT count(DISTINCT coalesce(o.person_id, e.person_id)) FROM events e
			LEFT JOIN person_overrides o ON o.team_id = e.team_id AND o.old_person_id = e.person_id`
	)
	if overrides, persons, counted := env.count(`SELECT count(*) FROM person_overrides`), env.count(stored), env.count(now); overrides != 2 || persons != 3 || counted != 1 {
		t.Fatalf("before the squash: %d overrides, events of %d persons counting for %d, want 2, 3, 1", overrides, persons, counted)
	}

	env.cfg.SquashInterval = time.Nanosecond
	env.restart()
	env.send(event{Name: "later", DistinctID: "visitor"}) // the squash follows the commit
	// The commit and the squash each give the project a new data version: the events'
	// own person_id changed, so a result cached before the squash is not current.
	for deadline := time.Now().Add(10 * time.Second); env.count(`SELECT count(*) FROM person_overrides`) > 0 ||
		env.w.Queries().DataVersion(team) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the overrides were not squashed within 10 s (data version %d)", env.w.Queries().DataVersion(team))
		}
	}
	if persons, counted := env.count(stored), env.count(now); persons != 1 || counted != 1 {
		t.Fatalf("after the squash: events of %d persons counting for %d, want 1", persons, counted)
	}
	if n := env.count(`SELECT count(*) FROM events WHERE person_id = ?::UUID`, user.ID.String()); n != 6 {
		t.Fatalf("%d events of person %s, want all 6", n, user.ID)
	}
}
