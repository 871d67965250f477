package main

import (
	"encoding/json"
	"fmt"
	"time"
)

// The Web analytics figures of the queries scenario: the screen's overview, compared
// with the period before, and its table of top pages with their bounce rates. Their
// ceilings compute the sessions as hedge does (warehouse/query_web.go), over the typed
// columns: a session's events up to a day either side of the window, read once and
// grouped by the hash of the session's id (by session and page for the pages), its
// views, its entry page, a bounce being one view, no $autocapture and under 10 s.

// webEventsCeiling is the events of [from, to) and a day either side, as the ceilings'
// sessions read them: counted marks the views of [from, to).
func webEventsCeiling(from, to time.Time) string {
	return fmt.Sprintf(`(SELECT hash(session_id) AS sid, "timestamp" AS ts, event, person_id, pathname AS value,
			event IN ('$pageview', '$screen') AS is_view,
			event IN ('$pageview', '$screen') AND "timestamp" >= %[3]s AND "timestamp" < %[4]s AS counted
		FROM events WHERE "timestamp" >= %[1]s AND "timestamp" < %[2]s AND session_id IS NOT NULL)`,
		sqlTime(from.Add(-24*time.Hour)), sqlTime(to.Add(24*time.Hour)), sqlTime(from), sqlTime(to))
}

// webBounceCeiling is the SQL of a session of s that bounced.
const webBounceCeiling = `CASE WHEN s.views > 1 OR s.autocaptures > 0 OR date_diff('second', s.started, s.ended) >= 10 THEN 0 ELSE 1 END`

// webOverviewCase is the overview of the range, compared with the 30 days before it.
func webOverviewCase(r queryRange) queryCase {
	previous := r.from.Add(-r.to.Sub(r.from))
	return queryCase{name: "WebOverviewQuery: compared with the 30 days before",
		query: map[string]any{"kind": "WebOverviewQuery", "dateRange": r.dateRange(), "properties": []any{}, "compareFilter": map[string]bool{"compare": true}},
		ceiling: fmt.Sprintf(`WITH s AS (SELECT sid, min(ts) AS started, max(ts) AS ended,
					count(*) FILTER (WHERE is_view) AS views, count(*) FILTER (WHERE event = '$autocapture') AS autocaptures,
					count(*) FILTER (WHERE counted) AS counted, any_value(person_id) FILTER (WHERE counted) AS person
				FROM %s GROUP BY sid
				HAVING min(ts) >= %s AND min(ts) < %s AND count(*) FILTER (WHERE counted) > 0)
			SELECT started >= %s AS cur, count(DISTINCT person), sum(counted)::BIGINT, count(*),
				avg(date_diff('second', started, ended)), avg(%s)
			FROM s GROUP BY cur ORDER BY cur DESC`,
			webEventsCeiling(previous, r.to), sqlTime(previous), sqlTime(r.to), sqlTime(r.from), webBounceCeiling),
		check: checkWebOverview}
}

// webPagesCase is the table of the range's 10 top pages with their bounce rates.
func webPagesCase(r queryRange) queryCase {
	return queryCase{name: "WebStatsTableQuery: top 10 pages with bounce rates, 30 days",
		query: map[string]any{"kind": "WebStatsTableQuery", "breakdownBy": "Page", "includeBounceRate": true, "dateRange": r.dateRange(),
			"properties": []any{}, "limit": 10},
		ceiling: fmt.Sprintf(`WITH g AS MATERIALIZED (SELECT sid, value, min(ts) AS first, max(ts) AS last,
					count(*) FILTER (WHERE is_view) AS views, count(*) FILTER (WHERE event = '$autocapture') AS autocaptures,
					count(*) FILTER (WHERE counted) AS counted, any_value(person_id) FILTER (WHERE counted) AS person,
					min(ts) FILTER (WHERE is_view) AS first_view
				FROM %[1]s GROUP BY sid, value),
			s AS MATERIALIZED (SELECT sid, min(first) AS started, max(last) AS ended, sum(views) AS views, sum(autocaptures) AS autocaptures,
					arg_min(value, first_view) FILTER (WHERE first_view IS NOT NULL) AS entry
				FROM g GROUP BY sid HAVING min(first) >= %[2]s AND min(first) < %[3]s AND sum(counted) > 0),
			b AS (SELECT entry AS value, avg(%[4]s) AS bounce_rate FROM s GROUP BY entry)
			SELECT value, count(DISTINCT g.person), sum(g.counted)::BIGINT, any_value(b.bounce_rate)
			FROM g JOIN s USING (sid) LEFT JOIN b USING (value) WHERE g.counted > 0 GROUP BY value
			ORDER BY 2 DESC, 3 DESC, value ASC NULLS FIRST LIMIT 10`,
			webEventsCeiling(r.from, r.to), sqlTime(r.from), sqlTime(r.to), webBounceCeiling),
		check: checkWebPages}
}

// checkWebOverview compares the overview's visitors, views and sessions, now and
// before, with the ceiling's.
func checkWebOverview(answer []byte, rows [][]any) error {
	var a struct {
		Results []struct {
			Key      string   `json:"key"`
			Value    *float64 `json:"value"`
			Previous *float64 `json:"previous"`
		} `json:"results"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return fmt.Errorf("cannot read the answer: %w", err)
	}
	got, want := map[string]string{}, map[string]string{}
	// Counts as integers, the mean duration and the bounce rate (a percentage in the
	// answer, a fraction in the ceiling's) to six places.
	show := func(k int, v float64) string {
		if k < 3 {
			return fmt.Sprint(int64(v))
		}
		return fmt.Sprintf("%.6f", v)
	}
	for k, item := range a.Results {
		if item.Value != nil {
			got[item.Key] = show(k, *item.Value)
		}
		if item.Previous != nil {
			got[item.Key+" before"] = show(k, *item.Previous)
		}
	}
	for _, row := range rows {
		suffix := " before"
		if cur, _ := row[0].(bool); cur {
			suffix = ""
		}
		for k, key := range []string{"visitors", "views", "sessions", "session duration", "bounce rate"} {
			if f, ok := row[k+1].(float64); ok {
				if k == 4 {
					f *= 100
				}
				want[key+suffix] = show(k, f)
			} else {
				want[key+suffix] = fmt.Sprint(row[k+1])
			}
		}
	}
	return compareCounts(got, want)
}

// checkWebPages compares the pages' visitors, views and bounce rates with the ceiling's.
func checkWebPages(answer []byte, rows [][]any) error {
	var a struct {
		Results [][]any `json:"results"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return fmt.Errorf("cannot read the answer: %w", err)
	}
	got, want := map[string]string{}, map[string]string{}
	current := func(cell any) any {
		if pair, ok := cell.([]any); ok && len(pair) == 2 {
			return pair[0]
		}
		return nil
	}
	for _, row := range a.Results {
		if len(row) == 4 {
			got[fmt.Sprint(row[0])] = fmt.Sprintf("%v %v %.6f", current(row[1]), current(row[2]), current(row[3]))
		}
	}
	for _, row := range rows {
		want[fmt.Sprint(row[0])] = fmt.Sprintf("%v %v %.6f", row[1], row[2], row[3])
	}
	return compareCounts(got, want)
}
