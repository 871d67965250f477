package admin

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

const viewsQuery = `{"kind": "TrendsQuery", "series": [{"event": "$pageview"}]}`

// An insight on dashboards is edited only by those who may edit every one of them: on
// a restricted dashboard, only by that dashboard's editors, whatever other dashboards
// it is on. It joins only dashboards its editor may edit.
func TestInsightEditRights(t *testing.T) {
	env := newTestEnv(t, "")
	restricted, _ := env.dashboard(t, `{"name": "Restricted", "restriction_level": 37}`)
	open, _ := env.dashboard(t, `{"name": "Open"}`)
	collaboratorID, collaboratorKey := env.member(t, "collaborator@example.com", levelMember, "*")
	env.must(t, 201, "POST", env.dashPath(restricted, "collaborators/"), env.owner, fmt.Sprintf(`{"user_uuid": %q, "level": 37}`, collaboratorID))
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	onRestricted := env.insight(t, fmt.Sprintf(`{"name": "Guarded", "query": %s, "dashboards": [%d]}`, viewsQuery, restricted))
	onBoth := env.insight(t, fmt.Sprintf(`{"name": "Both", "query": %s, "dashboards": [%d, %d]}`, viewsQuery, restricted, open))
	free := env.insight(t, fmt.Sprintf(`{"name": "Free", "query": %s}`, viewsQuery))

	canEdit := `{"type":"authentication_error","code":"permission_denied","detail":"This insight is on a dashboard that can only be edited by its owner, team members invited to editing the dashboard, and project admins.","attr":null}`
	env.run(t, []scenario{
		{name: "member renames an insight of a restricted dashboard", method: "PATCH", path: env.insightPath(onRestricted), key: memberKey,
			body: `{"name": "mine"}`, status: 403, want: []string{canEdit}},
		{name: "member takes it off the restricted dashboard", method: "PATCH", path: env.insightPath(onRestricted), key: memberKey,
			body: `{"dashboards": []}`, status: 403, want: []string{canEdit}},
		{name: "member deletes it", method: "PATCH", path: env.insightPath(onRestricted), key: memberKey,
			body: `{"deleted": true}`, status: 403, want: []string{canEdit}},
		{name: "member sends a bad query", method: "PATCH", path: env.insightPath(onRestricted), key: memberKey,
			body: `{"query": {"kind": "HogQLQuery"}}`, status: 403, want: []string{canEdit}},
		{name: "member takes an insight off the restricted one of its dashboards", method: "PATCH", path: env.insightPath(onBoth), key: memberKey,
			body: fmt.Sprintf(`{"dashboards": [%d]}`, open), status: 403, want: []string{canEdit}},
		{name: "member renames an insight also on an open dashboard", method: "PATCH", path: env.insightPath(onBoth), key: memberKey,
			body: `{"name": "Both, renamed"}`, status: 403, want: []string{canEdit}},
		{name: "member puts an insight on the restricted dashboard", method: "PATCH", path: env.insightPath(free), key: memberKey,
			body: fmt.Sprintf(`{"dashboards": [%d]}`, restricted), status: 403,
			want: []string{fmt.Sprintf(`{"type":"authentication_error","code":"permission_denied","detail":"You don't have permission to add insights to dashboard: %d","attr":null}`, restricted)}},
		{name: "member creates an insight on the restricted dashboard", method: "POST", path: env.project + "/insights/", key: memberKey,
			body: fmt.Sprintf(`{"name": "sneaky", "dashboards": [%d]}`, restricted), status: 403, want: []string{"You don't have permission to add insights to dashboard"}},
	})
	i := env.must(t, 200, "GET", env.insightPath(onRestricted), env.owner, "")
	if i["name"] != "Guarded" || i["deleted"] != false || fmt.Sprint(i["dashboards"]) != fmt.Sprintf("[%d]", restricted) {
		t.Fatalf("the guarded insight after refused edits: %v %v %v", i["name"], i["deleted"], i["dashboards"])
	}
	if i := env.must(t, 200, "GET", env.insightPath(onBoth), env.owner, ""); fmt.Sprint(i["dashboards"]) != fmt.Sprintf("[%d %d]", restricted, open) {
		t.Fatalf("the shared insight after a refused edit: %v", i["dashboards"])
	}
	if list := env.must(t, 200, "GET", env.project+"/insights/?search=sneaky", env.owner, ""); list["count"] != 0.0 {
		t.Fatal("a refused create made an insight")
	}

	if i := env.must(t, 200, "GET", env.insightPath(onBoth), env.owner, ""); i["name"] != "Both" {
		t.Fatalf("the insight on both after a refused rename: %v", i["name"])
	}
	// The collaborator of the restricted dashboard may edit both: it renames it, and
	// keeps it where it is.
	if i := env.must(t, 200, "PATCH", env.insightPath(onBoth), collaboratorKey, fmt.Sprintf(`{"name": "Both, renamed", "dashboards": [%d, %d]}`, open, restricted)); i["name"] != "Both, renamed" {
		t.Fatalf("collaborator renamed %v", i["name"])
	}
	// On no dashboard: anyone edits it, and puts it on dashboards it may edit.
	if i := env.must(t, 200, "PATCH", env.insightPath(free), memberKey, fmt.Sprintf(`{"dashboards": [%d]}`, open)); fmt.Sprint(i["dashboards"]) != fmt.Sprintf("[%d]", open) {
		t.Fatalf("member placed it on %v", i["dashboards"])
	}
	env.must(t, 200, "PATCH", env.insightPath(free), memberKey, `{"dashboards": []}`)
	// A collaborator of the restricted dashboard edits its insights.
	if i := env.must(t, 200, "PATCH", env.insightPath(onRestricted), collaboratorKey, `{"name": "Collaborated", "dashboards": []}`); i["name"] != "Collaborated" || fmt.Sprint(i["dashboards"]) != "[]" {
		t.Fatalf("collaborator edited %v %v", i["name"], i["dashboards"])
	}
	env.must(t, 200, "PATCH", env.insightPath(onRestricted), env.owner, fmt.Sprintf(`{"dashboards": [%d]}`, restricted))
	env.must(t, 200, "PATCH", env.insightPath(onRestricted), env.owner, `{"deleted": true}`)
	env.must(t, 404, "GET", env.insightPath(onRestricted), env.owner, "")
	// Exactly {"deleted": false} restores it (the console's Undo), for those who may
	// edit it only; any other change to a deleted insight finds nothing.
	env.must(t, 404, "PATCH", env.insightPath(onRestricted), env.owner, `{"name": "Ghost"}`)
	env.must(t, 404, "PATCH", env.insightPath(onRestricted), env.owner, `{"deleted": false, "name": "Ghost"}`)
	env.must(t, 403, "PATCH", env.insightPath(onRestricted), memberKey, `{"deleted": false}`)
	env.must(t, 404, "GET", env.insightPath(onRestricted), env.owner, "")
	if i := env.must(t, 200, "PATCH", env.insightPath(onRestricted), collaboratorKey, `{"deleted": false}`); i["deleted"] != false || i["name"] != "Collaborated" ||
		fmt.Sprint(i["dashboards"]) != fmt.Sprintf("[%d]", restricted) {
		t.Fatalf("restored %v %v %v", i["deleted"], i["name"], i["dashboards"])
	}
	env.must(t, 200, "GET", env.insightPath(onRestricted), env.owner, "")
}

