package admin

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

// uploadCohort sends a cohort's fields and a csv file as multipart/form-data.
func (env *testEnv) uploadCohort(t *testing.T, method, path string, fields map[string]string, csv string) (int, string) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	if csv != "" {
		f, err := w.CreateFormFile("csv", "people.csv")
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(csv))
	}
	w.Close()
	status, text, _ := env.do(t, method, path, env.owner, map[string]string{"Content-Type": w.FormDataContentType()}, body.String())
	return status, text
}

// cohortFixture ingests five persons and their events, counted by hand below:
//
//	person  plan  country  $pageview  signup (a day after its views)
//	u1      pro   FR       3          1
//	u2      pro   DE       2          0
//	u3      free  FR       1          1
//	u4      free  DE       4          1
//	u5      -     -        5          1
//	anon-7  -     -        1          0   (then identified as u7, who views once)
//
// and the cohorts: 1 Pro (plan = pro: u1, u2); 2 French or pro (country FR, or in 1:
// u1, u2, u3); 3 static from CSV (u3, u5, anon-7, never-seen: u3, u5, u7); 4 in 2 and
// not in 1 (u3).
func cohortFixture(t *testing.T, env *testEnv) {
	t.Helper()
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-3 * 24 * time.Hour)
	var events []warehouse.Event
	people := []struct {
		id, set      string
		views, signs int
	}{{"u1", `{"plan":"pro","country":"FR"}`, 3, 1}, {"u2", `{"plan":"pro","country":"DE"}`, 2, 0},
		{"u3", `{"plan":"free","country":"FR"}`, 1, 1}, {"u4", `{"plan":"free","country":"DE"}`, 4, 1}, {"u5", "", 5, 1}}
	for i, p := range people {
		for v := range p.views {
			events = append(events, warehouse.Event{Name: "$pageview", DistinctID: p.id, Set: p.set, Properties: `{"$session_id":"s-` + p.id + `"}`,
				Timestamp: day.Add(time.Duration(i*10+v) * time.Minute)})
		}
		for range p.signs {
			events = append(events, warehouse.Event{Name: "signup", DistinctID: p.id, Timestamp: day.Add(24*time.Hour + time.Duration(i)*time.Minute)})
		}
	}
	events = append(events, warehouse.Event{Name: "$pageview", DistinctID: "anon-7", Properties: `{"$session_id":"s-7"}`, Timestamp: day.Add(time.Hour)})
	env.ingest(t, events...)
	env.ingest(t, warehouse.Event{Name: "$identify", DistinctID: "u7", AnonDistinctID: "anon-7", Timestamp: day.Add(2 * time.Hour)},
		warehouse.Event{Name: "$pageview", DistinctID: "u7", Properties: `{"$session_id":"s-7"}`, Timestamp: day.Add(3 * time.Hour)})

	for i, body := range []string{
		`{"name":"Pro","filters":{"properties":{"type":"AND","values":[{"key":"plan","type":"person","value":["pro"],"operator":"exact"}]}}}`,
		`{"name":"French or pro","filters":{"properties":{"type":"OR","values":[{"key":"country","type":"person","value":"FR","operator":"exact"},` +
			`{"key":"id","type":"cohort","value":1}]}}}`,
	} {
		if id := env.cohort(t, body); id != int64(i+1) {
			t.Fatalf("cohort %d has id %d", i+1, id)
		}
	}
	status, text := env.uploadCohort(t, "POST", env.project+"/cohorts/", map[string]string{"name": "Listed", "is_static": "true"},
		"distinct_id\nu3\n\"u5\",extra\n\nanon-7\nnever-seen\nu3\n")
	if status != 201 || !strings.Contains(text, `"id":3`) || !strings.Contains(text, `"is_static":true`) || !strings.Contains(text, `"count":3`) {
		t.Fatalf("static cohort from a CSV: %d %s", status, text)
	}
	env.cohort(t, `{"name":"French, not pro","filters":{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":2},`+
		`{"key":"id","type":"cohort","value":1,"operator":"not_in"}]}}}`)
}

