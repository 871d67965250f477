package warehouse

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RetentionQuery is PostHog's RetentionQuery: persons grouped into cohorts by the
// period they did the target event in, and for each cohort how many came back (did
// the returning event) 1, 2, ... periods later.
type RetentionQuery struct {
	// DateRange.DateTo is when the last cohort's period is (default now); date_from is
	// not read: TotalIntervals says how far back the cohorts go.
	DateRange       DateRange        `json:"dateRange"`
	Properties      []PropertyFilter `json:"properties"`
	RetentionFilter RetentionFilter  `json:"retentionFilter"`
}

// RetentionFilter is PostHog's retentionFilter.
type RetentionFilter struct {
	// Period is Hour, Day (the default), Week or Month, in the project's time zone.
	Period string `json:"period"`
	// TotalIntervals is the count of cohorts (default 11, at most maxRetentionIntervals):
	// the last is the period dateRange.date_to (default now) falls in.
	TotalIntervals int `json:"totalIntervals"`
	// RetentionType is retention_first_time (the default: a person's cohort is the
	// period of their first target event ever, and only those whose first falls in a
	// cohort count) or retention_recurring (a person is in the cohort of every period
	// they did it in).
	RetentionType   string          `json:"retentionType"`
	TargetEntity    RetentionEntity `json:"targetEntity"`
	ReturningEntity RetentionEntity `json:"returningEntity"`
}

// RetentionEntity is an event (Type events; ID its name, "" or null for any event).
type RetentionEntity struct {
	ID   *string `json:"id"`
	Type string  `json:"type"`
}

// RetentionResult is the answer of a RetentionQuery, in PostHog's shape: a row per
// cohort, oldest first, each with its values for periods 0 (the cohort's size) to the
// last cohort's.
type RetentionResult struct {
	Results  []RetentionCohort `json:"results"`
	Timezone string            `json:"timezone"`
}

// RetentionCohort is one cohort: Date its period's start, Label "Day 3" for the
// fourth cohort, and Values[k] the persons of it who came back k periods later.
type RetentionCohort struct {
	Date   string           `json:"date"`
	Label  string           `json:"label"`
	Values []RetentionValue `json:"values"`
}

// RetentionValue is a count, labelled with its period ("Day 1").
type RetentionValue struct {
	Count int64  `json:"count"`
	Label string `json:"label"`
}

const (
	defaultRetentionIntervals = 11
	maxRetentionIntervals     = 120
)

// retentionPeriods maps PostHog's periods to the interval names of the rest of the
// query engine (truncate, next) and DuckDB's date parts.
var retentionPeriods = map[string]string{"Hour": "hour", "Day": "day", "Week": "week", "Month": "month"}

// retentionPlan is what a RetentionQuery reads, resolved: its cohorts' starts, and the
// SQL of two CTEs, retention_cohorts (person_id, c: a person's cohort period) and
// retention_returns (person_id, r: a period they came back in), with their arguments.
type retentionPlan struct {
	interval, periodName string
	starts               []time.Time
	ctes                 string
	args                 []any
	persons              personJoin
	// masks is the SQL of the same counts in one grouping of the events by person
	// (retentionMasks), with its arguments.
	masks    string
	maskArgs []any
}

