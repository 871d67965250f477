package main

import (
	"fmt"
	"time"
)

// The figures of the insight kinds past trends and funnels: a retention, stickiness, a
// lifecycle and paths of the scenario's $pageview, each against SQL over the typed
// columns that computes the same (the ceiling table has no persons: a lifecycle's new
// persons there are those whose first event falls in the interval, where hedge reads
// the person's created_at, the same scan).

// kindGoal is the p50 aimed at for each of these kinds on this machine.
const kindGoal = 500 * time.Millisecond

// kindCases are the four figures over the scenario's range.
func kindCases(r queryRange) []queryCase {
	pageview := []map[string]any{{"kind": "EventsNode", "event": "$pageview"}}
	cases := []queryCase{
		{name: "RetentionQuery: $pageview first time, 11 days", query: retentionQuery(r), ceiling: retentionCeiling(r), check: checkRetention},
		{name: "StickinessQuery: $pageview by day, 30 days", query: map[string]any{"kind": "StickinessQuery", "series": pageview, "interval": "day",
			"dateRange": r.dateRange()}, ceiling: stickinessCeiling(r), check: checkStickiness},
		{name: "LifecycleQuery: $pageview by day, 30 days", query: map[string]any{"kind": "LifecycleQuery", "series": pageview, "interval": "day",
			"dateRange": r.dateRange()}, ceiling: lifecycleCeiling(r)},
		{name: "PathsQuery: $pageview, 5 steps, 30 days", query: map[string]any{"kind": "PathsQuery", "dateRange": r.dateRange(),
			"pathsFilter": map[string]any{"includeEventTypes": []string{"$pageview"}, "stepLimit": 5}}, ceiling: pathsCeiling(r), check: checkPaths},
	}
	for i := range cases {
		cases[i].goal = kindGoal
	}
	return cases
}

// retentionDays are the retention's cohorts: the days up to the range's last.
const retentionDays = 11

func retentionQuery(r queryRange) map[string]any {
	pageview := map[string]any{"id": "$pageview", "type": "events"}
	return map[string]any{"kind": "RetentionQuery", "dateRange": map[string]any{"date_to": r.to.AddDate(0, 0, -1).Format(time.DateOnly)},
		"retentionFilter": map[string]any{"period": "Day", "totalIntervals": retentionDays, "targetEntity": pageview, "returningEntity": pageview}}
}

// retentionCeiling is a cohort per day of a person's first $pageview ever, and its
// persons seen again k days later: rows (cohort, k, persons).
func retentionCeiling(r queryRange) string {
	from := r.to.AddDate(0, 0, -retentionDays)
	return fmt.Sprintf(`WITH firsts AS (SELECT person_id, min(date_trunc('day', "timestamp")) AS c FROM events WHERE event = '$pageview' GROUP BY person_id),
			cohorts AS (SELECT * FROM firsts WHERE c >= %[1]s AND c < %[2]s),
			days AS (SELECT DISTINCT person_id, date_trunc('day', "timestamp") AS d FROM events
				WHERE event = '$pageview' AND "timestamp" >= %[1]s AND "timestamp" < %[2]s)
		SELECT strftime(c, '%%Y-%%m-%%d'), date_diff('day', c, d), count(*) FROM cohorts JOIN days USING (person_id) WHERE d >= c GROUP BY ALL`,
		sqlTime(from), sqlTime(r.to))
}

// stickinessCeiling is the persons by the number of days of the range they did a
// $pageview on: rows (days, persons).
func stickinessCeiling(r queryRange) string {
	return fmt.Sprintf(`SELECT days, count(*) FROM (SELECT person_id, count(DISTINCT date_trunc('day', "timestamp")) AS days FROM events
			WHERE event = '$pageview' AND "timestamp" >= %s AND "timestamp" < %s GROUP BY person_id) GROUP BY days`, sqlTime(r.from), sqlTime(r.to))
}

// lifecycleCeiling is each day's persons as new, returning and resurrecting, and the
// day's dormant ones, as hedge's lifecycle query counts them.
func lifecycleCeiling(r queryRange) string {
	return fmt.Sprintf(`WITH active AS (SELECT DISTINCT person_id, date_trunc('day', "timestamp") AS p FROM events
				WHERE event = '$pageview' AND "timestamp" >= %s AND "timestamp" < %s),
			created AS (SELECT person_id, min(date_trunc('day', "timestamp")) AS c FROM events GROUP BY person_id)
		SELECT strftime(a.p, '%%Y-%%m-%%d'), CASE WHEN c.c = a.p THEN 'new' WHEN b.person_id IS NOT NULL THEN 'returning' ELSE 'resurrecting' END, count(*)
			FROM active a LEFT JOIN active b ON b.person_id = a.person_id AND b.p = a.p - INTERVAL 1 DAY
			LEFT JOIN created c ON c.person_id = a.person_id
			WHERE a.p >= %s GROUP BY ALL
		UNION ALL
		SELECT strftime(a.p + INTERVAL 1 DAY, '%%Y-%%m-%%d'), 'dormant', -count(*)
			FROM active a LEFT JOIN active n ON n.person_id = a.person_id AND n.p = a.p + INTERVAL 1 DAY
			WHERE n.person_id IS NULL GROUP BY ALL`, sqlTime(r.from.AddDate(0, 0, -1)), sqlTime(r.to), sqlTime(r.from))
}