// Each insight answer says what the caller may do with it (effective_privilege_level,
// PostHog's 37 edit and 21 view), by the rule TestInsightEditRights enforces, so that a
// client shows a view-only insight as such instead of an editor whose Save fails.
func TestInsightPrivilegeLevels(t *testing.T) {
	env := newTestEnv(t, "")
	restricted, _ := env.dashboard(t, `{"name": "Restricted", "restriction_level": 37}`)
	open, _ := env.dashboard(t, `{"name": "Open"}`)
	collaboratorID, collaboratorKey := env.member(t, "collaborator@example.com", levelMember, "*")
	env.must(t, 201, "POST", env.dashPath(restricted, "collaborators/"), env.owner, fmt.Sprintf(`{"user_uuid": %q, "level": 37}`, collaboratorID))
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	insights := map[string]int64{
		"on the restricted one": env.insight(t, fmt.Sprintf(`{"name": "Guarded", "query": %s, "dashboards": [%d]}`, viewsQuery, restricted)),
		"on both":               env.insight(t, fmt.Sprintf(`{"name": "Both", "query": %s, "dashboards": [%d, %d]}`, viewsQuery, restricted, open)),
		"on the open one":       env.insight(t, fmt.Sprintf(`{"name": "Open", "query": %s, "dashboards": [%d]}`, viewsQuery, open)),
		"on none":               env.insight(t, fmt.Sprintf(`{"name": "Free", "query": %s}`, viewsQuery)),
	}
	for _, tc := range []struct {
		who, insight           string
		key                    string
		restriction, privilege float64
	}{
		{"the owner", "on the restricted one", env.owner, 37, 37},
		{"a member", "on the restricted one", memberKey, 37, 21},
		{"a member", "on both", memberKey, 37, 21},
		{"the collaborator", "on both", collaboratorKey, 37, 37},
		{"a member", "on the open one", memberKey, 21, 37},
		{"a member", "on none", memberKey, 21, 37},
	} {
		id := insights[tc.insight]
		retrieved := env.must(t, 200, "GET", env.insightPath(id), tc.key, "")
		page := env.must(t, 200, "GET", fmt.Sprintf("%s/insights/?short_id=%s", env.project, retrieved["short_id"]), tc.key, "")
		listed := page["results"].([]any)[0].(map[string]any)
		for where, got := range map[string]map[string]any{"retrieved": retrieved, "listed": listed} {
			if got["effective_restriction_level"] != tc.restriction || got["effective_privilege_level"] != tc.privilege {
				t.Errorf("%s, the insight %s %s: restriction %v privilege %v, want %v %v", tc.who, tc.insight, where,
					got["effective_restriction_level"], got["effective_privilege_level"], tc.restriction, tc.privilege)
			}
		}
	}
	// Answers to writes carry them too.
	if i := env.must(t, 200, "PATCH", env.insightPath(insights["on both"]), collaboratorKey, `{"name": "Both, renamed"}`); i["effective_privilege_level"] != 37.0 {
		t.Errorf("the collaborator's PATCH answers privilege %v", i["effective_privilege_level"])
	}
}

