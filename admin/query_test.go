package admin

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

// TestQueryAPI reads events the Writer committed through POST
// /api/projects/{id}/query/: each query kind, its refusals, its authorization.
func TestQueryAPI(t *testing.T) {
	env := newTestEnv(t, "")
	at := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	env.ingest(t,
		warehouse.Event{Name: "$pageview", DistinctID: "u1", Timestamp: at, Properties: `{"$current_url":"https://example.com/pricing","$browser":"Chrome"}`},
		warehouse.Event{Name: "$pageview", DistinctID: "u2", Timestamp: at.Add(time.Second), Properties: `{"$current_url":"https://example.com/docs","$browser":"Safari"}`},
		warehouse.Event{Name: "signed up", DistinctID: "u1", Timestamp: at.Add(2 * time.Second), Properties: `{"plan":"pro"}`},
	)
	path := env.project + "/query/"
	query := func(key, body string) (int, map[string]any) {
		t.Helper()
		status, out, text := env.call(t, "POST", path, key, body)
		if out == nil {
			t.Fatalf("%s: answer is not a JSON object: %d %s", body, status, text)
		}
		return status, out
	}
	key := env.owner

	status, out := query(key, `{"query": {"kind": "HogQLQuery", "query": "SELECT properties.$current_url, count() FROM events WHERE event = '$pageview' GROUP BY 1 ORDER BY 1"}}`)
	if status != 200 || fmt.Sprint(out["results"]) != "[[https://example.com/docs 1] [https://example.com/pricing 1]]" ||
		fmt.Sprint(out["columns"]) != "[properties.$current_url count()]" || out["hasMore"] != false {
		t.Fatalf("HogQL: %d %v", status, out)
	}
	// PostHog's placeholders: each value is bound as a parameter, so a value that looks
	// like SQL is only compared with.
	status, out = query(key, `{"query": {"kind": "HogQLQuery", "query": "SELECT distinct_id, {n} + 1 FROM events WHERE properties.$browser = {browser} AND distinct_id <> {browser}",
		"values": {"browser": "Chrome", "n": 41}}}`)
	if status != 200 || fmt.Sprint(out["results"]) != "[[u1 42]]" {
		t.Fatalf("HogQL with values: %d %v", status, out)
	}
	status, out = query(key, `{"query": {"kind": "HogQLQuery", "query": "SELECT count() FROM events WHERE distinct_id = {id}", "values": {"id": "u1' OR '1'='1"}}}`)
	if status != 200 || fmt.Sprint(out["results"]) != "[[0]]" {
		t.Fatalf("HogQL with a value that looks like SQL: %d %v", status, out)
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

	// A funnel: u1 and u2 viewed a page, u1 signed up 2 s later.
	status, out = query(key, `{"query": {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"},
		{"kind": "EventsNode", "event": "signed up", "custom_name": "Signed up"}], "dateRange": {"date_from": "-1d"},
		"funnelsFilter": {"funnelVizType": "steps", "funnelOrderType": "ordered", "funnelWindowInterval": 1, "funnelWindowIntervalUnit": "hour"}}}`)
	steps, _ := out["results"].([]any)
	if status != 200 || len(steps) != 2 || out["timezone"] != "UTC" {
		t.Fatalf("FunnelsQuery: %d %v", status, out)
	}
	if s := steps[0].(map[string]any); s["name"] != "$pageview" || s["action_id"] != "$pageview" || s["count"] != 2.0 || s["order"] != 0.0 ||
		s["type"] != "events" || s["median_conversion_time"] != nil || fmt.Sprint(s["people"]) != "[]" {
		t.Fatalf("FunnelsQuery, first step %v", s)
	}
	if s := steps[1].(map[string]any); s["name"] != "signed up" || s["custom_name"] != "Signed up" || s["count"] != 1.0 ||
		s["average_conversion_time"] != 2.0 || s["median_conversion_time"] != 2.0 {
		t.Fatalf("FunnelsQuery, second step %v", s)
	}

	// The project's time zone moves the day boundaries (no API changes it yet).
	env.exec(t, `UPDATE meta.projects SET timezone = 'Asia/Tokyo' WHERE id = ?`, env.boot.ProjectID)
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
		{`{"query": {"kind": "HogQLQuery", "query": "SELECT {a}", "values": {"b": 1}}}`, "query", "the placeholder {a} has no value in values"},
		{`{"query": {"kind": "HogQLQuery", "query": "SELECT {a}", "values": {"a": [1]}}}`, "query", "must be a string, a number, a boolean or null"},
		{`{"query": {"kind": "EventsQuery", "limit": 20000}}`, "query", "limit must be between"},
		{`{"query": {"kind": "EventsQuery", "limit": "many"}}`, "query__limit", "valid integer"},
		{`{"query": {"kind": "TrendsQuery", "series": [{"math": "first_time_for_user"}]}}`, "query", "math must be"},
		{`{"query": {"kind": "FunnelsQuery", "series": [{"event": "$pageview"}]}}`, "query", "a funnel has from 2 to 30 steps in series, not 1"},
		{`{"query": {"kind": "FunnelsQuery", "series": [], "funnelsFilter": {"funnelWindowInterval": "long"}}}`,
			"query__funnelsFilter__funnelWindowInterval", "valid integer"},
		{`{"query": {"kind": "FunnelCorrelationQuery"}}`, "query__kind", "not a valid choice"},
		{`{}`, "query", "required"},
	} {
		status, out := query(key, c.body)
		if status != 400 || out["type"] != "validation_error" || out["attr"] != c.attr || !strings.Contains(fmt.Sprint(out["detail"]), c.detail) {
			t.Fatalf("%s: %d %v, want 400 on %s saying %q", c.body, status, out, c.attr, c.detail)
		}
	}

	// Authorization: no key, a key without query:read, a user of another organization,
	// a project that does not exist.
	const selectOne = `{"query": {"kind": "HogQLQuery", "query": "SELECT 1"}}`
	if status, _ := query("", selectOne); status != 401 {
		t.Fatalf("no key: %d", status)
	}
	_, insightsOnly := env.member(t, "reader@example.com", levelOwner, "insight:read")
	if status, out := query(insightsOnly, selectOne); status != 403 || !strings.Contains(fmt.Sprint(out["detail"]), "query:read") {
		t.Fatalf("without query:read: %d %v", status, out)
	}
	_, outsider := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	if status, _ := query(outsider, selectOne); status != 404 {
		t.Fatalf("a project of another organization: %d", status)
	}
	status, _, _ = env.call(t, "POST", fmt.Sprintf("/api/projects/%d/query/", env.boot.ProjectID+1000), key, selectOne)
	if status != 404 {
		t.Fatalf("a project that does not exist: %d", status)
	}
}

