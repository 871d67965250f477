package flags

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// testProject is a project for the validation tests, without a database:
//
//	1 alpha   active
//	2 beta    active, depends on alpha
//	3 off     inactive
//	4 gamma   active, depends on beta
//	5 waiting inactive, depends on off
//	6..11     active, each depends on alpha (for "and N more")
//
// and cohorts 10 people (person properties), 11 behavior (events), 12 outer (uses
// behavior), 13 listed (static), 14 loop-a (uses 15), 15 loop-b (uses nothing).
func testProject(t *testing.T) *projectView {
	t.Helper()
	flag := func(id int64, key string, active bool, filters string) *Flag {
		var f Filters
		if err := json.Unmarshal([]byte(filters), &f); err != nil {
			t.Fatal(err)
		}
		return &Flag{ID: id, Key: key, Active: active, Filters: f}
	}
	dependsOn := func(id int) string {
		return fmt.Sprintf(`{"groups":[{"properties":[{"key":"%d","type":"flag","operator":"flag_evaluates_to","value":true}]}]}`, id)
	}
	p := &projectView{flags: []*Flag{
		flag(1, "alpha", true, `{"groups":[{"properties":[]}]}`),
		flag(2, "beta", true, dependsOn(1)),
		flag(3, "off", false, `{"groups":[{"properties":[]}]}`),
		flag(4, "gamma", true, dependsOn(2)),
		flag(5, "waiting", false, dependsOn(3)),
	}, cohorts: map[int64]*Cohort{}}
	for id := int64(6); id <= 11; id++ {
		p.flags = append(p.flags, flag(100+id, fmt.Sprintf("dep-%02d", id), true, dependsOn(1)))
	}
	cohort := func(id int64, name string, static bool, filters string) {
		var f CohortFilters
		if err := json.Unmarshal([]byte(filters), &f); err != nil {
			t.Fatal(err)
		}
		p.cohorts[id] = &Cohort{ID: id, Name: name, IsStatic: static, Filters: f}
	}
	cohort(10, "people", false, `{"properties":{"type":"OR","values":[{"type":"AND","values":[{"key":"email","type":"person","operator":"icontains","value":"@x.com"}]}]}}`)
	cohort(11, "behavior", false, `{"properties":{"type":"AND","values":[{"key":"$pageview","type":"behavioral","value":"performed_event"}]}}`)
	cohort(12, "outer", false, `{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":11}]}}`)
	cohort(13, "listed", true, `{"properties":{"type":"AND","values":[]}}`)
	cohort(14, "loop-a", false, `{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":15}]}}`)
	cohort(15, "loop-b", false, `{"properties":{"type":"AND","values":[{"key":"email","type":"person","value":"x"}]}}`)
	return p
}

// change reads a FlagChange from a request body as the management API binds it.
func change(t *testing.T, body string) *FlagChange {
	t.Helper()
	var in struct {
		Key, Name, EvaluationRuntime, BucketingIdentifier *string
		Filters                                           json.RawMessage
		Active, Deleted, EnsureExperienceContinuity       *bool
		Version                                           *int
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&in); err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal([]byte(body), &raw)
	ch := &FlagChange{Key: in.Key, Name: in.Name, Filters: raw["filters"], Active: in.Active, Deleted: in.Deleted,
		EnsureExperienceContinuity: in.EnsureExperienceContinuity, Version: in.Version}
	if v, ok := raw["evaluation_runtime"]; ok {
		json.Unmarshal(v, &ch.EvaluationRuntime)
	}
	if v, ok := raw["bucketing_identifier"]; ok {
		json.Unmarshal(v, &ch.BucketingIdentifier)
	}
	return ch
}

// A flag filter on the flag with the given id (or key, to be refused).
func on(ref string) string {
	return `{"key":"` + ref + `","type":"flag","operator":"flag_evaluates_to","value":true}`
}

func conditions(props ...string) string {
	return `{"groups":[{"properties":[` + strings.Join(props, ",") + `],"rollout_percentage":100}]}`
}

