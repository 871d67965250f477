package admin

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// flagPath is the path of the bootstrap project's flags, or of one of them.
func (env *testEnv) flagPath(id ...int64) string {
	if len(id) == 0 {
		return env.project + "/feature_flags/"
	}
	return fmt.Sprintf("%s/feature_flags/%d/", env.project, id[0])
}

// flag creates a flag of the bootstrap project and returns its id.
func (env *testEnv) flag(t *testing.T, body string) int64 {
	t.Helper()
	return int64(env.must(t, 201, "POST", env.flagPath(), env.owner, body)["id"].(float64))
}

// cohort creates a cohort of the bootstrap project and returns its id.
func (env *testEnv) cohort(t *testing.T, body string) int64 {
	t.Helper()
	return int64(env.must(t, 201, "POST", env.project+"/cohorts/", env.owner, body)["id"].(float64))
}

// userID is the id of the user with the given e-mail.
func (env *testEnv) userID(t *testing.T, email string) int64 {
	t.Helper()
	var id int64
	if err := env.warehouse.DB().QueryRow(`SELECT id FROM meta.users WHERE email = ?`, email).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

var (
	recordTime = regexp.MustCompile(`"(created_at|updated_at)":"[^"]+"`)
	recordUser = regexp.MustCompile(`"(created_by|last_modified_by)":\{"id":\d+,"uuid":"[^"]+","distinct_id":"[^"]+","first_name":"[^"]*",` +
		`"last_name":"[^"]*","email":"([^"]+)","is_email_verified":(true|false),"hedgehog_config":null,"role_at_organization":"[^"]*"\}`)
)

// stable is a record's JSON with its times and users (as "<email>") written out, so
// that the rest can be compared to the byte.
func stable(body string) string {
	return recordUser.ReplaceAllString(recordTime.ReplaceAllString(body, `"$1":"<time>"`), `"$1":"<$2>"`)
}

// flagJSON is a flag record as PostHog shapes it, created and last changed by the
// owner, with the fields of a flag that has no experiment, survey or dashboard.
func flagJSON(id int64, name, key, filters string, active bool, version int, tags string, extra ...string) string {
	fields := map[string]string{"deleted": "false", "ensure_experience_continuity": "false", "is_remote_configuration": "false",
		"has_encrypted_payloads": "false", "status": `"ACTIVE"`, "evaluation_runtime": `"all"`, "bucketing_identifier": `"distinct_id"`}
	for i := 0; i+1 < len(extra); i += 2 {
		fields[extra[i]] = extra[i+1]
	}
	return fmt.Sprintf(`{"id":%d,"name":%q,"key":%q,"filters":%s,"deleted":%s,"active":%t,"created_by":"<owner@example.com>",`+
		`"created_at":"<time>","updated_at":"<time>","version":%d,"last_modified_by":"<owner@example.com>",`+
		`"ensure_experience_continuity":%s,"experiment_set":[],"surveys":[],"features":[],"rollback_conditions":null,`+
		`"performed_rollback":false,"can_edit":true,"tags":%s,"evaluation_tags":[],"usage_dashboard":null,`+
		`"analytics_dashboards":[],"has_enriched_analytics":false,"user_access_level":"manager",`+
		`"is_remote_configuration":%s,"has_encrypted_payloads":%s,"status":%s,"evaluation_runtime":%s,`+
		`"bucketing_identifier":%s,"last_called_at":null}`,
		id, name, key, filters, fields["deleted"], active, version, fields["ensure_experience_continuity"], tags,
		fields["is_remote_configuration"], fields["has_encrypted_payloads"], fields["status"], fields["evaluation_runtime"],
		fields["bucketing_identifier"])
}

const everyoneFilters = `{"groups":[{"properties":[],"rollout_percentage":100,"variant":null}],"multivariate":null,"payloads":{},"aggregation_group_type_index":null}`

func TestFeatureFlagsCRUD(t *testing.T) {
	env := newTestEnv(t, "")
	_, readKey := env.member(t, "reader@example.com", levelMember, "feature_flag:read")
	_, memberKey := env.member(t, "member@example.com", levelMember, "feature_flag:write")

	status, created, _ := env.do(t, "POST", env.flagPath(), env.owner, nil, `{"key":"beta","name":" Beta test ","tags":["Web"," web "],
		"filters":{"groups":[{"properties":[{"key":"email","type":"person","operator":"icontains","value":"@acme.com"}],"rollout_percentage":50}],
		"payloads":{"true":{"colour":"blue"}}},"rollout_percentage":30,"creation_context":"feature_flags"}`)
	betaFilters := `{"groups":[{"properties":[{"key":"email","type":"person","operator":"icontains","value":"@acme.com"}],"rollout_percentage":50,"variant":null}],` +
		`"multivariate":null,"payloads":{"true":"{\"colour\": \"blue\"}"},"aggregation_group_type_index":null}`
	if want := flagJSON(1, "Beta test", "beta", betaFilters, true, 1, `["web"]`); status != 201 || stable(created) != want {
		t.Fatalf("create: %d\n%s\nwant\n%s", status, stable(created), want)
	}
	plain := env.flag(t, `{"key":"plain"}`)
	if _, body, _ := env.do(t, "GET", env.flagPath(plain), env.owner, nil, ""); stable(body) != flagJSON(plain, "", "plain",
		`{"groups":[{"properties":[],"rollout_percentage":null,"variant":null}],"multivariate":null,"payloads":{},"aggregation_group_type_index":null}`, true, 1, `[]`) {
		t.Fatalf("a flag created without filters matches everyone: %s", body)
	}
	multi := env.flag(t, `{"key":"multi","filters":{"groups":[{"properties":[]}],"multivariate":{"variants":[{"key":"a","rollout_percentage":100}]}}}`)

	env.run(t, []scenario{
		{name: "list, newest first", method: "GET", path: env.flagPath(), key: readKey, status: 200,
			want: []string{`"count":3,"next":null,"previous":null,"results":[{"id":3,`, `"key":"plain"`, `"key":"beta"`}},
		{name: "a page", method: "GET", path: env.flagPath() + "?limit=1&offset=1", key: readKey, status: 200,
			want: []string{`"count":3`, `"results":[{"id":2,`, `?limit=1&offset=2"`, `"previous":"http://`}},
		{name: "search key or name", method: "GET", path: env.flagPath() + "?search=TEST", key: readKey, status: 200, want: []string{`"count":1`, `"key":"beta"`}},
		{name: "type", method: "GET", path: env.flagPath() + "?type=multivariant", key: readKey, status: 200, want: []string{`"count":1`, `"key":"multi"`}},
		{name: "active", method: "GET", path: env.flagPath() + "?active=false", key: readKey, status: 200, want: []string{`"count":0`}},
		{name: "created by", method: "GET", path: env.flagPath() + "?created_by_id=x", key: readKey, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"A valid integer is required.","attr":"created_by_id"}`}},
		{name: "retrieve", method: "GET", path: env.flagPath(1), key: readKey, status: 200, want: []string{`"key":"beta"`, `"user_access_level":"editor"`}},
		{name: "no such flag", method: "GET", path: env.flagPath(99), key: readKey, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}},
		{name: "not an id", method: "GET", path: env.project + "/feature_flags/beta/", key: readKey, status: 404},
		{name: "a reader does not write", method: "POST", path: env.flagPath(), key: readKey, body: `{"key":"x"}`, status: 403,
			want: []string{`{"type":"authentication_error","code":"permission_denied","detail":"API key missing required scope 'feature_flag:write'","attr":null}`}},
		{name: "any member writes", method: "PATCH", path: env.flagPath(multi), key: memberKey, body: `{"name":"Multi"}`, status: 200,
			want: []string{`"name":"Multi"`, `"version":2`, `"last_modified_by":{"id":`, `"email":"member@example.com"`}},
		{name: "patch changes only what is sent", method: "PATCH", path: env.flagPath(1), key: env.owner,
			body:   `{"active":false,"ensure_experience_continuity":true,"evaluation_runtime":"server","bucketing_identifier":"device_id","tags":[],"evaluation_tags":["Web"]}`,
			status: 200, want: []string{`"name":"Beta test"`, `"filters":` + betaFilters, `"active":false`, `"version":2`,
				`"ensure_experience_continuity":true`, `"tags":[],"evaluation_tags":["web"]`, `"evaluation_runtime":"server","bucketing_identifier":"device_id"`}},
		{name: "filters without groups are left alone", method: "PATCH", path: env.flagPath(1), key: env.owner, body: `{"filters":{"payloads":{}}}`,
			status: 200, want: []string{`"filters":` + betaFilters, `"version":3`}},
		{name: "DELETE is not allowed", method: "DELETE", path: env.flagPath(1), key: env.owner, status: 405, notWant: []string{"{"}},
		{name: "types, as DRF words them", method: "POST", path: env.flagPath(), key: env.owner, body: `{"key":5}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Not a valid string.","attr":"key"}`}},
		{name: "active null", method: "PATCH", path: env.flagPath(1), key: env.owner, body: `{"active":null}`, status: 400,
			want: []string{`{"type":"validation_error","code":"null","detail":"This field may not be null.","attr":"active"}`}},
		{name: "version a number", method: "PATCH", path: env.flagPath(1), key: env.owner, body: `{"version":"v1"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"A valid integer is required.","attr":"version"}`}},
		{name: "still version 3", method: "GET", path: env.flagPath(1), key: env.owner, status: 200, want: []string{`"version":3`}},
	})
}

// Soft delete: the flag leaves the list but stays readable and restorable, its key is
// free, and a new flag with the key removes it.
func TestFeatureFlagSoftDelete(t *testing.T) {
	env := newTestEnv(t, "")
	old := env.flag(t, `{"key":"beta"}`)
	env.run(t, []scenario{
		{name: "delete", method: "PATCH", path: env.flagPath(old), key: env.owner, body: `{"deleted":true}`, status: 200,
			want: []string{`"deleted":true`, `"status":"DELETED"`, `"version":2`}},
		{name: "not listed", method: "GET", path: env.flagPath(), key: env.owner, status: 200, want: []string{`"count":0`}},
		{name: "still readable", method: "GET", path: env.flagPath(old), key: env.owner, status: 200, want: []string{`"deleted":true`}},
		{name: "restore", method: "PATCH", path: env.flagPath(old), key: env.owner, body: `{"deleted":false}`, status: 200, want: []string{`"deleted":false`}},
		{name: "key taken while live", method: "POST", path: env.flagPath(), key: env.owner, body: `{"key":"beta"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"unique","detail":"There is already a feature flag with this key.","attr":"key"}`}},
		{name: "delete again", method: "PATCH", path: env.flagPath(old), key: env.owner, body: `{"deleted":true}`, status: 200},
		{name: "key free", method: "POST", path: env.flagPath(), key: env.owner, body: `{"key":"beta"}`, status: 201, want: []string{`"key":"beta"`, `"version":1`}},
		{name: "the deleted flag is gone", method: "GET", path: env.flagPath(old), key: env.owner, status: 404},
		{name: "one beta", method: "GET", path: env.flagPath(), key: env.owner, status: 200, want: []string{`"count":1`}},
	})
	// A restore whose key was taken since is refused.
	again := env.flag(t, `{"key":"gamma"}`)
	env.must(t, 200, "PATCH", env.flagPath(again), env.owner, `{"deleted":true}`)
	env.flag(t, `{"key":"delta"}`)
	env.must(t, 200, "PATCH", env.flagPath(again), env.owner, `{"key":"delta-old"}`)
	env.run(t, []scenario{
		{name: "restore under a taken key", method: "PATCH", path: env.flagPath(again), key: env.owner, body: `{"deleted":false,"key":"delta"}`,
			status: 400, want: []string{`"code":"unique"`, `"attr":"key"`}},
	})
}

