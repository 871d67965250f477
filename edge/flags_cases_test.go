package edge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hedge-analytics/hedge/edge"
	"github.com/hedge-analytics/hedge/flags"
	"github.com/hedge-analytics/hedge/flags/flagcases"
)

// The evaluation's contract tables (package flagcases), run against /flags/: each
// case's flags and cohorts are made through the flag store, its stored persons and
// groups by ingesting events, and its request is sent to the capture listener.
//
// What the API cannot make is left out, each time with its reason in the test log:
// a case whose setup cannot be made is skipped; a flag that the API refuses, or that
// depends on one that was left out, is left out of the case (and out of its answer).

// setUpError is why a case cannot be set up through the API.
func setUpError(c *flagcases.Evaluation) string {
	r := &c.Request
	switch {
	case c.Now != "":
		return "the instant of relative dates cannot be set: /flags/ evaluates at the time it answers"
	case r.HashKeyOverrideError:
		return "a failing read of the stored identifiers cannot be made through the API (TestFlagsDegrade makes one)"
	case len(r.HashKeyOverrides) > 0:
		return "identifiers per flag cannot be stored through the API: a request stores its one anonymous id, " +
			"for the flags with experience continuity alone (TestFlagsExperienceContinuity stores them)"
	}
	for i := range len(c.GroupTypes) {
		if c.GroupTypes[strconv.Itoa(i)] == "" {
			return "the group types' indexes are not 0, 1, …: a project numbers its types in the order it first sees them"
		}
	}
	return ""
}

func TestEvaluationCasesThroughFlags(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	for _, c := range flagcases.Evaluations(t) {
		t.Run(c.Name, func(t *testing.T) {
			if reason := setUpError(&c); reason != "" {
				t.Skip(reason)
			}
			p := env.newProject(t, c.Timezone)
			env.ingest(t, p.token, peopleEvents(t, &c)...)
			s := newCaseSetup(t, env, p.id)
			s.make(c.Cohorts, c.Flags)
			for _, key := range slices.Sorted(maps.Keys(s.leftOut)) {
				t.Logf("flag %s left out: %s", key, s.leftOut[key])
			}

			path := "/flags/?v=2"
			if c.Request.OnlySurveyFlags {
				path += "&only_evaluate_survey_feature_flags=true"
			}
			got := env.flagsFor(t, path, requestBody(&c.Request, p.token), nil)

			want := map[string]flagcases.Answer{}
			for key, w := range c.Want {
				if s.leftOut[key] == "" {
					want[key] = w
				}
			}
			if gotKeys, wantKeys := slices.Sorted(maps.Keys(got.Flags)), slices.Sorted(maps.Keys(want)); !slices.Equal(gotKeys, wantKeys) {
				t.Fatalf("answered %v, want %v", gotKeys, wantKeys)
			}
			failed := false
			for _, key := range slices.Sorted(maps.Keys(want)) {
				s.check(key, got.Flags[key], want[key])
				failed = failed || want[key].Failed
			}
			// errorsWhileComputingFlags is the case's, unless the flags left out were what
			// made it true.
			switch {
			case len(s.leftOut) == 0 || failed || !c.Errors:
				if got.Errors != c.Errors {
					t.Errorf("errorsWhileComputingFlags %v, want %v", got.Errors, c.Errors)
				}
			default:
				t.Logf("errorsWhileComputingFlags %v not checked: the flags that made it true were left out", got.Errors)
			}
		})
	}
}

// peopleEvents are the events that make the case's project: its group types, in index
// order, then its stored group and person properties.
func peopleEvents(t *testing.T, c *flagcases.Evaluation) []string {
	t.Helper()
	var events []string
	for i := range len(c.GroupTypes) {
		events = append(events, fmt.Sprintf(`{"event":"$groupidentify","distinct_id":"setup","properties":{"$group_type":%q,"$group_key":"setup","$group_set":{}}}`,
			c.GroupTypes[strconv.Itoa(i)]))
	}
	r := &c.Request
	for _, typ := range slices.Sorted(maps.Keys(r.StoredGroupProperties)) {
		key, ok := r.Groups[typ]
		if !ok {
			t.Fatalf("stored properties of a group of type %s that the request does not name", typ)
		}
		events = append(events, fmt.Sprintf(`{"event":"$groupidentify","distinct_id":"setup","properties":{"$group_type":%q,"$group_key":%q,"$group_set":%s}}`,
			typ, key, r.StoredGroupProperties[typ]))
	}
	if r.StoredPersonProperties != nil {
		events = append(events, fmt.Sprintf(`{"event":"$set","distinct_id":%q,"properties":{"$set":%s}}`, r.DistinctID, r.StoredPersonProperties))
	}
	return events
}

