package flags

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"weak"
)

// plan is Definitions prepared for evaluation: every filter's value parsed (patterns
// compiled, dates, versions and numbers read), the properties the filters read given
// indexes, the flags' dependencies resolved. It is built once per Definitions, the
// first time they are evaluated, and then only read.
type plan struct {
	flags []flagPlan
	// byID and byKey index the flags that are not deleted.
	byID  map[int64]int
	byKey map[string]int
	// personKeys and groupKeys give an index to every property key a filter reads.
	personKeys    map[string]int
	groupKeys     map[string]int
	distinctIDKey int // index of distinct_id among personKeys, -1 when unread
	groupKeyKey   int // index of $group_key among groupKeys, -1 when unread
	initialPairs  []initialPair
	cohorts       []cohortPlan
	cohortByID    map[int64]int
	// hasDeps: some flag depends on another (or on one that is missing);
	// dependents[j] are the flags that depend on flag j.
	hasDeps    bool
	dependents [][]int
	// indexes holds 0, 1, 2, …: results point into it for their condition index.
	indexes []int
	// matched holds the description of a match of each condition.
	matched []string
}

// initialPair is a property <p> and its $initial_<p>, by their indexes.
type initialPair struct{ source, initial int }

// flagPlan is one flag prepared.
type flagPlan struct {
	flag *Flag
	// prefix is the flag's hash prefix: its key and a dot.
	prefix string
	// omitted: inactive or deleted, never evaluated nor answered.
	omitted bool
	// runtime is the flag's evaluation runtime, lowercase ("" when it has none; any
	// value but client and server counts as all).
	runtime string
	survey  bool
	// continuity: experience continuity; deviceBucketing: hash the device id.
	continuity      bool
	deviceBucketing bool
	// agg is the flag's group type index, -1 for persons.
	agg int
	// enrollment: $feature_enrollment/<key> decides, at enrollmentKey.
	enrollment    bool
	enrollmentKey int
	// super is the legacy early-access condition and superKeys its properties.
	super     *condPlan
	superKeys []int
	// holdout: holdoutShare of identifiers get holdoutVariant.
	holdout        bool
	holdoutShare   float64
	holdoutVariant string
	conds          []condPlan
	variants       []variantPlan
	payloads       map[string]*string
	// deps are the flags the conditions depend on; missingDep: one does not exist.
	deps       []int
	missingDep bool
}

// variantPlan is a variant with the end of its share of [0, 1).
type variantPlan struct {
	key  string
	upTo float64
}

// condPlan is one condition prepared.
type condPlan struct {
	// rollout is the share of identifiers in percent (100 when unset).
	rollout float64
	// variant is the condition's variant, when it names one of the flag's.
	variant string
	// agg is the condition's group type index, -1 for persons.
	agg int
	// filters are the person, group and flag filters in order; cohorts the cohort
	// filters, which are matched after them.
	filters []filterPlan
	cohorts []filterPlan
	// noGroups: group filters read no properties (the early-access condition).
	noGroups bool
}

// filterType is the type of a property filter.
type filterType uint8

const (
	filterOther filterType = iota
	filterPerson
	filterGroup
	filterCohort
	filterFlag
)

// flagWant is what a flag filter wants the flag it depends on to be.
type flagWant uint8

const (
	wantNothing  flagWant = iota // a value that matches nothing
	wantEnabled                  // true: enabled, with any variant
	wantDisabled                 // false
	wantVariant                  // a string: that variant
)

// filterPlan is one property filter prepared.
type filterPlan struct {
	typ      filterType
	op       operator
	negation bool
	// key is the property's index among the person or the group keys.
	key int
	// group is a group filter's group type index, -1 for none.
	group int
	val   filterValue
	// dep is a flag filter's flag (-1 when its key names none), depIsID whether its
	// key is a flag id at all, want and variant what it wants of the flag.
	dep     int
	depIsID bool
	want    flagWant
	variant string
	// cohort is a cohort filter's cohort, when cohortOK.
	cohort   int64
	cohortOK bool
}

// plans holds the plan of each Definitions while the Definitions live: the key is a
// weak pointer, and a cleanup removes the entry once the Definitions are collected.
var plans sync.Map // weak.Pointer[Definitions] → *plan

