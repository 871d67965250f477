package warehouse

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hedge-analytics/hedge/warehouse/hogql"
)

// EventsQuery is PostHog's EventsQuery: the project's events, newest first by default,
// with chosen columns. Select, Where and OrderBy items are HogQL expressions, each one
// expression (a select item may end with PostHog's "-- label"), checked like any HogQL
// query; filter values are bound as parameters. The select items person and
// person_display_name are PostHog's computed person columns.
type EventsQuery struct {
	Select     []string         `json:"select"`
	Event      string           `json:"event"`
	Properties []PropertyFilter `json:"properties"`
	Where      []string         `json:"where"`
	// After and Before bound the timestamp: ISO dates or times, or relative like "-7d"
	// (see parseDate). After defaults to "-24h", as in PostHog; "all" lifts it.
	After   string   `json:"after"`
	Before  string   `json:"before"`
	OrderBy []string `json:"orderBy"`
	Limit   int      `json:"limit"`
	Offset  int      `json:"offset"`
}

// Events query limits, PostHog's.
const (
	defaultEventsLimit = 100
	maxEventsLimit     = 10000
)

// starColumns are what "*" selects.
var starColumns = []string{"uuid", "event", "properties", "timestamp", "distinct_id", "person_id"}

// Events runs an EventsQuery.
func (q *Queries) Events(ctx context.Context, scope Scope, eq EventsQuery, now time.Time) (*Result, error) {
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	if eq.Limit == 0 {
		eq.Limit = defaultEventsLimit
	}
	if eq.Limit < 0 || eq.Limit > maxEventsLimit {
		return nil, queryErrorf("limit must be between 1 and %d", maxEventsLimit)
	}
	if eq.Offset < 0 {
		return nil, queryErrorf("offset must not be negative")
	}
	query, args, columns, withPersons, err := q.eventsSQL(ctx, scope, eq, now)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	result, err := q.run(ctx, scope, query, personJoinOf(withPersons), eq.Limit, args...)
	if err != nil {
		return nil, err
	}
	if len(result.Columns) == len(columns) { // else an item is several columns (COLUMNS(...)): DuckDB's names
		result.Columns = columns
	}
	return result, nil
}

