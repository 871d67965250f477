package edge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

// decodeEvent decodes an event as decode does, and its properties: props when given,
// else the event's own.
func decodeEvent(t *testing.T, event, props string) (*rawEvent, *rawProperties) {
	t.Helper()
	var e rawEvent
	var p rawProperties
	if err := payloadJSON.UnmarshalFromString(event, &e); err != nil {
		t.Fatalf("event %s: %v", event, err)
	}
	if props == "" && e.Properties != nil {
		props = string(e.Properties)
	}
	if props != "" {
		if err := payloadJSON.UnmarshalFromString(props, &p); err != nil {
			t.Fatalf("properties %s: %v", props, err)
		}
	}
	return &e, &p
}

func TestDistinctID(t *testing.T) {
	f := func(event, props, want string) {
		t.Helper()
		e, p := decodeEvent(t, event, props)
		if got := distinctIDOf(e, p); got != want {
			t.Fatalf("distinct id of %s %s = %q, want %q", event, props, got, want)
		}
	}
	f(`{"distinct_id":"user-1"}`, ``, "user-1")
	f(`{"distinct_id":"a\"b"}`, ``, `a"b`)
	f(`{"distinct_id":"\u00e9t\u00e9"}`, ``, "été")
	f(`{"distinct_id":12345}`, ``, "12345")
	f(`{"distinct_id":-1.5}`, ``, "-1.5")
	f(`{"distinct_id":"a\u0000b"}`, ``, "a\uFFFDb")
	f(`{"distinct_id":""}`, `{"distinct_id":"from-props"}`, "from-props")
	f(`{"distinct_id":null}`, ``, "")
	f(`{"distinct_id":{"a":1}}`, ``, `{"a":1}`) // PostHog: JSON text
	f(`{"distinct_id":[1,2]}`, ``, `[1,2]`)
	f(`{"distinct_id":true}`, ``, "true")
	f(`{"$distinct_id":"dollar"}`, `{"distinct_id":"props"}`, "dollar")
	f(`{"distinct_id":"top","$distinct_id":"dollar"}`, `{"distinct_id":"props"}`, "top")
	f(`{}`, `{"distinct_id":"js-user"}`, "js-user") // posthog-js
	f(`{}`, `{"distinct_id":7}`, "7")
	f(`{"distinct_id":"`+strings.Repeat("x", 250)+`"}`, ``, strings.Repeat("x", 200))
	f(`{"distinct_id":"`+strings.Repeat("é", 250)+`"}`, ``, strings.Repeat("é", 200)) // characters, not bytes
}

