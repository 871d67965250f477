package warehouse

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The actors of an insight: the persons behind one point of a trend, one step of a
// funnel, or one cohort of a retention, as PostHog's InsightActorsQuery and
// FunnelsActorsQuery list them when a user clicks the point, the bar or the row. A point's persons are those whose events the series counted in the
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

// FunnelsActors says which step of a FunnelsQuery to list the persons of, as PostHog's
// FunnelsActorsQuery does.
type FunnelsActors struct {
	// Step is a step, from 1: its persons are those who reached it (converted). A
	// negative step, from -2, lists those who reached the step before it and not it
	// (dropped off).
	Step int
	// Breakdown is the funnel's breakdown value ("" for persons without the
	// property); nil without a breakdown.
	Breakdown *string
	// Limit (default DefaultActorsLimit, at most MaxActorsLimit) and Offset page the
	// persons.
	Limit, Offset int
}

// FunnelsActors lists the persons of one step of fq: the fold that counts the funnel
// (funnelFold) is told of each person's furthest step, and keeps those the step asks
// for. The fold knows a person by the 64-bit hash of their id (funnelsSQL), so the
// page is of those hashes, in their order (stable from page to page while the events
// do not change, though no order a user reads meaning into), and its persons are then
// found by their hashes among the range's events.
func (q *Queries) FunnelsActors(ctx context.Context, scope Scope, fq FunnelsQuery, target FunnelsActors, now time.Time) (*ActorsResult, error) {
	spec, err := checkFunnel(fq)
	if err != nil {
		return nil, err
	}
	reached, dropped := target.Step, target.Step < 0
	if dropped {
		reached = -reached
	}
	if reached < 1 || reached > spec.steps || dropped && reached == 1 {
		return nil, queryErrorf("funnelStep must be a step from 1 to %d (who reached it), or from -2 to -%d (who reached the one before and not it), not %d",
			spec.steps, spec.steps, target.Step)
	}
	switch {
	case spec.breakdown && target.Breakdown == nil:
		return nil, queryErrorf("the funnel is broken down: say which value's persons to list (funnelStepBreakdown)")
	case spec.breakdown && *target.Breakdown == funnelOther:
		return nil, queryErrorf("the persons of Other (the values past the %d largest funnels) are not listed: break down by fewer values", breakdownLimit)
	}
	limit, err := actorsLimit(target.Limit, target.Offset)
	if err != nil {
		return nil, err
	}
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	query, from, to, err := q.funnelRead(ctx, scope, fq, spec, now)
	if err != nil {
		return nil, err
	}
	pick := func(best int, value []byte) bool {
		if spec.breakdown && string(value) != *target.Breakdown {
			return false
		}
		if dropped {
			return best == reached-1
		}
		return best >= reached
	}
	hashes, err := onLoweredThread(q.nice, func() ([]uint64, error) { return q.funnelPersons(ctx, scope, query, spec, pick) })
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	slices.Sort(hashes)
	page := hashes[min(target.Offset, len(hashes)):min(target.Offset+limit+1, len(hashes))]
	out := &ActorsResult{Actors: []Actor{}, Limit: limit, Offset: target.Offset, HasMore: len(page) > limit}
	if len(page) == 0 {
		return out, nil
	}
	page = page[:min(len(page), limit)]
	// The hashes are hedge's own numbers, bound as one list's text.
	list := make([]byte, 0, len(page)*21+2)
	list = append(list, '[')
	for i, h := range page {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendUint(list, h, 10)
	}
	list = append(list, ']')
	result, err := q.run(ctx, scope, `SELECT DISTINCT hash(person_id)::VARCHAR, person_id::VARCHAR FROM events
		WHERE "timestamp" >= ? AND "timestamp" < ? AND hash(person_id) IN (SELECT unnest(?::UBIGINT[]))`,
		query.persons, 2*len(page), from, to, string(list))
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	ids := make(map[uint64]uuid.UUID, len(result.Results))
	for _, row := range result.Results {
		hashText, _ := row[0].(string)
		idText, _ := row[1].(string)
		h, err1 := strconv.ParseUint(hashText, 10, 64)
		id, err2 := uuid.Parse(idText)
		if err1 == nil && err2 == nil {
			ids[h] = id
		}
	}
	for _, h := range page {
		if id, ok := ids[h]; ok {
			out.Actors = append(out.Actors, Actor{PersonID: id})
		}
	}
	return out, nil
}

// funnelPersons runs a funnel's query sorted by person and folds its rows, keeping
// the hash of each person pick takes (their furthest step and breakdown value). The
// hashes kept count against the fold's budget.
func (q *Queries) funnelPersons(ctx context.Context, scope Scope, query funnelQuery, spec funnelSpec, pick func(best int, value []byte) bool) ([]uint64, error) {
	var persons []uint64
	text := query.text + "\n\t\tORDER BY " + query.order
	conn, err := q.session(ctx, scope, text, query.persons, len(query.args), func(conn *sql.Conn, text string) (func(), error) {
		fold := newFunnelFold(spec, q.maxBytes)
		rows := &funnelRows{query: query, fold: fold}
		persons = persons[:0]
		// endPerson tells of a person before rows moves on to the next.
		fold.onPerson = func(best int, value []byte) error {
			if !pick(best, value) {
				return nil
			}
			persons = append(persons, rows.current)
			return fold.charge(8)
		}
		return nil, conn.Raw(func(driverConn any) error { return q.readFunnel(ctx, driverConn, text, query, rows) })
	})
	if err != nil {
		return nil, err
	}
	conn.Close()
	return persons, nil
}
