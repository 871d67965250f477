package admin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

// dashEnv is the management API of one bootstrapped project, for the dashboard tests.
type dashEnv struct {
	*testEnv
	key     string
	project string // /api/projects/{id}
}

func newDashEnv(t *testing.T) *dashEnv {
	env := newTestEnv(t, "")
	return &dashEnv{testEnv: env, key: env.boot.PersonalAPIKey, project: fmt.Sprintf("/api/projects/%d", env.boot.ProjectID)}
}

// call sends a request and decodes a JSON object answer (nil for an empty body).
func (env *dashEnv) call(t *testing.T, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	status, text, _ := env.do(t, method, path, key, nil, body)
	if text == "" {
		return status, nil
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s %s answered %d with non-object %s", method, path, status, text)
	}
	return status, out
}

// ok sends a request that must answer want, and returns the answer.
func (env *dashEnv) ok(t *testing.T, want int, method, path, key, body string) map[string]any {
	t.Helper()
	status, out := env.call(t, method, path, key, body)
	if status != want {
		t.Fatalf("%s %s: %d, want %d: %v", method, path, status, want, out)
	}
	return out
}

func (env *dashEnv) dashboard(t *testing.T, body string) (int64, map[string]any) {
	t.Helper()
	d := env.ok(t, 201, "POST", env.project+"/dashboards/", env.key, body)
	return int64(d["id"].(float64)), d
}

func (env *dashEnv) dashPath(id int64, rest string) string {
	return fmt.Sprintf("%s/dashboards/%d/%s", env.project, id, rest)
}

// member adds a member of the bootstrap organization and returns its uuid and key.
func (env *dashEnv) member(t *testing.T, email string, level int) (string, string) {
	t.Helper()
	_, key := env.addUser(t, email, uuid.MustParse(env.boot.OrganizationID), level, "*")
	var id string
	if err := env.warehouse.DB().QueryRow(`SELECT uuid::VARCHAR FROM meta.users WHERE email = ?`, email).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id, key
}

// ingest commits events of the bootstrap project through the real writer.
func (env *dashEnv) ingest(t *testing.T, events ...warehouse.Event) {
	t.Helper()
	for i := range events {
		events[i].UUID, events[i].TeamID = uuid.Must(uuid.NewV7()), env.boot.ProjectID
		if events[i].Properties == "" {
			events[i].Properties = "{}"
		}
	}
	if err := env.warehouse.Writer().Submit(&warehouse.Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
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
	env := newDashEnv(t)
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
	env.ok(t, 200, "PATCH", env.dashPath(gone, ""), env.key, `{"deleted": true}`)

	list := env.ok(t, 200, "GET", env.project+"/dashboards/", env.key, "")
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

	d = env.ok(t, 200, "PATCH", env.dashPath(id, ""), env.key, `{"name": "Growth KPIs", "pinned": true, "restriction_level": 37, "tags": ["a", "A"]}`)
	if d["name"] != "Growth KPIs" || d["pinned"] != true || d["restriction_level"] != 37.0 || d["access_control_version"] != "v1" || fmt.Sprint(d["tags"]) != "[a]" {
		t.Fatalf("updated %v", d)
	}
	if got := env.ok(t, 200, "GET", env.dashPath(id, ""), env.key, ""); got["name"] != "Growth KPIs" {
		t.Fatalf("retrieved %v", got)
	}
	env.run(t, []scenario{
		{name: "restriction level not 21 or 37", method: "POST", path: env.project + "/dashboards/", key: env.key, body: `{"restriction_level": 50}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"50\" is not a valid choice.","attr":"restriction_level"}`}},
		{name: "filters not an object", method: "PATCH", path: env.dashPath(id, ""), key: env.key, body: `{"filters": [1]}`,
			status: 400, want: []string{`"detail":"Filters must be a dictionary"`, `"attr":"filters"`}},
		{name: "variables not an object", method: "PATCH", path: env.dashPath(id, ""), key: env.key, body: `{"variables": "x"}`,
			status: 400, want: []string{`"detail":"Variables must be a dictionary"`}},
		{name: "a name of the wrong type", method: "PATCH", path: env.dashPath(id, ""), key: env.key, body: `{"name": 5}`,
			status: 400, want: []string{`"attr":"name"`}},
		{name: "unknown dashboard", method: "GET", path: env.dashPath(999, ""), key: env.key, status: 404, want: []string{`"code":"not_found"`}},
		{name: "deleted dashboard", method: "GET", path: env.dashPath(gone, ""), key: env.key, status: 404},
		{name: "deleted dashboard not editable", method: "PATCH", path: env.dashPath(gone, ""), key: env.key, body: `{"name":"x"}`, status: 404},
	})
}

