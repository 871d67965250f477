package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/hedge-analytics/hedge/flags"
	"github.com/hedge-analytics/hedge/warehouse"
)

// Cohort filters in queries. The flags package keeps cohorts' definitions and the
// warehouse must not read them (it would import flags), so admin stands between: once
// a query is decoded, every cohort filter in it ({"type": "cohort", "key": "id",
// "value": <id>}), at the top level, in a series or a step, gets its cohort resolved
// here into a warehouse.Cohort: the project's own (another project's cohort is not
// found), not deleted, its nested cohorts resolved too, at most maxCohortNesting deep
// and never in a cycle. The warehouse turns that into SQL (warehouse/cohorts.go).

// maxCohortNesting bounds how deep cohorts name cohorts in one filter.
const maxCohortNesting = 16

// maxCohortGroupDepth bounds the nesting of groups in one cohort's definition, as the
// flags package does.
const maxCohortGroupDepth = 64

// decodeQueryOf reads the query object into q, as decodeQuery does, and resolves the
// cohorts of its cohort filters for the project.
func (a *API) decodeQueryOf(ctx context.Context, team int64, raw json.RawMessage, q any) error {
	if err := decodeQuery(raw, q); err != nil {
		return err
	}
	return a.resolveCohortFilters(ctx, team, q)
}

var propertyFilterType = reflect.TypeFor[warehouse.PropertyFilter]()

// resolveCohortFilters sets the Cohort of every cohort filter that q (a pointer to a
// decoded query) holds, wherever it is.
func (a *API) resolveCohortFilters(ctx context.Context, team int64, q any) error {
	return a.cohortResolver(ctx, team, "query").walk(reflect.ValueOf(q))
}

// cohortResolver resolves the cohorts of a project; its refusals name attr. For a
// query (attr "query") a static cohort's persons are read as it is resolved, for a
// query's SQL reads no list; for the persons API they are not (Cohort.Persons).
func (a *API) cohortResolver(ctx context.Context, team int64, attr string) *cohortResolver {
	return &cohortResolver{a: a, ctx: ctx, team: team, attr: attr, done: map[int64]*warehouse.Cohort{}}
}

type cohortResolver struct {
	a    *API
	ctx  context.Context
	team int64
	attr string
	// done are the cohorts resolved for this query, by id.
	done map[int64]*warehouse.Cohort
}

func (r *cohortResolver) walk(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return r.walk(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := r.walk(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		if v.Type() == propertyFilterType {
			if !v.CanAddr() {
				return nil
			}
			f := v.Addr().Interface().(*warehouse.PropertyFilter)
			if f.Type != "cohort" {
				return nil
			}
			id, ok := cohortIDOf(f.Value)
			if !ok {
				return errValidation(r.attr, "invalid_input", fmt.Sprintf("A cohort filter's value must be a cohort id, not %s.", mustJSON(f.Value)))
			}
			c, err := r.cohort(id, nil)
			f.Cohort = c
			return err
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := r.walk(v.Field(i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// cohortIDOf reads a cohort filter's value: a number or a string of one.
func cohortIDOf(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case json.Number:
		id, err := x.Int64()
		return id, err == nil
	case string:
		id, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return id, err == nil
	}
	return 0, false
}

// cohort resolves cohort id of the project; path is the cohorts that name it, outermost
// first.
func (r *cohortResolver) cohort(id int64, path []int64) (*warehouse.Cohort, error) {
	for _, on := range path {
		if on == id {
			return nil, errValidation(r.attr, "invalid_input", fmt.Sprintf("Cohort %d depends on itself through cohort %d.", id, path[len(path)-1]))
		}
	}
	if c := r.done[id]; c != nil {
		return c, nil
	}
	if len(path) >= maxCohortNesting {
		return nil, errValidation(r.attr, "invalid_input", fmt.Sprintf("Cohorts name cohorts more than %d deep through cohort %d.", maxCohortNesting, path[0]))
	}
	stored, ok, err := r.a.flags.Cohort(r.ctx, r.team, id)
	if err != nil {
		return nil, err
	}
	if !ok || stored.Deleted {
		return nil, errValidation(r.attr, "invalid_input", fmt.Sprintf("Cohort with id %d does not exist.", id))
	}
	c := &warehouse.Cohort{ID: id, Team: r.team, Static: stored.IsStatic}
	if stored.IsStatic && r.attr == "query" {
		if c.Persons, err = r.a.warehouse.CohortPersonIDs(r.ctx, r.team, id); err != nil {
			return nil, err
		}
	} else {
		props := &stored.Filters.Properties
		switch {
		case props.Type == "" && len(props.Values) == 0:
		case props.Type != "AND" && props.Type != "OR":
			return nil, errValidation(r.attr, "invalid_input", fmt.Sprintf("Cohort %d's filters must be a group of type AND or OR, not %q.", id, props.Type))
		default:
			root, err := r.group(c, props, 0, append(path, id))
			if err != nil {
				return nil, err
			}
			c.Match = &root
		}
	}
	r.done[id] = c
	return c, nil
}

// group resolves a group of cohort c's definition at depth.
func (r *cohortResolver) group(c *warehouse.Cohort, g *flags.PropertyGroup, depth int, path []int64) (warehouse.CohortNode, error) {
	n := warehouse.CohortNode{}
	switch g.Type {
	case "AND", "property":
	case "OR":
		n.Any = true
	default:
		return n, errValidation(r.attr, "invalid_input", fmt.Sprintf("Cohort %d has a group of type %q: use AND or OR.", c.ID, g.Type))
	}
	if depth > maxCohortGroupDepth {
		return n, errValidation(r.attr, "invalid_input", fmt.Sprintf("Cohort %d nests its groups more than %d deep.", c.ID, maxCohortGroupDepth))
	}
	for i := range g.Values {
		v := &g.Values[i]
		switch {
		case v.Group != nil:
			child, err := r.group(c, v.Group, depth+1, path)
			if err != nil {
				return n, err
			}
			n.Children = append(n.Children, child)
		case v.Filter != nil:
			child, err := r.filter(c, v.Filter, path)
			if err != nil {
				return n, err
			}
			n.Children = append(n.Children, child)
		}
	}
	return n, nil
}

// filter resolves a filter of cohort c's definition: a person property filter, or a
// cohort filter whose cohort it resolves.
func (r *cohortResolver) filter(c *warehouse.Cohort, f *flags.PropertyFilter, path []int64) (warehouse.CohortNode, error) {
	var value any
	if len(f.Value) > 0 {
		if err := json.Unmarshal(f.Value, &value); err != nil {
			return warehouse.CohortNode{}, fmt.Errorf("cannot read a filter's value in cohort %d: %w", c.ID, err)
		}
	}
	pf := &warehouse.PropertyFilter{Key: f.Key, Value: value, Operator: f.Operator, Type: f.Type}
	switch f.Type {
	case flags.FilterCohort:
		id, ok := cohortIDOf(value)
		if !ok {
			return warehouse.CohortNode{}, errValidation(r.attr, "invalid_input", fmt.Sprintf("Cohort %d has a cohort filter whose value is no cohort id.", c.ID))
		}
		nested, err := r.cohort(id, path)
		if err != nil {
			return warehouse.CohortNode{}, err
		}
		pf.Cohort = nested
	case "", flags.FilterPerson:
		pf.Type = "person"
	default:
		return warehouse.CohortNode{}, errValidation(r.attr, "invalid_input", fmt.Sprintf("Cohort %d has a filter of type %q: a query reads person and cohort filters only.", c.ID, f.Type))
	}
	return warehouse.CohortNode{Filter: pf, Negated: f.Negation}, nil
}
