package warehouse

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// LifecycleQuery is PostHog's LifecycleQuery: for one event, the persons who did it in
// each interval, told apart as new (the person was created in the interval),
// returning (they did it in the interval before too), resurrecting (not in the
// interval before, but before that), and dormant, the persons of the interval before
// who did not come back, counted negative as PostHog draws them below the axis.
type LifecycleQuery struct {
	Series     []TrendsSeries   `json:"series"`
	Interval   string           `json:"interval"`
	DateRange  DateRange        `json:"dateRange"`
	Properties []PropertyFilter `json:"properties"`
}

// LifecycleResult is the answer of a LifecycleQuery: a line per status, in
// lifecycleStatuses' order, as a trend's lines (Status says which).
type LifecycleResult struct {
	Results  []LifecycleLine `json:"results"`
	Timezone string          `json:"timezone"`
}

// LifecycleLine is a TrendsLine with the status it counts.
type LifecycleLine struct {
	TrendsLine
	Status string `json:"status"`
}

// lifecycleStatuses are the statuses, in the order PostHog answers them.
var lifecycleStatuses = []string{"new", "returning", "resurrecting", "dormant"}

// lifecyclePlan is what a LifecycleQuery reads, shared by the query and the persons
// of its bars (LifecycleActors), which are then the persons the bars count:
// lifecycle_statuses holds a row per person and interval they are counted in (p, the
// interval's start as a wall-clock time in the project's zone), with their status and
// their events of the interval (none for dormant).
type lifecyclePlan struct {
	ctes     string
	args     []any
	persons  personJoin
	interval string
	loc      *time.Location
	axis     *trendAxis
}

// lifecyclePlanOf plans lq; ctx is a request's, from begin.
func (q *Queries) lifecyclePlanOf(ctx context.Context, scope Scope, lq LifecycleQuery, now time.Time) (*lifecyclePlan, error) {
	if len(lq.Series) != 1 {
		return nil, queryErrorf("a lifecycle query has one series, not %d", len(lq.Series))
	}
	series := lq.Series[0]
	interval, loc, from, to, err := q.insightSpan(ctx, scope, lq.Interval, lq.DateRange, now)
	if err != nil {
		return nil, err
	}
	axis, err := q.rangeAxis(ctx, scope, loc, from, to, interval)
	if err != nil {
		return nil, err
	}
	first := axis.buckets[0]
	// The interval before the first tells its returning persons from its
	// resurrecting ones, and who of it is dormant in the first.
	before := previous(first, interval)

	// period is the start of an interval, as a wall-clock time in the project's zone;
	// one is the interval, to step by.
	period := func(column string) string { return periodStart(interval, scope.WeekStartDay, column) }
	one := "INTERVAL 1 " + strings.ToUpper(interval)
	where, whereArgs := []string{`"timestamp" >= ?`, `"timestamp" < ?`}, []any{before.UTC(), to}
	if event := series.event(); event != "" {
		where, whereArgs = append(where, "event = ?"), append(whereArgs, event)
	}
	filters, filterArgs, withPersons, err := propertyFilters(append(slices.Clone(lq.Properties), series.Properties...))
	if err != nil {
		return nil, err
	}
	where, whereArgs = append(where, filters...), append(whereArgs, filterArgs...)
	tz := scope.timezone()
	// A dormant person is one of the interval before who did not come back in this
	// one, counted in this one (PostHog's).
	ctes := `WITH lifecycle_active AS (SELECT person_id, ` + period(`"timestamp"`) + ` AS p, count(*) AS events FROM events WHERE ` + strings.Join(where, " AND ") + ` GROUP BY ALL),
		lifecycle_created AS (SELECT id AS person_id, ` + period("created_at") + ` AS c FROM persons),
		lifecycle_statuses AS (
			SELECT a.person_id, a.p, a.events,
					CASE WHEN c.c = a.p THEN 'new' WHEN b.person_id IS NOT NULL THEN 'returning' ELSE 'resurrecting' END AS status
				FROM lifecycle_active a
				LEFT JOIN lifecycle_active b ON b.person_id = a.person_id AND b.p = a.p - ` + one + `
				LEFT JOIN lifecycle_created c ON c.person_id = a.person_id
				WHERE a.p >= ?::TIMESTAMP
			UNION ALL
			SELECT a.person_id, a.p + ` + one + `, 0, 'dormant'
				FROM lifecycle_active a
				LEFT JOIN lifecycle_active n ON n.person_id = a.person_id AND n.p = a.p + ` + one + `
				WHERE n.person_id IS NULL)`
	args := append(append([]any{tz}, whereArgs...), tz, first.Format(time.DateTime))
	return &lifecyclePlan{ctes: ctes, args: args, persons: max(personJoinOf(withPersons), currentPersons), interval: interval, loc: loc, axis: axis}, nil
}

// Lifecycle runs a LifecycleQuery, of its one series. Persons are as they are now.
func (q *Queries) Lifecycle(ctx context.Context, scope Scope, lq LifecycleQuery, now time.Time) (*LifecycleResult, error) {
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	plan, err := q.lifecyclePlanOf(ctx, scope, lq, now)
	if err != nil {
		return nil, err
	}
	interval, loc, axis, series, tz := plan.interval, plan.loc, plan.axis, lq.Series[0], scope.timezone()
	query := plan.ctes + `
		SELECT strftime(p, '%Y-%m-%d %H:%M:%S'), status, CASE WHEN status = 'dormant' THEN -count(*) ELSE count(*) END
			FROM lifecycle_statuses GROUP BY p, status`
	rows, err := q.run(ctx, scope, query, plan.persons, q.maxRows, plan.args...)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}

	event := series.event()
	name := cmp.Or(series.Name, cmp.Or(event, "All events"))
	result := &LifecycleResult{Results: make([]LifecycleLine, len(lifecycleStatuses)), Timezone: tz}
	for i, status := range lifecycleStatuses {
		l := &result.Results[i]
		l.Status, l.Label = status, name+" - "+status
		l.Labels, l.Days, l.Data = axis.labels, axis.days, make([]float64, len(axis.buckets))
		l.Action.ID, l.Action.Name, l.Action.Math = event, name, "total"
	}
	for _, row := range rows.Results {
		key, _ := row[0].(string)
		status, _ := row[1].(string)
		i, ok := axis.index[key]
		if interval == "hour" { // the axis keys hours by their start in UTC
			var at time.Time
			if at, err = time.ParseInLocation(time.DateTime, key, loc); err == nil {
				i, ok = axis.index[at.UTC().Format(time.DateTime)]
			}
		}
		s := slices.Index(lifecycleStatuses, status)
		if !ok || s < 0 {
			continue // an interval outside the range: the one before, or after the last
		}
		v := toFloat(row[2])
		result.Results[s].Data[i] += v
		result.Results[s].Count += v
	}
	return result, nil
}