// retentionPlanOf resolves rq at now. ctx is a request's, from begin.
func (q *Queries) retentionPlanOf(ctx context.Context, scope Scope, rq RetentionQuery, now time.Time) (*retentionPlan, error) {
	f := rq.RetentionFilter
	periodName := cmp.Or(f.Period, "Day")
	interval, ok := retentionPeriods[periodName]
	if !ok {
		return nil, queryErrorf("retentionFilter.period must be Hour, Day, Week or Month, not %q", f.Period)
	}
	n := cmp.Or(f.TotalIntervals, defaultRetentionIntervals)
	if n < 1 || n > maxRetentionIntervals {
		return nil, queryErrorf("retentionFilter.totalIntervals must be from 1 to %d, not %d", maxRetentionIntervals, n)
	}
	firstTime := true
	switch f.RetentionType {
	case "", "retention_first_time":
	case "retention_recurring":
		firstTime = false
	default:
		return nil, queryErrorf("retentionFilter.retentionType must be retention_first_time or retention_recurring, not %q", f.RetentionType)
	}
	for _, e := range []RetentionEntity{f.TargetEntity, f.ReturningEntity} {
		if e.Type != "" && e.Type != "events" {
			return nil, queryErrorf("a retention entity must be of type events, not %q (actions are not supported)", e.Type)
		}
	}
	loc, err := scope.location()
	if err != nil {
		return nil, err
	}
	// Only date_to counts (the cohorts end with it; totalIntervals says how many), so
	// date_from is read as the start of date_to's day, which always comes before it.
	_, to, err := q.dates(ctx, scope, DateRange{DateFrom: cmp.Or(rq.DateRange.DateTo, "dStart"), DateTo: rq.DateRange.DateTo}, now)
	if err != nil {
		return nil, err
	}
	// The cohorts: the period to falls in (its last instant's), and the n-1 before it.
	last := truncate(to.Add(-time.Nanosecond).In(loc), interval, scope.WeekStartDay)
	first := last
	for range n - 1 {
		first = previous(first, interval)
	}
	starts, err := bucketStarts(ctx, first, to, interval, scope.WeekStartDay)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}

	filters, filterArgs, withPersons, err := propertyFilters(rq.Properties)
	if err != nil {
		return nil, err
	}
	// period is an event's period start, as a wall-clock time in the project's zone.
	period, periodArgs := periodStart(interval, scope.WeekStartDay, `"timestamp"`), []any{scope.timezone()}
	events := func(e RetentionEntity, since *time.Time) (string, []any) {
		where, args := []string{`"timestamp" < ?`}, []any{to}
		if since != nil {
			where, args = append(where, `"timestamp" >= ?`), append(args, *since)
		}
		if e.ID != nil && *e.ID != "" {
			where, args = append(where, "event = ?"), append(args, *e.ID)
		}
		where, args = append(where, filters...), append(args, filterArgs...)
		return `FROM events WHERE ` + strings.Join(where, " AND "), args
	}
	// A first-time cohort reads the target event's whole history (a person's first
	// may be before the cohorts), the rest only from the first cohort on.
	firstUTC := first.UTC()
	var targetSince *time.Time
	if !firstTime {
		targetSince = &firstUTC
	}
	targetRows, targetArgs := events(f.TargetEntity, targetSince)
	returnRows, returnArgs := events(f.ReturningEntity, &firstUTC)
	cohorts := `SELECT DISTINCT person_id, ` + period + ` AS c ` + targetRows
	if firstTime {
		cohorts = `SELECT person_id, min(` + period + `) AS c ` + targetRows + ` GROUP BY person_id`
	}
	masks, maskArgs := retentionMasks(f, firstTime, interval, scope, first, starts, to, filters, filterArgs)
	return &retentionPlan{
		interval: interval, periodName: periodName, starts: starts, masks: masks, maskArgs: maskArgs,
		ctes: `WITH retention_cohorts AS (SELECT person_id, c FROM (` + cohorts + `) WHERE c >= ?),
		retention_returns AS (SELECT DISTINCT person_id, ` + period + ` AS r ` + returnRows + `)`,
		args:    append(append(append(append(slices.Clone(periodArgs), targetArgs...), first.Format(time.DateTime)), periodArgs...), returnArgs...),
		persons: max(personJoinOf(withPersons), currentPersons),
	}, nil
}

