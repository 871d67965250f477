package warehouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // project time zones, whatever the host has
)

// TrendsQuery is PostHog's TrendsQuery: counts of events per interval, per series,
// optionally broken down by a property.
type TrendsQuery struct {
	Series []TrendsSeries `json:"series"`
	// Interval is hour, day (the default), week or month, in the project's time zone;
	// weeks start on the project's week_start_day.
	Interval        string           `json:"interval"`
	DateRange       DateRange        `json:"dateRange"`
	BreakdownFilter *BreakdownFilter `json:"breakdownFilter"`
	// Properties filter every series.
	Properties []PropertyFilter `json:"properties"`
	// TrendsFilter.Display chooses, as PostHog's does, between a line per interval and a
	// value for the whole range (totalValue).
	TrendsFilter *TrendsFilter `json:"trendsFilter"`
	// CompareFilter.Compare answers every line twice: over the range (compare_label
	// current) and over the range as long just before it (previous).
	CompareFilter *CompareFilter `json:"compareFilter"`
}

// CompareFilter is PostHog's compareFilter, without compare_to (a period other than
// the one just before).
type CompareFilter struct {
	Compare bool `json:"compare"`
}

// TrendsFilter is the part of PostHog's trendsFilter that changes the answer.
type TrendsFilter struct {
	Display string `json:"display"`
	// Formula combines the series (A, B...) into the lines answered instead of theirs
	// (query_trends_formula.go).
	Formula string `json:"formula"`
}

// totalValue reports a display of one value per line for the whole range (a number, a
// pie, bars of totals, a table, a map): PostHog answers those with aggregated_value,
// computed over the range, and no data per interval. A sum of the intervals would
// count a person active on three days three times.
func (tq TrendsQuery) totalValue() bool {
	if tq.TrendsFilter == nil {
		return false
	}
	switch tq.TrendsFilter.Display {
	case "BoldNumber", "ActionsPie", "ActionsBarValue", "ActionsTable", "WorldMap":
		return true
	}
	return false
}

// DateRange is the span of time an insight query reads: [from, to) as dates resolves it.
type DateRange struct {
	// DateFrom is an ISO date or time, or relative: "-7d", "-24h", "-4w", "-3m",
	// "-1y", "dStart", "mStart", "yStart", or "all" (default "-7d").
	DateFrom string `json:"date_from"`
	// DateTo is the same, or empty for now; a date alone includes that whole day.
	DateTo string `json:"date_to"`
}

// TrendsSeries is one line of a trend: an event (nil or "" for every event) and how
// its occurrences are counted.
type TrendsSeries struct {
	Kind  string  `json:"kind"`
	Event *string `json:"event"`
	Name  string  `json:"name"`
	// Math is total (the default: events), dau (distinct persons), weekly_active and
	// monthly_active (distinct persons of the 7 or 30 days up to each), unique_group
	// (distinct groups of MathGroupTypeIndex), unique_session (distinct
	// $session_id), or an aggregate of MathProperty's
	// numbers (propertyMath: sum, avg, min, max, median, p90, p95, p99).
	Math               string `json:"math"`
	MathGroupTypeIndex *int   `json:"math_group_type_index"`
	// MathProperty is the property a property math aggregates, of the events or, with
	// MathPropertyType person_properties, of their persons. Values that are not
	// numbers (nor text of one) are left out, as events without the property are;
	// an interval without any value is 0, as PostHog answers.
	MathProperty     string           `json:"math_property"`
	MathPropertyType string           `json:"math_property_type"`
	Properties       []PropertyFilter `json:"properties"`
}

// propertyMath are the aggregates of a property's numbers a series may take, as
// PostHog names them, and DuckDB's of x. Quantiles interpolate, as ClickHouse's
// quantile does for PostHog.
var propertyMath = map[string]string{
	"sum": "sum(x)", "avg": "avg(x)", "min": "min(x)", "max": "max(x)",
	"median": "quantile_cont(x, 0.5)", "p90": "quantile_cont(x, 0.9)", "p95": "quantile_cont(x, 0.95)", "p99": "quantile_cont(x, 0.99)",
}

// Breakdown values that stand for the rest and for events without the property, as
// PostHog names them.
const (
	breakdownOther = "$$_posthog_breakdown_other_$$"
	breakdownNull  = "$$_posthog_breakdown_null_$$"
	breakdownLimit = 25
)

// TrendsResult is the answer of a TrendsQuery, in PostHog's shape.
type TrendsResult struct {
	Results  []TrendsLine `json:"results"`
	HasMore  bool         `json:"hasMore"`
	Timezone string       `json:"timezone"`
}