func TestInsightUpdateFields(t *testing.T) {
	env := newTestEnv(t, "")
	env.ingest(t, warehouse.Event{Name: "signed up", DistinctID: "u1", Timestamp: time.Now().UTC()})
	id := env.insight(t, fmt.Sprintf(`{"name": "Views", "description": "all views", "query": %s}`, viewsQuery))
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	i := env.must(t, 200, "PATCH", env.insightPath(id), memberKey, `{"name": "Signups", "description": "who signed up",
		"query": {"kind": "TrendsQuery", "series": [{"event": "signed up"}], "dateRange": {"date_from": "-1d"}}}`)
	series := i["result"].(map[string]any)["results"].([]any)[0].(map[string]any)
	if i["name"] != "Signups" || i["description"] != "who signed up" || !strings.Contains(mustText(t, i["query"]), `"signed up"`) ||
		series["count"] != 1.0 || i["last_modified_by"].(map[string]any)["email"] != "member@example.com" ||
		i["created_by"].(map[string]any)["email"] != "owner@example.com" {
		t.Fatalf("updated %v", i)
	}
	got := env.must(t, 200, "GET", env.insightPath(id), env.owner, "")
	if got["name"] != "Signups" || got["description"] != "who signed up" || mustText(t, got["query"]) != mustText(t, i["query"]) {
		t.Fatalf("read back %v", got)
	}
	// Only what is sent changes; an empty name clears it.
	if i := env.must(t, 200, "PATCH", env.insightPath(id), env.owner, `{"name": ""}`); i["name"] != nil || i["description"] != "who signed up" {
		t.Fatalf("after clearing the name %v %v", i["name"], i["description"])
	}
	env.run(t, []scenario{
		{name: "a query insights cannot compute", method: "PATCH", path: env.insightPath(id), key: env.owner, body: `{"query": {"kind": "FunnelCorrelationQuery"}}`,
			status: 400, want: []string{`"attr":"query"`}},
		{name: "a name of the wrong type", method: "PATCH", path: env.insightPath(id), key: env.owner, body: `{"name": 5}`,
			status: 400, want: []string{`"attr":"name"`}},
	})
}