// Retention runs a RetentionQuery. Persons are as they are now (merged ids once).
func (q *Queries) Retention(ctx context.Context, scope Scope, rq RetentionQuery, now time.Time) (*RetentionResult, error) {
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	plan, err := q.retentionPlanOf(ctx, scope, rq, now)
	if err != nil {
		return nil, err
	}
	rows, err := q.run(ctx, scope, plan.masks, plan.persons, q.maxRows, plan.maskArgs...)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}

	result := &RetentionResult{Results: make([]RetentionCohort, len(plan.starts)), Timezone: scope.timezone()}
	for i, s := range plan.starts {
		c := &result.Results[i]
		c.Date, c.Label = s.Format(time.RFC3339), plan.periodName+" "+strconv.Itoa(i)
		c.Values = make([]RetentionValue, len(plan.starts)-i)
		for k := range c.Values {
			c.Values[k].Label = plan.periodName + " " + strconv.Itoa(k)
		}
	}
	// A cohort's row is the wall-clock periods from the first cohort's start to its own:
	// the period that many later, as a wall-clock time, is the cohort of starts with
	// that wall-clock time (as retention_cohorts' c, the times of starts in the zone).
	index := make(map[string]int, len(plan.starts))
	for i, s := range plan.starts {
		index[s.Format(time.DateTime)] = i
	}
	first := plan.starts[0]
	wall := time.Date(first.Year(), first.Month(), first.Day(), first.Hour(), 0, 0, 0, time.UTC)
	for _, row := range rows.Results {
		c, k := int(toFloat(row[0])), int(toFloat(row[1]))
		var cohort time.Time
		switch plan.interval {
		case "hour":
			cohort = wall.Add(time.Duration(c) * time.Hour)
		case "week":
			cohort = wall.AddDate(0, 0, 7*c)
		case "month":
			cohort = wall.AddDate(0, c, 0)
		default:
			cohort = wall.AddDate(0, 0, c)
		}
		i, ok := index[cohort.Format(time.DateTime)]
		if !ok || k < 0 || k >= len(result.Results[i].Values) {
			continue // a return after the last cohort's period, or a cohort before the first
		}
		result.Results[i].Values[k].Count = int64(toFloat(row[2]))
	}
	return result, nil
}

// previous is the start of the interval before the one t starts.
func previous(t time.Time, interval string) time.Time {
	switch interval {
	case "hour":
		return t.Add(-time.Hour)
	case "week":
		return t.AddDate(0, 0, -7)
	case "month":
		return t.AddDate(0, -1, 0)
	}
	return t.AddDate(0, 0, -1)
}