// requestBody is the /flags/ request body of the case's request.
func requestBody(r *flagcases.Request, token string) map[string]any {
	b := map[string]any{"token": token, "distinct_id": r.DistinctID}
	if r.AnonDistinctID != "" {
		b["$anon_distinct_id"] = r.AnonDistinctID
	}
	if r.DeviceID != "" {
		b["device_id"] = r.DeviceID
	}
	if r.Groups != nil {
		b["groups"] = r.Groups
	}
	if r.PersonProperties != nil {
		b["person_properties"] = r.PersonProperties
	}
	if r.GroupProperties != nil {
		b["group_properties"] = r.GroupProperties
	}
	if r.FlagKeys != nil {
		b["flag_keys"] = r.FlagKeys
	}
	if r.EvaluationRuntime != "" {
		b["evaluation_runtime"] = r.EvaluationRuntime
	}
	if r.EvaluationContexts != nil {
		b["evaluation_contexts"] = r.EvaluationContexts
	}
	return b
}

// caseSetup makes a case's cohorts and flags in a project. Their ids are the store's:
// the references between them (a cohort filter's value, a flag filter's key) are
// rewritten to them. A reference to a cohort or a flag that the case does not have is
// made to point at one made for it and deleted once its users are made, which is how
// a reference comes to name nothing through the API.
type caseSetup struct {
	t       *testing.T
	env     *captureEnv
	team    int64
	ctx     context.Context
	cohorts map[int64]int64 // case id → stored id
	flags   map[int64]int64
	// cohortLeftOut and leftOut say why a cohort (by case id) or a flag (by key) was
	// not made.
	cohortLeftOut map[int64]string
	leftOut       map[string]string
	// toDelete are the stored ids of the cohorts to delete once the flags are made.
	toDelete []int64
	// placeholders are the flags made for references to flags the case does not have.
	placeholders map[int64]int64
}

func newCaseSetup(t *testing.T, env *captureEnv, team int64) *caseSetup {
	return &caseSetup{t: t, env: env, team: team, ctx: context.Background(), cohorts: map[int64]int64{}, flags: map[int64]int64{},
		cohortLeftOut: map[int64]string{}, leftOut: map[string]string{}, placeholders: map[int64]int64{}}
}

// refs calls f with each reference of the JSON value v to a cohort (a filter of type
// cohort: its value) or a flag (a filter of type flag: its key), for f to rewrite.
func refs(v any, f func(kind string, id int64, set func(int64))) {
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			refs(x, f)
		}
	case map[string]any:
		switch v["type"] {
		case "cohort":
			switch value := v["value"].(type) {
			case json.Number:
				if id, err := value.Int64(); err == nil {
					f("cohort", id, func(n int64) { v["value"] = json.Number(strconv.FormatInt(n, 10)) })
				}
			case string:
				if id, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err == nil {
					f("cohort", id, func(n int64) { v["value"] = strconv.FormatInt(n, 10) })
				}
			}
		case "flag":
			if key, ok := v["key"].(string); ok {
				if id, err := strconv.ParseInt(key, 10, 64); err == nil {
					f("flag", id, func(n int64) { v["key"] = strconv.FormatInt(n, 10) })
				}
			}
		}
		for _, x := range v {
			refs(x, f)
		}
	}
}

