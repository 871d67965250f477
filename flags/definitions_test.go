package flags

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The local evaluation body of a small project, to the byte: inactive flags in, the
// encrypted and survey flags out with the flag depending on one of them, flag
// filters by key with their dependency chains, the dynamic cohorts used (nested ones
// too, static ones never).
func TestLocalEvaluationBody(t *testing.T) {
	flag := func(id int64, key string, active bool, filters string) *Flag {
		var f Filters
		if err := json.Unmarshal([]byte(filters), &f); err != nil {
			t.Fatal(err)
		}
		return &Flag{ID: id, TeamID: 7, Key: key, Active: active, Version: 2, EvaluationRuntime: RuntimeAll,
			BucketingIdentifier: BucketByDistinctID, Filters: f}
	}
	dependsOn := func(id int64) string {
		return fmt.Sprintf(`{"groups":[{"properties":[{"key":"%d","type":"flag","operator":"flag_evaluates_to","value":true}],"rollout_percentage":null}],"payloads":{}}`, id)
	}
	base := flag(1, "a-base", true, `{"groups":[{"properties":[{"key":"id","type":"cohort","value":20}],"rollout_percentage":50}],"payloads":{"true":"{\"x\": 1}"}}`)
	base.Name, base.EvaluationTags = "Base <flag>", []string{"web"}
	secret := flag(3, "c-secret", true, `{"groups":[]}`)
	secret.HasEncryptedPayloads = true
	d := &Definitions{Team: 7, Flags: []*Flag{
		base,
		flag(2, "b-dep", false, dependsOn(1)),
		secret,
		flag(4, "d-on-secret", true, dependsOn(3)),
		flag(5, "e-missing", true, `{"groups":[{"properties":[{"key":"99","type":"flag","operator":"flag_evaluates_to","value":"v"},{"key":"id","type":"cohort","value":22}]}]}`),
		flag(7, "f-self", true, dependsOn(7)),
		flag(8, "g-chain", true, dependsOn(2)),
		flag(6, "survey-targeting-x", true, `{"groups":[]}`),
	}, Cohorts: map[int64]*Cohort{}}
	for _, c := range []struct {
		id      int64
		static  bool
		filters string
	}{
		{20, false, `{"properties":{"type":"OR","values":[{"type":"AND","values":[{"key":"id","type":"cohort","value":21}]}]}}`},
		{21, false, `{"properties":{"type":"AND","values":[{"key":"email","type":"person","operator":"icontains","value":"@x.com"}]}}`},
		{22, true, `{"properties":{"type":"AND","values":[]}}`},
	} {
		cohort := &Cohort{ID: c.id, IsStatic: c.static}
		if err := json.Unmarshal([]byte(c.filters), &cohort.Filters); err != nil {
			t.Fatal(err)
		}
		d.Cohorts[c.id] = cohort
	}

	got := string(localEvaluationBody(d, map[string]string{"0": "company", "1": "project"}))
	flagJSON := func(id int64, name, key string, active bool, contexts, filters string) string {
		return fmt.Sprintf(`{"id":%d,"team_id":7,"name":%q,"key":%q,"active":%t,"deleted":false,"ensure_experience_continuity":false,`+
			`"has_encrypted_payloads":false,"version":2,"evaluation_runtime":"all","bucketing_identifier":"distinct_id",`+
			`"evaluation_contexts":%s,"has_experiment":false,"filters":%s}`, id, name, key, active, contexts, filters)
	}
	dependent := func(key, chain string) string {
		return `{"groups":[{"properties":[{"key":"` + key + `","type":"flag","operator":"flag_evaluates_to","value":true,"dependency_chain":` + chain +
			`}],"rollout_percentage":null,"variant":null}],"multivariate":null,"payloads":{},"aggregation_group_type_index":null}`
	}
	want := `{"flags":[` + strings.Join([]string{
		flagJSON(1, "Base <flag>", "a-base", true, `["web"]`, `{"groups":[{"properties":[{"key":"id","type":"cohort","value":20}],"rollout_percentage":50,"variant":null}],`+
			`"multivariate":null,"payloads":{"true":"{\"x\": 1}"},"aggregation_group_type_index":null}`),
		flagJSON(2, "", "b-dep", false, `[]`, dependent("a-base", `["a-base"]`)),
		flagJSON(5, "", "e-missing", true, `[]`, `{"groups":[{"properties":[{"key":"99","type":"flag","operator":"flag_evaluates_to","value":"v","dependency_chain":[]},`+
			`{"key":"id","type":"cohort","value":22}],"rollout_percentage":null,"variant":null}],"multivariate":null,"payloads":null,"aggregation_group_type_index":null}`),
		flagJSON(7, "", "f-self", true, `[]`, dependent("f-self", `[]`)),
		flagJSON(8, "", "g-chain", true, `[]`, dependent("b-dep", `["a-base","b-dep"]`)),
	}, ",") + `],"group_type_mapping":{"0":"company","1":"project"},` +
		`"cohorts":{"20":{"type":"OR","values":[{"type":"AND","values":[{"key":"id","type":"cohort","value":21}]}]},` +
		`"21":{"type":"AND","values":[{"key":"email","type":"person","operator":"icontains","value":"@x.com"}]}},` +
		`"minimal_flag_called_events":false,"property_matching_version":1}`
	if got != want {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
	// The definitions themselves are not changed: evaluation reads flag ids.
	if key := d.Flags[1].Filters.Groups[0].Properties[0]; key.Key != "1" || key.DependencyChain != nil {
		t.Fatalf("definitions changed: %+v", key)
	}
}

// Chains are walked depth first, in the order the filters name the flags, and a cycle
// anywhere on the way empties the chain.
func TestDependencyChains(t *testing.T) {
	flags := map[string]*localFlag{}
	add := func(key string, deps ...string) {
		f := &localFlag{Key: key}
		c := Condition{}
		for _, dep := range deps {
			c.Properties = append(c.Properties, PropertyFilter{Key: dep, Type: FilterFlag})
		}
		f.Filters.Groups = []Condition{c}
		flags[key] = f
	}
	add("a")
	add("b", "a")
	add("c", "b", "d")
	add("d", "a")
	add("x", "y")
	add("y", "x")
	add("z", "x")
	chains := dependencyChains{flags: flags, memo: map[string][]string{}}
	for key, want := range map[string]string{"a": "a", "b": "a b", "c": "a b d c", "x": "", "z": "", "missing": ""} {
		if got := strings.Join(chains.of(key), " "); got != want {
			t.Errorf("chain of %s: %q, want %q", key, got, want)
		}
	}
}
