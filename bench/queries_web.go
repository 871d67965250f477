package main

import (
	"encoding/json"
	"fmt"
	"time"
)

// The Web analytics figures of the queries scenario: the screen's overview, compared
// with the period before, and its table of top pages with their bounce rates. Their
// ceilings compute the sessions as hedge does (warehouse/query_web.go): a session's
// events up to a day either side of the window, its views, its entry page, a bounce
// being one view, no $autocapture and under 10 s.

// webSessionsCeiling is the CTEs of the sessions (s) and of their views (v, by value:
// a typed column or NULL) over [from, to), in SQL over the typed columns.
func webSessionsCeiling(from, to time.Time, value string) string {
	return fmt.Sprintf(`WITH s AS (SELECT session_id AS sid, min("timestamp") AS started, max("timestamp") AS ended,
				count(*) FILTER (WHERE event IN ('$pageview', '$screen')) AS views,
				count(*) FILTER (WHERE event = '$autocapture') AS autocaptures,
				arg_min(pathname, "timestamp") FILTER (WHERE event IN ('$pageview', '$screen')) AS entry
			FROM events WHERE "timestamp" >= %[1]s AND "timestamp" < %[2]s AND session_id IS NOT NULL
			GROUP BY sid HAVING min("timestamp") >= %[3]s AND min("timestamp") < %[4]s),
		v AS (SELECT session_id AS sid, %[5]s AS value, any_value(person_id) AS person, count(*) AS views
			FROM events WHERE "timestamp" >= %[3]s AND "timestamp" < %[4]s AND event IN ('$pageview', '$screen') AND session_id IS NOT NULL
			GROUP BY ALL),
		r AS (SELECT v.*, s.started, s.entry,
				CASE WHEN s.views > 1 OR s.autocaptures > 0 OR date_diff('second', s.started, s.ended) >= 10 THEN 0 ELSE 1 END AS bounce
			FROM v JOIN s USING (sid))`,
		sqlTime(from.Add(-24*time.Hour)), sqlTime(to.Add(24*time.Hour)), sqlTime(from), sqlTime(to), value)
}

// webOverviewCase is the overview of the range, compared with the 30 days before it.
func webOverviewCase(r queryRange) queryCase {
	previous := r.from.Add(-r.to.Sub(r.from))
	return queryCase{name: "WebOverviewQuery: compared with the 30 days before",
		query: map[string]any{"kind": "WebOverviewQuery", "dateRange": r.dateRange(), "properties": []any{}, "compareFilter": map[string]bool{"compare": true}},
		ceiling: webSessionsCeiling(previous, r.to, "NULL") + fmt.Sprintf(`
			SELECT started >= %s AS cur, count(DISTINCT person), sum(views)::BIGINT, count(*)
			FROM r GROUP BY cur ORDER BY cur DESC`, sqlTime(r.from)),
		check: checkWebOverview}
}

// webPagesCase is the table of the range's 10 top pages with their bounce rates.
func webPagesCase(r queryRange) queryCase {
	return queryCase{name: "WebStatsTableQuery: top 10 pages with bounce rates, 30 days",
		query: map[string]any{"kind": "WebStatsTableQuery", "breakdownBy": "Page", "includeBounceRate": true, "dateRange": r.dateRange(),
			"properties": []any{}, "limit": 10},
		ceiling: webSessionsCeiling(r.from, r.to, "pathname") + `,
			b AS (SELECT entry AS value, avg(bounce) AS bounce_rate FROM (SELECT DISTINCT sid, entry, bounce FROM r) GROUP BY entry)
			SELECT value, count(DISTINCT person), sum(views)::BIGINT, any_value(b.bounce_rate)
			FROM r LEFT JOIN b USING (value) GROUP BY value
			ORDER BY 2 DESC, 3 DESC, value ASC NULLS FIRST LIMIT 10`,
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
	for _, item := range a.Results[:min(3, len(a.Results))] {
		if item.Value != nil {
			got[item.Key] = fmt.Sprint(int64(*item.Value))
		}
		if item.Previous != nil {
			got[item.Key+" before"] = fmt.Sprint(int64(*item.Previous))
		}
	}
	for _, row := range rows {
		suffix := " before"
		if cur, _ := row[0].(bool); cur {
			suffix = ""
		}
		for k, key := range []string{"visitors", "views", "sessions"} {
			want[key+suffix] = fmt.Sprint(row[k+1])
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
