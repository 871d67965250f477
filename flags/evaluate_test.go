package flags

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/flags/flagcases"
)

// caseDefinitions are the case's flags (sorted by key) and cohorts.
func caseDefinitions(t testing.TB, c *flagcases.Evaluation) *Definitions {
	t.Helper()
	d := &Definitions{Team: 1, Cohorts: map[int64]*Cohort{}}
	for _, f := range c.Flags {
		flag := &Flag{
			ID: f.ID, TeamID: 1, Key: f.Key, Active: f.Active == nil || *f.Active, Deleted: f.Deleted,
			Version: f.Version, EnsureExperienceContinuity: f.EnsureExperienceContinuity,
			EvaluationRuntime: f.EvaluationRuntime, BucketingIdentifier: f.BucketingIdentifier,
			EvaluationTags: f.EvaluationTags, Filters: filtersOf[Filters](t, f.Filters),
		}
		d.Flags = append(d.Flags, flag)
	}
	sort.Slice(d.Flags, func(i, j int) bool { return d.Flags[i].Key < d.Flags[j].Key })
	for _, co := range c.Cohorts {
		d.Cohorts[co.ID] = &Cohort{ID: co.ID, TeamID: 1, IsStatic: co.IsStatic, Deleted: co.Deleted, Filters: filtersOf[CohortFilters](t, co.Filters)}
	}
	return d
}

// filtersOf decodes a case's filters; none are the zero value.
func filtersOf[F any](t testing.TB, raw json.RawMessage) F {
	t.Helper()
	var f F
	if raw != nil {
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("cannot decode the filters %s: %v", raw, err)
		}
	}
	return f
}

// caseRequest is the case's request, with the state it finds.
func caseRequest(t testing.TB, c *flagcases.Evaluation) *Request {
	t.Helper()
	q := &c.Request
	r := &Request{
		DistinctID: q.DistinctID, AnonDistinctID: q.AnonDistinctID, DeviceID: q.DeviceID, Groups: q.Groups,
		PersonProperties: string(q.StoredPersonProperties), FlagKeys: q.FlagKeys, Runtime: q.EvaluationRuntime,
		EvaluationContexts: q.EvaluationContexts, OnlySurveyFlags: q.OnlySurveyFlags,
		HashKeyOverrides: q.HashKeyOverrides, HashKeyOverrideError: q.HashKeyOverrideError,
		Now: c.Instant(), Location: c.Location(),
	}
	if q.PersonProperties != nil {
		r.PersonPropertyOverrides, _ = flagcases.Decode(t, q.PersonProperties).(map[string]any)
	}
	if len(q.StoredGroupProperties) > 0 {
		r.GroupProperties = map[string]string{}
		for name, raw := range q.StoredGroupProperties {
			r.GroupProperties[name] = string(raw)
		}
	}
	if len(q.GroupProperties) > 0 {
		r.GroupPropertyOverrides = map[string]map[string]any{}
		for name, raw := range q.GroupProperties {
			r.GroupPropertyOverrides[name], _ = flagcases.Decode(t, raw).(map[string]any)
		}
	}
	for index, name := range c.GroupTypes {
		i, err := strconv.Atoi(index)
		if err != nil || i < 0 || i >= len(r.GroupTypes) {
			t.Fatalf("bad group type index %q", index)
		}
		r.GroupTypes[i] = name
	}
	return r
}

// TestEvaluationCases runs the evaluation table of the contract (package flagcases)
// against Evaluate; the edge's tests run it against /flags/.
func TestEvaluationCases(t *testing.T) {
	for _, c := range flagcases.Evaluations(t) {
		t.Run(c.Name, func(t *testing.T) {
			d := caseDefinitions(t, &c)
			results, errs := Evaluate(d, caseRequest(t, &c))
			if errs != c.Errors {
				t.Errorf("errorsWhileComputing = %v, want %v", errs, c.Errors)
			}
			var keys, wantKeys []string
			for _, r := range results {
				keys = append(keys, r.Key)
			}
			for k := range c.Want {
				wantKeys = append(wantKeys, k)
			}
			sort.Strings(wantKeys)
			if !slices.Equal(keys, wantKeys) {
				t.Fatalf("answered %v, want %v (in key order)", keys, wantKeys)
			}
			for _, r := range results {
				checkAnswer(t, d, r, c.Want[r.Key])
			}
		})
	}
}