// DELETE is refused with 405 and no body, and changes nothing; the key, scope and
// project are checked before.
func TestDashboardDeleteRefused(t *testing.T) {
	env := newDashEnv(t)
	id, _ := env.dashboard(t, `{"name": "Keep me"}`)
	status, text, header := env.do(t, "DELETE", env.dashPath(id, ""), env.key, nil, "")
	if status != 405 || text != "" {
		t.Fatalf("DELETE answered %d %q, want 405 with no body", status, text)
	}
	_ = header
	if d := env.ok(t, 200, "GET", env.dashPath(id, ""), env.key, ""); d["deleted"] != false || d["name"] != "Keep me" {
		t.Fatalf("after DELETE: %v", d)
	}
	_, readOnly := env.addUser(t, "reader@example.com", uuid.MustParse(env.boot.OrganizationID), levelMember, "dashboard:read")
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
	env := newDashEnv(t)
	a, _ := env.dashboard(t, `{"name": "A"}`)
	b, _ := env.dashboard(t, `{"name": "B"}`)
	query := `{"kind": "TrendsQuery", "series": [{"event": "$pageview"}]}`
	onlyA := env.ok(t, 201, "POST", env.project+"/insights/", env.key, fmt.Sprintf(`{"name": "only on A", "query": %s, "dashboards": [%d]}`, query, a))
	shared := env.ok(t, 201, "POST", env.project+"/insights/", env.key, fmt.Sprintf(`{"name": "on A and B", "query": %s, "dashboards": [%d, %d]}`, query, a, b))
	insightPath := func(i map[string]any) string {
		return fmt.Sprintf("%s/insights/%d/", env.project, int64(i["id"].(float64)))
	}

	d := env.ok(t, 200, "PATCH", env.dashPath(a, ""), env.key, `{"deleted": true, "delete_insights": true}`)
	if d["deleted"] != true {
		t.Fatalf("soft delete answered %v", d)
	}
	env.ok(t, 404, "GET", env.dashPath(a, ""), env.key, "")
	if list := env.ok(t, 200, "GET", env.project+"/dashboards/", env.key, ""); list["count"] != 1.0 {
		t.Fatalf("list after delete: %v", list)
	}
	env.ok(t, 404, "GET", insightPath(onlyA), env.key, "")
	if i := env.ok(t, 200, "GET", insightPath(shared), env.key, ""); fmt.Sprint(i["dashboards"]) != fmt.Sprintf("[%d]", b) {
		t.Fatalf("the insight on B too: %v", i["dashboards"])
	}
	// Only exactly {"deleted": false} restores.
	env.ok(t, 404, "PATCH", env.dashPath(a, ""), env.key, `{"deleted": false, "name": "again"}`)
	d = env.ok(t, 200, "PATCH", env.dashPath(a, ""), env.key, `{"deleted": false}`)
	if d["deleted"] != false || len(d["tiles"].([]any)) != 2 {
		t.Fatalf("restored %v", d)
	}
	env.ok(t, 200, "GET", insightPath(onlyA), env.key, "")
}

