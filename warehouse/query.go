package warehouse

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse/hogql"
)

// QueryError is a query a user may not run, or that failed for a reason the user can
// act on; its message is meant for them (the API answers it with 400). The refusals
// of package hogql reach callers as QueryErrors with the same message (queryError).
type QueryError struct{ Detail string }

func (e *QueryError) Error() string { return e.Detail }

func queryErrorf(format string, args ...any) error {
	return &QueryError{Detail: fmt.Sprintf(format, args...)}
}

// queryError turns a refusal of package hogql (a *hogql.Error) into the QueryError the
// API answers, with the same message; other errors pass unchanged.
func queryError(err error) error {
	var refused *hogql.Error
	if errors.As(err, &refused) {
		return &QueryError{Detail: refused.Detail}
	}
	return err
}

// Scope is the project a query runs for: it reads only that project's rows, and
// intervals fall in its time zone.
type Scope struct {
	Team     int64
	Timezone string // IANA name; "" is UTC
	// WeekStartDay is 0 for weeks starting on Sunday, 1 for Monday.
	WeekStartDay int
}

func (s Scope) timezone() string {
	if s.Timezone == "" {
		return "UTC"
	}
	return s.Timezone
}

// location is the project's time zone, loaded.
func (s Scope) location() (*time.Location, error) {
	loc, err := time.LoadLocation(s.timezone())
	if err != nil {
		return nil, queryErrorf("the project's time zone %q is unknown", s.Timezone)
	}
	return loc, nil
}

// Result is the answer of a query in PostHog's shape.
type Result struct {
	Columns []string `json:"columns"`
	Types   []string `json:"types"`
	Results [][]any  `json:"results"`
	HasMore bool     `json:"hasMore"`
	// Limit and Offset are those hedge gave a HogQL query that had no LIMIT of its own
	// (DefaultHogQLLimit), as PostHog answers them; absent otherwise.
	Limit  *int `json:"limit,omitempty"`
	Offset *int `json:"offset,omitempty"`
}

// ErrQueriesStopped is the error of a query that Queries.Stop interrupted or that came
// after it: hedge is shutting down.
var ErrQueriesStopped = errors.New("hedge is shutting down: retry the query once it is back")

// Queries runs users' queries on a pool of its own: its connections carry per-query
// views of one project's rows, which must never be seen by the rest of hedge.
type Queries struct {
	db *sql.DB
	// stopped is done once Stop is called: every request's context (begin) ends with
	// it, which interrupts the request's statement in DuckDB. mu orders Stop with
	// begin, so that no request is added to inFlight once Stop waits for it.
	stopped  context.Context
	stop     context.CancelFunc
	mu       sync.Mutex
	inFlight sync.WaitGroup // the requests begun and not done
	versions *dataVersions
	// backfill says whether the materialized property columns are whole yet.
	backfill *rowBackfill
	// slots are the properties each project chose, and where their backfill stands.
	slots *chosenSlots
	// lake holds the parts the events view reads beside the events table; nil for
	// none.
	lake     *lake
	catalog  string // the database's catalog name, which the views name explicitly
	timeout  time.Duration
	maxRows  int
	maxBytes int
	nice     int // of the threads queries run on (onLoweredThread)
	// memoryLimit is DuckDB's memory_limit, as DuckDB writes it, for the message
	// of a query that needs more.
	memoryLimit string
	// running holds each project's slots: a project runs at most ProjectQueries
	// queries at once, so that it never holds the whole pool.
	running sync.Map // int64 → chan struct{}
}

// queryConns is the size of the query pool.
const queryConns = 4

// ProjectQueries is how many of the query pool's connections one project may hold at
// once: another project's query always finds one.
const ProjectQueries = 2

// The defaults of QueryLimits.
const (
	DefaultQueryTimeout  = 30 * time.Second
	DefaultQueryMaxRows  = 100000
	DefaultQueryMaxBytes = 64 << 20
)

// QueryLimits bound every user query: it is cancelled after Timeout, and refused if
// it would return more than MaxRows rows or about MaxBytes bytes of values (a few rows
// of huge strings weigh as much as millions of small ones, and the answer is held
// whole in memory). Zero values take the defaults above.
type QueryLimits struct {
	Timeout  time.Duration
	MaxRows  int
	MaxBytes int
	// Nice is the priority users' queries and DuckDB's worker threads run at (default
	// DefaultQueryNice); a negative value keeps the process's own, for tests that time
	// queries on a machine they share with other tests.
	Nice int
}

func newQueries(ctx context.Context, connector *duckdb.Connector, db *sql.DB, limits QueryLimits, versions *dataVersions,
	backfill *rowBackfill, slots *chosenSlots, lake *lake) (*Queries, error) {
	q := &Queries{db: sql.OpenDB(macroConnector{connector}), versions: versions, backfill: backfill, slots: slots, lake: lake, timeout: limits.Timeout, maxRows: limits.MaxRows,
		maxBytes: limits.MaxBytes, nice: cmp.Or(limits.Nice, DefaultQueryNice)}
	q.stopped, q.stop = context.WithCancel(context.Background())
	if q.timeout <= 0 {
		q.timeout = DefaultQueryTimeout
	}
	if q.maxRows <= 0 {
		q.maxRows = DefaultQueryMaxRows
	}
	if q.maxBytes <= 0 {
		q.maxBytes = DefaultQueryMaxBytes
	}
	q.db.SetMaxOpenConns(queryConns) // user queries are heavy: a few at a time
	// All of them stay open: a connection opened again defines hogql.Macros again,
	// some 25 ms alone and more beside a running query (a funnel, which takes two
	// connections, ran 1.5 times as long with database/sql's two idle ones).
	q.db.SetMaxIdleConns(queryConns)
	err := db.QueryRowContext(ctx, `SELECT current_database(), current_setting('memory_limit')`).Scan(&q.catalog, &q.memoryLimit)
	if err != nil {
		return nil, fmt.Errorf("cannot read the catalog name: %w", err)
	}
	return q, nil
}