// An insight of a FunnelsQuery, as PostHog's UI saves it in an InsightVizNode, and its
// dashboard's tile compute the funnel: u1 and u2 viewed a page, u1 signed up a minute
// later.
func TestFunnelInsight(t *testing.T) {
	env := newTestEnv(t, "")
	now := time.Now().UTC().Add(-time.Hour)
	env.ingest(t,
		warehouse.Event{Name: "$pageview", DistinctID: "u1", Timestamp: now},
		warehouse.Event{Name: "$pageview", DistinctID: "u2", Timestamp: now},
		warehouse.Event{Name: "signed up", DistinctID: "u1", Timestamp: now.Add(time.Minute)},
	)
	dashboard, _ := env.dashboard(t, `{"name": "Growth"}`)
	i := env.must(t, 201, "POST", env.project+"/insights/", env.owner, fmt.Sprintf(`{"name": "Signup funnel", "dashboards": [%d],
		"query": {"kind": "InsightVizNode", "source": {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"},
		{"kind": "EventsNode", "event": "signed up"}], "dateRange": {"date_from": "-1d"}, "funnelsFilter": {"funnelVizType": "steps"}}}}`, dashboard))
	counts := func(result any) string {
		t.Helper()
		var got []string
		for _, s := range result.(map[string]any)["results"].([]any) {
			s := s.(map[string]any)
			got = append(got, fmt.Sprintf("%s:%v/%v", s["name"], s["count"], s["median_conversion_time"]))
		}
		return strings.Join(got, " ")
	}
	const want = "$pageview:2/<nil> signed up:1/60"
	if got := counts(i["result"]); got != want || i["is_cached"] != false {
		t.Fatalf("the insight: %s, want %s", got, want)
	}
	d := env.must(t, 200, "GET", env.dashPath(dashboard, ""), env.owner, "")
	tile := d["tiles"].([]any)[0].(map[string]any)["insight"].(map[string]any)
	if got := counts(tile["result"]); got != want || tile["is_cached"] != true {
		t.Fatalf("the dashboard's tile: %s (cached %v), want %s", got, tile["is_cached"], want)
	}
}