// A query that hedge's shutdown interrupts, or that comes after it, answers 503.
func TestQueryAPIShuttingDown(t *testing.T) {
	env := newTestEnv(t, "")
	env.warehouse.Queries().Stop()
	status, out, text := env.call(t, "POST", env.project+"/query/", env.owner, `{"query": {"kind": "HogQLQuery", "query": "SELECT 1"}}`)
	if status != 503 || out["code"] != "service_unavailable" || !strings.Contains(text, "shutting down") {
		t.Fatalf("a query after shutdown: %d %s", status, text)
	}
}

// A display of totals (a number, a pie, bars of totals, a table, a map) answers each
// line's aggregated_value over the whole range, as PostHog does: 300 users active on
// one to four days each are 300 unique users, not the 750 the days add up to.
func TestQueryAPITrendsAggregatedValue(t *testing.T) {
	env := newTestEnv(t, "")
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-6 * 24 * time.Hour)
	var events []warehouse.Event
	daily := 0
	for user := range 300 {
		for d := range user%4 + 1 {
			events = append(events, warehouse.Event{Name: "$pageview", DistinctID: fmt.Sprintf("user-%d", user),
				Timestamp: day.Add(time.Duration(d)*24*time.Hour + time.Duration(user)*time.Second)})
			daily++
		}
	}
	env.ingest(t, events...)
	query := func(display string) []map[string]any {
		t.Helper()
		body := fmt.Sprintf(`{"query": {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"},
			{"kind": "EventsNode", "event": "$pageview", "math": "total"}], "dateRange": {"date_from": "-7d"}, "trendsFilter": {"display": %q}}}`, display)
		out := env.must(t, 200, "POST", env.project+"/query/", env.owner, body)
		var lines []map[string]any
		for _, l := range out["results"].([]any) {
			lines = append(lines, l.(map[string]any))
		}
		if len(lines) != 2 {
			t.Fatalf("%s: %d lines, want one per series", display, len(lines))
		}
		return lines
	}
	for _, display := range []string{"BoldNumber", "ActionsPie", "ActionsBarValue", "ActionsTable", "WorldMap"} {
		lines := query(display)
		if lines[0]["aggregated_value"] != 300.0 || lines[1]["aggregated_value"] != float64(daily) {
			t.Errorf("%s: aggregated_value %v and %v, want 300 unique users and %d events", display, lines[0]["aggregated_value"], lines[1]["aggregated_value"], daily)
		}
		if fmt.Sprint(lines[0]["data"], lines[0]["days"]) != "[] []" || lines[0]["count"] != 0.0 {
			t.Errorf("%s: a total has data %v, days %v and count %v, want none, as PostHog's", display, lines[0]["data"], lines[0]["days"], lines[0]["count"])
		}
	}
	// By a breakdown of fewer values than the top 25, a value a line, and no rest.
	out := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query": {"kind": "TrendsQuery", "series": [{"event": "$pageview", "math": "dau"}],
		"dateRange": {"date_from": "-7d"}, "breakdownFilter": {"breakdown": "$browser"}, "trendsFilter": {"display": "ActionsTable"}}}`)
	if results := out["results"].([]any); len(results) != 1 || results[0].(map[string]any)["aggregated_value"] != 300.0 {
		t.Errorf("by a breakdown without a rest: %v, want one line of 300", results)
	}
	// A line per day: the daily uniques, which add up to more, and no aggregated_value.
	lines := query("ActionsLineGraph")
	if _, ok := lines[0]["aggregated_value"]; ok || lines[0]["count"] != float64(daily) || daily <= 300 {
		t.Errorf("a line: count %v (want %d), aggregated_value %v (want none)", lines[0]["count"], daily, lines[0]["aggregated_value"])
	}
}

// A query named by client_query_id is cancelled while it runs by DELETE
// .../query/{client_query_id}/, PostHog's route, by members of its project with
// query:read only: the DELETE answers 200 {"message"} and the query a 400 saying it
// was cancelled, long before its time limit. A DELETE of another project, or of a
// query not running, cancels nothing.
func TestQueryAPICancel(t *testing.T) {
	env := newTestEnv(t, "")
	// Some hours of counting: only the cancel ends it before the time limit, which
	// answers another error.
	const long = `{"client_query_id": "q-long", "query": {"kind": "HogQLQuery", "query": "SELECT count() FROM range(1000000) a, range(1000000) b WHERE a.range + b.range > 0"}}`
	answered := make(chan map[string]any, 1)
	go func() {
		_, out, _ := env.call(t, "POST", env.project+"/query/", env.owner, long)
		answered <- out
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		env.api.running.mu.Lock()
		registered := len(env.api.running.byID) == 1
		env.api.running.mu.Unlock()
		if registered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the named query never started")
		}
	}

	second := int(env.must(t, 201, "POST", env.orgPath("projects/"), env.owner, `{"name":"Second"}`)["id"].(float64))
	_, readerOfInsights := env.member(t, "insights@example.com", levelOwner, "insight:read")
	_, outsider := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	for _, c := range []struct {
		name, path, key string
		status          int
		message         string
	}{
		{"another project's", fmt.Sprintf("/api/projects/%d/query/q-long/", second), env.owner, 200, "No query with this id is running"},
		{"another id", env.project + "/query/q-other/", env.owner, 200, "No query with this id is running"},
		{"without query:read", env.project + "/query/q-long/", readerOfInsights, 403, ""},
		{"of another organization", env.project + "/query/q-long/", outsider, 404, ""},
		{"no key", env.project + "/query/q-long/", "", 401, ""},
	} {
		status, out, text := env.call(t, "DELETE", c.path, c.key, "")
		if status != c.status || !strings.Contains(fmt.Sprint(out["message"]), c.message) {
			t.Fatalf("a DELETE %s: %d %s, want %d %q", c.name, status, text, c.status, c.message)
		}
	}
	select {
	case out := <-answered:
		t.Fatalf("the query ended before it was cancelled: %v", out)
	default:
	}

	if out := env.must(t, 200, "DELETE", env.project+"/query/q-long/", env.owner, ""); out["message"] != "Query cancelled" {
		t.Fatalf("the DELETE answered %v", out)
	}
	if out := <-answered; out["type"] != "validation_error" || out["code"] != "query_was_cancelled" || !strings.Contains(fmt.Sprint(out["detail"]), "cancelled") {
		t.Fatalf("the cancelled query answered %v", out)
	}
	if out := env.must(t, 200, "DELETE", env.project+"/query/q-long/", env.owner, ""); !strings.Contains(fmt.Sprint(out["message"]), "No query") {
		t.Fatalf("a DELETE after the query ended answered %v", out)
	}

	// An id longer than any client's is refused, and a named query that ends on its
	// own leaves nothing behind.
	status, out, _ := env.call(t, "POST", env.project+"/query/", env.owner,
		`{"client_query_id": "`+strings.Repeat("x", 201)+`", "query": {"kind": "HogQLQuery", "query": "SELECT 1"}}`)
	if status != 400 || out["attr"] != "client_query_id" || out["code"] != "max_length" {
		t.Fatalf("a long client_query_id: %d %v", status, out)
	}
	env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"client_query_id": "q-short", "query": {"kind": "HogQLQuery", "query": "SELECT 1"}}`)
	env.api.running.mu.Lock()
	defer env.api.running.mu.Unlock()
	if len(env.api.running.byID) != 0 || len(env.api.running.byProject) != 0 {
		t.Fatalf("the registry keeps %v %v", env.api.running.byID, env.api.running.byProject)
	}
}

