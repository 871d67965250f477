package warehouse

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// queryFixture is a warehouse holding a known set of events for project 1, and one
// event of project 2 that no query of project 1 may see.
type queryFixture struct {
	w   *Warehouse
	now time.Time
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func newQueryFixture(t *testing.T, cfg Config) *queryFixture {
	t.Helper()
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), cfg)
	t.Cleanup(func() { w.Close() })
	e := func(team int64, name, distinctID, ts, props string) Event {
		return Event{UUID: uuid.Must(uuid.NewV7()), TeamID: team, Name: name, DistinctID: distinctID, Timestamp: at(ts), Properties: props}
	}
	events := []Event{
		e(1, "$pageview", "u1", "2026-11-02T13:00:00Z", `{"$current_url":"https://example.com/1","$browser":"Chrome","n":5}`),
		e(1, "$pageview", "u2", "2026-11-02T23:30:00Z", `{"$browser":"Safari","n":10}`),
		e(1, "$pageview", "u1", "2026-11-03T04:30:00Z", `{"$browser":"Chrome","n":7}`), // 2 Nov 23:30 in New York
		e(1, "signed up", "u2", "2026-11-08T12:00:00Z", `{"plan":"pro"}`),              // a Sunday
		e(1, "$pageview", "u3", "2026-11-09T12:00:00Z", `{"$browser":"Firefox","$groups":{"company":"acme"}}`),
		e(1, "$pageview", "u3", "2026-12-01T04:30:00Z", `{}`), // 30 Nov 23:30 in New York (UTC-5)
		e(2, "$pageview", "stranger", "2026-11-02T13:00:00Z", `{"secret":"project 2"}`),
	}
	events[3].Set = `{"email":"u2@example.com","plan":"pro"}`
	events[4].Groups = `{"company":"acme"}`
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	return &queryFixture{w: w, now: at("2026-12-05T00:00:00Z")}
}

var (
	utc     = Scope{Team: 1, Timezone: "UTC", WeekStartDay: 1}
	newYork = Scope{Team: 1, Timezone: "America/New_York", WeekStartDay: 1}
)

func (f *queryFixture) hogql(t *testing.T, scope Scope, query string) (*Result, error) {
	t.Helper()
	return f.w.Queries().HogQL(context.Background(), scope, query)
}

