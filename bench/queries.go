package main

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/hedge-analytics/hedge/warehouse"
)

// The queries scenario measures the query API and a dashboard on millions of generated
// events (querydata.go), each figure next to its ceiling: the same computation in SQL
// over a table of the same events whose properties are typed columns, run by DuckDB
// in the bench's own process right after hedge's runs of it, at hedge's memory limit
// and priority.
// The ceiling table holds no properties text and no persons (each event's person is a
// column), so the ratio is what reading the properties costs hedge, and the views,
// the persons join, the API and JSON on top.
//
// hedge serves a copy of the generated data directory, so that every run starts from
// the same database, and the events it is sent (one before each cold dashboard load)
// change nothing of the next run.

// queryBench is the queries scenario: events generated into a data directory of their
// own, the query API and a dashboard measured on them.
type queryBench struct {
	Events  int `json:"events"`
	Persons int `json:"persons"`
	Days    int `json:"days"`
	// Runs is how often each figure is timed, at most (after a warm-up, if its first
	// run is fast: warmupLimit); Budget bounds the time a figure's runs take, once it
	// has run MinRuns times.
	Runs    int           `json:"runs"`
	MinRuns int           `json:"min_runs"`
	Budget  time.Duration `json:"budget_ns"`
	// Cache keeps the generated directory in the system's temporary directory, keyed
	// by what the generator writes, for the next runs.
	Cache bool `json:"cache"`
	// Lake moves the events into the lake (hedge lake move) before hedge serves them,
	// with --storage lake.
	Lake bool `json:"lake,omitempty"`
}

// queryNice is the priority hedge runs users' queries at (nice 10): the ceilings run
// at it too, so that other work on the machine slows both alike.
const queryNice = 10

// dashboardGoal and queryGoal are the targets for this machine: a query's p50,
// and a dashboard's cold load.
const (
	queryGoal     = 300 * time.Millisecond
	dashboardGoal = time.Second
)

// queryRun is what the queries scenario measured: the data, and a figure per query.
type queryRun struct {
	Events  int       `json:"events"`
	Persons int       `json:"persons"`
	Days    int       `json:"days"`
	DataEnd time.Time `json:"data_end"`
	// Cached says the data came from the cache; GenerateSeconds is how long its
	// generation took, then or now.
	Cached          bool    `json:"cached"`
	GenerateSeconds float64 `json:"generate_seconds"`
	CopySeconds     float64 `json:"copy_seconds"`
	// MoveSeconds is how long hedge lake move took (queryBench.Lake), and LakeBytes
	// the parts' bytes per event.
	MoveSeconds       float64 `json:"move_seconds,omitempty"`
	LakeBytesPerEvent float64 `json:"lake_bytes_per_event,omitempty"`
	StartSeconds      float64 `json:"hedge_start_seconds"`
	// PropertiesBytes is the mean length of an event's properties text; BytesPerEvent
	// hedge's database file (checkpointed) over the events, TypedBytesPerEvent the
	// ceiling table's.
	PropertiesBytes    float64        `json:"properties_bytes_per_event"`
	BytesPerEvent      float64        `json:"stored_bytes_per_event"`
	TypedBytesPerEvent float64        `json:"typed_bytes_per_event"`
	Figures            []*queryFigure `json:"figures"`
	// AnswersOK: hedge's answers agree with the ceilings' where both compute the
	// same, and every cold dashboard load was computed, every cached one cached.
	AnswersOK bool     `json:"answers_ok"`
	Problems  []string `json:"problems,omitempty"`
}

// queryFigure is one query's latency through hedge's API, and its ceiling's.
type queryFigure struct {
	Name    string           `json:"name"`
	Latency percentiles      `json:"latency_ms"`
	Answers map[string]int64 `json:"answers"`
	Ceiling *percentiles     `json:"ceiling_ms,omitempty"`
	// Ratio is the ceiling's p50 over hedge's: 1 is at the ceiling.
	Ratio float64 `json:"ratio,omitempty"`
	// Goal is the target for the figure's p50, 0 for none.
	Goal time.Duration `json:"goal_ns,omitempty"`
	// VersusTable is, for a run on the lake, the figure's p50 over the same query's
	// on the events table in the same suite (compareQueries): 1.25 at most is the
	// lake's goal.
	VersusTable float64 `json:"versus_table,omitempty"`
}

// compareQueries sets the figures of the queries run on the lake against those of
// the run on the events table.
func compareQueries(results []*result) {
	var table, lake *queryRun
	for _, r := range results {
		switch r.Scenario.Name {
		case "queries":
			table = r.Queries
		case "queries" + lakeSuffix:
			lake = r.Queries
		}
	}
	if table == nil || lake == nil {
		return
	}
	for _, f := range lake.Figures {
		for _, t := range table.Figures {
			if t.Name == f.Name && t.Latency.P50 > 0 {
				f.VersusTable = f.Latency.P50 / t.Latency.P50
			}
		}
	}
}

