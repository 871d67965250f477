package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" driver of database/sql

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/schemas"
	"github.com/hedge-analytics/hedge/warehouse"
)

// The queries scenario's data: a data directory of generated events that hedge serves,
// and a DuckDB file of the same events with their properties in typed columns, which
// the ceilings read. The events are written with SQL straight into the database file,
// in arrival order (a timestamp that grows with the row, as ingestion stores them), on
// every core, without HTTP, decoding or the writer's person processing: most of the
// time goes to DuckDB compressing the properties text (some 11 µs of CPU an event),
// which any way of storing them pays.
//
// They are written at the schema of baselineMigration, by that schema's columns, and
// hedge's own migrations then bring the file to the current schema, as they do an
// existing installation's: a later migration that derives something from the events
// (a column of a property, say) must fill it for rows already stored, and so fills it
// for these. The scenario so measures what hedge does with a database, whatever the
// shape of its tables.

// queryDataVersion names the generator's output: a change to what it writes must
// change it, so that no cached directory of the old output is used.
const queryDataVersion = 6

// baselineMigration is the last migration whose schema the generator writes to.
const baselineMigration = 13

// generatedTeam is the project the events are written for: the first project of a new
// database is 1 (meta.team_id_seq starts at 1); the bootstrap, which runs after the
// migrations, creates it, and the generator checks that it did.
const generatedTeam = 1

// queryDataFiles are the files of a generated directory.
const (
	hedgeDatabase = "hedge.duckdb" // as hedge serve names it in its data directory
	typedDatabase = "typed.duckdb"
	dataManifest  = "manifest.json"
)

// queryData is a generated directory, as its manifest describes it.
type queryData struct {
	Key     string `json:"key"`
	Events  int    `json:"events"`
	Persons int    `json:"persons"`
	Days    int    `json:"days"`
	// End is when the newest event happened: the scenario's date ranges end there, so
	// that a directory generated days ago is read as it was on its day.
	End time.Time `json:"end"`
	// Seconds is how long the generation took; PropertiesBytes the mean length of an
	// event's properties text.
	Seconds         float64 `json:"generate_seconds"`
	PropertiesBytes float64 `json:"properties_bytes"`
	// HedgeBytes and TypedBytes are the sizes of the two database files, checkpointed.
	HedgeBytes int64 `json:"hedge_file_bytes"`
	TypedBytes int64 `json:"typed_file_bytes"`
	dir        string
}

// queryDataKey names what a generation of qb writes: the generator's version, the
// sizes, the DuckDB library, and every migration of hedge (the file is cached migrated).
func queryDataKey(qb queryBench) (string, error) {
	duck, err := warehouse.DuckDBVersion()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "v%d events %d persons %d days %d duckdb %s\n", queryDataVersion, qb.Events, qb.Persons, qb.Days, duck)
	files, err := fs.Glob(schemas.Migrations, "migrations/*.sql")
	if err != nil {
		return "", fmt.Errorf("cannot list the migrations: %w", err)
	}
	for _, f := range files {
		text, err := fs.ReadFile(schemas.Migrations, f)
		if err != nil {
			return "", fmt.Errorf("cannot read migration %s: %w", f, err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(text))
		h.Write(text)
	}
	return strconv.Itoa(qb.Events) + "-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// queryCacheUnused is how long a cached directory may go unused before a generation
// removes it: each holds gigabytes.
const queryCacheUnused = 3 * 24 * time.Hour

// loadQueryData returns qb's generated directory: from cacheRoot when it holds one for
// qb's key, else generated (into cacheRoot, or into dir when cacheRoot is "", unless
// dir holds it already). Two
// suites generating at once each generate, and the first to finish is kept.
func loadQueryData(ctx context.Context, qb queryBench, cacheRoot, dir string, log io.Writer) (*queryData, bool, error) {
	key, err := queryDataKey(qb)
	if err != nil {
		return nil, false, err
	}
	if cacheRoot == "" {
		// dir is the suite's own: one generated there is this suite's, of the same key
		// (the queries run before queries-lake generated it).
		if d, err := readQueryData(dir); err == nil {
			return d, true, nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, false, fmt.Errorf("cannot make the query data's directory: %w", err)
		}
		d, err := generateQueryData(ctx, qb, key, dir, log)
		return d, false, err
	}
	final := filepath.Join(cacheRoot, key)
	if d, err := readQueryData(final); err == nil {
		now := time.Now()
		os.Chtimes(filepath.Join(final, dataManifest), now, now) // in use: not to be removed
		return d, true, nil
	}
	if err := os.MkdirAll(cacheRoot, 0o755); err != nil {
		return nil, false, fmt.Errorf("cannot make the query data cache: %w", err)
	}
	removeUnused(cacheRoot, log)
	tmp, err := os.MkdirTemp(cacheRoot, "generating-")
	if err != nil {
		return nil, false, fmt.Errorf("cannot make the query data cache: %w", err)
	}
	if _, err := generateQueryData(ctx, qb, key, tmp, log); err != nil {
		os.RemoveAll(tmp)
		return nil, false, err
	}
	renameErr := os.Rename(tmp, final)
	if renameErr != nil {
		os.RemoveAll(tmp)
	}
	d, err := readQueryData(final) // this generation's, or another suite's that finished first
	if err != nil {
		return nil, false, fmt.Errorf("cannot keep the generated data in %s: %w", final, cmp.Or(renameErr, err))
	}
	return d, false, nil
}

// removeUnused removes the cached directories unused for queryCacheUnused, and what
// generations that did not finish left.
func removeUnused(cacheRoot string, log io.Writer) {
	entries, err := os.ReadDir(cacheRoot)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(cacheRoot, e.Name())
		stamp := p
		if !strings.HasPrefix(e.Name(), "generating-") {
			stamp = filepath.Join(p, dataManifest)
		}
		if info, err := os.Stat(stamp); err == nil && time.Since(info.ModTime()) < queryCacheUnused {
			continue
		}
		fmt.Fprintf(log, "removing %s, unused for %v\n", p, queryCacheUnused)
		os.RemoveAll(p)
	}
}

