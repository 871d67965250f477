package warehouse

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// dialectEvent is one event of the HogQL dialect corpus's fixture, as the test's model
// reads it: the expected answers are computed from these fields, never by hedge.
type dialectEvent struct {
	n          int // the "n" property, the event's number
	name       string
	distinctID string
	ts         time.Time
	browser    string // "" when the event has no $browser
	url        string
	amount     float64 // purchases only
	plan       string  // "" when missing
	flag       bool
	tags       []string // nil when missing
	depth      int      // nested.level.depth
}

// dialectEvents are 48 events of 4 persons over 12 days from Sunday 1 November 2026,
// with every kind of property: numbers, strings, booleans, arrays, nested objects,
// and missing ones.
func dialectEvents() []dialectEvent {
	names := []string{"$pageview", "$pageview", "purchase", "$pageview", "signup"}
	browsers := []string{"Chrome", "Safari", "Firefox"}
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var events []dialectEvent
	for i := range 48 {
		e := dialectEvent{
			n:          i,
			name:       names[i%5],
			distinctID: fmt.Sprintf("u%d", i%4+1),
			ts:         start.Add(time.Duration(i%12)*24*time.Hour + time.Duration(i*5%24)*time.Hour + time.Duration(i*17%60)*time.Minute + time.Duration(i)*time.Second),
			url:        fmt.Sprintf("https://example.com/p/%d?ref=r%d", i%5, i%2),
			flag:       i%2 == 0,
			depth:      i % 5,
		}
		if i%7 != 0 {
			e.browser = browsers[i%3]
		}
		if e.name == "purchase" {
			e.amount = float64(i) + 0.5
		}
		e.plan = []string{"pro", "free", ""}[i%3]
		if i%4 != 3 {
			e.tags = []string{"a", "b", "c"}[:i%3+1]
		}
		events = append(events, e)
	}
	return events
}

func (e dialectEvent) properties() string {
	p := map[string]any{"n": e.n, "$current_url": e.url, "flag": e.flag, "nested": map[string]any{"level": map[string]any{"depth": e.depth}}}
	if e.browser != "" {
		p["$browser"] = e.browser
	}
	if e.name == "purchase" {
		p["amount"] = e.amount
	}
	if e.plan != "" {
		p["plan"] = e.plan
	}
	if e.tags != nil {
		p["tags"] = e.tags
	}
	text, _ := json.Marshal(p)
	return string(text)
}

// dialectCase is a HogQL query as PostHog's documentation writes it, and its answer:
// want, the rows as fmt prints them (and columns, their names, when set), or
// wantError, a part of the refusal's text.
type dialectCase struct {
	query, want, wantError string
	columns                []string
	team                   int64 // the project that runs it; 0 for 1, the dialect fixture's
}

// rows prints rows as the test compares them: fmt's text of the result's values.
func rows(r ...[]any) string { return fmt.Sprint(r) }

// row is one row of values.
func row(v ...any) []any { return v }

// perEvent is the rows of "SELECT toInt(properties.n) AS n, <x> FROM events ORDER BY n",
// x computed by f.
func perEvent(events []dialectEvent, f func(e dialectEvent) any) string {
	var r [][]any
	for _, e := range events {
		r = append(r, row(e.n, f(e)))
	}
	return rows(r...)
}

func count(events []dialectEvent, keep func(e dialectEvent) bool) int {
	n := 0
	for _, e := range events {
		if keep(e) {
			n++
		}
	}
	return n
}

// quantile interpolates between the nearest values, as ClickHouse's quantile does.
func quantile(values []float64, p float64) float64 {
	values = slices.Sorted(slices.Values(values))
	at := p * float64(len(values)-1)
	lo := math.Floor(at)
	if lo == at {
		return values[int(lo)]
	}
	return values[int(lo)] + (at-lo)*(values[int(lo)+1]-values[int(lo)])
}

const dateTime = "2006-01-02T15:04:05Z07:00"