// queryCase is one figure to measure: a query of the query API and the SQL of its
// ceiling, and how to compare their answers.
type queryCase struct {
	name  string
	query any
	// ceiling is SQL over the typed events that computes what query does.
	ceiling string
	// check compares hedge's answer with the ceiling's rows; nil when they compute
	// differently (the funnel's ceiling counts each person's first attempt only).
	check func(answer []byte, rows [][]any) error
	// goal is the p50 aimed at: queryGoal unless set.
	goal time.Duration
}

// queryRange is the scenario's dates: the 30 days up to the data's last, as a
// dashboard shows them, and the day before its end, as the events list does.
type queryRange struct {
	from, to, after time.Time
}

func newQueryRange(end time.Time) queryRange {
	day := end.UTC().Truncate(24 * time.Hour)
	return queryRange{from: day.AddDate(0, 0, -29), to: day.AddDate(0, 0, 1), after: end.Add(-24 * time.Hour)}
}

// dateRange is the range as a query's dateRange: date_to, a date alone, includes its day.
func (r queryRange) dateRange() map[string]string {
	return map[string]string{"date_from": r.from.Format(time.DateOnly), "date_to": r.to.AddDate(0, 0, -1).Format(time.DateOnly)}
}

func sqlTime(t time.Time) string {
	return "TIMESTAMPTZ '" + t.UTC().Format("2006-01-02 15:04:05.999999") + "+00'"
}

// trend is a TrendsQuery of one series and its ceiling.
type trend struct {
	event, math, interval string
	breakdown             string // a property, "" for none
	filter                *[2]string
}

func (t trend) query(r queryRange) map[string]any {
	q := map[string]any{"kind": "TrendsQuery", "interval": t.interval, "dateRange": r.dateRange(),
		"series": []map[string]any{{"kind": "EventsNode", "event": t.event, "math": t.math}}}
	if t.breakdown != "" {
		q["breakdownFilter"] = map[string]string{"breakdown": t.breakdown, "breakdown_type": "event"}
	}
	if t.filter != nil {
		q["properties"] = []map[string]any{{"key": t.filter[0], "value": []string{t.filter[1]}, "operator": "exact", "type": "event"}}
	}
	return q
}

// Breakdown values that stand for events without the property and for the rest, as
// hedge answers them (PostHog's).
const (
	breakdownNull  = "$$_posthog_breakdown_null_$$"
	breakdownOther = "$$_posthog_breakdown_other_$$"
)

// ceiling is the trend's SQL over the typed columns: a row per interval (and
// breakdown value of the 25 most frequent, the rest as one) with its count.
func (t trend) ceiling(r queryRange) string {
	value := "count(*)"
	if t.math == "dau" {
		value = "count(DISTINCT person_id)"
	}
	where := fmt.Sprintf(`event = '%s' AND "timestamp" >= %s AND "timestamp" < %s`, t.event, sqlTime(r.from), sqlTime(r.to))
	if t.filter != nil {
		where += fmt.Sprintf(" AND %s = '%s'", column(t.filter[0]), t.filter[1])
	}
	// The project's time zone is UTC; weeks start on Monday here, on the project's
	// first day in hedge, at the same cost.
	bucket := `date_trunc('` + t.interval + `', timezone('UTC', "timestamp"))`
	if t.breakdown == "" {
		return `SELECT strftime(bucket, '%Y-%m-%d'), value
			FROM (SELECT ` + bucket + ` AS bucket, ` + value + ` AS value FROM events WHERE ` + where + ` GROUP BY bucket)`
	}
	// The events are counted per interval and value (and person, for a distinct count)
	// first: the ranking of values by events and the counts read those rows.
	person, value := "", "sum(n)::BIGINT"
	if t.math == "dau" {
		person, value = ", person_id", "count(DISTINCT person_id)"
	}
	return `WITH trend_rows AS (SELECT ` + bucket + ` AS bucket, coalesce(` + column(t.breakdown) + `, '` + breakdownNull + `') AS breakdown` + person + `,
				count(*) AS n
			FROM events WHERE ` + where + ` GROUP BY ALL),
		trend_top AS (SELECT breakdown FROM trend_rows GROUP BY breakdown ORDER BY sum(n) DESC, breakdown LIMIT 25)
		SELECT strftime(bucket, '%Y-%m-%d'), value_group, value
		FROM (SELECT bucket, CASE WHEN breakdown IN (SELECT breakdown FROM trend_top) THEN breakdown ELSE '` + breakdownOther + `' END AS value_group,
				` + value + ` AS value
			FROM trend_rows GROUP BY ALL)`
}