// TestQueryAPICohortFilters: trends and funnels narrowed to a property cohort, a
// nested one, a static one (whose CSV's anonymous id counts as the person it merged
// into), in and not_in, at the top level and per series; counted by hand from
// cohortFixture.
func TestQueryAPICohortFilters(t *testing.T) {
	env := newTestEnv(t, "")
	cohortFixture(t, env)
	cohort := func(id int, op string) string {
		return fmt.Sprintf(`{"type":"cohort","key":"id","value":%d,"operator":%q}`, id, op)
	}
	trend := func(math, filters, seriesFilters string) float64 {
		t.Helper()
		out := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query":{"kind":"TrendsQuery","series":[{"kind":"EventsNode","event":"$pageview","math":"`+
			math+`","properties":[`+seriesFilters+`]}],"dateRange":{"date_from":"-7d"},"properties":[`+filters+`]}}`)
		return out["results"].([]any)[0].(map[string]any)["count"].(float64)
	}
	f := func(name, math, filters, seriesFilters string, want float64) {
		t.Helper()
		if got := trend(math, filters, seriesFilters); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	f("everyone", "total", "", "", 17)
	f("in Pro", "total", cohort(1, "in"), "", 5)
	f("not in Pro", "total", cohort(1, "not_in"), "", 12)
	f("in Pro, the value a string", "total", `{"type":"cohort","key":"id","value":"1"}`, "", 5)
	f("in French or pro (nested)", "total", cohort(2, "in"), "", 6)
	f("in French, not pro (nested twice, not_in)", "total", cohort(4, "in"), "", 1)
	f("in the static list", "total", cohort(3, "in"), "", 8)
	f("not in the static list", "total", cohort(3, "not_in"), "", 9)
	f("its persons", "dau", cohort(3, "in"), "", 3)
	f("per series", "total", "", cohort(3, "in"), 8)
	f("both", "total", cohort(1, "not_in"), cohort(3, "in"), 8)

	// The other kinds read the same filters: the events of the static list's persons,
	// and the persons of Pro who viewed a page (stickiness' count).
	events := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query":{"kind":"EventsQuery","select":["count()"],"event":"$pageview","after":"-7d","properties":[`+cohort(3, "in")+`]}}`)
	if got := fmt.Sprint(events["results"]); got != "[[8]]" {
		t.Errorf("EventsQuery in the static list: %s, want [[8]]", got)
	}
	sticky := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query":{"kind":"StickinessQuery","series":[{"kind":"EventsNode","event":"$pageview"}],`+
		`"dateRange":{"date_from":"-7d"},"properties":[`+cohort(1, "in")+`]}}`)
	if got := sticky["results"].([]any)[0].(map[string]any)["count"]; got != 2.0 {
		t.Errorf("StickinessQuery in Pro: %v persons, want 2", got)
	}
	// And their persons: the stickiness' in Pro, and the new of the static list's
	// lifecycle on the day of the views (anon-7 as u7), as many as the figures count.
	persons := func(source string) []string {
		t.Helper()
		out := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query":{"kind":"ActorsQuery","source":`+source+`}}`)
		var names []string
		for _, row := range out["results"].([]any) {
			ids := row.([]any)[0].(map[string]any)["distinct_ids"].([]any)
			names = append(names, fmt.Sprint(ids[len(ids)-1]))
		}
		slices.Sort(names)
		return names
	}
	stickyQuery := `{"kind":"StickinessQuery","series":[{"kind":"EventsNode","event":"$pageview"}],"dateRange":{"date_from":"-7d"},"properties":[` + cohort(1, "in") + `]}`
	if got := persons(`{"kind":"InsightActorsQuery","source":` + stickyQuery + `,"day":1}`); !slices.Equal(got, []string{"u1", "u2"}) {
		t.Errorf("the stickiness' persons of 1 day in Pro: %v, want u1 u2", got)
	}
	lifecycleQuery := `{"kind":"LifecycleQuery","series":[{"kind":"EventsNode","event":"$pageview"}],"dateRange":{"date_from":"-7d"},"properties":[` + cohort(3, "in") + `]}`
	viewed := time.Now().UTC().Truncate(24 * time.Hour).Add(-3 * 24 * time.Hour).Format(time.DateOnly)
	lifecycle := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query":`+lifecycleQuery+`}`)["results"].([]any)[0].(map[string]any)
	newOn := lifecycle["data"].([]any)[slices.Index(lifecycle["days"].([]any), any(viewed))]
	if got := persons(`{"kind":"InsightActorsQuery","source":` + lifecycleQuery + `,"day":"` + viewed + `","status":"new"}`); !slices.Equal(got, []string{"u3", "u5", "u7"}) || newOn != 3.0 {
		t.Errorf("the lifecycle's new on %s in the static list: %v, want u3 u5 u7 (the figure: %v)", viewed, got, newOn)
	}

	for filter, want := range map[string]float64{"": 17, cohort(3, "in"): 8} {
		web := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query":{"kind":"WebOverviewQuery","dateRange":{"date_from":"-7d"},"properties":[`+filter+`]}}`)
		views := -1.0
		for _, item := range web["results"].([]any) {
			if it := item.(map[string]any); it["key"] == "views" && it["value"] != nil {
				views = it["value"].(float64)
			}
		}
		if views != want {
			t.Errorf("WebOverviewQuery filtered by %q: %v views, want %v", filter, views, want)
		}
	}

	funnel := func(filters string) string {
		t.Helper()
		out := env.must(t, 200, "POST", env.project+"/query/", env.owner, `{"query":{"kind":"FunnelsQuery","series":[{"kind":"EventsNode","event":"$pageview"},`+
			`{"kind":"EventsNode","event":"signup"}],"dateRange":{"date_from":"-7d"},"funnelsFilter":{"funnelWindowInterval":14,"funnelWindowIntervalUnit":"day"},"properties":[`+filters+`]}}`)
		var counts []string
		for _, step := range out["results"].([]any) {
			counts = append(counts, fmt.Sprint(step.(map[string]any)["count"]))
		}
		return strings.Join(counts, " ")
	}
	for _, c := range []struct{ name, filters, want string }{
		{"everyone", "", "6 4"},
		{"in Pro", cohort(1, "in"), "2 1"},
		{"not in Pro", cohort(1, "not_in"), "4 3"},
		{"in French or pro", cohort(2, "in"), "3 2"},
		{"in the static list", cohort(3, "in"), "3 2"},
		{"not in the static list", cohort(3, "not_in"), "3 2"},
	} {
		if got := funnel(c.filters); got != c.want {
			t.Errorf("funnel %s: %s, want %s", c.name, got, c.want)
		}
	}

	// The persons of each cohort, and their count on the record.
	for _, c := range []struct {
		id    int
		count int
		names string
	}{{1, 2, "u1 u2"}, {2, 3, "u1 u2 u3"}, {3, 3, "u3 u5 u7"}, {4, 1, "u3"}} {
		out := env.must(t, 200, "GET", fmt.Sprintf("%s/cohorts/%d/persons/?limit=2", env.project, c.id), env.owner, "")
		got := int(out["count"].(float64))
		var names []string
		for _, p := range out["results"].([]any) {
			names = append(names, p.(map[string]any)["distinct_ids"].([]any)[0].(string))
		}
		if got != c.count || len(names) != min(2, c.count) {
			t.Errorf("persons of cohort %d: count %d, page %v; want %d (%s)", c.id, got, names, c.count, c.names)
		}
		record := env.must(t, 200, "GET", fmt.Sprintf("%s/cohorts/%d/", env.project, c.id), env.owner, "")
		if record["count"] != float64(c.count) {
			t.Errorf("cohort %d's count: %v, want %d", c.id, record["count"], c.count)
		}
	}

	// The listing counts every cohort at once, each as its own record does.
	listed := map[string]any{}
	for _, r := range env.must(t, 200, "GET", env.project+"/cohorts/", env.owner, "")["results"].([]any) {
		listed[fmt.Sprint(r.(map[string]any)["id"])] = r.(map[string]any)["count"]
	}
	if fmt.Sprint(listed["1"], listed["2"], listed["3"], listed["4"]) != "2 3 3 1" {
		t.Errorf("the listing counts %v, want cohorts 1-4 at 2 3 3 1", listed)
	}

	// The persons API narrows to a cohort too.
	if got := env.must(t, 200, "GET", env.project+"/persons/?cohort=2&search=u1", env.owner, "")["count"]; got != 1.0 {
		t.Errorf("persons of cohort 2 matching u1: %v, want 1", got)
	}
	if got := env.must(t, 200, "GET", env.project+"/persons/?cohort=3", env.owner, "")["count"]; got != 3.0 {
		t.Errorf("persons of cohort 3: %v, want 3", got)
	}

	// Another project's cohort is no cohort of this one's queries; a deleted one, an
	// unknown one, a cycle and a bad value are refused naming them.
	other := env.otherProject(t)
	theirs := int64(env.must(t, 201, "POST", other+"/cohorts/", env.owner, `{"name":"Theirs","is_static":true}`)["id"].(float64))
	env.must(t, 200, "PATCH", env.project+"/cohorts/4/", env.owner, `{"deleted":true}`)
	loop := env.cohort(t, `{"name":"Loop","filters":{"properties":{"type":"AND","values":[]}}}`)
	env.exec(t, `UPDATE meta.cohorts SET filters = ? WHERE id = ?`,
		fmt.Sprintf(`{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":%d}]}}`, loop), loop)
	query := func(filter string) string {
		return `{"query":{"kind":"TrendsQuery","series":[{"event":"$pageview"}],"properties":[` + filter + `]}}`
	}
	env.run(t, []scenario{
		env.refused("another project's cohort", "POST", env.project+"/query/", query(cohort(int(theirs), "in")), "query", "invalid_input",
			fmt.Sprintf("Cohort with id %d does not exist.", theirs)),
		env.refused("a deleted cohort", "POST", env.project+"/query/", query(cohort(4, "in")), "query", "invalid_input", "Cohort with id 4 does not exist."),
		env.refused("an unknown cohort", "POST", env.project+"/query/", query(cohort(99, "in")), "query", "invalid_input", "Cohort with id 99 does not exist."),
		env.refused("a cycle", "POST", env.project+"/query/", query(cohort(int(loop), "in")), "query", "invalid_input",
			fmt.Sprintf("Cohort %d depends on itself through cohort %d.", loop, loop)),
		env.refused("no id", "POST", env.project+"/query/", query(`{"type":"cohort","key":"id","value":"x"}`), "query", "invalid_input",
			`A cohort filter's value must be a cohort id, not "x".`),
		env.refused("an operator", "POST", env.project+"/query/", query(`{"type":"cohort","key":"id","value":1,"operator":"exact"}`), "query", "query_error",
			`the operator of the filter on cohort 1 must be in or not_in, not "exact"`),
		env.refused("persons of another project's cohort", "GET", fmt.Sprintf("%s/persons/?cohort=%d", env.project, theirs), "", "cohort", "invalid_input",
			fmt.Sprintf("Cohort with id %d does not exist.", theirs)),
		{name: "the persons of another project's cohort", method: "GET", path: fmt.Sprintf("%s/cohorts/%d/persons/", env.project, theirs), key: env.owner,
			status: 404, want: []string{`"detail":"Not found."`}},
	})
}

