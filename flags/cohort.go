package flags

import "slices"

// maxCohortDepth bounds the nesting of a cohort's groups: a filter or group deeper than
// this makes the cohort invalid (and bounds the recursion over it).
const maxCohortDepth = 64

// cohortPlan is a cohort prepared: a tree of AND/OR groups over filters on the
// person's properties and on other cohorts.
type cohortPlan struct {
	id     int64
	static bool
	// empty: the cohort defines nothing, and has no member.
	empty bool
	root  cohortNode
	// deps are the ids of the cohorts it names.
	deps []int64
	// invalid: the cohort's top group is neither AND nor OR, its groups are nested too
	// deep, or a cohort filter names no cohort id.
	invalid bool
	// err is why the cohort cannot be evaluated: it or a cohort it depends on
	// (directly or not) is invalid, missing or deleted, or they depend on each other in
	// a cycle. nil when it can.
	err *evalError
	// order is the cohorts to evaluate for it, the ones it depends on first, itself
	// last (static ones left out).
	order []int
}

// cohortNode is a group (all of its children, or any) or a filter. A group of another
// type (not AND, OR or property) fails the evaluation that reaches it.
type cohortNode struct {
	all      bool
	badType  bool
	children []cohortNode
	filter   *filterPlan
}

// cohorts prepares the cohorts that are not deleted, then finds those that cannot be
// evaluated.
func (b *planBuilder) cohorts(cohorts map[int64]*Cohort) {
	p := b.p
	for id, c := range cohorts {
		if c == nil || c.Deleted {
			continue
		}
		cp := cohortPlan{id: id, static: c.IsStatic}
		if !c.IsStatic {
			props := &c.Filters.Properties
			switch {
			case props.Type == "" && len(props.Values) == 0:
				cp.empty = true
			case props.Type != "AND" && props.Type != "OR":
				cp.invalid = true
			default:
				cp.root = b.cohortGroup(&cp, props, 0)
			}
		}
		p.cohortByID[id] = len(p.cohorts)
		p.cohorts = append(p.cohorts, cp)
	}
	for i := range p.cohorts {
		p.cohorts[i].err = p.cohortError(i)
		if p.cohorts[i].err == nil {
			p.cohorts[i].order = p.cohortOrder(i)
		}
	}
}

// cohortGroup prepares a group whose children are at depth.
func (b *planBuilder) cohortGroup(cp *cohortPlan, g *PropertyGroup, depth int) cohortNode {
	n := cohortNode{}
	switch g.Type {
	case "AND", "property":
		n.all = true
	case "OR":
	default:
		n.badType = true
	}
	if depth > maxCohortDepth {
		cp.invalid = true
		return n
	}
	n.children = make([]cohortNode, 0, len(g.Values))
	for i := range g.Values {
		v := &g.Values[i]
		switch {
		case v.Group != nil:
			n.children = append(n.children, b.cohortGroup(cp, v.Group, depth+1))
		case v.Filter != nil:
			n.children = append(n.children, b.cohortFilter(cp, v.Filter))
		}
	}
	return n
}

// cohortFilter prepares a filter of a cohort: a cohort filter names a cohort, any other
// filter reads the person's properties, whatever its type.
func (b *planBuilder) cohortFilter(cp *cohortPlan, f *PropertyFilter) cohortNode {
	pf := &filterPlan{op: filterOperator(f), negation: f.Negation, key: -1, group: -1, dep: -1}
	if f.Type == FilterCohort {
		pf.typ = filterCohort
		pf.cohort, pf.cohortOK = cohortID(f.Value)
		if pf.cohortOK {
			cp.deps = append(cp.deps, pf.cohort)
		} else {
			cp.invalid = true
		}
	} else {
		pf.typ = filterPerson
		pf.key = b.personKey(f.Key)
		pf.val = compileValue(pf.op, f.Value)
	}
	return cohortNode{filter: pf}
}

// cohortError is why cohort i cannot be evaluated, looking through the cohorts it
// depends on breadth first: the first that is invalid or missing, then any cycle.
func (p *plan) cohortError(i int) *evalError {
	if p.cohorts[i].static {
		return nil
	}
	visited := map[int]bool{i: true}
	queue := []int{i}
	for len(queue) > 0 {
		c := &p.cohorts[queue[0]]
		queue = queue[1:]
		if c.static {
			continue
		}
		if c.invalid {
			return errCohortFilters
		}
		for _, id := range c.deps {
			j, ok := p.cohortByID[id]
			if !ok {
				return errCohortNotFound
			}
			if !visited[j] {
				visited[j] = true
				queue = append(queue, j)
			}
		}
	}
	if p.cohortOrder(i) == nil {
		return errCohortCycle
	}
	return nil
}