// pathsCeiling is the edges of the persons' $pageview paths: a path a session (a new
// one after 30 minutes without a pageview), repeats of a page in a row as one step,
// its first 5 steps; the 50 edges most travelled. Its shape is hedge's (three window
// passes over the pages' hashes, the edge a step and its lead, the pages' text joined
// back to the edges counted): a step joined to the next over the text ran out of the
// 256 MB limit.
func pathsCeiling(r queryRange) string {
	return fmt.Sprintf(`WITH views AS (SELECT person_id, "timestamp", current_url AS item FROM events
			WHERE event = '$pageview' AND current_url IS NOT NULL AND "timestamp" >= %s AND "timestamp" < %s),
		marks AS (SELECT person_id, "timestamp", h,
				coalesce("timestamp" - lag("timestamp") OVER person > INTERVAL 30 MINUTE, true) AS starts_session, lag(h) OVER person AS previous_h
			FROM (SELECT person_id, "timestamp", hash(item) AS h FROM views) WINDOW person AS (PARTITION BY person_id ORDER BY "timestamp")),
		steps AS (SELECT person_id, "timestamp", h, sum(starts_session::INTEGER) OVER person AS session, row_number() OVER person AS n
			FROM marks WHERE starts_session OR previous_h IS DISTINCT FROM h
			WINDOW person AS (PARTITION BY person_id ORDER BY "timestamp" ROWS UNBOUNDED PRECEDING)),
		edges AS (SELECT h, "timestamp", n, lead(n) OVER session AS next_n, lead(h) OVER session AS next_h,
				lead("timestamp") OVER session AS next_time, min(n) OVER session AS first_n
			FROM steps WINDOW session AS (PARTITION BY person_id, session ORDER BY n)),
		counts AS (SELECT n - first_n + 1 AS step, h, next_h, count(*) AS paths, avg(epoch_ms(next_time) - epoch_ms("timestamp")) AS ms
			FROM edges WHERE next_n IS NOT NULL AND next_n - first_n < 5 GROUP BY ALL),
		names AS (SELECT hash(item) AS h, any_value(item) AS item FROM views GROUP BY ALL)
		SELECT step || '_' || a.item, (step + 1) || '_' || b.item, paths, ms
		FROM counts JOIN names a ON a.h = counts.h JOIN names b ON b.h = counts.next_h
		ORDER BY 3 DESC, 1, 2 LIMIT 50`, sqlTime(r.from), sqlTime(r.to))
}

// checkRetention compares the retention's cohorts, each period's persons, with the
// ceiling's rows.
func checkRetention(answer []byte, rows [][]any) error {
	var a struct {
		Results []struct {
			Date   string `json:"date"`
			Values []struct {
				Count int64 `json:"count"`
			} `json:"values"`
		} `json:"results"`
	}
	if err := decodeNumbers(answer, &a); err != nil {
		return err
	}
	got, want := map[string]string{}, map[string]string{}
	for _, c := range a.Results {
		for k, v := range c.Values {
			if v.Count != 0 {
				got[fmt.Sprintf("%.10s+%d", c.Date, k)] = fmt.Sprint(v.Count)
			}
		}
	}
	for _, row := range rows {
		want[fmt.Sprintf("%v+%v", row[0], row[1])] = fmt.Sprint(row[2])
	}
	return compareCounts(got, want)
}

// checkStickiness compares the persons by days active with the ceiling's rows.
func checkStickiness(answer []byte, rows [][]any) error {
	var a struct {
		Results []struct {
			Data []float64 `json:"data"`
		} `json:"results"`
	}
	if err := decodeNumbers(answer, &a); err != nil {
		return err
	}
	got, want := map[string]string{}, map[string]string{}
	for _, line := range a.Results {
		for k, v := range line.Data {
			if v != 0 {
				got[fmt.Sprint(k+1)] = fmt.Sprint(v)
			}
		}
	}
	for _, row := range rows {
		want[fmt.Sprint(row[0])] = fmt.Sprint(row[1])
	}
	return compareCounts(got, want)
}

// checkPaths compares the paths' edges, each one's count, with the ceiling's rows.
func checkPaths(answer []byte, rows [][]any) error {
	var a struct {
		Results []struct {
			Source string `json:"source"`
			Target string `json:"target"`
			Value  int64  `json:"value"`
		} `json:"results"`
	}
	if err := decodeNumbers(answer, &a); err != nil {
		return err
	}
	got, want := map[string]string{}, map[string]string{}
	for _, e := range a.Results {
		got[e.Source+" → "+e.Target] = fmt.Sprint(e.Value)
	}
	for _, row := range rows {
		want[fmt.Sprintf("%v → %v", row[0], row[1])] = fmt.Sprint(row[2])
	}
	return compareCounts(got, want)
}
