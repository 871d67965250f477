package admin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

func (env *testEnv) dashboard(t *testing.T, body string) (int64, map[string]any) {
	t.Helper()
	d := env.must(t, 201, "POST", env.project+"/dashboards/", env.owner, body)
	return int64(d["id"].(float64)), d
}

func (env *testEnv) dashPath(id int64, rest string) string {
	return fmt.Sprintf("%s/dashboards/%d/%s", env.project, id, rest)
}

func keysOf(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestDashboardsCRUD(t *testing.T) {
	env := newTestEnv(t, "")
	id, d := env.dashboard(t, `{"name": "Growth", "description": "KPIs", "tags": ["KPI", " kpi", "team"], "filters": {"date_from": "-7d"}}`)
	if d["creation_mode"] != "default" || fmt.Sprint(d["tags"]) != "[kpi team]" || d["use_dashboard"] != nil || d["delete_insights"] != false ||
		d["effective_privilege_level"] != 37.0 || d["user_access_level"] != "manager" || d["restriction_level"] != 21.0 ||
		d["effective_restriction_level"] != 21.0 || d["access_control_version"] != "v2" || len(d["tiles"].([]any)) != 0 ||
		fmt.Sprint(d["filters"]) != "map[date_from:-7d]" || d["variables"] != nil || d["is_shared"] != false {
		t.Fatalf("created %v", d)
	}
	if created := d["created_by"].(map[string]any); created["email"] != "owner@example.com" {
		t.Fatalf("created_by %v", created)
	}
	env.dashboard(t, `{"name": "Alpha"}`)
	env.dashboard(t, `{"name": "Zeta", "pinned": true}`)
	gone, _ := env.dashboard(t, `{"name": "Gone"}`)
	env.must(t, 200, "PATCH", env.dashPath(gone, ""), env.owner, `{"deleted": true}`)

	list := env.must(t, 200, "GET", env.project+"/dashboards/", env.owner, "")
	var names []string
	for _, r := range list["results"].([]any) {
		names = append(names, r.(map[string]any)["name"].(string))
	}
	if list["count"] != 3.0 || strings.Join(names, ",") != "Zeta,Alpha,Growth" {
		t.Fatalf("list %v (count %v): pinned first, then by name, deleted hidden", names, list["count"])
	}
	item := list["results"].([]any)[0].(map[string]any)
	want := []string{"access_control_version", "created_at", "created_by", "creation_mode", "deleted", "description",
		"effective_privilege_level", "effective_restriction_level", "id", "is_shared", "name", "pinned", "restriction_level",
		"tags", "user_access_level"}
	if !slices.Equal(keysOf(item), want) {
		t.Fatalf("list item fields %v, want %v", keysOf(item), want)
	}

	d = env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"name": "Growth KPIs", "pinned": true, "restriction_level": 37, "tags": ["a", "A"]}`)
	if d["name"] != "Growth KPIs" || d["pinned"] != true || d["restriction_level"] != 37.0 || d["access_control_version"] != "v1" || fmt.Sprint(d["tags"]) != "[a]" {
		t.Fatalf("updated %v", d)
	}
	if got := env.must(t, 200, "GET", env.dashPath(id, ""), env.owner, ""); got["name"] != "Growth KPIs" {
		t.Fatalf("retrieved %v", got)
	}
	env.run(t, []scenario{
		{name: "restriction level not 21 or 37", method: "POST", path: env.project + "/dashboards/", key: env.owner, body: `{"restriction_level": 50}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"50\" is not a valid choice.","attr":"restriction_level"}`}},
		{name: "filters not an object", method: "PATCH", path: env.dashPath(id, ""), key: env.owner, body: `{"filters": [1]}`,
			status: 400, want: []string{`"detail":"Filters must be a dictionary"`, `"attr":"filters"`}},
		{name: "variables not an object", method: "PATCH", path: env.dashPath(id, ""), key: env.owner, body: `{"variables": "x"}`,
			status: 400, want: []string{`"detail":"Variables must be a dictionary"`}},
		{name: "a name of the wrong type", method: "PATCH", path: env.dashPath(id, ""), key: env.owner, body: `{"name": 5}`,
			status: 400, want: []string{`"attr":"name"`}},
		{name: "unknown dashboard", method: "GET", path: env.dashPath(999, ""), key: env.owner, status: 404, want: []string{`"code":"not_found"`}},
		{name: "deleted dashboard", method: "GET", path: env.dashPath(gone, ""), key: env.owner, status: 404},
		{name: "deleted dashboard not editable", method: "PATCH", path: env.dashPath(gone, ""), key: env.owner, body: `{"name":"x"}`, status: 404},
	})
}

// DELETE is refused with 405 and no body, and changes nothing; the key, scope and
// project are checked before.
func TestDashboardDeleteRefused(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Keep me"}`)
	status, text, _ := env.do(t, "DELETE", env.dashPath(id, ""), env.owner, nil, "")
	if status != 405 || text != "" {
		t.Fatalf("DELETE answered %d %q, want 405 with no body", status, text)
	}
	if d := env.must(t, 200, "GET", env.dashPath(id, ""), env.owner, ""); d["deleted"] != false || d["name"] != "Keep me" {
		t.Fatalf("after DELETE: %v", d)
	}
	_, readOnly := env.addUser(t, "reader@example.com", env.org, levelMember, "dashboard:read")
	_, outsider := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	for _, c := range []struct {
		key    string
		status int
	}{{"", 401}, {readOnly, 403}, {outsider, 404}} {
		if status, _, _ := env.do(t, "DELETE", env.dashPath(id, ""), c.key, nil, ""); status != c.status {
			t.Fatalf("DELETE with key %q: %d, want %d", c.key, status, c.status)
		}
	}
}

func TestDashboardSoftDeleteRestore(t *testing.T) {
	env := newTestEnv(t, "")
	a, _ := env.dashboard(t, `{"name": "A"}`)
	b, _ := env.dashboard(t, `{"name": "B"}`)
	query := `{"kind": "TrendsQuery", "series": [{"event": "$pageview"}]}`
	onlyA := env.must(t, 201, "POST", env.project+"/insights/", env.owner, fmt.Sprintf(`{"name": "only on A", "query": %s, "dashboards": [%d]}`, query, a))
	shared := env.must(t, 201, "POST", env.project+"/insights/", env.owner, fmt.Sprintf(`{"name": "on A and B", "query": %s, "dashboards": [%d, %d]}`, query, a, b))
	insightPath := func(i map[string]any) string {
		return fmt.Sprintf("%s/insights/%d/", env.project, int64(i["id"].(float64)))
	}

	d := env.must(t, 200, "PATCH", env.dashPath(a, ""), env.owner, `{"deleted": true, "delete_insights": true}`)
	if d["deleted"] != true {
		t.Fatalf("soft delete answered %v", d)
	}
	env.must(t, 404, "GET", env.dashPath(a, ""), env.owner, "")
	if list := env.must(t, 200, "GET", env.project+"/dashboards/", env.owner, ""); list["count"] != 1.0 {
		t.Fatalf("list after delete: %v", list)
	}
	env.must(t, 404, "GET", insightPath(onlyA), env.owner, "")
	if i := env.must(t, 200, "GET", insightPath(shared), env.owner, ""); fmt.Sprint(i["dashboards"]) != fmt.Sprintf("[%d]", b) {
		t.Fatalf("the insight on B too: %v", i["dashboards"])
	}
	// Only exactly {"deleted": false} restores.
	env.must(t, 404, "PATCH", env.dashPath(a, ""), env.owner, `{"deleted": false, "name": "again"}`)
	d = env.must(t, 200, "PATCH", env.dashPath(a, ""), env.owner, `{"deleted": false}`)
	if d["deleted"] != false || len(d["tiles"].([]any)) != 2 {
		t.Fatalf("restored %v", d)
	}
	env.must(t, 200, "GET", insightPath(onlyA), env.owner, "")
}