// planOf is the plan of d, built on first use.
func planOf(d *Definitions) *plan {
	key := weak.Make(d)
	if p, ok := plans.Load(key); ok {
		return p.(*plan)
	}
	p := buildPlan(d)
	if prev, loaded := plans.LoadOrStore(key, p); loaded {
		return prev.(*plan)
	}
	runtime.AddCleanup(d, func(key weak.Pointer[Definitions]) { plans.Delete(key) }, key)
	return p
}

// planBuilder builds a plan.
type planBuilder struct {
	p *plan
}

func (b *planBuilder) personKey(k string) int { return keyIndex(b.p.personKeys, k) }

func (b *planBuilder) groupKey(k string) int { return keyIndex(b.p.groupKeys, k) }

// keyIndex is k's index in keys, given it when it has none: the next.
func keyIndex(keys map[string]int, k string) int {
	if i, ok := keys[k]; ok {
		return i
	}
	i := len(keys)
	keys[k] = i
	return i
}

// buildPlan prepares d. It reads d and never changes it; the plan keeps pointers to d's
// flags, never to d.
func buildPlan(d *Definitions) *plan {
	p := &plan{
		flags:      make([]flagPlan, len(d.Flags)),
		byID:       make(map[int64]int, len(d.Flags)),
		byKey:      make(map[string]int, len(d.Flags)),
		personKeys: map[string]int{},
		groupKeys:  map[string]int{},
		cohortByID: map[int64]int{},
	}
	b := &planBuilder{p: p}
	for i, f := range d.Flags {
		if f == nil || f.Deleted {
			continue
		}
		p.byID[f.ID] = i
		p.byKey[f.Key] = i
	}
	maxConds := 0
	for i, f := range d.Flags {
		fp := &p.flags[i]
		if f == nil {
			fp.flag, fp.omitted = &Flag{}, true
			continue
		}
		b.flag(fp, f)
		maxConds = max(maxConds, len(fp.conds))
		if len(fp.deps) > 0 || fp.missingDep {
			p.hasDeps = true
		}
	}
	if p.hasDeps {
		p.dependents = make([][]int, len(p.flags))
		for i := range p.flags {
			for _, j := range p.flags[i].deps {
				p.dependents[j] = append(p.dependents[j], i)
			}
		}
	}
	b.cohorts(d.Cohorts)
	for source, initial := range initialProperties {
		if i, ok := p.personKeys[initial]; ok {
			p.initialPairs = append(p.initialPairs, initialPair{source: b.personKey(source), initial: i})
		}
	}
	p.distinctIDKey, p.groupKeyKey = -1, -1
	if i, ok := p.personKeys["distinct_id"]; ok {
		p.distinctIDKey = i
	}
	if i, ok := p.groupKeys["$group_key"]; ok {
		p.groupKeyKey = i
	}
	maxConds = max(maxConds, 1) // early access answers condition 0 without conditions
	p.indexes = make([]int, maxConds)
	p.matched = make([]string, maxConds)
	for i := range maxConds {
		p.indexes[i] = i
		p.matched[i] = "Matched condition set " + strconv.Itoa(i+1)
	}
	return p
}

func (b *planBuilder) flag(fp *flagPlan, f *Flag) {
	fp.flag = f
	fp.prefix = f.Key + "."
	fp.omitted = !f.Active || f.Deleted
	fp.runtime = strings.ToLower(f.EvaluationRuntime)
	fp.survey = strings.HasPrefix(f.Key, surveyFlagPrefix)
	fp.continuity = f.EnsureExperienceContinuity
	fp.deviceBucketing = f.BucketingIdentifier == BucketByDeviceID
	fp.agg = groupIndex(f.Filters.AggregationGroupTypeIndex)
	filters := &f.Filters
	if filters.Multivariate != nil {
		sum := 0.0
		for _, v := range filters.Multivariate.Variants {
			sum += v.RolloutPercentage / 100
			fp.variants = append(fp.variants, variantPlan{key: v.Key, upTo: sum})
		}
	}
	if len(filters.Payloads) > 0 {
		fp.payloads = make(map[string]*string, len(filters.Payloads))
		for k, v := range filters.Payloads {
			fp.payloads[k] = &v
		}
	}
	if filters.FeatureEnrollment != nil && *filters.FeatureEnrollment {
		fp.enrollment = true
		fp.enrollmentKey = b.personKey(featureEnrollmentKeyPrefix + f.Key)
	} else if len(filters.SuperGroups) > 0 && len(filters.SuperGroups[0].Properties) > 0 {
		sc := b.condition(fp, &filters.SuperGroups[0], -1)
		sc.noGroups = true
		fp.super = &sc
		for _, pf := range filters.SuperGroups[0].Properties {
			fp.superKeys = append(fp.superKeys, b.personKey(pf.Key))
		}
	}
	if h := filters.Holdout; h != nil {
		fp.holdout = true
		fp.holdoutShare = min(max(h.ExclusionPercentage, 0), 100)
		fp.holdoutVariant = "holdout-" + strconv.FormatInt(h.ID, 10)
	}
	fp.conds = make([]condPlan, len(filters.Groups))
	for i := range filters.Groups {
		c := &filters.Groups[i]
		agg := fp.agg
		if c.AggregationGroupTypeIndex.Set {
			agg = groupIndex(c.AggregationGroupTypeIndex.Index)
		}
		fp.conds[i] = b.condition(fp, c, agg)
		for _, pf := range fp.conds[i].filters {
			if pf.typ != filterFlag {
				continue
			}
			switch {
			case pf.dep >= 0:
				fp.addDep(pf.dep)
			case pf.depIsID:
				fp.missingDep = true // a flag that does not exist, or is deleted
			}
		}
	}
}