// TestHogQLDialect runs a corpus of HogQL queries written in PostHog's dialect
// (ClickHouse's functions and forms) over a fixture of events, each answer computed
// from the fixture by the test's own model or counted by hand, by family.
func TestHogQLDialect(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	t.Cleanup(func() { w.Close() })
	events := dialectEvents()
	var batch Batch
	for _, e := range events {
		batch.Events = append(batch.Events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: e.name,
			DistinctID: e.distinctID, Timestamp: e.ts, Properties: e.properties()})
	}
	if err := w.Writer().Submit(&batch); err != nil {
		t.Fatal(err)
	}
	persons := submitPersonsFixture(t, w)
	is := func(name string) func(e dialectEvent) bool {
		return func(e dialectEvent) bool { return e.name == name }
	}
	sumN := func(keep func(e dialectEvent) bool) int {
		s := 0
		for _, e := range events {
			if keep(e) {
				s += e.n
			}
		}
		return s
	}
	ns := func(keep func(e dialectEvent) bool) []float64 {
		var v []float64
		for _, e := range events {
			if keep(e) {
				v = append(v, float64(e.n))
			}
		}
		return v
	}
	latest, earliest := events[0], events[0]
	for _, e := range events {
		if e.ts.After(latest.ts) {
			latest = e
		}
		if e.ts.Before(earliest.ts) {
			earliest = e
		}
	}
	// perDistinct is the rows of distinct ids (in order) whose value of f passes keep.
	perDistinct := func(f func(id string) int, keep func(int) bool) string {
		var r [][]any
		for _, id := range []string{"u1", "u2", "u3", "u4"} {
			if v := f(id); keep(v) {
				r = append(r, row(id, v))
			}
		}
		return rows(r...)
	}
	purchasesOf := func(id string) int {
		return count(events, func(e dialectEvent) bool { return e.distinctID == id && e.name == "purchase" })
	}
	pageviewsOf := func(id string) int {
		return count(events, func(e dialectEvent) bool { return e.distinctID == id && e.name == "$pageview" })
	}
	byEvent := func() string {
		var r [][]any
		for _, name := range []string{"$pageview", "purchase", "signup"} {
			users := map[string]bool{}
			for _, e := range events {
				if e.name == name {
					users[e.distinctID] = true
				}
			}
			r = append(r, row(name, len(users), count(events, is(name))))
		}
		return rows(r...)
	}
	sumAmount := func(keep func(e dialectEvent) bool) float64 {
		s := 0.0
		for _, e := range events {
			if e.name == "purchase" && keep(e) {
				s += e.amount
			}
		}
		return s
	}
	startOfWeek := func(t time.Time, monday bool) string {
		back := int(t.Weekday()) // Sunday 0
		if monday {
			back = (back + 6) % 7
		}
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -back).Format(time.DateOnly)
	}
	day := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }
	nov1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	perWeek := func() string {
		counts := map[string]int{}
		for _, e := range events {
			counts[startOfWeek(e.ts, false)]++
		}
		var r [][]any
		for _, w := range slices.Sorted(maps.Keys(counts)) {
			r = append(r, row(w, counts[w]))
		}
		return rows(r...)
	}
	urlDigit := regexp.MustCompile(`p/(\d+)`)
	browserGroups := func() string {
		c := map[string]int{}
		for _, e := range events {
			switch e.browser {
			case "Chrome":
				c["c"]++
			case "Safari":
				c["s"]++
			default:
				c["other"]++
			}
		}
		return rows(row("c", c["c"]), row("other", c["other"]), row("s", c["s"]))
	}
	tagCounts := func() string {
		c := map[string]int{}
		for _, e := range events {
			for _, tag := range e.tags {
				c[tag]++
			}
		}
		return rows(row(`"a"`, c["a"]), row(`"b"`, c["b"]), row(`"c"`, c["c"]))
	}
	planCounts := func() string {
		c := map[string]int{}
		for _, e := range events {
			c[cmp.Or(e.plan, "none")]++
		}
		return rows(row("free", c["free"]), row("none", c["none"]), row("pro", c["pro"]))
	}
	browserCounts := func() string {
		c := map[string]int{}
		for _, e := range events {
			c[e.browser]++
		}
		return rows(row("Chrome", c["Chrome"]), row("Firefox", c["Firefox"]), row("Safari", c["Safari"]), row(nil, c[""]))
	}
	e9 := events[9]

	families := []struct {
		name  string
		cases []dialectCase
	}{
		{"aggregates", []dialectCase{
			{query: `SELECT countIf(event = 'purchase') FROM events`, want: rows(row(count(events, is("purchase"))))},
			{query: `SELECT countIf(properties.$browser = 'Chrome') FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.browser == "Chrome" })))},
			{query: `SELECT COUNTIF(event = 'signup'), countif(event = 'signup') FROM events`,
				want: rows(row(count(events, is("signup")), count(events, is("signup"))))},
			{query: `SELECT sumIf(toInt(properties.n), event = 'purchase') FROM events`, want: rows(row(sumN(is("purchase"))))},
			{query: `SELECT sumIf(toFloat(properties.amount), properties.plan = 'pro') FROM events`,
				want: rows(row(sumAmount(func(e dialectEvent) bool { return e.plan == "pro" })))},
			{query: `SELECT sumIf(1, event = 'no such event') FROM events`, want: rows(row(0))},
			{query: `SELECT avgIf(toInt(properties.n), event = 'signup') FROM events`,
				want: rows(row(float64(sumN(is("signup"))) / float64(count(events, is("signup")))))},
			{query: `SELECT minIf(toInt(properties.n), event = 'purchase'), maxIf(toInt(properties.n), distinct_id = 'u2') FROM events`,
				want: rows(row(2, 45))},
			{query: `SELECT uniq(distinct_id), uniqExact(distinct_id) FROM events`, want: rows(row(4, 4))},
			{query: `SELECT uniqExact(properties.$browser) FROM events`, want: rows(row(3))},
			{query: `SELECT uniqIf(distinct_id, event = 'signup') FROM events`, want: rows(row(func() int {
				users := map[string]bool{}
				for _, e := range events {
					if e.name == "signup" {
						users[e.distinctID] = true
					}
				}
				return len(users)
			}()))},
			{query: `SELECT quantile(0.5)(toInt(properties.n)) FROM events`, want: rows(row(23.5))},
			{query: `SELECT round(quantile(0.9)(toInt(properties.n)), 6) FROM events WHERE event = '$pageview'`,
				want: rows(row(math.Round(quantile(ns(is("$pageview")), 0.9)*1e6) / 1e6))},
			{query: `SELECT quantiles(0.25, 0.75)(toInt(properties.n)) FROM events WHERE event = 'purchase'`,
				want: rows(row([]any{quantile(ns(is("purchase")), 0.25), quantile(ns(is("purchase")), 0.75)}))},
			{query: `SELECT median(toFloat(properties.amount)) FROM events`,
				want: rows(row(quantile(ns(is("purchase")), 0.5) + 0.5))},
			{query: `SELECT arraySort(groupArray(toInt(properties.n))) FROM events WHERE event = 'signup'`,
				want: rows(row([]any{4, 9, 14, 19, 24, 29, 34, 39, 44}))},
			{query: `SELECT arraySort(groupUniqArray(properties.$browser)) FROM events`,
				want: rows(row([]any{"Chrome", "Firefox", "Safari"}))},
			{query: `SELECT groupArray(properties.no_such_key) FROM events`, want: rows(row([]any{}))},
			{query: `SELECT argMax(toInt(properties.n), timestamp), argMin(toInt(properties.n), timestamp) FROM events`,
				want: rows(row(latest.n, earliest.n))},
			{query: `SELECT any(event) FROM events WHERE distinct_id = 'u3' AND event = 'purchase'`, want: rows(row("purchase"))},
			{query: `SELECT distinct_id, sumIf(1, event = 'purchase') AS p FROM events GROUP BY distinct_id
				HAVING sumIf(1, event = 'purchase') >= 3 ORDER BY distinct_id`,
				want: perDistinct(purchasesOf, func(v int) bool { return v >= 3 })},
			{query: `SELECT distinct_id, countIf(event = '$pageview') AS c FROM events GROUP BY distinct_id
				HAVING countIf(event = '$pageview') > 6 ORDER BY distinct_id`,
				want: perDistinct(pageviewsOf, func(v int) bool { return v > 6 })},
			{query: `SELECT event, uniq(distinct_id), count() FROM events GROUP BY event ORDER BY event`, want: byEvent()},
			// Numeric properties without a cast: read as numbers where used as numbers.
			{query: `SELECT sum(properties.amount) FROM events`, want: rows(row(sumAmount(func(dialectEvent) bool { return true })))},
			{query: `SELECT avg(properties.n) FROM events WHERE event = 'signup'`,
				want: rows(row(float64(sumN(is("signup"))) / float64(count(events, is("signup")))))},
			{query: `SELECT sumIf(properties.n, event = 'purchase') FROM events`, want: rows(row(sumN(is("purchase"))))},
			{query: `SELECT round(sum(properties.amount * 2), 1), max(properties.n - 1) FROM events`,
				want: rows(row(2*sumAmount(func(dialectEvent) bool { return true }), len(events)-2))},
			{query: `SELECT toInt(properties.n) AS n, properties.n * 10 + 1 FROM events WHERE n < 3 ORDER BY n`,
				want: rows(row(0, 1), row(1, 11), row(2, 21))},
			{query: `SELECT count() FROM events WHERE properties.n >= 40`, want: rows(row(count(events, func(e dialectEvent) bool { return e.n >= 40 })))},
			{query: `SELECT countIf(properties.amount > 30 AND 45 > properties.n), countIf(properties.n = 9) FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.name == "purchase" && e.amount > 30 && e.n < 45 }), 1))},
		}},
		{"dates", []dialectCase{
			{query: `SELECT toInt(properties.n) AS n, toStartOfWeek(timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return startOfWeek(e.ts, false) })},
			{query: `SELECT toInt(properties.n) AS n, toStartOfWeek(timestamp, 1) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return startOfWeek(e.ts, true) })},
			{query: `SELECT toInt(properties.n) AS n, toMonday(timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return startOfWeek(e.ts, true) })},
			{query: `SELECT toStartOfWeek(timestamp) AS week, count() FROM events GROUP BY week ORDER BY week`, want: perWeek()},
			{query: `SELECT toInt(properties.n) AS n, toDayOfWeek(timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return (int(e.ts.Weekday())+6)%7 + 1 })},
			{query: `SELECT toInt(properties.n) AS n, toDayOfMonth(timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return e.ts.Day() })},
			{query: `SELECT toInt(properties.n) AS n, toHour(timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return e.ts.Hour() })},
			{query: `SELECT toInt(properties.n) AS n, toMinute(timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return e.ts.Minute() })},
			{query: `SELECT toMonth(timestamp), toYear(timestamp), toDayOfMonth(timestamp) FROM events WHERE properties.n = '9'`,
				want: rows(row(int(e9.ts.Month()), e9.ts.Year(), e9.ts.Day()))},
			{query: `SELECT toInt(properties.n) AS n, toStartOfMinute(timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return e.ts.Truncate(time.Minute).Format(dateTime) })},
			{query: `SELECT toInt(properties.n) AS n, toStartOfHour(timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return e.ts.Truncate(time.Hour).Format(dateTime) })},
			{query: `SELECT toStartOfDay(timestamp), toStartOfMonth(timestamp), toStartOfQuarter(timestamp), toStartOfYear(timestamp)
				FROM events WHERE properties.n = '9'`,
				want: rows(row(day(e9.ts).Format(dateTime), "2026-11-01", "2026-10-01", "2026-01-01"))},
			{query: `SELECT toInt(properties.n) AS n, toYYYYMMDD(timestamp), toYYYYMM(timestamp) FROM events WHERE n < 3 ORDER BY n`,
				want: rows(row(0, 20261101, 202611), row(1, 20261102, 202611), row(2, 20261103, 202611))},
			{query: `SELECT toInt(properties.n) AS n, toUnixTimestamp(timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return e.ts.Unix() })},
			{query: `SELECT toInt(properties.n) AS n, formatDateTime(timestamp, '%Y-%m-%d %H:%i:%S') FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return e.ts.Format(time.DateTime) })},
			{query: `SELECT toInt(properties.n) AS n, formatDateTime(timestamp, '%F %T') FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return e.ts.Format(time.DateTime) })},
			{query: `SELECT toInt(properties.n) AS n, formatDateTime(timestamp, '%d/%m/%y %M %a %b %j %I %p') FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any {
					return e.ts.Format("02/01/06 January Mon Jan ") + fmt.Sprintf("%03d", e.ts.YearDay()) + e.ts.Format(" 03 PM")
				})},
			{query: `SELECT dateDiff('day', yesterday(), today()), today() - yesterday()`, want: rows(row(1, 1))},
			{query: `SELECT toInt(properties.n) AS n, dateDiff('day', toDateTime('2026-11-01 00:00:00'), timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return int(day(e.ts).Sub(nov1).Hours() / 24) })},
			{query: `SELECT toInt(properties.n) AS n, dateDiff('week', toDateTime('2026-11-01 00:00:00'), timestamp) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any {
					monday := func(t time.Time) time.Time { return day(t).AddDate(0, 0, -((int(t.Weekday()) + 6) % 7)) }
					return int(monday(e.ts).Sub(monday(nov1)).Hours() / 24 / 7)
				})},
			{query: `SELECT dateDiff('hour', toDateTime('2026-11-01 00:00:00'), timestamp), dateDiff('month', toDateTime('2026-10-31 23:00:00'), timestamp)
				FROM events WHERE properties.n = '9'`,
				want: rows(row(int(e9.ts.Truncate(time.Hour).Sub(nov1).Hours()), 1))},
			{query: `SELECT dateAdd('day', 3, timestamp), dateSub('hour', 2, timestamp) FROM events WHERE properties.n = '9'`,
				want: rows(row(e9.ts.AddDate(0, 0, 3).Format(dateTime), e9.ts.Add(-2*time.Hour).Format(dateTime)))},
			{query: `SELECT addDays(timestamp, 2), subtractHours(timestamp, 5), addMinutes(timestamp, 90) FROM events WHERE properties.n = '9'`,
				want: rows(row(e9.ts.AddDate(0, 0, 2).Format(dateTime), e9.ts.Add(-5*time.Hour).Format(dateTime), e9.ts.Add(90*time.Minute).Format(dateTime)))},
			{query: `SELECT addMonths(toDateTime('2026-01-31 00:00:00'), 1), subtractDays(toDateTime('2026-03-01 00:00:00'), 1)`,
				want: rows(row("2026-02-28T00:00:00Z", "2026-02-28T00:00:00Z"))},
			{query: `SELECT countIf(timestamp >= toDateTime('2026-11-05 00:00:00')) FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return !e.ts.Before(nov1.AddDate(0, 0, 4)) })))},
			{query: `SELECT EXTRACT(year FROM timestamp), extract(month FROM timestamp) FROM events WHERE properties.n = '9'`,
				want: rows(row(2026, 11))},
			{query: `SELECT toInt(properties.n) AS n, toStartOfInterval(timestamp, INTERVAL 5 minute) FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return e.ts.Truncate(5 * time.Minute).Format(dateTime) })},
			{query: `SELECT toStartOfFiveMinutes(timestamp), toStartOfTenMinutes(timestamp), toStartOfFifteenMinutes(timestamp) FROM events WHERE properties.n = '9'`,
				want: rows(row(e9.ts.Truncate(5*time.Minute).Format(dateTime), e9.ts.Truncate(10*time.Minute).Format(dateTime), e9.ts.Truncate(15*time.Minute).Format(dateTime)))},
			{query: `SELECT toStartOfInterval(timestamp, INTERVAL 1 day), toStartOfInterval(timestamp, INTERVAL 1 hour) FROM events WHERE properties.n = '9'`,
				want: rows(row(day(e9.ts).Format(dateTime), e9.ts.Truncate(time.Hour).Format(dateTime)))},
			{query: `SELECT toStartOfInterval(timestamp, INTERVAL 1 week) AS w, count() FROM events GROUP BY w ORDER BY w`, want: func() string {
				counts := map[string]int{}
				for _, e := range events {
					counts[startOfWeek(e.ts, true)+"T00:00:00Z"]++
				}
				var r [][]any
				for _, w := range slices.Sorted(maps.Keys(counts)) {
					r = append(r, row(w, counts[w]))
				}
				return rows(r...)
			}()},
		}},
		{"strings and JSON", []dialectCase{
			{query: `SELECT toInt(properties.n) AS n, extract(properties.$current_url, 'p/(\d+)') FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return urlDigit.FindStringSubmatch(e.url)[1] })},
			{query: `SELECT toInt(properties.n) AS n, extract(properties.$current_url, 'ref=r\d') FROM events ORDER BY n`,
				want: perEvent(events, func(e dialectEvent) any { return fmt.Sprintf("ref=r%d", e.n%2) })},
			{query: `SELECT extract('abc', 'z'), extract('key=value', '(?P<v>[a-z]+)$'), extract('a(b)', 'a\(b\)')`,
				want: rows(row("", "value", "a(b)"))},
			{query: `SELECT splitByChar('/', properties.$current_url)[3], splitByString('://', properties.$current_url)[1],
				splitByChar('?', properties.$current_url)[2] FROM events WHERE properties.n = '9'`,
				want: rows(row("example.com", "https", "ref=r1"))},
			{query: `SELECT replaceAll(properties.$current_url, 'example.com', 'x.org'), replaceRegexpAll(properties.$current_url, '\d', '#'),
				replaceRegexpOne(properties.$current_url, '[a-z]+', 'X') FROM events WHERE properties.n = '9'`,
				want: rows(row("https://x.org/p/4?ref=r1", "https://example.com/p/#?ref=r#", "X://example.com/p/4?ref=r1"))},
			{query: `SELECT replaceOne('a-b-c', '-', '+'), replaceOne('abc', 'z', '+'), replaceRegexpAll('a1b22', '(\d+)', '<\1>')`,
				want: rows(row("a+b-c", "abc", "a<1>b<22>"))},
			{query: `SELECT multiIf(properties.$browser = 'Chrome', 'c', properties.$browser = 'Safari', 's', 'other') AS b, count()
				FROM events GROUP BY b ORDER BY b`, want: browserGroups()},
			{query: `SELECT sum(if(event = 'purchase', 1, 0)) FROM events`, want: rows(row(count(events, is("purchase"))))},
			{query: `SELECT countIf(JSONExtractString(properties, '$browser') = '') FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.browser == "" })))},
			{query: `SELECT JSONExtractString(properties, '$browser'), JSONExtractString(properties, 'n') FROM events WHERE properties.n = '1'`,
				want: rows(row("Safari", ""))},
			{query: `SELECT sum(JSONExtractInt(properties, 'nested', 'level', 'depth')) FROM events`, want: rows(row(func() int {
				s := 0
				for _, e := range events {
					s += e.depth
				}
				return s
			}()))},
			{query: `SELECT sum(JSONExtractFloat(properties, 'amount')), sum(JSONExtractInt(properties, 'no_such_key')) FROM events`,
				want: rows(row(sumAmount(func(dialectEvent) bool { return true }), 0))},
			{query: `SELECT countIf(JSONExtractBool(properties, 'flag')) FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.flag })))},
			{query: `SELECT JSONExtractRaw(properties, 'tags'), JSONExtractRaw(properties, 'nested', 'level'), JSONExtractRaw(properties, 'none')
				FROM events WHERE properties.n = '1'`,
				want: rows(row(`["a","b"]`, `{"depth":1}`, ""))},
			{query: `SELECT countIf(JSONHas(properties, 'plan')), countIf(JSONHas(properties, 'nested', 'level')) FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.plan != "" }), len(events)))},
			{query: `SELECT JSONExtractString(properties, 'tags', 1), JSONExtractString(properties, 'tags', -1) FROM events WHERE properties.n = '2'`,
				want: rows(row("a", "c"))},
			{query: `SELECT JSONExtract(properties, 'n', 'Int64'), JSONExtract(properties, '$browser', 'String'), JSONExtract(properties, 'flag', 'Bool')
				FROM events WHERE properties.n = '1'`, want: rows(row(1, "Safari", false))},
			{query: `SELECT JSONExtract(properties, 'amount', 'Float64'), JSONExtract(properties, 'amount', 'Nullable(Float64)'),
				JSONExtract(properties, 'plan', 'Nullable(String)'), JSONExtract(properties, 'nested', 'level', 'depth', 'UInt8') FROM events WHERE properties.n = '3'`,
				want: rows(row(0, nil, "pro", 3))},
			{query: `SELECT countIf(empty(JSONExtractString(properties, 'plan'))), countIf(notEmpty(JSONExtractString(properties, 'plan'))) FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.plan == "" }), count(events, func(e dialectEvent) bool { return e.plan != "" })))},
			{query: `SELECT lower(properties.$browser), upper(properties.$browser) FROM events WHERE properties.n = '1'`,
				want: rows(row("safari", "SAFARI"))},
			{query: `SELECT concat(distinct_id, '-', toInt(properties.n), '-', properties.plan) FROM events WHERE properties.n IN ('2', '3') ORDER BY 1`,
				want: rows(row("u3-2-"), row("u4-3-pro"))},
			{query: `SELECT position(properties.$current_url, 'example'), position(properties.$current_url, 'nothing') FROM events WHERE properties.n = '9'`,
				want: rows(row(9, 0))},
			{query: `SELECT countIf(startsWith(properties.$current_url, 'https://example.com/p/1')), countIf(endsWith(properties.$current_url, 'r1')) FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.n%5 == 1 }), count(events, func(e dialectEvent) bool { return e.n%2 == 1 })))},
			{query: `SELECT trim('  x  '), trimLeft('  x  '), trimRight('  x  '), trimBoth('  x  ')`, want: rows(row("x", "x  ", "  x", "x"))},
			{query: `SELECT toString(toInt(properties.n) * 2), toFloat('1.5') + toInt('2') FROM events WHERE properties.n = '9'`,
				want: rows(row("18", 3.5))},
			{query: `SELECT countIf(like(properties.$browser, 'Ch%')), countIf(ilike(properties.$browser, 'ch%')), countIf(notLike(properties.$browser, 'Ch%')) FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.browser == "Chrome" }),
					count(events, func(e dialectEvent) bool { return e.browser == "Chrome" }),
					count(events, func(e dialectEvent) bool { return e.browser != "" && e.browser != "Chrome" })))},
		}},
		{"arrays", []dialectCase{
			{query: `SELECT arrayJoin(['b', 'a', 'c']) AS x ORDER BY x`, want: rows(row("a"), row("b"), row("c"))},
			{query: `SELECT tag, count() FROM (SELECT arrayJoin(JSONExtractArrayRaw(properties, 'tags')) AS tag FROM events) GROUP BY tag ORDER BY tag`,
				want: tagCounts()},
			{query: `SELECT has(['a', 'b'], 'a'), has([1, 2], 3)`, want: rows(row(true, false))},
			{query: `SELECT countIf(has(JSONExtractArrayRaw(properties, 'tags'), '"c"')) FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return len(e.tags) == 3 })))},
			{query: `SELECT arrayFilter(x -> x > 2, [1, 2, 3, 4]), arrayMap(x -> x * 10, [1, 2, 3])`,
				want: rows(row([]any{3, 4}, []any{10, 20, 30}))},
			{query: `SELECT arrayMap(x -> upper(x), splitByChar(',', properties.plan)) FROM events WHERE properties.n = '0'`,
				want: rows(row([]any{"PRO"}))},
			{query: `SELECT arrayStringConcat(['a', 'b', 'c'], '-'), arrayStringConcat(['x', 'y'])`, want: rows(row("a-b-c", "xy"))},
			{query: `SELECT arrayStringConcat(splitByChar('/', properties.$current_url), '|') FROM events WHERE properties.n = '9'`,
				want: rows(row("https:||example.com|p|4?ref=r1"))},
			{query: `SELECT sum(length(JSONExtractArrayRaw(properties, 'tags'))), length([1, 2, 3]) FROM events`,
				want: rows(row(func() int {
					s := 0
					for _, e := range events {
						s += len(e.tags)
					}
					return s
				}(), 3))},
			{query: `SELECT [10, 20, 30][1], splitByChar(',', 'a,b,c')[3]`, want: rows(row(10, "c"))},
			{query: `SELECT arrayExists(x -> x = 'b', ['a', 'b']), arrayExists(x -> x > 5, [1, 2])`, want: rows(row(true, false))},
			{query: `SELECT indexOf(['a', 'b', 'c'], 'c'), indexOf([1], 5)`, want: rows(row(3, 0))},
			{query: `SELECT range(4), length(range(10))`, want: rows(row([]any{0, 1, 2, 3}, 10))},
			{query: `SELECT arrayMap((x, y) -> x * y, [1, 2, 3], [4, 5, 6])`, want: rows(row([]any{4, 10, 18}))},
			{query: `SELECT arrayFilter((x, keep) -> keep, ['a', 'b', 'c'], [true, false, true])`, want: rows(row([]any{"a", "c"}))},
			{query: `SELECT arrayExists((x, y) -> x = y, [1, 2], [2, 2]), arrayCount((x, y) -> x < y, [1, 5, 3], [2, 4, 4])`, want: rows(row(true, 2))},
		}},
		{"operators and WITH", []dialectCase{
			{query: `SELECT properties.plan ?? 'none' AS plan, count() FROM events GROUP BY plan ORDER BY plan`, want: planCounts()},
			{query: `SELECT countIf((properties.$browser ?? 'unknown') = 'unknown') FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.browser == "" })))},
			{query: `SELECT NULL ?? NULL ?? 3, 'a' ?? 'b', toInt(NULL) ?? length([1, 2])`, want: rows(row(3, "a", 2))},
			{query: `SELECT countIf(properties.$browser != 'Chrome'), countIf(properties.plan <> 'pro') FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.browser != "Chrome" }),
					count(events, func(e dialectEvent) bool { return e.plan != "pro" })))},
			{query: `SELECT count() FROM events WHERE properties.$browser != 'Chrome' AND event != 'purchase'`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.browser != "Chrome" && e.name != "purchase" })))},
			{query: `SELECT count() FROM events WHERE toInt(properties.n) + 1 != 5`, want: rows(row(len(events) - 1))},
			{query: `SELECT countIf(properties.plan = NULL), countIf(properties.plan != NULL) FROM events`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.plan == "" }), count(events, func(e dialectEvent) bool { return e.plan != "" })))},
			{query: `SELECT count() FROM events WHERE properties.$browser = NULL OR NULL = properties.tags`,
				want: rows(row(count(events, func(e dialectEvent) bool { return e.browser == "" || e.tags == nil })))},
			{query: `SELECT NULL = NULL, 1 == NULL`, want: rows(row(true, false))},
			{query: `WITH 'purchase' AS wanted SELECT count() FROM events WHERE event = wanted`, want: rows(row(count(events, is("purchase"))))},
			{query: `WITH 'purchase' AS wanted, 2 AS two SELECT wanted, two * 2 AS four`, want: rows(row("purchase", 4)),
				columns: []string{"wanted", "four"}},
			{query: `WITH 'u1' AS who, 'purchase' AS what SELECT count() FROM events WHERE distinct_id = who AND event = what`,
				want: rows(row(purchasesOf("u1")))},
			{query: `WITH 40 AS lo, buyers AS (SELECT distinct_id FROM events WHERE event = 'purchase' AND toInt(properties.n) >= lo)
				SELECT count() FROM events WHERE distinct_id IN (SELECT distinct_id FROM buyers) AND toInt(properties.n) >= lo`,
				want: rows(row(func() int {
					buyers := map[string]bool{}
					for _, e := range events {
						if e.name == "purchase" && e.n >= 40 {
							buyers[e.distinctID] = true
						}
					}
					return count(events, func(e dialectEvent) bool { return buyers[e.distinctID] && e.n >= 40 })
				}()))},
			{query: `WITH toDateTime('2026-11-05 00:00:00') AS since SELECT count() FROM events WHERE timestamp >= since`,
				want: rows(row(count(events, func(e dialectEvent) bool { return !e.ts.Before(nov1.AddDate(0, 0, 4)) })))},
			{query: "SELECT properties.`$browser` AS b, count() FROM events GROUP BY b ORDER BY b NULLS LAST", want: browserCounts()},
			{query: "SELECT e.properties.`$current_url` FROM events AS `e` WHERE e.properties.`n` = '9'", want: rows(row(e9.url))},
			{query: "SELECT JSONExtractString(properties, '$browser') AS `the browser` FROM events WHERE properties.n = '1'", want: rows(row("Safari"))},
		}},
		{"persons and tables", personsCases(persons)},
		{"errors", []dialectCase{
			{query: `SELECT someUnknownFn(1)`, wantError: "the function someunknownfn is not allowed here"},
			{query: `SELECT arrayReduce('sum', [1, 2])`, wantError: "the function arrayreduce is not allowed here"},
			{query: `SELECT extract(event, event) FROM events`, wantError: "extract(s, pattern) takes a constant pattern here"},
			{query: `SELECT formatDateTime(timestamp, '%Q') FROM events`, wantError: "formatDateTime's specifier %Q is not supported here"},
			{query: `SELECT formatDateTime(timestamp, event) FROM events`, wantError: "formatDateTime takes a constant format here"},
			{query: `SELECT multiIf(true, 1) FROM events`, wantError: "multiIf takes pairs of a condition and a value"},
			{query: `SELECT JSONExtractString(properties, event) FROM events`, wantError: "the keys of the JSON functions are constant strings"},
			{query: `SELECT quantiles()(1)`, wantError: "quantiles(p1, p2, ...)(x) takes levels and one value"},
			{query: `SELECT JSONExtract(properties, 'tags', 'Array(String)') FROM events`, wantError: "JSONExtract's type Array(String) is not supported here"},
			{query: `SELECT arrayMap(x -> x, [1], [2])`, wantError: "arrayMap over 2 arrays takes a lambda of 2 parameters first"},
			{query: `SELECT person.email FROM events`, wantError: "the field person.email does not exist here"},
			{query: `SELECT evnt FROM events`, wantError: "the field evnt does not exist here: did you mean event"},
			{query: `SELECT x.event, e.nothing FROM events e`, wantError: "the table x does not exist here: did you mean e?"},
			{query: `SELECT e.nothing FROM events e`, wantError: "the field e.nothing does not exist here"},
			{query: `SELECT * FROM file('/etc/passwd')`, wantError: "the table function file is not allowed here"},
		}},
	}
	total := 0
	for _, family := range families {
		t.Run(family.name, func(t *testing.T) {
			for _, c := range family.cases {
				scope := utc
				if c.team != 0 {
					scope = Scope{Team: c.team, Timezone: "UTC"}
				}
				result, err := w.Queries().HogQL(context.Background(), scope, c.query)
				if c.wantError != "" {
					var qe *QueryError
					if !errors.As(err, &qe) || !strings.Contains(qe.Detail, c.wantError) {
						t.Errorf("%s\n got the error %v (%v)\nwant one saying %q", c.query, err, result, c.wantError)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: %v", c.query, err)
					continue
				}
				if got := fmt.Sprint(result.Results); got != c.want {
					t.Errorf("%s\n got %s\nwant %s", c.query, got, c.want)
				}
				if c.columns != nil && !slices.Equal(result.Columns, c.columns) {
					t.Errorf("%s\n got the columns %q\nwant %q", c.query, result.Columns, c.columns)
				}
			}
		})
		t.Logf("%s: %d queries", family.name, len(family.cases))
		total += len(family.cases)
	}
	t.Logf("the corpus: %d queries", total)
}