// column is the typed column of a property (writeTyped names them).
func column(property string) string { return strings.TrimPrefix(property, "$") }

// funnelSteps are the events of the scenario's funnel, over the range with a 14-day
// conversion window.
var funnelSteps = []string{"$pageview", "clicked cta", "signed up"}

func funnelQuery(r queryRange) map[string]any {
	var series []map[string]string
	for _, s := range funnelSteps {
		series = append(series, map[string]string{"kind": "EventsNode", "event": s})
	}
	return map[string]any{"kind": "FunnelsQuery", "series": series, "dateRange": r.dateRange(),
		"funnelsFilter": map[string]any{"funnelWindowInterval": 14, "funnelWindowIntervalUnit": "day"}}
}

// funnelCeiling counts, in SQL over the typed columns, the persons at each step of the
// funnel, a person's first $pageview in the range starting their conversion window.
func funnelCeiling(r queryRange) string {
	return fmt.Sprintf(`WITH steps AS (SELECT person_id, event, "timestamp" AS t FROM events
			WHERE "timestamp" >= %s AND "timestamp" < %s AND event IN ('%s', '%s', '%s')),
		s1 AS (SELECT person_id, min(t) AS t1 FROM steps WHERE event = '%[3]s' GROUP BY person_id),
		s2 AS (SELECT person_id, any_value(t1) AS t1, min(t) AS t2 FROM steps JOIN s1 USING (person_id)
			WHERE event = '%[4]s' AND t > t1 AND t <= t1 + INTERVAL 14 DAY GROUP BY person_id),
		s3 AS (SELECT DISTINCT person_id FROM steps JOIN s2 USING (person_id)
			WHERE event = '%[5]s' AND t > t2 AND t <= t1 + INTERVAL 14 DAY)
		SELECT (SELECT count(*) FROM s1), (SELECT count(*) FROM s2), (SELECT count(*) FROM s3)`,
		sqlTime(r.from), sqlTime(r.to), funnelSteps[0], funnelSteps[1], funnelSteps[2])
}

// queryCases are the figures: the queries of the table (a HogQL breakdown
// over every event, a trend of daily active users by browser, a trend of totals, the
// newest 100 events), a 3-step funnel, a property filter, the Web analytics screen's
// overview and top pages (queries_web.go), and the other insight kinds (kindCases).
func queryCases(r queryRange) []queryCase {
	total := trend{event: "$pageview", math: "total", interval: "day"}
	dau := trend{event: "$pageview", math: "dau", interval: "day", breakdown: "$browser"}
	filtered := trend{event: "$pageview", math: "total", interval: "day", filter: &[2]string{"$browser", "Chrome"}}
	return append([]queryCase{
		{name: "HogQL: properties.$browser, count(), every event",
			query:   map[string]string{"kind": "HogQLQuery", "query": "SELECT properties.$browser AS b, count() FROM events GROUP BY b"},
			ceiling: `SELECT browser AS b, count(*) FROM events GROUP BY b`, check: checkHogQL},
		{name: "TrendsQuery: $pageview DAU by day by $browser, 30 days", query: dau.query(r), ceiling: dau.ceiling(r), check: checkBreakdown},
		{name: "TrendsQuery: $pageview total by day, 30 days", query: total.query(r), ceiling: total.ceiling(r), check: checkTotal},
		{name: "EventsQuery: newest 100 of the last day",
			query: map[string]any{"kind": "EventsQuery", "select": []string{"*", "event", "person",
				"coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen", "properties.$lib", "timestamp"},
				"orderBy": []string{"timestamp DESC"}, "after": r.after.Format(time.RFC3339), "limit": 100},
			ceiling: fmt.Sprintf(`SELECT uuid::VARCHAR, event, distinct_id, person_id, "timestamp", coalesce(current_url, screen_name), lib
				FROM events WHERE "timestamp" >= %s ORDER BY "timestamp" DESC LIMIT 101`, sqlTime(r.after)),
			check: checkNewest},
		{name: "FunnelsQuery: 3 steps, 14-day window, 30 days", query: funnelQuery(r), ceiling: funnelCeiling(r)},
		{name: "TrendsQuery: $pageview total by day where $browser = Chrome, 30 days", query: filtered.query(r),
			ceiling: filtered.ceiling(r), check: checkTotal},
		webOverviewCase(r),
		webPagesCase(r),
	}, kindCases(r)...)
}