// A HogQL query without a LIMIT of its own answers PostHog's default 100 rows, with
// hasMore when there were more and the limit and offset it ran with; a query's own
// LIMIT (at the top: a subquery's does not count) is kept, within --query-max-rows.
func TestQueryAPIDefaultLimit(t *testing.T) {
	env := newTestEnv(t, "")
	f := func(query string, rows int, hasMore bool, limited bool, first float64) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": map[string]any{"kind": "HogQLQuery", "query": query}})
		status, out, text := env.call(t, "POST", env.project+"/query/", env.owner, string(body))
		results, _ := out["results"].([]any)
		if status != 200 || len(results) != rows || out["hasMore"] != hasMore {
			t.Fatalf("%s: %d, %d rows, hasMore %v; want %d rows, hasMore %v: %.300s", query, status, len(results), out["hasMore"], rows, hasMore, text)
		}
		if got := results[0].([]any)[0]; got != first {
			t.Fatalf("%s: first row %v, want %v", query, got, first)
		}
		_, hasLimit := out["limit"]
		if limited && (out["limit"] != 100.0 || out["offset"] != 0.0) || !limited && (hasLimit || out["offset"] != nil) {
			t.Fatalf("%s: limit %v, offset %v", query, out["limit"], out["offset"])
		}
	}
	f("SELECT * FROM range(1000)", 100, true, true, 0)
	f("SELECT * FROM range(100)", 100, false, true, 0)
	f("SELECT * FROM range(1000) ORDER BY 1 DESC", 100, true, true, 999)
	f("SELECT * FROM range(1000) LIMIT 250", 250, false, false, 0)
	f("SELECT * FROM range(1000) LIMIT 5%", 50, false, false, 0)
	f("SELECT * FROM range(1000) OFFSET 950", 50, false, true, 950)
	f("SELECT * FROM range(1000) OFFSET 10", 100, true, true, 10)
	f("SELECT * FROM (SELECT * FROM range(1000) LIMIT 500)", 100, true, true, 0)
	f("WITH r AS (SELECT * FROM range(1000)) SELECT * FROM r ORDER BY 1", 100, true, true, 0)
	f("SELECT * FROM range(150) UNION ALL SELECT * FROM range(3)", 100, true, true, 0)
	f("FROM range(1000)", 100, true, true, 0)
	// The LIMIT goes before what ends the query: a comment, a ';'.
	f("SELECT * FROM range(1000) -- all of them", 100, true, true, 0)
	f("SELECT * FROM range(1000);", 100, true, true, 0)
	f("SELECT * FROM range(1000) ; /* the end */ -- really", 100, true, true, 0)
	f("SELECT * FROM range(1000) WHERE 'a -- b' <> '' -- ' LIMIT 1", 100, true, true, 0)
	f("SELECT * FROM range(1000) WHERE $$x$$ <> '' -- '", 100, true, true, 0)

	refused := func(query, detail string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": map[string]any{"kind": "HogQLQuery", "query": query}})
		status, out, text := env.call(t, "POST", env.project+"/query/", env.owner, string(body))
		if status != 400 || out["attr"] != "query" || !strings.Contains(fmt.Sprint(out["detail"]), detail) {
			t.Fatalf("%s: %d %s, want 400 saying %q", query, status, text, detail)
		}
	}
	// More rows than --query-max-rows under the query's own LIMIT.
	refused("SELECT * FROM range(1000000) LIMIT 200000", "the query returns more than 100000 rows: lower its LIMIT")
	// Where hedge's tokens and DuckDB's disagree on where the query ends (an E'' string
	// whose \' the tokens take for its end), the LIMIT would not be the query's: hedge
	// asks for one rather than run it unbounded.
	refused(`SELECT E'\'' FROM range(1000) -- x`, "end it with a LIMIT of its own")
}