// TestHogQLIsolation: a project's query reads its own events, persons and groups and
// nothing else: no other project's rows, no file, no setting, no other table, no write.
func TestHogQLIsolation(t *testing.T) {
	f := newQueryFixture(t, Config{})
	refused := func(query, why string) {
		t.Helper()
		result, err := f.hogql(t, utc, query)
		var qe *QueryError
		if !errors.As(err, &qe) {
			t.Fatalf("%s\n%q was not refused: result %v, err %v", why, query, result, err)
		}
		if strings.Contains(qe.Detail, "project 2") {
			t.Fatalf("the refusal of %q leaks data: %s", query, qe.Detail)
		}
	}
	refused(`SELECT * FROM read_csv('/etc/passwd')`, "a file through a table function")
	refused(`SELECT * FROM read_csv_auto('/etc/passwd')`, "a file through a table function")
	refused(`SELECT * FROM '/etc/passwd'`, "a file by name")
	refused(`SELECT * FROM read_text('/etc/hostname')`, "a file as text")
	refused(`SELECT * FROM query('SELECT * FROM events')`, "SQL inside a table function")
	refused(`COPY events TO '/tmp/leak.csv'`, "COPY")
	refused(`COPY (SELECT * FROM events) TO '/tmp/leak.csv'`, "COPY of a query")
	refused(`ATTACH '/tmp/other.duckdb' AS other`, "ATTACH")
	refused(`PRAGMA database_list`, "PRAGMA")
	refused(`SET threads = 1`, "SET")
	refused(`SELECT current_setting('memory_limit')`, "a setting")
	refused(`SELECT * FROM duckdb_settings()`, "settings as a table")
	refused(`SELECT getvariable('x')`, "variables")
	refused(`SELECT 1; SELECT 2`, "two statements")
	refused(`SELECT 1; DROP TABLE events`, "a write after a read")
	refused(`SELECT 1 /* hide */; DELETE FROM events`, "a write behind a comment")
	refused("SELECT 1 -- no\n; INSERT INTO events SELECT * FROM events", "a write behind a line comment")
	refused(`DELETE FROM events`, "DELETE")
	refused(`UPDATE events SET event = 'x'`, "UPDATE")
	refused(`INSERT INTO events SELECT * FROM events`, "INSERT")
	refused(`CREATE TABLE x AS SELECT 1`, "CREATE")
	refused(`SELECT * FROM main.events`, "the table under its schema")
	refused(`SELECT * FROM hedge.main.events`, "the table under its catalog")
	refused(`SELECT * FROM ingestion_warnings`, "another table")
	refused(`SELECT * FROM person_distinct_ids`, "another table")
	refused(`SELECT * FROM meta.personal_api_keys`, "the metadata")
	refused(`SELECT * FROM personal_api_keys`, "the metadata unqualified")
	refused(`SELECT * FROM information_schema.tables`, "the catalog")
	refused(`SELECT * FROM duckdb_tables()`, "the catalog as a function")
	refused(`WITH ingestion_warnings AS (SELECT * FROM ingestion_warnings) SELECT * FROM ingestion_warnings`, "a CTE named after a real table")
	refused(`WITH events AS (SELECT * FROM events) SELECT * FROM events`, "a CTE named events")
	refused(`SELECT * FROM events AT (VERSION => 1)`, "time travel")
	refused(`SELECT $1`, "a parameter")
	refused(`SELECT * FROM range(10) r, glob('*')`, "glob")

	// Project 1 sees its 6 events and never project 2's.
	result, err := f.hogql(t, utc, `SELECT count(*), count(*) FILTER (WHERE properties LIKE '%project 2%') FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(result.Results) != "[[6 0]]" {
		t.Fatalf("project 1 counts %v", result.Results)
	}
	for _, query := range []string{
		`SELECT count(*) FROM events WHERE distinct_id = 'stranger'`,
		`WITH x AS (SELECT * FROM events) SELECT count(*) FROM x WHERE distinct_id = 'stranger'`,
		`SELECT count(*) FROM (SELECT * FROM events UNION ALL SELECT * FROM events) WHERE distinct_id = 'stranger'`,
		`SELECT count(*) FROM persons p JOIN events e ON e.person_id = p.id WHERE e.distinct_id = 'stranger'`,
	} {
		result, err := f.hogql(t, utc, query)
		if err != nil || fmt.Sprint(result.Results) != "[[0]]" {
			t.Fatalf("%s: %v %v", query, result, err)
		}
	}
	// Project 2 sees only its own.
	if result, err := f.hogql(t, Scope{Team: 2}, `SELECT distinct_id FROM events`); err != nil || fmt.Sprint(result.Results) != "[[stranger]]" {
		t.Fatalf("project 2: %v %v", result, err)
	}
}

func TestHogQLForms(t *testing.T) {
	f := newQueryFixture(t, Config{})
	f2 := func(query, want string) {
		t.Helper()
		result, err := f.hogql(t, utc, query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if got := fmt.Sprint(result.Results); got != want {
			t.Fatalf("%s\n got %s\nwant %s", query, got, want)
		}
	}
	// PostHog's forms and DuckDB's own give the same answers.
	f2(`SELECT count() FROM events`, "[[6]]")
	f2(`SELECT count(*) FROM events`, "[[6]]")
	f2(`SELECT properties.$current_url FROM events WHERE properties.$current_url IS NOT NULL`, "[[https://example.com/1]]")
	f2(`SELECT properties->>'$current_url' FROM events WHERE properties->>'$current_url' IS NOT NULL`, "[[https://example.com/1]]")
	f2(`SELECT e.properties.$browser AS b, count() FROM events e WHERE event = '$pageview' GROUP BY b ORDER BY b NULLS LAST`,
		"[[Chrome 2] [Firefox 1] [Safari 1] [<nil> 1]]")
	f2(`SELECT sum(toFloat(properties.n)) FROM events`, "[[22]]")
	f2(`SELECT uniq(distinct_id) FROM events`, "[[3]]")
	f2(`SELECT toDate(toStartOfDay(timestamp)) AS day, count() FROM events GROUP BY day ORDER BY day LIMIT 2`,
		"[[2026-11-02 2] [2026-11-03 1]]")
	f2(`SELECT person.properties.email FROM events WHERE event = 'signed up'`, "[[u2@example.com]]")
	f2(`SELECT 'properties.$not_rewritten_in_a_string'`, "[[properties.$not_rewritten_in_a_string]]")
	f2(`SELECT count(*) FROM persons`, "[[3]]")
	f2(`SELECT group_key FROM groups`, "[]") // $groups never creates a group
	f2(`WITH daily AS (SELECT distinct_id, row_number() OVER (PARTITION BY distinct_id ORDER BY timestamp) AS n FROM events)
		SELECT distinct_id, max(n) FROM daily GROUP BY ALL ORDER BY 1`, "[[u1 2] [u2 2] [u3 2]]")
	f2(`SELECT list_transform([1, 2], x -> x * 2)`, "[[[2 4]]]")
	f2(`SELECT count(*) FROM range(5)`, "[[5]]")

	// Types and values come back JSON-ready.
	result, err := f.hogql(t, utc, `SELECT uuid, timestamp, person_id FROM events ORDER BY timestamp LIMIT 1`)
	if err != nil {
		t.Fatal(err)
	}
	row := result.Results[0]
	if _, err := uuid.Parse(row[0].(string)); err != nil || row[1] != "2026-11-02T13:00:00Z" || fmt.Sprint(result.Types) != "[UUID TIMESTAMPTZ UUID]" {
		t.Fatalf("row %v types %v", row, result.Types)
	}
}

func TestHogQLLimits(t *testing.T) {
	f := newQueryFixture(t, Config{Query: QueryLimits{Timeout: 200 * time.Millisecond, MaxRows: 100}})
	_, err := f.hogql(t, utc, `SELECT count(*) FROM range(100000000000)`)
	var qe *QueryError
	if !errors.As(err, &qe) || !strings.Contains(qe.Detail, "time limit") {
		t.Fatalf("a long query: %v", err)
	}
	if _, err := f.hogql(t, utc, `SELECT * FROM range(101)`); !errors.As(err, &qe) || !strings.Contains(qe.Detail, "more than 100 rows") {
		t.Fatalf("too many rows: %v", err)
	}
	if result, err := f.hogql(t, utc, `SELECT * FROM range(100)`); err != nil || len(result.Results) != 100 {
		t.Fatalf("100 rows: %v", err)
	}
	// A query that is wrong says why, as DuckDB sees it.
	if _, err := f.hogql(t, utc, `SELECT no_such_column FROM events`); !errors.As(err, &qe) || !strings.Contains(qe.Detail, "no_such_column") {
		t.Fatalf("a wrong query: %v", err)
	}
}

func TestEventsQuery(t *testing.T) {
	f := newQueryFixture(t, Config{})
	run := func(eq EventsQuery) *Result {
		t.Helper()
		result, err := f.w.Queries().Events(context.Background(), utc, eq, f.now)
		if err != nil {
			t.Fatalf("%+v: %v", eq, err)
		}
		return result
	}
	names := func(r *Result) string {
		var out []string
		for _, row := range r.Results {
			out = append(out, fmt.Sprint(row...))
		}
		return strings.Join(out, "|")
	}
	all := EventsQuery{After: "all", Select: []string{"event", "distinct_id"}}
	if got := names(run(all)); got != "$pageviewu3|$pageviewu3|signed upu2|$pageviewu1|$pageviewu2|$pageviewu1" {
		t.Fatalf("all events, newest first: %s", got)
	}
	// The default window is the last 24 hours: none here.
	if r := run(EventsQuery{Select: []string{"event"}}); len(r.Results) != 0 {
		t.Fatalf("default window: %v", r.Results)
	}
	r := run(EventsQuery{After: "all", Select: []string{"*"}, Limit: 1})
	if fmt.Sprint(r.Columns) != "[uuid event properties timestamp distinct_id person_id]" || len(r.Results) != 1 || !r.HasMore {
		t.Fatalf("select *: columns %v, %d rows, hasMore %v", r.Columns, len(r.Results), r.HasMore)
	}
	for _, c := range []struct {
		name string
		eq   EventsQuery
		want string
	}{
		{"event", EventsQuery{Event: "signed up"}, "u2"},
		{"exact", EventsQuery{Properties: []PropertyFilter{{Key: "$browser", Value: "Chrome"}}}, "u1|u1"},
		{"exact list", EventsQuery{Properties: []PropertyFilter{{Key: "$browser", Value: []any{"Safari", "Firefox"}, Operator: "exact"}}}, "u3|u2"},
		{"exact number", EventsQuery{Properties: []PropertyFilter{{Key: "n", Value: 10.0}}}, "u2"},
		{"is_not", EventsQuery{Properties: []PropertyFilter{{Key: "$browser", Value: "Chrome", Operator: "is_not"}}}, "u3|u3|u2|u2"},
		{"icontains", EventsQuery{Properties: []PropertyFilter{{Key: "$current_url", Value: "EXAMPLE.com", Operator: "icontains"}}}, "u1"},
		{"not_icontains", EventsQuery{Properties: []PropertyFilter{{Key: "$browser", Value: "hrom", Operator: "not_icontains"}}}, "u3|u3|u2|u2"},
		{"regex", EventsQuery{Properties: []PropertyFilter{{Key: "$browser", Value: "^(Saf|Fire)", Operator: "regex"}}}, "u3|u2"},
		{"gt", EventsQuery{Properties: []PropertyFilter{{Key: "n", Value: 5.0, Operator: "gt"}}}, "u1|u2"},
		{"lte", EventsQuery{Properties: []PropertyFilter{{Key: "n", Value: "7", Operator: "lte"}}}, "u1|u1"},
		{"is_set", EventsQuery{Properties: []PropertyFilter{{Key: "n", Operator: "is_set"}}}, "u1|u2|u1"},
		{"is_not_set", EventsQuery{Properties: []PropertyFilter{{Key: "$browser", Operator: "is_not_set"}}}, "u3|u2"},
		{"person property", EventsQuery{Properties: []PropertyFilter{{Key: "email", Value: "u2@example.com", Type: "person"}}}, "u2|u2"},
		{"where", EventsQuery{Where: []string{"properties.$browser = 'Chrome'", "timestamp > '2026-11-03'"}}, "u1"},
		{"after and before", EventsQuery{After: "2026-11-02T20:00:00Z", Before: "2026-11-08"}, "u1|u2"},
		{"order", EventsQuery{OrderBy: []string{"timestamp ASC"}, Limit: 2}, "u1|u2"},
		{"offset", EventsQuery{OrderBy: []string{"timestamp ASC"}, Limit: 2, Offset: 4}, "u3|u3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eq := c.eq
			if eq.After == "" {
				eq.After = "all"
			}
			eq.Select = []string{"distinct_id"}
			if got := names(run(eq)); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
	for _, bad := range []EventsQuery{
		{Limit: 10001}, {Offset: -1}, {After: "yesterday-ish"},
		{Properties: []PropertyFilter{{Key: "n", Operator: "gt", Value: "many"}}},
		{Properties: []PropertyFilter{{Key: "n", Operator: "sounds_like", Value: "x"}}},
		{Select: []string{"read_csv('x')"}},
		{Where: []string{"1=1) UNION SELECT * FROM ingestion_warnings --"}},
	} {
		var qe *QueryError
		if _, err := f.w.Queries().Events(context.Background(), utc, bad, f.now); !errors.As(err, &qe) {
			t.Fatalf("%+v was accepted: %v", bad, err)
		}
	}
}

func TestTrendsQuery(t *testing.T) {
	f := newQueryFixture(t, Config{})
	trend := func(scope Scope, tq TrendsQuery) *TrendsResult {
		t.Helper()
		result, err := f.w.Queries().Trends(context.Background(), scope, tq, f.now)
		if err != nil {
			t.Fatalf("%+v: %v", tq, err)
		}
		return result
	}
	pageviews := "$pageview"
	series := func(math string) []TrendsSeries { return []TrendsSeries{{Event: &pageviews, Math: math}} }
	dates := func(from, to string) (tq TrendsQuery) {
		tq.DateRange.DateFrom, tq.DateRange.DateTo = from, to
		return tq
	}
	line := func(r *TrendsResult) string {
		var parts []string
		for i, d := range r.Results[0].Days {
			if r.Results[0].Data[i] != 0 {
				parts = append(parts, fmt.Sprintf("%s=%g", d, r.Results[0].Data[i]))
			}
		}
		return strings.Join(parts, " ")
	}

	// Days in UTC and in New York: the 04:30 UTC pageview is on the 2nd in New York.
	tq := dates("2026-11-02", "2026-11-03")
	tq.Series = series("total")
	r := trend(utc, tq)
	if got := line(r); got != "2026-11-02=2 2026-11-03=1" || len(r.Results[0].Days) != 2 || r.Results[0].Count != 3 {
		t.Fatalf("days in UTC: %s (%d days)", got, len(r.Results[0].Days))
	}
	if r.Results[0].Labels[0] != "2-Nov-2026" || r.Results[0].Label != "$pageview" || r.Results[0].Action.Math != "total" {
		t.Fatalf("line %+v", r.Results[0])
	}
	if got := line(trend(newYork, tq)); got != "2026-11-02=3" {
		t.Fatalf("days in New York: %s", got)
	}
	// Hours.
	tq.Interval = "hour"
	if got := line(trend(utc, tq)); got != "2026-11-02 13:00:00=1 2026-11-02 23:00:00=1 2026-11-03 04:00:00=1" {
		t.Fatalf("hours: %s", got)
	}
	// Weeks start on Monday or Sunday: Sunday the 8th and Monday the 9th.
	tq = dates("2026-11-01", "2026-11-15")
	tq.Series, tq.Interval = []TrendsSeries{{Math: "total"}}, "week" // every event
	if got := line(trend(utc, tq)); got != "2026-11-02=4 2026-11-09=1" {
		t.Fatalf("weeks from Monday: %s", got)
	}
	sunday := utc
	sunday.WeekStartDay = 0
	if got := line(trend(sunday, tq)); got != "2026-11-01=3 2026-11-08=2" {
		t.Fatalf("weeks from Sunday: %s", got)
	}
	// Months: the 04:30 UTC pageview of 1 December is November's in New York.
	tq = dates("2026-11-01", "2026-12-31")
	tq.Series, tq.Interval = series("total"), "month"
	if got := line(trend(utc, tq)); got != "2026-11-01=4 2026-12-01=1" {
		t.Fatalf("months in UTC: %s", got)
	}
	if got := line(trend(newYork, tq)); got != "2026-11-01=5" {
		t.Fatalf("months in New York: %s", got)
	}
	// Distinct persons, distinct groups.
	tq.Interval = "month"
	tq.Series = series("dau")
	if got := line(trend(utc, tq)); got != "2026-11-01=3 2026-12-01=1" {
		t.Fatalf("dau: %s", got)
	}
	group := 0
	tq.Series = []TrendsSeries{{Event: &pageviews, Math: "unique_group", MathGroupTypeIndex: &group}}
	if got := line(trend(utc, tq)); got != "2026-11-01=1" {
		t.Fatalf("unique_group: %s", got)
	}
	// Breakdowns by an event property and by a person property; events without it are "None".
	tq.Series, tq.Interval = series("total"), "month"
	tq.BreakdownFilter = &BreakdownFilter{Breakdown: "$browser"}
	var got []string
	for _, l := range trend(utc, tq).Results {
		got = append(got, fmt.Sprintf("%s:%g", l.Label, l.Count))
	}
	if strings.Join(got, " ") != "Chrome:2 Firefox:1 None:1 Safari:1" {
		t.Fatalf("breakdown by $browser: %v", got)
	}
	tq.Series = []TrendsSeries{{Math: "total"}}
	tq.BreakdownFilter = &BreakdownFilter{Breakdown: "email", BreakdownType: "person"}
	got = nil
	for _, l := range trend(utc, tq).Results {
		got = append(got, fmt.Sprintf("%s:%g", l.Label, l.Count))
	}
	if strings.Join(got, " ") != "None:4 u2@example.com:2" {
		t.Fatalf("breakdown by person email: %v", got)
	}
	// A series with no events is a line of zeros.
	nothing := "never happened"
	tq.BreakdownFilter = nil
	tq.Series = []TrendsSeries{{Event: &nothing}}
	if r := trend(utc, tq); len(r.Results) != 1 || r.Results[0].Count != 0 || len(r.Results[0].Data) != 2 {
		t.Fatalf("empty series: %+v", r.Results)
	}
}

// More than 25 breakdown values: the 25 most frequent, and the rest as Other.
func TestTrendsBreakdownOther(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	for v := range 30 {
		for range 30 - v { // value v occurs 30-v times: v0 the most
			events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "e", DistinctID: "u",
				Timestamp: at("2026-11-02T12:00:00Z"), Properties: fmt.Sprintf(`{"v":"v%02d"}`, v)})
		}
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	var tq TrendsQuery
	tq.Series = []TrendsSeries{{}}
	tq.DateRange.DateFrom, tq.DateRange.DateTo = "2026-11-02", "2026-11-02"
	tq.BreakdownFilter = &BreakdownFilter{Breakdown: "v"}
	r, err := w.Queries().Trends(context.Background(), utc, tq, at("2026-11-03T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 26 || r.Results[0].BreakdownValue != "v00" || r.Results[24].BreakdownValue != "v24" ||
		r.Results[25].BreakdownValue != "$$_posthog_breakdown_other_$$" || r.Results[25].Count != 5+4+3+2+1 {
		last := r.Results[len(r.Results)-1]
		t.Fatalf("%d lines; last %v with %g", len(r.Results), last.BreakdownValue, last.Count)
	}
}