// dashboardTiles are the dashboard's 10 insights, each a query and its ceiling: what
// a product dashboard shows over 30 days.
func dashboardTiles(r queryRange) []queryCase {
	var tiles []queryCase
	for _, t := range []trend{
		{event: "$pageview", math: "total", interval: "day"},
		{event: "$pageview", math: "dau", interval: "day"},
		{event: "$pageview", math: "dau", interval: "day", breakdown: "$browser"},
		{event: "$pageview", math: "total", interval: "day", breakdown: "$os"},
		{event: "$pageview", math: "total", interval: "day", filter: &[2]string{"$browser", "Chrome"}},
		{event: "signed up", math: "total", interval: "week"},
		{event: "$pageview", math: "total", interval: "day", breakdown: "$pathname"},
		{event: "$autocapture", math: "total", interval: "day", breakdown: "$referring_domain"},
		{event: "$screen", math: "total", interval: "day", breakdown: "$screen_name"},
	} {
		name := fmt.Sprintf("%s %s by %s", t.event, t.math, t.interval)
		if t.breakdown != "" {
			name += " by " + t.breakdown
		}
		tiles = append(tiles, queryCase{name: name, query: t.query(r), ceiling: t.ceiling(r)})
	}
	return append(tiles, queryCase{name: "funnel", query: funnelQuery(r), ceiling: funnelCeiling(r)})
}

// runQueries runs the queries scenario: it loads (or generates) the data, serves a copy
// of it with hedge, times the queries and the dashboard through the API, each followed
// by its ceiling, and stops hedge. hedgeErr is hedge's unclean stop, reported apart.
func runQueries(ctx context.Context, cfg suiteConfig, binary, work string, sc scenario) (_ *scenarioRun, hedgeErr, err error) {
	qb := *sc.Queries
	cacheRoot := ""
	if qb.Cache {
		cacheRoot = filepath.Join(os.TempDir(), "hedge-bench-queries")
	}
	data, cached, err := loadQueryData(ctx, qb, cacheRoot, filepath.Join(work, "queries-generated"), cfg.log)
	if err != nil {
		return nil, nil, err
	}
	q := &queryRun{Events: data.Events, Persons: data.Persons, Days: data.Days, DataEnd: data.End, Cached: cached,
		GenerateSeconds: data.Seconds, PropertiesBytes: data.PropertiesBytes, AnswersOK: true,
		BytesPerEvent: float64(data.HedgeBytes) / float64(data.Events), TypedBytesPerEvent: float64(data.TypedBytes) / float64(data.Events)}
	if cached {
		fmt.Fprintf(cfg.log, "%-20s %s events from %s (generated in %.0f s)\n", sc.Name, thousands(float64(data.Events)), data.dir, data.Seconds)
	}
	begin := time.Now()
	dir := filepath.Join(work, "queries-data")
	if err := copyFiles(data.dir, dir, hedgeDatabase, "bootstrap.json"); err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	q.CopySeconds = time.Since(begin).Seconds()
	var flags []string
	if qb.Lake {
		begin = time.Now()
		if out, err := exec.CommandContext(ctx, binary, "lake", "move", "--data", dir).CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("hedge lake move: %w\n%s", err, out)
		}
		q.MoveSeconds = time.Since(begin).Seconds()
		size, err := dirSize(filepath.Join(dir, "lake"))
		if err != nil {
			return nil, nil, err
		}
		q.LakeBytesPerEvent = float64(size) / float64(data.Events)
		flags = []string{"--log", "jetstream", "--storage", "lake"}
		fmt.Fprintf(cfg.log, "%-20s moved into the lake in %.1f s, %.0f bytes an event\n", sc.Name, q.MoveSeconds, q.LakeBytesPerEvent)
	}
	begin = time.Now()
	p, err := startHedge(binary, dir, false, flags...)
	if err != nil {
		return nil, nil, err
	}
	q.StartSeconds = time.Since(begin).Seconds()
	boot, err := readBootstrap(filepath.Join(dir, "bootstrap.json"))
	if err != nil {
		p.kill()
		return nil, nil, err
	}
	fmt.Fprintf(cfg.log, "%-20s hedge serving %s in %.1f s (copied in %.1f s), pid %d\n", sc.Name, dir, q.StartSeconds, q.CopySeconds, p.pid())
	typed, err := openTyped(filepath.Join(data.dir, typedDatabase))
	if err != nil {
		p.kill()
		return nil, nil, err
	}
	defer typed.Close()
	m := &queryMeter{qb: qb, log: cfg.log, api: newAPIClientTimeout(p.adminURL, boot.PersonalAPIKey, boot.ProjectID, 10*time.Minute),
		typed: typed, captureURL: p.captureURL, token: boot.ProjectAPIKey, r: newQueryRange(data.End), run: q}
	var u usage
	w, err := startWatch(procProbe{pids: []string{strconv.Itoa(p.pid())}})
	if err == nil {
		measureErr := m.measure(ctx)
		u, err = w.end()
		err = cmp.Or(measureErr, err)
	}
	if err != nil {
		p.kill()
		return nil, nil, fmt.Errorf("%w\nhedge's log:\n%s", err, p.log())
	}
	return &scenarioRun{scenario: sc, queries: q, usage: u, rows: rowCheck{Skipped: "no events sent: the queries read generated ones"}}, p.stop(), nil
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) (int64, error) {
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			size += info.Size()
		}
		return err
	})
	return size, err
}

