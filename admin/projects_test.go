package admin

import (
	"archive/zip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// addProjects adds n projects to the bootstrap organization; with the bootstrap one
// the organization then has n+1, ids 1..n+1.
func (env *testEnv) addProjects(t *testing.T, n int) {
	t.Helper()
	org := uuid.MustParse(env.boot.OrganizationID)
	for i := range n {
		if _, _, err := insertProject(context.Background(), env.warehouse.DB(), org, "Project "+strconv.Itoa(i+2)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestProjectListPagination(t *testing.T) {
	env := newTestEnv(t, "")
	env.addProjects(t, 4)
	key := env.boot.PersonalAPIKey
	base := env.url + "/api/organizations/{org}/projects/"
	env.run(t, []scenario{
		{name: "first page", method: "GET", path: "/api/organizations/{org}/projects/?limit=2", key: key, status: 200,
			want:    []string{`"count":5`, `"next":"` + base + `?limit=2&offset=2"`, `"previous":null`, `"name":"Default project"`, `"name":"Project 2"`},
			notWant: []string{`"name":"Project 3"`}},
		{name: "middle page", method: "GET", path: "/api/organizations/{org}/projects/?limit=2&offset=2", key: key, status: 200,
			want: []string{`"next":"` + base + `?limit=2&offset=4"`, `"previous":"` + base + `?limit=2"`, `"name":"Project 3"`, `"name":"Project 4"`}},
		{name: "last page", method: "GET", path: "/api/organizations/{org}/projects/?limit=2&offset=4", key: key, status: 200,
			want: []string{`"next":null`, `"previous":"` + base + `?limit=2&offset=2"`, `"name":"Project 5"`}},
		{name: "past the end", method: "GET", path: "/api/organizations/{org}/projects/?offset=10", key: key, status: 200,
			want: []string{`"count":5`, `"results":[]`}},
		{name: "invalid limit gives the default page", method: "GET", path: "/api/organizations/{org}/projects/?limit=abc", key: key, status: 200,
			want: []string{`"count":5`, `"next":null`, `"name":"Project 5"`}},
		{name: "zero limit gives the default page", method: "GET", path: "/api/organizations/{org}/projects/?limit=0", key: key, status: 200,
			want: []string{`"next":null`, `"name":"Project 5"`}},
		{name: "other parameters kept, keys sorted", method: "GET", path: "/api/organizations/{org}/projects/?zeta=1&limit=2&alpha=x", key: key, status: 200,
			want: []string{`"next":"` + base + `?alpha=x&limit=2&offset=2&zeta=1"`}},
	})
}

func TestProjectListPublicURL(t *testing.T) {
	env := newTestEnv(t, "https://hedge.example.com/")
	env.addProjects(t, 1)
	env.run(t, []scenario{{
		name: "links start with the public URL", method: "GET", path: "/api/organizations/{org}/projects/?limit=1",
		key: env.boot.PersonalAPIKey, status: 200,
		want: []string{`"next":"https://hedge.example.com/api/organizations/{org}/projects/?limit=1&offset=1"`},
	}})
}

func TestProjectListItems(t *testing.T) {
	env := newTestEnv(t, "")
	env.addProjects(t, 2)
	status, body, _ := env.do(t, "GET", "/api/organizations/{org}/projects/", env.boot.PersonalAPIKey, nil, "")
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var page struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	// Exactly the OpenAPI schema's list item fields, nothing more.
	want := []string{"access_control", "api_token", "completed_snippet_onboarding", "has_completed_onboarding_for",
		"id", "ingested_event", "is_demo", "name", "organization", "timezone", "uuid"}
	first := page.Results[0]
	var keys []string
	for k := range first {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !slices.Equal(keys, want) {
		t.Fatalf("list item fields %v, want %v", keys, want)
	}
	if first["id"] != float64(env.boot.ProjectID) || first["api_token"] != env.boot.ProjectAPIKey ||
		first["organization"] != env.boot.OrganizationID || first["timezone"] != "UTC" {
		t.Fatalf("bootstrap project listed as %v", first)
	}
}

// A key scoped to some projects reaches each of them, but not the organization's
// list: PostHog answers 403 on every endpoint that is not one project's.
func TestProjectListScopedTeams(t *testing.T) {
	env := newTestEnv(t, "")
	env.addProjects(t, 2)
	_, key := env.addUser(t, "scoped@example.com", uuid.MustParse(env.boot.OrganizationID), levelMember, "project:write")
	if _, err := env.warehouse.DB().Exec(`UPDATE meta.personal_api_keys SET scoped_teams = '[3]' WHERE secure_value = ?`, hashKey(key)); err != nil {
		t.Fatal(err)
	}
	denied := []string{`{"type":"authentication_error","code":"permission_denied","detail":"API keys with scoped projects are only supported on project-based endpoints.","attr":null}`}
	env.run(t, []scenario{
		{name: "not the list", method: "GET", path: "/api/organizations/{org}/projects/", key: key, status: 403, want: denied},
		{name: "nor a new project", method: "POST", path: "/api/organizations/{org}/projects/", key: key, body: `{"is_demo":true}`,
			status: 403, want: denied},
		{name: "the scoped project", method: "GET", path: "/api/organizations/{org}/projects/3/", key: key, status: 200,
			want: []string{`"id":3,`}},
		{name: "another project", method: "GET", path: "/api/organizations/{org}/projects/2/", key: key, status: 403,
			want: []string{`"detail":"API key does not have access to the requested project: ID 2."`}},
	})
}

func TestProjectCreate(t *testing.T) {
	env := serveAPI(t, nil)
	_, memberKey := env.member(t, "member@example.com", levelMember, "project:write")
	_, adminKey := env.member(t, "admin@acme.io", levelAdmin, "project:write")
	otherOrg, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	projects := "/api/organizations/{org}/projects/"

	created := env.must(t, 201, "POST", env.orgPath("projects/"), adminKey, `{"name":"Web","unknown_field":1}`)
	// Exactly the full project record, with PostHog's defaults.
	want := map[string]any{
		"name": "Web", "organization": env.org.String(), "product_description": nil, "app_urls": []any{},
		"slack_incoming_webhook": nil, "anonymize_ips": false, "completed_snippet_onboarding": false, "ingested_event": false,
		"test_account_filters_default_checked": false, "path_cleaning_filters": []any{}, "is_demo": false, "timezone": "UTC",
		"data_attributes": []any{"data-attr"}, "person_display_name_properties": nil, "correlation_config": map[string]any{},
		"autocapture_opt_out": nil, "autocapture_exceptions_opt_in": nil, "autocapture_web_vitals_opt_in": nil,
		"autocapture_web_vitals_allowed_metrics": nil, "autocapture_exceptions_errors_to_ignore": nil,
		"capture_console_log_opt_in": true, "capture_performance_opt_in": true, "session_recording_opt_in": false,
		"session_recording_sample_rate": nil, "session_recording_minimum_duration_milliseconds": nil,
		"session_recording_linked_flag": nil, "session_recording_network_payload_capture_config": nil,
		"session_replay_config": nil, "survey_config": nil, "access_control": false, "week_start_day": nil,
		"live_events_columns": nil, "recording_domains": nil,
		"person_on_events_querying_enabled": "true", "inject_web_apps": nil, "extra_settings": nil, "modifiers": nil,
		"default_modifiers": "{}", "has_completed_onboarding_for": nil, "surveys_opt_in": nil, "heatmaps_opt_in": nil,
		"product_intents": "[]", "flags_persistence_default": false, "effective_membership_level": float64(levelAdmin),
		"has_group_types": false, "live_events_token": nil,
	}
	for field, value := range want {
		if got, ok := created[field]; !ok || mustText(t, got) != mustText(t, value) {
			t.Errorf("%s = %s, want %s", field, mustText(t, got), mustText(t, value))
		}
	}
	var fields []string
	for field := range created {
		fields = append(fields, field)
	}
	sort.Strings(fields)
	spec := []string{"access_control", "anonymize_ips", "api_token", "app_urls", "autocapture_exceptions_errors_to_ignore",
		"autocapture_exceptions_opt_in", "autocapture_opt_out", "autocapture_web_vitals_allowed_metrics", "autocapture_web_vitals_opt_in",
		"capture_console_log_opt_in", "capture_performance_opt_in", "completed_snippet_onboarding", "correlation_config", "created_at",
		"data_attributes", "default_modifiers", "effective_membership_level", "extra_settings", "flags_persistence_default",
		"has_completed_onboarding_for", "has_group_types", "heatmaps_opt_in", "id", "ingested_event", "inject_web_apps", "is_demo",
		"live_events_columns", "live_events_token", "materialized_properties", "modifiers", "name", "organization", "path_cleaning_filters",
		"person_display_name_properties", "person_on_events_querying_enabled", "primary_dashboard", "product_description",
		"product_intents", "recording_domains", "session_recording_linked_flag", "session_recording_minimum_duration_milliseconds",
		"session_recording_network_payload_capture_config", "session_recording_opt_in", "session_recording_sample_rate",
		"session_replay_config", "slack_incoming_webhook", "survey_config", "surveys_opt_in", "test_account_filters",
		"test_account_filters_default_checked", "timezone", "updated_at", "uuid", "week_start_day"}
	if !slices.Equal(fields, spec) {
		t.Fatalf("fields %v\nwant %v", fields, spec)
	}
	// Test accounts: localhost, and the organization's own e-mail domain (the first
	// member with a company address).
	if got := mustText(t, created["test_account_filters"]); got != `[{"key":"email","operator":"not_icontains","type":"person","value":"@example.com"},{"key":"$host","operator":"not_regex","type":"event","value":"^(localhost|127\\.0\\.0\\.1)($|:)"}]` {
		t.Fatalf("test_account_filters %s", got)
	}
	token := created["api_token"].(string)
	if !regexp.MustCompile(`^phc_[0-9A-Za-z]{43}$`).MatchString(token) {
		t.Fatalf("api_token %q", token)
	}
	if team, ok := env.api.ProjectTokens().Team(token); !ok || float64(team) != created["id"] {
		t.Fatal("the capture listener does not know the new project's token")
	}
	id := strconv.Itoa(int(created["id"].(float64)))

	// The new project has PostHog's primary dashboard: "My App Dashboard", pinned,
	// with the DEFAULT_APP template's tiles.
	primary, ok := created["primary_dashboard"].(float64)
	if !ok {
		t.Fatalf("primary_dashboard = %v, want a dashboard id", created["primary_dashboard"])
	}
	dashboards := env.must(t, 200, "GET", "/api/projects/"+id+"/dashboards/", env.owner, "")
	listed := dashboards["results"].([]any)
	if dashboards["count"] != float64(1) || listed[0].(map[string]any)["id"] != primary ||
		listed[0].(map[string]any)["name"] != "My App Dashboard" || listed[0].(map[string]any)["pinned"] != true {
		t.Fatalf("dashboards of the new project: %v", dashboards)
	}
	dashboard := env.must(t, 200, "GET", fmt.Sprintf("/api/projects/%s/dashboards/%d/", id, int(primary)), env.owner, "")
	if tiles := dashboard["tiles"].([]any); len(tiles) != 5 || !strings.Contains(mustText(t, tiles), `"name":"Daily active users (DAUs)"`) {
		t.Fatalf("tiles of the primary dashboard: %v", mustText(t, dashboard["tiles"]))
	}

	env.run(t, []scenario{
		{name: "retrieve", method: "GET", path: projects + id + "/", key: memberKey, status: 200,
			want: []string{`"id":` + id + `,`, `"name":"Web"`, `"effective_membership_level":1`, `"api_token":"` + token + `"`}},
		{name: "retrieve the bootstrap project", method: "GET", path: projects + "1/", key: env.owner, status: 200,
			want: []string{`"name":"Default project"`, `"data_attributes":["data-attr"]`, `"capture_console_log_opt_in":true`}},
		{name: "list items keep their fields", method: "GET", path: projects, key: env.owner, status: 200,
			want: []string{`"count":2`}, notWant: []string{`"data_attributes"`}},
		{name: "a project of another organization", method: "GET", path: "/api/organizations/" + otherOrg.String() + "/projects/" + id + "/",
			key: outsiderKey, status: 404, want: []string{`"detail":"Project not found."`}},
		{name: "another tenant's organization", method: "GET", path: projects + id + "/", key: outsiderKey, status: 404,
			want: []string{`"detail":"Organization not found."`}},
		{name: "no such project", method: "GET", path: projects + "999/", key: env.owner, status: 404},
		{name: "not a project id", method: "GET", path: projects + "web/", key: env.owner, status: 404},

		{name: "members do not create projects", method: "POST", path: projects, key: memberKey, body: `{"name":"X"}`, status: 403,
			want: []string{`{"type":"authentication_error","code":"permission_denied","detail":"Your organization access level is insufficient.","attr":null}`}},
		{name: "members create demo projects, without a dashboard", method: "POST", path: projects, key: memberKey, body: `{"name":"Demo","is_demo":true}`,
			status: 201, want: []string{`"is_demo":true`, `"effective_membership_level":1`, `"primary_dashboard":null`}},
		{name: "no key", method: "POST", path: projects, body: `{"name":"X"}`, status: 401},
		{name: "another tenant", method: "POST", path: projects, key: outsiderKey, body: `{"name":"X"}`, status: 404},

		{name: "an IANA time zone", method: "POST", path: projects, key: env.owner, body: `{"name":"Tokyo","timezone":"Asia/Tokyo","week_start_day":1}`,
			status: 201, want: []string{`"timezone":"Asia/Tokyo"`, `"week_start_day":1`}},
		{name: "not a time zone", method: "POST", path: projects, key: env.owner, body: `{"timezone":"America/I_Dont_Exist"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"America/I_Dont_Exist\" is not a valid choice.","attr":"timezone"}`}},
		{name: "Local is not a time zone", method: "POST", path: projects, key: env.owner, body: `{"timezone":"Local"}`, status: 400,
			want: []string{`"attr":"timezone"`}},
		// Files of a host's zoneinfo directory that are not IANA zones.
		{name: "localtime is not a time zone", method: "POST", path: projects, key: env.owner, body: `{"timezone":"localtime"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"localtime\" is not a valid choice.","attr":"timezone"}`}},
		{name: "posixrules is not a time zone", method: "POST", path: projects, key: env.owner, body: `{"timezone":"posixrules"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"posixrules\" is not a valid choice.","attr":"timezone"}`}},
		{name: "right/UTC is not a time zone", method: "POST", path: projects, key: env.owner, body: `{"timezone":"right/UTC"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"right/UTC\" is not a valid choice.","attr":"timezone"}`}},
		{name: "posix/Asia/Tokyo is not a time zone", method: "POST", path: projects, key: env.owner, body: `{"timezone":"posix/Asia/Tokyo"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"posix/Asia/Tokyo\" is not a valid choice.","attr":"timezone"}`}},
		{name: "a path is not a time zone", method: "POST", path: projects, key: env.owner, body: `{"timezone":"../../etc/passwd"}`, status: 400,
			want: []string{`"code":"invalid_choice"`, `"attr":"timezone"`}},
		{name: "case matters", method: "POST", path: projects, key: env.owner, body: `{"timezone":"asia/tokyo"}`, status: 400,
			want: []string{`"code":"invalid_choice"`, `"attr":"timezone"`}},
		{name: "an empty time zone", method: "POST", path: projects, key: env.owner, body: `{"timezone":""}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"\" is not a valid choice.","attr":"timezone"}`}},
		{name: "a backward-compatible IANA name", method: "POST", path: projects, key: env.owner, body: `{"name":"East","timezone":"US/Eastern","is_demo":true}`,
			status: 201, want: []string{`"timezone":"US/Eastern"`}},
		{name: "an Etc zone", method: "POST", path: projects, key: env.owner, body: `{"name":"Etc","timezone":"Etc/GMT+5","is_demo":true}`,
			status: 201, want: []string{`"timezone":"Etc/GMT+5"`}},
		{name: "week_start_day 0 or 1", method: "POST", path: projects, key: env.owner, body: `{"week_start_day":2}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"2\" is not a valid choice.","attr":"week_start_day"}`}},
		{name: "a blank name", method: "POST", path: projects, key: env.owner, body: `{"name":""}`, status: 400,
			want: []string{`"code":"blank"`, `"attr":"name"`}},
		// Wrong types, in DRF's words ("maybe" is not one of DRF's boolean strings).
		{name: "a field of the wrong type", method: "POST", path: projects, key: env.owner, body: `{"anonymize_ips":"maybe"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Must be a valid boolean.","attr":"anonymize_ips"}`}},
		{name: "an integer that is not one", method: "POST", path: projects, key: env.owner, body: `{"week_start_day":"monday"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"A valid integer is required.","attr":"week_start_day"}`}},
		{name: "a string that is not one", method: "POST", path: projects, key: env.owner, body: `{"name":7}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Not a valid string.","attr":"name"}`}},
		{name: "a list of strings that is a string", method: "POST", path: projects, key: env.owner, body: `{"app_urls":"https://a"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"not_a_list","detail":"Expected a list of items but got type \"str\".","attr":"app_urls"}`}},
		{name: "a list of strings that is a number", method: "POST", path: projects, key: env.owner, body: `{"live_events_columns":12}`, status: 400,
			want: []string{`"code":"not_a_list"`, `"detail":"Expected a list of items but got type \"int\"."`}},
		{name: "a list of strings that is a float", method: "POST", path: projects, key: env.owner, body: `{"recording_domains":1.5}`, status: 400,
			want: []string{`"detail":"Expected a list of items but got type \"float\"."`}},
		{name: "a list of strings that is a boolean", method: "POST", path: projects, key: env.owner, body: `{"person_display_name_properties":true}`, status: 400,
			want: []string{`"detail":"Expected a list of items but got type \"bool\"."`}},
		{name: "a list that is an object", method: "POST", path: projects, key: env.owner, body: `{"test_account_filters":{}}`, status: 400,
			want: []string{`{"type":"validation_error","code":"not_a_list","detail":"Expected a list of items but got type \"dict\".","attr":"test_account_filters"}`}},
		{name: "an object that is a list", method: "POST", path: projects, key: env.owner, body: `{"session_replay_config":[]}`, status: 400,
			want: []string{`{"type":"validation_error","code":"not_a_dict","detail":"Expected a dictionary of items but got type \"list\".","attr":"session_replay_config"}`}},
		{name: "a body that is not an object", method: "POST", path: projects, key: env.owner, body: `["Web"]`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Invalid data. Expected a dictionary, but got list.","attr":null}`}},
		{name: "a sample rate above 1", method: "POST", path: projects, key: env.owner, body: `{"session_recording_sample_rate":"1.5"}`, status: 400,
			want: []string{`"attr":"session_recording_sample_rate"`}},
		{name: "a minimum duration above 30 s", method: "POST", path: projects, key: env.owner,
			body: `{"session_recording_minimum_duration_milliseconds":30001}`, status: 400,
			want: []string{`"attr":"session_recording_minimum_duration_milliseconds"`}},
		{name: "no primary dashboard on create", method: "POST", path: projects, key: env.owner, body: `{"primary_dashboard":1}`, status: 400,
			want: []string{`"attr":"primary_dashboard"`}},
		{name: "every writable field", method: "POST", path: projects, key: env.owner, body: `{
			"name":"Full","product_description":"A shop","app_urls":["https://shop.example.com",null,""],"slack_incoming_webhook":"https://hooks",
			"anonymize_ips":true,"completed_snippet_onboarding":true,"test_account_filters":[],"test_account_filters_default_checked":true,
			"path_cleaning_filters":[{"regex":"/\\d+","alias":"/:id"}],"is_demo":false,"timezone":"Europe/Paris","data_attributes":["data-x"],
			"person_display_name_properties":["email"],"correlation_config":{"excluded_person_property_names":["$os"]},
			"autocapture_opt_out":true,"autocapture_exceptions_opt_in":true,"autocapture_web_vitals_opt_in":true,
			"autocapture_web_vitals_allowed_metrics":["LCP"],"autocapture_exceptions_errors_to_ignore":["ResizeObserver"],
			"capture_console_log_opt_in":false,"capture_performance_opt_in":false,"session_recording_opt_in":true,
			"session_recording_sample_rate":0.5,"session_recording_minimum_duration_milliseconds":1000,
			"session_recording_linked_flag":{"id":1,"key":"rec"},"session_recording_network_payload_capture_config":{"recordHeaders":true},
			"session_replay_config":{"record_canvas":true},"survey_config":{"appearance":{}},"access_control":true,"week_start_day":0,
			"primary_dashboard":null,"live_events_columns":["event"],"recording_domains":["https://shop.example.com"],"inject_web_apps":true,
			"extra_settings":{"k":1},"modifiers":{"personsOnEventsMode":"disabled"},"has_completed_onboarding_for":{"product_analytics":true},
			"surveys_opt_in":true,"heatmaps_opt_in":true,"flags_persistence_default":true}`, status: 201,
			want: []string{`"app_urls":["https://shop.example.com"]`, `"session_recording_sample_rate":"0.50"`, `"timezone":"Europe/Paris"`,
				`"week_start_day":0`, `"access_control":true`, `"has_completed_onboarding_for":{"product_analytics":true}`,
				`"path_cleaning_filters":[{"regex":"/\\d+","alias":"/:id"}]`, `"test_account_filters":[]`, `"flags_persistence_default":true`,
				`"capture_console_log_opt_in":false`, `"modifiers":{"personsOnEventsMode":"disabled"}`}},
		{name: "the full project lists with its fields", method: "GET", path: projects + "?limit=1&offset=6", key: env.owner, status: 200,
			want: []string{`"name":"Full"`, `"completed_snippet_onboarding":true`, `"has_completed_onboarding_for":{"product_analytics":true}`,
				`"timezone":"Europe/Paris"`, `"access_control":true`}},
	})
}