// An update made from an older version conflicts when it changes a field that
// changed since; one that changes other fields goes through.
func TestFeatureFlagVersionConflict(t *testing.T) {
	env := newTestEnv(t, "")
	_, otherKey := env.member(t, "other@example.com", levelMember, "feature_flag:write")
	id := env.flag(t, `{"key":"beta"}`)
	env.must(t, 200, "PATCH", env.flagPath(id), otherKey, `{"name":"Theirs","version":1}`)
	env.run(t, []scenario{
		{name: "a stale change of the same field", method: "PATCH", path: env.flagPath(id), key: env.owner, body: `{"name":"Mine","version":1}`,
			status: 409, want: []string{`{"type":"server_error","code":"conflict","detail":"The feature flag was updated by other@example.com ` +
				`since you started editing it. Please refresh and try again.","attr":null}`}},
		{name: "unchanged", method: "GET", path: env.flagPath(id), key: env.owner, status: 200, want: []string{`"name":"Theirs"`, `"version":2`}},
		{name: "a stale change of another field", method: "PATCH", path: env.flagPath(id), key: env.owner, body: `{"active":false,"name":"Theirs","version":1}`,
			status: 200, want: []string{`"active":false`, `"version":3`}},
		{name: "without a version, last write wins", method: "PATCH", path: env.flagPath(id), key: env.owner, body: `{"name":"Mine"}`,
			status: 200, want: []string{`"name":"Mine"`, `"version":4`}},
		{name: "the current version", method: "PATCH", path: env.flagPath(id), key: otherKey, body: `{"name":"Again","version":4}`,
			status: 200, want: []string{`"version":5`}},
	})
}