// retentionMasks is the SQL of a retention's counts, rows (cohort, k, persons): the
// persons of each cohort (its wall-clock periods from starts[0]) who came back k
// periods later, k = 0 the cohort's size. It reads the events once, grouped by person
// into a mask of the periods they did the returning event in (bit i for the period i
// wall-clock periods from starts[0], as date_diff counts them between the periods of
// retention_cohorts and retention_returns) and, for
// first-time retention, the time of their first target event (whose period is their
// cohort: a period of a later time is never earlier, as clocks set back by an hour at
// most at a whole hour never cross a period's start), or a mask of the periods they
// did the target event in; then each person's cohorts and returns are read off the
// masks. This is the counting of retention_cohorts and retention_returns, which
// retentionPlanOf keeps for the cohorts' persons, without a row per person and period
// and their join.
func retentionMasks(f RetentionFilter, firstTime bool, interval string, scope Scope, first time.Time, starts []time.Time, to time.Time,
	filters []string, filterArgs []any) (string, []any) {
	// The wall-clock periods from starts[0] to the last are len(starts)-1, or one more
	// where clocks were set forward within hours (a wall-clock hour that no instant has).
	n := len(starts) + 2
	mask := "UBIGINT"
	if n > 64 {
		mask = "HUGEINT" // up to maxRetentionIntervals+2 bits
	}
	// index is the SQL of the wall-clock periods from starts[0] to the period column
	// falls in, for a time from starts[0] on: with one offset from UTC over the
	// cohorts, arithmetic on the microseconds (as trends' buckets; months differ in
	// length); else date_diff of the wall-clock times in the project's zone.
	index := func(column string) (string, []any) {
		if offset, ok := retentionOffset(starts, to); ok && interval != "month" {
			wall := time.Date(first.Year(), first.Month(), first.Day(), first.Hour(), 0, 0, 0, time.UTC).UnixMicro()
			size := map[string]int64{"hour": 3_600_000_000, "day": 86_400_000_000, "week": 7 * 86_400_000_000}[interval]
			return `((epoch_us(` + column + `) + ` + strconv.FormatInt(offset-wall, 10) + `) // ` + strconv.FormatInt(size, 10) + `)`, nil
		}
		return `date_diff('` + interval + `', CAST(? AS TIMESTAMP), ` + periodStart(interval, scope.WeekStartDay, column) + `)`,
			[]any{first.Format(time.DateTime), scope.timezone()}
	}
	is := func(e RetentionEntity) (string, []any) {
		if e.ID != nil && *e.ID != "" {
			return "event = ?", []any{*e.ID}
		}
		return "true", nil
	}
	target, targetArgs := is(f.TargetEntity)
	returning, returningArgs := is(f.ReturningEntity)
	rowIndex, rowIndexArgs := index(`"timestamp"`)
	since := first.UTC()
	// The rows: the events up to to of either entity, each with its period's index from
	// the first cohort's start on (NULL before it).
	where, args := append([]string{`"timestamp" < ?`, "(" + target + " OR " + returning + ")"}, filters...),
		slices.Concat([]any{since}, rowIndexArgs, targetArgs, returningArgs, []any{to}, targetArgs, returningArgs, filterArgs)
	rows := `SELECT person_id, "timestamp", CASE WHEN "timestamp" >= ? THEN ` + rowIndex + ` END AS i, ` + target + ` AS target, ` + returning + ` AS returner
		FROM events WHERE ` + strings.Join(where, " AND ")
	bit := `(1::` + mask + ` << i::INTEGER)`
	var persons, cohorts string
	var cohortArgs []any
	if firstTime {
		// A cohort is the period of the person's first target event ever.
		persons = `min("timestamp") FILTER (WHERE target) AS first_time`
		c, cArgs := index("first_time")
		cohorts = `SELECT CASE WHEN first_time >= ? THEN ` + c + ` END AS c, returns FROM retention_persons`
		cohortArgs = append([]any{since}, cArgs...)
	} else {
		// A cohort is each period of a target event.
		persons = `bit_or(` + bit + `) FILTER (WHERE target) AS targets`
		cohorts = `SELECT c, returns FROM retention_persons, range(` + strconv.Itoa(n) + `) t(c) WHERE (targets >> c::INTEGER) & 1 = 1`
	}
	query := `WITH retention_persons AS (
			SELECT ` + persons + `, bit_or(` + bit + `) FILTER (WHERE returner) AS returns
			FROM (` + rows + `) GROUP BY person_id),
		retention_cohorts AS (` + cohorts + `)
		SELECT c, k, count(*) FROM (SELECT c, returns, unnest(range(` + strconv.Itoa(n) + ` - c)) AS k FROM retention_cohorts WHERE c >= 0 AND c < ` + strconv.Itoa(n) + `)
		WHERE k = 0 OR (returns >> (c + k)::INTEGER) & 1 = 1
		GROUP BY c, k`
	return query, append(args, cohortArgs...)
}

// retentionOffset is the offset from UTC, in microseconds, of the cohorts' time zone
// when it is the same at every cohort's start and at to (no change of clocks within
// them, as fixedOffset checks a trend's buckets).
func retentionOffset(starts []time.Time, to time.Time) (int64, bool) {
	if len(starts) == 0 {
		return 0, false
	}
	_, offset := starts[0].Zone()
	if _, o := to.In(starts[0].Location()).Zone(); o != offset {
		return 0, false
	}
	for _, s := range starts {
		if _, o := s.Zone(); o != offset {
			return 0, false
		}
	}
	return int64(offset) * int64(time.Second/time.Microsecond), true
}