func TestDashboardTemplates(t *testing.T) {
	env := newTestEnv(t, "")
	now := time.Now().UTC()
	var events []warehouse.Event
	for i, who := range []string{"u1", "u1", "u2", "u3"} {
		events = append(events, warehouse.Event{Name: "$pageview", DistinctID: who, Timestamp: now.Add(-time.Duration(i) * time.Minute),
			Properties: `{"$browser":"Chrome","$current_url":"https://example.com/"}`})
	}
	env.ingest(t, events...)

	id, d := env.dashboard(t, `{"use_template": "DEFAULT_APP"}`)
	tiles := d["tiles"].([]any)
	if d["creation_mode"] != "template" || d["name"] != "My App Dashboard" || d["use_template"] != "DEFAULT_APP" || len(tiles) != 5 {
		t.Fatalf("from DEFAULT_APP: %v with %d tiles", d["name"], len(tiles))
	}
	dau := tiles[0].(map[string]any)["insight"].(map[string]any)
	lines := dau["result"].(map[string]any)["results"].([]any)
	data := lines[0].(map[string]any)["data"].([]any)
	if dau["name"] != "Daily active users (DAUs)" || data[len(data)-1] != 3.0 || dau["last_refresh"] == nil {
		t.Fatalf("the DAU tile: %v, today %v", dau["name"], data[len(data)-1])
	}
	latest := tiles[4].(map[string]any)["insight"].(map[string]any)
	if rows := latest["result"].(map[string]any)["results"].([]any); len(rows) != 4 {
		t.Fatalf("the latest events tile has %d rows, want 4", len(rows))
	}

	// Duplicates: same insights by default, copies with duplicate_tiles.
	_, same := env.dashboard(t, fmt.Sprintf(`{"name": "Same", "use_dashboard": %d}`, id))
	_, deep := env.dashboard(t, fmt.Sprintf(`{"name": "Deep", "use_dashboard": %d, "duplicate_tiles": true}`, id))
	insightOf := func(d map[string]any, i int) map[string]any {
		return d["tiles"].([]any)[i].(map[string]any)["insight"].(map[string]any)
	}
	if same["creation_mode"] != "duplicate" || insightOf(same, 0)["id"] != dau["id"] {
		t.Fatalf("a duplicate shares the insights: %v", insightOf(same, 0)["id"])
	}
	if copied := insightOf(deep, 0); copied["id"] == dau["id"] || copied["name"] != "Daily active users (DAUs) (Copy)" {
		t.Fatalf("a deep duplicate copies the insights: %v", copied["name"])
	}
	env.run(t, []scenario{
		{name: "unknown template", method: "POST", path: env.project + "/dashboards/", key: env.owner, body: `{"use_template": "NOPE"}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Invalid template provided: NOPE","attr":"use_template"}`}},
		{name: "unknown dashboard to copy", method: "POST", path: env.project + "/dashboards/", key: env.owner, body: `{"use_dashboard": 9999}`,
			status: 400, want: []string{`"detail":"Invalid value provided","attr":"use_dashboard"`}},
		{name: "both", method: "POST", path: env.project + "/dashboards/", key: env.owner, body: fmt.Sprintf(`{"use_template": "DEFAULT_APP", "use_dashboard": %d}`, id),
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"` + "`use_dashboard` and `use_template` cannot be used together" + `","attr":null}`}},
	})
}

func TestCreateFromTemplateJSON(t *testing.T) {
	env := newTestEnv(t, "")
	path := env.project + "/dashboards/create_from_template_json/"
	good := `{"template_name": "Signups", "dashboard_description": "Who signs up", "dashboard_filters": {}, "tags": ["Growth"],
		"tiles": [{"type": "INSIGHT", "name": "Signups a day", "query": {"kind": "TrendsQuery", "series": [{"event": "signed up"}]}},
		          {"type": "TEXT", "body": "Notes", "layouts": {"sm": {"x": 0, "y": 9}}}]}`
	d := env.must(t, 200, "POST", path, env.owner, `{"template": `+good+`}`)
	tiles := d["tiles"].([]any)
	// Tiles come sorted by their small layout's y, as PostHog sorts them: the text card at y 9
	// before the insight that has no layout.
	if d["name"] != "Signups" || d["creation_mode"] != "template" || fmt.Sprint(d["tags"]) != "[growth]" || len(tiles) != 2 ||
		tiles[0].(map[string]any)["text"].(map[string]any)["body"] != "Notes" || tiles[1].(map[string]any)["insight"] == nil {
		t.Fatalf("from template JSON: %v", d)
	}
	for _, c := range []struct{ template, attr string }{
		{`{"dashboard_description": "", "dashboard_filters": {}, "tiles": [{"type": "TEXT", "body": "x"}]}`, "template__template_name"},
		{`{"template_name": "x", "dashboard_description": "", "dashboard_filters": {}, "tiles": []}`, "template__tiles"},
		{`{"template_name": "x", "dashboard_description": "", "dashboard_filters": [], "tiles": [{"type": "TEXT", "body": "x"}]}`, "template__dashboard_filters"},
		{`{"template_name": "x", "dashboard_description": "", "dashboard_filters": {}, "tiles": [{"type": "INSIGHT", "name": "n"}]}`, "template__tiles__0__query"},
		{`{"template_name": "x", "dashboard_description": "", "dashboard_filters": {}, "tiles": [{"type": "CHART"}]}`, "template__tiles__0__type"},
		{`{"template_name": "x", "dashboard_description": "", "dashboard_filters": {}, "tiles": [{"type": "INSIGHT", "name": "n", "query": {"kind": "RetentionQuery"}}]}`, "template__tiles__0__query__kind"},
	} {
		status, out, _ := env.call(t, "POST", path, env.owner, `{"template": `+c.template+`}`)
		if status != 400 || out["type"] != "validation_error" || out["attr"] != c.attr {
			t.Fatalf("%s: %d %v, want 400 on %s", c.template, status, out, c.attr)
		}
	}
	if status, out, _ := env.call(t, "POST", path, env.owner, `{}`); status != 400 || out["attr"] != "template" {
		t.Fatalf("no template: %d %v", status, out)
	}
}

func TestDashboardTiles(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Tiles"}`)
	d := env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"tiles": [
		{"text": {"body": "second"}, "layouts": {"sm": {"x": 0, "y": 5}}},
		{"text": {"body": "first"}, "layouts": {"sm": {"x": 0, "y": 0}}, "color": "blue"},
		{"text": {"body": "no layout"}}]}`)
	var bodies []string
	var ids []int64
	for _, tile := range d["tiles"].([]any) {
		tile := tile.(map[string]any)
		bodies = append(bodies, tile["text"].(map[string]any)["body"].(string))
		ids = append(ids, int64(tile["id"].(float64)))
	}
	if strings.Join(bodies, ",") != "first,second,no layout" {
		t.Fatalf("tiles in layout order: %v", bodies)
	}
	d = env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, fmt.Sprintf(`{"tiles": [
		{"id": %d, "text": {"body": "first, edited"}, "color": "red", "layouts": {"sm": {"x": 0, "y": 9}}},
		{"id": %d, "deleted": true}]}`, ids[0], ids[2]))
	tiles := d["tiles"].([]any)
	last := tiles[len(tiles)-1].(map[string]any)
	if len(tiles) != 2 || last["text"].(map[string]any)["body"] != "first, edited" || last["color"] != "red" {
		t.Fatalf("after edits: %v", tiles)
	}
	env.run(t, []scenario{
		{name: "a tile of another dashboard", method: "PATCH", path: env.dashPath(id, ""), key: env.owner, body: `{"tiles": [{"id": 999, "color": "x"}]}`,
			status: 400, want: []string{`"attr":"tiles__0__id"`}},
		{name: "a text too long", method: "PATCH", path: env.dashPath(id, ""), key: env.owner,
			body: `{"tiles": [{"text": {"body": "` + strings.Repeat("x", 4001) + `"}}]}`, status: 400, want: []string{`"attr":"tiles__0__text__body"`}},
	})
}

func TestMoveTile(t *testing.T) {
	env := newTestEnv(t, "")
	from, _ := env.dashboard(t, `{"name": "From"}`)
	to, _ := env.dashboard(t, `{"name": "To"}`)
	d := env.must(t, 200, "PATCH", env.dashPath(from, ""), env.owner, `{"tiles": [{"text": {"body": "moving"}}]}`)
	tileID := int64(d["tiles"].([]any)[0].(map[string]any)["id"].(float64))
	status, text, _ := env.do(t, "PATCH", env.dashPath(from, "move_tile/"), env.owner, nil, fmt.Sprintf(`{"tile": {"id": %d}, "toDashboard": %d}`, tileID, to))
	if status != 200 || text != "" {
		t.Fatalf("move_tile answered %d %q, want 200 with no body", status, text)
	}
	if tiles := env.must(t, 200, "GET", env.dashPath(from, ""), env.owner, "")["tiles"].([]any); len(tiles) != 0 {
		t.Fatal("the tile is still on the source dashboard")
	}
	moved := env.must(t, 200, "GET", env.dashPath(to, ""), env.owner, "")["tiles"].([]any)
	if len(moved) != 1 || int64(moved[0].(map[string]any)["id"].(float64)) != tileID {
		t.Fatalf("the target's tiles: %v", moved)
	}
	env.run(t, []scenario{
		{name: "a tile not on the dashboard", method: "PATCH", path: env.dashPath(from, "move_tile/"), key: env.owner,
			body: fmt.Sprintf(`{"tile": {"id": %d}, "toDashboard": %d}`, tileID, to), status: 400, want: []string{`"attr":"tile"`}},
		{name: "an unknown target", method: "PATCH", path: env.dashPath(to, "move_tile/"), key: env.owner,
			body: fmt.Sprintf(`{"tile": {"id": %d}, "toDashboard": 9999}`, tileID), status: 404},
		{name: "no tile", method: "PATCH", path: env.dashPath(to, "move_tile/"), key: env.owner, body: `{"toDashboard": 1}`,
			status: 400, want: []string{`"attr":"tile"`}},
	})
}

func TestCollaborators(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Restricted"}`)
	collab := env.dashPath(id, "collaborators/")
	memberID, memberKey := env.member(t, "member@example.com", levelMember, "*")
	_, viewerKey := env.member(t, "viewer@example.com", levelMember, "*")
	adminID, _ := env.member(t, "admin@example.com", levelAdmin, "*")
	var ownerID string
	env.warehouse.DB().QueryRow(`SELECT uuid::VARCHAR FROM meta.users WHERE email = 'owner@example.com'`).Scan(&ownerID)
	_, outsiderKey := env.addUser(t, "stranger@example.com", uuid.Nil, levelOwner, "*")
	var strangerID string
	env.warehouse.DB().QueryRow(`SELECT uuid::VARCHAR FROM meta.users WHERE email = 'stranger@example.com'`).Scan(&strangerID)
	add := func(user string, level int) string { return fmt.Sprintf(`{"user_uuid": %q, "level": %d}`, user, level) }

	env.run(t, []scenario{{name: "lowest restriction level", method: "POST", path: collab, key: env.owner, body: add(memberID, 37),
		status: 400, want: []string{`"detail":"Cannot add collaborators to a dashboard on the lowest restriction level."`}}})
	env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"restriction_level": 37}`)
	env.run(t, []scenario{
		{name: "only edit access", method: "POST", path: collab, key: env.owner, body: add(memberID, 21), status: 400,
			want: []string{`"detail":"Only edit access can be explicitly specified currently."`, `"attr":"level"`}},
		{name: "unknown user", method: "POST", path: collab, key: env.owner, body: add(uuid.NewString(), 37), status: 400,
			want: []string{`"detail":"User does not exist."`}},
		{name: "no access to the project", method: "POST", path: collab, key: env.owner, body: add(strangerID, 37), status: 400,
			want: []string{`"detail":"Cannot add collaborators that have no access to the project."`}},
		{name: "the owner", method: "POST", path: collab, key: env.owner, body: add(ownerID, 37), status: 400,
			want: []string{`"detail":"Cannot add collaborators that already have inherent access (the dashboard owner or a project admins)."`}},
		{name: "a project admin", method: "POST", path: collab, key: env.owner, body: add(adminID, 37), status: 400,
			want: []string{"already have inherent access"}},
		{name: "not the key's organization", method: "POST", path: collab, key: outsiderKey, body: add(memberID, 37), status: 404},
	})
	// A member without edit rights sees the dashboard read-only and cannot add anyone.
	if d := env.must(t, 200, "GET", env.dashPath(id, ""), memberKey, ""); d["effective_privilege_level"] != 21.0 || d["user_access_level"] != "viewer" {
		t.Fatalf("a member on a restricted dashboard: %v %v", d["effective_privilege_level"], d["user_access_level"])
	}
	env.run(t, []scenario{
		{name: "member edits a restricted dashboard", method: "PATCH", path: env.dashPath(id, ""), key: memberKey, body: `{"name": "mine"}`,
			status: 403, want: []string{`"detail":"You don't have edit permissions for this dashboard."`}},
		{name: "member adds a collaborator", method: "POST", path: collab, key: memberKey, body: add(memberID, 37), status: 403},
	})

	r := env.must(t, 201, "POST", collab, env.owner, add(memberID, 37))
	if r["level"] != 37.0 || r["user"].(map[string]any)["uuid"] != memberID || r["dashboard_id"] != float64(id) {
		t.Fatalf("added %v", r)
	}
	env.run(t, []scenario{{name: "twice", method: "POST", path: collab, key: env.owner, body: add(memberID, 37), status: 400,
		want: []string{`"detail":"User already is a collaborator."`}}})
	if list := env.must(t, 200, "GET", env.dashPath(id, ""), memberKey, ""); list["effective_privilege_level"] != 37.0 || list["user_access_level"] != "editor" {
		t.Fatalf("the collaborator's access: %v", list)
	}
	status, text, _ := env.do(t, "GET", collab, env.owner, nil, "")
	var collaborators []map[string]any
	json.Unmarshal([]byte(text), &collaborators)
	if status != 200 || len(collaborators) != 1 || collaborators[0]["user_uuid"] != memberID {
		t.Fatalf("collaborators %d %s", status, text)
	}
	// The collaborator edits; it may not change the restriction level.
	env.must(t, 200, "PATCH", env.dashPath(id, ""), memberKey, `{"name": "edited by a collaborator"}`)
	env.run(t, []scenario{
		{name: "collaborator changes the level", method: "PATCH", path: env.dashPath(id, ""), key: memberKey, body: `{"restriction_level": 21}`,
			status: 403, want: []string{"Only the dashboard owner and project admins have the restriction rights"}},
		{name: "viewer still read-only", method: "PATCH", path: env.dashPath(id, ""), key: viewerKey, body: `{"name": "x"}`, status: 403},
	})
	if status, text, _ := env.do(t, "DELETE", env.dashPath(id, "collaborators/"+memberID+"/"), env.owner, nil, ""); status != 204 || text != "" {
		t.Fatalf("remove: %d %q", status, text)
	}
	env.run(t, []scenario{{name: "remove again", method: "DELETE", path: env.dashPath(id, "collaborators/"+memberID+"/"), key: env.owner, status: 404}})
	env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"restriction_level": 21}`)
	env.run(t, []scenario{{name: "remove on the lowest level", method: "DELETE", path: env.dashPath(id, "collaborators/"+memberID+"/"), key: env.owner,
		status: 400, want: []string{"Cannot remove collaborators from a dashboard on the lowest restriction level."}}})
}

