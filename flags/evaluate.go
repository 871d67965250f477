package flags

import (
	"strings"
	"sync"
	"time"
)

// Request is what one evaluation knows of its caller. Nothing in it is kept, and
// Evaluate does not change it.
type Request struct {
	DistinctID string
	// AnonDistinctID is the anonymous id the caller had before identifying ("" for
	// none): flags with experience continuity hash it, unless HashKeyOverrides has
	// their key.
	AnonDistinctID string
	// DeviceID is hashed by flags that bucket by device id ("" for none).
	DeviceID string
	// Groups maps a group type to the caller's key of it (numbers as decimal text).
	Groups map[string]string
	// PersonProperties is the JSON object of the person's stored properties ("" for
	// none); PersonPropertyOverrides, from the request, win over it. The overrides are
	// JSON decoded with json.Decoder.UseNumber: numbers are json.Number, so that a
	// number keeps its text (5.0 is not 5 to the text operators); float64 is read too,
	// with the text of the shortest form that reads back.
	PersonProperties        string
	PersonPropertyOverrides map[string]any
	// StaticCohorts are the ids of the static cohorts (of Definitions.StaticCohorts)
	// whose lists hold the caller's distinct id or another of its person's: the
	// caller reads them (the warehouse keeps the lists); a static cohort not here has
	// the caller out.
	StaticCohorts []int64
	// GroupProperties holds, by group type, the JSON object of the stored properties
	// of the caller's group; GroupPropertyOverrides, from the request and decoded as
	// the person's, win over them.
	GroupProperties        map[string]string
	GroupPropertyOverrides map[string]map[string]any
	// GroupTypes are the project's group types by index ("" where unused).
	GroupTypes [5]string
	// FlagKeys, when not nil, limits the evaluation to these flags and what they
	// depend on, which are answered too. Keys of no flag are ignored.
	FlagKeys []string
	// Runtime is RuntimeClient, RuntimeServer, RuntimeAll (any case; any other
	// non-empty value counts as RuntimeAll) or "" (not known).
	Runtime string
	// EvaluationContexts, when not empty, keep only the flags with no evaluation tags
	// or one of these.
	EvaluationContexts []string
	OnlySurveyFlags    bool
	// HashKeyOverrides are the identifiers that experience continuity keeps, by flag
	// key: a flag whose key is there hashes that identifier for a person, whether or
	// not it has experience continuity itself (as PostHog does).
	HashKeyOverrides map[string]string
	// HashKeyOverrideError: HashKeyOverrides could not be read. Every flag with
	// experience continuity fails with hash_key_override_error.
	HashKeyOverrideError bool
	// Now is the instant of relative dates ("-7d"); zero: the current time.
	Now time.Time
	// Location is the project's time zone for dates without one; nil: UTC.
	Location *time.Location
	// Deadline, when not zero, bounds the evaluation: the flags not decided by then
	// answer failed, with the reason timeout. The work is weighed against it about every
	// millisecond (see meter); a regex match under way, which cannot be stopped,
	// finishes first.
	Deadline time.Time
}

// Result is one flag's answer.
type Result struct {
	Key     string
	Enabled bool
	// Variant is the variant's key, or "" for none.
	Variant string
	Reason  Reason
	ID      int64
	Version int
	// Payload is the stored payload of the answer (a JSON text), or nil for none. It
	// is shared with other results: it must not be written through.
	Payload       *string
	HasExperiment bool
	Failed        bool
}

// Reason says why a flag answered what it did, as PostHog says it.
type Reason struct {
	Code string
	// ConditionIndex is the index of the deciding condition, or nil. It is shared
	// with other results: it must not be written through.
	ConditionIndex *int
	Description    string
}

