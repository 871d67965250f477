package flags

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
	// invalid: a group of its definition is neither AND, OR nor property, or a
	// cohort filter names no cohort id.
	invalid bool
	// err is why the cohort cannot be evaluated: it or a cohort it depends on
	// (directly or not) is invalid, missing or deleted, or they depend on each other in
	// a cycle. nil when it can.
	err *evalError
}

// cohortNode is a group (all of its children, or any) or a filter.
type cohortNode struct {
	all      bool
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
			if props.Type == "" && len(props.Values) == 0 {
				cp.empty = true
			} else {
				cp.root = b.cohortGroup(&cp, props)
			}
		}
		p.cohortByID[id] = len(p.cohorts)
		p.cohorts = append(p.cohorts, cp)
	}
	for i := range p.cohorts {
		p.cohorts[i].err = p.cohortError(i)
	}
}

func (b *planBuilder) cohortGroup(cp *cohortPlan, g *PropertyGroup) cohortNode {
	n := cohortNode{}
	switch g.Type {
	case "AND", "property":
		n.all = true
	case "OR":
	default:
		cp.invalid = true
	}
	n.children = make([]cohortNode, 0, len(g.Values))
	for i := range g.Values {
		v := &g.Values[i]
		switch {
		case v.Group != nil:
			n.children = append(n.children, b.cohortGroup(cp, v.Group))
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
	// Depth first, with a mark for the cohorts on the current path.
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[int]int, len(visited))
	var cyclic func(int) bool
	cyclic = func(k int) bool {
		state[k] = onPath
		c := &p.cohorts[k]
		if !c.static {
			for _, id := range c.deps {
				j := p.cohortByID[id]
				switch state[j] {
				case onPath:
					return true
				case unseen:
					if cyclic(j) {
						return true
					}
				}
			}
		}
		state[k] = done
		return false
	}
	if cyclic(i) {
		return errCohortCycle
	}
	return nil
}

// cohortMember reports whether the person is a member of cohort id: never of a static
// cohort (hedge keeps no lists), by the definition of a dynamic one. A cohort that is
// missing, deleted or cannot be evaluated is an error, which fails the flag.
func (e *evaluator) cohortMember(id int64) (bool, *evalError) {
	i, ok := e.plan.cohortByID[id]
	if !ok {
		return false, errCohortNotFound
	}
	c := &e.plan.cohorts[i]
	if c.static {
		return false, nil
	}
	if c.err != nil {
		return false, c.err
	}
	return e.evalCohort(i), nil
}

// Cohort results remembered during one evaluation.
const (
	cohortUnknown uint8 = iota
	cohortOut
	cohortIn
)

// evalCohort evaluates cohort i, which can be evaluated, once per evaluation.
func (e *evaluator) evalCohort(i int) bool {
	switch e.cohortMemo[i] {
	case cohortIn:
		return true
	case cohortOut:
		return false
	}
	c := &e.plan.cohorts[i]
	member := !c.static && !c.empty && e.evalCohortNode(&c.root)
	e.cohortMemo[i] = cohortOut
	if member {
		e.cohortMemo[i] = cohortIn
	}
	return member
}

// evalCohortNode: a group of all (AND, property) matches when every child does (so an
// empty one does), a group of any (OR) when one does; a filter with negation is
// inverted; a cohort filter matches a member for in (or no operator), a non-member for
// not_in, and nothing for any other operator.
func (e *evaluator) evalCohortNode(n *cohortNode) bool {
	if f := n.filter; f != nil {
		var m bool
		if f.typ == filterCohort {
			m = e.cohortFilterMatch(f, e.evalCohort(e.plan.cohortByID[f.cohort]))
		} else {
			pr := &e.personBag()[f.key]
			m = matchValue(f.op, &f.val, &pr.v, pr.set, &e.mc)
		}
		return m != f.negation
	}
	for i := range n.children {
		if e.evalCohortNode(&n.children[i]) != n.all {
			return !n.all
		}
	}
	return n.all
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