func TestEventTime(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	f := func(event, props, sentAt string, want time.Time) {
		t.Helper()
		e, p := decodeEvent(t, event, props)
		sent, _ := parseTime([]byte(sentAt))
		if got := eventTime(e, p, sent, now); !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("eventTime(%s, %s, sent_at %s) = %v, want %v", event, props, sentAt, got, want)
		}
	}
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UTC()
	}
	f(`{"timestamp":"2026-11-22T03:39:11.125Z"}`, ``, ``, at("2026-11-22T03:39:11.125Z"))
	f(`{"timestamp":"2026-11-22T03:39:11.393078295Z"}`, ``, ``, at("2026-11-22T03:39:11.393078295Z")) // posthog-go
	f(`{"timestamp":"2026-11-22T04:39:11+01:00"}`, ``, ``, at("2026-11-22T03:39:11Z"))
	f(`{"timestamp":"2026-11-22T03:39:11"}`, ``, ``, at("2026-11-22T03:39:11Z"))     // no zone: UTC
	f(`{"timestamp":"2026-11-22 03:39:11.5"}`, ``, ``, at("2026-11-22T03:39:11.5Z")) // space
	f(`{"timestamp":"2026-11-22"}`, ``, ``, at("2026-11-22T00:00:00Z"))              // date
	f(`{"timestamp":1795318751}`, ``, ``, at("2026-11-22T03:39:11Z"))                // epoch seconds
	f(`{"timestamp":1795318751.5}`, ``, ``, at("2026-11-22T03:39:11.5Z"))            // with a fraction
	f(`{"timestamp":1795318751125}`, ``, ``, at("2026-11-22T03:39:11.125Z"))         // epoch milliseconds
	f(`{"timestamp":"1795318751125"}`, ``, ``, at("2026-11-22T03:39:11.125Z"))       // as a string
	f(`{"timestamp":"2023-01-15T10:00:00Z"}`, ``, ``, at("2023-01-15T10:00:00Z"))    // historical
	f(`{"timestamp":"not a time"}`, ``, ``, now)
	f(`{}`, ``, ``, now)
	f(`{"timestamp":null}`, ``, ``, now)
	// Clock skew: the client's clock is 10 minutes fast; sent_at shows by how much.
	f(`{"timestamp":"2026-11-22T12:09:00Z"}`, ``, `"2026-11-22T12:10:00Z"`, at("2026-11-22T11:59:00Z"))
	f(`{"timestamp":"2023-01-15T10:00:00Z"}`, ``, `"2026-11-22T12:00:00Z"`, at("2023-01-15T10:00:00Z"))
	f(`{"timestamp":"2026-11-22T12:09:00Z"}`, `{"$ignore_sent_at":true}`, `"2026-11-22T12:10:00Z"`, at("2026-11-22T12:09:00Z"))
	// offset (milliseconds before now) wins over everything.
	f(`{"timestamp":"2020-01-01T00:00:00Z","offset":1500}`, ``, `"2026-11-22T12:10:00Z"`, at("2026-11-22T11:59:58.5Z"))
	f(`{"offset":1e300}`, ``, ``, now.Add(-200*365*24*time.Hour)) // bounded, not overflowed
	f(`{"offset":-1e30}`, ``, ``, now)                            // far ahead: now
	// More than 23 hours ahead: now.
	f(`{"timestamp":"2026-11-23T10:59:00Z"}`, ``, ``, at("2026-11-23T10:59:00Z"))
	f(`{"timestamp":"2026-11-23T11:01:00Z"}`, ``, ``, now)
	f(`{"timestamp":"2026-11-22T12:00:00Z"}`, ``, `"2026-11-21T00:00:00Z"`, now) // skew pushes it to tomorrow
}

func TestQueryTime(t *testing.T) {
	if got := queryTime([]byte("1795318751125")); !got.Equal(time.UnixMilli(1795318751125)) {
		t.Fatalf("queryTime ms = %v", got)
	}
	for _, ignored := range []string{"1795318751", "abc", ""} { // seconds read as ms fall in 1970
		if got := queryTime([]byte(ignored)); !got.IsZero() {
			t.Fatalf("queryTime(%q) = %v, want it ignored", ignored, got)
		}
	}
}