// Reason codes, and the descriptions PostHog gives them.
const (
	ReasonConditionMatch   = "condition_match"
	ReasonNoConditionMatch = "no_condition_match"
	ReasonOutOfRollout     = "out_of_rollout_bound"
	ReasonNoGroupType      = "no_group_type"
	ReasonSuperCondition   = "super_condition_value"
	ReasonHoldout          = "holdout_condition_value"
	ReasonMissingDep       = "missing_dependency"

	descNoConditionMatch       = "No matching condition set"
	descGroupsNotEvaluated     = "No matching condition set (group conditions were not evaluated because no group type was provided)"
	descOutOfRollout           = "Out of rollout bound"
	descNoGroupType            = "No group type"
	descSuperCondition         = "Super condition value"
	descHoldout                = "Holdout condition value"
	descMissingDependency      = "Flag cannot be evaluated due to missing dependency"
	surveyFlagPrefix           = "survey-targeting-"
	featureEnrollmentKeyPrefix = "$feature_enrollment/"
)

// evalError is why a flag could not be evaluated: it answers failed, disabled, with
// this code and description.
type evalError struct{ code, description string }

var (
	errCohortNotFound  = &evalError{"dependency_not_found_cohort", "Cohort dependency not found"}
	errCohortCycle     = &evalError{"dependency_cycle_cohort", "Cohort dependency cycle detected"}
	errCohortFilters   = &evalError{"cohort_filters_parsing_error", "Failed to parse cohort filters"}
	errHashKeyOverride = &evalError{"hash_key_override_error", "Failed to fetch hash key override for experience continuity"}
	errTimeout         = &evalError{"timeout", "Flag evaluation timed out"}
)

// reasonRank is a reason for not matching a condition, or a match, by rank: when no
// condition matches, the highest reason recorded answers.
type reasonRank uint8

const (
	rankNoGroupType reasonRank = iota + 1
	rankNoConditionMatch
	rankOutOfRollout
	rankConditionMatch
)

// Evaluate answers every flag of d that r asks for, in d's order, and whether any of
// them failed (or the flags depend on each other in a cycle, or r.HashKeyOverrideError).
//
// Which flags: not inactive or deleted, kept by the survey filter (only
// "survey-targeting-" keys), the runtime (a flag with no runtime or "all" always; one
// for "client" or "server" only for that runtime, which "all" includes and "" does
// not), and the evaluation contexts (a flag with no tags, or one of them); with
// r.FlagKeys, only those and the flags they depend on. The others are absent from the
// answer; a flag that depends on one of them sees false.
//
// The order of one flag: early access decides first, then a holdout, then the
// conditions in order (see evalFlag). A flag that depends on a flag that does not exist,
// or in a cycle, answers disabled with missing_dependency. A flag that cannot be
// evaluated (a missing cohort) answers failed; evaluation itself never fails. Past
// r.Deadline the flags not yet decided answer failed with the reason timeout: the
// answer holds the flags decided so far, and errorsWhileComputing.
func Evaluate(d *Definitions, r *Request) (results []Result, errorsWhileComputing bool) {
	if d == nil || r == nil || len(d.Flags) == 0 {
		return nil, r != nil && r.HashKeyOverrideError
	}
	e := newEvaluator(planOf(d), r)
	defer e.release()
	return e.run()
}

// evaluator is one evaluation's state. Evaluators are pooled.
type evaluator struct {
	plan *plan
	req  *Request
	mc   matchContext
	// runtime is the request's runtime, lowercase.
	runtime string
	// person, groups: the properties, built on first read.
	person      bag
	personReady bool
	groups      [5]bag
	groupReady  [5]bool
	cohortMemo  []uint8
	// values are the flags' answers for the flags that depend on them.
	values []flagValue
	// The flags answered, and their order.
	kept, needed, broken []bool
	waiting              []int
	order                []int
	answers              []Result
}

// flagValue is a flag's answer as a flag that depends on it sees it.
type flagValue struct {
	set     bool // evaluated (and not failed), or filtered out (false)
	enabled bool
	variant string
}