// macroConnector opens the query pool's connections with hogql.Macros defined on
// them: once per connection rather than before each query, for the guards among them
// take some 15 ms to define.
type macroConnector struct{ *duckdb.Connector }

func (c macroConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.(driver.ExecerContext).ExecContext(ctx, hogql.Macros, nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("cannot define the query macros: %w", err)
	}
	return conn, nil
}

// Stop interrupts the queries running and refuses new ones with ErrQueriesStopped,
// then waits for the requests in progress to end: promptly, for DuckDB stops a
// statement between two steps of its plan, and the Go loops over results check their
// context. A shutdown calls it before it waits for the listeners' requests.
func (q *Queries) Stop() {
	q.mu.Lock()
	q.stop()
	q.mu.Unlock()
	q.inFlight.Wait()
}

// DataVersion changes whenever rows of the project are committed: a result computed at
// one version is current while the version stays the same.
func (q *Queries) DataVersion(team int64) uint64 { return q.versions.get(team) }

// begin starts one request of the query API for scope's project: the request's
// context, which ends at its deadline (q.timeout, for all the statements it runs), with
// ctx, or at Stop; and one of the project's slots, which done gives back. A project
// whose slots stay taken until the deadline gets a QueryError.
func (q *Queries) begin(ctx context.Context, scope Scope) (_ context.Context, done func(), err error) {
	q.mu.Lock()
	if q.stopped.Err() != nil {
		q.mu.Unlock()
		return nil, nil, ErrQueriesStopped
	}
	q.inFlight.Add(1)
	q.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	stopRequest := context.AfterFunc(q.stopped, cancel)
	end := func() { stopRequest(); cancel(); q.inFlight.Done() }
	slots, _ := q.running.LoadOrStore(scope.Team, make(chan struct{}, ProjectQueries))
	select {
	case slots.(chan struct{}) <- struct{}{}:
		return ctx, func() { <-slots.(chan struct{}); end() }, nil
	case <-ctx.Done():
		end()
		if q.stopped.Err() != nil {
			return nil, nil, ErrQueriesStopped
		}
		return nil, nil, queryErrorf("the project's other %d queries ran until the time limit of %s: retry once they are done", ProjectQueries, q.timeout)
	}
}

// HogQL runs a user's read-only SQL over the project's events, persons and groups.
func (q *Queries) HogQL(ctx context.Context, scope Scope, query string) (*Result, error) {
	return q.HogQLValues(ctx, scope, query, nil)
}

// DefaultHogQLLimit is how many rows a HogQL query without a LIMIT of its own answers
// at most, PostHog's default: it runs with LIMIT DefaultHogQLLimit+1, and its Result
// says whether there were more (HasMore), with Limit and Offset. A query with a LIMIT
// keeps it, and is refused when it returns more than the query limits' MaxRows.
const DefaultHogQLLimit = 100

// HogQLValues is HogQL with PostHog's placeholders: each {name} of query is bound to
// values[name] as a parameter (hogql.Placeholders).
func (q *Queries) HogQLValues(ctx context.Context, scope Scope, query string, values map[string]any) (*Result, error) {
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	bound, args, err := hogql.Placeholders(query, values)
	if err != nil {
		return nil, queryError(err)
	}
	rewritten, usesPerson, err := hogql.Rewrite(bound)
	if err != nil {
		return nil, queryError(err)
	}
	limited, limit, serialized, err := q.defaultLimit(ctx, rewritten)
	if err != nil {
		return nil, err
	}
	maxRows := q.maxRows
	if limit > 0 {
		maxRows = limit
	}
	persons, err := hogqlPersons(serialized, usesPerson)
	if err != nil {
		return nil, err
	}
	result, err := q.run(ctx, scope, limited, persons, maxRows, args...)
	if err != nil {
		return nil, err
	}
	if limit > 0 {
		result.Limit, result.Offset = &limit, new(int)
	} else if result.HasMore {
		return nil, queryErrorf("the query returns more than %d rows: lower its LIMIT, or aggregate", q.maxRows)
	}
	for i, c := range result.Columns {
		result.Columns[i] = hogql.ColumnName(c)
	}
	return result, nil
}

