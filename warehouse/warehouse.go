// Package warehouse is hedge's storage: one DuckDB file that holds the events and the
// metadata, the migrations that shape it, and the Writer that commits ingested events
// in groups.
//
// One process owns the file (DuckDB allows one writing process). Inside it, the Writer
// owns a dedicated connection for appending events; the query API (Queries) and the
// lookups of flag evaluation (PersonProperties, GroupProperties) have small pools of
// their own; everything else (the management API, migrations) goes through the
// database/sql pool returned by DB.
package warehouse

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/hedge-analytics/hedge/schemas"
)

// Config says where the warehouse lives and how it writes. Zero values take the
// defaults noted on each field.
type Config struct {
	// Path of the DuckDB file; its directory must exist.
	Path string
	// WALAutocheckpoint is DuckDB's wal_autocheckpoint (default DefaultWALAutocheckpoint). DuckDB's own
	// default of 16MB makes the event write path 3-4x slower (measured with 10k-row
	// commits); the Writer checkpoints on its own schedule instead.
	WALAutocheckpoint string
	// MemoryLimit is DuckDB's memory_limit (default DefaultMemoryLimit). DuckDB's resident memory
	// runs about 450 MB above it under full ingest load (WAL, appender and checkpoint
	// buffers it does not count), so 256MB keeps hedge under 1 GB; queries over large
	// projects spill to disk sooner.
	MemoryLimit string
	// Threads is DuckDB's worker thread count (default: DuckDB's, the number of cores).
	Threads int

	// FlushRows ends a group commit once this many rows (events and warnings) are
	// gathered (default DefaultFlushRows, a row group); a group that is not a bulk one
	// holds fewer than a row group of events in any case (see Writer, Checkpoints).
	FlushRows int
	// FlushInterval is how long the Writer waits for more submissions after the first
	// one of a group. The default, 0, commits whatever is queued at once: under load,
	// groups form by themselves from what arrives during the previous commit, and a
	// wait only adds latency (measured: p99 27.9 ms with 2 ms, 18.7 ms without, at a
	// higher rate, for 128 concurrent /capture/ clients).
	FlushInterval time.Duration
	// MaxQueuedRows bounds the rows (events and warnings) submitted and not yet
	// committed (default DefaultMaxQueuedRows): the memory the Writer may hold on to.
	MaxQueuedRows int
	// QueueTimeout is how long Submit waits for room under MaxQueuedRows before it
	// gives up with ErrOverloaded (default DefaultQueueTimeout).
	QueueTimeout time.Duration
	// PersonCacheSize is how many persons the Writer keeps in memory (default
	// DefaultPersonCacheSize); the rest are read from the database when an event changes
	// them.
	PersonCacheSize int
	// DistinctIDCacheSize is how many distinct ids, with the person of each or its
	// absence, the Writer and the flag lookups keep in memory between them (default
	// DefaultDistinctIDCacheSize: about 60 MB, at some 230 bytes an id of 36 characters,
	// BenchmarkDistinctIDCache). The others are read from person_distinct_ids, which
	// DuckDB scans whole (it looks up no two-column key in its index): by the Writer in
	// one query per commit for all the ids it lacks, new ids included, so the size
	// matters little to it; by the flag lookups in one query for the misses that wait
	// together. Open reads none.
	DistinctIDCacheSize int
	// PropertiesCacheSize is how many persons' properties, and a tenth as many groups',
	// PersonProperties and GroupProperties keep in memory for flag evaluation (default
	// DefaultPropertiesCacheSize: some 60 MB with a kilobyte of properties per person).
	// Distinct ids take no room of it: they resolve in the distinct-id cache.
	PropertiesCacheSize int
	// CheckpointRows is how many events the Writer commits between two checkpoints
	// (default DefaultCheckpointRows: two row groups, RowGroupRows): it ends its groups so
	// that they fill exactly that many, or just short of it (a request's events are
	// split only by a bulk commit), and then checkpoints (see Writer, Checkpoints).
	CheckpointRows int
	// DedupWindow is how long after its commit an event's uuid is remembered: an event
	// with the uuid of one its project stored within the window is answered as accepted
	// and not stored again (default DefaultDedupWindow).
	DedupWindow time.Duration
	// DedupEvents bounds the uuids remembered, all projects together (default
	// DefaultDedupEvents, 23 bytes of memory each): past it the project holding the
	// most forgets its oldest first, so its window shrinks, not another's.
	DedupEvents int
	// CheckpointInterval is how long at most a partly filled row group of events stays
	// in the WAL only (default DefaultCheckpointInterval): an idle Writer checkpoints
	// it then. A restart after a crash replays the WAL.
	CheckpointInterval time.Duration
	// SquashInterval is how often at most the Writer folds the person overrides into
	// the events they are about (default DefaultSquashInterval; person_overrides.go).
	SquashInterval time.Duration
	// BackfillRows is the most rows of a chunk of a backfill (default
	// DefaultBackfillRows; backfill.go): the materialized properties' takes this many,
	// the move of the properties text at most propertiesMoveRows.
	BackfillRows int

	// Query bounds the queries users run (the query API).
	Query QueryLimits

	// LakeDir, when set, is the lake's directory: the events go there as Parquet parts
	// instead of into the events table (lake.go), which keeps the rows it held.
	LakeDir string
	// Lake tunes the lake's compaction.
	Lake LakeConfig

	// Now is the clock that stamps inserted_at (default time.Now); tests of batch
	// exports move it to place events in windows of their choosing.
	Now func() time.Time

	// Migrations replaces the embedded schemas.Migrations; tests use it to build an
	// older database.
	Migrations fs.FS
	Logger     *slog.Logger
}