var evaluators = sync.Pool{New: func() any { return new(evaluator) }}

func newEvaluator(p *plan, r *Request) *evaluator {
	e := evaluators.Get().(*evaluator)
	e.plan, e.req = p, r
	e.runtime = strings.ToLower(r.Runtime)
	e.mc = matchContext{now: r.Now, loc: r.Location}
	if e.mc.now.IsZero() {
		e.mc.now = time.Now()
	}
	if e.mc.loc == nil {
		e.mc.loc = time.UTC
	}
	e.mc.meter.start(r.Deadline)
	e.person = resize(e.person, len(p.personKeys))
	e.personReady = false
	e.groupReady = [5]bool{}
	for i := range e.groups {
		clear(e.groups[i])
	}
	e.cohortMemo = resize(e.cohortMemo, len(p.cohorts))
	n := len(p.flags)
	e.values = resize(e.values, n)
	e.kept = resize(e.kept, n)
	e.needed = resize(e.needed, n)
	e.broken = resize(e.broken, n)
	e.waiting = resize(e.waiting, n)
	e.order = e.order[:0]
	e.answers = resize(e.answers, n)
	return e
}

// resize returns s with length n, zeroed.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func (e *evaluator) release() {
	// Drop what aliases the request before pooling.
	clear(e.person)
	for i := range e.groups {
		clear(e.groups[i])
	}
	clear(e.values)
	clear(e.answers)
	e.plan, e.req = nil, nil
	evaluators.Put(e)
}

func (e *evaluator) run() ([]Result, bool) {
	p, r := e.plan, e.req
	failed := r.HashKeyOverrideError
	count := 0
	for i := range p.flags {
		e.kept[i] = e.keep(&p.flags[i])
		if !e.kept[i] {
			e.values[i] = flagValue{set: true} // an absent flag is false to its dependents
		}
	}
	if r.FlagKeys != nil {
		for _, key := range r.FlagKeys {
			if i, ok := p.byKey[key]; ok && e.kept[i] {
				e.need(i)
			}
		}
	} else {
		copy(e.needed, e.kept)
	}
	if p.hasDeps {
		if e.sortByDependencies() {
			failed = true
		}
	} else {
		for i := range p.flags {
			if e.needed[i] {
				e.order = append(e.order, i)
			}
		}
	}
	for _, i := range e.order {
		if !e.needed[i] {
			continue
		}
		var res Result
		switch {
		case e.broken[i]:
			res = e.missingDependency(i)
		case e.mc.meter.spend(flagUnits):
			res = e.failure(i, errTimeout)
		default:
			res = e.evalFlag(i)
		}
		if res.Failed {
			failed = true
		} else {
			e.values[i] = flagValue{set: true, enabled: res.Enabled, variant: res.Variant}
		}
		e.answers[i] = res
		count++
	}
	results := make([]Result, 0, count)
	for i := range p.flags {
		if e.needed[i] {
			results = append(results, e.answers[i])
		}
	}
	return results, failed
}

// keep reports whether the request asks for flag fp, leaving aside r.FlagKeys.
func (e *evaluator) keep(fp *flagPlan) bool {
	r := e.req
	if fp.omitted || (r.OnlySurveyFlags && !fp.survey) {
		return false
	}
	if fp.runtime == RuntimeClient || fp.runtime == RuntimeServer {
		switch e.runtime {
		case "", RuntimeClient, RuntimeServer:
			if e.runtime != fp.runtime {
				return false
			}
		}
	}
	if len(r.EvaluationContexts) > 0 && len(fp.flag.EvaluationTags) > 0 {
		for _, tag := range fp.flag.EvaluationTags {
			for _, c := range r.EvaluationContexts {
				if tag == c {
					return true
				}
			}
		}
		return false
	}
	return true
}