// TrendsLine is one series (or one breakdown value of one series) over the intervals,
// or for a display of totals (TrendsQuery.totalValue) its AggregatedValue over the
// whole range, with Labels, Days and Data empty and Count 0, as PostHog answers.
type TrendsLine struct {
	Label          string       `json:"label"`
	Labels         []string     `json:"labels"`
	Days           []string     `json:"days"`
	Data           []float64    `json:"data"`
	Count          float64      `json:"count"`
	Action         TrendsAction `json:"action"`
	BreakdownValue any          `json:"breakdown_value,omitempty"`
	// Compare and CompareLabel (current or previous) mark the lines of a comparison
	// with the previous period, whose Days are of their own range.
	Compare      bool   `json:"compare,omitempty"`
	CompareLabel string `json:"compare_label,omitempty"`
	// AggregatedValue is the series' count over the whole range: for dau the persons
	// active in it, each once, however many intervals they were active in.
	AggregatedValue *float64 `json:"aggregated_value,omitempty"`
}

// TrendsAction is what a line counts, in PostHog's words: the series' event (ID),
// its name, math and place among the series.
type TrendsAction struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Math  string `json:"math"`
	Order int    `json:"order"`
}

// Trends runs a TrendsQuery.
func (q *Queries) Trends(ctx context.Context, scope Scope, tq TrendsQuery, now time.Time) (*TrendsResult, error) {
	if len(tq.Series) > maxTrendSeries {
		return nil, queryErrorf("a trends query has at most %d series, not %d", maxTrendSeries, len(tq.Series))
	}
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	if len(tq.Series) == 0 {
		return nil, queryErrorf("a trends query needs at least one series")
	}
	interval, loc, from, to, err := q.insightSpan(ctx, scope, tq.Interval, tq.DateRange, now)
	if err != nil {
		return nil, err
	}
	// A comparison answers the range, then the one as long just before it, as PostHog
	// lists them: every line of the current period, then every line of the previous.
	type period struct {
		from, to time.Time
		label    string // compare_label, "" without a comparison
	}
	periods := []period{{from, to, ""}}
	if tq.CompareFilter != nil && tq.CompareFilter.Compare {
		periods = []period{{from, to, "current"}, {from.Add(-to.Sub(from)), from, "previous"}}
	}
	var f formula
	if tq.TrendsFilter != nil && strings.TrimSpace(tq.TrendsFilter.Formula) != "" {
		if f, err = parseFormula(tq.TrendsFilter.Formula, len(tq.Series)); err != nil {
			return nil, err
		}
	}
	result := &TrendsResult{Results: []TrendsLine{}, Timezone: scope.timezone()}
	for _, period := range periods {
		// A total over the range has no buckets (axis nil).
		var axis *trendAxis
		if !tq.totalValue() {
			if axis, err = q.rangeAxis(ctx, scope, loc, period.from, period.to, interval); err != nil {
				return nil, err
			}
		}
		var lines []TrendsLine
		for order, series := range tq.Series {
			seriesLines, err := q.trendsSeries(ctx, scope, tq, series, order, interval, period.from, period.to, axis)
			if err != nil {
				return nil, cmp.Or(q.interrupted(ctx), err)
			}
			lines = append(lines, seriesLines...)
		}
		if f != nil {
			lines = applyFormula(f, strings.TrimSpace(tq.TrendsFilter.Formula), lines, len(tq.Series))
		}
		for i := range lines {
			lines[i].Compare, lines[i].CompareLabel = period.label != "", period.label
		}
		result.Results = append(result.Results, lines...)
	}
	return result, nil
}

// insightSpan resolves what an insight query of intervals reads: its interval (as
// insightInterval), the project's location, and [from, to) (as dates). ctx is a
// request's, from begin.
func (q *Queries) insightSpan(ctx context.Context, scope Scope, interval string, dr DateRange, now time.Time) (
	_ string, loc *time.Location, from, to time.Time, err error) {
	if interval, err = insightInterval(interval); err != nil {
		return "", nil, from, to, err
	}
	if loc, err = scope.location(); err != nil {
		return "", nil, from, to, err
	}
	if from, to, err = q.dates(ctx, scope, dr, now); err != nil {
		return "", nil, from, to, err
	}
	return interval, loc, from, to, nil
}