// checkAnswer compares r with the case's answer, and its id and version with its flag's.
func checkAnswer(t *testing.T, d *Definitions, r Result, w flagcases.Answer) {
	t.Helper()
	got := flagcases.Answer{Enabled: r.Enabled, Reason: r.Reason.Code, ConditionIndex: r.Reason.ConditionIndex,
		Description: &r.Reason.Description, Payload: r.Payload, Failed: r.Failed}
	if r.Variant != "" {
		got.Variant = &r.Variant
	}
	if got.String() != w.String() {
		t.Errorf("%s: %s\nwant %s", r.Key, got, w)
	}
	for _, f := range d.Flags {
		if f.Key == r.Key && (f.ID != r.ID || f.Version != r.Version) {
			t.Errorf("%s: id %d version %d, want the flag's %d %d", r.Key, r.ID, r.Version, f.ID, f.Version)
		}
	}
}

// boundary finds a percentage whose share (percentage/100) is exactly h, so that the
// boundary itself is tested; not every h has one.
func boundary(h float64) (float64, bool) {
	pct := h * 100
	for range 8 {
		switch share := pct / 100; {
		case share == h:
			return pct, true
		case share < h:
			pct = math.Nextafter(pct, 200)
		default:
			pct = math.Nextafter(pct, -1)
		}
	}
	return 0, false
}

// boundaryIDs are n identifiers whose hash by h has a boundary, with it.
func boundaryIDs(t *testing.T, n int, h func(id string) float64) map[string]float64 {
	t.Helper()
	ids := map[string]float64{}
	for i := 0; len(ids) < n && i < 1000; i++ {
		id := "user-" + strconv.Itoa(i)
		if pct, ok := boundary(h(id)); ok {
			ids[id] = pct
		}
	}
	if len(ids) < n {
		t.Fatalf("found %d identifiers with a boundary", len(ids))
	}
	return ids
}

func rolloutFlag(key string, pct float64) *Flag {
	return &Flag{ID: 1, Key: key, Active: true, Filters: Filters{Groups: []Condition{{RolloutPercentage: &pct}}}}
}

func evaluateOne(t *testing.T, f *Flag, r *Request) Result {
	t.Helper()
	results, _ := Evaluate(&Definitions{Flags: []*Flag{f}}, r)
	if len(results) != 1 {
		t.Fatalf("Evaluate answered %d flags", len(results))
	}
	return results[0]
}

// A rollout includes its boundary: an identifier whose hash is exactly the share.
func TestRolloutBoundary(t *testing.T) {
	for id, pct := range boundaryIDs(t, 3, func(id string) float64 { return hash("edge.", id, "") }) {
		if r := evaluateOne(t, rolloutFlag("edge", pct), &Request{DistinctID: id}); !r.Enabled {
			t.Fatalf("%s at its own boundary %v: %s", id, pct, r.Reason.Code)
		}
		below := math.Nextafter(pct, -1)
		if r := evaluateOne(t, rolloutFlag("edge", below), &Request{DistinctID: id}); r.Enabled || r.Reason.Code != ReasonOutOfRollout {
			t.Fatalf("%s just below its boundary: %v %s", id, r.Enabled, r.Reason.Code)
		}
	}
}

// A variant's share is [start, end): an identifier whose variant hash is exactly the end
// of the first variant's share gets the second.
func TestVariantBoundary(t *testing.T) {
	flag := func(first float64) *Flag {
		return &Flag{ID: 1, Key: "edge", Active: true, Filters: Filters{
			Groups: []Condition{{}},
			Multivariate: &Multivariate{Variants: []Variant{
				{Key: "first", RolloutPercentage: first}, {Key: "second", RolloutPercentage: 100 - first},
			}},
		}}
	}
	for id, pct := range boundaryIDs(t, 3, func(id string) float64 { return hash("edge.", id, "variant") }) {
		if r := evaluateOne(t, flag(pct), &Request{DistinctID: id}); r.Variant != "second" {
			t.Fatalf("%s at the end of the first share: %q", id, r.Variant)
		}
		if r := evaluateOne(t, flag(math.Nextafter(pct, 200)), &Request{DistinctID: id}); r.Variant != "first" {
			t.Fatalf("%s just inside the first share: %q", id, r.Variant)
		}
	}
}