// need marks flag i and the kept flags it depends on, directly or not.
func (e *evaluator) need(i int) {
	if e.needed[i] {
		return
	}
	e.needed[i] = true
	for _, j := range e.plan.flags[i].deps {
		if e.kept[j] {
			e.need(j)
		}
	}
}

// sortByDependencies orders the kept flags so that each comes after the kept flags it
// depends on, and marks broken those that depend on a flag that does not exist, or on
// one that is broken, or in a cycle (directly or not). It reports a cycle among the
// kept flags, whether or not they were asked for.
func (e *evaluator) sortByDependencies() (cycle bool) {
	p := e.plan
	// waiting[i] counts the kept flags that flag i still waits for.
	for i := range p.flags {
		if !e.kept[i] {
			continue
		}
		for _, j := range p.flags[i].deps {
			if e.kept[j] {
				e.waiting[i]++
			}
		}
		if e.waiting[i] == 0 {
			e.order = append(e.order, i)
		}
	}
	for next := 0; next < len(e.order); next++ {
		j := e.order[next]
		e.broken[j] = e.broken[j] || p.flags[j].missingDep
		for _, i := range p.dependents[j] {
			if !e.kept[i] || e.waiting[i] == 0 {
				continue
			}
			if e.broken[j] {
				e.broken[i] = true
			}
			if e.waiting[i]--; e.waiting[i] == 0 {
				e.order = append(e.order, i)
			}
		}
	}
	for i := range p.flags {
		if e.kept[i] && e.waiting[i] > 0 {
			cycle = true
			e.broken[i] = true
			e.order = append(e.order, i)
		}
	}
	return cycle
}

// answer is a flag's answer before it becomes a Result.
type answer struct {
	enabled bool
	variant string
	code    string
	index   int // the deciding condition, -1 for none
	desc    string
	payload *string
}

func (e *evaluator) result(i int, a answer) Result {
	f := e.plan.flags[i].flag
	res := Result{
		Key: f.Key, Enabled: a.enabled, Variant: a.variant, ID: f.ID, Version: f.Version,
		Reason: Reason{Code: a.code, Description: a.desc}, Payload: a.payload,
	}
	if a.index >= 0 {
		res.Reason.ConditionIndex = &e.plan.indexes[a.index]
	}
	return res
}

func (e *evaluator) missingDependency(i int) Result {
	return e.result(i, answer{code: ReasonMissingDep, index: -1, desc: descMissingDependency})
}

func (e *evaluator) failure(i int, err *evalError) Result {
	res := e.result(i, answer{code: err.code, index: -1, desc: err.description})
	res.Failed = true
	return res
}