// A column of a type hedge cannot answer (VARIANT, alone or inside a list, struct or
// map; TIME_NS; a MAP keyed by lists) is a 400 saying to cast it, not a 500, in a
// HogQL query and in an EventsQuery's select; cast, it answers.
func TestQueryAPIUnreadableTypes(t *testing.T) {
	env := newTestEnv(t, "")
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "u1", Timestamp: time.Now().UTC().Add(-time.Hour)})
	const cast = "cast it to VARCHAR or JSON"
	for _, c := range []struct{ query, detail string }{
		{"SELECT 1::VARIANT", "(VARIANT)"},
		{"SELECT 1, [1::VARIANT, 'a'::VARIANT]", "(VARIANT)"},
		{"SELECT {'a': 1, 'b': {'c': 'x'::VARIANT}}", "(VARIANT)"},
		{"SELECT map(['k'], [2::VARIANT])", "(VARIANT)"},
		{"SELECT TRY_CAST(event AS VARIANT) FROM events", "(VARIANT)"},
		{"SELECT '1:00'::TIME_NS", "type hedge cannot return:"},
		{"SELECT map([[1]], [2])", "(a MAP whose keys are lists or structs)"},
	} {
		body, _ := json.Marshal(map[string]any{"query": map[string]any{"kind": "HogQLQuery", "query": c.query}})
		status, out, text := env.call(t, "POST", env.project+"/query/", env.owner, string(body))
		if status != 400 || out["type"] != "validation_error" || out["attr"] != "query" ||
			!strings.Contains(fmt.Sprint(out["detail"]), c.detail) || !strings.Contains(fmt.Sprint(out["detail"]), cast) {
			t.Fatalf("%s: %d %s", c.query, status, text)
		}
	}
	status, out, text := env.call(t, "POST", env.project+"/query/", env.owner, `{"query": {"kind": "EventsQuery", "select": ["event", "[event::VARIANT]"]}}`)
	if status != 400 || !strings.Contains(fmt.Sprint(out["detail"]), "(VARIANT)") {
		t.Fatalf("an EventsQuery selecting a VARIANT: %d %s", status, text)
	}
	status, out, text = env.call(t, "POST", env.project+"/query/", env.owner, `{"query": {"kind": "HogQLQuery", "query": "SELECT 1::VARIANT::JSON, [2::VARIANT]::VARCHAR"}}`)
	if status != 200 || fmt.Sprint(out["results"]) != "[[1 [2]]]" {
		t.Fatalf("VARIANTs cast: %d %s", status, text)
	}
}