var updateTimezones = flag.Bool("update-timezones", false, "rewrite timezones.txt from the Go toolchain's tz database")

// TestTimezoneList checks that every name of timezones.txt loads, and that the list
// is the tz database of the Go toolchain that builds hedge (the zip time/tzdata
// embeds).
func TestTimezoneList(t *testing.T) {
	for _, name := range strings.Fields(timezoneList) {
		if _, err := time.LoadLocation(name); err != nil {
			t.Errorf("%s does not load: %v", name, err)
		}
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command to find the toolchain's tz database: %v", err)
	}
	archive, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Skipf("no tz database in the toolchain: %v", err)
	}
	defer archive.Close()
	var names []string
	for _, f := range archive.File {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	want := strings.Join(names, "\n") + "\n"
	if *updateTimezones {
		if err := os.WriteFile("timezones.txt", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if timezoneList != want {
		t.Fatal("timezones.txt is not the toolchain's tz database: go test -run TestTimezoneList -update-timezones ./admin")
	}
}

// The project's own routes and the @current aliases: GET and PATCH /api/projects/{id}/,
// and @current for the first project (and its organization) the key reaches.
func TestProjectOwnRoutes(t *testing.T) {
	env := newTestEnv(t, "")
	env.addProjects(t, 2) // ids 2 and 3
	org := uuid.MustParse(env.boot.OrganizationID)
	_, memberKey := env.addUser(t, "member@example.com", org, levelMember, "project:write")
	_, readerKey := env.addUser(t, "reader@example.com", org, levelMember, "project:read")
	_, adminKey := env.addUser(t, "admin@example.com", org, levelAdmin, "project:write")
	_, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	_, scopedKey := env.addUser(t, "scoped@example.com", org, levelMember, "project:read")
	if _, err := env.warehouse.DB().Exec(`UPDATE meta.personal_api_keys SET scoped_teams = '[3]' WHERE secure_value = ?`, hashKey(scopedKey)); err != nil {
		t.Fatal(err)
	}
	var dashboard int64
	created := env.must(t, 201, "POST", "/api/projects/1/dashboards/", env.owner, `{"name":"Main"}`)
	dashboard = int64(created["id"].(float64))
	notFound := `{"type":"invalid_request","code":"not_found","detail":"Project not found.","attr":null}`
	env.run(t, []scenario{
		{name: "the project", method: "GET", path: "/api/projects/1/", key: memberKey, status: 200,
			want: []string{`"id":1,`, `"organization":"{org}"`, `"effective_membership_level":1`, `"test_account_filters":`}},
		{name: "@current is the first project", method: "GET", path: "/api/projects/@current/", key: memberKey, status: 200,
			want: []string{`"id":1,`}},
		{name: "@current of a key scoped to a project", method: "GET", path: "/api/projects/@current/", key: scopedKey, status: 200,
			want: []string{`"id":3,`}},
		{name: "@current under it", method: "GET", path: "/api/projects/@current/dashboards/", key: env.owner, status: 200,
			want: []string{`"name":"Main"`}},
		{name: "the current organization", method: "GET", path: "/api/organizations/@current/", key: env.owner, status: 200,
			want: []string{`"id":"{org}"`}},
		{name: "that of a user without projects", method: "GET", path: "/api/organizations/@current/", key: outsiderKey, status: 200,
			want: []string{`"name":"Org of outsider@example.com"`}},
		{name: "another tenant's project", method: "GET", path: "/api/projects/1/", key: outsiderKey, status: 404, want: []string{notFound}},
		{name: "no project to be current", method: "GET", path: "/api/projects/@current/", key: outsiderKey, status: 404, want: []string{notFound}},
		{name: "nor to change", method: "PATCH", path: "/api/projects/1/", key: outsiderKey, body: `{"name":"x"}`, status: 404, want: []string{notFound}},
		{name: "a member renames it", method: "PATCH", path: "/api/projects/@current/", key: memberKey,
			body: `{"name":"Renamed","timezone":"Europe/Berlin","week_start_day":1,"anonymize_ips":true,"id":99,"api_token":"phc_x"}`, status: 200,
			want: []string{`"id":1,`, `"name":"Renamed"`, `"timezone":"Europe/Berlin"`, `"week_start_day":1`, `"anonymize_ips":true`,
				`"api_token":"` + env.boot.ProjectAPIKey + `"`}},
		{name: "what it kept", method: "GET", path: "/api/organizations/{org}/projects/1/", key: memberKey, status: 200,
			want: []string{`"name":"Renamed"`, `"timezone":"Europe/Berlin"`, `"anonymize_ips":true`, `"data_attributes":["data-attr"]`}},
		{name: "under the organization too", method: "PATCH", path: "/api/organizations/{org}/projects/2/", key: memberKey,
			body: `{"name":"Second"}`, status: 200, want: []string{`"id":2,`, `"name":"Second"`}},
		{name: "a read key may not", method: "PATCH", path: "/api/projects/1/", key: readerKey, body: `{"name":"x"}`, status: 403},
		{name: "a key scoped elsewhere may not", method: "PATCH", path: "/api/projects/1/", key: scopedKey, body: `{"name":"x"}`, status: 403},
		{name: "only admins make it private", method: "PATCH", path: "/api/projects/1/", key: memberKey, body: `{"access_control":true}`,
			status: 403, want: []string{`"detail":"Your organization access level is insufficient."`}},
		{name: "an admin does", method: "PATCH", path: "/api/projects/1/", key: adminKey, body: `{"access_control":true}`,
			status: 200, want: []string{`"access_control":true`, `"effective_membership_level":8`}},
		{name: "then the member is out", method: "GET", path: "/api/projects/1/", key: memberKey, status: 403,
			want: []string{`"detail":"You don't have access to the project."`}},
		env.refused("a blank name", "PATCH", "/api/projects/1/", `{"name":" "}`, "name", "blank", "This field may not be blank."),
		env.refused("an unknown time zone", "PATCH", "/api/projects/1/", `{"timezone":"Mars/Olympus"}`, "timezone", "invalid_choice",
			`"Mars/Olympus" is not a valid choice.`),
		env.refused("a dashboard of another project", "PATCH", "/api/projects/2/", fmt.Sprintf(`{"primary_dashboard":%d}`, dashboard),
			"primary_dashboard", "invalid_input", "Dashboard does not belong to this team."),
		{name: "a dashboard of its own", method: "PATCH", path: "/api/projects/1/", key: env.owner,
			body: fmt.Sprintf(`{"primary_dashboard":%d}`, dashboard), status: 200, want: []string{fmt.Sprintf(`"primary_dashboard":%d`, dashboard)}},
	})
	// The capture listener's index has the new time zone at once.
	if loc := env.api.ProjectTokens().Location(1); loc.String() != "Europe/Berlin" {
		t.Fatalf("the token index has time zone %s", loc)
	}
}

// A project chooses the properties it materializes through PATCH: the project shows
// them, the warehouse has them, and a choice it refuses is a 400 naming the field,
// which changes nothing.
func TestProjectMaterializedProperties(t *testing.T) {
	env := newTestEnv(t, "")
	env.addProjects(t, 1) // id 2
	env.run(t, []scenario{
		{name: "none at first", method: "GET", path: "/api/projects/1/", key: env.owner, status: 200,
			want: []string{`"materialized_properties":[]`}},
		{name: "chosen", method: "PATCH", path: "/api/projects/1/", key: env.owner, body: `{"materialized_properties":["plan","$utm_source"]}`,
			status: 200, want: []string{`"materialized_properties":["plan","$utm_source"]`}},
		{name: "kept by a change of something else", method: "PATCH", path: "/api/projects/1/", key: env.owner, body: `{"name":"Renamed"}`,
			status: 200, want: []string{`"materialized_properties":["plan","$utm_source"]`}},
		{name: "another project's own", method: "PATCH", path: "/api/organizations/{org}/projects/2/", key: env.owner,
			body: `{"materialized_properties":["company"]}`, status: 200, want: []string{`"materialized_properties":["company"]`}},
		env.refused("too many", "PATCH", "/api/projects/1/", `{"materialized_properties":["1","2","3","4","5","6","7","8","9"]}`,
			"materialized_properties", "invalid_input", "A project may materialize at most 8 properties."),
		env.refused("one twice", "PATCH", "/api/projects/1/", `{"materialized_properties":["plan","plan"]}`,
			"materialized_properties", "invalid_input", `"plan" is listed twice.`),
		env.refused("one every project has", "PATCH", "/api/projects/1/", `{"materialized_properties":["$browser"]}`,
			"materialized_properties", "invalid_input", `"$browser" is materialized for every project already.`),
		env.refused("a quote", "PATCH", "/api/projects/1/", `{"materialized_properties":["it's"]}`,
			"materialized_properties", "invalid_input", `"it's" cannot be materialized: a property name may not hold quotes, \, * or control characters.`),
		env.refused("not a list", "PATCH", "/api/projects/1/", `{"materialized_properties":"plan"}`,
			"materialized_properties", "not_a_list", `Expected a list of items but got type "str".`),
		env.refused("null", "PATCH", "/api/projects/1/", `{"materialized_properties":null}`,
			"materialized_properties", "null", "This field may not be null."),
		env.refused("with another field", "PATCH", "/api/projects/1/", `{"name":"Changed","materialized_properties":["plan","plan"]}`,
			"materialized_properties", "invalid_input", `"plan" is listed twice.`),
		{name: "nothing changed", method: "GET", path: "/api/projects/1/", key: env.owner, status: 200,
			want: []string{`"name":"Renamed"`, `"materialized_properties":["plan","$utm_source"]`}},
		{name: "one dropped", method: "PATCH", path: "/api/projects/1/", key: env.owner, body: `{"materialized_properties":["$utm_source"]}`,
			status: 200, want: []string{`"materialized_properties":["$utm_source"]`}},
	})
	for team, want := range map[int64][]string{1: {"$utm_source"}, 2: {"company"}} {
		if got := env.warehouse.MaterializedProperties(team); !slices.Equal(got, want) {
			t.Errorf("project %d materializes %q, want %q", team, got, want)
		}
	}
}
