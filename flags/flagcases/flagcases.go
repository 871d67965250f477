// Package flagcases reads the evaluation's contract tables, testdata/evaluation_cases.json
// and testdata/operator_cases.json: the evaluator's tests (package flags) run them
// against Evaluate, the edge's tests against /flags/. It imports no hedge package, so
// that each runner turns the cases into its own setup.
//
// Each table is {"cases": [...]}. Every case has a "name"; "now" (RFC 3339) fixes the
// instant of relative dates and "timezone" (IANA) the project's time zone, absent: the
// current time and UTC (see Clock).
//
// A case of evaluation_cases.json (Evaluation) is a project and one request:
//
//   - flags: the project's flags as PostHog's definitions JSON ({"id", "key", "active"
//     (default true), "deleted", "version", "ensure_experience_continuity",
//     "evaluation_runtime", "bucketing_identifier", "evaluation_tags", "filters"}).
//   - cohorts: [{"id", "is_static", "deleted", "filters": {"properties": …}}].
//   - group_types: the project's group types, {"<index>": "<type>"}.
//   - request: what /flags/ is sent, under the body's names: distinct_id,
//     anon_distinct_id ($anon_distinct_id), device_id, groups, person_properties,
//     group_properties, flag_keys (absent and [] differ), evaluation_runtime,
//     evaluation_contexts; and only_evaluate_survey_feature_flags (the query
//     parameter). Besides, the state a runner must set up: stored_person_properties
//     (the person's), stored_group_properties (by group type, the caller's group's),
//     hash_key_overrides (the identifiers experience continuity keeps, by flag key),
//     hash_key_override_error (reading them fails).
//   - want: exactly the flags answered, by key: enabled, variant (null for none),
//     reason (reason.code), condition_index (null for none), and when given
//     description (else the standard one for the reason), payload (absent: null),
//     failed (absent: false).
//   - errors_while_computing: errorsWhileComputingFlags.
//
// A case of operator_cases.json (Operator) is one flag, key "operator-case", whose only
// condition (rollout 100) has one filter {"key": "prop", "type": "person", "operator":
// operator, "value": value}; it is evaluated for distinct_id "user" whose request
// person_properties are {"prop": property}, or nothing when the case has no "property"
// key. The flag is enabled (condition_match, condition 0) exactly when want is true,
// else disabled (no_condition_match, condition 0).
//
// To read them: Evaluations and Operators read and check a table (a bad "now" or
// "timezone" fails the test); the tables are embedded, so any package's tests read them
// without a path. Decode reads a case's JSON values as the edge decodes a request, and
// Answer.String writes an answer for comparison. A runner that cannot set up part of a
// case (say, a fixed "now" through an API that evaluates at the time it answers) skips
// what it cannot make and says why.
package flagcases

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"
)

var (
	//go:embed testdata/evaluation_cases.json
	evaluationCases []byte
	//go:embed testdata/operator_cases.json
	operatorCases []byte
)

// Evaluation is a case of evaluation_cases.json.
type Evaluation struct {
	Name       string            `json:"name"`
	Flags      []Flag            `json:"flags"`
	Cohorts    []Cohort          `json:"cohorts"`
	GroupTypes map[string]string `json:"group_types"`
	Clock
	Request Request           `json:"request"`
	Want    map[string]Answer `json:"want"`
	Errors  bool              `json:"errors_while_computing"`
}

// Flag is a flag of an Evaluation.
type Flag struct {
	ID                         int64           `json:"id"`
	Key                        string          `json:"key"`
	Active                     *bool           `json:"active"` // nil: true
	Deleted                    bool            `json:"deleted"`
	Version                    int             `json:"version"`
	EnsureExperienceContinuity bool            `json:"ensure_experience_continuity"`
	EvaluationRuntime          string          `json:"evaluation_runtime"`
	BucketingIdentifier        string          `json:"bucketing_identifier"`
	EvaluationTags             []string        `json:"evaluation_tags"`
	Filters                    json.RawMessage `json:"filters"`
}

// Cohort is a cohort of an Evaluation.
type Cohort struct {
	ID       int64           `json:"id"`
	IsStatic bool            `json:"is_static"`
	Deleted  bool            `json:"deleted"`
	Filters  json.RawMessage `json:"filters"`
}

// Request is the request of an Evaluation, and the state it finds.
type Request struct {
	DistinctID         string                     `json:"distinct_id"`
	AnonDistinctID     string                     `json:"anon_distinct_id"`
	DeviceID           string                     `json:"device_id"`
	Groups             map[string]string          `json:"groups"`
	PersonProperties   json.RawMessage            `json:"person_properties"`
	GroupProperties    map[string]json.RawMessage `json:"group_properties"`
	FlagKeys           []string                   `json:"flag_keys"` // nil when absent, empty for []
	EvaluationRuntime  string                     `json:"evaluation_runtime"`
	EvaluationContexts []string                   `json:"evaluation_contexts"`
	OnlySurveyFlags    bool                       `json:"only_evaluate_survey_feature_flags"`

	StoredPersonProperties json.RawMessage            `json:"stored_person_properties"`
	StoredGroupProperties  map[string]json.RawMessage `json:"stored_group_properties"`
	HashKeyOverrides       map[string]string          `json:"hash_key_overrides"`
	HashKeyOverrideError   bool                       `json:"hash_key_override_error"`
}