// A holdout includes its boundary too, and hashes "holdout-" and the identifier alone.
func TestHoldoutBoundary(t *testing.T) {
	flag := func(share float64) *Flag {
		return &Flag{ID: 1, Key: "any-key", Active: true, Filters: Filters{
			Groups: []Condition{{}}, Holdout: &Holdout{ID: 4, ExclusionPercentage: share},
		}}
	}
	for id, pct := range boundaryIDs(t, 3, func(id string) float64 { return hash("holdout-", id, "") }) {
		r := &Request{DistinctID: id}
		if got := evaluateOne(t, flag(pct), r); got.Variant != "holdout-4" || got.Reason.Code != ReasonHoldout || got.Reason.ConditionIndex != nil {
			t.Fatalf("%s at the boundary: %+v", id, got)
		}
		if got := evaluateOne(t, flag(math.Nextafter(pct, -1)), r); got.Variant != "" || got.Reason.Code != ReasonConditionMatch {
			t.Fatalf("%s below the boundary: %+v", id, got)
		}
	}
	// Shares beyond 0–100 are clamped.
	r := &Request{DistinctID: "some_distinct_id"}
	if got := evaluateOne(t, flag(250), r); got.Variant != "holdout-4" {
		t.Fatalf("a share of 250: %+v", got)
	}
	if got := evaluateOne(t, flag(-5), r); got.Variant != "" {
		t.Fatalf("a share of -5: %+v", got)
	}
	if got := evaluateOne(t, flag(72.7), r); got.Variant != "" {
		t.Fatalf("some_distinct_id (0.72700…) in a holdout of 72.7%%: %+v", got)
	}
	if got := evaluateOne(t, flag(72.71), r); got.Variant != "holdout-4" {
		t.Fatalf("some_distinct_id (0.72700…) out of a holdout of 72.71%%: %+v", got)
	}
}

func TestEvaluateOddInputs(t *testing.T) {
	if results, errs := Evaluate(nil, &Request{}); results != nil || errs {
		t.Fatalf("nil definitions: %v %v", results, errs)
	}
	if results, errs := Evaluate(&Definitions{}, nil); results != nil || errs {
		t.Fatalf("nil request: %v %v", results, errs)
	}
	// A nil flag, stored properties that are not an object, a condition without
	// anything: nothing panics.
	d := &Definitions{Flags: []*Flag{nil, rolloutFlag("a", 100)}}
	results, _ := Evaluate(d, &Request{DistinctID: "x", PersonProperties: "[1, 2"})
	if len(results) != 1 || !results[0].Enabled {
		t.Fatalf("results %+v", results)
	}
}