// TestCohortCSV: the bounds and refusals of a static cohort's CSV, and PATCH adding
// to its list.
func TestCohortCSV(t *testing.T) {
	env := newTestEnv(t, "")
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "a", Timestamp: time.Now().UTC()},
		warehouse.Event{Name: "$pageview", DistinctID: "b", Timestamp: time.Now().UTC()})
	cohorts := env.project + "/cohorts/"
	refused := func(name, csv string, fields map[string]string, attr, detail string) {
		t.Helper()
		if fields == nil {
			fields = map[string]string{"name": "x", "is_static": "true"}
		}
		status, text := env.uploadCohort(t, "POST", cohorts, fields, csv)
		want := fmt.Sprintf(`{"type":"validation_error","code":"invalid_input","detail":%q,"attr":%q}`, detail, attr)
		if status != 400 || text != want {
			t.Errorf("%s: %d %s\nwant 400 %s", name, status, text, want)
		}
	}
	refused("empty", "\n\n", nil, "csv", "The CSV file lists no distinct ids: put one in the first column of each row.")
	refused("a header only", "distinct_id\n", nil, "csv", "The CSV file lists no distinct ids: put one in the first column of each row.")
	refused("not CSV", "a\n\"b\n", nil, "csv", `The CSV file is not valid: line 2: extraneous or missing " in quoted-field.`)
	refused("not UTF-8", "a\n\xff\n", nil, "csv", "The CSV file is not UTF-8 text.")
	refused("a long id", "a\n"+strings.Repeat("x", 201)+"\n", nil, "csv", "Line 2: a distinct id is at most 200 characters.")
	refused("too many rows", strings.Repeat("id\n", maxCohortCSVRows+1), nil, "csv", "The CSV file lists more than 100000 distinct ids: upload them in parts.")
	refused("too large", strings.Repeat("x", maxCohortCSVBytes+1), nil, "csv", fmt.Sprintf("The CSV file is %d bytes: at most %d.", maxCohortCSVBytes+1, maxCohortCSVBytes))
	refused("not static", "a\n", map[string]string{"name": "x", "is_static": "false"}, "is_static", "A cohort from a CSV file is static.")
	if status, text := env.uploadCohort(t, "POST", cohorts, map[string]string{"is_static": "maybe"}, "a\n"); status != 400 || !strings.Contains(text, `"attr":"is_static"`) {
		t.Errorf("a bad boolean: %d %s", status, text)
	}
	if count := env.must(t, 200, "GET", cohorts, env.owner, "")["count"]; count != 0.0 {
		t.Fatalf("refused uploads left %v cohorts", count)
	}

	// Without is_static, a CSV makes a static cohort; PATCH adds to it.
	status, text := env.uploadCohort(t, "POST", cohorts, map[string]string{"name": "Listed"}, "a\n")
	if status != 201 || !strings.Contains(text, `"is_static":true`) || !strings.Contains(text, `"count":1`) {
		t.Fatalf("create: %d %s", status, text)
	}
	status, text = env.uploadCohort(t, "PATCH", cohorts+"1/", map[string]string{"name": "Listed twice"}, "a\nb\nc\n")
	if status != 200 || !strings.Contains(text, `"name":"Listed twice"`) || !strings.Contains(text, `"count":2`) {
		t.Fatalf("add: %d %s", status, text)
	}
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "c", Timestamp: time.Now().UTC()})
	if count := env.must(t, 200, "GET", cohorts+"1/", env.owner, "")["count"]; count != 3.0 {
		t.Errorf("after c's first event: count %v, want 3", count)
	}
	// A property cohort takes no CSV.
	env.cohort(t, `{"name":"Everyone","filters":{"properties":{"type":"AND","values":[]}}}`)
	if status, text := env.uploadCohort(t, "PATCH", cohorts+"2/", nil, "a\n"); status != 400 ||
		text != `{"type":"validation_error","code":"invalid_input","detail":"Only a static cohort takes a CSV file.","attr":"csv"}` {
		t.Errorf("a CSV to a property cohort: %d %s", status, text)
	}
	if count := env.must(t, 200, "GET", cohorts+"2/", env.owner, "")["count"]; count != 3.0 {
		t.Errorf("an empty AND: count %v, want every person (3)", count)
	}
	// A definition queries cannot read (an operator they lack) has no count, and its
	// persons are a 400 saying why.
	env.cohort(t, `{"name":"Dated","filters":{"properties":{"type":"AND","values":[{"key":"signed_up","type":"person","operator":"is_date_before","value":"2024-01-01"}]}}}`)
	if record := env.must(t, 200, "GET", cohorts+"3/", env.owner, ""); record["count"] != nil {
		t.Errorf("a cohort queries refuse: count %v, want null", record["count"])
	}
	if status, text, _ := env.do(t, "GET", cohorts+"3/persons/", env.owner, nil, ""); status != 400 ||
		text != `{"type":"validation_error","code":"invalid_input","detail":"cohort 3: the property filter operator \"is_date_before\" is not supported","attr":null}` {
		t.Errorf("the persons of a cohort queries refuse: %d %s", status, text)
	}
}