// hogqlPersons is what of persons the events view of a HogQL query joins, from its
// parse (serialized) and whether its text reads person properties (hogql.Rewrite's
// usesPerson): a query that reads person_id (or a star) sees each event's person now,
// a merge counted as soon as it is committed, through the person overrides that the
// squash later folds into the events; one that reads the person's columns joins the
// person too; any other reads the events alone, as it always did.
func hogqlPersons(serialized string, usesPerson bool) (personJoin, error) {
	if !usesPerson && !strings.Contains(serialized, "STAR") && !strings.Contains(strings.ToLower(serialized), "person_") {
		// Names nothing of persons: the parse need not be read (some 0.1-0.4 ms).
		return ingestedPersons, nil
	}
	reads, err := hogql.ReadsOf(serialized)
	switch {
	case err != nil:
		return 0, err
	case usesPerson || reads.Person:
		return personProperties, nil
	case reads.PersonID:
		return currentPersons, nil
	}
	return ingestedPersons, nil
}

// defaultLimit is query with the LIMIT of DefaultHogQLLimit (at most the query limits'
// MaxRows) rows, and one more to tell whether there were more, when it has no LIMIT of
// its own (hogql.WithLimit, on DuckDB's parse of it), and that limit; else query and 0.
// serialized is DuckDB's parse of query as given. ctx is a request's, from begin.
func (q *Queries) defaultLimit(ctx context.Context, query string) (_ string, _ int, serialized string, _ error) {
	if err := checkLength(query); err != nil {
		return "", 0, "", err
	}
	parse := func(text string) (string, error) {
		var serialized string
		if err := q.db.QueryRowContext(ctx, `SELECT json_serialize_sql(?::VARCHAR)::VARCHAR`, text).Scan(&serialized); err != nil {
			return "", cmp.Or(q.interrupted(ctx), fmt.Errorf("cannot parse a query: %w", err))
		}
		return serialized, nil
	}
	serialized, err := parse(query)
	if err != nil {
		return "", 0, "", err
	}
	limit := min(DefaultHogQLLimit, q.maxRows)
	limited, added, err := hogql.WithLimit(query, serialized, limit+1, parse)
	if err != nil {
		return "", 0, "", queryError(err)
	}
	if !added {
		return query, 0, serialized, nil
	}
	return limited, limit, serialized, nil
}

// run checks query and runs it with args on a connection whose events, persons and
// groups are views of scope's project (events joining what persons says), returning
// at most maxRows rows (HasMore when there were more), on a thread of lowered priority
// (onLoweredThread). ctx is a request's, from begin.
func (q *Queries) run(ctx context.Context, scope Scope, query string, persons personJoin, maxRows int, args ...any) (*Result, error) {
	run := func() (*Result, error) { return q.execute(ctx, scope, query, persons, maxRows, args...) }
	result, err := onLoweredThread(q.nice, run)
	if errors.Is(err, errPartQuarantined) { // once more, over the parts left
		result, err = onLoweredThread(q.nice, run)
	}
	return result, err
}

// execute is run on the calling thread.
func (q *Queries) execute(ctx context.Context, scope Scope, query string, persons personJoin, maxRows int, args ...any) (*Result, error) {
	rows, closeRows, err := q.open(ctx, scope, query, persons, args...)
	if err != nil {
		return nil, err
	}
	defer closeRows()
	result, err := readResult(ctx, rows, maxRows, q.maxBytes)
	if errors.Is(err, errResultTooLarge) {
		return nil, queryErrorf("the query's answer is larger than %d MB: select fewer or smaller values, or add a LIMIT", q.maxBytes>>20)
	}
	if err != nil {
		return nil, q.failure(ctx, err)
	}
	return result, nil
}