func TestSharing(t *testing.T) {
	env := newTestEnv(t, "")
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "u", Timestamp: time.Now().UTC()})
	id, _ := env.dashboard(t, `{"use_template": "DEFAULT_APP"}`)
	sharing := env.dashPath(id, "sharing/")
	s := env.must(t, 200, "GET", sharing, env.owner, "")
	token, _ := s["access_token"].(string)
	if s["enabled"] != false || !regexp.MustCompile(`^[A-Za-z0-9_-]{30}$`).MatchString(token) || s["created_at"] == nil || len(s) != 3 {
		t.Fatalf("sharing %v", s)
	}
	if again := env.must(t, 200, "GET", sharing, env.owner, ""); again["access_token"] != token {
		t.Fatal("the token changed between two reads")
	}
	public := func(token string) (int, map[string]any) {
		t.Helper()
		status, out, _ := env.call(t, "GET", "/shared/"+token, "", "")
		return status, out
	}
	if status, _ := public(token); status != 404 {
		t.Fatalf("a disabled link answered %d", status)
	}
	env.must(t, 200, "PATCH", sharing, env.owner, `{"enabled": true}`)
	status, d := public(token)
	if status != 200 || d["name"] != "My App Dashboard" || len(d["tiles"].([]any)) != 5 || d["effective_restriction_level"] != 37.0 || d["effective_privilege_level"] != 21.0 {
		t.Fatalf("the public dashboard: %d %v", status, d)
	}
	if result := d["tiles"].([]any)[0].(map[string]any)["insight"].(map[string]any)["result"]; result == nil {
		t.Fatal("the public dashboard's tiles have no results")
	}
	if list := env.must(t, 200, "GET", env.project+"/dashboards/", env.owner, ""); list["results"].([]any)[0].(map[string]any)["is_shared"] != true {
		t.Fatal("is_shared is not true")
	}
	rotated := env.must(t, 200, "POST", env.dashPath(id, "sharing/refresh/"), env.owner, "")["access_token"].(string)
	if rotated == token {
		t.Fatal("refresh kept the token")
	}
	if status, _ := public(token); status != 404 {
		t.Fatalf("the rotated-away token answered %d", status)
	}
	if status, _ := public(rotated); status != 200 {
		t.Fatalf("the new token answered %d", status)
	}
	env.must(t, 200, "PATCH", sharing, env.owner, `{"enabled": false}`)
	if status, _ := public(rotated); status != 404 {
		t.Fatalf("a link disabled again answered %d", status)
	}
	// Sharing a restricted dashboard needs edit rights on it.
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"restriction_level": 37}`)
	env.run(t, []scenario{{name: "member shares a restricted dashboard", method: "PATCH", path: sharing, key: memberKey, body: `{"enabled": true}`,
		status: 403, want: []string{"You don't have edit permissions for this dashboard."}}})
}

// Insight results are computed, cached, and computed again once the project has new events.
func TestInsightResults(t *testing.T) {
	env := newTestEnv(t, "")
	now := time.Now().UTC()
	env.ingest(t, warehouse.Event{Name: "signed up", DistinctID: "u1", Timestamp: now})
	i := env.must(t, 201, "POST", env.project+"/insights/", env.owner,
		`{"name": "Signups", "query": {"kind": "InsightVizNode", "source": {"kind": "TrendsQuery", "series": [{"event": "signed up"}], "dateRange": {"date_from": "-1d"}}}}`)
	path := fmt.Sprintf("%s/insights/%d/", env.project, int64(i["id"].(float64)))
	count := func(i map[string]any) float64 {
		return i["result"].(map[string]any)["results"].([]any)[0].(map[string]any)["count"].(float64)
	}
	if count(i) != 1 || i["is_cached"] != false || i["last_refresh"] == nil {
		t.Fatalf("created %v", i)
	}
	cached := env.must(t, 200, "GET", path, env.owner, "")
	if count(cached) != 1 || cached["is_cached"] != true || cached["last_refresh"] != i["last_refresh"] {
		t.Fatalf("second read: cached %v", cached["is_cached"])
	}
	env.ingest(t, warehouse.Event{Name: "signed up", DistinctID: "u2", Timestamp: now})
	fresh := env.must(t, 200, "GET", path, env.owner, "")
	if count(fresh) != 2 || fresh["is_cached"] != false {
		t.Fatalf("after a new event: count %v, cached %v", count(fresh), fresh["is_cached"])
	}
	// ?refresh= as PostHog's: true and force_blocking compute afresh, the others take
	// the cache's current result; on a dashboard too.
	for _, c := range []struct {
		refresh string
		cached  bool
	}{{"", true}, {"true", false}, {"force_blocking", false}, {"blocking", true}, {"force_cache", true}} {
		got := env.must(t, 200, "GET", path+"?refresh="+c.refresh, env.owner, "")
		if count(got) != 2 || got["is_cached"] != c.cached {
			t.Errorf("refresh=%s: count %v, cached %v", c.refresh, count(got), got["is_cached"])
		}
	}
	dash := env.must(t, 201, "POST", env.project+"/dashboards/", env.owner, `{"name": "Signups"}`)
	dashPath := fmt.Sprintf("%s/dashboards/%d/", env.project, int64(dash["id"].(float64)))
	env.must(t, 200, "PATCH", path, env.owner, fmt.Sprintf(`{"dashboards": [%v]}`, dash["id"]))
	tileOf := func(query string) map[string]any {
		return env.must(t, 200, "GET", dashPath+query, env.owner, "")["tiles"].([]any)[0].(map[string]any)
	}
	if _, again, forced := tileOf(""), tileOf(""), tileOf("?refresh=true"); again["is_cached"] != true || forced["is_cached"] != false {
		t.Errorf("a dashboard's tile: cached %v, then with refresh=true %v", again["is_cached"], forced["is_cached"])
	}
	env.run(t, []scenario{
		{name: "a refresh that is none of PostHog's", method: "GET", path: path + "?refresh=sometimes", key: env.owner,
			status: 400, want: []string{`"attr":"refresh"`}},
		{name: "a query insights cannot compute", method: "POST", path: env.project + "/insights/", key: env.owner,
			body: `{"query": {"kind": "HogQLQuery", "query": "SELECT 1"}}`, status: 400, want: []string{`"attr":"query"`}},
		{name: "insights list", method: "GET", path: env.project + "/insights/", key: env.owner, status: 200, want: []string{`"count":1`, `"short_id":`}},
	})
	env.must(t, 200, "PATCH", path, env.owner, `{"deleted": true}`)
	env.must(t, 404, "GET", path, env.owner, "")
}

// otherProject makes a second project in the bootstrap organization and returns its
// path (/api/projects/{id}).
func (env *testEnv) otherProject(t *testing.T) string {
	t.Helper()
	p := env.must(t, 201, "POST", "/api/organizations/{org}/projects/", env.owner, `{"name": "Other"}`)
	return fmt.Sprintf("/api/projects/%d", int64(p["id"].(float64)))
}

// insight makes an insight of the bootstrap project and returns its id.
func (env *testEnv) insight(t *testing.T, body string) int64 {
	t.Helper()
	i := env.must(t, 201, "POST", env.project+"/insights/", env.owner, body)
	return int64(i["id"].(float64))
}

func (env *testEnv) insightPath(id int64) string {
	return fmt.Sprintf("%s/insights/%d/", env.project, id)
}

// tileIDs are the ids of a dashboard's tiles, in order.
func tileIDs(d map[string]any) []int64 {
	var ids []int64
	for _, tile := range d["tiles"].([]any) {
		ids = append(ids, int64(tile.(map[string]any)["id"].(float64)))
	}
	return ids
}

// answer is one response of a burst of concurrent requests.
type answer struct {
	status int
	body   string
	err    error
}

// burst sends n copies of a request at once (all released together) and returns the
// answers. It runs off the test's goroutine, so transport errors are returned.
func (env *testEnv) burst(n int, method, path, key, body string) []answer {
	answers := make([]answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(method, env.url+env.expand(path), strings.NewReader(body))
			if err != nil {
				answers[i].err = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+key)
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers[i].err = err
				return
			}
			defer resp.Body.Close()
			text, err := io.ReadAll(resp.Body)
			answers[i] = answer{status: resp.StatusCode, body: string(text), err: err}
		}()
	}
	close(start)
	wg.Wait()
	return answers
}

const concurrentRequests = 32

// Concurrent reads of one dashboard all succeed: a read writes nothing that two
// transactions could conflict on.
func TestDashboardConcurrentRetrieve(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Busy"}`)
	env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"tiles": [{"text": {"body": "hello"}}]}`)
	env.insight(t, fmt.Sprintf(`{"name": "Views", "query": {"kind": "TrendsQuery", "series": [{"event": "$pageview"}]}, "dashboards": [%d]}`, id))
	for i, a := range env.burst(concurrentRequests, "GET", env.dashPath(id, ""), env.owner, "") {
		if a.err != nil || a.status != 200 || !strings.Contains(a.body, `"name":"Busy"`) {
			t.Fatalf("read %d: %d %v %s", i, a.status, a.err, a.body)
		}
	}
}

// Concurrent first reads of a sharing configuration all answer the same one.
func TestSharingConcurrentFirstRetrieve(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Shared"}`)
	tokens := map[string]int{}
	for i, a := range env.burst(concurrentRequests, "GET", env.dashPath(id, "sharing/"), env.owner, "") {
		var s map[string]any
		if a.err != nil || a.status != 200 || json.Unmarshal([]byte(a.body), &s) != nil {
			t.Fatalf("read %d: %d %v %s", i, a.status, a.err, a.body)
		}
		tokens[s["access_token"].(string)]++
	}
	if len(tokens) != 1 {
		t.Fatalf("concurrent first reads answered %d different tokens: %v", len(tokens), tokens)
	}
	if s := env.must(t, 200, "GET", env.dashPath(id, "sharing/"), env.owner, ""); tokens[s["access_token"].(string)] == 0 {
		t.Fatalf("a later read answered another token: %v", s)
	}
}