// cohortOrder lists the dynamic cohorts that cohort i depends on, directly or not,
// each after the ones it depends on, then i; nil when they depend on each other in a
// cycle. Every cohort it reaches exists.
func (p *plan) cohortOrder(i int) []int {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[int]int{}
	var order []int
	var visit func(int) bool
	visit = func(k int) bool {
		state[k] = onPath
		for _, id := range p.cohorts[k].deps {
			j := p.cohortByID[id]
			if p.cohorts[j].static {
				continue
			}
			switch state[j] {
			case onPath:
				return false
			case unseen:
				if !visit(j) {
					return false
				}
			}
		}
		state[k] = done
		order = append(order, k)
		return true
	}
	if !visit(i) {
		return nil
	}
	return order
}

// cohortMember reports whether the person is a member of cohort id: of a static
// cohort when the request says so (Request.StaticCohorts), by the definition of a
// dynamic one. A cohort that is
// missing, deleted or cannot be evaluated is an error, which fails the flag. The
// cohorts it depends on are all evaluated first, as PostHog does, so an error in any
// of them fails it too.
func (e *evaluator) cohortMember(id int64) (bool, *evalError) {
	i, ok := e.plan.cohortByID[id]
	if !ok {
		return false, errCohortNotFound
	}
	c := &e.plan.cohorts[i]
	if c.static {
		return slices.Contains(e.req.StaticCohorts, id), nil
	}
	if c.err != nil {
		return false, c.err
	}
	for _, j := range c.order {
		if err := e.evalCohort(j); err != nil {
			return false, err
		}
	}
	return e.cohortMemo[i] == cohortIn, nil
}

// Cohort results remembered during one evaluation.
const (
	cohortUnknown uint8 = iota
	cohortOut
	cohortIn
	cohortFailed
)

// evalCohort evaluates dynamic cohort j, whose dependencies are evaluated, once per
// evaluation.
func (e *evaluator) evalCohort(j int) *evalError {
	switch e.cohortMemo[j] {
	case cohortIn, cohortOut:
		return nil
	case cohortFailed:
		return errCohortFilters
	}
	c := &e.plan.cohorts[j]
	member := false
	if !c.empty {
		m, err := e.evalCohortNode(&c.root)
		if err == errTimeout {
			return err // undecided, not failed
		}
		if err != nil {
			e.cohortMemo[j] = cohortFailed
			return err
		}
		member = m
	}
	e.cohortMemo[j] = cohortOut
	if member {
		e.cohortMemo[j] = cohortIn
	}
	return nil
}

// evalCohortNode: a group of all (AND, property) matches when every child does (so an
// empty one does), a group of any (OR) when one does; a filter with negation is
// inverted; a cohort filter matches a member for in (or no operator), a non-member for
// not_in, and nothing for any other operator.
func (e *evaluator) evalCohortNode(n *cohortNode) (bool, *evalError) {
	if f := n.filter; f != nil {
		var m bool
		if f.typ == filterCohort {
			j := e.plan.cohortByID[f.cohort]
			member := e.cohortMemo[j] == cohortIn
			if e.plan.cohorts[j].static {
				member = slices.Contains(e.req.StaticCohorts, f.cohort)
			}
			m = e.cohortFilterMatch(f, member)
		} else {
			m = matchValue(f.op, &f.val, &e.personBag()[f.key], &e.mc)
			if e.mc.meter.expired {
				return false, errTimeout
			}
		}
		return m != f.negation, nil
	}
	if n.badType {
		return false, errCohortFilters
	}
	for i := range n.children {
		m, err := e.evalCohortNode(&n.children[i])
		if err != nil {
			return false, err
		}
		if m != n.all {
			return !n.all, nil
		}
	}
	return n.all, nil
}

// cohortFilterMatch applies a cohort filter's operator to the person's membership.
func (e *evaluator) cohortFilterMatch(f *filterPlan, member bool) bool {
	switch f.op {
	case opIn:
		return member
	case opNotIn:
		return !member
	}
	return false
}
