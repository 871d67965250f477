package warehouse

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The actors of an insight: the persons behind one point of a trend, or one cohort of
// a retention, as PostHog's InsightActorsQuery lists them when a user clicks the point
// or the row. A point's persons are those whose events the series counted in the
// point's interval (and breakdown value), as their distinct ids belong now (a merged
// person once), the most events first.

// TrendsActors says which point of a TrendsQuery to list the persons of.
type TrendsActors struct {
	// Day is the interval's start as the trend's days name it ("2026-11-02", or
	// "2026-11-02 10:00:00" for hours), in the project's time zone; empty, the whole
	// range, as a display of totals answers it.
	Day string
	// Series is the index of the series among the query's.
	Series int
	// Breakdown is the line's breakdown value (its breakdown_value); nil without a
	// breakdown.
	Breakdown *string
	// Compare is the line's compare_label: "previous" for the period before the range.
	Compare string
	// Limit (default DefaultActorsLimit, at most MaxActorsLimit) and Offset page the
	// persons.
	Limit, Offset int
}

// The page sizes of TrendsActors: PostHog's persons modal asks for 100 at a time.
const (
	DefaultActorsLimit = 100
	MaxActorsLimit     = 10_000
)

// actorsLimit is a page's size, limit or by default DefaultActorsLimit, once limit
// and offset are checked.
func actorsLimit(limit, offset int) (int, error) {
	limit = cmp.Or(limit, DefaultActorsLimit)
	if limit < 0 || limit > MaxActorsLimit || offset < 0 {
		return 0, queryErrorf("limit must be from 1 to %d and offset 0 or more", MaxActorsLimit)
	}
	return limit, nil
}

// Actor is one person behind a point, and how many of the point's events are theirs,
// or of a retention cohort, the periods they came back in.
type Actor struct {
	PersonID    uuid.UUID
	EventCount  int64
	Appearances []int
}

// ActorsResult is one page of a point's persons.
type ActorsResult struct {
	Actors  []Actor
	HasMore bool
	// Limit and Offset are the page's, as answered.
	Limit, Offset int
}

// TrendsActors lists the persons of one point of tq.
func (q *Queries) TrendsActors(ctx context.Context, scope Scope, tq TrendsQuery, point TrendsActors, now time.Time) (*ActorsResult, error) {
	if point.Series < 0 || point.Series >= len(tq.Series) {
		return nil, queryErrorf("series must be the index of one of the query's %d series, not %d", len(tq.Series), point.Series)
	}
	limit, err := actorsLimit(point.Limit, point.Offset)
	if err != nil {
		return nil, err
	}
	series := tq.Series[point.Series]
	switch series.Math {
	case "unique_group":
		return nil, queryErrorf("the series counts groups, and only persons are listed: choose a series of persons or events")
	}
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	interval, loc, from, to, err := q.insightSpan(ctx, scope, tq.Interval, tq.DateRange, now)
	if err != nil {
		return nil, err
	}
	switch point.Compare {
	case "", "current":
	case "previous":
		from, to = from.Add(-to.Sub(from)), from
	default:
		return nil, queryErrorf("compare must be current or previous, not %q", point.Compare)
	}
	if point.Day != "" {
		day, err := parseDay(point.Day, loc)
		if err != nil {
			return nil, err
		}
		start := truncate(day, interval, scope.WeekStartDay)
		end := next(start, interval)
		if !end.After(from) || !start.Before(to) {
			return nil, queryErrorf("day %s is outside the query's date range", point.Day)
		}
		if start.After(from) {
			from = start
		}
		if end.Before(to) {
			to = end
		}
	}
	// Weekly and monthly actives count the persons of the window that ends with the
	// point's day (activeUsersSQL).
	if window, active := activeWindows[series.Math]; active {
		from = to.AddDate(0, 0, -window)
	}
	where, args, persons, err := seriesWhere(tq, series, from, to)
	if err != nil {
		return nil, err
	}
	if b := tq.BreakdownFilter; b != nil && b.Breakdown != "" {
		if point.Breakdown == nil {
			return nil, queryErrorf("the query breaks its series down: say which value's persons to list (breakdown)")
		}
		if *point.Breakdown == breakdownOther {
			return nil, queryErrorf("the persons of Other (the values past the %d largest) are not listed: break down by fewer values", breakdownLimit)
		}
		column, ofPersons, err := b.column()
		if err != nil {
			return nil, err
		}
		if ofPersons {
			persons = personProperties
		}
		value, valueArgs := propertyValue(column, b.Breakdown)
		where = append(where, "coalesce("+value+", '"+breakdownNull+"') = ?")
		args = append(append(args, valueArgs...), *point.Breakdown)
	}
	// The persons as their distinct ids belong now, the most events first, ties by id
	// so that pages do not overlap; one more than the page says whether there are more.
	query := `SELECT person_id::VARCHAR, count(*) AS event_count FROM events WHERE ` + strings.Join(where, " AND ") + `
		GROUP BY person_id ORDER BY event_count DESC, person_id LIMIT ` + strconv.Itoa(limit+1) + ` OFFSET ` + strconv.Itoa(point.Offset)
	result, err := q.run(ctx, scope, query, max(persons, currentPersons), limit+1, args...)
	if err != nil {
		return nil, err
	}
	return actorsPage(result, limit, point.Offset, func(a *Actor, row []any) { a.EventCount = int64(toFloat(row[1])) }), nil
}

