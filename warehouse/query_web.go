package warehouse

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"
)

// Web analytics: PostHog's WebOverviewQuery (the tiles) and WebStatsTableQuery (the
// tables of pages, entry and exit pages, referrers, devices, browsers, systems and
// countries), over the events hedge already stores.
//
// A session is the events of one $session_id, as PostHog's web analytics reads them;
// events without one are not counted. A view is a $pageview or a $screen. Decisions
// where PostHog's session table does more than hedge keeps:
//   - a session is read from its events of the range (with the previous period, when
//     compared) and of the day on each side of it, PostHog's longest session: its start
//     is its first event, its duration the seconds from its first to its last event
//     (all events, not only views: a $pageleave or an $autocapture lengthens it), and
//     it belongs to the period it starts in; one that starts before the range is not
//     counted, nor are its views in the range, as PostHog attributes a session's views
//     to its start. PostHog's session table sees a session whole; hedge reads no more
//     than a day past the range, so what it reads stays bounded by the range;
//   - a session bounces, as PostHog's $is_bounce counts pageviews by default, unless it
//     has more than one view, or an $autocapture, or lasts 10 seconds or more;
//   - its entry page is the $pathname of its first view, its exit page that of its last
//     (a $pageleave or other event after it does not move it), its referrer the
//     $referring_domain of its first view, its UTM source and the others that view's
//     utm_source, utm_medium, utm_campaign, utm_term and utm_content;
//   - a visitor is a person (after merges, as a trend's unique users): one person's
//     sessions on two devices are one visitor.
//
// Property filters select the views; a session counts when one of its views passes
// them, and its duration and bounce are still the whole session's, as PostHog's.

// WebOverviewQuery is PostHog's WebOverviewQuery.
type WebOverviewQuery struct {
	DateRange  DateRange        `json:"dateRange"`
	Properties []PropertyFilter `json:"properties"`
	// CompareFilter.Compare fills each item's previous from the period as long just
	// before the range.
	CompareFilter *CompareFilter `json:"compareFilter"`
}

// WebOverviewResult is the answer of a WebOverviewQuery, in PostHog's shape.
type WebOverviewResult struct {
	Results []WebOverviewItem `json:"results"`
	// DateFrom and DateTo are the range the query read, [DateFrom, DateTo).
	DateFrom string `json:"dateFrom"`
	DateTo   string `json:"dateTo"`
}

// WebOverviewItem is one tile, as PostHog's: key is visitors, views, sessions, session
// duration or bounce rate; kind is unit, duration_s (seconds) or percentage (0 to 100).
// Value is nil where there is nothing to average (no sessions); Previous is nil without
// a comparison; ChangeFromPreviousPct is the change in percent, rounded, when both are
// known and Previous is not 0.
type WebOverviewItem struct {
	Key                   string   `json:"key"`
	Kind                  string   `json:"kind"`
	Value                 *float64 `json:"value"`
	Previous              *float64 `json:"previous"`
	ChangeFromPreviousPct *float64 `json:"changeFromPreviousPct"`
	IsIncreaseBad         bool     `json:"isIncreaseBad,omitempty"`
}