// The defaults of Config, taken where a field is zero; hedge serve shows them as its
// flags' defaults.
const (
	DefaultWALAutocheckpoint = "1GB"
	DefaultMemoryLimit       = "256MB"
	DefaultFlushRows         = RowGroupRows
	// DefaultLakeFlushRows is FlushRows with the lake: each commit writes a part per
	// project and day, so the larger the groups, the fewer and larger the parts. Under
	// load, groups form from what arrives during the commit before, as with the table.
	DefaultLakeFlushRows       = 8 * RowGroupRows
	DefaultMaxQueuedRows       = 200000
	DefaultQueueTimeout        = time.Second
	DefaultPersonCacheSize     = 20000
	DefaultDistinctIDCacheSize = 250000
	DefaultPropertiesCacheSize = 50000
	DefaultCheckpointRows      = 2 * RowGroupRows
	DefaultCheckpointInterval  = 5 * time.Minute
	DefaultSquashInterval      = 10 * time.Minute
	DefaultDedupWindow         = 7 * 24 * time.Hour
	DefaultDedupEvents         = 4_000_000
)

func (c *Config) setDefaults() {
	if c.WALAutocheckpoint == "" {
		c.WALAutocheckpoint = DefaultWALAutocheckpoint
	}
	if c.MemoryLimit == "" {
		c.MemoryLimit = DefaultMemoryLimit
	}
	if c.FlushRows <= 0 {
		c.FlushRows = DefaultFlushRows
		if c.LakeDir != "" {
			c.FlushRows = DefaultLakeFlushRows
		}
	}
	if c.MaxQueuedRows <= 0 {
		c.MaxQueuedRows = DefaultMaxQueuedRows
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = DefaultQueueTimeout
	}
	if c.PersonCacheSize <= 0 {
		c.PersonCacheSize = DefaultPersonCacheSize
	}
	if c.DistinctIDCacheSize <= 0 {
		c.DistinctIDCacheSize = DefaultDistinctIDCacheSize
	}
	if c.PropertiesCacheSize <= 0 {
		c.PropertiesCacheSize = DefaultPropertiesCacheSize
	}
	if c.CheckpointRows <= 0 {
		c.CheckpointRows = DefaultCheckpointRows
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.SquashInterval <= 0 {
		c.SquashInterval = DefaultSquashInterval
	}
	if c.BackfillRows <= 0 {
		c.BackfillRows = DefaultBackfillRows
	}
	if c.DedupWindow <= 0 {
		c.DedupWindow = DefaultDedupWindow
	}
	if c.DedupEvents <= 0 {
		c.DedupEvents = DefaultDedupEvents
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Migrations == nil {
		c.Migrations = schemas.Migrations
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Warehouse is an open DuckDB file with its schema migrated and its Writer running.
type Warehouse struct {
	connector *duckdb.Connector
	db        *sql.DB
	writer    *Writer
	queries   *Queries
	lookups   *lookups
	backfill  *rowBackfill // of the materialized property columns
	move      *rowBackfill // of the properties text to its zstd column
	slots     *chosenSlots
	lake      *lake         // nil when the events go to the events table
	stored    *storedFilter // the writer's, whose fill must end before the database closes
	staging   string
	log       *slog.Logger
	// invalid is closed when DuckDB has invalidated the database (health.go); the
	// watchdog probes for it until stopWatch is closed, and closes watchStopped.
	invalid      *invalidation
	probe        probe
	stopWatch    chan struct{}
	watchStopped chan struct{}
}

// Open opens (or creates) the DuckDB file, applies pending migrations and starts the
// Writer. Close must be called to flush, checkpoint and release the file.
func Open(ctx context.Context, cfg Config) (*Warehouse, error) {
	cfg.setDefaults()
	opts := url.Values{}
	opts.Set("wal_autocheckpoint", cfg.WALAutocheckpoint)
	opts.Set("memory_limit", cfg.MemoryLimit)
	if cfg.Threads > 0 {
		opts.Set("threads", strconv.Itoa(cfg.Threads))
	}
	// No extension is installed or loaded after start-up: the ones hedge uses (json,
	// parquet, icu) are linked in and loaded already.
	opts.Set("autoinstall_known_extensions", "false")
	opts.Set("autoload_known_extensions", "false")
	staging, err := filepath.Abs(filepath.Join(filepath.Dir(cfg.Path), "staging"))
	if err != nil {
		return nil, fmt.Errorf("cannot place the staging directory beside %s: %w", cfg.Path, err)
	}
	if err := os.MkdirAll(staging, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the staging directory: %w", err)
	}
	// The database file is attached to an instance whose own database is in memory and
	// unused, because only ATTACH takes a row group size (see RowGroupRows); DuckDB's
	// spill files then go where they would for the file opened directly.
	opts.Set("temp_directory", cfg.Path+".tmp")
	// Opened from a thread of lowered priority, so that DuckDB's worker threads, which
	// it creates now, inherit that priority (see DefaultQueryNice).
	connector, err := onLoweredThread(cmp.Or(cfg.Query.Nice, DefaultQueryNice), func() (*duckdb.Connector, error) {
		return duckdb.NewConnector("?"+opts.Encode(), attacher(cfg.Path))
	})
	if err == nil {
		// The first connection attaches the file: a second hedge on it fails here.
		var conn driver.Conn
		if conn, err = connector.Connect(ctx); err == nil {
			err = conn.Close()
		} else {
			connector.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open DuckDB file %s (is another hedge using this data directory?): %w", cfg.Path, err)
	}
	db := sql.OpenDB(connector)
	w := &Warehouse{connector: connector, db: db, staging: staging, log: cfg.Logger, invalid: newInvalidation()}
	// DuckDB may touch no file but its own (the database, its WAL, its spill directory)
	// and the staging directory, and no network, whatever a query asks: a second wall
	// behind the query checker (see hogql.Check). Then the configuration is locked,
	// so that no SET can undo it. The order matters: allowed_directories cannot change
	// once external access is off, and nothing can change once locked. These are
	// global settings of the instance, so any connection sets them; allowed_directories
	// cannot be given in the DSN (DuckDB refuses it as a start-up option), and a DSN
	// applies its options in no fixed order anyway. The lake's directory is allowed
	// too (its parts are read by the events view, and written by merges); the Parquet
	// metadata of its parts is cached, as a part's file never changes once named
	// (measured on 10 million events in 60 parts: a grouped count 130 → 110 ms).
	allowed := []string{staging}
	if cfg.LakeDir != "" {
		lakeDir, err := filepath.Abs(cfg.LakeDir)
		if err != nil {
			w.closeDB()
			return nil, fmt.Errorf("cannot place the lake directory: %w", err)
		}
		cfg.LakeDir = lakeDir
		allowed = append(allowed, lakeDir)
	}
	for i, dir := range allowed {
		allowed[i] = `'` + strings.ReplaceAll(dir, "'", "''") + `'`
	}
	lockDown := `SET GLOBAL allowed_directories = [` + strings.Join(allowed, ", ") + `];
		SET GLOBAL parquet_metadata_cache = true;
		SET GLOBAL enable_external_access = false;
		SET GLOBAL lock_configuration = true`
	if _, err := db.ExecContext(ctx, lockDown); err != nil {
		w.closeDB()
		return nil, fmt.Errorf("cannot restrict DuckDB's file access to %s: %w", strings.Join(allowed, ", "), err)
	}
	if err := migrate(ctx, db, cfg.Migrations, cfg.Logger); err != nil {
		w.closeDB()
		return nil, err
	}
	if w.backfill, err = loadBackfill(ctx, db, &cfg, materializedBackfill()); err != nil {
		w.closeDB()
		return nil, err
	}
	if w.move, err = loadBackfill(ctx, db, &cfg, propertiesMove()); err != nil {
		w.closeDB()
		return nil, err
	}
	w.backfill.commits, w.move.commits = commitsTotal.Get, commitsTotal.Get
	w.move.after = w.backfill // one at a time: each takes up to half the time for writes
	if w.slots, err = loadSlots(ctx, db, &cfg, w.backfill); err != nil {
		w.closeDB()
		return nil, err
	}
	w.slots.backfill.commits = commitsTotal.Get
	if cfg.LakeDir != "" {
		if w.lake, err = openLake(ctx, db, cfg.LakeDir, cfg.Lake, cmp.Or(cfg.Query.Timeout, DefaultQueryTimeout), cfg.Logger); err != nil {
			w.closeDB()
			return nil, err
		}
	}
	versions := &dataVersions{}
	if w.queries, err = newQueries(ctx, connector, db, cfg.Query, versions, w.backfill, w.slots, w.lake); err != nil {
		w.closeDB()
		return nil, err
	}
	identity, err := loadIdentity(ctx, db, cfg.PersonCacheSize, cfg.DistinctIDCacheSize)
	if err != nil {
		w.closeDB()
		return nil, err
	}
	if w.lookups, err = newLookups(ctx, connector, identity, cfg.PropertiesCacheSize); err != nil {
		w.closeDB()
		return nil, err
	}
	identity.lookups = w.lookups
	if w.stored, err = newStoredFilter(ctx, db, cfg.Logger); err != nil {
		w.closeDB()
		return nil, err
	}
	identity.stored, w.lookups.stored = w.stored, w.stored
	start := time.Now()
	recent, err := loadRecentEvents(ctx, db, w.lake, &cfg)
	if err != nil {
		w.closeDB()
		return nil, err
	}
	cfg.Logger.Info("deduplication window loaded", "events", recent.n, "took", time.Since(start).Round(time.Millisecond))
	conn, err := connector.Connect(ctx)
	if err != nil {
		w.closeDB()
		return nil, fmt.Errorf("cannot open the writer's connection: %w", err)
	}
	writer, err := newWriter(conn, identity, recent, versions, w.slots, w.lake, w.suspect, &cfg)
	if err != nil {
		conn.Close()
		w.closeDB()
		return nil, err
	}
	w.writer = writer
	if w.lake != nil {
		w.lake.start()
	}
	w.stopWatch, w.watchStopped = make(chan struct{}), make(chan struct{})
	go w.watch(w.stopWatch, w.watchStopped)
	return w, nil
}

// DB is the pool for everything but event appends. Its connections share the one
// DuckDB instance with the Writer.
func (w *Warehouse) DB() *sql.DB { return w.db }

// StagingDir is the one directory DuckDB may write and read outside its own files:
// Parquet exports write there (COPY ... TO a directory under it) and read their files
// back, and nothing else may put files there. Any other path is refused by DuckDB
// itself, even to a query on DB.
func (w *Warehouse) StagingDir() string { return w.staging }

// Writer is the group-commit writer of events.
func (w *Warehouse) Writer() *Writer { return w.writer }

// Queries runs the queries of the query API.
func (w *Warehouse) Queries() *Queries { return w.queries }

// StartBackfill fills, in the background, the materialized property columns of the
// rows stored before they existed (backfill.go), then the slots of the properties
// projects chose of the rows stored before the choice (materialized_slots.go), and
// from then on those of each new choice, and moves the properties text of the rows
// stored before its zstd column to it (properties_text.go); Close stops it, and the
// next StartBackfill resumes it. Queries answer the same meanwhile, only slower.
func (w *Warehouse) StartBackfill() {
	w.backfill.start()
	w.slots.backfill.start()
	w.move.start()
}

// WaitBackfill waits until the backfill that StartBackfill began (or a choice of
// properties since restarted) is done, and returns its error, or ctx's.
func (w *Warehouse) WaitBackfill(ctx context.Context) error {
	if err := w.backfill.wait(ctx); err != nil {
		return err
	}
	if err := w.move.wait(ctx); err != nil {
		return err
	}
	return w.slots.backfill.wait(ctx)
}

// Close interrupts the users' queries (Queries.Stop), stops the backfill, stops the Writer after
// committing everything it accepted, checkpoints the WAL into the database file, and
// closes the file.
func (w *Warehouse) Close() error {
	start := time.Now()
	close(w.stopWatch)
	<-w.watchStopped
	w.queries.Stop()
	w.log.Info("queries stopped", "took", time.Since(start).Round(time.Millisecond))
	w.slots.backfill.stop()
	w.move.close()
	w.backfill.close()
	if w.lake != nil {
		w.lake.close()
	}
	start = time.Now()
	w.writer.Close()
	w.log.Info("writer stopped", "took", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	errCheckpoint := w.checkpoint()
	if errCheckpoint == nil {
		w.log.Info("database checkpointed", "took", time.Since(start).Round(time.Millisecond))
	}
	return errors.Join(errCheckpoint, w.closeDB())
}

func (w *Warehouse) checkpoint() error {
	if _, err := w.db.Exec("CHECKPOINT"); err != nil {
		return fmt.Errorf("cannot checkpoint: %w", err)
	}
	return nil
}

func (w *Warehouse) closeDB() error {
	if w.stored != nil {
		w.stored.close()
	}
	var errQueries, errLookups error
	if w.queries != nil {
		errQueries = w.queries.db.Close()
	}
	if w.lookups != nil {
		errLookups = w.lookups.close()
	}
	return errors.Join(errQueries, errLookups, w.db.Close(), w.connector.Close())
}

// catalog is the name the database file is attached under, every connection's default.
const catalog = "hedge"

// RowGroupRows is the row group size of the tables hedge writes: four of DuckDB's
// vectors, where DuckDB's default is sixty. It is the size of a bulk commit (see
// Writer, Bulk commits), which must fill a row group of its own, so the writer that
// falls behind catches up in commits of this many events: 8,192 at 34,000 events/s
// wait a quarter of a second to gather, against half a second for 16,384, which kept
// answers waiting over a second under sustained load. The Writer checkpoints the
// events of two row groups at a time (DefaultCheckpointRows), and a checkpoint stops
// every commit while it compresses its rows: about 0.15 s for 16,384 events (0.2 s at
// 32 million events stored), where a checkpoint of each row group of 8,192 took 0.11
// s, and 1 s for DuckDB's default row group, measured on two cores. Small row groups
// cost little more to write in all (each row is compressed once either way; DuckDB
// re-uses the metadata of the row groups that did not change), and store a little more:
// some 4% at 16,384 against the default, and 2% more at 8,192 (414 against 407 bytes
// an event, measured on 11 and 15 million bench events). A file written with other row
// groups keeps them; only new row groups take this size.
const RowGroupRows = 8192

// storageVersion is the format DuckDB writes a new database file in: its own, where it
// would write one that DuckDB 1.0 still reads. Checkpoints of the newer format take
// about a fifth less time, and one of a partly filled row group a fraction of it
// (measured: 25 against 150 ms with 8 million events stored), and it can compress
// with zstd (properties_text.go). Only DuckDB 1.5 and later read the file; a file
// written before in an older format is upgraded when attached (TestPropertiesTextMove).
const storageVersion = "v1.5.0"

// attacher is the connector's function run on each new connection: the first attaches
// the database file at path under catalog, with RowGroupRows and storageVersion
// (options of ATTACH only), and every one makes it its default database, so that
// statements name its tables without a catalog, as they would with the file opened
// directly.
func attacher(path string) func(driver.ExecerContext) error {
	var once sync.Once
	var attachErr error
	attach := fmt.Sprintf(`ATTACH '%s' AS %s (ROW_GROUP_SIZE %d, STORAGE_VERSION '%s')`,
		strings.ReplaceAll(path, "'", "''"), catalog, RowGroupRows, storageVersion)
	return func(conn driver.ExecerContext) error {
		once.Do(func() {
			if _, err := conn.ExecContext(context.Background(), attach, nil); err != nil {
				attachErr = fmt.Errorf("cannot attach %s: %w", path, err)
			}
		})
		if attachErr != nil {
			return attachErr
		}
		if _, err := conn.ExecContext(context.Background(), "USE "+catalog, nil); err != nil {
			return fmt.Errorf("cannot use the database %s: %w", catalog, err)
		}
		return nil
	}
}

// DuckDBVersion reports the version of the DuckDB library linked into hedge.
func DuckDBVersion() (string, error) {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return "", fmt.Errorf("cannot open an in-memory DuckDB: %w", err)
	}
	db := sql.OpenDB(connector)
	defer connector.Close()
	defer db.Close()
	var v string
	if err := db.QueryRow("SELECT library_version FROM pragma_version()").Scan(&v); err != nil {
		return "", fmt.Errorf("cannot read the DuckDB version: %w", err)
	}
	return v, nil
}
