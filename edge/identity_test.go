package edge

import (
	"testing"

	"github.com/hedge-analytics/hedge/warehouse"
)

// TestIdentityOf: what the edge takes out of an event for the identity model, and the
// properties it stores. The Writer applies these fields and parses nothing else
// (warehouse/identity_test.go tests what it does with them):
//   - $set, $set_once and $unset are the properties' ones with the event's top-level
//     ones merged in, the top level winning;
//   - $process_person_profile: false marks the event personless: it asks nothing of
//     the identity model, and its $set, $set_once and $unset are not stored;
//   - a $groupidentify never touches the person: its $set, $set_once and $unset are
//     neither applied nor stored;
//   - ids given as numbers are taken as their JSON text; $groups and $group_set
//     that are not objects are no groups and no group properties.
func TestIdentityOf(t *testing.T) {
	f := func(name, event string, want warehouse.Event) {
		t.Helper()
		var e rawEvent
		var p rawProperties
		if err := jsonAPI.UnmarshalFromString(event, &e); err != nil {
			t.Fatal(err)
		}
		if e.Properties != nil {
			if err := jsonAPI.UnmarshalFromString(string(e.Properties), &p); err != nil {
				t.Fatal(err)
			}
		}
		if got := identityOf(name, &e, &p); got != want {
			t.Fatalf("%s %s\n got %+v\nwant %+v", name, event, got, want)
		}
	}
	f("pageview", `{"properties":{"$set":{"a":1},"$set_once":{"b":2},"$unset":["c"],"x":1}}`, warehouse.Event{
		Properties: `{"$set":{"a":1},"$set_once":{"b":2},"$unset":["c"],"x":1}`,
		Set:        `{"a":1}`, SetOnce: `{"b":2}`, Unset: `["c"]`,
	})
	// posthog-go sends $set at the top level.
	f("$identify", `{"$set":{"g":"top","h":"top"},"properties":{"$set":{"h":"props","i":"props"},"$anon_distinct_id":"anon"}}`, warehouse.Event{
		Properties: `{"$anon_distinct_id":"anon","$set":{"h":"top","i":"props","g":"top"}}`,
		Set:        `{"h":"top","i":"props","g":"top"}`, AnonDistinctID: "anon",
	})
	f("$identify", `{"properties":{"$anon_distinct_id":42}}`, warehouse.Event{
		Properties: `{"$anon_distinct_id":42}`, AnonDistinctID: "42",
	})
	f("$create_alias", `{"properties":{"alias":"account","$groups":{"company":"c1","team":7}}}`, warehouse.Event{
		Properties: `{"alias":"account","$groups":{"company":"c1","team":7}}`, Alias: "account", Groups: `{"company":"c1","team":7}`,
	})
	f("e", `{"properties":{"$groups":["c1"],"alias":null}}`, warehouse.Event{Properties: `{"$groups":["c1"],"alias":null}`})
	// Personless: nothing for the identity model, and no sets stored.
	f("pageview", `{"$set":{"top":1},"properties":{"$process_person_profile":false,"$set":{"a":1},"$set_once":{"b":2},"$unset":["c"],`+
		`"$anon_distinct_id":"anon","alias":"x","$groups":{"company":"c1"},"k":"v"}}`, warehouse.Event{
		Personless: true,
		Properties: `{"$process_person_profile":false,"$anon_distinct_id":"anon","alias":"x","$groups":{"company":"c1"},"k":"v"}`,
	})
	// $process_person_profile other than false is not personless.
	f("pageview", `{"properties":{"$process_person_profile":"false","$set":{"a":1}}}`, warehouse.Event{
		Properties: `{"$process_person_profile":"false","$set":{"a":1}}`, Set: `{"a":1}`,
	})
	f("$groupidentify", `{"$set":{"top":1},"properties":{"$group_type":"company","$group_key":"c1","$group_set":{"plan":"pro"},"$set":{"a":1}}}`, warehouse.Event{
		Properties: `{"$group_type":"company","$group_key":"c1","$group_set":{"plan":"pro"}}`,
		GroupType:  "company", GroupKey: "c1", GroupSet: `{"plan":"pro"}`,
	})
	f("$groupidentify", `{"properties":{"$group_type":"company","$group_key":42,"$group_set":null}}`, warehouse.Event{
		Properties: `{"$group_type":"company","$group_key":42,"$group_set":null}`, GroupType: "company", GroupKey: "42",
	})
	// $group_type and the rest mean something only on a $groupidentify.
	f("e", `{"properties":{"$group_type":"company","$group_key":"c1","$group_set":{"plan":"pro"}}}`, warehouse.Event{
		Properties: `{"$group_type":"company","$group_key":"c1","$group_set":{"plan":"pro"}}`,
	})
}
