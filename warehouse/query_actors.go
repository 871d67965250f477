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
	query := `SELECT person_id, count(*) AS event_count FROM events WHERE ` + strings.Join(where, " AND ") + ` GROUP BY person_id`
	return q.actorsByCount(ctx, scope, query, max(persons, currentPersons), limit, point.Offset, args...)
}

// actorsByCount reads a page of the persons of query, whose rows are a person_id and
// its event_count, once each: the most events first, ties by id so that pages do not
// overlap; one more than the page says whether there are more. The persons are as
// their distinct ids belong now (persons at least currentPersons). ctx is a
// request's, from begin.
func (q *Queries) actorsByCount(ctx context.Context, scope Scope, query string, persons personJoin, limit, offset int, args ...any) (*ActorsResult, error) {
	query = `SELECT person_id::VARCHAR, event_count FROM (` + query + `)
		ORDER BY event_count DESC, person_id LIMIT ` + strconv.Itoa(limit+1) + ` OFFSET ` + strconv.Itoa(offset)
	result, err := q.run(ctx, scope, query, persons, limit+1, args...)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	return actorsPage(result, limit, offset, func(a *Actor, row []any) { a.EventCount = int64(toFloat(row[1])) }), nil
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

// LifecycleActors says which bar of a LifecycleQuery to list the persons of.
type LifecycleActors struct {
	// Day is the interval's start as the lifecycle's days name it ("2026-11-02"), in
	// the project's time zone.
	Day string
	// Status is new, returning, resurrecting or dormant (of the interval before, not
	// back in this one).
	Status string
	// Limit (default DefaultActorsLimit, at most MaxActorsLimit) and Offset page the
	// persons.
	Limit, Offset int
}

// LifecycleActors lists the persons of one bar of lq: the rows of the lifecycle's own
// statuses (lifecyclePlan) of the bar's interval and status, the most events in the
// interval first (a dormant person has none in it).
func (q *Queries) LifecycleActors(ctx context.Context, scope Scope, lq LifecycleQuery, bar LifecycleActors, now time.Time) (*ActorsResult, error) {
	if !slices.Contains(lifecycleStatuses, bar.Status) {
		return nil, queryErrorf("status must be one of %s, not %q", strings.Join(lifecycleStatuses, ", "), bar.Status)
	}
	limit, err := actorsLimit(bar.Limit, bar.Offset)
	if err != nil {
		return nil, err
	}
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	plan, err := q.lifecyclePlanOf(ctx, scope, lq, now)
	if err != nil {
		return nil, err
	}
	if bar.Day == "" {
		return nil, queryErrorf("day is required: the interval of the bar whose persons to list")
	}
	day, err := parseDay(bar.Day, plan.loc)
	if err != nil {
		return nil, err
	}
	start, buckets := truncate(day, plan.interval, scope.WeekStartDay), plan.axis.buckets
	if start.Before(buckets[0]) || start.After(buckets[len(buckets)-1]) {
		return nil, queryErrorf("day %s is outside the query's date range", bar.Day)
	}
	query := plan.ctes + `
		SELECT person_id, events AS event_count FROM lifecycle_statuses WHERE p = ?::TIMESTAMP AND status = ?`
	args := append(slices.Clone(plan.args), start.Format(time.DateTime), bar.Status)
	return q.actorsByCount(ctx, scope, query, plan.persons, limit, bar.Offset, args...)
}

// StickinessActors says which bar of a StickinessQuery to list the persons of.
type StickinessActors struct {
	// Intervals is the bar's number of intervals (PostHog's day): its persons were
	// active on exactly that many of the range's intervals.
	Intervals int
	// Series is the index of the series among the query's.
	Series int
	// Limit (default DefaultActorsLimit, at most MaxActorsLimit) and Offset page the
	// persons.
	Limit, Offset int
}

// StickinessActors lists the persons of one bar of sq: the rows of the series' own
// query (stickinessPersonsSQL) of the bar's intervals, the most events in the range
// first.
func (q *Queries) StickinessActors(ctx context.Context, scope Scope, sq StickinessQuery, bar StickinessActors, now time.Time) (*ActorsResult, error) {
	if bar.Series < 0 || bar.Series >= len(sq.Series) {
		return nil, queryErrorf("series must be the index of one of the query's %d series, not %d", len(sq.Series), bar.Series)
	}
	limit, err := actorsLimit(bar.Limit, bar.Offset)
	if err != nil {
		return nil, err
	}
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	interval, from, to, axis, err := q.stickinessSpan(ctx, scope, sq, now)
	if err != nil {
		return nil, err
	}
	if n := len(axis.buckets); bar.Intervals < 1 || bar.Intervals > n {
		return nil, queryErrorf("day must be a number of intervals from 1 to the range's %d, not %d", n, bar.Intervals)
	}
	persons, args, join, err := stickinessPersonsSQL(scope, sq, sq.Series[bar.Series], interval, from, to, axis)
	if err != nil {
		return nil, err
	}
	query := `SELECT person_id, events AS event_count FROM (` + persons + `) WHERE intervals = ?`
	return q.actorsByCount(ctx, scope, query, join, limit, bar.Offset, append(args, bar.Intervals)...)
}

// PathsActors says which edge or node of a PathsQuery to list the persons of, by
// PostHog's keys of nodes, "<step>_<item>" ("2_/pricing").
type PathsActors struct {
	// StartKey and EndKey, both set, are an edge: the persons whose paths went from
	// one to the other. EndKey alone is a node: the persons whose paths reached it;
	// StartKey alone, those whose paths went on from it.
	StartKey, EndKey string
	// DropoffKey is a node: the persons whose paths ended there (a path cut at the
	// step limit ends at its last step, as PostHog's). The other keys are then
	// ignored, as PostHog ignores them.
	DropoffKey string
	// Limit (default DefaultActorsLimit, at most MaxActorsLimit) and Offset page the
	// persons.
	Limit, Offset int
}

// pathStep reads a node's key, "<step>_<item>", and answers its step; name says which
// key it is, for the refusal.
func pathStep(name, key string) (int, error) {
	step, _, ok := strings.Cut(key, "_")
	n, err := strconv.Atoi(step)
	if !ok || err != nil || n < 1 || n > maxPathSteps || step != strconv.Itoa(n) {
		return 0, queryErrorf("%s must be a node of the paths, its step from 1 and its item (\"2_/pricing\"), not %q", name, key)
	}
	return n, nil
}

// PathsActors lists the persons of an edge or a node of pq, from the paths' own steps
// (pathsPlan), each with the paths of theirs that took the edge or passed the node
// (event_count, as PostHog's), the most first. An edge's value counts paths, so a
// person who took it in two sessions is one person of two paths.
func (q *Queries) PathsActors(ctx context.Context, scope Scope, pq PathsQuery, node PathsActors, now time.Time) (*ActorsResult, error) {
	var condition string
	var keys []any
	switch {
	case node.DropoffKey != "":
		if _, err := pathStep("pathDropoffKey", node.DropoffKey); err != nil {
			return nil, err
		}
		condition, keys = "path_key = ? AND step = last_step", []any{node.DropoffKey}
	case node.StartKey != "" && node.EndKey != "":
		from, err := pathStep("pathStartKey", node.StartKey)
		if err != nil {
			return nil, err
		}
		to, err := pathStep("pathEndKey", node.EndKey)
		if err != nil {
			return nil, err
		}
		// PostHog's paths answer no persons for keys of steps that are not one after
		// the other; hedge says so instead, for no edge joins them.
		if to != from+1 {
			return nil, queryErrorf("an edge goes from a step to the next: pathEndKey's step must be %d, not %d", from+1, to)
		}
		condition, keys = "last_path_key = ? AND path_key = ?", []any{node.StartKey, node.EndKey}
	case node.EndKey != "":
		if _, err := pathStep("pathEndKey", node.EndKey); err != nil {
			return nil, err
		}
		condition, keys = "path_key = ?", []any{node.EndKey}
	case node.StartKey != "":
		if _, err := pathStep("pathStartKey", node.StartKey); err != nil {
			return nil, err
		}
		condition, keys = "last_path_key = ?", []any{node.StartKey}
	default:
		return nil, queryErrorf("say which edge or node's persons to list: pathStartKey and pathEndKey, one of them, or pathDropoffKey")
	}
	limit, err := actorsLimit(node.Limit, node.Offset)
	if err != nil {
		return nil, err
	}
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	plan, err := q.pathsPlanOf(ctx, scope, pq, now)
	if err != nil {
		return nil, err
	}
	// Each step as PostHog's paths per person name it: its key, the key of the step
	// before (none for the first), and the path's last step.
	query := plan.ctes + `,
		path_kept AS (
			SELECT person_id, session, n - first_n + 1 AS step, item
			FROM path_edges JOIN path_names USING (h) WHERE ` + plan.nodeCut + `),
		path_nodes AS (
			SELECT person_id, step, step || '_' || item AS path_key,
				lag(step || '_' || item) OVER (PARTITION BY person_id, session ORDER BY step) AS last_path_key,
				max(step) OVER (PARTITION BY person_id, session) AS last_step
			FROM path_kept)
		SELECT person_id, count(*) AS event_count FROM path_nodes WHERE ` + condition + ` GROUP BY person_id`
	return q.actorsByCount(ctx, scope, query, plan.persons, limit, node.Offset, append(append(slices.Clone(plan.args), plan.steps), keys...)...)
}
