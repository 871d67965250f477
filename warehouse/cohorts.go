package warehouse

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Cohorts as queries and the persons API filter by them. The flags package keeps a
// cohort's definition (meta.cohorts); the warehouse never reads it: its caller
// resolves a cohort filter's id to a Cohort (admin, which checks the cohort is the
// project's and refuses cycles) and the warehouse turns that into SQL over the
// person's id and properties. The members of static cohorts are person data, kept
// here in cohort_people (migration 0020) as the distinct ids an upload listed.

// Cohort is a cohort resolved for a query: a static cohort's members are the persons
// its distinct ids (cohort_people) belong to now; a property cohort's are the persons
// whose properties match Match.
type Cohort struct {
	ID int64
	// Team is the project the cohort belongs to, which its caller checked is the
	// query's.
	Team   int64
	Static bool
	// Persons are a static cohort's persons, as CohortPersonIDs read them when the
	// cohort was resolved for a query; nil: read through its list, which only
	// Persons and CohortCounts may (a query's SQL that does is refused).
	Persons []string
	// Match is a property cohort's definition; nil: it defines nothing and has no
	// member.
	Match *CohortNode
}

// CohortNode is a group of a cohort's definition (all of Children, or any: Any) or a
// filter: a person property filter, or a cohort filter (Type cohort, its Cohort
// resolved, operator in or not_in). Negated inverts it.
type CohortNode struct {
	Any      bool
	Children []CohortNode
	Filter   *PropertyFilter
	Negated  bool
}

// maxCohortNodes bounds how many groups and filters a cohort and the cohorts it names
// add to one query.
const maxCohortNodes = 1000

// cohortCondition is the SQL condition, over the columns person_id and
// person_properties (the events view's that joins persons, or cohortPersons' over
// persons), that a person is in c; never NULL.
func cohortCondition(c *Cohort) (string, []any, error) {
	budget := maxCohortNodes
	return c.condition(&budget)
}

func (c *Cohort) condition(budget *int) (string, []any, error) {
	switch {
	case c.Static && c.Persons == nil:
		// Read through the lists, which only SQL outside the query views may (Persons,
		// CohortCounts).
		return `person_id IN (SELECT d.person_id FROM person_distinct_ids d JOIN cohort_people m
			ON m.team_id = d.team_id AND m.distinct_id = d.distinct_id WHERE m.team_id = ? AND m.cohort_id = ?)`,
			[]any{c.Team, c.ID}, nil
	case c.Static:
		// The members' persons are read before (CohortPersonIDs): a query's SQL reads
		// the events, persons and groups views only (hogql.Check).
		return `coalesce(person_id IN (SELECT unnest(?::VARCHAR[])::UUID), FALSE)`, []any{c.Persons}, nil
	case c.Match == nil:
		return "FALSE", nil, nil
	}
	return c.Match.condition(c, budget)
}

func (n *CohortNode) condition(c *Cohort, budget *int) (sql string, args []any, err error) {
	if *budget--; *budget < 0 {
		return "", nil, queryErrorf("cohort %d and the cohorts it names have more than %d groups and filters", c.ID, maxCohortNodes)
	}
	switch f := n.Filter; {
	case f != nil && f.Type == "cohort":
		if f.Cohort == nil {
			return "", nil, queryErrorf("cohort %d names a cohort that was not resolved", c.ID)
		}
		sql, args, err = f.Cohort.condition(budget)
		if err != nil {
			return "", nil, err
		}
		switch f.Operator {
		case "", "in":
		case "not_in":
			sql = "NOT " + sql
		default:
			return "", nil, queryErrorf("cohort %d: a cohort filter's operator must be in or not_in, not %q", c.ID, f.Operator)
		}
		sql = "(" + sql + ")"
	case f != nil:
		person := *f
		person.Type = "person"
		conditions, bound, _, err := propertyFilters([]PropertyFilter{person})
		if err != nil {
			if qe := (*QueryError)(nil); errors.As(err, &qe) {
				return "", nil, queryErrorf("cohort %d: %s", c.ID, qe.Detail)
			}
			return "", nil, err
		}
		sql, args = "coalesce(("+conditions[0]+"), FALSE)", bound
	default:
		join, empty := " AND ", "TRUE"
		if n.Any {
			join, empty = " OR ", "FALSE"
		}
		if len(n.Children) == 0 {
			sql = empty
			break
		}
		parts := make([]string, len(n.Children))
		for i := range n.Children {
			part, bound, err := n.Children[i].condition(c, budget)
			if err != nil {
				return "", nil, err
			}
			parts[i], args = part, append(args, bound...)
		}
		sql = "(" + strings.Join(parts, join) + ")"
	}
	if n.Negated {
		sql = "(NOT " + sql + ")"
	}
	return sql, args, nil
}

// cohortFilter is the condition of a query's cohort filter f over the events view
// that joins persons: the event's person (as now) is in the cohort, or is not (not_in).
func cohortFilter(f *PropertyFilter) (string, []any, error) {
	if f.Cohort == nil {
		return "", nil, queryErrorf("cohort filters are not supported here")
	}
	sql, args, err := cohortCondition(f.Cohort)
	if err != nil {
		return "", nil, err
	}
	switch f.Operator {
	case "", "in":
		return sql, args, nil
	case "not_in":
		return "NOT " + sql, args, nil
	}
	return "", nil, queryErrorf("the operator of the filter on cohort %d must be in or not_in, not %q", f.Cohort.ID, f.Operator)
}