// Every refusal of a flag, through the API: PostHog's words, code and attr.
func TestFeatureFlagValidation(t *testing.T) {
	env := newTestEnv(t, "")
	alpha := env.flag(t, `{"key":"alpha"}`)
	off := env.flag(t, `{"key":"off","active":false}`)
	dependsOn := func(ref any) string {
		return fmt.Sprintf(`{"groups":[{"properties":[{"key":"%v","type":"flag","operator":"flag_evaluates_to","value":true}]}]}`, ref)
	}
	beta := env.flag(t, `{"key":"beta","filters":`+dependsOn(alpha)+`}`)
	people := env.cohort(t, `{"name":"People","filters":{"properties":{"type":"AND","values":[{"key":"email","type":"person","value":"x"}]}}}`)
	events := env.cohort(t, `{"name":"Buyers","filters":{"properties":{"type":"AND","values":[{"key":"purchase","type":"behavioral","value":"performed_event"}]}}}`)
	_ = people
	create := func(name, body, attr, code, detail string) scenario {
		return env.refused(name, "POST", env.flagPath(), body, attr, code, detail)
	}
	filters := func(name, filters, code, detail string) scenario {
		return create(name, `{"key":"new","filters":`+filters+`}`, "filters", code, detail)
	}
	props := func(props ...string) string {
		return `{"groups":[{"properties":[` + strings.Join(props, ",") + `]}]}`
	}
	env.run(t, []scenario{
		create("key required", `{"name":"x"}`, "key", "required", "This field is required."),
		create("key blank", `{"key":""}`, "key", "blank", "This field may not be blank."),
		create("key too long", `{"key":"`+strings.Repeat("k", 401)+`"}`, "key", "max_length", "Ensure this field has no more than 400 characters."),
		create("key unique", `{"key":"alpha"}`, "key", "unique", "There is already a feature flag with this key."),
		create("key characters", `{"key":"with space"}`, "key", "invalid_key", "Only letters, numbers, hyphens (-) & underscores (_) are allowed."),
		create("key null", `{"key":null}`, "key", "null", "This field may not be null."),
		filters("filters a list", `[]`, "not_a_dict", `Expected a dictionary of items but got type "list".`),
		filters("no condition set", `{"groups":[]}`, "invalid_input", "Feature flags must have at least one condition set (group)."),
		filters("event property", props(`{"key":"$browser","type":"event","value":"x"}`), "invalid_input",
			"Filters are not valid (can only use person, cohort, and flag properties)"),
		filters("group flag", `{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"email","type":"person","value":"x"}]}]}`, "invalid_input",
			"Filters are not valid (can only use group properties)"),
		filters("flag operator", props(fmt.Sprintf(`{"key":"%d","type":"flag","value":true}`, alpha)), "invalid_input",
			"Flag properties must use the 'flag_evaluates_to' operator"),
		filters("dependency by key", dependsOn("alpha"), "invalid_input",
			"Flag dependencies must reference flag IDs (integers), not flag keys. Invalid reference: 'alpha'"),
		filters("dependency missing", dependsOn(999), "invalid_input", "Flag dependency references non-existent flag with ID 999"),
		filters("dependency disabled", dependsOn(off), "invalid_input",
			fmt.Sprintf("Cannot create dependency on disabled flag 'off' (ID: %d). Flag dependencies must reference active flags only.", off)),
		env.refused("dependency on itself", "PATCH", env.flagPath(alpha), `{"filters":`+dependsOn(alpha)+`}`, "filters", "invalid_input",
			"Feature flag 'alpha' cannot depend on itself"),
		env.refused("dependency cycle", "PATCH", env.flagPath(alpha), `{"filters":`+dependsOn(beta)+`}`, "filters", "invalid_input",
			"Circular dependency detected: alpha → beta → alpha"),
		filters("variants sum", `{"groups":[{"properties":[]}],"multivariate":{"variants":[{"key":"a","rollout_percentage":60},{"key":"b","rollout_percentage":60}]}}`,
			"invalid_input", "Invalid variant definitions: Variant rollout percentages must sum to 100."),
		filters("variant override", `{"groups":[{"properties":[],"variant":"c"}],"multivariate":{"variants":[{"key":"a","rollout_percentage":100}]}}`,
			"invalid_input", "Filters are not valid (variant override does not exist)"),
		filters("too many values", props(`{"key":"email","type":"person","value":[`+strings.TrimSuffix(strings.Repeat(`"a",`, 1001), ",")+`]}`),
			"invalid_input", "Property group expressions of type email cannot contain more than 1000 values."),
		filters("string operator", props(`{"key":"age","type":"person","operator":"gte","value":18}`), "invalid_value", "Invalid value for operator gte: 18"),
		filters("date", props(`{"key":"signup","type":"person","operator":"is_date_after","value":"soon"}`), "invalid_date", "Invalid date value: soon"),
		filters("in off cohorts", props(`{"key":"email","type":"person","operator":"not_in","value":"x"}`), "invalid_operator",
			"The 'not_in' operator is only valid for cohort properties, not 'person' properties."),
		filters("cohort missing", props(`{"key":"id","type":"cohort","value":999}`), "cohort_does_not_exist", "Cohort with id 999 does not exist"),
		filters("cohort on events", props(fmt.Sprintf(`{"key":"id","type":"cohort","value":%d}`, events)), "behavioral_cohort_found",
			"Cohort 'Buyers' with filters on events cannot be used in feature flags."),
		filters("payloads a dictionary", `{"groups":[{"properties":[]}],"payloads":"x"}`, "invalid_input", "Payloads must be passed as a dictionary"),
		filters("payload JSON", `{"groups":[{"properties":[]}],"payloads":{"true":"not json"}}`, "invalid_input", "Payload value is not valid JSON"),
		filters("payload keys, multivariate", `{"groups":[{"properties":[]}],"multivariate":{"variants":[{"key":"a","rollout_percentage":100}]},"payloads":{"b":"1"}}`,
			"invalid_input", "Payload keys must match a variant key for multivariate flags"),
		filters("payload keys, boolean", `{"groups":[{"properties":[]}],"payloads":{"a":"1"}}`, "invalid_input", "Payload keys must be 'true' for boolean flags"),
		create("runtime", `{"key":"new","evaluation_runtime":"edge"}`, "evaluation_runtime", "invalid_choice", `"edge" is not a valid choice.`),
		create("bucketing", `{"key":"new","bucketing_identifier":"ip"}`, "bucketing_identifier", "invalid_choice", `"ip" is not a valid choice.`),
		env.refused("delete a dependency", "PATCH", env.flagPath(alpha), `{"deleted":true}`, "", "invalid_input",
			fmt.Sprintf("Cannot delete this feature flag because other flags depend on it: beta (ID: %d). Please update or delete the dependent flags first.", beta)),
		env.refused("disable a dependency", "PATCH", env.flagPath(alpha), `{"active":false}`, "", "invalid_input",
			fmt.Sprintf("Cannot disable this feature flag because other flags depend on it: beta (ID: %d). Please update or disable the dependent flags first.", beta)),
	})
	// Enabling a flag whose dependency was disabled since (possible when it was
	// inactive itself) is refused until the dependency is enabled.
	env.must(t, 200, "PATCH", env.flagPath(beta), env.owner, `{"active":false}`)
	env.must(t, 200, "PATCH", env.flagPath(alpha), env.owner, `{"active":false}`)
	env.run(t, []scenario{
		env.refused("enable on a disabled dependency", "PATCH", env.flagPath(beta), `{"active":true}`, "", "invalid_input",
			fmt.Sprintf("Cannot enable this feature flag because it depends on disabled flags: alpha (ID: %d). Please enable the dependency flags first.", alpha)),
	})
}