// Concurrent requests to add the same collaborator: one adds it, the others are told
// it already is one.
func TestCollaboratorConcurrentAdd(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Restricted", "restriction_level": 37}`)
	memberID, _ := env.member(t, "member@example.com", levelMember, "*")
	created := 0
	for i, a := range env.burst(concurrentRequests, "POST", env.dashPath(id, "collaborators/"), env.owner, fmt.Sprintf(`{"user_uuid": %q, "level": 37}`, memberID)) {
		switch {
		case a.err == nil && a.status == 201:
			created++
		case a.err == nil && a.status == 400 && a.body == `{"type":"validation_error","code":"unique","detail":"User already is a collaborator.","attr":"user_uuid"}`:
		default:
			t.Fatalf("request %d: %d %v %s", i, a.status, a.err, a.body)
		}
	}
	status, text, _ := env.do(t, "GET", env.dashPath(id, "collaborators/"), env.owner, nil, "")
	var collaborators []map[string]any
	if created != 1 || status != 200 || json.Unmarshal([]byte(text), &collaborators) != nil || len(collaborators) != 1 {
		t.Fatalf("%d added; collaborators %d %s", created, status, text)
	}
}

// PostHog's field rules for dashboards and their tiles.
func TestDashboardValidation(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Rules"}`)
	d := env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"tiles": [{"text": {"body": "card"}}]}`)
	tile := tileIDs(d)[0]
	long := strings.Repeat("c", 401)
	nullField := func(attr string) string {
		return `{"type":"validation_error","code":"null","detail":"This field may not be null.","attr":"` + attr + `"}`
	}
	env.run(t, []scenario{
		{name: "description null on create", method: "POST", path: env.project + "/dashboards/", key: env.owner, body: `{"name": "x", "description": null}`,
			status: 400, want: []string{nullField("description")}},
		{name: "pinned null on create", method: "POST", path: env.project + "/dashboards/", key: env.owner, body: `{"name": "x", "pinned": null}`,
			status: 400, want: []string{nullField("pinned")}},
		{name: "description null", method: "PATCH", path: env.dashPath(id, ""), key: env.owner, body: `{"description": null}`,
			status: 400, want: []string{nullField("description")}},
		{name: "pinned null", method: "PATCH", path: env.dashPath(id, ""), key: env.owner, body: `{"pinned": null}`,
			status: 400, want: []string{nullField("pinned")}},
		{name: "name null clears it", method: "PATCH", path: env.dashPath(id, ""), key: env.owner, body: `{"name": null}`,
			status: 200, want: []string{`"name":null`}},
		{name: "color too long on a new tile", method: "PATCH", path: env.dashPath(id, ""), key: env.owner,
			body: `{"tiles": [{"text": {"body": "x"}, "color": "` + long + `"}]}`, status: 400,
			want: []string{`{"type":"validation_error","code":"max_length","detail":"Ensure this field has no more than 400 characters.","attr":"tiles__0__color"}`}},
		{name: "color too long on a tile", method: "PATCH", path: env.dashPath(id, ""), key: env.owner,
			body: fmt.Sprintf(`{"tiles": [{"id": %d, "color": %q}]}`, tile, long), status: 400, want: []string{`"attr":"tiles__0__color"`}},
		{name: "color of 400 characters", method: "PATCH", path: env.dashPath(id, ""), key: env.owner,
			body: fmt.Sprintf(`{"tiles": [{"id": %d, "color": %q}]}`, tile, long[1:]), status: 200, want: []string{`"color":"` + long[1:] + `"`}},
		{name: "filters_overrides not an object", method: "PATCH", path: env.dashPath(id, ""), key: env.owner,
			body: fmt.Sprintf(`{"tiles": [{"id": %d, "filters_overrides": [1]}]}`, tile), status: 400,
			want: []string{`"code":"invalid_input"`, `"attr":"tiles__0__filters_overrides"`}},
		{name: "filters_overrides a string", method: "PATCH", path: env.dashPath(id, ""), key: env.owner,
			body: fmt.Sprintf(`{"tiles": [{"id": %d, "filters_overrides": "x"}]}`, tile), status: 400,
			want: []string{`"attr":"tiles__0__filters_overrides"`}},
	})
	// Nothing of a refused request was kept.
	if d := env.must(t, 200, "GET", env.dashPath(id, ""), env.owner, ""); len(d["tiles"].([]any)) != 1 || d["description"] != "" || d["pinned"] != false {
		t.Fatalf("after refused edits: %v", d)
	}
}

// A viewer is refused before its body is looked at, as DRF checks object permissions
// before the serializer.
func TestDashboardEditRightsBeforeValidation(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Restricted", "restriction_level": 37}`)
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	for _, body := range []string{`{"restriction_level": 50}`, `{"name": 5}`, `{"description": null}`, `not json`} {
		env.run(t, []scenario{{name: "viewer sends " + body, method: "PATCH", path: env.dashPath(id, ""), key: memberKey, body: body,
			status: 403, want: []string{`{"type":"authentication_error","code":"permission_denied","detail":"You don't have edit permissions for this dashboard.","attr":null}`}}})
	}
}