// open checks query and starts it with args on a connection whose events, persons and
// groups are views of scope's project: the caller reads the rows (a failure of theirs
// is q.failure's to explain) and then calls closeRows, which gives the connection back.
// ctx is a request's, from begin.
func (q *Queries) open(ctx context.Context, scope Scope, query string, persons personJoin, args ...any) (_ *sql.Rows, closeRows func(), err error) {
	var rows *sql.Rows
	conn, err := q.session(ctx, scope, query, persons, len(args), func(conn *sql.Conn, text string) (func(), error) {
		r, err := conn.QueryContext(ctx, text, args...)
		if err != nil {
			return nil, q.failure(ctx, err)
		}
		rows = r
		return func() { r.Close() }, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return rows, func() { rows.Close(); conn.Close() }, nil
}

// session checks query (of params bound parameters) and has start run it on a
// connection whose events, persons and groups are views of scope's project, as text,
// query with the reads of materialized properties made reads of their columns. It
// returns the connection, which the caller closes once done with what start began.
//
// start may answer from the query's rows at once, or leave them open; discard (nil
// for nothing) drops them when the project's materialized slots changed while the
// query began, and start runs again: a change published after the query's snapshot
// began (in start) is of rows it does not see, and one published before is read
// again (chosenSlots.generation).
func (q *Queries) session(ctx context.Context, scope Scope, query string, persons personJoin, params int,
	start func(conn *sql.Conn, text string) (discard func(), err error)) (*sql.Conn, error) {
	conn, err := q.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot get a query connection: %w", err)
	}
	serialized, err := checkQuery(ctx, conn, query, params)
	if err != nil {
		conn.Close()
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	mentions := strings.ToLower(serialized)
	// With the parts in a bucket, those of the project the directory lacks are
	// downloaded first: the events view reads files. A part the catalog gains after
	// is the Writer's or a merge's, written in the directory.
	if q.lake != nil {
		if err := q.lake.ready(ctx, q.lake.parts(scope.Team)); err != nil {
			conn.Close()
			return nil, cmp.Or(q.interrupted(ctx), fmt.Errorf("cannot read the lake of project %d: %w", scope.Team, err))
		}
	}
	for {
		generation := q.slots.generation.Load()
		slots := q.slots.of(scope.Team)
		// The reads of materialized properties of events become reads of their
		// columns, which only then are in the events view (a star would show them).
		text, materialized, err := hogql.Materialize(query, serialized, slots.column)
		if err != nil {
			conn.Close()
			return nil, err
		}
		if _, err := conn.ExecContext(ctx, q.views(scope, persons, mentions, materialized, slots)); err != nil {
			conn.Close()
			// The view reads the first part's footer for its columns.
			if q.lake != nil && q.interrupted(ctx) == nil && q.lake.quarantineIfDamaged(ctx, err) {
				return nil, errPartQuarantined
			}
			return nil, cmp.Or(q.interrupted(ctx), fmt.Errorf("cannot prepare the views of project %d: %w", scope.Team, err))
		}
		discard, err := start(conn, text)
		if err != nil {
			conn.Close()
			return nil, err
		}
		if q.slots.generation.Load() == generation {
			return conn, nil
		}
		if discard != nil {
			discard()
		}
	}
}

// checkQuery refuses a query that a user may not run with params bound parameters:
// hogql.Check on DuckDB's parse of it, then what Check leaves to its caller, the names
// of the query's WITH queries against the catalog (checkCTENames). It returns the
// parse (json_serialize_sql's) of a query it accepts.
func checkQuery(ctx context.Context, conn *sql.Conn, query string, params int) (serialized string, err error) {
	if err := checkLength(query); err != nil {
		return "", err
	}
	if err := conn.QueryRowContext(ctx, `SELECT json_serialize_sql(?::VARCHAR)::VARCHAR`, query).Scan(&serialized); err != nil {
		return "", fmt.Errorf("cannot parse a query: %w", err)
	}
	ctes, err := hogql.Check(serialized, params)
	if err != nil {
		return "", queryError(err)
	}
	return serialized, checkCTENames(ctx, conn, ctes)
}

// maxQueryBytes bounds the text of a query, as it runs (HogQL rewritten; an
// EventsQuery's items in hedge's query): DuckDB's parse of a query, which the checker
// reads, weighs some 80 times its text as JSON and some 900 times once decoded
// (measured: 64 KB of list literal, 5 MB of JSON, 58 MB decoded), and neither counts
// against DuckDB's memory_limit.
const maxQueryBytes = 64 << 10

// checkLength refuses a query longer than maxQueryBytes.
func checkLength(query string) error {
	if len(query) > maxQueryBytes {
		return queryErrorf("the query is longer than %d KB: shorten it", maxQueryBytes>>10)
	}
	return nil
}

// checkCTENames refuses CTE names that name a table or view of any schema of the
// database, DuckDB's own (pg_settings, duckdb_databases...) included: where DuckDB
// does not see the CTE, such a name would read the table. The catalog is read at each
// query, for tables made after start-up count too.
func checkCTENames(ctx context.Context, conn *sql.Conn, names []string) error {
	if len(names) == 0 {
		return nil
	}
	var taken string
	// The names are plain identifiers (hogql.Check allows no other), so a comma
	// separates them.
	err := conn.QueryRowContext(ctx, `SELECT lower(name) FROM (
			SELECT table_name AS name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views()
		) WHERE lower(name) IN (SELECT unnest(string_split(?, ','))) LIMIT 1`, strings.Join(names, ",")).Scan(&taken)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read the catalog: %w", err)
	}
	return queryErrorf("a WITH query may not be named %q, the name of a table", taken)
}

// failure is the error to answer for a query that failed: the time limit, Stop,
// DuckDB's own message for a query that is wrong (a user's to fix), or an internal
// error. ctx is the request's, from begin.
func (q *Queries) failure(ctx context.Context, err error) error {
	var refused *QueryError
	if errors.As(err, &refused) {
		return err
	}
	if err := q.interrupted(ctx); err != nil {
		return err
	}
	if q.lake != nil && q.lake.quarantineIfDamaged(ctx, err) {
		return errPartQuarantined
	}
	if m := unreadableColumn.FindStringSubmatch(err.Error()); m != nil {
		of := ""
		switch {
		case m[2] != "":
			of = " (a MAP whose keys are lists or structs)"
		case strings.ContainsFunc(m[1], unicode.IsUpper): // not "unknown type", which names none
			of = " (" + m[1] + ")"
		}
		return queryErrorf("the query answers a column of a type hedge cannot return%s: cast it to VARCHAR or JSON (x::JSON)", of)
	}
	var duck *duckdb.Error
	if errors.As(err, &duck) {
		if duck.Type == duckdb.ErrorTypeBinder {
			if refused := unknownName(duck.Msg); refused != nil {
				return refused
			}
		}
		switch duck.Type {
		case duckdb.ErrorTypeBinder, duckdb.ErrorTypeParser, duckdb.ErrorTypeConversion, duckdb.ErrorTypeInvalidInput,
			duckdb.ErrorTypeOutOfRange, duckdb.ErrorTypeDivideByZero, duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeCatalog:
			return &QueryError{Detail: "the query failed: " + duck.Msg}
		case duckdb.ErrorTypeOutOfMemory:
			// The query's own size, not hedge's health: DuckDB stops the query at
			// memory_limit and carries on.
			return queryErrorf("the query needs more memory than the limit of %s: aggregate more, select fewer columns, or add a LIMIT", q.memoryLimit)
		case duckdb.ErrorTypePermission:
			// DuckDB refused a file or the network (Open turns external access off):
			// the checker should have refused the query first.
			return queryErrorf("the query may not read files or settings")
		}
	}
	return fmt.Errorf("cannot run a query: %w", err)
}

// DuckDB's binder's words for a name the query's tables do not have, which the query API
// answers as PostHog does, naming the field or table (unknownName).
var (
	unknownColumn     = regexp.MustCompile(`^(?:Binder Error: )?Referenced column "((?:[^"]|"")*)" not found`)
	unknownQualified  = regexp.MustCompile(`^(?:Binder Error: )?Values list "((?:[^"]|"")*)" does not have a column named "((?:[^"]|"")*)"`)
	unknownTable      = regexp.MustCompile(`^(?:Binder Error: )?Referenced table "((?:[^"]|"")*)" not found`)
	candidateBindings = regexp.MustCompile(`\nCandidate (?:bindings|tables): (.*)`)
	candidateName     = regexp.MustCompile(`"((?:[^"]|"")*)"`)
)

// unknownName is the QueryError of DuckDB's binder message msg (which duckdb-go gives
// with or without its type's name first) when it says that a
// field or table the query names does not exist, with the names DuckDB offers instead
// (hedge's own columns, the materialized ones, left out); nil for another message.
func unknownName(msg string) error {
	var refused string
	if m := unknownColumn.FindStringSubmatch(msg); m != nil {
		refused = "the field " + m[1] + " does not exist here"
	} else if m := unknownQualified.FindStringSubmatch(msg); m != nil {
		refused = "the field " + m[1] + "." + m[2] + " does not exist here"
	} else if m := unknownTable.FindStringSubmatch(msg); m != nil {
		refused = "the table " + m[1] + " does not exist here"
	} else {
		return nil
	}
	if m := candidateBindings.FindStringSubmatch(msg); m != nil {
		var names []string
		for _, c := range candidateName.FindAllStringSubmatch(m[1], -1) {
			if !strings.HasPrefix(c[1], "mat_") {
				names = append(names, c[1])
			}
		}
		if len(names) > 0 {
			refused += ": did you mean " + strings.Join(names, ", ") + "?"
		}
	}
	return &QueryError{Detail: refused}
}

// unreadableColumn finds duckdb-go's refusal to read a column of the answer: of a type
// it does not read (VARIANT, alone or in a list, struct or map; TIME_NS, which it calls
// an unknown type), named in group 1, or a MAP keyed by lists or structs (group 2).
// duckdb-go refuses before the first row, in a plain error whose text is all there is
// to tell it by; the query then answers 400 saying to cast the column, never 500. The
// query API's tests of these types fail if duckdb-go words it otherwise.
var unreadableColumn = regexp.MustCompile(`unsupported data type: ([A-Za-z_0-9 ]+?)(?::|$)|(MAP key type not supported)`)

// interrupted is the error of a request whose context (from begin) ended: by Stop, or
// at the time limit; nil while it runs.
func (q *Queries) interrupted(ctx context.Context) error {
	switch {
	case ctx.Err() == nil:
		return nil
	case q.stopped.Err() != nil:
		return ErrQueriesStopped
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return queryErrorf("the query ran past the time limit of %s", q.timeout)
	}
	return nil
}

// personJoin is what of persons a query's events view joins. Each joins what the ones
// before it do, and more: a query that needs two of them takes the larger.
type personJoin uint8

const (
	// ingestedPersons: person_id is the event's own: the person it was ingested for, or
	// the one it counted for when the Writer last squashed the overrides into the events
	// (person_overrides.go).
	ingestedPersons personJoin = iota
	// currentPersons: person_id is the person its distinct id belongs to now (a merge
	// moves the distinct ids of one person to another), read through person_overrides
	// (person_overrides.go).
	currentPersons
	// personProperties: person_id as currentPersons, and person_properties, that
	// person's properties (HogQL's person.properties).
	personProperties
)

// personJoinOf is the join of a query that reads person properties or not (withPersons).
func personJoinOf(withPersons bool) personJoin {
	if withPersons {
		return personProperties
	}
	return ingestedPersons
}

// views defines, on one connection, the tables a user query reads: events, persons and
// groups filtered to the project. They name the database catalog explicitly, for the
// temp catalog's own "main" schema would otherwise make them refer to themselves.
// persons is what of persons events joins; materialized adds the materialized property
// columns: while their backfill is not done, each as coalesce(column, JSON), which is
// right for every row; and the slots of the properties the project chose (slots; nil:
// none), each read from the JSON for the project's rows its backfill has still to
// fill, which may hold another key's value.
//
// mentions is the query's parse in lower case: the tables and joined columns a query
// may name are defined or joined when it holds their names (a name in a string makes
// a view no query reads, never a view missing).
func (q *Queries) views(scope Scope, persons personJoin, mentions string, materialized bool, slots *teamSlots) string {
	db := `"` + strings.ReplaceAll(q.catalog, `"`, `""`) + `".main.`
	team := strconv.FormatInt(scope.Team, 10)
	var columns strings.Builder
	if materialized {
		whole := q.backfill.done.Load()
		for _, k := range materializedKeys {
			column := `"` + materializedColumn(k) + `"`
			if whole {
				columns.WriteString(", e." + column)
			} else {
				columns.WriteString(`, coalesce(e.` + column + `, json_extract_string(` + propertiesText("e") + `, '$."` + k + `"')) AS ` + column)
			}
		}
		for s := range slotCount {
			st := (*slotState)(nil)
			if slots != nil {
				st = slots.slots[s]
			}
			if st == nil {
				continue
			}
			column := `"` + slotColumn(s) + `"`
			if next := st.next.Load(); next < st.end {
				fmt.Fprintf(&columns, `, CASE WHEN e.rowid >= %d AND e.rowid < %d THEN json_extract_string(%s, '$."%s"') ELSE e.%s END AS %s`,
					next, st.end, propertiesText("e"), st.key, column, column)
			} else {
				columns.WriteString(", e." + column)
			}
		}
	}
	// Each join adds to the one before it (personJoin's order).
	person, personColumns, joins := "e.person_id", "", ""
	if persons >= currentPersons {
		person = "coalesce(o.person_id, e.person_id)"
		joins = ` LEFT JOIN (SELECT old_person_id, person_id FROM ` + db + `person_overrides WHERE team_id = ` + team + `) o
			ON o.old_person_id = e.person_id`
	}
	if persons >= personProperties {
		personColumns = personJoinColumns("p")
		joins += ` LEFT JOIN ` + db + `persons p ON p.id = ` + person
	}
	// The groups of events that the query reads (HogQL's group_0.properties.x, which
	// hogql.Rewrite writes group_0_properties), each joined by its key: named in the
	// query's parse, so a query that names none joins none.
	for n := range 5 {
		i := strconv.Itoa(n)
		if !strings.Contains(mentions, "group_"+i+"_properties") && !strings.Contains(mentions, "group_"+i+"_created_at") {
			continue
		}
		fmt.Fprintf(&columns, `, g%[1]s.group_properties AS group_%[1]s_properties, g%[1]s.created_at AS group_%[1]s_created_at`, i)
		joins += ` LEFT JOIN (SELECT group_key, group_properties, created_at FROM ` + db + `groups WHERE team_id = ` + team +
			` AND group_type_index = ` + i + `) g` + i + ` ON g` + i + `.group_key = e."$group_` + i + `"`
	}
	// The session of events that the query reads (session.$session_duration, which
	// hogql.Rewrite writes "session_$session_duration"), joined by its $session_id:
	// the sessions are computed from the project's events for the query.
	if strings.Contains(mentions, "session_$") || strings.Contains(mentions, "session_session_id") ||
		strings.Contains(mentions, "session_distinct_id") {
		for _, c := range sessionColumns {
			if c == "id" {
				continue // session.id is session.session_id
			}
			columns.WriteString(`, s."` + c + `" AS "session_` + c + `"`)
		}
		joins += ` LEFT JOIN (` + q.sessionsSQL(db, scope.Team, slots) + `) s ON s.session_id = ` + q.propertyRead("$session_id")
	}
	events := `SELECT e.uuid, e.event, e.distinct_id, ` + person + ` AS person_id, e."timestamp", ` + propertiesText("e") + ` AS properties,
		e."$group_0", e."$group_1", e."$group_2", e."$group_3", e."$group_4", e.inserted_at AS created_at` +
		personColumns + columns.String() + ` FROM ` + q.eventRows(db, scope.Team, slots) + ` e` + joins
	views := `CREATE OR REPLACE TEMP VIEW events AS ` + events + ` WHERE e.team_id = ` + team + `;
		CREATE OR REPLACE TEMP VIEW persons AS SELECT id, properties, created_at, is_identified FROM ` + db + `persons WHERE team_id = ` + team + `;
		CREATE OR REPLACE TEMP VIEW groups AS SELECT group_type_index AS "index", group_key AS "key", group_properties AS properties, created_at FROM ` + db + `groups WHERE team_id = ` + team
	// The tables of PostHog's that only some queries read, defined for those that name
	// them: a query that names none runs with the views above alone. Each must be
	// defined whenever a query names it, for person_distinct_ids is a table of the
	// database too, of every project.
	if strings.Contains(mentions, "person_distinct_ids") {
		views += ";\n" + personDistinctIDsView(db, team, persons >= personProperties)
	}
	if strings.Contains(mentions, "sessions") {
		views += ";\n" + q.sessionsView(db, scope.Team, slots)
	}
	return views
}

// personJoinColumns are the columns of the person (of alias) joined to events or to
// person_distinct_ids: hogql.PersonColumns, which hogql.Rewrite writes for
// person.properties, person.created_at and person.is_identified.
func personJoinColumns(alias string) string {
	return ", " + alias + ".properties AS person_properties, " + alias + ".created_at AS person_created_at, " +
		alias + ".is_identified AS person_is_identified"
}

// personDistinctIDsView is PostHog's person_distinct_ids of project team (in SQL): each
// distinct id and the person it belongs to now (a merge moves the ids of one person to
// the other), and with person that person's columns (pdi.person.properties.x).
func personDistinctIDsView(db, team string, person bool) string {
	columns, join := "", ""
	if person {
		columns = personJoinColumns("p")
		join = ` LEFT JOIN ` + db + `persons p ON p.id = d.person_id`
	}
	return `CREATE OR REPLACE TEMP VIEW person_distinct_ids AS SELECT d.distinct_id, d.person_id` + columns + ` FROM ` + db +
		`person_distinct_ids d` + join + ` WHERE d.team_id = ` + team
}

// sessionsView is PostHog's sessions table of project team, computed from its events
// at each query: a row per $session_id, with the session's first and last times, its
// duration in whole seconds, the first and last $current_url (and $pathname) of its
// events that have one, its URLs, and its counts of pageviews, autocaptures and
// screens. distinct_id is that of its first event. The materialized properties are
// read from their columns.
func (q *Queries) sessionsView(db string, team int64, slots *teamSlots) string {
	return `CREATE OR REPLACE TEMP VIEW sessions AS ` + q.sessionsSQL(db, team, slots)
}

// sessionColumns are the columns of sessionsSQL, which events' lazy join to its
// session (session.$session_duration) names session_<column> (hogql.Rewrite).
var sessionColumns = []string{"session_id", "id", "distinct_id", "$start_timestamp", "$end_timestamp", "$session_duration",
	"$entry_current_url", "$entry_pathname", "$exit_current_url", "$exit_pathname", "$urls", "$num_uniq_urls",
	"$pageview_count", "$autocapture_count", "$screen_count"}

// sessionsSQL is the query of sessionsView.
func (q *Queries) sessionsSQL(db string, team int64, slots *teamSlots) string {
	session, url, path := q.propertyRead("$session_id"), q.propertyRead("$current_url"), q.propertyRead("$pathname")
	return `SELECT session_id, session_id AS id, distinct_id,
			"$start_timestamp", "$end_timestamp",
			CAST(date_diff('second', "$start_timestamp", "$end_timestamp") AS BIGINT) AS "$session_duration",
			"$entry_current_url", "$entry_pathname", "$exit_current_url", "$exit_pathname",
			"$urls", CAST(len("$urls") AS BIGINT) AS "$num_uniq_urls",
			"$pageview_count", "$autocapture_count", "$screen_count"
		FROM (SELECT ` + session + ` AS session_id,
			arg_min(e.distinct_id, e."timestamp") AS distinct_id,
			min(e."timestamp") AS "$start_timestamp", max(e."timestamp") AS "$end_timestamp",
			arg_min(` + url + `, e."timestamp") FILTER (WHERE ` + url + ` IS NOT NULL) AS "$entry_current_url",
			arg_min(` + path + `, e."timestamp") FILTER (WHERE ` + path + ` IS NOT NULL) AS "$entry_pathname",
			arg_max(` + url + `, e."timestamp") FILTER (WHERE ` + url + ` IS NOT NULL) AS "$exit_current_url",
			arg_max(` + path + `, e."timestamp") FILTER (WHERE ` + path + ` IS NOT NULL) AS "$exit_pathname",
			coalesce(list(DISTINCT ` + url + `) FILTER (WHERE ` + url + ` IS NOT NULL), []) AS "$urls",
			count(*) FILTER (WHERE e.event = '$pageview') AS "$pageview_count",
			count(*) FILTER (WHERE e.event = '$autocapture') AS "$autocapture_count",
			count(*) FILTER (WHERE e.event = '$screen') AS "$screen_count"
		FROM ` + q.eventRows(db, team, slots) + ` e
		WHERE e.team_id = ` + strconv.FormatInt(team, 10) + ` AND ` + session + ` <> ''
		GROUP BY ` + session + `)`
}

// propertyRead is the SQL of events' property key (of the events table, alias e) as
// text: its materialized column where it has one (with its JSON while the backfill
// is not done), else its JSON.
func (q *Queries) propertyRead(key string) string {
	json := `json_extract_string(` + propertiesText("e") + `, '$."` + key + `"')`
	if !isMaterialized(key) {
		return json
	}
	column := `e."` + materializedColumn(key) + `"`
	if q.backfill.done.Load() {
		return column
	}
	return `coalesce(` + column + `, ` + json + `)`
}

// eventRowColumns are the columns of the events table that the events view reads,
// and rowid.
var eventRowColumns = func() []string {
	columns := []string{"uuid", "team_id", "event", "distinct_id", "person_id", `"timestamp"`, "inserted_at", "properties_zstd", "properties",
		`"$group_0"`, `"$group_1"`, `"$group_2"`, `"$group_3"`, `"$group_4"`}
	for _, k := range materializedKeys {
		columns = append(columns, `"`+materializedColumn(k)+`"`)
	}
	for s := range slotCount {
		columns = append(columns, slotColumn(s))
	}
	return append(columns, "rowid")
}()

// eventRows is what the events view reads for a project (team, in SQL) whose slots
// are slots (nil: none): the events table; with the lake, its rows of the project
// and the project's parts, each of which gives the columns of the table. A part's
// properties text is properties_zstd; its rowid is NULL, which no backfill's range
// holds; a slot column of a part written while the project gave the slot another
// key than now is read from the properties (the view reads only the slots in use).
func (q *Queries) eventRows(db string, team int64, slots *teamSlots) string {
	table := db + "events"
	if q.lake == nil {
		return table
	}
	parts := q.lake.parts(team)
	if len(parts) == 0 {
		return table
	}
	var b strings.Builder
	b.WriteString("(SELECT " + strings.Join(eventRowColumns, ", ") + " FROM " + table + " WHERE team_id = " + strconv.FormatInt(team, 10))
	// The parts in groups of one set of slot keys, in the order of their first part.
	var keys [][slotCount]string
	groups := map[[slotCount]string][]lakePart{}
	for _, p := range parts {
		if groups[p.SlotKeys] == nil {
			keys = append(keys, p.SlotKeys)
		}
		groups[p.SlotKeys] = append(groups[p.SlotKeys], p)
	}
	for _, k := range keys {
		columns := slices.Clone(eventRowColumns)
		for i, c := range columns {
			switch {
			case c == "properties_zstd":
				columns[i] = "properties AS properties_zstd"
			case c == "properties":
				columns[i] = "NULL::VARCHAR AS properties"
			case c == "rowid":
				columns[i] = "NULL::BIGINT AS rowid"
			case strings.HasPrefix(c, "mat_slot_"):
				s, _ := strconv.Atoi(strings.TrimPrefix(c, "mat_slot_"))
				var st *slotState
				if slots != nil {
					st = slots.slots[s]
				}
				switch {
				case st == nil:
					columns[i] = "NULL::VARCHAR AS " + c
				case st.key != k[s]:
					columns[i] = `json_extract_string(properties, '$."` + st.key + `"') AS ` + c
				}
			}
		}
		b.WriteString("\n\t\tUNION ALL SELECT " + strings.Join(columns, ", ") + " FROM " + q.lake.readParts(groups[k]))
	}
	b.WriteString(")")
	return b.String()
}

// errResultTooLarge is readResult's refusal of an answer past its byte bound.
var errResultTooLarge = errors.New("result too large")

// readResult reads at most maxRows rows (HasMore when there were more), in JSON-ready
// values, and refuses with errResultTooLarge once their values weigh more than
// maxBytes. It stops with ctx's error once ctx is done.
func readResult(ctx context.Context, rows *sql.Rows, maxRows, maxBytes int) (*Result, error) {
	columns, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	r := &Result{Columns: columns, Types: make([]string, len(types)), Results: [][]any{}}
	for i, t := range types {
		r.Types[i] = t.DatabaseTypeName()
	}
	for rows.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(r.Results) == maxRows {
			r.HasMore = true
			break
		}
		values := make([]any, len(columns))
		pointers := make([]any, len(columns))
		for i := range values {
			pointers[i] = &values[i]
		}
		if err := rows.Scan(pointers...); err != nil {
			return nil, err
		}
		for i, v := range values {
			values[i] = jsonValue(v, r.Types[i])
			if maxBytes -= valueSize(values[i]); maxBytes < 0 {
				return nil, errResultTooLarge
			}
		}
		r.Results = append(r.Results, values)
	}
	return r, rows.Err()
}