// typedDB is the typed events, open read-only for the ceilings.
type typedDB struct {
	connector *duckdb.Connector
	*sql.DB
}

// openTyped opens the typed events at path as hedge opens its database: on a thread at
// hedge's query priority, which DuckDB's worker threads inherit from the thread that
// opens it, with hedge's default memory limit and threads, spilling past it to a
// directory beside the file as hedge's spills beside its own (a read-only database
// has none by default: the paths' ceiling ran out of memory without one).
func openTyped(path string) (*typedDB, error) {
	spill := path + ".spill"
	connector, err := lowered(func() (*duckdb.Connector, error) {
		return duckdb.NewConnector(path+"?access_mode=read_only&memory_limit="+warehouse.DefaultMemoryLimit+"&temp_directory="+url.QueryEscape(spill), nil)
	})
	if err != nil {
		return nil, fmt.Errorf("cannot open the typed events: %w", err)
	}
	return &typedDB{connector: connector, DB: sql.OpenDB(connector)}, nil
}

func (t *typedDB) Close() error { return errors.Join(t.DB.Close(), t.connector.Close()) }

// rows runs each query, on a thread at hedge's query priority, and returns the last
// one's rows.
func (t *typedDB) rows(ctx context.Context, queries ...string) ([][]any, error) {
	var rows [][]any
	for _, query := range queries {
		var err error
		if rows, err = lowered(func() ([][]any, error) { return queryRows(ctx, t.DB, query) }); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// copyFiles copies the named files of from into to.
func copyFiles(from, to string, names ...string) error {
	if err := os.MkdirAll(to, 0o700); err != nil {
		return fmt.Errorf("cannot make %s: %w", to, err)
	}
	for _, name := range names {
		src, err := os.Open(filepath.Join(from, name))
		if err != nil {
			return fmt.Errorf("cannot copy the generated data: %w", err)
		}
		dst, err := os.OpenFile(filepath.Join(to, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			_, err = io.Copy(dst, src)
			err = errors.Join(err, dst.Close())
		}
		src.Close()
		if err != nil {
			return fmt.Errorf("cannot copy the generated data: %w", err)
		}
	}
	return nil
}

// queryMeter times the scenario's figures: each through hedge's API, then its ceiling
// on the typed events right away, so that both meet the machine in the same state.
type queryMeter struct {
	qb         queryBench
	log        io.Writer
	api        *apiClient
	typed      *typedDB
	captureURL string
	token      string
	r          queryRange
	run        *queryRun
}

// measure times each query, then the dashboard's cold and cached loads.
func (m *queryMeter) measure(ctx context.Context) error {
	for _, c := range queryCases(m.r) {
		var answer []byte
		f := &queryFigure{Name: c.name, Goal: cmp.Or(c.goal, queryGoal)}
		latencies, answers, err := m.time(ctx, func() (time.Duration, int, error) {
			begin := time.Now()
			status, body, err := m.api.query(c.query)
			if status == fasthttp.StatusOK {
				answer = body
			} else if err == nil {
				err = fmt.Errorf("the query API answered %d: %.300s", status, body)
			}
			return time.Since(begin), status, err
		})
		if err != nil {
			m.problem("%s: %v", c.name, err)
		}
		f.Latency, f.Answers = percentilesOf(latencies), answers
		m.run.Figures = append(m.run.Figures, f)
		rows, err := m.ceiling(ctx, f, c.ceiling)
		if err != nil { // the figure stands without its ceiling; the report says why
			m.problem("%s: cannot time its ceiling: %v", c.name, err)
			continue
		}
		if c.check != nil && answer != nil {
			if err := c.check(answer, rows); err != nil {
				m.problem("%s: hedge's answer differs from its ceiling's: %v", c.name, err)
				m.run.AnswersOK = false
			}
		}
	}
	return m.measureDashboard(ctx)
}

// ceiling times queries, one after another, on the typed events as f's ceiling, logs
// f, and returns the last query's rows.
func (m *queryMeter) ceiling(ctx context.Context, f *queryFigure, queries ...string) ([][]any, error) {
	var rows [][]any
	latencies, _, err := m.time(ctx, func() (time.Duration, int, error) {
		var err error
		begin := time.Now()
		rows, err = m.typed.rows(ctx, queries...)
		return time.Since(begin), 0, err
	})
	if err != nil {
		return nil, err
	}
	c := percentilesOf(latencies)
	f.Ceiling = &c
	if f.Latency.P50 > 0 {
		f.Ratio = c.P50 / f.Latency.P50
	}
	fmt.Fprintf(m.log, "%-20s %s: p50 %s, p95 %s (%d runs); ceiling p50 %s, p95 %s (%d runs)\n", "queries", f.Name,
		millis(f.Latency.P50), millis(f.Latency.P95), f.Latency.Count, millis(c.P50), millis(c.P95), c.Count)
	return rows, nil
}

// measureDashboard makes a dashboard of dashboardTiles and times its loads: cold,
// each after an event of the project's, which makes every cached result stale (hedge
// caches a result until its project has new events), and cached, each right after
// another load.
func (m *queryMeter) measureDashboard(ctx context.Context) error {
	tiles := dashboardTiles(m.r)
	status, body, err := m.api.do(fasthttp.MethodPost, fmt.Sprintf("/api/projects/%d/dashboards/", m.api.project), mustJSON(map[string]string{"name": "bench queries"}))
	if err == nil && status != fasthttp.StatusCreated {
		err = fmt.Errorf("the management API answered %d: %.300s", status, body)
	}
	var dashboard struct {
		ID int64 `json:"id"`
	}
	if err == nil {
		err = json.Unmarshal(body, &dashboard)
	}
	if err != nil {
		return fmt.Errorf("cannot make the dashboard: %w", err)
	}
	for _, t := range tiles {
		insight := map[string]any{"name": t.name, "query": map[string]any{"kind": "InsightVizNode", "source": t.query}, "dashboards": []int64{dashboard.ID}}
		status, body, err := m.api.do(fasthttp.MethodPost, fmt.Sprintf("/api/projects/%d/insights/", m.api.project), mustJSON(insight))
		if err == nil && status != fasthttp.StatusCreated {
			err = fmt.Errorf("the management API answered %d: %.300s", status, body)
		}
		if err != nil {
			return fmt.Errorf("cannot make the dashboard's insight %q: %w", t.name, err)
		}
	}
	path := fmt.Sprintf("/api/projects/%d/dashboards/%d/", m.api.project, dashboard.ID)
	load := func(cold bool) (time.Duration, int, error) {
		if cold {
			if err := m.sendEvent(); err != nil {
				return 0, 0, err
			}
		}
		begin := time.Now()
		status, body, err := m.api.do(fasthttp.MethodGet, path, nil)
		took := time.Since(begin)
		if err == nil && status != fasthttp.StatusOK {
			err = fmt.Errorf("the management API answered %d: %.300s", status, body)
		}
		if err == nil {
			if err = checkTiles(body, len(tiles), cold); err != nil {
				m.run.AnswersOK = false
			}
		}
		return took, status, err
	}
	for _, cold := range []bool{true, false} {
		f := &queryFigure{Name: fmt.Sprintf("dashboard of %d insights, cached", len(tiles))}
		if cold {
			f.Name, f.Goal = fmt.Sprintf("dashboard of %d insights, cold (after an event)", len(tiles)), dashboardGoal
		}
		latencies, answers, err := m.time(ctx, func() (time.Duration, int, error) { return load(cold) })
		if err != nil {
			m.problem("%s: %v", f.Name, err)
		}
		f.Latency, f.Answers = percentilesOf(latencies), answers
		m.run.Figures = append(m.run.Figures, f)
		if !cold { // a cached load computes nothing: no ceiling
			fmt.Fprintf(m.log, "%-20s %s: p50 %s, p95 %s (%d runs)\n", "queries", f.Name, millis(f.Latency.P50), millis(f.Latency.P95), f.Latency.Count)
			continue
		}
		// The cold load's ceiling is its insights' one after another, as hedge
		// computes them.
		var queries []string
		for _, t := range tiles {
			queries = append(queries, t.ceiling)
		}
		if _, err := m.ceiling(ctx, f, queries...); err != nil {
			return fmt.Errorf("cannot time the ceiling of the dashboard: %w", err)
		}
	}
	return nil
}

// checkTiles reports a dashboard answer without its tiles' results, or whose results
// are not all computed (cold) or all cached.
func checkTiles(body []byte, want int, cold bool) error {
	var d struct {
		Tiles []struct {
			IsCached bool `json:"is_cached"`
			Insight  *struct {
				Result json.RawMessage `json:"result"`
			} `json:"insight"`
		} `json:"tiles"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return fmt.Errorf("cannot read the dashboard: %w", err)
	}
	if len(d.Tiles) != want {
		return fmt.Errorf("the dashboard has %d tiles, want %d", len(d.Tiles), want)
	}
	for i, t := range d.Tiles {
		switch {
		case t.Insight == nil || len(t.Insight.Result) == 0 || string(t.Insight.Result) == "null":
			return fmt.Errorf("tile %d has no result", i)
		case t.IsCached == cold:
			return fmt.Errorf("tile %d: is_cached %v on a load meant to be %s", i, t.IsCached, map[bool]string{true: "cold", false: "cached"}[cold])
		}
	}
	return nil
}

// sendEvent captures one event for the project, which makes its cached results stale.
// Through the log (hedge's default) the 200 comes before the warehouse has it: it
// waits until a query sees it, so that the next load finds the results stale.
func (m *queryMeter) sendEvent() error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	id := uuid.Must(uuid.NewV7()).String()
	req.SetRequestURI(m.captureURL + "/capture/")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(mustJSON(map[string]any{"api_key": m.token, "event": "bench dashboard refresh", "distinct_id": "user-0", "uuid": id}))
	if err := fasthttp.DoTimeout(req, resp, apiTimeout); err != nil {
		return fmt.Errorf("cannot capture an event: %w", err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("cannot capture an event: capture answered %d", resp.StatusCode())
	}
	for deadline := time.Now().Add(logSettle); ; {
		n, err := m.api.count(`SELECT count() FROM events WHERE uuid = '` + id + `'`)
		if err != nil {
			return fmt.Errorf("cannot see the event captured: %w", err)
		}
		if n[0] > 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the event captured was not queryable within %s", logSettle)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// warmupLimit: a first run faster than this is a warm-up, not timed; it pays for what
// the next runs find ready (a connection, blocks in DuckDB's buffers). A slower one
// reads more than DuckDB's buffers hold, as every run of it does: it counts.
const warmupLimit = time.Second

// time runs f until qb.Runs timed runs or, past qb.MinRuns, qb.Budget, the first run
// a warm-up if it is fast, and returns the durations of the runs that succeeded, the
// answers by status, and the first error.
func (m *queryMeter) time(ctx context.Context, f func() (time.Duration, int, error)) ([]time.Duration, map[string]int64, error) {
	var first error
	var latencies []time.Duration
	statuses := map[int]int64{}
	begin := time.Now()
	for i := -1; i < m.qb.Runs && ctx.Err() == nil && (i < m.qb.MinRuns || time.Since(begin) < m.qb.Budget); i++ {
		took, status, err := f()
		if i < 0 && err == nil && took < warmupLimit {
			begin = time.Now()
			continue
		}
		i = max(i, 0)
		statuses[status]++
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		latencies = append(latencies, took)
	}
	return latencies, answers(statuses), first
}

func (m *queryMeter) problem(format string, args ...any) {
	m.run.Problems = append(m.run.Problems, fmt.Sprintf(format, args...))
}

// lowered runs f on an OS thread of its own at queryNice, which ends with f (a process
// without privileges cannot raise a priority back).
func lowered[T any](f func() (T, error)) (T, error) {
	type outcome struct {
		value T
		err   error
	}
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread exits with this goroutine
		lowerThreadPriority()
		v, err := f()
		done <- outcome{v, err}
	}()
	o := <-done
	return o.value, o.err
}

// queryRows runs query and reads all of its rows.
func queryRows(ctx context.Context, db *sql.DB, query string) ([][]any, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	columns, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rows.Next() {
		row := make([]any, len(columns))
		ptrs := make([]any, len(columns))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func mustJSON(v any) []byte {
	text, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and numbers
	}
	return text
}

// The answers compared with the ceilings'.

// checkHogQL compares the HogQL breakdown's rows, [b, count], with the ceiling's.
func checkHogQL(answer []byte, rows [][]any) error {
	var a struct {
		Results [][]any `json:"results"`
	}
	if err := decodeNumbers(answer, &a); err != nil {
		return err
	}
	got, want := map[string]string{}, map[string]string{}
	for _, r := range a.Results {
		if len(r) == 2 {
			got[fmt.Sprint(r[0])] = fmt.Sprint(r[1])
		}
	}
	for _, r := range rows {
		want[fmt.Sprint(r[0])] = fmt.Sprint(r[1])
	}
	return compareCounts(got, want)
}

// checkTotal compares a trend's total with the sum of the ceiling's counts.
func checkTotal(answer []byte, rows [][]any) error {
	got, err := trendCounts(answer)
	if err != nil {
		return err
	}
	var total int64
	for _, r := range rows {
		total += r[len(r)-1].(int64)
	}
	return compareCounts(map[string]string{"total": fmt.Sprint(got[""])}, map[string]string{"total": fmt.Sprint(total)})
}

// checkBreakdown compares a trend's count per breakdown value with the ceiling's.
func checkBreakdown(answer []byte, rows [][]any) error {
	got, err := trendCounts(answer)
	if err != nil {
		return err
	}
	sums := map[string]int64{}
	for _, r := range rows {
		sums[fmt.Sprint(r[1])] += r[2].(int64)
	}
	gotText, wantText := map[string]string{}, map[string]string{}
	for k, v := range got {
		gotText[k] = fmt.Sprint(v)
	}
	for k, v := range sums {
		wantText[k] = fmt.Sprint(v)
	}
	return compareCounts(gotText, wantText)
}

// trendCounts is a trend answer's count per breakdown value ("" without one).
func trendCounts(answer []byte) (map[string]int64, error) {
	var a struct {
		Results []struct {
			Count          float64 `json:"count"`
			BreakdownValue any     `json:"breakdown_value"`
		} `json:"results"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, fmt.Errorf("cannot read the answer: %w", err)
	}
	counts := map[string]int64{}
	for _, l := range a.Results {
		key := ""
		if l.BreakdownValue != nil {
			key = fmt.Sprint(l.BreakdownValue)
		}
		counts[key] += int64(l.Count)
	}
	return counts, nil
}

// checkNewest checks that the newest events are as many as the ceiling's up to 100,
// and among its 101 newest: events of one time come in either order, so the 100th may
// be the ceiling's 101st.
func checkNewest(answer []byte, rows [][]any) error {
	var a struct {
		Results [][]any `json:"results"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return fmt.Errorf("cannot read the answer: %w", err)
	}
	if want := min(len(rows), 100); len(a.Results) != want {
		return fmt.Errorf("%d events, the ceiling %d", len(a.Results), want)
	}
	newest := map[string]bool{}
	for _, r := range rows {
		newest[fmt.Sprint(r[0])] = true
	}
	for _, r := range a.Results {
		if !newest[fmt.Sprint(r[0])] {
			return fmt.Errorf("event %v is not among the ceiling's %d newest", r[0], len(rows))
		}
	}
	return nil
}

func decodeNumbers(answer []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("cannot read the answer: %w", err)
	}
	return nil
}

// compareCounts names the first keys whose values differ, at most three.
func compareCounts(got, want map[string]string) error {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			diffs = append(diffs, fmt.Sprintf("%q: %s, the ceiling %s", k, got[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%q: %s, the ceiling none", k, got[k]))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return errors.New(strings.Join(diffs[:min(3, len(diffs))], "; "))
}

// print writes the scenario's figures as a table, and what the data was.
func (q *queryRun) print(w io.Writer, r *result, mode string) {
	source := fmt.Sprintf("generated in %.0f s", q.GenerateSeconds)
	if q.Cached {
		source = fmt.Sprintf("from the cache (generated in %.0f s)", q.GenerateSeconds)
	}
	fmt.Fprintf(w, "\n%s, %s mode: %s events of %s persons over %d days, %s; %.0f B of properties an event; stored %s B an event (the typed ceiling table: %s B)\n",
		r.Scenario.Name, mode, thousands(float64(q.Events)), thousands(float64(q.Persons)), q.Days, source, q.PropertiesBytes,
		thousands(q.BytesPerEvent), thousands(q.TypedBytesPerEvent))
	fmt.Fprintf(w, "hedge on a copy (%.1f s), serving in %.1f s; through the API against the same SQL on typed columns in DuckDB (the ceiling):\n",
		q.CopySeconds, q.StartSeconds)
	if q.MoveSeconds > 0 {
		fmt.Fprintf(w, "the events moved into the lake (hedge lake move) in %.1f s, %s B an event; vs table: the p50 over the events table's in this suite\n",
			q.MoveSeconds, thousands(q.LakeBytesPerEvent))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query\tanswers\tp50\tp95\tceiling p50\tp95\tratio\tvs table\t")
	for _, f := range q.Figures {
		ceil, ceil95, ratio, versus := "-", "-", "-", "-"
		if c := f.Ceiling; c != nil {
			ceil, ceil95, ratio = millis(c.P50), millis(c.P95), fmt.Sprintf("%.2f", f.Ratio)
		}
		if f.VersusTable > 0 {
			versus = fmt.Sprintf("%.2f", f.VersusTable)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", f.Name, answerText(f.Answers), millis(f.Latency.P50), millis(f.Latency.P95), ceil, ceil95, ratio, versus)
	}
	tw.Flush()
	server := "?"
	if r.ServerCPU >= 0 && r.usageSource != "" {
		server = fmt.Sprintf("%.2f", r.ServerCPU)
	}
	fmt.Fprintf(w, "CPU in cores: hedge %s, the bench and its ceilings %.2f, others %.2f; steal %.1f%%; hedge's peak RSS %d MiB; answers agree with the ceilings: %v\n",
		server, r.ClientCPU, r.OtherCPU, r.StealPercent, r.PeakRSS>>20, q.AnswersOK)
}