// maxCohortPeople bounds the distinct ids of one static cohort.
const maxCohortPeople = 1_000_000

// AddCohortPeople adds distinct ids to the members of the project's static cohort
// (ids it has are kept once), and returns how many it lists now. An id no event named
// yet is kept: its person joins the cohort's persons when it comes. More than
// maxCohortPeople ids in all is a *QueryError and adds none.
func (w *Warehouse) AddCohortPeople(ctx context.Context, team, cohort int64, distinctIDs []string) (int, error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("cannot add to the members of cohort %d: %w", cohort, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO cohort_people (team_id, cohort_id, distinct_id)
		SELECT DISTINCT ?, ?, unnest(?::VARCHAR[]) ON CONFLICT DO NOTHING`, team, cohort, distinctIDs); err != nil {
		return 0, fmt.Errorf("cannot add to the members of cohort %d: %w", cohort, err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM cohort_people WHERE team_id = ? AND cohort_id = ?`, team, cohort).Scan(&n); err != nil {
		return 0, fmt.Errorf("cannot count the members of cohort %d: %w", cohort, err)
	}
	if n > maxCohortPeople {
		return 0, queryErrorf("a static cohort lists at most %d distinct ids; cohort %d would list %d", maxCohortPeople, cohort, n)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("cannot add to the members of cohort %d: %w", cohort, err)
	}
	return n, nil
}

// CohortPersonIDs are the ids of the persons that the distinct ids of the project's
// static cohort belong to now.
func (w *Warehouse) CohortPersonIDs(ctx context.Context, team, cohort int64) ([]string, error) {
	rows, err := w.db.QueryContext(ctx, `SELECT DISTINCT d.person_id::VARCHAR FROM cohort_people m JOIN person_distinct_ids d
		ON d.team_id = m.team_id AND d.distinct_id = m.distinct_id WHERE m.team_id = ? AND m.cohort_id = ?`, team, cohort)
	if err != nil {
		return nil, fmt.Errorf("cannot read the persons of cohort %d: %w", cohort, err)
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("cannot read the persons of cohort %d: %w", cohort, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the persons of cohort %d: %w", cohort, err)
	}
	return ids, nil
}

// StaticCohortsOf are those of the project's static cohorts (ids) whose lists hold
// distinctID or another distinct id of its person now: what flag evaluation needs of
// them.
func (w *Warehouse) StaticCohortsOf(ctx context.Context, team int64, distinctID string, cohorts []int64) ([]int64, error) {
	rows, err := w.db.QueryContext(ctx, `SELECT DISTINCT cohort_id FROM cohort_people
		WHERE team_id = ? AND cohort_id IN (SELECT unnest(?::BIGINT[])) AND (distinct_id = ? OR distinct_id IN (
			SELECT d.distinct_id FROM person_distinct_ids d JOIN person_distinct_ids me ON me.team_id = d.team_id AND me.person_id = d.person_id
			WHERE me.team_id = ? AND me.distinct_id = ?))`, team, cohorts, distinctID, team, distinctID)
	if err != nil {
		return nil, fmt.Errorf("cannot read the static cohorts of a person of project %d: %w", team, err)
	}
	defer rows.Close()
	var in []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("cannot read the static cohorts of a person of project %d: %w", team, err)
		}
		in = append(in, id)
	}
	return in, rows.Err()
}

// CohortCounts are how many persons are in each of cohorts (of project team) now, in
// one read of the project's persons: a listing of cohorts counts them all at once,
// not a scan a cohort. A cohort whose definition a query refuses (cohortCondition's
// QueryError) has no count (nil).
func (w *Warehouse) CohortCounts(ctx context.Context, team int64, cohorts []*Cohort) ([]*int, error) {
	counts := make([]*int, len(cohorts))
	var columns []string
	var args []any
	var counted []int // the index in cohorts of each column
	for i, c := range cohorts {
		condition, bound, err := cohortCondition(c)
		var refused *QueryError
		if errors.As(err, &refused) {
			continue
		}
		if err != nil {
			return nil, err
		}
		columns, args, counted = append(columns, "count(*) FILTER (WHERE "+condition+")"), append(args, bound...), append(counted, i)
	}
	if len(columns) == 0 {
		return counts, nil
	}
	values := make([]any, len(columns))
	for k := range values {
		values[k] = new(int)
	}
	err := w.db.QueryRowContext(ctx, `SELECT `+strings.Join(columns, ", ")+` FROM (SELECT id AS person_id, properties AS person_properties
		FROM persons WHERE team_id = ?)`, append(args, team)...).Scan(values...)
	if err != nil {
		return nil, fmt.Errorf("cannot count the persons of %d cohorts of project %d: %w", len(columns), team, err)
	}
	for k, i := range counted {
		counts[i] = values[k].(*int)
	}
	return counts, nil
}
