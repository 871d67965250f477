package warehouse

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"
)

// PathsQuery is PostHog's PathsQuery: the steps persons take from one page (or screen,
// or event) to the next, as the edges of a Sankey diagram. A path is a person's
// session (a new one after 30 minutes without an event), its items in time order with
// repeats of the same item in a row taken as one, cut at StepLimit steps.
type PathsQuery struct {
	DateRange   DateRange        `json:"dateRange"`
	Properties  []PropertyFilter `json:"properties"`
	PathsFilter PathsFilter      `json:"pathsFilter"`
}

// PathsFilter is PostHog's pathsFilter.
type PathsFilter struct {
	// IncludeEventTypes are what a step is: $pageview (its $current_url, the default),
	// $screen (its $screen_name) and custom_event (any other event, by name).
	IncludeEventTypes []string `json:"includeEventTypes"`
	// StartPoint, when set, starts each path at its first step of that item (paths
	// without it are left out); EndPoint ends each at its first step of that item
	// (paths without it too).
	StartPoint string `json:"startPoint"`
	EndPoint   string `json:"endPoint"`
	// StepLimit is the steps of a path read (default 5, at most maxPathSteps), and
	// EdgeLimit the edges answered, most travelled first (default 50, at most 500).
	StepLimit int `json:"stepLimit"`
	EdgeLimit int `json:"edgeLimit"`
	// PathStartKey, PathEndKey and PathDropoffKey are nodes ("2_/pricing": a step and
	// its item) whose persons an actors query lists (PathsActors); the paths
	// themselves ignore them, as PostHog's do.
	PathStartKey   string `json:"pathStartKey"`
	PathEndKey     string `json:"pathEndKey"`
	PathDropoffKey string `json:"pathDropoffKey"`
}

// PathsResult is the answer of a PathsQuery: edges "1_/pricing" → "2_/signup", each
// with the paths that took it and their mean time between the two steps (ms).
type PathsResult struct {
	Results  []PathsEdge `json:"results"`
	Timezone string      `json:"timezone"`
}

// PathsEdge is one edge.
type PathsEdge struct {
	Source                string  `json:"source"`
	Target                string  `json:"target"`
	Value                 int64   `json:"value"`
	AverageConversionTime float64 `json:"average_conversion_time"`
}

const (
	defaultPathSteps = 5
	maxPathSteps     = 20
	defaultPathEdges = 50
	maxPathEdges     = 500
	// pathSessionGap ends a path: a person's events further apart are two paths.
	pathSessionGap = 30 * time.Minute
)

// pathsPlan is what a PathsQuery reads, shared by the query and the persons of its
// edges and nodes (PathsActors), which are then the persons the edges count:
// path_kept holds a row per step of each path (person_id, session, item, "timestamp",
// step from 1).
type pathsPlan struct {
	ctes    string
	args    []any
	persons personJoin
	edges   int
}