// insightInterval is an insight's interval: hour, day (the default), week or month.
func insightInterval(interval string) (string, error) {
	i := cmp.Or(interval, "day")
	if !slices.Contains([]string{"hour", "day", "week", "month"}, i) {
		return "", queryErrorf("interval must be hour, day, week or month, not %q", interval)
	}
	return i, nil
}

// rangeAxis is the axis of the intervals of [from, to) in loc. The buckets are built
// before any SQL runs, one per interval of the range: an hourly trend over centuries
// would take gigabytes, so a range of more than maxTrendBuckets is refused, as
// PostHog refuses ranges of too many intervals.
func (q *Queries) rangeAxis(ctx context.Context, scope Scope, loc *time.Location, from, to time.Time, interval string) (*trendAxis, error) {
	if intervalsBetween(from, to, interval) > maxTrendBuckets {
		return nil, queryErrorf("the date range spans more than %d %ss: choose a longer interval or a shorter range", maxTrendBuckets, interval)
	}
	axis, err := newTrendAxis(ctx, from.In(loc), to.In(loc), interval, scope.WeekStartDay)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	return axis, nil
}

// trendsSeries runs one series of tq: its query, then its lines.
func (q *Queries) trendsSeries(ctx context.Context, scope Scope, tq TrendsQuery, series TrendsSeries, order int,
	interval string, from, to time.Time, axis *trendAxis) ([]TrendsLine, error) {
	query, args, persons, breakdown, err := trendsSQL(scope, tq, series, interval, from, to, axis)
	if err != nil {
		return nil, err
	}
	result, err := q.run(ctx, scope, query, persons, q.maxRows, args...)
	if err != nil {
		return nil, err
	}
	if result.HasMore {
		return nil, queryErrorf("the trend has more than %d points", q.maxRows)
	}
	return trendsLines(ctx, result.Results, series, order, axis, breakdown)
}