func (fp *flagPlan) addDep(i int) {
	for _, d := range fp.deps {
		if d == i {
			return
		}
	}
	fp.deps = append(fp.deps, i)
}

// groupIndex is a group type index, or -1 for persons.
func groupIndex(i *int) int {
	if i == nil || *i < 0 {
		return -1
	}
	return *i
}

func (b *planBuilder) condition(fp *flagPlan, c *Condition, agg int) condPlan {
	cp := condPlan{rollout: 100, agg: agg}
	if c.RolloutPercentage != nil {
		cp.rollout = *c.RolloutPercentage
	}
	if c.Variant != nil {
		for _, v := range fp.variants {
			if v.key == *c.Variant {
				cp.variant = v.key
			}
		}
	}
	for i := range c.Properties {
		pf := b.filter(&c.Properties[i], agg)
		if pf.typ == filterCohort {
			cp.cohorts = append(cp.cohorts, pf)
		} else {
			cp.filters = append(cp.filters, pf)
		}
	}
	return cp
}

// filter prepares a filter of a condition whose group type index is agg.
func (b *planBuilder) filter(f *PropertyFilter, agg int) filterPlan {
	op := filterOperator(f)
	pf := filterPlan{op: op, negation: f.Negation, key: -1, group: -1, dep: -1}
	switch f.Type {
	case FilterPerson, "":
		pf.typ = filterPerson
		pf.key = b.personKey(f.Key)
		pf.val = compileValue(op, f.Value)
	case FilterGroup:
		pf.typ = filterGroup
		pf.key = b.groupKey(f.Key)
		pf.group = agg
		if f.GroupTypeIndex != nil {
			pf.group = groupIndex(f.GroupTypeIndex)
		}
		pf.val = compileValue(op, f.Value)
	case FilterCohort:
		pf.typ = filterCohort
		pf.cohort, pf.cohortOK = cohortID(f.Value)
	case FilterFlag:
		pf.typ = filterFlag
		if id, err := strconv.ParseInt(f.Key, 10, 64); err == nil {
			pf.depIsID = true
			if i, ok := b.p.byID[id]; ok {
				pf.dep = i
			}
		}
		v := rawValue(f.Value)
		switch {
		case v.kind == kindBool && v.b:
			pf.want = wantEnabled
		case v.kind == kindBool:
			pf.want = wantDisabled
		case v.kind == kindString:
			pf.want, pf.variant = wantVariant, v.s
		}
	default:
		pf.typ = filterOther
	}
	return pf
}

// filterOperator is a filter's operator: none is exact, or in for a cohort filter.
func filterOperator(f *PropertyFilter) operator {
	if f.Operator == "" && f.Type == FilterCohort {
		return opIn
	}
	if op, ok := operators[f.Operator]; ok {
		return op
	}
	return opUnknown
}

// cohortID reads a cohort filter's value: a cohort id, as a number or as text.
func cohortID(raw []byte) (int64, bool) {
	v := rawValue(raw)
	var text string
	switch v.kind {
	case kindNumber, kindString:
		text = v.text()
	default:
		return 0, false
	}
	id, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	return id, err == nil
}