// The list sorts names in any case, as PostHog's Postgres collation does, and pages.
func TestDashboardListOrderAndPages(t *testing.T) {
	env := newTestEnv(t, "")
	for _, name := range []string{"cherry", "Banana", "", "apple", "Date"} {
		env.dashboard(t, fmt.Sprintf(`{"name": %q}`, name))
	}
	env.dashboard(t, `{"name": "zebra", "pinned": true}`)
	names := func(list map[string]any) string {
		var out []string
		for _, r := range list["results"].([]any) {
			out = append(out, fmt.Sprint(r.(map[string]any)["name"]))
		}
		return strings.Join(out, ",")
	}
	if got := names(env.must(t, 200, "GET", env.project+"/dashboards/", env.owner, "")); got != "zebra,apple,Banana,cherry,Date,<nil>" {
		t.Fatalf("list order %s", got)
	}
	first := env.must(t, 200, "GET", env.project+"/dashboards/?limit=2", env.owner, "")
	if names(first) != "zebra,apple" || first["count"] != 6.0 || first["previous"] != nil ||
		first["next"] != env.url+env.project+"/dashboards/?limit=2&offset=2" {
		t.Fatalf("first page %s, count %v, next %v, previous %v", names(first), first["count"], first["next"], first["previous"])
	}
	second := env.must(t, 200, "GET", strings.TrimPrefix(first["next"].(string), env.url), env.owner, "")
	if names(second) != "Banana,cherry" || second["previous"] != env.url+env.project+"/dashboards/?limit=2" {
		t.Fatalf("second page %s, previous %v", names(second), second["previous"])
	}
	last := env.must(t, 200, "GET", env.project+"/dashboards/?limit=2&offset=4", env.owner, "")
	if names(last) != "Date,<nil>" || last["next"] != nil {
		t.Fatalf("last page %s, next %v", names(last), last["next"])
	}
}

// Who may do what on a dashboard, by PostHog's restriction levels.
func TestDashboardAccessLevels(t *testing.T) {
	env := newTestEnv(t, "")
	_, adminKey := env.member(t, "admin@example.com", levelAdmin, "*")
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	open, _ := env.dashboard(t, `{"name": "Open"}`)
	restricted, _ := env.dashboard(t, `{"name": "Restricted", "restriction_level": 37}`)

	// An admin who did not create it manages it.
	if d := env.must(t, 200, "GET", env.dashPath(restricted, ""), adminKey, ""); d["user_access_level"] != "manager" || d["effective_privilege_level"] != 37.0 {
		t.Fatalf("an admin sees %v %v", d["user_access_level"], d["effective_privilege_level"])
	}
	if d := env.must(t, 200, "PATCH", env.dashPath(restricted, ""), adminKey, `{"restriction_level": 21}`); d["restriction_level"] != 21.0 {
		t.Fatalf("an admin changed the level: %v", d["restriction_level"])
	}
	env.must(t, 200, "PATCH", env.dashPath(restricted, ""), adminKey, `{"restriction_level": 37}`)

	// A member edits an open dashboard, but may not restrict it.
	if d := env.must(t, 200, "GET", env.dashPath(open, ""), memberKey, ""); d["user_access_level"] != "editor" || d["effective_privilege_level"] != 37.0 {
		t.Fatalf("a member on an open dashboard sees %v %v", d["user_access_level"], d["effective_privilege_level"])
	}
	if d := env.must(t, 200, "PATCH", env.dashPath(open, ""), memberKey, `{"name": "Open, edited", "tiles": [{"text": {"body": "by a member"}}]}`); d["name"] != "Open, edited" || len(d["tiles"].([]any)) != 1 {
		t.Fatalf("a member edited %v", d)
	}
	env.run(t, []scenario{
		{name: "member restricts", method: "PATCH", path: env.dashPath(open, ""), key: memberKey, body: `{"restriction_level": 37}`, status: 403,
			want: []string{`"detail":"Only the dashboard owner and project admins have the restriction rights required to change the dashboard's restriction level."`}},
		{name: "member sends the level it has", method: "PATCH", path: env.dashPath(open, ""), key: memberKey, body: `{"restriction_level": 21}`, status: 200},
		{name: "member soft-deletes a restricted dashboard", method: "PATCH", path: env.dashPath(restricted, ""), key: memberKey,
			body: `{"deleted": true}`, status: 403, want: []string{"You don't have edit permissions for this dashboard."}},
	})
	if d := env.must(t, 200, "GET", env.dashPath(restricted, ""), env.owner, ""); d["deleted"] != false {
		t.Fatal("a refused soft delete deleted the dashboard")
	}
	// Restoring needs edit rights too.
	env.must(t, 200, "PATCH", env.dashPath(restricted, ""), env.owner, `{"deleted": true}`)
	env.run(t, []scenario{{name: "member restores a restricted dashboard", method: "PATCH", path: env.dashPath(restricted, ""), key: memberKey,
		body: `{"deleted": false}`, status: 403, want: []string{"You don't have edit permissions for this dashboard."}}})
	env.must(t, 404, "GET", env.dashPath(restricted, ""), env.owner, "")
	env.must(t, 200, "PATCH", env.dashPath(restricted, ""), adminKey, `{"deleted": false}`)
}

// tilesDeleted are the deleted flags of a dashboard's tile rows, by tile id.
func (env *testEnv) tilesDeleted(t *testing.T, dashboard int64) map[int64]bool {
	t.Helper()
	rows, err := env.warehouse.DB().Query(`SELECT id, deleted FROM meta.dashboard_tiles WHERE dashboard_id = ?`, dashboard)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	flags := map[int64]bool{}
	for rows.Next() {
		var id int64
		var deleted bool
		if err := rows.Scan(&id, &deleted); err != nil {
			t.Fatal(err)
		}
		flags[id] = deleted
	}
	return flags
}