// trendsSQL is the query of one series of tq over [from, to): a row per interval and
// breakdown value (bucket, value_group, value), the bucket as bucketKey names it, or
// with axis nil (a total over the range) a row per breakdown value, each bucket "0".
// It reports what of persons the query reads (persons), and whether tq breaks the
// series down (else every row has the same value_group).
func trendsSQL(scope Scope, tq TrendsQuery, series TrendsSeries, interval string, from, to time.Time, axis *trendAxis) (query string,
	args []any, persons personJoin, breakdown bool, err error) {
	// One bucket for the whole range: the queries below then count each value once
	// over the range, distinct persons included. Its label reads the column, as the
	// intervals' do: grouped by constants alone, the rest's count would be a row of 0
	// even without events.
	bucket, label, bucketArgs := "0", "bucket::VARCHAR", []any(nil)
	if axis != nil {
		bucket, label, bucketArgs = trendBucket(scope, interval, to, axis)
	}
	// Weekly and monthly actives count a day's persons over the window that ends with
	// it, so they read the window's days before the range too (activeUsersSQL).
	window, active := activeWindows[series.Math]
	readFrom := from
	if active {
		if interval != "day" {
			return "", nil, 0, false, queryErrorf("math %s counts the persons of the %d days up to each day: set interval day", series.Math, window)
		}
		readFrom = from.AddDate(0, 0, -(window - 1))
		if axis == nil { // a total: the persons of the window that ends with the range
			readFrom = to.AddDate(0, 0, -window)
		}
	}
	where, whereArgs, persons, err := seriesWhere(tq, series, readFrom, to)
	if err != nil {
		return "", nil, 0, false, err
	}
	valueGroup := "NULL::VARCHAR"
	var valueGroupArgs []any
	if b := tq.BreakdownFilter; b != nil && b.Breakdown != "" {
		column, ofPersons, err := b.column()
		if err != nil {
			return "", nil, 0, false, err
		}
		if ofPersons {
			persons = personProperties
		}
		value, args := propertyValue(column, b.Breakdown)
		valueGroup = "coalesce(" + value + ", '" + breakdownNull + "')"
		valueGroupArgs, breakdown = args, true
	}
	if active {
		query, args = activeUsersSQL(scope, window, axis != nil, breakdown, where, whereArgs, valueGroup, valueGroupArgs)
		return query, args, max(persons, currentPersons), breakdown, nil
	}

	// value is the count, and counted the column it counts the distinct values of;
	// for a property math, aggregate is value over x, the property's number (numeric,
	// binding numericArgs).
	var value, counted, aggregate, numeric string
	countedAs := "" // how the rows of a breakdown select counted, when not a column of events
	var numericArgs []any
	switch math := cmp.Or(series.Math, "total"); math {
	case "total":
		value = "count(*)"
	case "dau":
		// Daily active users are persons as they are now: two distinct ids merged count once.
		value, counted, persons = "count(DISTINCT person_id)", "person_id", max(persons, currentPersons)
	case "unique_group":
		if series.MathGroupTypeIndex == nil || *series.MathGroupTypeIndex < 0 || *series.MathGroupTypeIndex > 4 {
			return "", nil, 0, false, queryErrorf("math unique_group needs a math_group_type_index from 0 to 4")
		}
		group := fmt.Sprintf(`"$group_%d"`, *series.MathGroupTypeIndex)
		value, counted, where = "count(DISTINCT "+group+")", group, append(where, group+" IS NOT NULL")
	case "unique_session":
		// Sessions as posthog-js numbers them: the distinct $session_id of the events
		// that have one. Its path is a literal (a key hedge materializes), so it binds
		// nothing.
		session, _ := propertyValue("properties", "$session_id")
		value, counted, where = "count(DISTINCT "+session+")", "session_id", append(where, session+" IS NOT NULL")
		countedAs = session + " AS session_id"
	default:
		if aggregate = propertyMath[math]; aggregate == "" {
			return "", nil, 0, false, queryErrorf("math must be total, dau, weekly_active, monthly_active, unique_group, unique_session, sum, avg, min, max, median, p90, p95 or p99, not %q", series.Math)
		}
		if series.MathProperty == "" {
			return "", nil, 0, false, queryErrorf("math %s needs a math_property: the property whose numbers it aggregates", math)
		}
		column := "properties"
		switch series.MathPropertyType {
		case "", "event_properties":
		case "person_properties":
			column, persons = "person_properties", personProperties
		default:
			return "", nil, 0, false, queryErrorf("math_property_type must be event_properties or person_properties, not %q", series.MathPropertyType)
		}
		var text string
		text, numericArgs = propertyValue(column, series.MathProperty)
		numeric = "TRY_CAST(" + text + " AS DOUBLE)"
		value = strings.Replace(aggregate, "(x", "("+numeric, 1)
	}

	// The counts per interval and breakdown value: the 25 most frequent values by
	// events, and the rest under one value. A bucket is grouped by its key and labelled
	// once per group.
	rows := `FROM events WHERE ` + strings.Join(where, " AND ")
	top := `SELECT breakdown FROM trend_rows GROUP BY breakdown ORDER BY sum(n) DESC, breakdown LIMIT ` + strconv.Itoa(breakdownLimit)
	other := `CASE WHEN breakdown IN (SELECT breakdown FROM trend_top) THEN breakdown ELSE '` + breakdownOther + `' END`
	switch {
	case !breakdown:
		query = `SELECT ` + label + ` AS bucket, NULL::VARCHAR AS value_group, value
			FROM (SELECT ` + bucket + ` AS bucket, ` + value + ` AS value ` + rows + ` GROUP BY 1)`
		valueGroupArgs = numericArgs // the value's, which the query binds after the bucket's
	case aggregate != "":
		// A property's aggregate does not add up either: each event's number is kept
		// (a double per event, not its properties), the values ranked by events as
		// for counts, and the rest aggregated from its events' numbers.
		query = `WITH trend_rows AS (SELECT ` + bucket + ` AS bucket, ` + valueGroup + ` AS breakdown, ` + numeric + ` AS x ` + rows + `),
			trend_top AS (SELECT breakdown FROM trend_rows GROUP BY breakdown ORDER BY count(*) DESC, breakdown LIMIT ` + strconv.Itoa(breakdownLimit) + `)
			SELECT ` + label + ` AS bucket, ` + other + ` AS value_group, ` + aggregate + ` AS value FROM trend_rows GROUP BY ALL`
		valueGroupArgs = append(valueGroupArgs, numericArgs...)
	case value == "count(*)":
		// Counts add up: the events are counted once per interval and value, and the
		// ranking and the rest are sums of those counts, a few rows per interval.
		query = `WITH trend_counts AS (SELECT ` + bucket + ` AS bucket, ` + valueGroup + ` AS breakdown, count(*) AS n ` + rows + ` GROUP BY ALL),
			trend_top AS (SELECT breakdown FROM trend_counts GROUP BY breakdown ORDER BY sum(n) DESC, breakdown LIMIT ` + strconv.Itoa(breakdownLimit) + `)
			SELECT ` + label + ` AS bucket, ` + other + ` AS value_group, sum(n)::BIGINT AS value FROM trend_counts GROUP BY ALL`
	default:
		// Distinct counts do not add up: the rest's persons are counted from the rows.
		// trend_rows holds only the columns the count reads, once per interval, value
		// and person (or group) with their events counted: DuckDB materializes a CTE
		// read thrice, and the properties of a day of events are gigabytes. A value of
		// the largest has a row per person of an interval, so its count is of rows
		// (count(x) skips NULL, as the distinct count does); only the rest, of several
		// values, needs the distinct count (daily users by $browser on 10M events: the
		// query 146 ms against 189 ms with the distinct count for every value). A value
		// that is the rest's own name, sent as such, counts with the rest, as one line.
		query = `WITH trend_rows AS (SELECT ` + bucket + ` AS bucket, ` + valueGroup + ` AS breakdown, ` + cmp.Or(countedAs, counted) + `, count(*) AS n ` + rows + ` GROUP BY ALL),
			trend_top AS (` + top + `)
			SELECT ` + label + ` AS bucket, breakdown AS value_group, count(` + counted + `) AS value
				FROM trend_rows WHERE breakdown IN (SELECT breakdown FROM trend_top) AND breakdown <> '` + breakdownOther + `' GROUP BY ALL
			UNION ALL
			SELECT ` + label + ` AS bucket, '` + breakdownOther + `' AS value_group, count(DISTINCT ` + counted + `) AS value
				FROM trend_rows WHERE breakdown NOT IN (SELECT breakdown FROM trend_top) OR breakdown = '` + breakdownOther + `' GROUP BY ALL`
	}
	args = append(append(bucketArgs, valueGroupArgs...), whereArgs...)
	return query, args, persons, breakdown, nil
}