// jsonValue turns what duckdb-go scans into a value JSON can carry as PostHog would:
// UUIDs and big numbers as text, times in UTC, NaN and infinities as null (JSON has
// no such numbers; PostHog's answers carry null), maps as objects keyed by their keys'
// text. No value makes an answer fail.
func jsonValue(v any, dbType string) any {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return v
	case float32:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil
		}
		return v
	case duckdb.OrderedMap:
		keys, values := v.Keys(), v.Values()
		object := make(map[string]any, len(keys))
		for i, k := range keys {
			key, ok := jsonValue(k, "").(string)
			if !ok {
				key = fmt.Sprint(jsonValue(k, ""))
			}
			object[key] = jsonValue(values[i], "")
		}
		return object
	case []byte:
		if dbType == "UUID" && len(v) == 16 {
			id, _ := uuid.FromBytes(v)
			return id.String()
		}
		return string(v)
	case time.Time:
		if dbType == "DATE" {
			return v.Format(time.DateOnly)
		}
		return v.UTC().Format("2006-01-02T15:04:05.999999Z07:00")
	case *big.Int:
		// DuckDB sums integers into HUGEINT: a number, as ClickHouse's sum answers
		// one, while it fits 64 bits; past them its digits, which JSON numbers would
		// round.
		if v.IsInt64() {
			return v.Int64()
		}
		return v.String()
	case duckdb.Decimal:
		f, _ := v.Value.Float64()
		return jsonValue(f/float64Pow10(v.Scale), "")
	case duckdb.Interval:
		return fmt.Sprintf("%d months %d days %d us", v.Months, v.Days, v.Micros)
	case []any:
		for i := range v {
			v[i] = jsonValue(v[i], "")
		}
		return v
	case map[string]any:
		for k := range v {
			v[k] = jsonValue(v[k], "")
		}
		return v
	}
	return v
}

// valueSize is about how many bytes v takes in memory and in the answer.
func valueSize(v any) int {
	switch v := v.(type) {
	case string:
		return 16 + len(v)
	case []any:
		n := 24
		for _, e := range v {
			n += valueSize(e)
		}
		return n
	case map[string]any:
		n := 48
		for k, e := range v {
			n += 16 + len(k) + valueSize(e)
		}
		return n
	}
	return 16
}

func float64Pow10(n uint8) float64 {
	f := 1.0
	for range n {
		f *= 10
	}
	return f
}