// A soft delete without delete_insights keeps the insights, and marks the tile rows
// deleted; a restore brings them back.
func TestDashboardSoftDeleteKeepsInsights(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Doomed"}`)
	insight := env.insight(t, fmt.Sprintf(`{"name": "only here", "query": {"kind": "TrendsQuery", "series": [{"event": "$pageview"}]}, "dashboards": [%d]}`, id))
	d := env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"tiles": [{"text": {"body": "card"}}]}`)
	if len(tileIDs(d)) != 2 {
		t.Fatalf("tiles %v", d["tiles"])
	}
	env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"deleted": true, "delete_insights": false}`)
	flags := env.tilesDeleted(t, id)
	if len(flags) != 2 {
		t.Fatalf("tile rows %v", flags)
	}
	for tile, deleted := range flags {
		if !deleted {
			t.Fatalf("tile %d of a deleted dashboard is not marked deleted", tile)
		}
	}
	i := env.must(t, 200, "GET", env.insightPath(insight), env.owner, "")
	if i["deleted"] != false || fmt.Sprint(i["dashboards"]) != "[]" {
		t.Fatalf("the insight after its dashboard was deleted: %v %v", i["deleted"], i["dashboards"])
	}
	env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"deleted": false}`)
	for tile, deleted := range env.tilesDeleted(t, id) {
		if deleted {
			t.Fatalf("tile %d still deleted after the restore", tile)
		}
	}
	if i := env.must(t, 200, "GET", env.insightPath(insight), env.owner, ""); fmt.Sprint(i["dashboards"]) != fmt.Sprintf("[%d]", id) {
		t.Fatalf("the insight after the restore: %v", i["dashboards"])
	}
}

func TestMoveTileRules(t *testing.T) {
	env := newTestEnv(t, "")
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	textTile := func(dashboard int64) int64 {
		t.Helper()
		ids := tileIDs(env.must(t, 200, "PATCH", env.dashPath(dashboard, ""), env.owner, `{"tiles": [{"text": {"body": "tile"}}]}`))
		return ids[len(ids)-1]
	}
	move := func(tile, to int64) string { return fmt.Sprintf(`{"tile": {"id": %d}, "toDashboard": %d}`, tile, to) }
	open, _ := env.dashboard(t, `{"name": "Open"}`)
	open2, _ := env.dashboard(t, `{"name": "Open too"}`)
	restricted, _ := env.dashboard(t, `{"name": "Restricted", "restriction_level": 37}`)
	deleted, _ := env.dashboard(t, `{"name": "Deleted"}`)
	env.must(t, 200, "PATCH", env.dashPath(deleted, ""), env.owner, `{"deleted": true}`)
	other := env.otherProject(t)
	foreign := int64(env.must(t, 201, "POST", other+"/dashboards/", env.owner, `{"name": "Elsewhere"}`)["id"].(float64))
	onOpen, onRestricted := textTile(open), textTile(restricted)

	noEdit := `{"type":"authentication_error","code":"permission_denied","detail":"You don't have edit permissions for this dashboard.","attr":null}`
	env.run(t, []scenario{
		{name: "to a dashboard of another project", method: "PATCH", path: env.dashPath(open, "move_tile/"), key: env.owner, body: move(onOpen, foreign),
			status: 404, want: []string{`"detail":"Dashboard not found."`}},
		{name: "to a deleted dashboard", method: "PATCH", path: env.dashPath(open, "move_tile/"), key: env.owner, body: move(onOpen, deleted),
			status: 404, want: []string{`"detail":"Dashboard not found."`}},
		{name: "from a deleted dashboard", method: "PATCH", path: env.dashPath(deleted, "move_tile/"), key: env.owner, body: move(onOpen, open),
			status: 404},
		{name: "without edit rights on the source", method: "PATCH", path: env.dashPath(restricted, "move_tile/"), key: memberKey,
			body: move(onRestricted, open), status: 403, want: []string{noEdit}},
		{name: "without edit rights on the target", method: "PATCH", path: env.dashPath(open, "move_tile/"), key: memberKey,
			body: move(onOpen, restricted), status: 403, want: []string{noEdit}},
	})
	// Nothing moved.
	if ids := tileIDs(env.must(t, 200, "GET", env.dashPath(open, ""), env.owner, "")); fmt.Sprint(ids) != fmt.Sprintf("[%d]", onOpen) {
		t.Fatalf("the open dashboard's tiles after refused moves: %v", ids)
	}
	if d := env.must(t, 200, "GET", other+fmt.Sprintf("/dashboards/%d/", foreign), env.owner, ""); len(d["tiles"].([]any)) != 0 {
		t.Fatalf("the other project's dashboard got a tile: %v", d["tiles"])
	}
	// A member moves between dashboards it may edit.
	if status, text, _ := env.do(t, "PATCH", env.dashPath(open, "move_tile/"), memberKey, nil, move(onOpen, open2)); status != 200 || text != "" {
		t.Fatalf("a member's move: %d %q", status, text)
	}
}

func TestCollaboratorRules(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Restricted", "restriction_level": 37}`)
	collab := env.dashPath(id, "collaborators/")
	memberID, memberKey := env.member(t, "member@example.com", levelMember, "*")
	goneID, _ := env.member(t, "gone@example.com", levelMember, "*")
	if _, err := env.warehouse.DB().Exec(`UPDATE meta.users SET is_active = false WHERE email = 'gone@example.com'`); err != nil {
		t.Fatal(err)
	}
	env.must(t, 201, "POST", collab, env.owner, fmt.Sprintf(`{"user_uuid": %q, "level": 37}`, memberID))
	otherID, otherKey := env.member(t, "other@example.com", levelMember, "*")
	env.must(t, 201, "POST", collab, env.owner, fmt.Sprintf(`{"user_uuid": %q, "level": 37}`, otherID))
	notFound := `{"type":"invalid_request","code":"not_found","detail":"Dashboard not found.","attr":null}`
	_, viewerKey := env.member(t, "viewer@example.com", levelMember, "*")
	env.run(t, []scenario{
		{name: "an inactive user", method: "POST", path: collab, key: env.owner, body: fmt.Sprintf(`{"user_uuid": %q, "level": 37}`, goneID),
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"User does not exist.","attr":"user_uuid"}`}},
		{name: "remove by a non-editor", method: "DELETE", path: env.dashPath(id, "collaborators/"+memberID+"/"), key: viewerKey, status: 403,
			want: []string{`"detail":"You don't have edit permissions for this dashboard."`}},
		{name: "list of an unknown dashboard", method: "GET", path: env.dashPath(9999, "collaborators/"), key: env.owner, status: 404, want: []string{notFound}},
		{name: "add to an unknown dashboard", method: "POST", path: env.dashPath(9999, "collaborators/"), key: env.owner,
			body: fmt.Sprintf(`{"user_uuid": %q, "level": 37}`, memberID), status: 404, want: []string{notFound}},
		{name: "remove from an unknown dashboard", method: "DELETE", path: env.dashPath(9999, "collaborators/"+memberID+"/"), key: env.owner,
			status: 404, want: []string{notFound}},
		{name: "a dashboard id that is no number", method: "GET", path: env.project + "/dashboards/abc/collaborators/", key: env.owner, status: 404, want: []string{notFound}},
	})
	// A collaborator may remove another one: it has edit rights.
	if status, _, _ := env.do(t, "DELETE", env.dashPath(id, "collaborators/"+otherID+"/"), memberKey, nil, ""); status != 204 {
		t.Fatalf("a collaborator removing another: %d", status)
	}
	env.run(t, []scenario{{name: "a removed collaborator edits", method: "PATCH", path: env.dashPath(id, ""), key: otherKey, body: `{"name": "x"}`, status: 403}})
}

func TestSharingRules(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Restricted", "restriction_level": 37}`)
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	s := env.must(t, 200, "GET", env.dashPath(id, "sharing/"), memberKey, "") // reading needs no edit rights
	token := s["access_token"].(string)
	env.run(t, []scenario{{name: "refresh by a non-editor", method: "POST", path: env.dashPath(id, "sharing/refresh/"), key: memberKey, status: 403,
		want: []string{`{"type":"authentication_error","code":"permission_denied","detail":"You don't have edit permissions for this dashboard.","attr":null}`}}})
	if again := env.must(t, 200, "GET", env.dashPath(id, "sharing/"), env.owner, ""); again["access_token"] != token {
		t.Fatal("a refused refresh rotated the token")
	}
	env.must(t, 200, "PATCH", env.dashPath(id, "sharing/"), env.owner, `{"enabled": true}`)
	env.must(t, 200, "GET", "/shared/"+token, "", "")
	env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"deleted": true}`)
	env.run(t, []scenario{
		{name: "public link of a deleted dashboard", method: "GET", path: "/shared/" + token, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}},
		{name: "sharing of a deleted dashboard", method: "GET", path: env.dashPath(id, "sharing/"), key: env.owner, status: 404},
	})
	env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, `{"deleted": false}`)
	env.must(t, 200, "GET", "/shared/"+token, "", "")
}

// Insight tiles take layouts, colors and filter overrides like text cards.
func TestInsightTileEdits(t *testing.T) {
	env := newTestEnv(t, "")
	id, _ := env.dashboard(t, `{"name": "Tiles"}`)
	insight := env.insight(t, fmt.Sprintf(`{"name": "Views", "query": {"kind": "TrendsQuery", "series": [{"event": "$pageview"}]}, "dashboards": [%d]}`, id))
	tile := tileIDs(env.must(t, 200, "GET", env.dashPath(id, ""), env.owner, ""))[0]
	d := env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, fmt.Sprintf(`{"tiles": [{"id": %d, "color": "purple",
		"layouts": {"sm": {"x": 2, "y": 3, "w": 6, "h": 5}}, "filters_overrides": {"date_from": "-30d"}}]}`, tile))
	got := d["tiles"].([]any)[0].(map[string]any)
	if got["color"] != "purple" || mustText(t, got["layouts"]) != `{"sm":{"h":5,"w":6,"x":2,"y":3}}` ||
		mustText(t, got["filters_overrides"]) != `{"date_from":"-30d"}` || got["insight"].(map[string]any)["id"] != float64(insight) {
		t.Fatalf("edited insight tile %v", got)
	}
	// Kept, and the insight is not changed by it.
	got = env.must(t, 200, "GET", env.dashPath(id, ""), env.owner, "")["tiles"].([]any)[0].(map[string]any)
	if got["color"] != "purple" || mustText(t, got["filters_overrides"]) != `{"date_from":"-30d"}` {
		t.Fatalf("insight tile after a read %v", got)
	}
	d = env.must(t, 200, "PATCH", env.dashPath(id, ""), env.owner, fmt.Sprintf(`{"tiles": [{"id": %d, "color": null, "filters_overrides": {}}]}`, tile))
	if got := d["tiles"].([]any)[0].(map[string]any); got["color"] != nil || mustText(t, got["filters_overrides"]) != `{}` || got["layouts"] == nil {
		t.Fatalf("insight tile after clearing %v", got)
	}
}

// use_dashboard copies only dashboards of the same project.
func TestDuplicateOtherProjectDashboard(t *testing.T) {
	env := newTestEnv(t, "")
	other := env.otherProject(t)
	foreign := int64(env.must(t, 201, "POST", other+"/dashboards/", env.owner, `{"name": "Elsewhere"}`)["id"].(float64))
	env.run(t, []scenario{{name: "use_dashboard of another project", method: "POST", path: env.project + "/dashboards/", key: env.owner,
		body: fmt.Sprintf(`{"name": "Copy", "use_dashboard": %d}`, foreign), status: 400,
		want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Invalid value provided","attr":"use_dashboard"}`}}})
	if list := env.must(t, 200, "GET", env.project+"/dashboards/", env.owner, ""); list["count"] != 0.0 {
		t.Fatalf("a refused copy made a dashboard: %v", list)
	}
}