// seriesWhere are the conditions, and their arguments, of the events that series of
// tq reads over [from, to), and what of persons they read.
func seriesWhere(tq TrendsQuery, series TrendsSeries, from, to time.Time) (where []string, args []any, persons personJoin, err error) {
	if event := series.event(); event != "" {
		where, args = append(where, "event = ?"), append(args, event)
	}
	where, args = append(where, `"timestamp" >= ?`, `"timestamp" < ?`), append(args, from, to)
	filters, filterArgs, withPersons, err := propertyFilters(append(slices.Clone(tq.Properties), series.Properties...))
	if err != nil {
		return nil, nil, 0, err
	}
	return append(where, filters...), append(args, filterArgs...), personJoinOf(withPersons), nil
}

// activeWindows are the maths that count a day's persons over the days up to it, and
// how many days: PostHog's weekly and monthly actives.
var activeWindows = map[string]int{"weekly_active": 7, "monthly_active": 30}

// activeUsersSQL is the query of weekly or monthly actives (rows as trendsSQL's): each
// person active on a day (in the project's time zone) counts on that day and the
// window-1 days after it, and each day's bucket counts its distinct persons, as
// persons are now (merged ids once). The rows of days past the range are left out by
// trendsLines. A total (perDay false) is the distinct persons of the rows, the
// window that ends with the range.
//
// With a breakdown (valueGroup, binding valueGroupArgs) a person counts under each
// value their events of the window had, as PostHog's breakdowns count; the 25 values
// of the most person-days come first and the rest count as one value, its persons
// once.
func activeUsersSQL(scope Scope, window int, perDay, breakdown bool, where []string, whereArgs []any, valueGroup string, valueGroupArgs []any) (string, []any) {
	rows := `FROM events WHERE ` + strings.Join(where, " AND ")
	switch {
	case !breakdown && !perDay:
		return `SELECT '0' AS bucket, NULL::VARCHAR AS value_group, count(DISTINCT person_id) AS value ` + rows, whereArgs
	case !breakdown:
		return `WITH active_days AS (SELECT DISTINCT person_id, ` + periodStart("day", scope.WeekStartDay, `"timestamp"`) + ` AS day ` + rows + `)
		SELECT strftime(day + to_days(k::INTEGER), '%Y-%m-%d %H:%M:%S') AS bucket, NULL::VARCHAR AS value_group, count(DISTINCT person_id) AS value
		FROM active_days, range(` + strconv.Itoa(window) + `) AS days(k) GROUP BY 1`, append([]any{scope.timezone()}, whereArgs...)
	}
	day, bucket, days, args := "", "'0'", "", []any(nil)
	if perDay {
		day, args = periodStart("day", scope.WeekStartDay, `"timestamp"`)+" AS day, ", []any{scope.timezone()}
		bucket = `strftime(day + to_days(k::INTEGER), '%Y-%m-%d %H:%M:%S')`
		days = ", range(" + strconv.Itoa(window) + ") AS days(k)"
	}
	return `WITH active_days AS (SELECT DISTINCT person_id, ` + day + valueGroup + ` AS breakdown ` + rows + `),
		trend_top AS (SELECT breakdown FROM active_days GROUP BY breakdown ORDER BY count(*) DESC, breakdown LIMIT ` + strconv.Itoa(breakdownLimit) + `),
		active_values AS (SELECT * REPLACE (CASE WHEN breakdown IN (SELECT breakdown FROM trend_top) THEN breakdown ELSE '` + breakdownOther + `' END AS breakdown) FROM active_days)
		SELECT ` + bucket + ` AS bucket, breakdown AS value_group, count(DISTINCT person_id) AS value
		FROM active_values` + days + ` GROUP BY 1, 2`, append(append(args, valueGroupArgs...), whereArgs...)
}