func TestInsightListFilters(t *testing.T) {
	env := newTestEnv(t, "")
	var shortIDs []string
	for _, name := range []string{"Weekly Signups", "signups by country", "Pageviews"} {
		id := env.insight(t, fmt.Sprintf(`{"name": %q, "query": %s}`, name, viewsQuery))
		shortIDs = append(shortIDs, env.must(t, 200, "GET", env.insightPath(id), env.owner, "")["short_id"].(string))
	}
	gone := env.insight(t, `{"name": "Gone signups"}`)
	env.must(t, 200, "PATCH", env.insightPath(gone), env.owner, `{"deleted": true}`)
	names := func(list map[string]any) string {
		var out []string
		for _, r := range list["results"].([]any) {
			out = append(out, fmt.Sprint(r.(map[string]any)["name"]))
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct{ query, want string }{
		{"", "Pageviews,signups by country,Weekly Signups"}, // last modified first
		{"?search=SIGNUPS", "signups by country,Weekly Signups"},
		{"?search=nothing", ""},
		{"?short_id=" + shortIDs[1], "signups by country"},
		{"?short_id=nope", ""},
		{"?search=signups&short_id=" + shortIDs[2], ""},
		{"?limit=1&offset=1", "signups by country"},
	} {
		list := env.must(t, 200, "GET", env.project+"/insights/"+c.query, env.owner, "")
		if got := names(list); got != c.want {
			t.Fatalf("%s: %q, want %q", c.query, got, c.want)
		}
	}
	if list := env.must(t, 200, "GET", env.project+"/insights/?limit=1&search=signups", env.owner, ""); list["count"] != 2.0 ||
		list["next"] != env.url+env.project+"/insights/?limit=1&offset=1&search=signups" {
		t.Fatalf("a page of a search: %v %v", list["count"], list["next"])
	}
}

// Insights and dashboards of another project are not reachable through this one.
func TestInsightOtherProject(t *testing.T) {
	env := newTestEnv(t, "")
	other := env.otherProject(t)
	foreign := int64(env.must(t, 201, "POST", other+"/insights/", env.owner, `{"name": "Elsewhere"}`)["id"].(float64))
	foreignDashboard := int64(env.must(t, 201, "POST", other+"/dashboards/", env.owner, `{"name": "Elsewhere"}`)["id"].(float64))
	mine := env.insight(t, `{"name": "Mine"}`)
	notFound := `{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`
	env.run(t, []scenario{
		{name: "retrieve", method: "GET", path: env.insightPath(foreign), key: env.owner, status: 404, want: []string{notFound}},
		{name: "update", method: "PATCH", path: env.insightPath(foreign), key: env.owner, body: `{"name": "taken"}`, status: 404, want: []string{notFound}},
		{name: "not listed", method: "GET", path: env.project + "/insights/", key: env.owner, status: 200, want: []string{`"count":1`}, notWant: []string{"Elsewhere"}},
		{name: "on a dashboard of another project", method: "PATCH", path: env.insightPath(mine), key: env.owner,
			body: fmt.Sprintf(`{"dashboards": [%d]}`, foreignDashboard), status: 400,
			want: []string{fmt.Sprintf(`{"type":"validation_error","code":"invalid_input","detail":"Dashboard %d does not exist in this project.","attr":"dashboards__0"}`, foreignDashboard)}},
	})
	if i := env.must(t, 200, "GET", fmt.Sprintf("%s/insights/%d/", other, foreign), env.owner, ""); i["name"] != "Elsewhere" {
		t.Fatalf("the other project's insight: %v", i)
	}
}

// A result computed under a project's time zone or first day of the week is not
// served once they change.
func TestInsightResultsFollowProjectSettings(t *testing.T) {
	env := newTestEnv(t, "")
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "u1", Timestamp: time.Now().UTC().Add(-time.Hour)})
	id := env.insight(t, `{"name": "Weekly", "query": {"kind": "TrendsQuery", "interval": "week", "series": [{"event": "$pageview"}], "dateRange": {"date_from": "-60d"}}}`)
	firstWeekday := func(i map[string]any) time.Weekday {
		t.Helper()
		days := i["result"].(map[string]any)["results"].([]any)[0].(map[string]any)["days"].([]any)
		day, err := time.Parse("2006-01-02", days[len(days)-1].(string)[:10])
		if err != nil {
			t.Fatal(err)
		}
		return day.Weekday()
	}
	if i := env.must(t, 200, "GET", env.insightPath(id), env.owner, ""); i["is_cached"] != true || firstWeekday(i) != time.Sunday {
		t.Fatalf("before: cached %v, weeks start on %v", i["is_cached"], firstWeekday(i))
	}
	setProject := func(column string, value any) {
		t.Helper()
		// No project update route is under test here: the fixture changes the setting.
		if _, err := env.warehouse.DB().Exec(`UPDATE meta.projects SET `+column+` = ? WHERE id = ?`, value, env.boot.ProjectID); err != nil {
			t.Fatal(err)
		}
	}
	setProject("week_start_day", 1)
	i := env.must(t, 200, "GET", env.insightPath(id), env.owner, "")
	if i["is_cached"] != false || firstWeekday(i) != time.Monday {
		t.Fatalf("after week_start_day 1: cached %v, weeks start on %v", i["is_cached"], firstWeekday(i))
	}
	if i := env.must(t, 200, "GET", env.insightPath(id), env.owner, ""); i["is_cached"] != true {
		t.Fatal("not cached under the new settings")
	}
	setProject("timezone", "Asia/Tokyo")
	i = env.must(t, 200, "GET", env.insightPath(id), env.owner, "")
	if i["is_cached"] != false || i["result"].(map[string]any)["timezone"] != "Asia/Tokyo" {
		t.Fatalf("after a new time zone: cached %v, timezone %v", i["is_cached"], i["result"].(map[string]any)["timezone"])
	}
}

