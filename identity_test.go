package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestIdentityHTTP follows identity events end to end: posted as JSON to POST /batch/
// on the capture listener, read by the edge into what the Writer applies, and read
// back through the management API. The identity rules themselves are tested where
// they are decided: warehouse/identity_test.go (the Writer) and edge/identity_test.go
// (what the edge takes out of the JSON).
func TestIdentityHTTP(t *testing.T) {
	s := startTestServer(t, t.TempDir())
	t.Cleanup(func() { s.stop() })
	boot := *s.bootstrap
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var items []string
	// event adds an event to the batch, a second after the previous one, with its uuid
	// when given; fields is the rest of the event's JSON object.
	event := func(name, distinctID, uuid, fields string) {
		if uuid != "" {
			fields = fmt.Sprintf(`"uuid":%q,%s`, uuid, fields)
		}
		items = append(items, fmt.Sprintf(`{"event":%q,"distinct_id":%q,"timestamp":%q,%s}`,
			name, distinctID, at.Add(time.Duration(len(items))*time.Second).Format(time.RFC3339), fields))
	}
	const anonymous, personless, grouped = "0195b3c0-0000-7000-8000-000000000001", "0195b3c0-0000-7000-8000-000000000002", "0195b3c0-0000-7000-8000-000000000003"
	event("$pageview", "anon", anonymous, `"properties":{"$set_once":{"first_page":"/pricing"}}`)
	event("$pageview", "anon", personless, `"properties":{"$process_person_profile":false,"$set":{"stripped":true}}`)
	// posthog-go sends $set at the top level: merged over the properties' own.
	event("$identify", "ada", "", `"$set":{"email":"top@example.com"},"properties":{"$anon_distinct_id":"anon","$set":{"email":"props","name":"Ada"}}`)
	event("$create_alias", "ada-device", "", `"properties":{"alias":"ada"}`)
	event("$groupidentify", "ada", "", `"properties":{"$group_type":"company","$group_key":"acme","$group_set":{"plan":"pro"},"$set":{"not_for_the_person":1}}`)
	event("used feature", "ada-device", grouped, `"properties":{"$groups":{"company":"acme"}}`)
	// A personless $identify is skipped with a warning: nothing merges.
	event("$identify", "ada", "", `"properties":{"$process_person_profile":false,"$anon_distinct_id":"someone-else"}`)
	// The anonymous user's events come first, in a request of their own, as posthog-js
	// sends them before $identify: through the log, one batch's events of different
	// distinct ids are in different partitions, applied in no set order.
	for _, batch := range [][]string{items[:2], items[2:]} {
		body := fmt.Sprintf(`{"api_key":%q,"batch":[%s]}`, boot.ProjectAPIKey, strings.Join(batch, ","))
		if status, text := request(t, "POST", s.captureURL+"/batch/", "", body); status != 200 {
			t.Fatalf("batch answered %d %s", status, text)
		}
		s.waitApplied(t)
	}

	get := func(path string) string {
		t.Helper()
		status, text := request(t, "GET", fmt.Sprintf("%s/api/projects/%d%s", s.adminURL, boot.ProjectID, path), boot.PersonalAPIKey, "")
		if status != 200 {
			t.Fatalf("GET %s: %d %s", path, status, text)
		}
		return text
	}
	var persons struct {
		Count   int
		Results []struct {
			ID           string          `json:"id"`
			Name         string          `json:"name"`
			DistinctIDs  []string        `json:"distinct_ids"`
			Properties   json.RawMessage `json:"properties"`
			IsIdentified bool            `json:"is_identified"`
			CreatedAt    time.Time       `json:"created_at"`
		}
	}
	if err := json.Unmarshal([]byte(get("/persons/")), &persons); err != nil || persons.Count != 1 || len(persons.Results) != 1 {
		t.Fatalf("persons: %v %+v, want one", err, persons)
	}
	p := persons.Results[0]
	got := fmt.Sprintf("%s %v %s %v %s", p.Name, p.DistinctIDs, p.Properties, p.IsIdentified, p.CreatedAt.Format(time.RFC3339))
	if want := `top@example.com [ada ada-device anon] {"email":"top@example.com","first_page":"/pricing","name":"Ada"} true 2026-11-01T00:00:00Z`; got != want {
		t.Fatalf("person\n got %s\nwant %s", got, want)
	}
	if got, want := get("/groups_types/"), `[{"group_type":"company","group_type_index":0,"name_singular":null,"name_plural":null}]`; got != want {
		t.Fatalf("group types %s, want %s", got, want)
	}
	if got, want := get("/groups/find/?group_type_index=0&group_key=acme"),
		`{"group_type_index":0,"group_key":"acme","group_properties":{"plan":"pro"},"created_at":"2026-11-01T00:00:04Z"}`; got != want {
		t.Fatalf("group %s, want %s", got, want)
	}

	// The stored events: the personless one without its $set, yet with the person its
	// distinct id came to have; the one with $groups with its $group_0. Through the log
	// the events of "anon" and "ada" are in different partitions, applied in separate
	// commits: an event applied before the merge keeps the person it had, which the
	// merge's override maps to the merged one where queries read person_id.
	var stored struct{ Results [][]string }
	status, text := request(t, "POST", fmt.Sprintf("%s/api/projects/%d/query/", s.adminURL, boot.ProjectID), boot.PersonalAPIKey,
		fmt.Sprintf(`{"query":{"kind":"HogQLQuery","query":"SELECT uuid::String, properties::String, toString(person_id), coalesce($group_0, '') FROM events WHERE uuid IN ('%s', '%s') ORDER BY uuid"}}`, personless, grouped))
	if status != 200 || json.Unmarshal([]byte(text), &stored) != nil || len(stored.Results) != 2 {
		t.Fatalf("stored events: %d %s", status, text)
	}
	if got, want := fmt.Sprint(stored.Results), fmt.Sprintf(`[[%s {"$process_person_profile":false} %s ] [%s {"$groups":{"company":"acme"}} %s acme]]`, personless, p.ID, grouped, p.ID); got != want {
		t.Fatalf("stored events\n got %s\nwant %s", got, want)
	}
	db := s.warehouse.DB()
	var warnings string
	db.QueryRow(`SELECT string_agg(type || ' ' || event || ' ' || distinct_id, '|' ORDER BY rowid) FROM ingestion_warnings`).Scan(&warnings)
	if want := "invalid_event_when_process_person_profile_is_false $identify ada"; warnings != want {
		t.Fatalf("ingestion warnings %q, want %q", warnings, want)
	}
}