func TestEventProperties(t *testing.T) {
	f := func(event, want string) {
		t.Helper()
		e, p := decodeEvent(t, event, "")
		sets := personSetsOf(e, p)
		got := string(eventProperties(e, &sets, false))
		if got != want {
			t.Fatalf("properties of %s\n got %s\nwant %s", event, got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("not JSON: %s", got)
		}
	}
	// No top-level sets: the properties as sent, byte for byte.
	f(`{"properties":{ "b" : 1, "a":[1,{"x":"}"}] }}`, `{ "b" : 1, "a":[1,{"x":"}"}] }`)
	f(`{}`, `{}`)
	f(`{"properties":null}`, `{}`)
	// posthog-go identify: top-level $set only.
	f(`{"properties":{"$lib":"posthog-go"},"$set":{"email":"a@b.c"}}`, `{"$lib":"posthog-go","$set":{"email":"a@b.c"}}`)
	f(`{"$set":{"email":"a@b.c"}}`, `{"$set":{"email":"a@b.c"}}`)
	// Both: merged key by key, the top level winning, order kept.
	f(`{"properties":{"$set":{"a":1,"b":2},"x":true},"$set":{"b":3,"c":4}}`, `{"x":true,"$set":{"a":1,"b":3,"c":4}}`)
	f(`{"properties":{"$set_once":{"first":"p"}},"$set_once":{"first":"top","k":"\"q\""}}`, `{"$set_once":{"first":"top","k":"\"q\""}}`)
	// $unset lists: both kept.
	f(`{"properties":{"$unset":["a"]},"$unset":["b","c"]}`, `{"$unset":["a","b","c"]}`)
	f(`{"properties":{"$unset":[]},"$unset":["b"]}`, `{"$unset":["b"]}`)
	// A top-level null changes nothing; a non-object top level replaces.
	f(`{"properties":{"$set":{"a":1}},"$set":null}`, `{"$set":{"a":1}}`)
	f(`{"properties":{"$set":{"a":1}},"$set":"odd"}`, `{"$set":"odd"}`)
	// All three at once (posthog-js surveys and identify send several).
	f(`{"properties":{"k":"v"},"$set":{"a":1},"$set_once":{"b":2},"$unset":["c"]}`,
		`{"k":"v","$set":{"a":1},"$set_once":{"b":2},"$unset":["c"]}`)
	// An escaped key is still recognised.
	f(`{"properties":{"\u0024set":{"a":1}},"$set":{"b":2}}`, `{"$set":{"a":1,"b":2}}`)
}

func TestSkipReason(t *testing.T) {
	f := func(name, distinctID, props, want string) {
		t.Helper()
		var p rawProperties
		if props != "" {
			if err := payloadJSON.UnmarshalFromString(props, &p); err != nil {
				t.Fatal(err)
			}
		}
		if got := skipReason(name, distinctID, &p); got != want {
			t.Fatalf("skipReason(%q, %q, %s) = %q, want %q", name, distinctID, props, got, want)
		}
	}
	f("e", "u", ``, "")
	f("", "u", ``, warnMissingEventName)
	f("e", "", ``, warnMissingDistinctID)
	f("survey sent", "u", `{"$survey_id":"s1","$survey_response":"yes"}`, "")
	f("survey shown", "u", `{"$survey_id":42}`, "")
	f("survey sent", "u", `{}`, warnMissingSurveyID)
	f("survey shown", "u", `{"$survey_id":""}`, warnMissingSurveyID)
	f("survey dismissed", "u", `{"$survey_id":null}`, warnMissingSurveyID)
	f("$identify", "u", `{"$process_person_profile":false}`, warnPersonlessIdentity)
	f("$create_alias", "u", `{"$process_person_profile":false}`, warnPersonlessIdentity)
	f("$merge_dangerously", "u", `{"$process_person_profile":false}`, warnPersonlessIdentity)
	f("$groupidentify", "u", `{"$process_person_profile":false}`, warnPersonlessIdentity)
	f("$identify", "u", `{"$process_person_profile":true}`, "")
	f("$pageview", "u", `{"$process_person_profile":false}`, "") // personless events are kept
}

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
		e, p := decodeEvent(t, event, "")
		if got := identityOf(name, e, p); got != want {
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
	// The ids that name a person are cut as distinct_id is: to 200 characters, NUL replaced.
	long := strings.Repeat("é", 250)
	f("$identify", `{"properties":{"$anon_distinct_id":"`+long+`"}}`, warehouse.Event{
		Properties: `{"$anon_distinct_id":"` + long + `"}`, AnonDistinctID: strings.Repeat("é", 200),
	})
	f("$create_alias", `{"properties":{"alias":"a\u0000`+long+`"}}`, warehouse.Event{
		Properties: `{"alias":"a\u0000` + long + `"}`, Alias: "a\uFFFD" + strings.Repeat("é", 198),
	})
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