// A cached result expires after the cache's time to live, project events or not.
func TestInsightResultsTTL(t *testing.T) {
	const ttl = time.Second
	env := serveAPI(t, func(cfg *Config) { cfg.InsightCacheTTL = ttl })
	created := env.must(t, 201, "POST", env.project+"/insights/", env.owner, fmt.Sprintf(`{"name": "Views", "query": %s}`, viewsQuery))
	id := int64(created["id"].(float64))
	cached := env.must(t, 200, "GET", env.insightPath(id), env.owner, "")
	if cached["is_cached"] != true || cached["last_refresh"] != created["last_refresh"] {
		t.Fatalf("within the TTL: cached %v, last_refresh %v (computed %v)", cached["is_cached"], cached["last_refresh"], created["last_refresh"])
	}
	time.Sleep(ttl + 200*time.Millisecond)
	fresh := env.must(t, 200, "GET", env.insightPath(id), env.owner, "")
	if fresh["is_cached"] != false || fresh["last_refresh"] == created["last_refresh"] {
		t.Fatalf("after the TTL: cached %v, last_refresh %v", fresh["is_cached"], fresh["last_refresh"])
	}
	if again := env.must(t, 200, "GET", env.insightPath(id), env.owner, ""); again["is_cached"] != true || again["last_refresh"] != fresh["last_refresh"] {
		t.Fatalf("cached again: %v %v", again["is_cached"], again["last_refresh"])
	}
}

// A dashboard's insight tiles carry their insight's is_cached and last_refresh.
func TestInsightTileCaching(t *testing.T) {
	env := newTestEnv(t, "")
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "u1", Timestamp: time.Now().UTC()})
	dashboard, _ := env.dashboard(t, `{"name": "Cached"}`)
	created := env.must(t, 201, "POST", env.project+"/insights/", env.owner, fmt.Sprintf(`{"name": "Views", "query": %s, "dashboards": [%d]}`, viewsQuery, dashboard))
	tile := func() map[string]any {
		t.Helper()
		return env.must(t, 200, "GET", env.dashPath(dashboard, ""), env.owner, "")["tiles"].([]any)[0].(map[string]any)
	}
	first := tile()
	if first["is_cached"] != true || first["last_refresh"] != created["last_refresh"] ||
		first["insight"].(map[string]any)["last_refresh"] != first["last_refresh"] || first["insight"].(map[string]any)["is_cached"] != true {
		t.Fatalf("the tile of a computed insight: cached %v, last_refresh %v (computed %v)", first["is_cached"], first["last_refresh"], created["last_refresh"])
	}
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "u2", Timestamp: time.Now().UTC()})
	fresh := tile()
	if fresh["is_cached"] != false || fresh["last_refresh"] == first["last_refresh"] || fresh["last_refresh"] == nil {
		t.Fatalf("after a new event: cached %v, last_refresh %v", fresh["is_cached"], fresh["last_refresh"])
	}
	if again := tile(); again["is_cached"] != true || again["last_refresh"] != fresh["last_refresh"] {
		t.Fatalf("read again: cached %v, last_refresh %v", again["is_cached"], again["last_refresh"])
	}
	// A text card has neither.
	env.must(t, 200, "PATCH", env.dashPath(dashboard, ""), env.owner, `{"tiles": [{"text": {"body": "note"}, "layouts": {"sm": {"x": 0, "y": 0}}}]}`)
	if text := tile(); text["text"] == nil || text["is_cached"] != false || text["last_refresh"] != nil {
		t.Fatalf("a text tile: %v", text)
	}
}

