package warehouse

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The filters and dates that EventsQuery, TrendsQuery, FunnelsQuery and batch exports share.

// PropertyFilter is one of PostHog's property filters.
type PropertyFilter struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
	// Operator is exact (the default), is_not, icontains, not_icontains, regex,
	// not_regex, gt, gte, lt, lte, is_set or is_not_set.
	Operator string `json:"operator"`
	// Type is event (the default), person, or cohort: the event's person (as now) is
	// in the cohort whose id Value is (operator in, the default) or is not (not_in).
	Type string `json:"type"`
	// Cohort is a cohort filter's cohort, resolved by the caller (cohorts.go); a cohort
	// filter without it is refused.
	Cohort *Cohort `json:"-"`
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
		case "cohort":
			condition, bound, err := cohortFilter(&f)
			if err != nil {
				return nil, nil, false, err
			}
			conditions, args, withPersons = append(conditions, condition), append(args, bound...), true
			continue
		default:
			return nil, nil, false, queryErrorf("property filters of type %q are not supported: use event, person or cohort", f.Type)
		}
		if f.Key == "" {
			return nil, nil, false, queryErrorf("a property filter needs a key")
		}
		value, path := propertyValue(column, f.Key)
		values := filterValues(f.Value)
		var condition string
		var bound []any
		switch f.Operator {
		case "", "exact", "is_not":
			if len(values) == 0 {
				return nil, nil, false, queryErrorf("the %s filter on %q needs a value", cmp.Or(f.Operator, "exact"), f.Key)
			}
			condition = value + " IN (" + placeholders(len(values)) + ")"
			bound = append(slices.Clone(path), values...)
			if f.Operator == "is_not" {
				condition = "(" + value + " IS NULL OR NOT " + condition + ")"
				bound = append(slices.Clone(path), bound...)
			}
		case "icontains", "not_icontains":
			if len(values) != 1 {
				return nil, nil, false, queryErrorf("the %s filter on %q needs one value", f.Operator, f.Key)
			}
			condition, bound = "contains(lower("+value+"), lower(?))", append(slices.Clone(path), values[0])
			if f.Operator == "not_icontains" {
				condition, bound = "("+value+" IS NULL OR NOT "+condition+")", append(slices.Concat(path, path), values[0])
			}
		case "regex", "not_regex":
			if len(values) != 1 {
				return nil, nil, false, queryErrorf("the %s filter on %q needs one value", f.Operator, f.Key)
			}
			condition, bound = "regexp_matches("+value+", ?)", append(slices.Clone(path), values[0])
			if f.Operator == "not_regex" {
				condition, bound = "("+value+" IS NULL OR NOT "+condition+")", append(slices.Concat(path, path), values[0])
			}
		case "gt", "gte", "lt", "lte":
			number, ok := filterNumber(f.Value)
			if !ok {
				return nil, nil, false, queryErrorf("the %s filter on %q needs a number", f.Operator, f.Key)
			}
			op := map[string]string{"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[f.Operator]
			condition, bound = "TRY_CAST("+value+" AS DOUBLE) "+op+" ?", append(slices.Clone(path), number)
		case "is_set":
			condition, bound = value+" IS NOT NULL", path
		case "is_not_set":
			condition, bound = value+" IS NULL", path
		default:
			return nil, nil, false, queryErrorf("the property filter operator %q is not supported", f.Operator)
		}
		conditions, args = append(conditions, condition), append(args, bound...)
	}
	return conditions, args, withPersons, nil
}

// BreakdownFilter splits a trend's series, or a funnel, by the values of an event or
// person property: the 25 most frequent values, then the rest together.
type BreakdownFilter struct {
	Breakdown     string `json:"breakdown"`
	BreakdownType string `json:"breakdown_type"` // event (the default) or person
}

// column is the column of the events view whose properties b breaks down by: the
// event's, or its person's (ofPersons: the view that joins persons).
func (b *BreakdownFilter) column() (column string, ofPersons bool, err error) {
	switch b.BreakdownType {
	case "", "event":
		return "properties", false, nil
	case "person":
		return "person_properties", true, nil
	}
	return "", false, queryErrorf("breakdown_type must be event or person, not %q", b.BreakdownType)
}

// propertyValue is the SQL of key's value in column (properties, or person_properties
// of the view that joins persons), and what it binds. A property of events that a
// project may have a column for (a fixed materialized key, or any key a project may
// choose: literalPath) is written as hogql.Rewrite writes it, its path a literal,
// which Queries.open turns into a read of its column when the project has one
// (hogql.Materialize); any other property's path is bound, for a key may hold anything.
func propertyValue(column, key string) (sql string, args []any) {
	if column == "properties" && literalPath(key) {
		return `json_extract_string(properties, '$."` + key + `"')`, nil
	}
	return "json_extract_string(" + column + ", ?)", []any{jsonPointer(key)}
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

// formatNumber writes f as JSON does: a whole number without a fraction.
func formatNumber(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprint(f)
}

// filterNumber is the number a gt, gte, lt or lte filter compares with: a number, a
// numeric string, or a list of one of them.
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

// placeholders is n parameters of a list: "?, ?, ?".
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// relativeDate is parseDate's "-<n><unit>".
var relativeDate = regexp.MustCompile(`^-(\d+)([hdwmqy])$`)

// maxRelative bounds the count of a relative date: 1,000,000 hours is 114 years, and
// longer units reach the year 1 sooner (a date before it is refused too).
const maxRelative = 1_000_000

// parseDate reads a date of a query in the project's time zone: "-<n><unit>" (hours,
// days, weeks, months, quarters, years ago; days and longer from the start of that day),
// "dStart", "mStart", "yStart" (the start of today, of this month, of this year), or an
// ISO date or time. A date alone is the start of that day, or its end when end is set.
func parseDate(s string, scope Scope, now time.Time, end bool) (time.Time, error) {
	loc, err := scope.location()
	if err != nil {
		return time.Time{}, err
	}
	local := now.In(loc)
	y, mo, d := local.Date()
	today := time.Date(y, mo, d, 0, 0, 0, 0, loc)
	switch s {
	case "dStart":
		return today, nil
	case "mStart":
		return time.Date(y, mo, 1, 0, 0, 0, 0, loc), nil
	case "yStart":
		return time.Date(y, 1, 1, 0, 0, 0, 0, loc), nil
	}
	if m := relativeDate.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > maxRelative {
			return time.Time{}, queryErrorf("%q is too far in the past", s)
		}
		var t time.Time
		switch m[2] {
		case "h":
			t = local.Add(-time.Duration(n) * time.Hour).Truncate(time.Hour)
		case "d":
			t = today.AddDate(0, 0, -n)
		case "w":
			t = today.AddDate(0, 0, -7*n)
		case "m":
			t = today.AddDate(0, -n, 0)
		case "q":
			t = today.AddDate(0, -3*n, 0)
		case "y":
			t = today.AddDate(-n, 0, 0)
		}
		if t.Year() < 1 {
			return time.Time{}, queryErrorf("%q is too far in the past", s)
		}
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		if end {
			return t.AddDate(0, 0, 1), nil
		}
		return t, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, queryErrorf("%q is not a date: use an ISO date or time, or a relative date like -7d", s)
}