// eventsSQL is the query of eq, whose Limit and Offset are valid, with the values it
// binds; columns are the names PostHog answers its columns under (each select item as
// written), and withPersons whether it reads person properties. Each HogQL item is
// parsed, on the query pool, to make sure it is one item of its kind (fragment); the
// whole query is checked when it runs.
func (q *Queries) eventsSQL(ctx context.Context, scope Scope, eq EventsQuery, now time.Time) (query string, args []any,
	columns []string, withPersons bool, err error) {
	// Each select, where and orderBy item is checked alone to be one expression (one
	// ORDER BY term), so that items can be joined without one reaching into another:
	// a "-- comment" ending an item, or a stray parenthesis, cannot hide or open the
	// rest of the query. Items go on lines of their own.
	var selects []string
	// As in PostHog, a select list with aggregates groups by its other items and, unless
	// told otherwise, orders by count() or else the first aggregate, largest first.
	grouped, orderAggregate := false, ""
	for _, item := range eq.Select {
		expr := hogql.StripLabel(item)
		switch strings.ToLower(expr) {
		case "*":
			columns, selects = append(columns, starColumns...), append(selects, starColumns...)
			continue
		case "person":
			expr, withPersons = personColumn, true
		case "person_display_name":
			expr, withPersons = personDisplayNameColumn, true
		}
		checked, err := q.fragment(ctx, fragmentSelect, expr)
		if err != nil {
			return "", nil, nil, false, err
		}
		if checked.aggregate {
			position := strconv.Itoa(len(selects) + 1)
			if !grouped || strings.EqualFold(strings.Join(strings.Fields(expr), ""), "count()") {
				orderAggregate = position + " DESC"
			}
			grouped = true
		}
		columns, selects, withPersons = append(columns, item), append(selects, checked.sql), withPersons || checked.usesPerson
	}
	if len(columns) == 0 {
		columns, selects = starColumns, starColumns
	}
	var where []string
	if eq.Event != "" {
		where, args = append(where, "event = ?"), append(args, eq.Event)
	}
	after := eq.After
	if after == "" {
		after = "-24h"
	}
	if after != "all" {
		from, err := parseDate(after, scope, now, false)
		if err != nil {
			return "", nil, nil, false, err
		}
		where, args = append(where, `"timestamp" >= ?`), append(args, from)
	}
	if eq.Before != "" {
		to, err := parseDate(eq.Before, scope, now, false) // a date alone: before that day
		if err != nil {
			return "", nil, nil, false, err
		}
		where, args = append(where, `"timestamp" < ?`), append(args, to)
	}
	filters, filterArgs, filterPersons, err := propertyFilters(eq.Properties)
	if err != nil {
		return "", nil, nil, false, err
	}
	where, args, withPersons = append(where, filters...), append(args, filterArgs...), withPersons || filterPersons
	for _, w := range eq.Where {
		checked, err := q.fragment(ctx, fragmentWhere, w)
		if err != nil {
			return "", nil, nil, false, err
		}
		where, withPersons = append(where, "("+checked.sql+"\n)"), withPersons || checked.usesPerson
	}
	orderBy := []string{`"timestamp" DESC`}
	if grouped {
		orderBy = []string{orderAggregate}
	}
	if len(eq.OrderBy) > 0 {
		orderBy = nil
	}
	for _, o := range eq.OrderBy {
		checked, err := q.fragment(ctx, fragmentOrderBy, o)
		if err != nil {
			return "", nil, nil, false, err
		}
		orderBy, withPersons = append(orderBy, checked.sql), withPersons || checked.usesPerson
	}
	conditions := ""
	if len(where) > 0 {
		conditions = "\nWHERE " + strings.Join(where, "\nAND ")
	}
	order := "\nORDER BY " + strings.Join(orderBy, ",\n")
	page := fmt.Sprintf("\nLIMIT %d OFFSET %d", eq.Limit+1, eq.Offset)
	sql := "SELECT " + strings.Join(selects, ",\n") + "\nFROM events"
	if grouped {
		return sql + conditions + "\nGROUP BY ALL" + order + page, args, columns, withPersons, nil
	}
	// The page's events are chosen first, by their time and uuid alone, and only they
	// are read whole: the select items (the properties text, the person's properties
	// through the view's joins) are read for a page, not for every event the
	// conditions pass. The newest 100 of a day of 10 million events: 135 against 25 ms.
	sql += "\nWHERE (\"timestamp\", uuid) IN (SELECT \"timestamp\", uuid FROM events" + conditions + order + page + ")" +
		order + fmt.Sprintf("\nLIMIT %d", eq.Limit+1)
	return sql, args, columns, withPersons, nil
}

// The person columns of PostHog's events table, which PostHog computes: the event's
// person, and the name it is shown by (the first of PostHog's default display name
// properties that is set, else the distinct id).
const (
	personColumn = `struct_pack(uuid := person_id::VARCHAR, distinct_id := distinct_id,
		properties := json(coalesce(person_properties, '{}')))`
	personDisplayNameColumn = `struct_pack(display_name := coalesce(
			json_extract_string(person_properties, '$.email'), json_extract_string(person_properties, '$.Email'),
			json_extract_string(person_properties, '$.name'), json_extract_string(person_properties, '$.Name'),
			json_extract_string(person_properties, '$.username'), json_extract_string(person_properties, '$.Username'),
			json_extract_string(person_properties, '$.UserName'), distinct_id),
		id := person_id::VARCHAR, distinct_id := distinct_id)`
)