// The results cache is bounded in bytes, as its own accounting counts them: a member
// who can only read a dashboard floods it with ?filters_override= values (a new key
// each) and the cache stays within its bound and the project within its quarter,
// while another project's result stays cached; a result over a sixteenth of the bound
// is never kept.
func TestInsightCacheBytes(t *testing.T) {
	const bound = 64 << 10
	env := serveAPI(t, func(cfg *Config) { cfg.InsightCacheBytes = bound })
	withoutDashboards(t, env.warehouse, env.boot.ProjectID)
	now := time.Now().UTC()
	for _, user := range []string{"u1", "u2", "u3"} {
		env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: user, Timestamp: now.Add(-time.Hour)})
	}
	other := env.otherProject(t)
	var otherTeam int64
	fmt.Sscanf(other, "/api/projects/%d", &otherTeam)
	env.ingestTo(t, otherTeam, warehouse.Event{Name: "$pageview", DistinctID: "v1", Timestamp: now.Add(-time.Hour)})
	kept := env.must(t, 201, "POST", other+"/insights/", env.owner, fmt.Sprintf(`{"name": "Views", "query": %s}`, viewsQuery))
	keptPath := fmt.Sprintf("%s/insights/%d/", other, int64(kept["id"].(float64)))
	if _, held := env.api.results.usage(otherTeam); held == 0 {
		t.Fatal("the other project's result is not cached")
	}

	// Each answer of the flooded tile is some 1.7 KB: three events of 500 bytes.
	dashboard, _ := env.dashboard(t, `{"name": "Flooded"}`)
	env.insight(t, fmt.Sprintf(`{"name": "Wide", "query": {"kind": "EventsQuery", "select": ["event", "repeat('x', 500)"], "after": "-1d"}, "dashboards": [%d]}`, dashboard))
	_, memberKey := env.member(t, "reader@example.com", levelMember, "dashboard:read")
	flooded, peak := 0, 0
	for day := 2; day <= 60; day++ {
		override := url.QueryEscape(fmt.Sprintf(`{"date_from": "-%dd"}`, day))
		d := env.must(t, 200, "GET", env.dashPath(dashboard, "?filters_override="+override), memberKey, "")
		if rows := d["tiles"].([]any)[0].(map[string]any)["insight"].(map[string]any)["result"].(map[string]any)["results"].([]any); len(rows) != 3 {
			t.Fatalf("-%dd: %d rows", day, len(rows))
		}
		all, project := env.api.results.usage(env.boot.ProjectID)
		if all > bound || project > bound/4 {
			t.Fatalf("-%dd: the cache holds %d bytes (bound %d), the project %d (bound %d)", day, all, bound, project, bound/4)
		}
		flooded, peak = flooded+1, max(peak, project)
	}
	if peak < bound/8 {
		t.Fatalf("the flood held at most %d bytes: it did not reach the project's bound", peak)
	}
	if again := env.must(t, 200, "GET", keptPath, env.owner, ""); again["is_cached"] != true {
		t.Fatalf("after %d flooding reads, the other project's result was evicted", flooded)
	}

	// A result over a sixteenth of the bound (4 KB here: three events of 2,000 bytes) is
	// computed at each read, and held nowhere.
	heavy := env.insight(t, `{"name": "Heavy", "query": {"kind": "EventsQuery", "select": ["event", "repeat('y', 2000)"], "after": "-1d"}}`)
	_, before := env.api.results.usage(env.boot.ProjectID)
	if again := env.must(t, 200, "GET", env.insightPath(heavy), env.owner, ""); again["is_cached"] != false || again["result"] == nil {
		t.Fatalf("a heavy result: cached %v", again["is_cached"])
	}
	if _, after := env.api.results.usage(env.boot.ProjectID); after > before {
		t.Fatalf("a heavy result is held: %d bytes, %d before", after, before)
	}
	status, _, metrics := env.call(t, "GET", "/metrics", "", "")
	if status != 200 || !strings.Contains(metrics, "hedge_insight_cache_bytes ") || !strings.Contains(metrics, "hedge_insight_cache_skipped_total ") ||
		!strings.Contains(metrics, "hedge_insight_cache_evicted_total ") {
		t.Fatalf("/metrics: %d, without the cache's: %.2000s", status, metrics)
	}
}
