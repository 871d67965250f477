package warehouse

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"
)

// EventsQuery is PostHog's EventsQuery: the project's events, newest first by default,
// with chosen columns. Select, Where and OrderBy items are HogQL expressions, checked
// like any HogQL query; filter values are bound as parameters.
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

// PropertyFilter is one of PostHog's property filters.
type PropertyFilter struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
	// Operator is exact (the default), is_not, icontains, not_icontains, regex,
	// not_regex, gt, gte, lt, lte, is_set or is_not_set.
	Operator string `json:"operator"`
	// Type is event (the default) or person.
	Type string `json:"type"`
}

// starColumns are what "*" selects.
var starColumns = []string{"uuid", "event", "properties", "timestamp", "distinct_id", "person_id"}

// Events runs an EventsQuery.
func (q *Queries) Events(ctx context.Context, scope Scope, eq EventsQuery, now time.Time) (*Result, error) {
	if eq.Limit == 0 {
		eq.Limit = defaultEventsLimit
	}
	if eq.Limit < 0 || eq.Limit > maxEventsLimit {
		return nil, queryErrorf("limit must be between 1 and %d", maxEventsLimit)
	}
	if eq.Offset < 0 {
		return nil, queryErrorf("offset must not be negative")
	}
	var columns []string
	for _, s := range eq.Select {
		if strings.TrimSpace(s) == "*" {
			columns = append(columns, starColumns...)
		} else {
			columns = append(columns, s)
		}
	}
	if len(columns) == 0 {
		columns = starColumns
	}
	var where []string
	var args []any
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
			return nil, err
		}
		where, args = append(where, `"timestamp" >= ?`), append(args, from)
	}
	if eq.Before != "" {
		to, err := parseDate(eq.Before, scope, now, false) // a date alone: before that day
		if err != nil {
			return nil, err
		}
		where, args = append(where, `"timestamp" < ?`), append(args, to)
	}
	filters, filterArgs, withPersons, err := propertyFilters(eq.Properties)
	if err != nil {
		return nil, err
	}
	where, args = append(where, filters...), append(args, filterArgs...)
	for _, w := range eq.Where {
		where = append(where, "("+w+")")
	}
	orderBy := eq.OrderBy
	if len(orderBy) == 0 {
		orderBy = []string{`"timestamp" DESC`}
	}
	sql := "SELECT " + strings.Join(columns, ", ") + " FROM events"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += fmt.Sprintf(" ORDER BY %s LIMIT %d OFFSET %d", strings.Join(orderBy, ", "), eq.Limit+1, eq.Offset)
	rewritten, usesPerson, err := rewriteHogQL(sql)
	if err != nil {
		return nil, &QueryError{Detail: err.Error()}
	}
	result, err := q.run(ctx, scope, rewritten, withPersons || usesPerson, eq.Limit, args...)
	if err != nil {
		return nil, err
	}
	result.Columns = columns
	return result, nil
}

// propertyFilters turns PostHog property filters into SQL conditions over the events
// view, every value and property path bound. withPersons: a filter is on person
// properties, which needs the view that joins persons.
func propertyFilters(filters []PropertyFilter) (conditions []string, args []any, withPersons bool, err error) {
	for _, f := range filters {
		column := "properties"
		switch f.Type {
		case "", "event":
		case "person":
			column, withPersons = "person_properties", true
		default:
			return nil, nil, false, queryErrorf("property filters of type %q are not supported: use event or person", f.Type)
		}
		if f.Key == "" {
			return nil, nil, false, queryErrorf("a property filter needs a key")
		}
		value := "json_extract_string(" + column + ", ?)"
		path := jsonPointer(f.Key)
		values := filterValues(f.Value)
		var condition string
		var bound []any
		switch f.Operator {
		case "", "exact", "is_not":
			if len(values) == 0 {
				return nil, nil, false, queryErrorf("the %s filter on %q needs a value", cmp.Or(f.Operator, "exact"), f.Key)
			}
			condition = value + " IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(values)), ", ") + ")"
			bound = append([]any{path}, values...)
			if f.Operator == "is_not" {
				condition = "(" + value + " IS NULL OR NOT " + condition + ")"
				bound = append([]any{path}, bound...)
			}
		case "icontains", "not_icontains":
			if len(values) != 1 {
				return nil, nil, false, queryErrorf("the %s filter on %q needs one value", f.Operator, f.Key)
			}
			condition, bound = "contains(lower("+value+"), lower(?))", []any{path, values[0]}
			if f.Operator == "not_icontains" {
				condition, bound = "("+value+" IS NULL OR NOT "+condition+")", []any{path, path, values[0]}
			}
		case "regex", "not_regex":
			if len(values) != 1 {
				return nil, nil, false, queryErrorf("the %s filter on %q needs one value", f.Operator, f.Key)
			}
			condition, bound = "regexp_matches("+value+", ?)", []any{path, values[0]}
			if f.Operator == "not_regex" {
				condition, bound = "("+value+" IS NULL OR NOT "+condition+")", []any{path, path, values[0]}
			}
		case "gt", "gte", "lt", "lte":
			number, ok := filterNumber(f.Value)
			if !ok {
				return nil, nil, false, queryErrorf("the %s filter on %q needs a number", f.Operator, f.Key)
			}
			op := map[string]string{"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[f.Operator]
			condition, bound = "TRY_CAST("+value+" AS DOUBLE) "+op+" ?", []any{path, number}
		case "is_set":
			condition, bound = value+" IS NOT NULL", []any{path}
		case "is_not_set":
			condition, bound = value+" IS NULL", []any{path}
		default:
			return nil, nil, false, queryErrorf("the property filter operator %q is not supported", f.Operator)
		}
		conditions, args = append(conditions, condition), append(args, bound...)
	}
	return conditions, args, withPersons, nil
}

// jsonPointer is the JSON pointer (RFC 6901) to a top-level key: any key, escaped.
func jsonPointer(key string) string {
	return "/" + strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// filterValues are a filter's values as the text json_extract_string gives: a list's
// items, or the one value; numbers and booleans as JSON writes them.
func filterValues(v any) []any {
	var items []any
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		items = v
	default:
		items = []any{v}
	}
	values := make([]any, 0, len(items))
	for _, item := range items {
		switch item := item.(type) {
		case string:
			values = append(values, item)
		case float64:
			values = append(values, formatNumber(item))
		case bool:
			values = append(values, fmt.Sprint(item))
		}
	}
	return values
}

func formatNumber(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprint(f)
}

func filterNumber(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case string:
		var f float64
		_, err := fmt.Sscan(v, &f)
		return f, err == nil
	case []any:
		if len(v) == 1 {
			return filterNumber(v[0])
		}
	}
	return 0, false
}