// actorsPage reads a page of persons from result, whose rows are a person id (text)
// and what fill reads into the actor; a row past limit says there are more. A row
// without a person (an event not written by hedge's Writer) is left out.
func actorsPage(result *Result, limit, offset int, fill func(a *Actor, row []any)) *ActorsResult {
	out := &ActorsResult{Actors: make([]Actor, 0, min(len(result.Results), limit)), Limit: limit, Offset: offset}
	for i, row := range result.Results {
		if i == limit {
			out.HasMore = true
			break
		}
		text, _ := row[0].(string)
		id, err := uuid.Parse(text)
		if err != nil {
			continue
		}
		actor := Actor{PersonID: id}
		fill(&actor, row)
		out.Actors = append(out.Actors, actor)
	}
	return out
}

// parseDay reads a trend's day, as its days name them, in loc.
func parseDay(day string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{time.DateOnly, time.DateTime, time.RFC3339} {
		if t, err := time.ParseInLocation(layout, day, loc); err == nil {
			return t.In(loc), nil
		}
	}
	return time.Time{}, queryErrorf("day must be a date (2026-11-02) or a time (2026-11-02 10:00:00), not %q", day)
}

// RetentionActors lists the persons of cohort (its index among rq's cohorts, the
// oldest 0), those who came back most often first, each with Appearances: the periods
// after their cohort's they came back in (0, the cohort's own, first), as PostHog's
// retention persons list them. limit and offset page them (limit 0:
// DefaultActorsLimit).
func (q *Queries) RetentionActors(ctx context.Context, scope Scope, rq RetentionQuery, cohort, limit, offset int, now time.Time) (*ActorsResult, error) {
	limit, err := actorsLimit(limit, offset)
	if err != nil {
		return nil, err
	}
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	plan, err := q.retentionPlanOf(ctx, scope, rq, now)
	if err != nil {
		return nil, err
	}
	if cohort < 0 || cohort >= len(plan.starts) {
		return nil, queryErrorf("interval must be the index of one of the query's %d cohorts, not %d", len(plan.starts), cohort)
	}
	query := plan.ctes + `
		SELECT person_id::VARCHAR, list_sort(list_distinct(list(k))) AS appearances FROM (
			SELECT person_id, 0 AS k FROM retention_cohorts WHERE c = ?
			UNION ALL
			SELECT person_id, date_diff('` + plan.interval + `', c, r) FROM retention_cohorts JOIN retention_returns USING (person_id)
				WHERE c = ? AND r > c)
		GROUP BY person_id ORDER BY len(appearances) DESC, person_id LIMIT ` + strconv.Itoa(limit+1) + ` OFFSET ` + strconv.Itoa(offset)
	start := plan.starts[cohort].Format(time.DateTime)
	result, err := q.run(ctx, scope, query, plan.persons, limit+1, append(plan.args, start, start)...)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	return actorsPage(result, limit, offset, func(a *Actor, row []any) {
		a.Appearances = []int{}
		periods, _ := row[1].([]any)
		for _, k := range periods {
			a.Appearances = append(a.Appearances, int(toFloat(k)))
		}
	}), nil
}