// TestFeatureFlagLimits: what a flag and a project's flags may weigh, refused in DRF's
// shape; a project at its limits still lists and deletes its flags, and has room again
// once it has.
func TestFeatureFlagLimits(t *testing.T) {
	env := newTestEnv(t, "")
	withPayload := func(key string, n int) string { // n bytes of payload: a JSON string
		return fmt.Sprintf(`{"key":%q,"filters":{"groups":[{"properties":[]}],"payloads":{"true":"\"%s\""}}}`, key, strings.Repeat("p", n-2))
	}
	// Payloads of 4 × 524,000 bytes: 2,096,000, just under the project's 2 MB.
	var ids []int64
	for i := range 4 {
		ids = append(ids, env.flag(t, withPayload(fmt.Sprintf("big-%d", i), 524_000)))
	}
	env.run(t, []scenario{
		// The red team's payload, 3.5 MB: a flag's filters are 512 KB at most.
		env.refused("a payload of 3.5 MB", "POST", env.flagPath(), withPayload("huge", 3_500_000), "filters", "invalid_input",
			"Feature flag filters exceed maximum size of 512.0 KB. Current size: 3.3 MB. Please simplify conditions or reduce payload sizes."),
		env.refused("past the project's payloads", "POST", env.flagPath(), withPayload("more", 2_000), "filters", "invalid_input",
			"The payloads of this project's feature flags would exceed the maximum total size of 2.0 MB. Total size: 2.0 MB. "+
				"Please reduce payload sizes or delete unused flags."),
		{name: "listed", method: "GET", path: env.flagPath(), key: env.owner, status: 200, want: []string{`"count":4`}},
		{name: "deleted", method: "PATCH", path: env.flagPath(ids[0]), key: env.owner, body: `{"deleted":true}`, status: 200,
			want: []string{`"deleted":true`}},
		{name: "room again", method: "POST", path: env.flagPath(), key: env.owner, body: withPayload("more", 2_000), status: 201},
		env.refused("restored past the project's payloads", "PATCH", env.flagPath(ids[0]), `{"deleted":false}`, "filters", "invalid_input",
			"The payloads of this project's feature flags would exceed the maximum total size of 2.0 MB. Total size: 2.0 MB. "+
				"Please reduce payload sizes or delete unused flags."),
		env.refused("too many condition sets", "POST", env.flagPath(),
			`{"key":"many","filters":{"groups":[`+strings.TrimSuffix(strings.Repeat(`{"properties":[]},`, 101), ",")+`]}}`,
			"filters", "invalid_input", "Feature flags cannot have more than 100 condition sets."),
	})
}