// The insight kinds besides trends and funnels run through the query API (the
// warehouse's tests count their answers), refuse a bad query with 400, and may be an
// insight's query.
func TestQueryInsightKinds(t *testing.T) {
	env := newTestEnv(t, "")
	key := env.boot.PersonalAPIKey
	project := fmt.Sprintf("/api/projects/%d", env.boot.ProjectID)
	pageview := `"series":[{"kind":"EventsNode","event":"$pageview"}]`
	for _, c := range []struct {
		kind, query, bad string
		check            func(results []any) bool // the answer's results
	}{
		{"StickinessQuery", pageview + `,"dateRange":{"date_from":"-3d"}`, `"series":[]`, func(r []any) bool {
			line := r[0].(map[string]any)
			return len(r) == 1 && len(line["data"].([]any)) == 4 && line["labels"].([]any)[0] == "1 day"
		}},
		{"RetentionQuery", `"retentionFilter":{"period":"Week","totalIntervals":3}`, `"retentionFilter":{"period":"Year"}`, func(r []any) bool {
			row := r[0].(map[string]any)
			return len(r) == 3 && row["label"] == "Week 0" && len(row["values"].([]any)) == 3
		}},
		{"LifecycleQuery", pageview + `,"dateRange":{"date_from":"-3d"}`, `"series":[]`, func(r []any) bool {
			line := r[3].(map[string]any)
			return len(r) == 4 && line["status"] == "dormant" && len(line["data"].([]any)) == 4
		}},
		{"PathsQuery", `"pathsFilter":{"stepLimit":3}`, `"pathsFilter":{"stepLimit":99}`, func(r []any) bool { return r != nil }},
	} {
		status, body, text := env.call(t, "POST", project+"/query/", key, `{"query":{"kind":"`+c.kind+`",`+c.query+`}}`)
		if results, ok := body["results"].([]any); status != 200 || !ok || !c.check(results) {
			t.Errorf("%s: %d %s", c.kind, status, text)
		}
		if status, _, text := env.call(t, "POST", project+"/query/", key, `{"query":{"kind":"`+c.kind+`",`+c.bad+`}}`); status != 400 {
			t.Errorf("%s with %s: %d %s, want 400", c.kind, c.bad, status, text)
		}
		if status, _, text := env.call(t, "POST", project+"/insights/", key, `{"name":"n","query":{"kind":"`+c.kind+`",`+c.query+`}}`); status != 201 {
			t.Errorf("a %s insight: %d %s", c.kind, status, text)
		}
	}
}

// A HogQL sum answers a number, as ClickHouse's does, though DuckDB sums integers
// into a 128-bit HUGEINT: a window's running sum and a plain one.
func TestQueryAPIHogQLSums(t *testing.T) {
	env := newTestEnv(t, "")
	now := time.Now().UTC()
	for i := range 3 {
		env.ingest(t, warehouse.Event{Name: "sum test", DistinctID: fmt.Sprint("u", i), Timestamp: now, Properties: fmt.Sprintf(`{"n": %d}`, i+1)})
	}
	for query, want := range map[string]float64{
		`SELECT sum(c) OVER () FROM (SELECT count() AS c FROM events WHERE event = 'sum test')`: 3,
		`SELECT sum(toInt(properties.n)) FROM events WHERE event = 'sum test'`:                  6,
	} {
		out := env.must(t, 200, "POST", env.project+"/query/", env.owner, fmt.Sprintf(`{"query": {"kind": "HogQLQuery", "query": %q}}`, query))
		if got, ok := out["results"].([]any)[0].([]any)[0].(float64); !ok || got != want {
			t.Errorf("%s answers %#v, want the number %g", query, out["results"].([]any)[0].([]any)[0], want)
		}
	}
}
