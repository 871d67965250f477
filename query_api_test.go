package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestQueryAPI sends events through the capture listener and reads them back through
// POST /api/projects/{id}/query/: each query kind, its errors, its authorization.
func TestQueryAPI(t *testing.T) {
	env := newIdentityEnv(t)
	env.at = time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	env.send(false,
		ev("$pageview", "u1", `"$current_url":"https://example.com/pricing","$browser":"Chrome"`),
		ev("$pageview", "u2", `"$current_url":"https://example.com/docs","$browser":"Safari"`),
		ev("signed up", "u1", `"plan":"pro"`),
	)
	path := fmt.Sprintf("%s/api/projects/%d/query/", env.s.adminURL, env.boot.ProjectID)
	query := func(key, body string) (int, map[string]any) {
		t.Helper()
		status, text := request(t, "POST", path, key, body)
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("%s: %v: %s", body, err, text)
		}
		return status, out
	}
	key := env.boot.PersonalAPIKey

	status, out := query(key, `{"query": {"kind": "HogQLQuery", "query": "SELECT properties.$current_url, count() FROM events WHERE event = '$pageview' GROUP BY 1 ORDER BY 1"}}`)
	if status != 200 || fmt.Sprint(out["results"]) != "[[https://example.com/docs 1] [https://example.com/pricing 1]]" ||
		fmt.Sprint(out["columns"]) != "[properties.$current_url count()]" || out["hasMore"] != false {
		t.Fatalf("HogQL: %d %v", status, out)
	}
	status, out = query(key, `{"query": {"kind": "EventsQuery", "select": ["event", "distinct_id", "properties.$browser"],
		"properties": [{"key": "$browser", "value": "Chrome", "operator": "exact"}], "orderBy": ["timestamp ASC"]}}`)
	if status != 200 || fmt.Sprint(out["results"]) != "[[$pageview u1 Chrome]]" || fmt.Sprint(out["columns"]) != "[event distinct_id properties.$browser]" {
		t.Fatalf("EventsQuery: %d %v", status, out)
	}
	// PostHog's events table: its default columns, "-- label" and all, in its DataTableNode.
	status, out = query(key, `{"query": {"kind": "DataTableNode", "source": {"kind": "EventsQuery", "select": ["*", "event",
		"person_display_name -- Person", "coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen",
		"properties.$lib", "timestamp"], "orderBy": ["timestamp ASC"], "after": "-1d"}}}`)
	rows, _ := out["results"].([]any)
	if status != 200 || len(rows) != 3 || fmt.Sprint(out["columns"]) != "[uuid event properties timestamp distinct_id person_id event "+
		"person_display_name -- Person coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen properties.$lib timestamp]" {
		t.Fatalf("EventsQuery with PostHog's default columns: %d %v", status, out)
	}
	if row := rows[0].([]any); row[6] != "$pageview" || row[8] != "https://example.com/pricing" ||
		fmt.Sprint(row[7].(map[string]any)["display_name"]) != "u1" {
		t.Fatalf("EventsQuery with PostHog's default columns, first row: %v", row)
	}
	status, out = query(key, `{"query": {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "$pageview", "math": "total"}],
		"interval": "day", "dateRange": {"date_from": "-1d"}, "breakdownFilter": {"breakdown": "$browser"}}}`)
	results, _ := out["results"].([]any)
	if status != 200 || len(results) != 2 || out["timezone"] != "UTC" {
		t.Fatalf("TrendsQuery: %d %v", status, out)
	}
	first := results[0].(map[string]any)
	if first["count"] != 1.0 || first["label"] != "Chrome" || len(first["data"].([]any)) != 2 || len(first["labels"].([]any)) != 2 {
		t.Fatalf("TrendsQuery line %v", first)
	}

	// The project's time zone moves the day boundaries.
	if _, err := env.s.warehouse.DB().Exec(`UPDATE meta.projects SET timezone = 'Asia/Tokyo' WHERE id = ?`, env.boot.ProjectID); err != nil {
		t.Fatal(err)
	}
	status, out = query(key, `{"query": {"kind": "TrendsQuery", "series": [{"event": null}], "dateRange": {"date_from": "-1d"}}}`)
	if status != 200 || out["timezone"] != "Asia/Tokyo" {
		t.Fatalf("TrendsQuery in Tokyo: %d %v", status, out)
	}

	// Refusals are 400s in the flat shape, saying why.
	for _, c := range []struct{ body, attr, detail string }{
		{`{"query": {"kind": "HogQLQuery", "query": "SELECT * FROM read_csv('/etc/passwd')"}}`, "query", "read_csv is not allowed"},
		{`{"query": {"kind": "HogQLQuery", "query": "DROP TABLE events"}}`, "query", "only SELECT queries"},
		{`{"query": {"kind": "HogQLQuery", "query": "SELECT 1; SELECT 2"}}`, "query", "exactly one SELECT"},
		{`{"query": {"kind": "HogQLQuery", "query": "SELECT * REPLACE ((SELECT string_agg(distinct_id, ',') FROM \"hedge\".main.events WHERE team_id <> 1) AS event) FROM events"}}`,
			"query", "tables are read by name alone"},
		{`{"query": {"kind": "HogQLQuery", "query": "SELECT * FROM (WITH \"/etc/hostname\" AS (SELECT 1) SELECT 1) s, \"/etc/hostname\""}}`,
			"query", "letters, digits and _ only"},
		{`{"query": {"kind": "EventsQuery", "select": ["* REPLACE (current_setting('memory_limit') AS event)"]}}`, "query", "current_setting is not allowed"},
		{`{"query": {"kind": "EventsQuery", "select": ["event"], "where": ["1=1) OR (1=1"]}}`, "query", "must be one HogQL expression"},
		{`{"query": {"kind": "HogQLQuery"}}`, "query__query", "required"},
		{`{"query": {"kind": "EventsQuery", "limit": 20000}}`, "query", "limit must be between"},
		{`{"query": {"kind": "EventsQuery", "limit": "many"}}`, "query__limit", "valid integer"},
		{`{"query": {"kind": "TrendsQuery", "series": [{"math": "weekly_active"}]}}`, "query", "math must be"},
		{`{"query": {"kind": "FunnelsQuery"}}`, "query__kind", "not a valid choice"},
		{`{}`, "query", "required"},
	} {
		status, out := query(key, c.body)
		if status != 400 || out["type"] != "validation_error" || out["attr"] != c.attr || !strings.Contains(fmt.Sprint(out["detail"]), c.detail) {
			t.Fatalf("%s: %d %v, want 400 on %s saying %q", c.body, status, out, c.attr, c.detail)
		}
	}

	// Authorization: no key, a key without query:read, a project of another organization.
	if status, _ := query("", `{"query": {"kind": "HogQLQuery", "query": "SELECT 1"}}`); status != 401 {
		t.Fatalf("no key: %d", status)
	}
	db := env.s.warehouse.DB()
	var userID int64
	db.QueryRow(`SELECT user_id FROM meta.memberships LIMIT 1`).Scan(&userID)
	if _, err := db.Exec(`UPDATE meta.personal_api_keys SET scopes = '["insight:read"]'`); err != nil {
		t.Fatal(err)
	}
	if status, out := query(key, `{"query": {"kind": "HogQLQuery", "query": "SELECT 1"}}`); status != 403 || !strings.Contains(fmt.Sprint(out["detail"]), "query:read") {
		t.Fatalf("without query:read: %d %v", status, out)
	}
	db.Exec(`UPDATE meta.personal_api_keys SET scopes = '["*"]'`)
	status, _ = request(t, "POST", fmt.Sprintf("%s/api/projects/%d/query/", env.s.adminURL, env.boot.ProjectID+1000), key, `{"query": {"kind": "HogQLQuery", "query": "SELECT 1"}}`)
	if status != 404 {
		t.Fatalf("a project that is not the key's: %d", status)
	}
}