// The routes of flags, cohorts and definitions take other tenants' keys as every
// project route does, and a key scoped to other projects gets PostHog's 403.
func TestFeatureFlagsTenants(t *testing.T) {
	env := newTestEnv(t, "")
	_, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	other := env.otherProject(t)
	scopedKey, _, err := insertScopedPersonalAPIKey(t.Context(), env.warehouse.DB(), env.userID(t, "owner@example.com"), "scoped",
		[]string{"feature_flag:write", "cohort:write"}, nil, []int64{projectID(t, other)})
	if err != nil {
		t.Fatal(err)
	}
	id := env.flag(t, `{"key":"beta"}`)
	notFound := `{"type":"invalid_request","code":"not_found","detail":"Project not found.","attr":null}`
	scoped := fmt.Sprintf(`{"type":"authentication_error","code":"permission_denied","detail":"API key does not have access to the requested project: ID %d.","attr":null}`, env.boot.ProjectID)
	env.run(t, []scenario{
		{name: "no key", method: "GET", path: env.flagPath(), status: 401,
			want: []string{`{"type":"authentication_error","code":"not_authenticated","detail":"Authentication credentials were not provided.","attr":null}`}},
		{name: "a key that is not", method: "POST", path: env.project + "/cohorts/", key: "phx_notakey", body: `{"is_static":true}`, status: 401,
			want: []string{`{"type":"authentication_error","code":"authentication_failed","detail":"Personal API key found in request Authorization header is invalid.","attr":null}`}},
		{name: "another organization's flags", method: "GET", path: env.flagPath(), key: outsiderKey, status: 404, want: []string{notFound}},
		{name: "another organization's flag", method: "PATCH", path: env.flagPath(id), key: outsiderKey, body: `{"name":"x"}`, status: 404, want: []string{notFound}},
		{name: "another organization's cohorts", method: "POST", path: env.project + "/cohorts/", key: outsiderKey, body: `{"is_static":true}`, status: 404, want: []string{notFound}},
		{name: "a key scoped to another project", method: "GET", path: env.flagPath(id), key: scopedKey, status: 403, want: []string{scoped}},
		{name: "its own project", method: "GET", path: other + "/feature_flags/", key: scopedKey, status: 200, want: []string{`"count":0`}},
		{name: "another project's flag by id", method: "GET", path: fmt.Sprintf("%s/feature_flags/%d/", other, id), key: scopedKey, status: 404,
			want: []string{`"detail":"Not found."`}},
	})
}