// The plan of Definitions is built once, and dropped with them.
func TestPlanCache(t *testing.T) {
	d := &Definitions{Flags: []*Flag{rolloutFlag("a", 100)}}
	if planOf(d) != planOf(d) {
		t.Fatal("a second plan was built for the same definitions")
	}
	count := func() int {
		n := 0
		plans.Range(func(any, any) bool { n++; return true })
		return n
	}
	before := count()
	func() {
		for range 10 {
			Evaluate(&Definitions{Flags: []*Flag{rolloutFlag("b", 100)}}, &Request{DistinctID: "x"})
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); count() > before && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(); n > before {
		t.Fatalf("%d plans left after their definitions were collected, want at most %d", n, before)
	}
	runtime.KeepAlive(d)
}

// A cohort's groups may nest 64 deep; deeper, the cohort is invalid.
func TestCohortDepth(t *testing.T) {
	f := func(depth int, want string) {
		t.Helper()
		leaf := PropertyNode{Filter: &PropertyFilter{Key: "email", Type: FilterPerson, Operator: "is_set", Value: json.RawMessage(`"is_set"`)}}
		g := PropertyGroup{Type: "AND", Values: []PropertyNode{leaf}}
		for range depth {
			inner := g
			g = PropertyGroup{Type: "OR", Values: []PropertyNode{{Group: &inner}}}
		}
		d := &Definitions{
			Flags:   []*Flag{{ID: 1, Key: "deep", Active: true, Filters: Filters{Groups: []Condition{{Properties: []PropertyFilter{{Key: "id", Type: FilterCohort, Value: json.RawMessage(`1`)}}}}}}},
			Cohorts: map[int64]*Cohort{1: {ID: 1, Filters: CohortFilters{Properties: PropertyGroup{Type: "AND", Values: []PropertyNode{{Group: &g}}}}}},
		}
		results, _ := Evaluate(d, &Request{DistinctID: "x", PersonPropertyOverrides: map[string]any{"email": "a@x.com"}})
		if got := results[0].Reason.Code; got != want {
			t.Fatalf("groups %d deep: %s, want %s", depth, got, want)
		}
	}
	f(0, ReasonConditionMatch)
	f(62, ReasonConditionMatch)
	f(64, "cohort_filters_parsing_error")
	f(1000, "cohort_filters_parsing_error")
}

// Evaluations of the same definitions at once answer as one at a time.
func TestEvaluateConcurrently(t *testing.T) {
	d, r := benchmarkProject()
	want, _ := Evaluate(d, r)
	other := *r
	other.DistinctID, other.PersonProperties = "someone-else", `{"plan": "free"}`
	wantOther, _ := Evaluate(d, &other)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for range 200 {
				req, w := r, want
				if g%2 == 1 {
					req, w = &other, wantOther
				}
				got, _ := Evaluate(d, req)
				if !reflect.DeepEqual(got, w) {
					errs <- "an answer differs"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// A static cohort's members are those the request says (Request.StaticCohorts), in a
// flag's condition and through a dynamic cohort that names it; Definitions lists the
// static cohorts the flags use.
func TestStaticCohortMembers(t *testing.T) {
	cohort := func(id int64, op string) PropertyFilter {
		return PropertyFilter{Key: "id", Type: FilterCohort, Operator: op, Value: json.RawMessage(fmt.Sprint(id))}
	}
	d := &Definitions{
		Flags: []*Flag{
			{ID: 1, Key: "in-static", Active: true, Filters: Filters{Groups: []Condition{{Properties: []PropertyFilter{cohort(3, "in")}}}}},
			{ID: 2, Key: "not-in-static", Active: true, Filters: Filters{Groups: []Condition{{Properties: []PropertyFilter{cohort(3, "not_in")}}}}},
			{ID: 3, Key: "in-nested", Active: true, Filters: Filters{Groups: []Condition{{Properties: []PropertyFilter{cohort(4, "")}}}}},
		},
		Cohorts: map[int64]*Cohort{3: {ID: 3, IsStatic: true}, 4: {ID: 4, Filters: CohortFilters{Properties: PropertyGroup{Type: "AND",
			Values: []PropertyNode{{Filter: &PropertyFilter{Key: "id", Type: FilterCohort, Value: json.RawMessage(`"3"`)}}}}}}},
	}
	if got := d.StaticCohorts(); fmt.Sprint(got) != "[3]" {
		t.Errorf("StaticCohorts: %v, want [3]", got)
	}
	f := func(static []int64, want string) {
		t.Helper()
		results, _ := Evaluate(d, &Request{DistinctID: "x", StaticCohorts: static})
		var got []string
		for _, r := range results {
			got = append(got, fmt.Sprintf("%s=%v", r.Key, r.Enabled))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("static cohorts %v: %s, want %s", static, strings.Join(got, " "), want)
		}
	}
	f(nil, "in-static=false not-in-static=true in-nested=false")
	f([]int64{3}, "in-static=true not-in-static=false in-nested=true")
	f([]int64{7}, "in-static=false not-in-static=true in-nested=false")
}