// WebStatsTableQuery is PostHog's WebStatsTableQuery.
type WebStatsTableQuery struct {
	// BreakdownBy is Page, InitialPage (entry pages), ExitPage, InitialReferringDomain,
	// InitialUTMSource, InitialUTMMedium, InitialUTMCampaign, InitialUTMTerm,
	// InitialUTMContent, DeviceType, Browser, OS or Country (from $geoip_country_code).
	BreakdownBy   string           `json:"breakdownBy"`
	DateRange     DateRange        `json:"dateRange"`
	Properties    []PropertyFilter `json:"properties"`
	CompareFilter *CompareFilter   `json:"compareFilter"`
	// IncludeBounceRate adds the bounce_rate column: for Page, of the sessions that
	// entered on the page, as PostHog's; else of the sessions of each row.
	IncludeBounceRate bool `json:"includeBounceRate"`
	// OrderBy is PostHog's [field, direction]: Visitors, Views or BounceRate, ASC or
	// DESC; by default visitors, then views, descending.
	OrderBy []string `json:"orderBy"`
	// Limit is the rows answered (default DefaultWebStatsLimit, at most
	// MaxWebStatsLimit); Offset skips rows, as PostHog pages the table.
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// The rows of a WebStatsTableQuery: PostHog's default page, and the most it answers.
const (
	DefaultWebStatsLimit = 100
	MaxWebStatsLimit     = 10_000
)

// WebStatsTableResult is the answer of a WebStatsTableQuery, in PostHog's shape: each
// row is the breakdown value (nil when the events have none), then for each count the
// pair [current, previous] (previous nil without a comparison); bounce_rate is a
// fraction, 0 to 1, as PostHog's table has it.
type WebStatsTableResult struct {
	Columns []string `json:"columns"`
	Results [][]any  `json:"results"`
	HasMore bool     `json:"hasMore"`
	Limit   int      `json:"limit"`
	Offset  int      `json:"offset"`
}

// webSessionLimit is the longest session, PostHog's: the events read on each side of a
// web query's window to see its sessions whole.
const webSessionLimit = 24 * time.Hour

// webViews is the SQL of an event that is a view.
const webViews = `event IN ('$pageview', '$screen')`

// webBounce is the SQL of a session of the CTE s that bounced (PostHog's $is_bounce).
const webBounce = `NOT (s.views > 1 OR s.autocaptures > 0 OR date_diff('second', s.started, s.ended) >= 10)`

// webSpan is what a web query reads: the range [from, to), and the window of events
// [start, to), which begins at the previous period's start when compared.
type webSpan struct {
	from, to, start time.Time
	compare         bool
}

// webSpanOf resolves a web query's range and its comparison.
func (q *Queries) webSpanOf(ctx context.Context, scope Scope, dr DateRange, compare *CompareFilter, now time.Time) (webSpan, error) {
	from, to, err := q.dates(ctx, scope, dr, now)
	if err != nil {
		return webSpan{}, err
	}
	span := webSpan{from: from, to: to, start: from}
	if compare != nil && compare.Compare {
		span.compare, span.start = true, from.Add(-to.Sub(from))
	}
	return span, nil
}

// webRowsSQL is the CTEs of a web query, ending with r: a row per session of the
// period (its first event in [span.start, span.to)) that has a view the filters pass,
// or with an event-level breakdown (b.view) per such session and value; each row with
// the value (b.session's or b.view's, NULL without a breakdown), the session's person,
// the views it counts (counted), its period (cur: the range, else the one before),
// bounce (1 or 0; with bounce only), its duration in seconds (with bounce), sid, and the
// session's entry page (entry, with b.view and bounce only).
//
// The events are read once: with a breakdown of views, grouped by session and value
// (g), then the groups by session (s), both kept for r and the bounce rates.
// Placeholders come in the order of args.
func webRowsSQL(span webSpan, b webBreakdown, properties []PropertyFilter, bounce bool) (ctes string, args []any, withPersons bool, err error) {
	filters, filterArgs, withPersons, err := propertyFilters(properties)
	if err != nil {
		return "", nil, false, err
	}
	sid, _ := propertyValue("properties", "$session_id")
	counted := strings.Join(append([]string{webViews, `"timestamp" >= ?`, `"timestamp" < ?`}, filters...), " AND ")
	value := cmp.Or(b.view, "NULL")
	switch b.session {
	case "entry_path", "exit_path":
		value, _ = propertyValue("properties", "$pathname")
	case "entry_referrer":
		value, _ = propertyValue("properties", "$referring_domain")
	default:
		if key, ok := webEntryKeys[b.session]; ok {
			value, _ = propertyValue("properties", key)
		}
	}
	// A session is grouped by the 64-bit hash of its id, which DuckDB groups and joins
	// several times faster than the text: two sessions of one query with the same hash
	// would count as one, a chance of about n²/2^65 for n sessions (3e-8 for a million).
	events := `(SELECT hash(` + sid + `) AS sid, "timestamp" AS ts, event, person_id, ` + value + ` AS value,
			` + webViews + ` AS is_view, ` + counted + ` AS counted
		FROM events WHERE "timestamp" >= ? AND "timestamp" < ? AND ` + sid + ` IS NOT NULL)`
	args = slices.Concat([]any{span.start, span.to}, filterArgs, []any{span.start.Add(-webSessionLimit), span.to.Add(webSessionLimit)})
	period := []any{span.start, span.to}
	if b.view == "" {
		// A session's value: its first view's, or its last's.
		sessionValue := "NULL"
		switch b.session {
		case "entry_path", "entry_referrer", "entry_utm_source", "entry_utm_medium", "entry_utm_campaign", "entry_utm_term", "entry_utm_content":
			sessionValue = "arg_min(value, ts) FILTER (WHERE is_view)"
		case "exit_path":
			sessionValue = "arg_max(value, ts) FILTER (WHERE is_view)"
		}
		ctes = `s AS (
			SELECT sid, min(ts) AS started, max(ts) AS ended,
				count(*) FILTER (WHERE is_view) AS views, count(*) FILTER (WHERE event = '$autocapture') AS autocaptures,
				count(*) FILTER (WHERE counted) AS counted, any_value(person_id) FILTER (WHERE counted) AS person,
				` + sessionValue + ` AS value
			FROM ` + events + ` GROUP BY sid
			HAVING min(ts) >= ? AND min(ts) < ? AND count(*) FILTER (WHERE counted) > 0),
		r AS (SELECT value, person, counted, s.started >= ? AS cur, CASE WHEN ` + webBounce + ` THEN 1 ELSE 0 END AS bounce,
			date_diff('second', s.started, s.ended) AS duration, sid, NULL AS entry FROM s)`
		return ctes, slices.Concat(args, period, []any{span.from}), withPersons, nil
	}
	if !bounce {
		// Without bounce rates, a session needs only its start.
		ctes = `g AS MATERIALIZED (
			SELECT sid, value, min(ts) AS first, count(*) FILTER (WHERE counted) AS counted, any_value(person_id) FILTER (WHERE counted) AS person
			FROM ` + events + ` GROUP BY sid, value),
		s AS (SELECT sid, min(first) AS started FROM g GROUP BY sid HAVING min(first) >= ? AND min(first) < ? AND sum(counted) > 0),
		r AS (SELECT g.value, g.person, g.counted, s.started >= ? AS cur, NULL AS bounce, NULL AS duration, sid, NULL AS entry
			FROM g JOIN s USING (sid) WHERE g.counted > 0)`
		return ctes, slices.Concat(args, period, []any{span.from}), withPersons, nil
	}
	ctes = `g AS MATERIALIZED (
			SELECT sid, value, min(ts) AS first, max(ts) AS last,
				count(*) FILTER (WHERE is_view) AS views, count(*) FILTER (WHERE event = '$autocapture') AS autocaptures,
				count(*) FILTER (WHERE counted) AS counted, any_value(person_id) FILTER (WHERE counted) AS person,
				min(ts) FILTER (WHERE is_view) AS first_view
			FROM ` + events + ` GROUP BY sid, value),
		s AS MATERIALIZED (
			SELECT sid, min(first) AS started, max(last) AS ended, sum(views) AS views, sum(autocaptures) AS autocaptures,
				arg_min(value, first_view) FILTER (WHERE first_view IS NOT NULL) AS entry
			FROM g GROUP BY sid
			HAVING min(first) >= ? AND min(first) < ? AND sum(counted) > 0),
		r AS (SELECT g.value, g.person, g.counted, s.started >= ? AS cur, CASE WHEN ` + webBounce + ` THEN 1 ELSE 0 END AS bounce,
			date_diff('second', s.started, s.ended) AS duration, sid, s.entry
			FROM g JOIN s USING (sid) WHERE g.counted > 0)`
	return ctes, slices.Concat(args, period, []any{span.from}), withPersons, nil
}

// WebOverview runs a WebOverviewQuery.
func (q *Queries) WebOverview(ctx context.Context, scope Scope, wq WebOverviewQuery, now time.Time) (*WebOverviewResult, error) {
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	span, err := q.webSpanOf(ctx, scope, wq.DateRange, wq.CompareFilter, now)
	if err != nil {
		return nil, err
	}
	ctes, args, withPersons, err := webRowsSQL(span, webBreakdown{}, wq.Properties, true)
	if err != nil {
		return nil, err
	}
	query := `WITH ` + ctes + `
		SELECT cur, count(DISTINCT person), sum(counted)::BIGINT, count(*), avg(duration), avg(bounce)
		FROM r GROUP BY cur`
	rows, err := q.run(ctx, scope, query, max(personJoinOf(withPersons), currentPersons), 2, args...)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	// The periods' figures: visitors, views, sessions, duration, bounce; a period
	// without sessions has counts of 0 and no averages.
	var current, previous [5]*float64
	zero := func(p *[5]*float64) {
		for k := range 3 {
			p[k] = new(float64)
		}
	}
	zero(&current)
	if span.compare {
		zero(&previous)
	}
	for _, row := range rows.Results {
		p := &previous
		if cur, _ := row[0].(bool); cur {
			p = &current
		} else if !span.compare {
			continue
		}
		for k := range 5 {
			if row[k+1] != nil {
				f := toFloat(row[k+1])
				p[k] = &f
			}
		}
	}
	if current[4] != nil {
		*current[4] *= 100
	}
	if previous[4] != nil {
		*previous[4] *= 100
	}
	keys := []struct{ key, kind string }{{"visitors", "unit"}, {"views", "unit"}, {"sessions", "unit"},
		{"session duration", "duration_s"}, {"bounce rate", "percentage"}}
	result := &WebOverviewResult{Results: make([]WebOverviewItem, len(keys)),
		DateFrom: span.from.UTC().Format(time.RFC3339), DateTo: span.to.UTC().Format(time.RFC3339)}
	for k, key := range keys {
		item := WebOverviewItem{Key: key.key, Kind: key.kind, Value: current[k], Previous: previous[k], IsIncreaseBad: key.key == "bounce rate"}
		if item.Value != nil && item.Previous != nil && *item.Previous != 0 {
			change := math.Round(100 * (*item.Value - *item.Previous) / *item.Previous)
			item.ChangeFromPreviousPct = &change
		}
		result.Results[k] = item
	}
	return result, nil
}

// webEntryKeys are the session values of the InitialUTM breakdowns: the property of
// the session's first view, as PostHog's $entry_utm_source and the others are. posthog-js
// puts a page's utm_* parameters on its $pageview.
var webEntryKeys = map[string]string{
	"entry_utm_source": "utm_source", "entry_utm_medium": "utm_medium", "entry_utm_campaign": "utm_campaign",
	"entry_utm_term": "utm_term", "entry_utm_content": "utm_content",
}

// webBreakdown is a breakdown of a WebStatsTableQuery: view, the SQL of a view's value;
// or session, which of a session's values (entry_path, exit_path, entry_referrer); and
// whether rows without a value are left out (known), as PostHog leaves out the devices,
// browsers, systems and countries it does not know.
type webBreakdown struct {
	view, session string
	known         bool
}

func webBreakdownOf(by string) (webBreakdown, error) {
	event := func(key string) string {
		value, _ := propertyValue("properties", key)
		return value
	}
	switch by {
	case "Page":
		return webBreakdown{view: event("$pathname")}, nil
	case "InitialPage":
		return webBreakdown{session: "entry_path"}, nil
	case "ExitPage":
		return webBreakdown{session: "exit_path"}, nil
	case "InitialReferringDomain":
		return webBreakdown{session: "entry_referrer"}, nil
	case "InitialUTMSource", "InitialUTMMedium", "InitialUTMCampaign", "InitialUTMTerm", "InitialUTMContent":
		// Decision: a session that entered without the parameter is left out, not a
		// (none) row, which would outweigh every campaign: the tables list campaigns.
		return webBreakdown{session: "entry_utm_" + strings.ToLower(strings.TrimPrefix(by, "InitialUTM")), known: true}, nil
	case "DeviceType":
		return webBreakdown{view: event("$device_type"), known: true}, nil
	case "Browser":
		return webBreakdown{view: event("$browser"), known: true}, nil
	case "OS":
		return webBreakdown{view: event("$os"), known: true}, nil
	case "Country":
		return webBreakdown{view: event("$geoip_country_code"), known: true}, nil
	}
	return webBreakdown{}, queryErrorf("breakdownBy must be Page, InitialPage, ExitPage, InitialReferringDomain, InitialUTMSource, InitialUTMMedium, InitialUTMCampaign, InitialUTMTerm, InitialUTMContent, DeviceType, Browser, OS or Country, not %q", by)
}

// WebStatsTable runs a WebStatsTableQuery.
func (q *Queries) WebStatsTable(ctx context.Context, scope Scope, wq WebStatsTableQuery, now time.Time) (*WebStatsTableResult, error) {
	breakdown, err := webBreakdownOf(wq.BreakdownBy)
	if err != nil {
		return nil, err
	}
	limit := cmp.Or(wq.Limit, DefaultWebStatsLimit)
	if limit < 0 || limit > MaxWebStatsLimit {
		return nil, queryErrorf("limit must be between 1 and %d, not %d", MaxWebStatsLimit, wq.Limit)
	}
	if wq.Offset < 0 || wq.Offset > MaxWebStatsLimit*10 {
		return nil, queryErrorf("offset must be between 0 and %d, not %d", MaxWebStatsLimit*10, wq.Offset)
	}
	order, err := webOrder(wq.OrderBy, wq.IncludeBounceRate)
	if err != nil {
		return nil, err
	}
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	span, err := q.webSpanOf(ctx, scope, wq.DateRange, wq.CompareFilter, now)
	if err != nil {
		return nil, err
	}
	ctes, args, withPersons, err := webRowsSQL(span, breakdown, wq.Properties, wq.IncludeBounceRate)
	if err != nil {
		return nil, err
	}
	// Each count of the current period (cur), and of the previous one (NULL without a
	// comparison). A count of no rows is 0, an average of none NULL.
	pair := func(aggregate, of string) string {
		period := func(cur string) string {
			v := aggregate + "(" + of + ") FILTER (WHERE " + cur + ")"
			if aggregate != "avg" {
				v = "coalesce(" + v + ", 0)"
			}
			return "(" + v + ")::DOUBLE"
		}
		previous := "NULL"
		if span.compare {
			previous = period("NOT cur")
		}
		return "[" + period("cur") + ", " + previous + "]"
	}
	selects := []string{"value", pair("count", "DISTINCT person") + " AS visitors", pair("sum", "counted") + " AS views"}
	from := "r"
	if wq.IncludeBounceRate {
		if wq.BreakdownBy == "Page" {
			// A page's bounce rate is that of the sessions that entered on it (PostHog's
			// PATH_BOUNCE_QUERY): a page that no session entered on has none.
			selects = append(selects, "any_value(b.bounce_rate) AS bounce_rate")
			from = `r LEFT JOIN (SELECT entry AS value, ` + pair("avg", "bounce") + ` AS bounce_rate
				FROM (SELECT entry, s.started >= ? AS cur, CASE WHEN ` + webBounce + ` THEN 1 ELSE 0 END AS bounce FROM s)
				GROUP BY entry) b USING (value)`
			args = append(args, span.from)
		} else {
			selects = append(selects, pair("avg", "bounce")+" AS bounce_rate")
		}
	}
	where := "TRUE"
	if breakdown.known {
		where = "value IS NOT NULL"
	}
	query := `WITH ` + ctes + `
		SELECT * FROM (
			SELECT ` + strings.Join(selects, ", ") + ` FROM ` + from + ` WHERE ` + where + `
			GROUP BY value
			-- the rows of the range: a value seen only in the previous period is left out
			HAVING count(*) FILTER (WHERE cur) > 0)
		ORDER BY ` + order + `, value ASC NULLS FIRST
		LIMIT ? OFFSET ?`
	args = append(args, limit+1, wq.Offset)
	rows, err := q.run(ctx, scope, query, max(personJoinOf(withPersons), currentPersons), limit+1, args...)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	columns := []string{"context.columns.breakdown_value", "context.columns.visitors", "context.columns.views"}
	if wq.IncludeBounceRate {
		columns = append(columns, "context.columns.bounce_rate")
	}
	result := &WebStatsTableResult{Columns: columns, Results: [][]any{}, Limit: limit, Offset: wq.Offset}
	for i, row := range rows.Results {
		if i == limit {
			result.HasMore = true
			break
		}
		out := []any{row[0]}
		for _, cell := range row[1:] {
			out = append(out, webPair(cell))
		}
		result.Results = append(result.Results, out)
	}
	return result, nil
}

// webPair is a [current, previous] list of the driver as two numbers or nils.
func webPair(cell any) []any {
	pair := []any{nil, nil}
	list, _ := cell.([]any)
	for k := range min(len(list), 2) {
		if list[k] != nil {
			pair[k] = toFloat(list[k])
		}
	}
	return pair
}

// webOrder is the ORDER BY of a WebStatsTableQuery's orderBy (PostHog's
// [field, direction]); ties by the other counts, descending.
func webOrder(orderBy []string, bounce bool) (string, error) {
	if len(orderBy) == 0 {
		return "visitors[1] DESC NULLS LAST, views[1] DESC NULLS LAST", nil
	}
	if len(orderBy) != 2 {
		return "", queryErrorf("orderBy is a field and a direction, as [\"Visitors\", \"DESC\"]")
	}
	direction := orderBy[1]
	if direction != "ASC" && direction != "DESC" {
		return "", queryErrorf("the direction of orderBy must be ASC or DESC, not %q", direction)
	}
	switch orderBy[0] {
	case "Visitors":
		return "visitors[1] " + direction + " NULLS LAST, views[1] DESC NULLS LAST", nil
	case "Views":
		return "views[1] " + direction + " NULLS LAST, visitors[1] DESC NULLS LAST", nil
	case "BounceRate":
		if !bounce {
			return "", queryErrorf("orderBy BounceRate needs includeBounceRate")
		}
		return "bounce_rate[1] " + direction + " NULLS LAST, visitors[1] DESC NULLS LAST, views[1] DESC NULLS LAST", nil
	}
	return "", queryErrorf("orderBy must order by Visitors, Views or BounceRate, not %q", orderBy[0])
}