func readQueryData(dir string) (*queryData, error) {
	text, err := os.ReadFile(filepath.Join(dir, dataManifest))
	if err != nil {
		return nil, fmt.Errorf("cannot read the query data's manifest: %w", err)
	}
	var d queryData
	if err := json.Unmarshal(text, &d); err != nil {
		return nil, fmt.Errorf("cannot read the query data's manifest: %w", err)
	}
	d.dir = dir
	return &d, nil
}

// generateQueryData writes qb's events into dir: hedge.duckdb at the baseline schema,
// then migrated and bootstrapped by hedge's own code, then typed.duckdb from it, and
// the manifest last (a directory without one is unfinished).
func generateQueryData(ctx context.Context, qb queryBench, key, dir string, log io.Writer) (*queryData, error) {
	begin := time.Now()
	d := &queryData{Key: key, Events: qb.Events, Persons: qb.Persons, Days: qb.Days, End: begin.UTC().Truncate(time.Second), dir: dir}
	fmt.Fprintf(log, "%-20s generating %s events of %s persons over %d days in %s\n", "queries",
		thousands(float64(qb.Events)), thousands(float64(qb.Persons)), qb.Days, dir)
	hedgePath := filepath.Join(dir, hedgeDatabase)
	if err := writeBaseline(ctx, hedgePath, qb, d.End); err != nil {
		return nil, err
	}
	wrote := time.Since(begin)
	wh, err := warehouse.Open(ctx, warehouse.Config{Path: hedgePath, MemoryLimit: generateMemory})
	if err != nil {
		return nil, fmt.Errorf("cannot migrate the generated events: %w", err)
	}
	// What hedge serve does in the background for rows stored before a migration (the
	// materialized property columns), done here before the file is cached, so that
	// every run measures the steady state. Its time is the migrations'.
	wh.StartBackfill()
	err = wh.WaitBackfill(ctx)
	boot, bootErr := admin.BootstrapIfEmpty(ctx, wh.DB(), dir, admin.Bootstrap{UserEmail: "admin@localhost"})
	err = cmp.Or(err, bootErr)
	if err == nil && (boot == nil || boot.ProjectID != generatedTeam) {
		err = fmt.Errorf("cannot bootstrap the generated events' project: it is not project %d", generatedTeam)
	}
	if err := errors.Join(err, wh.Close()); err != nil {
		return nil, fmt.Errorf("cannot bootstrap the generated events' project: %w", err)
	}
	migrated := time.Since(begin) - wrote
	typedPath := filepath.Join(dir, typedDatabase)
	if d.PropertiesBytes, err = writeTyped(ctx, typedPath, hedgePath); err != nil {
		return nil, err
	}
	for p, size := range map[string]*int64{hedgePath: &d.HedgeBytes, typedPath: &d.TypedBytes} {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("cannot measure the generated data: %w", err)
		}
		*size = info.Size()
	}
	d.Seconds = time.Since(begin).Seconds()
	text, err := json.MarshalIndent(d, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, dataManifest), append(text, '\n'), 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot write the query data's manifest: %w", err)
	}
	fmt.Fprintf(log, "%-20s generated in %v (events %v, hedge's migrations and bootstrap %v, typed columns %v): %.0f B of properties an event, %s B stored an event\n",
		"queries", time.Since(begin).Round(time.Second), wrote.Round(time.Second), migrated.Round(time.Second),
		(time.Since(begin) - wrote - migrated).Round(time.Second), d.PropertiesBytes, thousands(float64(d.HedgeBytes)/float64(d.Events)))
	return d, nil
}