// make makes the cohorts, then the flags, each after those it references; then
// deletes what must end deleted.
func (s *caseSetup) make(cohorts []flagcases.Cohort, caseFlags []flagcases.Flag) {
	t := s.t
	t.Helper()
	haveCohort := map[int64]bool{}
	for _, c := range cohorts {
		haveCohort[c.ID] = true
	}
	haveFlag := map[int64]bool{}
	for _, f := range caseFlags {
		haveFlag[f.ID] = true
	}
	// resolve rewrites v's references to what was made, making placeholders for those
	// the case does not have; ready is false while a reference waits for its cohort or
	// flag to be made; why says why v cannot be made, when a reference is left out.
	resolve := func(v any) (ready bool, why string) {
		ready = true
		refs(v, func(kind string, id int64, set func(int64)) {
			switch {
			case kind == "cohort" && s.cohorts[id] != 0:
				set(s.cohorts[id])
			case kind == "cohort" && s.cohortLeftOut[id] != "":
				why = fmt.Sprintf("it uses cohort %d, which %s", id, s.cohortLeftOut[id])
			case kind == "cohort" && !haveCohort[id]:
				s.cohorts[id] = s.placeholderCohort(id)
				set(s.cohorts[id])
			case kind == "cohort":
				ready = false
			case kind == "flag" && s.flags[id] != 0:
				set(s.flags[id])
			case kind == "flag" && !haveFlag[id]:
				s.flags[id] = s.placeholderFlag(id)
				set(s.flags[id])
			case kind == "flag":
				ready = false
				for _, f := range caseFlags {
					if f.ID == id && s.leftOut[f.Key] != "" {
						ready, why = true, fmt.Sprintf("it depends on flag %s, which was left out", f.Key)
					}
				}
			}
		})
		return ready, why
	}

	// attempt makes an item whose filters are raw: made is given the filters rewritten,
	// leftOut why the item cannot be made; true when it waits for another.
	attempt := func(raw json.RawMessage, made func(filters any), leftOut func(why string)) (waits bool) {
		filters := flagcases.Decode(t, raw)
		ready, why := resolve(filters)
		switch {
		case why != "":
			leftOut(why)
		case !ready:
			return true
		default:
			made(filters)
		}
		return false
	}
	for _, c := range inRounds(cohorts, func(c flagcases.Cohort) bool {
		return attempt(c.Filters, func(filters any) { s.makeCohort(c, filters) },
			func(why string) { s.cohortLeftOut[c.ID] = "was left out: " + why })
	}) {
		s.cohortLeftOut[c.ID] = "cannot be made: the API refuses cohorts that use each other in a loop"
	}
	for _, f := range inRounds(caseFlags, func(f flagcases.Flag) bool {
		return attempt(f.Filters, func(filters any) { s.makeFlag(f, filters) }, func(why string) { s.leftOut[f.Key] = why })
	}) {
		s.leftOut[f.Key] = "the API refuses flags that depend on each other in a cycle"
	}

	for _, id := range s.toDelete {
		if _, _, err := s.env.flags.UpdateCohort(s.ctx, s.team, id, flags.CohortChange{Deleted: ptr(true)}); err != nil {
			t.Fatal(err)
		}
	}
	// A flag that active flags depend on cannot be deleted, nor disabled: those that
	// depend on it, directly or not, are disabled (the last first) while it is deleted,
	// then enabled again (the first first).
	for _, placeholder := range s.placeholders {
		var dependents []int64 // in the order they depend on it
		for reached := []int64{placeholder}; len(reached) > 0; {
			var next []int64
			for _, id := range s.flags {
				f, _, err := s.env.flags.Flag(s.ctx, s.team, id)
				if err != nil {
					t.Fatal(err)
				}
				if !f.Active || f.Deleted || slices.Contains(dependents, f.ID) {
					continue
				}
				depends := false
				refs(flagcases.Decode(t, mustMarshal(t, f.Filters)), func(kind string, id int64, _ func(int64)) {
					depends = depends || kind == "flag" && slices.Contains(reached, id)
				})
				if depends {
					next = append(next, f.ID)
				}
			}
			dependents = append(dependents, next...)
			reached = next
		}
		for _, id := range slices.Backward(dependents) {
			s.env.updateFlag(t, s.team, id, flags.FlagChange{Active: ptr(false)})
		}
		s.env.updateFlag(t, s.team, placeholder, flags.FlagChange{Deleted: ptr(true)})
		for _, id := range dependents {
			s.env.updateFlag(t, s.team, id, flags.FlagChange{Active: ptr(true)})
		}
	}
}