// evalFlag evaluates flag i:
//
//  1. Early access: with feature_enrollment, a person property
//     $feature_enrollment/<key> decides when present (enabled if it is true or "true");
//     without it, the legacy super_groups: when the person has any property its first
//     condition names, that condition decides. Either answers super_condition_value,
//     condition 0, no variant.
//  2. A holdout takes the identifiers whose hash of "holdout-" and the identifier (no
//     flag key; the flag's own aggregation; no stored continuity identifier; an empty
//     identifier is hashed too) is at most its share: enabled, variant "holdout-<id>",
//     its payload, holdout_condition_value, no condition.
//  3. The conditions in order; the first that matches answers condition_match with its
//     index, a variant and the payload of the variant (of "true" without one).
//     Otherwise each condition records why it failed: out_of_rollout_bound for a person
//     condition of a device-id flag without a device id, or a rollout that excludes
//     the identifier; no_group_type for a group condition whose type the project lacks
//     or whose key the caller did not send; no_condition_match for a filter that does
//     not match. The highest reason answers (condition_match > out_of_rollout_bound >
//     no_condition_match > no_group_type), the later condition on a tie; with no
//     conditions, no_group_type and no index.
func (e *evaluator) evalFlag(i int) Result {
	fp := &e.plan.flags[i]
	r := e.req
	if r.HashKeyOverrideError && fp.continuity {
		return e.failure(i, errHashKeyOverride)
	}
	if fp.enrollment {
		if pr := &e.personBag()[fp.enrollmentKey]; pr.set {
			on := (pr.v.kind == kindBool && pr.v.b) || (pr.v.kind == kindString && pr.v.s == "true")
			return e.result(i, e.superAnswer(fp, on))
		}
	} else if fp.super != nil {
		person := e.personBag()
		for _, k := range fp.superKeys {
			if person[k].set {
				on, _, err := e.condMatch(fp, fp.super)
				if err != nil {
					return e.failure(i, err)
				}
				return e.result(i, e.superAnswer(fp, on))
			}
		}
	}
	if fp.holdout {
		// A share of 100 holds out every identifier, even one that hashes to 1.
		id := e.identifier(fp, fp.agg, false)
		if !(fp.holdoutShare < 100 && hash("holdout-", id, "") > fp.holdoutShare/100) {
			return e.result(i, answer{
				enabled: true, variant: fp.holdoutVariant, code: ReasonHoldout, index: -1,
				desc: descHoldout, payload: fp.payloads[fp.holdoutVariant],
			})
		}
	}
	best, bestIndex := rankNoGroupType, -1
	skippedGroups := false
	for ci := range fp.conds {
		c := &fp.conds[ci]
		rank := rankNoGroupType
		switch {
		case c.agg < 0 && fp.deviceBucketing && r.DeviceID == "":
			// A device-id flag cannot bucket a person without a device id.
			rank = rankOutOfRollout
		case c.agg >= 0 && !e.hasGroup(c.agg):
			skippedGroups = true
		case e.mc.meter.spend(conditionUnits):
			return e.failure(i, errTimeout)
		default:
			matched, got, err := e.condMatch(fp, c)
			if err != nil {
				return e.failure(i, err)
			}
			if matched {
				variant := c.variant
				if variant == "" {
					variant = e.variant(fp, c.agg)
				}
				payloadKey := variant
				if payloadKey == "" {
					payloadKey = "true"
				}
				return e.result(i, answer{
					enabled: true, variant: variant, code: ReasonConditionMatch, index: ci,
					desc: e.plan.matched[ci], payload: fp.payloads[payloadKey],
				})
			}
			rank = got
		}
		if rank >= best {
			best, bestIndex = rank, ci
		}
	}
	a := answer{index: bestIndex}
	switch best {
	case rankOutOfRollout:
		a.code, a.desc = ReasonOutOfRollout, descOutOfRollout
	case rankNoConditionMatch:
		a.code, a.desc = ReasonNoConditionMatch, descNoConditionMatch
		if skippedGroups {
			a.desc = descGroupsNotEvaluated
		}
	default:
		a.code, a.desc = ReasonNoGroupType, descNoGroupType
	}
	return e.result(i, a)
}

func (e *evaluator) superAnswer(fp *flagPlan, on bool) answer {
	a := answer{enabled: on, code: ReasonSuperCondition, index: 0, desc: descSuperCondition}
	if on {
		a.payload = fp.payloads["true"]
	}
	return a
}

// condMatch matches condition c: its person, group and flag filters in order, then its
// cohort filters, must all match, then the identifier must fall in its rollout (100
// without hashing; else a hash at most the share). A group filter reads the group of
// its own group type index, else of the condition's (none in early access); a filter
// of any other type never matches. It returns the rank of the reason when c does not
// match.
func (e *evaluator) condMatch(fp *flagPlan, c *condPlan) (bool, reasonRank, *evalError) {
	for k := range c.filters {
		f := &c.filters[k]
		var ok bool
		switch f.typ {
		case filterPerson:
			ok = matchValue(f.op, &f.val, &e.personBag()[f.key], &e.mc)
		case filterGroup:
			pr := &unset
			if !c.noGroups {
				if b := e.groupBag(f.group); b != nil {
					pr = &b[f.key]
				}
			}
			ok = matchValue(f.op, &f.val, pr, &e.mc)
		case filterFlag:
			ok = e.flagFilterMatch(f)
		}
		if e.mc.meter.expired {
			return false, 0, errTimeout
		}
		if !ok {
			return false, rankNoConditionMatch, nil
		}
	}
	if len(c.cohorts) > 0 {
		ok, err := e.cohortFiltersMatch(c.cohorts)
		if err != nil {
			return false, 0, err
		}
		if !ok {
			return false, rankNoConditionMatch, nil
		}
	}
	if c.rollout == 100 || flagHash(fp.prefix, e.identifier(fp, c.agg, true), "") <= c.rollout/100 {
		return true, rankConditionMatch, nil
	}
	return false, rankOutOfRollout, nil
}