// pathsPlanOf plans pq; ctx is a request's, from begin.
func (q *Queries) pathsPlanOf(ctx context.Context, scope Scope, pq PathsQuery, now time.Time) (*pathsPlan, error) {
	f := pq.PathsFilter
	steps, edges := cmp.Or(f.StepLimit, defaultPathSteps), cmp.Or(f.EdgeLimit, defaultPathEdges)
	if steps < 2 || steps > maxPathSteps {
		return nil, queryErrorf("pathsFilter.stepLimit must be from 2 to %d, not %d", maxPathSteps, steps)
	}
	if edges < 1 || edges > maxPathEdges {
		return nil, queryErrorf("pathsFilter.edgeLimit must be from 1 to %d, not %d", maxPathEdges, edges)
	}
	types := f.IncludeEventTypes
	if len(types) == 0 {
		types = []string{"$pageview"}
	}
	// item is what a step is of an event, NULL for events that are no step.
	var cases []string
	for _, t := range types {
		switch t {
		case "$pageview":
			url, _ := propertyValue("properties", "$current_url") // a literal path: no arguments
			cases = append(cases, `WHEN event = '$pageview' THEN `+url)
		case "$screen":
			screen, _ := propertyValue("properties", "$screen_name")
			cases = append(cases, `WHEN event = '$screen' THEN `+screen)
		case "custom_event":
			cases = append(cases, `WHEN event NOT IN ('$pageview', '$screen') AND event NOT LIKE '$%' THEN event`)
		default:
			return nil, queryErrorf("pathsFilter.includeEventTypes takes $pageview, $screen and custom_event, not %q", t)
		}
	}
	from, to, err := q.dates(ctx, scope, pq.DateRange, now)
	if err != nil {
		return nil, err
	}
	filters, filterArgs, withPersons, err := propertyFilters(pq.Properties)
	if err != nil {
		return nil, err
	}
	where, args := append([]string{`"timestamp" >= ?`, `"timestamp" < ?`}, filters...), append([]any{from, to}, filterArgs...)
	// Each path's steps numbered from 1; with a start point from its first step of it,
	// with an end point up to its first step of it, and paths without them left out.
	first := "1"
	var cut []string
	if f.StartPoint != "" {
		first = `min(CASE WHEN item = ? THEN step END) OVER (PARTITION BY person_id, session)`
		args = append(args, f.StartPoint)
		cut = append(cut, "first_step IS NOT NULL AND step >= first_step")
	}
	last := "NULL"
	if f.EndPoint != "" {
		last = `min(CASE WHEN item = ? THEN step END) OVER (PARTITION BY person_id, session)`
		args = append(args, f.EndPoint)
		cut = append(cut, "last_step IS NOT NULL AND step <= last_step")
	}
	cut = append(cut, "step - first_step < ?")
	args = append(args, steps)
	ctes := `WITH path_items AS (
			SELECT person_id, "timestamp", CASE ` + strings.Join(cases, " ") + ` END AS item FROM events WHERE ` + strings.Join(where, " AND ") + `),
		path_sessions AS (
			SELECT *, sum(CASE WHEN gap IS NULL OR gap > INTERVAL ` + strconv.Itoa(int(pathSessionGap/time.Minute)) + ` MINUTE THEN 1 ELSE 0 END)
				OVER (PARTITION BY person_id ORDER BY "timestamp" ROWS UNBOUNDED PRECEDING) AS session
			FROM (SELECT *, "timestamp" - lag("timestamp") OVER (PARTITION BY person_id ORDER BY "timestamp") AS gap FROM path_items WHERE item IS NOT NULL)),
		path_steps AS (
			SELECT person_id, session, item, "timestamp", row_number() OVER (PARTITION BY person_id, session ORDER BY "timestamp") AS step
			FROM (SELECT *, lag(item) OVER (PARTITION BY person_id, session ORDER BY "timestamp") AS previous_item FROM path_sessions)
			WHERE previous_item IS DISTINCT FROM item),
		path_bounds AS (
			SELECT *, ` + first + ` AS first_step, ` + last + ` AS last_step FROM path_steps),
		path_kept AS (
			SELECT person_id, session, item, "timestamp", step - first_step + 1 AS step FROM path_bounds WHERE ` + strings.Join(cut, " AND ") + `)`
	return &pathsPlan{ctes: ctes, args: args, persons: max(personJoinOf(withPersons), currentPersons), edges: edges}, nil
}

// Paths runs a PathsQuery. Persons are as they are now (merged ids are one person).
func (q *Queries) Paths(ctx context.Context, scope Scope, pq PathsQuery, now time.Time) (*PathsResult, error) {
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	plan, err := q.pathsPlanOf(ctx, scope, pq, now)
	if err != nil {
		return nil, err
	}
	query := plan.ctes + `
		SELECT a.step || '_' || a.item, b.step || '_' || b.item, count(*),
				avg(epoch_ms(b."timestamp") - epoch_ms(a."timestamp"))
			FROM path_kept a JOIN path_kept b ON b.person_id = a.person_id AND b.session = a.session AND b.step = a.step + 1
			GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT ?`
	rows, err := q.run(ctx, scope, query, plan.persons, maxPathEdges, append(plan.args, plan.edges)...)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	result := &PathsResult{Results: make([]PathsEdge, 0, len(rows.Results)), Timezone: scope.timezone()}
	for _, row := range rows.Results {
		source, _ := row[0].(string)
		target, _ := row[1].(string)
		result.Results = append(result.Results, PathsEdge{Source: source, Target: target, Value: int64(toFloat(row[2])), AverageConversionTime: toFloat(row[3])})
	}
	return result, nil
}