// Every refusal, with PostHog's exact words and attr, when creating (update: the id
// of the flag updated, 0 for a create).
func TestFlagValidation(t *testing.T) {
	p := testProject(t)
	f := func(name string, update int64, body, attr, code, detail string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			var current *Flag
			if update != 0 {
				current = p.flag(update)
				if current == nil {
					t.Fatalf("no flag %d", update)
				}
			}
			ch := change(t, body)
			_, err := ch.apply(current, p)
			want := &ValidationError{Attr: attr, Code: code, Detail: detail}
			if got, ok := err.(*ValidationError); !ok || *got != *want {
				t.Fatalf("%s\n got %#v\nwant %#v", body, err, want)
			}
		})
	}
	valid := `,"filters":` + conditions()

	f("key required", 0, `{"name":"x"`+valid+`}`, "key", "required", "This field is required.")
	f("key blank", 0, `{"key":"  "`+valid+`}`, "key", "blank", "This field may not be blank.")
	f("key too long", 0, `{"key":"`+strings.Repeat("k", 401)+`"`+valid+`}`, "key", "max_length", "Ensure this field has no more than 400 characters.")
	f("key taken", 0, `{"key":"alpha"`+valid+`}`, "key", "unique", "There is already a feature flag with this key.")
	f("key taken, on update", 2, `{"key":"alpha"}`, "key", "unique", "There is already a feature flag with this key.")
	f("key characters", 0, `{"key":"a b"`+valid+`}`, "key", "invalid_key", "Only letters, numbers, hyphens (-) & underscores (_) are allowed.")
	f("key before filters", 0, `{"key":"a.b","filters":{"groups":[]}}`, "key", "invalid_key", "Only letters, numbers, hyphens (-) & underscores (_) are allowed.")
	f("name null characters", 0, `{"key":"k","name":"a\u0000"`+valid+`}`, "name", "null_characters_not_allowed", "Null characters are not allowed.")

	f("filters not an object", 0, `{"key":"k","filters":[]}`, "filters", "not_a_dict", `Expected a dictionary of items but got type "list".`)
	f("no groups", 0, `{"key":"k","filters":{"groups":[]}}`, "filters", "invalid_input", "Feature flags must have at least one condition set (group).")
	f("groups missing", 0, `{"key":"k","filters":{}}`, "filters", "invalid_input", "Feature flags must have at least one condition set (group).")
	f("groups of the wrong shape", 0, `{"key":"k","filters":{"groups":[{"rollout_percentage":"all"}]}}`, "filters", "invalid_input",
		"Filters are not valid (groups.rollout_percentage must be a number)")

	f("person flag, event property", 0, `{"key":"k","filters":`+conditions(`{"key":"$browser","value":"Chrome"}`)+`}`, "filters", "invalid_input",
		"Filters are not valid (can only use person, cohort, and flag properties)")
	f("person flag, group property", 0, `{"key":"k","filters":`+conditions(`{"key":"plan","type":"group","group_type_index":0,"value":"pro"}`)+`}`,
		"filters", "invalid_input", "Filters are not valid (can only use person, cohort, and flag properties)")
	f("group flag, person property", 0, `{"key":"k","filters":{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"email","type":"person","value":"x"}]}]}}`,
		"filters", "invalid_input", "Filters are not valid (can only use group properties)")
	f("mixed targeting, person property in a group condition", 0, `{"key":"k","filters":{"groups":[{"properties":[{"key":"plan","type":"group","group_type_index":0,"value":"pro"}],"aggregation_group_type_index":0},`+
		`{"properties":[{"key":"email","type":"person","value":"x"}],"aggregation_group_type_index":0}]}}`,
		"filters", "invalid_input", "Filters are not valid (can only use group properties)")
	f("mixed targeting, group property in a person condition", 0, `{"key":"k","filters":{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"plan","type":"group","group_type_index":0,"value":"pro"}]},`+
		`{"properties":[{"key":"plan","type":"group","group_type_index":0,"value":"pro"}],"aggregation_group_type_index":null}]}}`,
		"filters", "invalid_input", "Filters are not valid (can only use person, cohort, and flag properties)")
	f("group flag, other group type", 0, `{"key":"k","filters":{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"plan","type":"group","group_type_index":1,"value":"x"}]}]}}`,
		"filters", "invalid_input", "Filters are not valid (can only use group properties)")
	f("flag filter operator", 0, `{"key":"k","filters":`+conditions(`{"key":"1","type":"flag","operator":"exact","value":true}`)+`}`,
		"filters", "invalid_input", "Flag properties must use the 'flag_evaluates_to' operator")

	f("dependency by key", 0, `{"key":"k","filters":`+conditions(on("alpha"))+`}`, "filters", "invalid_input",
		"Flag dependencies must reference flag IDs (integers), not flag keys. Invalid reference: 'alpha'")
	f("dependency missing", 0, `{"key":"k","filters":`+conditions(on("99"))+`}`, "filters", "invalid_input",
		"Flag dependency references non-existent flag with ID 99")
	f("dependency disabled", 0, `{"key":"k","filters":`+conditions(on("3"))+`}`, "filters", "invalid_input",
		"Cannot create dependency on disabled flag 'off' (ID: 3). Flag dependencies must reference active flags only.")
	f("dependency on itself", 1, `{"filters":`+conditions(on("1"))+`}`, "filters", "invalid_input", "Feature flag 'alpha' cannot depend on itself")
	f("dependency cycle", 1, `{"filters":`+conditions(on("4"))+`}`, "filters", "invalid_input",
		"Circular dependency detected: alpha → gamma → beta → alpha")
	f("dependency cycle of two", 1, `{"filters":`+conditions(on("2"))+`}`, "filters", "invalid_input",
		"Circular dependency detected: alpha → beta → alpha")

	f("variants sum", 0, `{"key":"k","filters":{"groups":[{"properties":[]}],"multivariate":{"variants":[{"key":"a","rollout_percentage":50},{"key":"b","rollout_percentage":40}]}}}`,
		"filters", "invalid_input", "Invalid variant definitions: Variant rollout percentages must sum to 100.")
	f("variant override", 0, `{"key":"k","filters":{"groups":[{"properties":[],"variant":"c"}],"multivariate":{"variants":[{"key":"a","rollout_percentage":50},{"key":"b","rollout_percentage":50}]}}}`,
		"filters", "invalid_input", "Filters are not valid (variant override does not exist)")
	f("variant override without variants", 0, `{"key":"k","filters":{"groups":[{"properties":[],"variant":"a"}]}}`,
		"filters", "invalid_input", "Filters are not valid (variant override does not exist)")

	many := strings.TrimSuffix(strings.Repeat(`"v",`, 1001), ",")
	f("too many values", 0, `{"key":"k","filters":`+conditions(`{"key":"email","type":"person","value":[`+many+`]}`)+`}`,
		"filters", "invalid_input", "Property group expressions of type email cannot contain more than 1000 values.")
	// The work of one flag's evaluation is bounded: condition sets, filters in one, the
	// length of a pattern, the size of the filters (payloads included).
	f("too many condition sets", 0, `{"key":"k","filters":{"groups":[`+strings.TrimSuffix(strings.Repeat(`{"properties":[]},`, 101), ",")+`]}}`,
		"filters", "invalid_input", "Feature flags cannot have more than 100 condition sets.")
	someone := `{"key":"email","type":"person","value":"a@x.com"},`
	f("too many filters in a condition set", 0, `{"key":"k","filters":`+conditions(strings.TrimSuffix(strings.Repeat(someone, 101), ","))+`}`,
		"filters", "invalid_input", "A condition set cannot have more than 100 property filters.")
	f("too many filters in the early access condition", 0, `{"key":"k","filters":{"groups":[{"properties":[]}],"super_groups":[{"properties":[`+
		strings.TrimSuffix(strings.Repeat(someone, 101), ",")+`]}]}}`,
		"filters", "invalid_input", "A condition set cannot have more than 100 property filters.")
	f("pattern too long", 0, `{"key":"k","filters":`+conditions(`{"key":"email","type":"person","operator":"not_regex","value":"`+strings.Repeat("é", 1001)+`"}`)+`}`,
		"filters", "invalid_input", "Regex patterns of property email cannot be longer than 1000 characters.")
	// The red team's payload: 3.5 MB, in a flag of 512 KB at most.
	f("filters too large", 0, `{"key":"k","filters":{"groups":[{"properties":[]}],"payloads":{"true":"\"`+strings.Repeat("x", 3_500_000)+`\""}}}`,
		"filters", "invalid_input", "Feature flag filters exceed maximum size of 512.0 KB. Current size: 3.3 MB. Please simplify conditions or reduce payload sizes.")
	f("cohort missing", 0, `{"key":"k","filters":`+conditions(`{"key":"id","type":"cohort","value":99}`)+`}`,
		"filters", "cohort_does_not_exist", "Cohort with id 99 does not exist")
	f("cohort not an id", 0, `{"key":"k","filters":`+conditions(`{"key":"id","type":"cohort","value":"abc"}`)+`}`,
		"filters", "cohort_does_not_exist", "Cohort with id abc does not exist")
	f("cohort on events", 0, `{"key":"k","filters":`+conditions(`{"key":"id","type":"cohort","value":11}`)+`}`,
		"filters", "behavioral_cohort_found", "Cohort 'behavior' with filters on events cannot be used in feature flags.")
	f("cohort using one on events", 0, `{"key":"k","filters":`+conditions(`{"key":"id","type":"cohort","value":"12"}`)+`}`,
		"filters", "behavioral_cohort_found", "Cohort 'behavior' with filters on events cannot be used in feature flags.")
	f("date", 0, `{"key":"k","filters":`+conditions(`{"key":"signup","type":"person","operator":"is_date_before","value":"yesterday"}`)+`}`,
		"filters", "invalid_date", "Invalid date value: yesterday")
	f("date not text", 0, `{"key":"k","filters":`+conditions(`{"key":"signup","type":"person","operator":"is_date_after","value":5}`)+`}`,
		"filters", "invalid_date", "Invalid date value: 5")
	f("gt needs a string", 0, `{"key":"k","filters":`+conditions(`{"key":"age","type":"person","operator":"gt","value":5}`)+`}`,
		"filters", "invalid_value", "Invalid value for operator gt: 5")
	f("regex needs a string", 0, `{"key":"k","filters":`+conditions(`{"key":"email","type":"person","operator":"regex","value":["a","it's"]}`)+`}`,
		"filters", "invalid_value", `Invalid value for operator regex: ['a', "it's"]`)
	f("icontains needs a string", 0, `{"key":"k","filters":`+conditions(`{"key":"email","type":"person","operator":"icontains","value":null}`)+`}`,
		"filters", "invalid_value", "Invalid value for operator icontains: None")
	f("lte, a float", 0, `{"key":"k","filters":`+conditions(`{"key":"age","type":"person","operator":"lte","value":1e2}`)+`}`,
		"filters", "invalid_value", "Invalid value for operator lte: 100.0")
	f("in off cohorts", 0, `{"key":"k","filters":`+conditions(`{"key":"email","type":"person","operator":"in","value":"x"}`)+`}`,
		"filters", "invalid_operator", "The 'in' operator is only valid for cohort properties, not 'person' properties.")

	f("payloads not an object", 0, `{"key":"k","filters":{"groups":[{"properties":[]}],"payloads":["x"]}}`, "filters", "invalid_input",
		"Payloads must be passed as a dictionary")
	f("payloads null", 0, `{"key":"k","filters":{"groups":[{"properties":[]}],"payloads":null}}`, "filters", "invalid_input",
		"Payloads must be passed as a dictionary")
	f("payload not JSON", 0, `{"key":"k","filters":{"groups":[{"properties":[]}],"payloads":{"true":"{not json"}}}`, "filters", "invalid_input",
		"Payload value is not valid JSON")
	f("payload keys, boolean", 0, `{"key":"k","filters":{"groups":[{"properties":[]}],"payloads":{"false":"1"}}}`, "filters", "invalid_input",
		"Payload keys must be 'true' for boolean flags")
	f("payload keys, boolean, two", 0, `{"key":"k","filters":{"groups":[{"properties":[]}],"payloads":{"true":"1","x":"2"}}}`, "filters", "invalid_input",
		"Payload keys must be 'true' for boolean flags")
	f("payload keys, multivariate", 0, `{"key":"k","filters":{"groups":[{"properties":[]}],"multivariate":{"variants":[{"key":"a","rollout_percentage":100}]},"payloads":{"true":"1"}}}`,
		"filters", "invalid_input", "Payload keys must match a variant key for multivariate flags")

	f("runtime", 0, `{"key":"k","evaluation_runtime":"edge"`+valid+`}`, "evaluation_runtime", "invalid_choice", `"edge" is not a valid choice.`)
	f("bucketing", 0, `{"key":"k","bucketing_identifier":"ip"`+valid+`}`, "bucketing_identifier", "invalid_choice", `"ip" is not a valid choice.`)

	f("delete a dependency", 1, `{"deleted":true}`, "", "invalid_input", "Cannot delete this feature flag because other flags depend on it: "+
		"beta (ID: 2), dep-06 (ID: 106), dep-07 (ID: 107), dep-08 (ID: 108), dep-09 (ID: 109), and 2 more. Please update or delete the dependent flags first.")
	f("disable a dependency", 2, `{"active":false}`, "", "invalid_input", "Cannot disable this feature flag because other flags depend on it: "+
		"gamma (ID: 4). Please update or disable the dependent flags first.")
	f("enable on a disabled dependency", 5, `{"active":true}`, "", "invalid_input", "Cannot enable this feature flag because it depends on disabled flags: "+
		"off (ID: 3). Please enable the dependency flags first.")
}