// move_tile and create_from_template_json need dashboard:write, which PostHog leaves
// undocumented: written out here, not taken from the route table.
func TestDashboardActionScopes(t *testing.T) {
	env := newTestEnv(t, "")
	from, _ := env.dashboard(t, `{"name": "From"}`)
	to, _ := env.dashboard(t, `{"name": "To"}`)
	tile := tileIDs(env.must(t, 200, "PATCH", env.dashPath(from, ""), env.owner, `{"tiles": [{"text": {"body": "x"}}]}`))[0]
	_, readKey := env.addUser(t, "reader@example.com", env.org, levelOwner, "dashboard:read")
	_, writeKey := env.addUser(t, "writer@example.com", env.org, levelOwner, "dashboard:write")
	missing := `{"type":"authentication_error","code":"permission_denied","detail":"API key missing required scope 'dashboard:write'","attr":null}`
	template := `{"template": {"template_name": "T", "dashboard_description": "", "dashboard_filters": {}, "tiles": [{"type": "TEXT", "body": "x"}]}}`
	moveBody := fmt.Sprintf(`{"tile": {"id": %d}, "toDashboard": %d}`, tile, to)
	env.run(t, []scenario{
		{name: "move_tile with dashboard:read", method: "PATCH", path: env.dashPath(from, "move_tile/"), key: readKey, body: moveBody, status: 403, want: []string{missing}},
		{name: "create_from_template_json with dashboard:read", method: "POST", path: env.project + "/dashboards/create_from_template_json/", key: readKey,
			body: template, status: 403, want: []string{missing}},
		{name: "move_tile with dashboard:write", method: "PATCH", path: env.dashPath(from, "move_tile/"), key: writeKey, body: moveBody, status: 200},
		{name: "create_from_template_json with dashboard:write", method: "POST", path: env.project + "/dashboards/create_from_template_json/", key: writeKey,
			body: template, status: 200, want: []string{`"name":"T"`}},
	})
}

// The insights and text cards of a restricted dashboard are edited only by its editors,
// whichever dashboard they are reached through: a member's shallow copy shares them,
// and the member edits the copy's tiles (their layouts, colors, being on the copy) and
// its own content, never the shared content. Restoring a dashboard restores only the
// insights the caller may edit. A deleted dashboard no longer restricts.
func TestSharedContentEditRights(t *testing.T) {
	env := newTestEnv(t, "")
	collaboratorID, collaboratorKey := env.member(t, "collaborator@example.com", levelMember, "*")
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	restricted, _ := env.dashboard(t, `{"name": "Restricted", "restriction_level": 37}`)
	env.must(t, 201, "POST", env.dashPath(restricted, "collaborators/"), env.owner, fmt.Sprintf(`{"user_uuid": %q, "level": 37}`, collaboratorID))
	insight := env.insight(t, fmt.Sprintf(`{"name": "Guarded", "query": %s, "dashboards": [%d]}`, viewsQuery, restricted))
	env.must(t, 200, "PATCH", env.dashPath(restricted, ""), env.owner, `{"tiles": [{"text": {"body": "guarded"}}]}`)
	open, _ := env.dashboard(t, `{"name": "Open"}`)

	shallow := env.must(t, 201, "POST", env.project+"/dashboards/", memberKey, fmt.Sprintf(`{"name": "Copy", "use_dashboard": %d}`, restricted))
	copyID := int64(shallow["id"].(float64))
	var insightTile, textTile int64
	for _, tile := range shallow["tiles"].([]any) {
		if tile := tile.(map[string]any); tile["text"] != nil {
			textTile = int64(tile["id"].(float64))
		} else {
			insightTile = int64(tile["id"].(float64))
		}
	}
	canEdit := func(what string) []string {
		return []string{`{"type":"authentication_error","code":"permission_denied","detail":"This ` + what +
			` is on a dashboard that can only be edited by its owner, team members invited to editing the dashboard, and project admins.","attr":null}`}
	}
	env.run(t, []scenario{
		{name: "the text card through the copy, with a tile edit", method: "PATCH", path: env.dashPath(copyID, ""), key: memberKey,
			body:   fmt.Sprintf(`{"name": "Renamed copy", "tiles": [{"id": %d, "color": "red"}, {"id": %d, "text": {"body": "mine"}}]}`, insightTile, textTile),
			status: 403, want: canEdit("text card")},
		{name: "the insight's query", method: "PATCH", path: env.insightPath(insight), key: memberKey,
			body: `{"query": {"kind": "TrendsQuery", "series": [{"event": "mine"}]}}`, status: 403, want: canEdit("insight")},
		{name: "the insight onto another dashboard", method: "PATCH", path: env.insightPath(insight), key: memberKey,
			body: fmt.Sprintf(`{"dashboards": [%d, %d, %d]}`, restricted, copyID, open), status: 403, want: canEdit("insight")},
		{name: "the copy's own tiles", method: "PATCH", path: env.dashPath(copyID, ""), key: memberKey,
			body:   fmt.Sprintf(`{"tiles": [{"id": %d, "color": "red", "layouts": {"sm": {"x": 0, "y": 1}}}, {"id": %d, "color": "blue"}, {"text": {"body": "my own card"}}]}`, insightTile, textTile),
			status: 200, want: []string{`"color":"red"`, `"color":"blue"`, `"body":"my own card"`}},
	})
	original := mustText(t, env.must(t, 200, "GET", env.dashPath(restricted, ""), env.owner, "")["tiles"])
	if !strings.Contains(original, `"body":"guarded"`) || strings.Contains(original, `"color":"red"`) || strings.Contains(original, "my own card") ||
		!strings.Contains(original, `"name":"Guarded"`) || strings.Contains(original, `"event": "mine"`) {
		t.Fatalf("the restricted dashboard after the member's edits: %s", original)
	}
	// The member's own text card on the copy is its own.
	ownCard := tileIDs(env.must(t, 200, "GET", env.dashPath(copyID, ""), memberKey, ""))
	env.must(t, 200, "PATCH", env.dashPath(copyID, ""), memberKey, fmt.Sprintf(`{"tiles": [{"id": %d, "text": {"body": "edited"}}]}`, ownCard[len(ownCard)-1]))
	// A collaborator of the restricted dashboard edits the shared card through the copy.
	env.must(t, 200, "PATCH", env.dashPath(copyID, ""), collaboratorKey, fmt.Sprintf(`{"tiles": [{"id": %d, "text": {"body": "by the collaborator"}}]}`, textTile))
	if text := mustText(t, env.must(t, 200, "GET", env.dashPath(restricted, ""), env.owner, "")["tiles"]); !strings.Contains(text, "by the collaborator") {
		t.Fatalf("the collaborator's edit is not on the restricted dashboard: %s", text)
	}
	// A deep copy is the member's own.
	deep := env.must(t, 201, "POST", env.project+"/dashboards/", memberKey, fmt.Sprintf(`{"name": "Deep", "use_dashboard": %d, "duplicate_tiles": true}`, restricted))
	for _, tile := range deep["tiles"].([]any) {
		tile := tile.(map[string]any)
		if tile["insight"] != nil {
			env.must(t, 200, "PATCH", env.insightPath(int64(tile["insight"].(map[string]any)["id"].(float64))), memberKey, `{"name": "My copy"}`)
		} else {
			env.must(t, 200, "PATCH", env.dashPath(int64(deep["id"].(float64)), ""), memberKey, fmt.Sprintf(`{"tiles": [{"id": %d, "text": {"body": "my copy"}}]}`, int64(tile["id"].(float64))))
		}
	}

	// Deleted by its editor, the insight stays deleted when the member deletes and
	// restores its copy: restoring is editing it.
	env.must(t, 200, "PATCH", env.insightPath(insight), env.owner, `{"deleted": true}`)
	env.must(t, 200, "PATCH", env.dashPath(copyID, ""), memberKey, `{"deleted": true}`)
	env.must(t, 200, "PATCH", env.dashPath(copyID, ""), memberKey, `{"deleted": false}`)
	env.must(t, 404, "GET", env.insightPath(insight), env.owner, "")
	// The restricted dashboard's editor restores it with the dashboard.
	env.must(t, 200, "PATCH", env.dashPath(restricted, ""), env.owner, `{"deleted": true}`)
	env.must(t, 200, "PATCH", env.dashPath(restricted, ""), env.owner, `{"deleted": false}`)
	env.must(t, 200, "GET", env.insightPath(insight), env.owner, "")

	// An insight only on an open dashboard, deleted with it by a member, comes back with it.
	mine, _ := env.dashboard(t, `{"name": "Mine"}`)
	own := env.insight(t, fmt.Sprintf(`{"name": "Own", "query": %s, "dashboards": [%d]}`, viewsQuery, mine))
	env.must(t, 200, "PATCH", env.dashPath(mine, ""), memberKey, `{"deleted": true, "delete_insights": true}`)
	env.must(t, 404, "GET", env.insightPath(own), env.owner, "")
	env.must(t, 200, "PATCH", env.dashPath(mine, ""), memberKey, `{"deleted": false}`)
	env.must(t, 200, "GET", env.insightPath(own), memberKey, "")

	// Once the restricted dashboard is deleted, nothing restricts its content.
	env.must(t, 200, "PATCH", env.dashPath(restricted, ""), env.owner, `{"deleted": true}`)
	if i := env.must(t, 200, "PATCH", env.insightPath(insight), memberKey, `{"name": "Free now"}`); i["name"] != "Free now" {
		t.Fatalf("renamed %v", i["name"])
	}
}