// generateMemory is DuckDB's memory_limit while generating, above hedge's default: an
// INSERT of millions of rows builds their row groups in memory before writing them.
const generateMemory = "2GB"

// writeBaseline creates the database file at the baseline schema (hedge's migrations up
// to baselineMigration, recorded as hedge's migrator records them) and writes the
// persons, their distinct ids and the events.
func writeBaseline(ctx context.Context, dbPath string, qb queryBench, end time.Time) error {
	db, err := sql.Open("duckdb", dbPath+"?memory_limit="+generateMemory)
	if err != nil {
		return fmt.Errorf("cannot create the generated database: %w", err)
	}
	defer db.Close()
	migrations := []string{`CREATE SCHEMA IF NOT EXISTS meta;
		CREATE TABLE IF NOT EXISTS meta.schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       VARCHAR     NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL
		)`}
	files, err := fs.Glob(schemas.Migrations, "migrations/*.sql")
	if err != nil || len(files) < baselineMigration {
		return fmt.Errorf("cannot list the migrations up to %d: %v", baselineMigration, err)
	}
	for version, f := range files[:baselineMigration] {
		text, err := fs.ReadFile(schemas.Migrations, f)
		if err != nil {
			return fmt.Errorf("cannot read migration %s: %w", f, err)
		}
		name := strings.TrimSuffix(path.Base(f), ".sql")
		migrations = append(migrations, string(text),
			fmt.Sprintf(`INSERT INTO meta.schema_migrations VALUES (%d, '%s', now())`, version+1, name))
	}
	for _, m := range migrations {
		if _, err := db.ExecContext(ctx, m); err != nil {
			return fmt.Errorf("cannot build the baseline schema: %w", err)
		}
	}
	span := float64(qb.Days) * 86400
	start := float64(end.Unix()) - span
	for _, statement := range generateStatements() {
		if _, err := db.ExecContext(ctx, statement, sql.Named("team", generatedTeam), sql.Named("users", qb.Persons),
			sql.Named("events", qb.Events), sql.Named("start", start), sql.Named("span", span),
			sql.Named("pool", max(1, qb.Persons/poolShare))); err != nil {
			return fmt.Errorf("cannot generate the events: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("cannot checkpoint the generated events: %w", err)
	}
	return nil
}

// poolShare: at any moment the visits come from the persons of a pool of a fifth of
// them, which slides from the first person to the last over the days, so that a person
// is active for some weeks (their first event is when the pool reaches them), and within
// it a few persons make most visits.
const poolShare = 5

// visitShapes are the visits (sessions) the events come in, repeated in this order
// (each with a person and pages of its own): a letter an event, V a view ($pageview, or
// $screen in the app), A an $autocapture, C one of the custom events, L the $pageleave
// that ends a visit on the web. Some 5 events a visit, so 10 million events make some 2
// million sessions; a fifth of the visits are a single view, and those of a view and a
// $pageleave within 10 s bounce too. Of the events, 52% are views, 15% $autocapture,
// 16% $pageleave and 17% custom events (3% each).
var visitShapes = []string{"V", "V", "VL", "V", "VL", "VAL", "VCL", "VAVL", "VVCL", "VCVAVL", "VVAVCL", "VAVCCVVL",
	"VCVVVAVL", "VAAVCVCAVVL", "VVL", "VAVCVVCVAVCVL", "V", "VCL", "VAVAVCCAVVCVAVVL", "VVCVL"}

// visitEvents is visitShapes as a SQL list of its events in order, each a struct of
// its visit's place in the shapes (k), its own place in the visit (j), its letter (c),
// the place of the view whose page it is on (p), and the place of its visit's first
// event among all the shapes' (o); and the number of events of the shapes.
func visitEvents() (list string, count int) {
	var events []string
	for k, shape := range visitShapes {
		view := 0
		for j, c := range shape {
			if c == 'V' {
				view = j
			}
			events = append(events, fmt.Sprintf("{'k': %d, 'j': %d, 'c': '%c', 'p': %d, 'o': %d}", k, j, c, view, count-j))
			count++
		}
	}
	return "[" + strings.Join(events, ", ") + "]", count
}

// visitPace bounds the seconds between a visit's events: each visit has a pace from
// 5 to 95 s, its j-th event at j paces and up to half a pace from its start.
const visitPace = "(5 + hash(v, 'pace') % 91)"

// generateStatements are the SQL of a generation, run in order with the parameters
// $team, $users, $events, $start and $span (seconds since the epoch, of the first event
// and the time the events cover) and $pool.
//
// Every value derives from the row number by hash(), so that a generation writes the
// same events however DuckDB splits the work. Event i is the event of visitShapes at i
// modulo their count, of visit v, the round of shapes i falls in times their visits
// plus the visit's place; the visits start evenly over the span, in order, each with a
// person from the pool of its moment, and the $session_id of posthog-js for all its
// events (posthog-js keeps one until 30 minutes without an event); the events are
// written in time order, as they arrive. Each person has one distinct id, user-<n>,
// and the properties posthog-js (or posthog-ios, for an eighth of persons, whose
// events carry $screen_name and no URL or browser) sends: 25-35 of them, some 850
// bytes; a view's page is its visit's and the view's, and the events after a view are
// on its page. The properties are built by one concat() each: a chain of || copies the
// growing text at every step, ten times the cost.
func generateStatements() []string {
	browser := weighted("hash(u, 'browser') % 100", []int{45, 20, 12, 8, 7, 5, 2, 1},
		"Chrome", "Safari", "Mobile Safari", "Firefox", "Edge", "Chrome iOS", "Samsung Internet", "Opera")
	system := weighted("hash(u, 'os') % 100", []int{40, 25, 15, 12, 8}, "Windows", "Mac OS X", "iOS", "Android", "Linux")
	source := "hash(u, 'source') % 10"
	pages := weighted("hash(v, p, 'page') % 20", []int{5, 2, 2, 1, 1, 4, 1, 1, 2, 1}, "/", "/pricing", "/docs/getting-started",
		"/blog/launch-week", "/signup", "/app/dashboard", "/app/settings/billing", "/features/analytics", "/app/insights/new", "/docs/api/query")
	screens := weighted("hash(v, p, 'page') % 10", []int{3, 3, 2, 2}, "HomeScreen", "DashboardScreen", "InsightScreen", "SettingsScreen")
	custom := weighted("hash(i, 'custom') % 6", []int{1, 1, 1, 1, 1, 1},
		"signed up", "clicked cta", "opened settings", "invited teammate", "exported report", "upgraded plan")
	shapes, shapeEvents := visitEvents()
	// The columns of person u, a function of u alone.
	user := `hash(u, 'app') % 8 = 0 AS app, ` + browser + ` AS browser, ` + system + ` AS os,
		` + weighted(source, []int{4, 3, 1, 1, 1}, "", "google", "twitter", "newsletter", "hacker-news") + ` AS source,
		` + weighted(source, []int{4, 3, 1, 1, 1}, "$direct", "https://www.google.com/", "https://t.co/", "https://mail.example.net/",
		"https://news.ycombinator.com/") + ` AS referrer,
		` + weighted(source, []int{4, 3, 1, 1, 1}, "$direct", "www.google.com", "t.co", "mail.example.net", "news.ycombinator.com") + ` AS referring_domain,
		(['free', 'pro', 'team'])[u % 3 + 1] AS plan, md5('person:' || u)::UUID AS person_id,
		to_timestamp($start + $span * greatest(0, (u - $pool) / greatest(1, $users - $pool))) AS created_at`
	persons := `INSERT INTO persons (id, team_id, properties, created_at, is_identified, version, updated_at)
		SELECT person_id, $team, concat('{"email":"user', u, '@example.com","name":"User ', u, '","plan":"', plan,
			'","$initial_os":"', CASE WHEN app THEN (['iOS', 'Android'])[u % 2 + 1] ELSE os END,
			'","$initial_referring_domain":"', referring_domain, '","$initial_utm_source":"', source, '"}'),
			created_at, true, 0, created_at
		FROM (SELECT u, ` + user + ` FROM range($users) t(u))`
	distinctIDs := `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id, version, updated_at)
		SELECT $team, 'user-' || u, md5('person:' || u)::UUID, 0,
			to_timestamp($start + $span * greatest(0, (u - $pool) / greatest(1, $users - $pool)))
		FROM range($users) t(u)`
	// A visit's person is from the pool of its start, by the square of a uniform
	// number, which favours the pool's first persons. The visits start over the span
	// less an hour, so that their last events are within it. Only the narrow columns
	// are sorted into time order; the properties are computed from them after.
	n := strconv.Itoa(shapeEvents)
	visits := strconv.Itoa(len(visitShapes))
	visit := `SELECT i, e.j, e.c, e.p, v, first, u, to_timestamp($start + ($span - 3600) * first / $events + e.j * ` + visitPace + `
				+ (hash(i, 'jitter') % 1000) / 1000.0 * ` + visitPace + ` / 2) AS ts
			FROM (SELECT *, least($users - 1, (($users - $pool) * first // $events) + floor($pool * pow((hash(v, 'user') % 1000000) / 1e6, 2))::BIGINT) AS u
				FROM (SELECT i, e, i // ` + n + ` * ` + visits + ` + e.k AS v, i // ` + n + ` * ` + n + ` + e.o AS first
					FROM (SELECT i, (` + shapes + `)[i % ` + n + ` + 1] AS e FROM range($events) t(i))))
			ORDER BY ts, i`
	rows := `SELECT *, CASE c WHEN 'A' THEN '$autocapture' WHEN 'C' THEN ` + custom + `
				WHEN 'L' THEN CASE WHEN app THEN '$screen' ELSE '$pageleave' END
				ELSE CASE WHEN app THEN '$screen' ELSE '$pageview' END END AS name,
			md5('session:' || v)::UUID::VARCHAR AS session, ` + pages + ` AS page, ` + screens + ` AS screen
		FROM (SELECT i, hash(i, 'event') % 1000 AS r, v, p, c, ts, u, ` + user + ` FROM (` + visit + `))`
	properties := `concat('{"distinct_id":"user-', u, '","token":"phc_bench",',
		CASE WHEN app THEN concat('"$lib":"posthog-ios","$lib_version":"3.15.2","$screen_name":"', screen,
			'","$app_version":"2.', u % 20, '.0","$app_build":"', 300 + u % 50, '","$app_namespace":"com.example.app",',
			'"$os":"', (['iOS', 'Android'])[u % 2 + 1], '","$os_version":"17.', u % 6, '","$device_type":"Mobile",',
			'"$device_manufacturer":"Apple","$device_model":"iPhone', 12 + u % 4, ',2","$network_wifi":', i % 3 > 0, ',')
		ELSE concat('"$lib":"web","$lib_version":"1.449.2","$current_url":"https://example.com', page,
			CASE WHEN source = '' THEN '' ELSE '?utm_source=' || source END, '","$host":"example.com","$pathname":"', page,
			'","$browser":"', browser, '","$browser_version":', 100 + u % 40, ',"$os":"', os,
			'","$device_type":"', CASE WHEN os IN ('iOS', 'Android') THEN 'Mobile' ELSE 'Desktop' END,
			'","$referrer":"', referrer, '","$referring_domain":"', referring_domain, '",',
			CASE WHEN source = '' THEN '' ELSE concat('"utm_source":"', source, '",') END,
			'"$raw_user_agent":"Mozilla/5.0 (', os, ') AppleWebKit/537.36 (KHTML, like Gecko) ', browser, '/', 100 + u % 40, '.0",')
		END,
		'"$screen_height":', 800 + u % 400, ',"$screen_width":', 1200 + u % 800,
		',"$viewport_height":', 700 + u % 300, ',"$viewport_width":', 1100 + u % 700,
		',"$session_id":"', session, '","$window_id":"', session, '","$device_id":"', person_id,
		'","$insert_id":"', format('{:016x}', hash(i, 'insert')), '","$time":', round(epoch(ts), 3),
		',"$process_person_profile":true,"$is_identified":true,"$session_entry_pathname":"/"',
		CASE WHEN name = '$autocapture' THEN concat(',"$event_type":"click","$el_text":"Get started","$elements_chain":"button.btn.btn-primary:attr__class=\"btn btn-primary\"nth-child=',
				1 + i % 4, 'nth-of-type=1text=\"Get started\";div.hero:nth-child=2nth-of-type=1;section:nth-child=1nth-of-type=1;body:nth-child=1nth-of-type=1"')
			WHEN r >= 850 THEN concat(',"plan":"', plan, '","seats":', 1 + u % 50)
			ELSE '' END,
		CASE WHEN hash(i, 'optional') % 3 = 0 THEN concat(',"prop_0":"value-', hash(i, 'value') % 1000, '"') ELSE '' END, '}')`
	insert := `INSERT INTO events (uuid, team_id, event, distinct_id, person_id, "timestamp", inserted_at, properties, lane)
		SELECT md5('event:' || i)::UUID, $team, name, 'user-' || u, person_id, ts, ts + INTERVAL 2 SECOND, ` + properties + `, 'realtime'
		FROM (` + rows + `)`
	return []string{persons, distinctIDs, insert}
}

// weighted is SQL that picks values[k] with probability weights[k]/sum(weights) by
// expr, a whole number from 0 to sum(weights)-1: an index into a list of the values,
// each repeated by its weight, which evaluates expr once.
func weighted(expr string, weights []int, values ...string) string {
	var list []string
	for k, v := range values {
		for range weights[k] {
			list = append(list, "'"+v+"'")
		}
	}
	return "([" + strings.Join(list, ", ") + "])[(" + expr + ")::BIGINT + 1]"
}

// writeTyped writes typedPath: the events of hedgePath with the properties the
// ceilings read in columns of their own, and the length of their properties text,
// whose mean it returns. Each person has one distinct id, so an event's person_id is
// the person the queries resolve its distinct id to. The file is in the storage format
// hedge writes its own in (DuckDB 1.5's, which compresses strings differently from the
// default's, and groups by a dictionary-compressed column several times faster), so
// that the ceilings read columns stored as hedge's are.
func writeTyped(ctx context.Context, typedPath, hedgePath string) (float64, error) {
	db, err := sql.Open("duckdb", typedPath+"?memory_limit="+generateMemory+"&storage_compatibility_version=v1.5.0")
	if err != nil {
		return 0, fmt.Errorf("cannot create the typed events: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // the attached database is the connection's
	// One json_extract_string of a list of paths parses each event's properties once.
	keys := []string{"$browser", "$os", "$pathname", "$current_url", "$screen_name", "$lib", "$referring_domain", "$session_id", "$device_type"}
	var paths, columns []string
	for i, k := range keys {
		paths = append(paths, `'$."`+k+`"'`)
		columns = append(columns, fmt.Sprintf("p[%d] AS %s", i+1, strings.TrimPrefix(k, "$")))
	}
	statements := []string{
		`ATTACH '` + strings.ReplaceAll(hedgePath, "'", "''") + `' AS hedge (READ_ONLY)`,
		`CREATE TABLE events AS SELECT uuid, event, distinct_id, person_id, "timestamp", ` + strings.Join(columns, ", ") + `,
				length(text) AS properties_length
			FROM (SELECT *, json_extract_string(text, [` + strings.Join(paths, ", ") + `]) AS p
				FROM (SELECT *, ` + warehouse.PropertiesText + ` AS text FROM hedge.events WHERE team_id = ` + strconv.Itoa(generatedTeam) + `))`,
		`DETACH hedge`,
		`CHECKPOINT`,
	}
	for _, s := range statements {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return 0, fmt.Errorf("cannot write the typed events: %w", err)
		}
	}
	var mean float64
	if err := db.QueryRowContext(ctx, `SELECT avg(properties_length) FROM events`).Scan(&mean); err != nil {
		return 0, fmt.Errorf("cannot measure the typed events: %w", err)
	}
	return mean, nil
}