// trendBucket is the expression of an event's bucket (over events' "timestamp") and
// the expression that labels a bucket (over the column bucket) as bucketKey names it,
// with the arguments of the first. A bucket is the start of its interval in the
// project's time zone as a wall-clock time, but for hours the start of its real hour
// in UTC: a wall-clock hour repeats when clocks go back, and 01:30 EDT and 01:30 EST
// are two hours, two buckets (bucketStarts makes the same).
//
// Where the zone's offset from UTC is the same all through the range (UTC itself, and
// most ranges elsewhere), hours, days and weeks are integers computed from the epoch,
// which DuckDB groups some ten times faster than the timestamps of a time zone
// conversion (measured: 60 ms against 700 ms for the days of 10M events); otherwise,
// and for months, the bucket is computed in the zone.
func trendBucket(scope Scope, interval string, to time.Time, axis *trendAxis) (bucket, label string, args []any) {
	// After the epoch's first week only: DuckDB's // truncates towards zero, which is
	// the floor the keys need for the range's times (the query reads none before it).
	if offset, ok := fixedOffset(axis, to); ok && interval != "month" && axis.buckets[0].Unix() > 7*86400 {
		const day = int64(24 * time.Hour / time.Microsecond)
		shifted := fmt.Sprintf(`(epoch_us("timestamp") + %d)`, offset)
		switch interval {
		case "hour":
			const hour = int64(time.Hour / time.Microsecond)
			return fmt.Sprintf(`%s // %d`, shifted, hour), fmt.Sprintf(`strftime(make_timestamp(bucket * %d - %d), '%%Y-%%m-%%d %%H:%%M:%%S')`, hour, offset), nil
		case "day":
			return fmt.Sprintf(`%s // %d`, shifted, day), fmt.Sprintf(`strftime(make_timestamp(bucket * %d), '%%Y-%%m-%%d %%H:%%M:%%S')`, day), nil
		case "week":
			// Day 0 of the epoch was a Thursday: 3 days after a Monday, 4 after a Sunday.
			since := 3
			if scope.WeekStartDay == 0 {
				since = 4
			}
			return fmt.Sprintf(`(%s // %d + %d) // 7`, shifted, day, since),
				fmt.Sprintf(`strftime(make_timestamp((bucket * 7 - %d) * %d), '%%Y-%%m-%%d %%H:%%M:%%S')`, since, day), nil
		}
	}
	label = `strftime(bucket::TIMESTAMP, '%Y-%m-%d %H:%M:%S')`
	if interval == "hour" {
		return `timezone('UTC', "timestamp" - (timezone(?, "timestamp") - date_trunc('hour', timezone(?, "timestamp"))))`, label,
			[]any{scope.timezone(), scope.timezone()}
	}
	return periodStart(interval, scope.WeekStartDay, `"timestamp"`), label, []any{scope.timezone()}
}

// periodStart is the SQL of the start of the interval (day, week, month, or a
// wall-clock hour) that column's time falls in, as a wall-clock time in the time zone
// it binds (one argument); weeks start on weekStartDay (0 Sunday, 1 Monday: DuckDB's
// date_trunc).
func periodStart(interval string, weekStartDay int, column string) string {
	if interval == "week" && weekStartDay == 0 {
		return `(date_trunc('week', timezone(?, ` + column + `) + INTERVAL 1 DAY) - INTERVAL 1 DAY)`
	}
	return `date_trunc('` + interval + `', timezone(?, ` + column + `))`
}

