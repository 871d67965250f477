package warehouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StickinessQuery is PostHog's StickinessQuery: for each series, how many persons did
// its event on exactly 1, 2, ... N of the range's N intervals, which says how habitual
// a feature is (a daily habit piles up on the right).
type StickinessQuery struct {
	Series []TrendsSeries `json:"series"`
	// Interval is hour, day (the default), week or month, as a trend's.
	Interval   string           `json:"interval"`
	DateRange  DateRange        `json:"dateRange"`
	Properties []PropertyFilter `json:"properties"`
}

// StickinessResult is the answer of a StickinessQuery, in PostHog's shape.
type StickinessResult struct {
	Results  []StickinessLine `json:"results"`
	Timezone string           `json:"timezone"`
}

// StickinessLine is one series: Data[k] persons were active on exactly Days[k] = k+1
// intervals, Labels[k] says so ("3 days"), and Count is the persons active at all.
type StickinessLine struct {
	Label  string       `json:"label"`
	Labels []string     `json:"labels"`
	Days   []int        `json:"days"`
	Data   []float64    `json:"data"`
	Count  float64      `json:"count"`
	Action TrendsAction `json:"action"`
}

// Stickiness runs a StickinessQuery. Persons are as they are now (merged ids count
// once), as for a trend's unique users; a series' math is ignored, as PostHog's
// stickiness counts persons whatever it says.
func (q *Queries) Stickiness(ctx context.Context, scope Scope, sq StickinessQuery, now time.Time) (*StickinessResult, error) {
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	interval, from, to, axis, err := q.stickinessSpan(ctx, scope, sq, now)
	if err != nil {
		return nil, err
	}
	n := len(axis.buckets)
	labels, days := make([]string, n), make([]int, n)
	for k := range n {
		days[k] = k + 1
		labels[k] = strconv.Itoa(k+1) + " " + interval
		if k > 0 {
			labels[k] += "s"
		}
	}
	result := &StickinessResult{Results: []StickinessLine{}, Timezone: scope.timezone()}
	for order, series := range sq.Series {
		persons, args, join, err := stickinessPersonsSQL(scope, sq, series, interval, from, to, axis)
		if err != nil {
			return nil, err
		}
		query := `SELECT intervals, count(*) FROM (` + persons + `) GROUP BY intervals`
		rows, err := q.run(ctx, scope, query, join, q.maxRows, args...)
		if err != nil {
			return nil, cmp.Or(q.interrupted(ctx), err)
		}
		event := series.event()
		line := StickinessLine{Label: cmp.Or(series.Name, cmp.Or(event, "All events")), Labels: labels, Days: days, Data: make([]float64, n)}
		line.Action.ID, line.Action.Name, line.Action.Math, line.Action.Order = event, line.Label, cmp.Or(series.Math, "total"), order
		for _, row := range rows.Results {
			k := int(toFloat(row[0]))
			if k < 1 || k > n {
				return nil, fmt.Errorf("cannot count stickiness: a person active on %d of %d intervals", k, n)
			}
			line.Data[k-1] = toFloat(row[1])
			line.Count += line.Data[k-1]
		}
		result.Results = append(result.Results, line)
	}
	return result, nil
}

// stickinessSpan checks sq's series and resolves its interval, its range [from, to)
// and the axis of its intervals; ctx is a request's, from begin.
func (q *Queries) stickinessSpan(ctx context.Context, scope Scope, sq StickinessQuery, now time.Time) (interval string, from, to time.Time, axis *trendAxis, err error) {
	if len(sq.Series) == 0 {
		return "", from, to, nil, queryErrorf("a stickiness query needs at least one series")
	}
	if len(sq.Series) > maxTrendSeries {
		return "", from, to, nil, queryErrorf("a stickiness query has at most %d series, not %d", maxTrendSeries, len(sq.Series))
	}
	interval, loc, from, to, err := q.insightSpan(ctx, scope, sq.Interval, sq.DateRange, now)
	if err != nil {
		return "", from, to, nil, err
	}
	axis, err = q.rangeAxis(ctx, scope, loc, from, to, interval)
	return interval, from, to, axis, err
}

// stickinessPersonsSQL is the query of one series of sq: a row per person active in
// [from, to), with the intervals of axis they were active in and their events. The
// stickiness counts its rows by intervals, and its persons (StickinessActors) are its
// rows of a number of intervals.
func stickinessPersonsSQL(scope Scope, sq StickinessQuery, series TrendsSeries, interval string, from, to time.Time, axis *trendAxis) (string, []any, personJoin, error) {
	bucket, _, args := trendBucket(scope, interval, to, axis)
	where := []string{`"timestamp" >= ?`, `"timestamp" < ?`}
	args = append(args, from, to)
	if event := series.event(); event != "" {
		where, args = append(where, "event = ?"), append(args, event)
	}
	filters, filterArgs, withPersons, err := propertyFilters(append(slices.Clone(sq.Properties), series.Properties...))
	if err != nil {
		return "", nil, 0, err
	}
	where, args = append(where, filters...), append(args, filterArgs...)
	query := `SELECT person_id, count(DISTINCT ` + bucket + `) AS intervals, count(*) AS events FROM events WHERE ` + strings.Join(where, " AND ") + ` GROUP BY person_id`
	return query, args, max(personJoinOf(withPersons), currentPersons), nil
}