// The places of an EventsQuery a HogQL item goes: a column, a condition, an ORDER BY
// term. Each is a query template with a slot for the item.
type fragmentKind int

const (
	fragmentSelect fragmentKind = iota
	fragmentWhere
	fragmentOrderBy
)

var fragmentTemplates = [...]struct {
	name, prefix, suffix string
	// slot takes the item out of the parsed template, reporting whether its place
	// held exactly one.
	slot func(node map[string]any) bool
}{
	fragmentSelect: {"select", "SELECT ", "\nFROM events", func(n map[string]any) bool {
		list, _ := n["select_list"].([]any)
		delete(n, "select_list")
		return len(list) == 1
	}},
	fragmentWhere: {"where", "SELECT 1 FROM events WHERE ", "\n", func(n map[string]any) bool {
		ok := n["where_clause"] != nil
		delete(n, "where_clause")
		return ok
	}},
	fragmentOrderBy: {"orderBy", "SELECT 1 FROM events ORDER BY ", "\n", func(n map[string]any) bool {
		modifiers, _ := n["modifiers"].([]any)
		if len(modifiers) != 1 {
			return false
		}
		order, _ := modifiers[0].(map[string]any)
		orders, _ := order["orders"].([]any)
		delete(order, "orders")
		return len(orders) == 1
	}},
}

// checkedFragment is an item of an EventsQuery turned into DuckDB's SQL.
type checkedFragment struct {
	sql        string
	usesPerson bool // it reads person properties: the events view joins persons
	aggregate  bool // it calls an aggregate function
}

// fragment turns one HogQL item of an EventsQuery into DuckDB's SQL and makes sure it
// is exactly one item of its kind: the parse of the template with the item, once the
// item is taken out, must equal the parse of the template with a plain one. What the
// item may read is checked with the whole query, by run.
func (q *Queries) fragment(ctx context.Context, kind fragmentKind, item string) (checkedFragment, error) {
	t := fragmentTemplates[kind]
	rewritten, usesPerson, err := hogql.Rewrite(item)
	if err != nil {
		return checkedFragment{}, queryError(err)
	}
	// aggregate is whether the item, as parsed in the template, calls an aggregate:
	// looked at before the template's slot takes the item out of the parse.
	aggregate := false
	shape := func(sql string) (any, error) {
		if err := checkLength(sql); err != nil {
			return nil, err
		}
		var serialized string
		if err := q.db.QueryRowContext(ctx, `SELECT json_serialize_sql(?::VARCHAR)::VARCHAR`, sql).Scan(&serialized); err != nil {
			return nil, fmt.Errorf("cannot parse a query: %w", err)
		}
		var parsed struct {
			Statements []struct {
				Node map[string]any `json:"node"`
			} `json:"statements"`
		}
		if err := json.Unmarshal([]byte(serialized), &parsed); err != nil {
			return nil, fmt.Errorf("cannot read the parsed query: %w", err)
		}
		if len(parsed.Statements) == 1 && parsed.Statements[0].Node != nil {
			aggregate = hogql.CallsAggregate(parsed.Statements[0].Node)
		}
		if len(parsed.Statements) != 1 || parsed.Statements[0].Node == nil || !t.slot(parsed.Statements[0].Node) {
			return nil, nil
		}
		return hogql.WithoutLocations(parsed.Statements[0].Node), nil
	}
	got, err := shape(t.prefix + rewritten + t.suffix)
	if err != nil {
		return checkedFragment{}, err
	}
	itemAggregates := aggregate
	want, err := shape(t.prefix + "1" + t.suffix)
	if err != nil {
		return checkedFragment{}, err
	}
	if got == nil || want == nil || !reflect.DeepEqual(got, want) {
		return checkedFragment{}, queryErrorf("%s item %q must be one HogQL expression", t.name, item)
	}
	return checkedFragment{sql: rewritten, usesPerson: usesPerson, aggregate: itemAggregates}, nil
}