func TestDashboardTemplates(t *testing.T) {
	env := newDashEnv(t)
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
		{name: "unknown template", method: "POST", path: env.project + "/dashboards/", key: env.key, body: `{"use_template": "NOPE"}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Invalid template provided: NOPE","attr":"use_template"}`}},
		{name: "unknown dashboard to copy", method: "POST", path: env.project + "/dashboards/", key: env.key, body: `{"use_dashboard": 9999}`,
			status: 400, want: []string{`"detail":"Invalid value provided","attr":"use_dashboard"`}},
		{name: "both", method: "POST", path: env.project + "/dashboards/", key: env.key, body: fmt.Sprintf(`{"use_template": "DEFAULT_APP", "use_dashboard": %d}`, id),
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"` + "`use_dashboard` and `use_template` cannot be used together" + `","attr":null}`}},
	})
}

func TestCreateFromTemplateJSON(t *testing.T) {
	env := newDashEnv(t)
	path := env.project + "/dashboards/create_from_template_json/"
	good := `{"template_name": "Signups", "dashboard_description": "Who signs up", "dashboard_filters": {}, "tags": ["Growth"],
		"tiles": [{"type": "INSIGHT", "name": "Signups a day", "query": {"kind": "TrendsQuery", "series": [{"event": "signed up"}]}},
		          {"type": "TEXT", "body": "Notes", "layouts": {"sm": {"x": 0, "y": 9}}}]}`
	d := env.ok(t, 200, "POST", path, env.key, `{"template": `+good+`}`)
	tiles := d["tiles"].([]any)
	// Tiles come sorted by their small layout's y (reference §7.4): the text card at y 9
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
		{`{"template_name": "x", "dashboard_description": "", "dashboard_filters": {}, "tiles": [{"type": "INSIGHT", "name": "n", "query": {"kind": "FunnelsQuery"}}]}`, "template__tiles__0__query__kind"},
	} {
		status, out := env.call(t, "POST", path, env.key, `{"template": `+c.template+`}`)
		if status != 400 || out["type"] != "validation_error" || out["attr"] != c.attr {
			t.Fatalf("%s: %d %v, want 400 on %s", c.template, status, out, c.attr)
		}
	}
	if status, out := env.call(t, "POST", path, env.key, `{}`); status != 400 || out["attr"] != "template" {
		t.Fatalf("no template: %d %v", status, out)
	}
}

func TestDashboardTiles(t *testing.T) {
	env := newDashEnv(t)
	id, _ := env.dashboard(t, `{"name": "Tiles"}`)
	d := env.ok(t, 200, "PATCH", env.dashPath(id, ""), env.key, `{"tiles": [
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
	d = env.ok(t, 200, "PATCH", env.dashPath(id, ""), env.key, fmt.Sprintf(`{"tiles": [
		{"id": %d, "text": {"body": "first, edited"}, "color": "red", "layouts": {"sm": {"x": 0, "y": 9}}},
		{"id": %d, "deleted": true}]}`, ids[0], ids[2]))
	tiles := d["tiles"].([]any)
	last := tiles[len(tiles)-1].(map[string]any)
	if len(tiles) != 2 || last["text"].(map[string]any)["body"] != "first, edited" || last["color"] != "red" {
		t.Fatalf("after edits: %v", tiles)
	}
	env.run(t, []scenario{
		{name: "a tile of another dashboard", method: "PATCH", path: env.dashPath(id, ""), key: env.key, body: `{"tiles": [{"id": 999, "color": "x"}]}`,
			status: 400, want: []string{`"attr":"tiles__0__id"`}},
		{name: "a text too long", method: "PATCH", path: env.dashPath(id, ""), key: env.key,
			body: `{"tiles": [{"text": {"body": "` + strings.Repeat("x", 4001) + `"}}]}`, status: 400, want: []string{`"attr":"tiles__0__text__body"`}},
	})
}

func TestMoveTile(t *testing.T) {
	env := newDashEnv(t)
	from, _ := env.dashboard(t, `{"name": "From"}`)
	to, _ := env.dashboard(t, `{"name": "To"}`)
	d := env.ok(t, 200, "PATCH", env.dashPath(from, ""), env.key, `{"tiles": [{"text": {"body": "moving"}}]}`)
	tileID := int64(d["tiles"].([]any)[0].(map[string]any)["id"].(float64))
	status, text, _ := env.do(t, "PATCH", env.dashPath(from, "move_tile/"), env.key, nil, fmt.Sprintf(`{"tile": {"id": %d}, "toDashboard": %d}`, tileID, to))
	if status != 200 || text != "" {
		t.Fatalf("move_tile answered %d %q, want 200 with no body", status, text)
	}
	if tiles := env.ok(t, 200, "GET", env.dashPath(from, ""), env.key, "")["tiles"].([]any); len(tiles) != 0 {
		t.Fatal("the tile is still on the source dashboard")
	}
	moved := env.ok(t, 200, "GET", env.dashPath(to, ""), env.key, "")["tiles"].([]any)
	if len(moved) != 1 || int64(moved[0].(map[string]any)["id"].(float64)) != tileID {
		t.Fatalf("the target's tiles: %v", moved)
	}
	env.run(t, []scenario{
		{name: "a tile not on the dashboard", method: "PATCH", path: env.dashPath(from, "move_tile/"), key: env.key,
			body: fmt.Sprintf(`{"tile": {"id": %d}, "toDashboard": %d}`, tileID, to), status: 400, want: []string{`"attr":"tile"`}},
		{name: "an unknown target", method: "PATCH", path: env.dashPath(to, "move_tile/"), key: env.key,
			body: fmt.Sprintf(`{"tile": {"id": %d}, "toDashboard": 9999}`, tileID), status: 404},
		{name: "no tile", method: "PATCH", path: env.dashPath(to, "move_tile/"), key: env.key, body: `{"toDashboard": 1}`,
			status: 400, want: []string{`"attr":"tile"`}},
	})
}

func TestCollaborators(t *testing.T) {
	env := newDashEnv(t)
	id, _ := env.dashboard(t, `{"name": "Restricted"}`)
	collab := env.dashPath(id, "collaborators/")
	memberID, memberKey := env.member(t, "member@example.com", levelMember)
	_, viewerKey := env.member(t, "viewer@example.com", levelMember)
	adminID, _ := env.member(t, "admin@example.com", levelAdmin)
	var ownerID string
	env.warehouse.DB().QueryRow(`SELECT uuid::VARCHAR FROM meta.users WHERE email = 'owner@example.com'`).Scan(&ownerID)
	_, outsiderKey := env.addUser(t, "stranger@example.com", uuid.Nil, levelOwner, "*")
	var strangerID string
	env.warehouse.DB().QueryRow(`SELECT uuid::VARCHAR FROM meta.users WHERE email = 'stranger@example.com'`).Scan(&strangerID)
	add := func(user string, level int) string { return fmt.Sprintf(`{"user_uuid": %q, "level": %d}`, user, level) }

	env.run(t, []scenario{{name: "lowest restriction level", method: "POST", path: collab, key: env.key, body: add(memberID, 37),
		status: 400, want: []string{`"detail":"Cannot add collaborators to a dashboard on the lowest restriction level."`}}})
	env.ok(t, 200, "PATCH", env.dashPath(id, ""), env.key, `{"restriction_level": 37}`)
	env.run(t, []scenario{
		{name: "only edit access", method: "POST", path: collab, key: env.key, body: add(memberID, 21), status: 400,
			want: []string{`"detail":"Only edit access can be explicitly specified currently."`, `"attr":"level"`}},
		{name: "unknown user", method: "POST", path: collab, key: env.key, body: add(uuid.NewString(), 37), status: 400,
			want: []string{`"detail":"User does not exist."`}},
		{name: "no access to the project", method: "POST", path: collab, key: env.key, body: add(strangerID, 37), status: 400,
			want: []string{`"detail":"Cannot add collaborators that have no access to the project."`}},
		{name: "the owner", method: "POST", path: collab, key: env.key, body: add(ownerID, 37), status: 400,
			want: []string{`"detail":"Cannot add collaborators that already have inherent access (the dashboard owner or a project admins)."`}},
		{name: "a project admin", method: "POST", path: collab, key: env.key, body: add(adminID, 37), status: 400,
			want: []string{"already have inherent access"}},
		{name: "not the key's organization", method: "POST", path: collab, key: outsiderKey, body: add(memberID, 37), status: 404},
	})
	// A member without edit rights sees the dashboard read-only and cannot add anyone.
	if d := env.ok(t, 200, "GET", env.dashPath(id, ""), memberKey, ""); d["effective_privilege_level"] != 21.0 || d["user_access_level"] != "viewer" {
		t.Fatalf("a member on a restricted dashboard: %v %v", d["effective_privilege_level"], d["user_access_level"])
	}
	env.run(t, []scenario{
		{name: "member edits a restricted dashboard", method: "PATCH", path: env.dashPath(id, ""), key: memberKey, body: `{"name": "mine"}`,
			status: 403, want: []string{`"detail":"You don't have edit permissions for this dashboard."`}},
		{name: "member adds a collaborator", method: "POST", path: collab, key: memberKey, body: add(memberID, 37), status: 403},
	})

	r := env.ok(t, 201, "POST", collab, env.key, add(memberID, 37))
	if r["level"] != 37.0 || r["user"].(map[string]any)["uuid"] != memberID || r["dashboard_id"] != float64(id) {
		t.Fatalf("added %v", r)
	}
	env.run(t, []scenario{{name: "twice", method: "POST", path: collab, key: env.key, body: add(memberID, 37), status: 400,
		want: []string{`"detail":"User already is a collaborator."`}}})
	if list := env.ok(t, 200, "GET", env.dashPath(id, ""), memberKey, ""); list["effective_privilege_level"] != 37.0 || list["user_access_level"] != "editor" {
		t.Fatalf("the collaborator's access: %v", list)
	}
	status, text, _ := env.do(t, "GET", collab, env.key, nil, "")
	var collaborators []map[string]any
	json.Unmarshal([]byte(text), &collaborators)
	if status != 200 || len(collaborators) != 1 || collaborators[0]["user_uuid"] != memberID {
		t.Fatalf("collaborators %d %s", status, text)
	}
	// The collaborator edits; it may not change the restriction level.
	env.ok(t, 200, "PATCH", env.dashPath(id, ""), memberKey, `{"name": "edited by a collaborator"}`)
	env.run(t, []scenario{
		{name: "collaborator changes the level", method: "PATCH", path: env.dashPath(id, ""), key: memberKey, body: `{"restriction_level": 21}`,
			status: 403, want: []string{"Only the dashboard owner and project admins have the restriction rights"}},
		{name: "viewer still read-only", method: "PATCH", path: env.dashPath(id, ""), key: viewerKey, body: `{"name": "x"}`, status: 403},
	})
	if status, text, _ := env.do(t, "DELETE", env.dashPath(id, "collaborators/"+memberID+"/"), env.key, nil, ""); status != 204 || text != "" {
		t.Fatalf("remove: %d %q", status, text)
	}
	env.run(t, []scenario{{name: "remove again", method: "DELETE", path: env.dashPath(id, "collaborators/"+memberID+"/"), key: env.key, status: 404}})
	env.ok(t, 200, "PATCH", env.dashPath(id, ""), env.key, `{"restriction_level": 21}`)
	env.run(t, []scenario{{name: "remove on the lowest level", method: "DELETE", path: env.dashPath(id, "collaborators/"+memberID+"/"), key: env.key,
		status: 400, want: []string{"Cannot remove collaborators from a dashboard on the lowest restriction level."}}})
}

func TestSharing(t *testing.T) {
	env := newDashEnv(t)
	env.ingest(t, warehouse.Event{Name: "$pageview", DistinctID: "u", Timestamp: time.Now().UTC()})
	id, _ := env.dashboard(t, `{"use_template": "DEFAULT_APP"}`)
	sharing := env.dashPath(id, "sharing/")
	s := env.ok(t, 200, "GET", sharing, env.key, "")
	token, _ := s["access_token"].(string)
	if s["enabled"] != false || !regexp.MustCompile(`^[A-Za-z0-9_-]{30}$`).MatchString(token) || s["created_at"] == nil || len(s) != 3 {
		t.Fatalf("sharing %v", s)
	}
	if again := env.ok(t, 200, "GET", sharing, env.key, ""); again["access_token"] != token {
		t.Fatal("the token changed between two reads")
	}
	public := func(token string) (int, map[string]any) {
		t.Helper()
		return env.call(t, "GET", "/shared/"+token, "", "")
	}
	if status, _ := public(token); status != 404 {
		t.Fatalf("a disabled link answered %d", status)
	}
	env.ok(t, 200, "PATCH", sharing, env.key, `{"enabled": true}`)
	status, d := public(token)
	if status != 200 || d["name"] != "My App Dashboard" || len(d["tiles"].([]any)) != 5 || d["effective_restriction_level"] != 37.0 || d["effective_privilege_level"] != 21.0 {
		t.Fatalf("the public dashboard: %d %v", status, d)
	}
	if result := d["tiles"].([]any)[0].(map[string]any)["insight"].(map[string]any)["result"]; result == nil {
		t.Fatal("the public dashboard's tiles have no results")
	}
	if list := env.ok(t, 200, "GET", env.project+"/dashboards/", env.key, ""); list["results"].([]any)[0].(map[string]any)["is_shared"] != true {
		t.Fatal("is_shared is not true")
	}
	rotated := env.ok(t, 200, "POST", env.dashPath(id, "sharing/refresh/"), env.key, "")["access_token"].(string)
	if rotated == token {
		t.Fatal("refresh kept the token")
	}
	if status, _ := public(token); status != 404 {
		t.Fatalf("the rotated-away token answered %d", status)
	}
	if status, _ := public(rotated); status != 200 {
		t.Fatalf("the new token answered %d", status)
	}
	env.ok(t, 200, "PATCH", sharing, env.key, `{"enabled": false}`)
	if status, _ := public(rotated); status != 404 {
		t.Fatalf("a link disabled again answered %d", status)
	}
	// Sharing a restricted dashboard needs edit rights on it.
	_, memberKey := env.member(t, "member@example.com", levelMember)
	env.ok(t, 200, "PATCH", env.dashPath(id, ""), env.key, `{"restriction_level": 37}`)
	env.run(t, []scenario{{name: "member shares a restricted dashboard", method: "PATCH", path: sharing, key: memberKey, body: `{"enabled": true}`,
		status: 403, want: []string{"You don't have edit permissions for this dashboard."}}})
}

// Insight results are computed, cached, and computed again once the project has new events.
func TestInsightResults(t *testing.T) {
	env := newDashEnv(t)
	now := time.Now().UTC()
	env.ingest(t, warehouse.Event{Name: "signed up", DistinctID: "u1", Timestamp: now})
	i := env.ok(t, 201, "POST", env.project+"/insights/", env.key,
		`{"name": "Signups", "query": {"kind": "InsightVizNode", "source": {"kind": "TrendsQuery", "series": [{"event": "signed up"}], "dateRange": {"date_from": "-1d"}}}}`)
	path := fmt.Sprintf("%s/insights/%d/", env.project, int64(i["id"].(float64)))
	count := func(i map[string]any) float64 {
		return i["result"].(map[string]any)["results"].([]any)[0].(map[string]any)["count"].(float64)
	}
	if count(i) != 1 || i["is_cached"] != false || i["last_refresh"] == nil {
		t.Fatalf("created %v", i)
	}
	cached := env.ok(t, 200, "GET", path, env.key, "")
	if count(cached) != 1 || cached["is_cached"] != true || cached["last_refresh"] != i["last_refresh"] {
		t.Fatalf("second read: cached %v", cached["is_cached"])
	}
	env.ingest(t, warehouse.Event{Name: "signed up", DistinctID: "u2", Timestamp: now})
	fresh := env.ok(t, 200, "GET", path, env.key, "")
	if count(fresh) != 2 || fresh["is_cached"] != false {
		t.Fatalf("after a new event: count %v, cached %v", count(fresh), fresh["is_cached"])
	}
	env.run(t, []scenario{
		{name: "a query insights cannot compute", method: "POST", path: env.project + "/insights/", key: env.key,
			body: `{"query": {"kind": "HogQLQuery", "query": "SELECT 1"}}`, status: 400, want: []string{`"attr":"query"`}},
		{name: "insights list", method: "GET", path: env.project + "/insights/", key: env.key, status: 200, want: []string{`"count":1`, `"short_id":`}},
	})
	env.ok(t, 200, "PATCH", path, env.key, `{"deleted": true}`)
	env.ok(t, 404, "GET", path, env.key, "")
}