// What passes: the flag as it would be stored.
// A flag may mix person and group conditions: each condition targets what its own
// aggregation_group_type_index says, else what the flag's says.
func TestMixedTargeting(t *testing.T) {
	p := testProject(t)
	for _, body := range []string{
		`{"key":"k","filters":{"groups":[{"properties":[{"key":"email","type":"person","value":"x"}]},` +
			`{"properties":[{"key":"plan","type":"group","group_type_index":1,"value":"pro"}],"aggregation_group_type_index":1}]}}`,
		`{"key":"k","filters":{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"plan","type":"group","group_type_index":0,"value":"pro"}]},` +
			`{"properties":[{"key":"email","type":"person","value":"x"}],"aggregation_group_type_index":null}]}}`,
	} {
		if _, err := change(t, body).apply(nil, p); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
}

func TestFlagChangeApplied(t *testing.T) {
	p := testProject(t)
	ch := change(t, `{"key":" new ","name":" Beta test ","filters":{"groups":[{"properties":[`+on("1")+`,{"key":"id","type":"cohort","value":10,"operator":"in"}],"rollout_percentage":50}],
		"multivariate":{"variants":[{"key":"a","rollout_percentage":33.33},{"key":"b","rollout_percentage":33.33},{"key":"c","rollout_percentage":33.34}]},
		"payloads":{"a":{"colour":"blé","n":[1,2.50,{"x":null}]},"b":"{\"raw\":  true}","c":null},"holdout_groups":[{"x":1}]}}`)
	f, err := ch.apply(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if f.Key != "new" || f.Name != "Beta test" || !f.Active || f.EvaluationRuntime != RuntimeAll || f.BucketingIdentifier != BucketByDistinctID {
		t.Fatalf("flag %+v", f)
	}
	want := `{"groups":[{"properties":[{"key":"1","type":"flag","operator":"flag_evaluates_to","value":true},` +
		`{"key":"id","type":"cohort","operator":"in","value":10}],"rollout_percentage":50,"variant":null}],` +
		`"multivariate":{"variants":[{"key":"a","rollout_percentage":33.33},{"key":"b","rollout_percentage":33.33},{"key":"c","rollout_percentage":33.34}]},` +
		`"payloads":{"a":"{\"colour\": \"bl\\u00e9\", \"n\": [1, 2.5, {\"x\": null}]}","b":"{\"raw\":  true}"},"aggregation_group_type_index":null}`
	if got := mustJSON(f.Filters); got != want {
		t.Fatalf("filters\n%s\nwant\n%s", got, want)
	}

	// A create without filters matches everyone.
	f, err = change(t, `{"key":"plain"}`).apply(nil, p)
	if err != nil || mustJSON(f.Filters) != `{"groups":[{"properties":[],"rollout_percentage":null,"variant":null}],"multivariate":null,"payloads":{},"aggregation_group_type_index":null}` {
		t.Fatalf("default filters %s %v", mustJSON(f.Filters), err)
	}
	// An update whose filters have no groups keeps them; one that empties them may.
	alpha := p.flag(1)
	for body, groups := range map[string]int{`{"filters":{"payloads":{"true":"1"}}}`: 1, `{"filters":{"groups":[]}}`: 0} {
		f, err = change(t, body).apply(alpha, p)
		if err != nil || len(f.Filters.Groups) != groups {
			t.Fatalf("%s: %+v %v", body, f, err)
		}
	}
	// A deleted flag is restored unless its key was taken since.
	deleted := &Flag{ID: 50, Key: "alpha", Deleted: true}
	if _, err := change(t, `{"deleted":false}`).apply(deleted, p); err == nil || err.(*ValidationError).Attr != "key" {
		t.Fatalf("restored over a live key: %v", err)
	}
	deleted.Key = "gone"
	if f, err := change(t, `{"deleted":false}`).apply(deleted, p); err != nil || f.Deleted {
		t.Fatalf("restore: %+v %v", f, err)
	}
	// Deleting or disabling a flag nothing depends on is fine, so is a flag on a
	// dependency chain and on a dynamic cohort.
	for _, body := range []string{`{"deleted":true}`, `{"active":false}`} {
		if _, err := change(t, body).apply(p.flag(4), p); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	if _, err := change(t, `{"key":"delta","filters":`+conditions(on("4"), `{"key":"id","type":"cohort","value":10}`)+`}`).apply(nil, p); err != nil {
		t.Fatal(err)
	}
}

func TestCohortValidation(t *testing.T) {
	p := testProject(t)
	f := func(name string, update int64, body, attr, code, detail string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			var in struct {
				Name     *string
				IsStatic *bool `json:"is_static"`
				Filters  json.RawMessage
			}
			if err := json.Unmarshal([]byte(body), &in); err != nil {
				t.Fatal(err)
			}
			ch := CohortChange{Name: in.Name, IsStatic: in.IsStatic, Filters: in.Filters}
			_, err := ch.apply(p.cohorts[update], p)
			want := &ValidationError{Attr: attr, Code: code, Detail: detail}
			if got, ok := err.(*ValidationError); !ok || *got != *want {
				t.Fatalf("%s\n got %#v\nwant %#v", body, err, want)
			}
		})
	}
	f("no filters", 0, `{"name":"x"}`, "filters", "invalid_input", "Filters must be a dictionary with a 'properties' key.")
	f("filters without properties", 0, `{"filters":{"groups":[]}}`, "filters", "invalid_input", "Filters must be a dictionary with a 'properties' key.")
	f("group type", 0, `{"filters":{"properties":{"type":"XOR","values":[]}}}`, "filters", "invalid_input",
		"Filters are not valid (a property group's type must be AND or OR)")
	f("filter type", 0, `{"filters":{"properties":{"type":"AND","values":[{"key":"$browser","type":"event","value":"x"}]}}}`, "filters", "invalid_input",
		`Filters are not valid (a cohort filters on person properties, other cohorts, or events, not on "event")`)
	f("unknown cohort", 0, `{"filters":{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":99}]}}}`, "", "invalid_input",
		"Invalid Cohort ID in filter")
	f("loop", 15, `{"filters":{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":14}]}}}`, "", "invalid_input",
		"Cohorts cannot reference other cohorts in a loop.")
	f("itself", 15, `{"filters":{"properties":{"type":"AND","values":[{"key":"id","type":"cohort","value":15}]}}}`, "", "invalid_input",
		"Cohorts cannot reference other cohorts in a loop.")
	f("name", 0, `{"name":"`+strings.Repeat("n", 401)+`","is_static":true}`, "name", "max_length", "Ensure this field has no more than 400 characters.")

	f("too many values", 0, `{"filters":{"properties":{"type":"AND","values":[{"type":"AND","values":[{"key":"email","type":"person","value":[`+
		strings.TrimSuffix(strings.Repeat(`"v",`, 1001), ",")+`]}]}]}}}`, "filters", "invalid_input",
		"Property group expressions of type email cannot contain more than 1000 values.")
	f("pattern too long", 0, `{"filters":{"properties":{"type":"AND","values":[{"key":"email","type":"person","operator":"regex","value":"`+
		strings.Repeat("a", 1001)+`"}]}}}`, "filters", "invalid_input", "Regex patterns of property email cannot be longer than 1000 characters.")
	f("property as the outer group", 0, `{"filters":{"properties":{"type":"property","values":[]}}}`, "filters", "invalid_input",
		"Filters are not valid (a property group's type must be AND or OR)")

	// "property" is an inner AND group, as older cohorts store it.
	inner := CohortChange{Filters: json.RawMessage(`{"properties":{"type":"OR","values":[{"type":"property","values":[{"key":"email","type":"person","value":"x"}]}]}}`)}
	if _, err := inner.apply(nil, p); err != nil {
		t.Fatalf("an inner property group: %v", err)
	}
	static := true
	c, err := (&CohortChange{IsStatic: &static}).apply(nil, p)
	if err != nil || mustJSON(c.Filters) != `{"properties":{"type":"AND","values":[]}}` {
		t.Fatalf("static cohort %+v %v", c, err)
	}
}

// TestProjectLimits: a project's flags that are not deleted are at most 2,000, with
// filters of 8 MB and payloads of 2 MB in all; a change that would grow the project past
// one is refused, one that does not (even in a project past them) goes through.
func TestProjectLimits(t *testing.T) {
	payload := func(n int) string { return `"\"` + strings.Repeat("p", n-2) + `\""` } // n bytes of JSON text
	withPayload := func(n int) Filters {
		return Filters{Groups: []Condition{{Properties: []PropertyFilter{}}}, Payloads: map[string]string{"true": `"` + strings.Repeat("p", n-2) + `"`}}
	}
	// A project of payloads of 4 × 524,000 + 1,000 bytes: 2,097,000, just under 2 MB
	// (2,097,152).
	project := func() *projectView {
		p := &projectView{cohorts: map[int64]*Cohort{}}
		for id := int64(1); id <= 5; id++ {
			size := 524_000
			if id == 5 {
				size = 1_000
			}
			p.flags = append(p.flags, &Flag{ID: id, Key: fmt.Sprintf("big-%d", id), Active: true, Filters: withPayload(size)})
		}
		return p
	}
	refused := func(t *testing.T, p *projectView, current *Flag, body, detail string) {
		t.Helper()
		_, err := change(t, body).apply(current, p)
		want := &ValidationError{Attr: "filters", Code: "invalid_input", Detail: detail}
		if got, ok := err.(*ValidationError); !ok || *got != *want {
			t.Fatalf("got %#v\nwant %#v", err, want)
		}
	}
	passes := func(t *testing.T, p *projectView, current *Flag, body string) {
		t.Helper()
		if _, err := change(t, body).apply(current, p); err != nil {
			t.Fatalf("%.200s: %v", body, err)
		}
	}
	payloadsOver := "The payloads of this project's feature flags would exceed the maximum total size of 2.0 MB. Total size: %s. " +
		"Please reduce payload sizes or delete unused flags."

	t.Run("payloads", func(t *testing.T) {
		p := project()
		passes(t, p, nil, `{"key":"small","filters":{"groups":[{"properties":[]}],"payloads":{"true":`+payload(100)+`}}}`)
		refused(t, p, nil, `{"key":"k","filters":{"groups":[{"properties":[]}],"payloads":{"true":`+payload(1_000)+`}}}`,
			fmt.Sprintf(payloadsOver, "2.0 MB"))
		refused(t, p, p.flags[0], `{"filters":{"groups":[{"properties":[]}],"payloads":{"true":`+payload(600_000)+`}}}`,
			"Feature flag filters exceed maximum size of 512.0 KB. Current size: 586.1 KB. Please simplify conditions or reduce payload sizes.")
		refused(t, p, p.flags[4], `{"filters":{"groups":[{"properties":[]}],"payloads":{"true":`+payload(2_000)+`}}}`,
			fmt.Sprintf(payloadsOver, "2.0 MB"))
		// Shrinking a payload, or anything else that does not grow them, goes through.
		passes(t, p, p.flags[0], `{"filters":{"groups":[{"properties":[]}],"payloads":{"true":`+payload(400_000)+`}}}`)
		passes(t, p, p.flags[0], `{"active":false}`)
	})

	t.Run("past the limits already", func(t *testing.T) {
		// Flags stored before the limits: they can be disabled, deleted and shrunk, not grown.
		p := project()
		p.flags = append(p.flags, &Flag{ID: 5, Key: "legacy", Active: true, Filters: withPayload(3_500_000)})
		passes(t, p, p.flags[4], `{"active":false}`)
		passes(t, p, p.flags[4], `{"deleted":true}`)
		passes(t, p, p.flags[0], `{"name":"renamed"}`)
		passes(t, p, p.flags[4], `{"filters":{"groups":[{"properties":[]}],"payloads":{}}}`)
		refused(t, p, nil, `{"key":"k","filters":{"groups":[{"properties":[]}],"payloads":{"true":"1"}}}`, fmt.Sprintf(payloadsOver, "5.3 MB"))
	})

	t.Run("restoring a flag", func(t *testing.T) {
		p := project()
		deleted := &Flag{ID: 9, Key: "deleted", Deleted: true, Active: true, Filters: withPayload(200_000)}
		refused(t, p, deleted, `{"deleted":false}`, fmt.Sprintf(payloadsOver, "2.2 MB"))
		p.flags = p.flags[1:]
		passes(t, p, deleted, `{"deleted":false}`)
	})

	t.Run("filters", func(t *testing.T) {
		// 17 flags of some 498,000 bytes of conditions: 8,466,000, past 8 MB (8,388,608).
		p := &projectView{cohorts: map[int64]*Cohort{}}
		values := `["` + strings.Repeat("v", 495) + `"` + strings.Repeat(`,"`+strings.Repeat("v", 495)+`"`, 999) + `]`
		big := `{"groups":[{"properties":[{"key":"email","type":"person","value":` + values + `}]}]}`
		for id := int64(1); id <= 16; id++ {
			ch := change(t, `{"key":"big-`+fmt.Sprint(id)+`","filters":`+big+`}`)
			f, err := ch.apply(nil, p)
			if err != nil {
				t.Fatalf("flag %d: %v", id, err)
			}
			f.ID = id
			p.flags = append(p.flags, f)
		}
		refused(t, p, nil, `{"key":"k","filters":`+big+`}`, "The feature flags of this project would exceed the maximum total size of 8.0 MB. "+
			"Total size: 8.1 MB. Please simplify conditions, reduce payload sizes or delete unused flags.")
		passes(t, p, nil, `{"key":"k"}`)
	})

	t.Run("flags", func(t *testing.T) {
		p := &projectView{cohorts: map[int64]*Cohort{}}
		for id := int64(1); id <= 2000; id++ {
			p.flags = append(p.flags, &Flag{ID: id, Key: fmt.Sprintf("f-%d", id), Active: true, Filters: defaultFilters()})
		}
		_, err := change(t, `{"key":"one-more"}`).apply(nil, p)
		want := &ValidationError{Code: "invalid_input", Detail: "Maximum of 2,000 feature flags allowed per team. Please delete unused flags."}
		if got, ok := err.(*ValidationError); !ok || *got != *want {
			t.Fatalf("got %#v\nwant %#v", err, want)
		}
		passes(t, p, p.flags[0], `{"filters":{"groups":[{"properties":[],"rollout_percentage":50}]}}`)
	})
}

func TestPythonRenderings(t *testing.T) {
	f := func(raw, str, dumps string) {
		t.Helper()
		v, err := decodeValue([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := pyStr(v); got != str {
			t.Errorf("str(%s) = %s, want %s", raw, got, str)
		}
		if got, err := pythonJSON([]byte(raw)); err != nil || got != dumps {
			t.Errorf("json.dumps(%s) = %s (%v), want %s", raw, got, err, dumps)
		}
	}
	f(`"a"`, `a`, `"a"`)
	f(`5`, `5`, `5`)
	f(`-0`, `0`, `0`)
	f(`1.0`, `1.0`, `1.0`)
	f(`2.50`, `2.5`, `2.5`)
	f(`1e16`, `1e+16`, `1e+16`)
	f(`1e-5`, `1e-05`, `1e-05`)
	f(`0.0001`, `0.0001`, `0.0001`)
	f(`123456789012345678`, `123456789012345678`, `123456789012345678`)
	f(`true`, `True`, `true`)
	f(`null`, `None`, `null`)
	f(`["a", "it's", 1]`, `['a', "it's", 1]`, `["a", "it's", 1]`)
	f(`{"b": 1, "a": [true]}`, `{'a': [True], 'b': 1}`, `{"b": 1, "a": [true]}`)
	f(`"é😀\n<"`, "é😀\n<", `"\u00e9\ud83d\ude00\n<"`)
	f(`{}`, `{}`, `{}`)
}