// cohortFiltersMatch evaluates the cohorts of a condition (any error fails the flag),
// then applies the filters: in (or no operator) wants a member, not_in a non-member,
// any other operator matches nothing.
func (e *evaluator) cohortFiltersMatch(filters []filterPlan) (bool, *evalError) {
	var members [8]bool
	in := members[:0]
	for k := range filters {
		f := &filters[k]
		if !f.cohortOK {
			return false, errCohortFilters
		}
		m, err := e.cohortMember(f.cohort)
		if err != nil {
			return false, err
		}
		in = append(in, m)
	}
	for k := range filters {
		if !e.cohortFilterMatch(&filters[k], in[k]) {
			return false, nil
		}
	}
	return true, nil
}

// flagFilterMatch matches a flag filter (operator flag_evaluates_to) against the answer
// of the flag it names: true wants it enabled (any variant), false disabled, a string
// that variant. A flag that failed matches nothing.
func (e *evaluator) flagFilterMatch(f *filterPlan) bool {
	if f.op != opFlagEvaluatesTo || f.dep < 0 {
		return false
	}
	v := &e.values[f.dep]
	if !v.set {
		return false
	}
	switch f.want {
	case wantEnabled:
		return v.enabled
	case wantDisabled:
		return !v.enabled
	case wantVariant:
		return v.enabled && v.variant == f.variant && v.variant != ""
	}
	return false
}

// hasGroup reports whether the caller sent a key of the group type at index, which
// the project has.
func (e *evaluator) hasGroup(index int) bool {
	if index >= len(e.req.GroupTypes) {
		return false
	}
	name := e.req.GroupTypes[index]
	if name == "" {
		return false
	}
	key, ok := e.req.Groups[name]
	return ok && key != ""
}

// identifier is what flag fp hashes for a condition of group type index agg: the
// group's key for a group; for a person, the device id when the flag buckets by device
// and one was sent, else (with overrides) the identifier experience continuity kept
// for the flag, else the anonymous id for a flag with experience continuity, else the
// distinct id.
func (e *evaluator) identifier(fp *flagPlan, agg int, overrides bool) string {
	r := e.req
	if agg >= 0 {
		if agg < len(r.GroupTypes) && r.GroupTypes[agg] != "" {
			return r.Groups[r.GroupTypes[agg]]
		}
		return ""
	}
	if fp.deviceBucketing && r.DeviceID != "" {
		return r.DeviceID
	}
	if overrides {
		if id, ok := r.HashKeyOverrides[fp.flag.Key]; ok {
			return id
		}
	}
	if fp.continuity && r.AnonDistinctID != "" {
		return r.AnonDistinctID
	}
	return r.DistinctID
}

// variant is the variant of a match: the first whose share ends above the identifier's
// variant hash (shares are [start, end)); none when the shares end short of it.
func (e *evaluator) variant(fp *flagPlan, agg int) string {
	if len(fp.variants) == 0 {
		return ""
	}
	h := flagHash(fp.prefix, e.identifier(fp, agg, true), "variant")
	for _, v := range fp.variants {
		if h < v.upTo {
			return v.key
		}
	}
	return ""
}
