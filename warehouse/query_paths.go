package warehouse

import (
	"cmp"
	"context"
	"slices"
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
// path_edges holds a row per step of each person's session (person_id, session, h, the
// item's hash, "timestamp", n, and the next step's next_n, next_h, next_time; first_n
// the path's first step, last_n the end point's), path_names each item's text by its
// hash. edgeCut keeps the edges of the paths (a step within them and the next too),
// nodeCut their steps; each takes steps as its one argument, after args.
type pathsPlan struct {
	ctes             string
	args             []any
	persons          personJoin
	steps, edges     int
	edgeCut, nodeCut string
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
	// The steps are numbered in three window passes over the items alone, each sorting
	// narrow rows: an item is the 64-bit hash of its text in them (DuckDB's windows
	// slow down several times carrying the text; two items of one query with the same
	// hash would count as one, a chance of about n²/2^65 for n items), its text joined
	// back to the edges counted. (1) each item beside the person's item before it, which
	// starts a session (none before, or 30 minutes since) or a step (another item than
	// the one before, in the same session: repeats in a row are one step); (2) the steps
	// numbered through the person's history (n), and each with its session (the count
	// of session starts up to it), a session's steps so numbered n, n+1, ...; (3)
	// within the session, its first step's number (the start point's first, with one),
	// the end point's first, and the next step (lead), which makes the edge. An edge is
	// kept when both its steps are: the first from the start of the path, the next
	// within the step limit and the end point.
	begin := "min(n) OVER session" // the session's first step: n only grows
	var cut []string
	if f.StartPoint != "" {
		begin = `min(CASE WHEN h = hash(CAST(? AS VARCHAR)) THEN n END) OVER whole_session`
		args = append(args, f.StartPoint)
		cut = append(cut, "first_n IS NOT NULL AND n >= first_n")
	}
	last := "NULL"
	nodeCut := slices.Clone(cut)
	if f.EndPoint != "" {
		last = `min(CASE WHEN h = hash(CAST(? AS VARCHAR)) THEN n END) OVER whole_session`
		args = append(args, f.EndPoint)
		cut = append(cut, "last_n IS NOT NULL AND next_n <= last_n")
		nodeCut = append(nodeCut, "last_n IS NOT NULL AND n <= last_n")
	}
	cut = append(cut, "next_n IS NOT NULL", "next_n - first_n < ?")
	nodeCut = append(nodeCut, "n - first_n < ?")
	ctes := `WITH path_items AS (
			SELECT person_id, "timestamp", CASE ` + strings.Join(cases, " ") + ` END AS item FROM events WHERE ` + strings.Join(where, " AND ") + `),
		path_marks AS (
			SELECT person_id, "timestamp", h,
				coalesce("timestamp" - lag("timestamp") OVER person > INTERVAL ` + strconv.Itoa(int(pathSessionGap/time.Minute)) + ` MINUTE, true) AS starts_session,
				lag(h) OVER person AS previous_h
			FROM (SELECT person_id, "timestamp", hash(item) AS h FROM path_items WHERE item IS NOT NULL)
			WINDOW person AS (PARTITION BY person_id ORDER BY "timestamp")),
		path_steps AS (
			SELECT person_id, "timestamp", h,
				sum(starts_session::INTEGER) OVER person AS session, row_number() OVER person AS n
			FROM path_marks WHERE starts_session OR previous_h IS DISTINCT FROM h
			WINDOW person AS (PARTITION BY person_id ORDER BY "timestamp" ROWS UNBOUNDED PRECEDING)),
		path_edges AS (
			SELECT person_id, session, h, "timestamp", n, lead(n) OVER session AS next_n, lead(h) OVER session AS next_h,
				lead("timestamp") OVER session AS next_time, ` + begin + ` AS first_n, ` + last + ` AS last_n
			FROM path_steps
			WINDOW session AS (PARTITION BY person_id, session ORDER BY n),
				whole_session AS (PARTITION BY person_id, session ORDER BY n ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)),
		path_names AS (SELECT hash(item) AS h, any_value(item) AS item FROM path_items WHERE item IS NOT NULL GROUP BY ALL)`
	return &pathsPlan{ctes: ctes, args: args, persons: max(personJoinOf(withPersons), currentPersons), steps: steps, edges: edges,
		edgeCut: strings.Join(cut, " AND "), nodeCut: strings.Join(nodeCut, " AND ")}, nil
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
	query := plan.ctes + `,
		path_counts AS (
			SELECT n - first_n + 1 AS step, h, next_h, count(*) AS paths, avg(epoch_ms(next_time) - epoch_ms("timestamp")) AS ms
			FROM path_edges WHERE ` + plan.edgeCut + ` GROUP BY ALL)
		SELECT step || '_' || a.item, (step + 1) || '_' || b.item, paths, ms
			FROM path_counts JOIN path_names a ON a.h = path_counts.h JOIN path_names b ON b.h = path_counts.next_h
			ORDER BY 3 DESC, 1, 2 LIMIT ?`
	rows, err := q.run(ctx, scope, query, plan.persons, maxPathEdges, append(slices.Clone(plan.args), plan.steps, plan.edges)...)
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