// The public link answers what rendering the shared tiles needs, and nothing about
// people or other objects: no user objects (e-mails, uuids, ids, distinct ids), no
// other dashboards (an insight's dashboards and dashboard_tiles), no ids.
func TestSharedLinkShape(t *testing.T) {
	env := newTestEnv(t, "")
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "u", Timestamp: time.Now().UTC()})
	editorID, editorKey := env.member(t, "editor@example.com", levelAdmin, "*")
	id, _ := env.dashboard(t, `{"name": "Public", "description": "For everyone", "filters": {"date_from": "-7d"}, "tags": ["internal-tag"]}`)
	unshared, _ := env.dashboard(t, `{"name": "Unshared"}`)
	insight := env.insight(t, fmt.Sprintf(`{"name": "Views", "description": "Page views", "query": %s, "dashboards": [%d, %d]}`, viewsQuery, id, unshared))
	env.must(t, 200, "PATCH", env.insightPath(insight), editorKey, `{"name": "Views"}`) // last_modified_by: the editor
	env.must(t, 200, "PATCH", env.dashPath(id, ""), editorKey, `{"tiles": [{"text": {"body": "Read me"}, "layouts": {"sm": {"x": 0, "y": 9, "w": 6, "h": 2}}, "color": "blue"}]}`)
	token := env.must(t, 200, "PATCH", env.dashPath(id, "sharing/"), env.owner, `{"enabled": true}`)["access_token"].(string)

	status, d, text := env.call(t, "GET", "/shared/"+token, "", "")
	if status != 200 {
		t.Fatalf("the public link: %d %s", status, text)
	}
	var ownerID int64
	var ownerUUID, ownerDistinct, editorDistinct string
	if err := env.warehouse.DB().QueryRow(`SELECT id, uuid::VARCHAR, distinct_id FROM meta.users WHERE email = 'owner@example.com'`).Scan(&ownerID, &ownerUUID, &ownerDistinct); err != nil {
		t.Fatal(err)
	}
	if err := env.warehouse.DB().QueryRow(`SELECT distinct_id FROM meta.users WHERE email = 'editor@example.com'`).Scan(&editorDistinct); err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"owner@example.com", "editor@example.com", ownerUUID, editorID, ownerDistinct, editorDistinct,
		`"created_by"`, `"last_modified_by"`, `"dashboards"`, `"dashboard_tiles"`, `"short_id"`, `"team"`, "internal-tag",
		fmt.Sprintf(`"dashboard_id":%d`, unshared)} {
		if strings.Contains(text, leak) {
			t.Errorf("the public link carries %s: %s", leak, text)
		}
	}
	// A trends result names its series' action by id ("$pageview"): no number is an id.
	if ids := regexp.MustCompile(`"\w*id":\s*\d`).FindAllString(text, -1); len(ids) > 0 {
		t.Errorf("the public link carries ids %v: %s", ids, text)
	}
	if got := strings.Join(keysOf(d), ","); got != "description,effective_privilege_level,effective_restriction_level,filters,name,tiles,user_access_level,variables" {
		t.Errorf("dashboard fields %s", got)
	}
	if d["name"] != "Public" || d["description"] != "For everyone" || mustText(t, d["filters"]) != `{"date_from":"-7d"}` ||
		d["effective_restriction_level"] != 37.0 || d["effective_privilege_level"] != 21.0 || d["user_access_level"] != "viewer" {
		t.Errorf("the public dashboard %v", d)
	}
	tiles := d["tiles"].([]any)
	if len(tiles) != 2 {
		t.Fatalf("tiles %v", tiles)
	}
	card, views := tiles[0].(map[string]any), tiles[1].(map[string]any) // by the sm layout's y; the insight has none
	for _, tile := range tiles {
		if got := strings.Join(keysOf(tile.(map[string]any)), ","); got != "color,filters_overrides,insight,is_cached,last_refresh,layouts,order,text" {
			t.Errorf("tile fields %s", got)
		}
	}
	i, _ := views["insight"].(map[string]any)
	if got := strings.Join(keysOf(i), ","); got != "description,is_cached,last_refresh,name,query,query_error,result" {
		t.Errorf("insight fields %s", got)
	}
	if i["name"] != "Views" || i["description"] != "Page views" || mustText(t, i["query"]) != `{"kind":"TrendsQuery","series":[{"event":"$pageview"}]}` ||
		i["result"] == nil || views["text"] != nil || views["order"] != 1.0 {
		t.Errorf("the insight tile %v", views)
	}
	if mustText(t, card["text"]) != `{"body":"Read me"}` || card["insight"] != nil || card["color"] != "blue" || card["order"] != 0.0 ||
		mustText(t, card["layouts"]) != `{"sm":{"h":2,"w":6,"x":0,"y":9}}` {
		t.Errorf("the text tile %v", card)
	}
}

// A tile whose query fails fails alone, as PostHog's tiles compute independently: the
// dashboard and its public link answer 200 with the other tiles' results, and the
// failed tile carries an error ({type, message}) and its insight's query_error: a
// query hedge refuses (a VARIANT column) says why; a failure of hedge's (here the table
// that only daily-active counts join, gone) says no more than that it failed.
func TestDashboardTileFailsAlone(t *testing.T) {
	env := newTestEnv(t, "")
	now := time.Now().UTC()
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "u1", Timestamp: now.Add(-time.Hour)})
	id, _ := env.dashboard(t, `{"name": "Mixed"}`)
	tile := func(name, query string, y int) {
		t.Helper()
		insight := env.insight(t, fmt.Sprintf(`{"name": %q, "query": %s, "dashboards": [%d]}`, name, query, id))
		env.exec(t, `UPDATE meta.dashboard_tiles SET layouts = ? WHERE insight_id = ?`, fmt.Sprintf(`{"sm": {"x": 0, "y": %d}}`, y), insight)
	}
	tile("Pageviews", `{"kind": "TrendsQuery", "series": [{"event": "$pageview", "math": "total"}], "dateRange": {"date_from": "-1d"}}`, 0)
	tile("Variant", `{"kind": "EventsQuery", "select": ["event", "[event::VARIANT]"]}`, 1)
	tile("Daily users", `{"kind": "TrendsQuery", "series": [{"event": "$pageview", "math": "dau"}], "dateRange": {"date_from": "-1d"}}`, 2)
	env.exec(t, `ALTER TABLE person_overrides RENAME TO person_overrides_gone`)
	// A new event makes the cached results stale: each tile computes again.
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "u2", Timestamp: now.Add(-time.Minute)})

	check := func(via string, status int, d map[string]any, text string) {
		t.Helper()
		tiles, _ := d["tiles"].([]any)
		if status != 200 || len(tiles) != 3 {
			t.Fatalf("%s: %d %.500s", via, status, text)
		}
		for _, leak := range []string{"person_overrides", "duckdb", "Catalog Error"} {
			if strings.Contains(text, leak) {
				t.Fatalf("%s: the answer says %q: %s", via, leak, text)
			}
		}
		tileOf := func(i int) (map[string]any, map[string]any) {
			tile := tiles[i].(map[string]any)
			return tile, tile["insight"].(map[string]any)
		}
		ok, okInsight := tileOf(0)
		if _, has := ok["error"]; has || okInsight["result"] == nil || okInsight["query_error"] != nil {
			t.Fatalf("%s: the tile that computes: %v", via, ok)
		}
		refused, refusedInsight := tileOf(1)
		e, _ := refused["error"].(map[string]any)
		if e["type"] != "validation_error" || !strings.Contains(fmt.Sprint(e["message"]), "(VARIANT)") ||
			refusedInsight["query_error"] != e["message"] || refusedInsight["result"] != nil {
			t.Fatalf("%s: the refused tile: %v", via, refused)
		}
		failed, failedInsight := tileOf(2)
		e, _ = failed["error"].(map[string]any)
		if e["type"] != "server_error" || !strings.Contains(fmt.Sprint(e["message"]), "query failed on the server") ||
			failedInsight["query_error"] != e["message"] || failedInsight["result"] != nil {
			t.Fatalf("%s: the failed tile: %v", via, failed)
		}
	}
	status, d, text := env.call(t, "GET", env.dashPath(id, ""), env.owner, "")
	check("the dashboard", status, d, text)
	token := env.must(t, 200, "PATCH", env.dashPath(id, "sharing/"), env.owner, `{"enabled": true}`)["access_token"].(string)
	status, d, text = env.call(t, "GET", "/shared/"+token, "", "")
	check("the public link", status, d, text)
}