// inRounds calls step with each item, then again with those that waited, round after
// round, until none waits or a round makes no progress; it returns those still waiting.
func inRounds[T any](items []T, step func(T) (waits bool)) []T {
	for pending := items; len(pending) > 0; {
		var next []T
		for _, x := range pending {
			if step(x) {
				next = append(next, x)
			}
		}
		if len(next) == len(pending) {
			return next
		}
		pending = next
	}
	return nil
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	text, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// placeholderCohort makes a cohort for a reference to one the case does not have, and
// deletes it later.
func (s *caseSetup) placeholderCohort(caseID int64) int64 {
	c, err := s.env.flags.CreateCohort(s.ctx, s.team, 0, flags.CohortChange{Name: ptr(fmt.Sprintf("missing %d", caseID)), IsStatic: ptr(true)})
	if err != nil {
		s.t.Fatal(err)
	}
	s.toDelete = append(s.toDelete, c.ID)
	return c.ID
}

func (s *caseSetup) placeholderFlag(caseID int64) int64 {
	f := s.env.createFlag(s.t, s.team, fmt.Sprintf("missing-%d", caseID), everyone)
	s.placeholders[caseID] = f.ID
	return f.ID
}

func (s *caseSetup) makeCohort(c flagcases.Cohort, filters any) {
	ch := flags.CohortChange{Name: ptr(fmt.Sprintf("cohort %d", c.ID))}
	if c.IsStatic {
		// A static cohort is a list of persons: its filters are not sent.
		ch.IsStatic = ptr(true)
	} else {
		ch.Filters = mustMarshal(s.t, filters)
	}
	made, err := s.env.flags.CreateCohort(s.ctx, s.team, 0, ch)
	if err != nil {
		s.cohortLeftOut[c.ID] = "the API refuses: " + err.Error()
		return
	}
	s.cohorts[c.ID] = made.ID
	if c.Deleted {
		s.toDelete = append(s.toDelete, made.ID)
	}
}

func (s *caseSetup) makeFlag(f flagcases.Flag, filters any) {
	ch := flags.FlagChange{Key: &f.Key, Filters: mustMarshal(s.t, filters), Active: f.Active, Deleted: &f.Deleted,
		EnsureExperienceContinuity: &f.EnsureExperienceContinuity, EvaluationTags: f.EvaluationTags}
	if f.EvaluationRuntime != "" {
		ch.EvaluationRuntime = &f.EvaluationRuntime
	}
	if f.BucketingIdentifier != "" {
		ch.BucketingIdentifier = &f.BucketingIdentifier
	}
	made, err := s.env.flags.CreateFlag(s.ctx, s.team, 0, ch)
	if err != nil {
		s.leftOut[f.Key] = "the API refuses it: " + err.Error()
		return
	}
	s.flags[f.ID] = made.ID
}

// check compares a flag's answer with the case's; its metadata are those of the flag
// as stored.
func (s *caseSetup) check(key string, got flagDetails, w flagcases.Answer) {
	t := s.t
	t.Helper()
	answer := flagcases.Answer{Enabled: got.Enabled, Variant: got.Variant, Reason: got.Reason.Code, ConditionIndex: got.Reason.ConditionIndex,
		Description: &got.Reason.Description, Payload: got.Metadata.Payload, Failed: got.Failed}
	if answer.String() != w.String() {
		t.Errorf("%s: %s\nwant %s", key, answer, w)
	}
	var stored *flags.Flag
	for _, id := range s.flags {
		if f, ok, _ := s.env.flags.Flag(s.ctx, s.team, id); ok && f.Key == key && !f.Deleted {
			stored = f
		}
	}
	if stored == nil || got.Key != key || got.Metadata.ID != stored.ID || got.Metadata.Version != stored.Version {
		t.Errorf("%s: key %q, metadata id %d version %d; stored %+v", key, got.Key, got.Metadata.ID, got.Metadata.Version, stored)
	}
}

// TestOperatorCasesThroughFlags runs the operator table against /flags/. The cases are
// independent flags, so the cases of one time zone share a project: case i is flag
// "case-i" on person property "prop-i", and one request sends every case's property.
func TestOperatorCasesThroughFlags(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	cases := flagcases.Operators(t)
	refused := map[int]string{}
	answers := map[int]flagDetails{}
	byZone := map[string][]int{}
	for i, c := range cases {
		if c.Now == "" {
			byZone[c.Timezone] = append(byZone[c.Timezone], i)
		}
	}
	for _, zone := range slices.Sorted(maps.Keys(byZone)) {
		p := env.newProject(t, zone)
		props := map[string]json.RawMessage{}
		for _, i := range byZone[zone] {
			c := cases[i]
			filter := map[string]any{"key": fmt.Sprintf("prop-%d", i), "type": "person", "value": c.Value}
			if c.Operator != "" {
				filter["operator"] = c.Operator
			}
			if c.Value == nil {
				filter["value"] = nil
			}
			filters := map[string]any{"groups": []any{map[string]any{"properties": []any{filter}, "rollout_percentage": 100}}}
			key := fmt.Sprintf("case-%d", i)
			if _, err := env.flags.CreateFlag(context.Background(), p.id, 0, flags.FlagChange{Key: &key, Filters: mustMarshal(t, filters)}); err != nil {
				refused[i] = err.Error()
				continue
			}
			if c.Property != nil {
				props[fmt.Sprintf("prop-%d", i)] = c.Property
			}
		}
		got := env.flagsFor(t, "", map[string]any{"token": p.token, "distinct_id": "user", "person_properties": props}, nil)
		if got.Errors {
			t.Errorf("time zone %q: errors while computing flags", zone)
		}
		for _, i := range byZone[zone] {
			if d, ok := got.Flags[fmt.Sprintf("case-%d", i)]; ok {
				answers[i] = d
			}
		}
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			switch {
			case c.Now != "":
				t.Skip("the instant of relative dates cannot be set: /flags/ evaluates at the time it answers")
			case refused[i] != "":
				t.Skipf("the API refuses the flag: %s", refused[i])
			}
			got, ok := answers[i]
			if !ok {
				t.Fatal("not answered")
			}
			wantCode := "no_condition_match"
			if c.Want {
				wantCode = "condition_match"
			}
			if got.Enabled != c.Want || got.Reason.Code != wantCode || got.Reason.ConditionIndex == nil || *got.Reason.ConditionIndex != 0 {
				t.Fatalf("%s %s against %s: enabled %v (%s), want %v", c.Operator, c.Value, c.Property, got.Enabled, got.Reason.Code, c.Want)
			}
		})
	}
}