// Answer is a flag's answer: wanted, in an Evaluation, or got, for comparison.
type Answer struct {
	Enabled        bool    `json:"enabled"`
	Variant        *string `json:"variant"`
	Reason         string  `json:"reason"`
	ConditionIndex *int    `json:"condition_index"`
	Description    *string `json:"description"` // nil: the reason's standard one
	Payload        *string `json:"payload"`
	Failed         bool    `json:"failed"`
}

// String writes the answer in full, its description given or standard, so that two
// answers are the same when their texts are.
func (a Answer) String() string {
	var description string
	if a.Description != nil {
		description = *a.Description
	} else {
		description = standardDescription(a.Reason, a.ConditionIndex)
	}
	return fmt.Sprintf("enabled %v variant %s reason %s index %s description %q payload %s failed %v",
		a.Enabled, orNull(a.Variant, strconv.Quote), a.Reason, orNull(a.ConditionIndex, strconv.Itoa), description,
		orNull(a.Payload, strconv.Quote), a.Failed)
}

func orNull[T any](p *T, text func(T) string) string {
	if p == nil {
		return "null"
	}
	return text(*p)
}

// standardDescription is the description PostHog gives a reason code.
func standardDescription(code string, index *int) string {
	switch code {
	case "condition_match":
		return "Matched condition set " + strconv.Itoa(*index+1)
	case "no_condition_match":
		return "No matching condition set"
	case "out_of_rollout_bound":
		return "Out of rollout bound"
	case "no_group_type":
		return "No group type"
	case "super_condition_value":
		return "Super condition value"
	case "holdout_condition_value":
		return "Holdout condition value"
	case "missing_dependency":
		return "Flag cannot be evaluated due to missing dependency"
	case "dependency_not_found_cohort":
		return "Cohort dependency not found"
	case "dependency_cycle_cohort":
		return "Cohort dependency cycle detected"
	case "cohort_filters_parsing_error":
		return "Failed to parse cohort filters"
	case "hash_key_override_error":
		return "Failed to fetch hash key override for experience continuity"
	}
	return "?"
}

// Operator is a case of operator_cases.json.
type Operator struct {
	Name     string          `json:"name"`
	Operator string          `json:"operator"`
	Value    json.RawMessage `json:"value"`
	Property json.RawMessage `json:"property"` // nil: not sent
	Clock
	Want bool `json:"want"`
}

// Clock is when and where a case is evaluated.
type Clock struct {
	Now      string `json:"now"`
	Timezone string `json:"timezone"`

	instant  time.Time
	location *time.Location
}

// Instant is Now, the zero time when the case has none.
func (c *Clock) Instant() time.Time { return c.instant }

// Location is Timezone, nil when the case has none.
func (c *Clock) Location() *time.Location { return c.location }

func (c *Clock) read() error {
	var err error
	if c.Now != "" {
		if c.instant, err = time.Parse(time.RFC3339, c.Now); err != nil {
			return fmt.Errorf("bad now: %w", err)
		}
	}
	if c.Timezone != "" {
		if c.location, err = time.LoadLocation(c.Timezone); err != nil {
			return fmt.Errorf("bad timezone: %w", err)
		}
	}
	return nil
}

// Evaluations are the cases of evaluation_cases.json.
func Evaluations(t testing.TB) []Evaluation {
	t.Helper()
	return read(t, "evaluation_cases.json", evaluationCases, func(c *Evaluation) (string, *Clock) { return c.Name, &c.Clock })
}

// Operators are the cases of operator_cases.json.
func Operators(t testing.TB) []Operator {
	t.Helper()
	return read(t, "operator_cases.json", operatorCases, func(c *Operator) (string, *Clock) { return c.Name, &c.Clock })
}

// read decodes the table file, whose text is data, and reads the clock of each case.
func read[C any](t testing.TB, file string, data []byte, clock func(*C) (string, *Clock)) []C {
	t.Helper()
	var table struct{ Cases []C }
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatalf("cannot decode %s: %v", file, err)
	}
	if len(table.Cases) == 0 {
		t.Fatalf("no cases in %s", file)
	}
	for i := range table.Cases {
		name, c := clock(&table.Cases[i])
		if err := c.read(); err != nil {
			t.Fatalf("%s, case %q: %v", file, name, err)
		}
	}
	return table.Cases
}

// Decode decodes a JSON value of a case as the edge decodes a request: numbers as
// json.Number, so that their text is kept. Nothing (an absent value) is nil.
func Decode(t testing.TB, raw []byte) any {
	t.Helper()
	if raw == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("cannot decode %s: %v", raw, err)
	}
	return v
}