// fixedOffset is the offset from UTC, in microseconds, of the axis' time zone when it
// is the same at every bucket's start and at to: no change of clocks falls in the
// range (trendBucket asks for hours, days and weeks, whose buckets are at most a week
// apart, and zones change their clocks months apart).
func fixedOffset(axis *trendAxis, to time.Time) (int64, bool) {
	if len(axis.buckets) == 0 {
		return 0, false
	}
	_, offset := axis.buckets[0].Zone()
	if _, o := to.In(axis.buckets[0].Location()).Zone(); o != offset {
		return 0, false
	}
	for _, b := range axis.buckets {
		if _, o := b.Zone(); o != offset {
			return 0, false
		}
	}
	return int64(offset) * int64(time.Second/time.Microsecond), true
}

// trendAxis is what the lines of a trend share: the starts of its intervals, their
// labels and days (one copy for every line), and the index of each interval by the
// key trendsSQL's query names it by (bucketKey).
type trendAxis struct {
	buckets      []time.Time
	labels, days []string
	index        map[string]int
}

// newTrendAxis is the axis of the intervals from from's to to's, in from's location;
// it stops with ctx's error once ctx is done.
func newTrendAxis(ctx context.Context, from, to time.Time, interval string, weekStartDay int) (*trendAxis, error) {
	buckets, err := bucketStarts(ctx, from, to, interval, weekStartDay)
	if err != nil {
		return nil, err
	}
	axis := &trendAxis{buckets: buckets, labels: make([]string, len(buckets)), days: make([]string, len(buckets)),
		index: make(map[string]int, len(buckets))}
	for i, b := range buckets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if interval == "hour" {
			axis.labels[i], axis.days[i] = b.Format("2-Jan-2006 15:04"), b.Format(time.DateTime)
		} else {
			axis.labels[i], axis.days[i] = b.Format("2-Jan-2006"), b.Format(time.DateOnly)
		}
		axis.index[bucketKey(b, interval)] = i
	}
	return axis, nil
}

// trendsLines folds the rows of trendsSQL's query into the lines of a series: one, or
// with a breakdown one per value, largest count first and the rest (Other) last. A
// series without events and without a breakdown is a line of zeros. With axis nil the
// rows are totals over the range, and each line carries its AggregatedValue instead.
// It stops with ctx's error once ctx is done.
func trendsLines(ctx context.Context, rows [][]any, series TrendsSeries, order int, axis *trendAxis, breakdown bool) ([]TrendsLine, error) {
	event, math := series.event(), cmp.Or(series.Math, "total")
	name := cmp.Or(series.Name, cmp.Or(event, "All events"))
	newLine := func() *TrendsLine {
		line := &TrendsLine{Labels: []string{}, Days: []string{}, Data: []float64{}, AggregatedValue: new(float64)}
		if axis != nil {
			line = &TrendsLine{Labels: axis.labels, Days: axis.days, Data: make([]float64, len(axis.buckets))}
		}
		line.Label = name
		line.Action.ID, line.Action.Name, line.Action.Math, line.Action.Order = event, name, math, order
		return line
	}
	lines := map[string]*TrendsLine{}
	var keys []string
	for _, row := range rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		bucketKey, _ := row[0].(string)
		group, _ := row[1].(string)
		i, ok := 0, true
		if axis != nil {
			i, ok = axis.index[bucketKey]
		}
		if !ok {
			continue // an interval outside the range's buckets (not expected)
		}
		line := lines[group]
		if line == nil {
			line = newLine()
			if breakdown {
				line.BreakdownValue = group
				line.Label = breakdownLabel(group)
			}
			lines[group] = line
			keys = append(keys, group)
		}
		n := toFloat(row[2])
		if axis == nil {
			*line.AggregatedValue += n
			continue
		}
		line.Data[i] += n
		line.Count += n
	}
	if len(lines) == 0 && !breakdown { // a series without events is a line of zeros
		return []TrendsLine{*newLine()}, nil
	}
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case a == breakdownOther:
			return 1
		case b == breakdownOther:
			return -1
		case lines[a].size() != lines[b].size():
			if lines[a].size() > lines[b].size() {
				return -1
			}
			return 1
		}
		return strings.Compare(breakdownLabel(a), breakdownLabel(b)) // ties by what the user reads
	})
	out := make([]TrendsLine, 0, len(keys))
	for _, k := range keys {
		out = append(out, *lines[k])
	}
	return out, nil
}

// size is what lines are ordered by: the aggregated value of a total, else the count.
func (l *TrendsLine) size() float64 {
	if l.AggregatedValue != nil {
		return *l.AggregatedValue
	}
	return l.Count
}

// event is the event the series counts, "" for every event.
func (s TrendsSeries) event() string {
	if s.Event == nil {
		return ""
	}
	return *s.Event
}

func breakdownLabel(value string) string {
	switch value {
	case breakdownOther:
		return "Other"
	case breakdownNull:
		return "None"
	}
	return value
}

// bucketKey is how the query names the bucket that starts at b (b in the project's
// location): its wall-clock start there, or for hours its start in UTC.
func bucketKey(b time.Time, interval string) string {
	if interval == "hour" {
		return b.UTC().Format(time.DateTime)
	}
	return b.Format(time.DateTime)
}

// maxTrendSeries is how many series a trends query may have: each is a query of its
// own, and all of them run within the request's time limit.
const maxTrendSeries = 50

// maxTrendBuckets is how many intervals a trends query may span: ten years of days,
// a year of hours.
const maxTrendBuckets = 10_000

// intervalsBetween is about how many intervals of the kind lie between from and to
// (one more at most than bucketStarts makes). A range longer than a Duration holds
// (292 years) counts as that long, which is past the cap for hours, days and weeks.
func intervalsBetween(from, to time.Time, interval string) int64 {
	hours := int64(to.Sub(from) / time.Hour)
	switch interval {
	case "hour":
		return hours + 1
	case "day":
		return hours/24 + 1
	case "week":
		return hours/(24*7) + 1
	}
	return int64(to.Year()-from.Year())*12 + int64(to.Month()-from.Month()) + 1
}

// bucketStarts are the starts of the intervals from from's to to's, in from's location;
// it stops with ctx's error once ctx is done.
func bucketStarts(ctx context.Context, from, to time.Time, interval string, weekStartDay int) ([]time.Time, error) {
	start := truncate(from, interval, weekStartDay)
	var starts []time.Time
	for t := start; t.Before(to); t = next(t, interval) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		starts = append(starts, t)
	}
	return starts, nil
}

// truncate is the start of t's interval in t's location.
func truncate(t time.Time, interval string, weekStartDay int) time.Time {
	y, m, d := t.Date()
	switch interval {
	case "hour":
		// Back by the minutes past the hour on the local clock, not to a wall-clock
		// hour, which is ambiguous when the clock goes back.
		return t.Add(-time.Duration(t.Minute())*time.Minute - time.Duration(t.Second())*time.Second - time.Duration(t.Nanosecond()))
	case "week":
		day := time.Date(y, m, d, 0, 0, 0, 0, t.Location())
		back := (int(day.Weekday()) - weekStartDay + 7) % 7
		return day.AddDate(0, 0, -back)
	case "month":
		return time.Date(y, m, 1, 0, 0, 0, 0, t.Location())
	}
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

func next(t time.Time, interval string) time.Time {
	switch interval {
	case "hour":
		// The next start of an hour on the local clock: an hour later, unless the
		// offset moved by a half hour on the way (Lord Howe Island).
		if n := truncate(t.Add(time.Hour), "hour", 0); n.After(t) {
			return n
		}
		return t.Add(time.Hour)
	case "week":
		return t.AddDate(0, 0, 7)
	case "month":
		return t.AddDate(0, 1, 0)
	}
	return t.AddDate(0, 0, 1)
}

// dates resolves a date range of the project at now: [from, to), from "-7d" when
// date_from is empty and from the project's first event when it is "all", to now when
// date_to is empty. ctx is a request's, from begin.
func (q *Queries) dates(ctx context.Context, scope Scope, dr DateRange, now time.Time) (from, to time.Time, err error) {
	if dr.DateFrom == "all" {
		from, err = q.firstEvent(ctx, scope, now)
	} else {
		from, err = parseDate(cmp.Or(dr.DateFrom, "-7d"), scope, now, false)
	}
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	to = now
	if dr.DateTo != "" {
		if to, err = parseDate(dr.DateTo, scope, now, true); err != nil {
			return time.Time{}, time.Time{}, err
		}
	}
	if !to.After(from) {
		return time.Time{}, time.Time{}, queryErrorf("date_to must come after date_from")
	}
	return from, to, nil
}

// firstEvent is the time of the project's first event, for date_from "all".
func (q *Queries) firstEvent(ctx context.Context, scope Scope, now time.Time) (time.Time, error) {
	result, err := q.run(ctx, scope, `SELECT min("timestamp") FROM events`, ingestedPersons, 1)
	if err != nil {
		return time.Time{}, err
	}
	if s, ok := result.Results[0][0].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, nil
		}
	}
	return now.Add(-24 * time.Hour), nil
}

func toFloat(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case float64:
		return v
	case string:
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return 0
}
