package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// The lake (Config.LakeDir, hedge serve --storage lake) stores events as Parquet
// parts (lake_part.go) instead of rows of the events table:
//
//   - the Writer writes each commit's events as one part per project and day, and
//     registers the parts in meta.lake_parts (migration 19) in the commit's
//     transaction, with the persons, groups and event log positions of the same
//     events: a crash before the COMMIT leaves files that no row names, which Open
//     removes, and a crash after it leaves the parts and the positions both, so the log
//     is applied once;
//   - queries read the events view over the project's current parts, and the rows of
//     the events table a file stored before it used the lake (Queries.views);
//   - the compaction merges a project's small parts of one day into one, in the
//     background, dropping a uuid stored twice, and swaps them in one transaction; the
//     files it replaced are removed once no query that may read them runs
//     (lake_garbage, removeGarbage).
//
// The files live under the lake directory as team_id=<project>/date=<day>/<name>.parquet,
// and each project's directory holds _current: the absolute paths of its current
// parts, one a line, rewritten within listingInterval of each change (hedge lake files
// prints it), for
// scripts and other engines (a name beginning with _ is skipped by Spark's, Trino's and
// DuckDB's readers of the directory's Parquet files).

var (
	lakePartsWritten   = metrics.NewCounter(`hedge_lake_parts_written_total`)
	lakeCompactions    = metrics.NewCounter(`hedge_lake_compactions_total`)
	lakeCompactionTime = metrics.NewHistogram(`hedge_lake_compaction_duration_seconds`)
	lakeGarbageRemoved = metrics.NewCounter(`hedge_lake_files_removed_total`)
)

// lakePart is one row of meta.lake_parts.
type lakePart struct {
	Team int64
	Day  time.Time
	// Path is relative to the lake directory.
	Path                       string
	Rows, Bytes                int64
	MinTimestamp, MaxTimestamp time.Time
	SlotKeys                   [slotCount]string
	Level                      int
	// CreatedAt is when the part was registered: its events were all inserted by then.
	CreatedAt time.Time
}

// lakeCatalog is the lake's current parts, by project, each project's in the order
// they were registered. It is never changed: a change makes a new one.
type lakeCatalog map[int64][]lakePart

// LakeConfig tunes the lake; zero values take the defaults noted.
type LakeConfig struct {
	// CompactParts is how many parts of one project and day, each smaller than
	// CompactBytes, the compaction waits for before it merges them (default
	// DefaultCompactParts); a day before yesterday's has its small parts merged as
	// soon as it has two.
	CompactParts int
	// CompactBytes is the size from which a part is merged no more (default
	// DefaultCompactBytes).
	CompactBytes int64
	// CompactInterval is how often the compaction looks for parts to merge (default
	// DefaultCompactInterval).
	CompactInterval time.Duration
	// Grace is how long a replaced part's file stays after its replacement
	// (default: the query time limit and a minute): a query that read the catalog
	// before the swap may still read it.
	Grace time.Duration
	// S3, when set, is the bucket that keeps the parts, the lake directory a cache of
	// it holding about CacheBytes (default DefaultLakeCacheBytes; lake_store.go).
	S3         *LakeS3
	CacheBytes int64
}

// The defaults of LakeConfig.
const (
	DefaultCompactParts    = 8
	DefaultCompactBytes    = 256 << 20
	DefaultCompactInterval = 10 * time.Second
)

// lake is the lake's directory and catalog, for the Writer (which adds parts), the
// queries (which read them) and the compaction (which replaces them).
type lake struct {
	root string
	db   *sql.DB
	cfg  LakeConfig
	log  *slog.Logger
	// remote is the bucket the parts are kept in, nil when the directory keeps them.
	remote *lakeRemote
	// mu orders the changes of current (the Writer's additions, the compaction's
	// swaps) and guards unlisted.
	mu      sync.Mutex
	current atomic.Pointer[lakeCatalog]
	// unlisted are the projects whose listing is older than current: a change marks
	// them, and the lake's goroutine writes their listings (writeListings).
	unlisted map[int64]bool
	// seq names the parts of one commit apart from a retried commit's (writeParts).
	seq atomic.Uint64
	// partPattern finds a part's path in an error (lake_quarantine.go).
	partPattern *regexp.Regexp
	// stop ends the goroutines of start, which running waits for.
	stop    chan struct{}
	running sync.WaitGroup
}

// openLake opens the lake at root, creating it: it reads the catalog, removes the
// files no part names (a commit or a compaction that wrote them and failed, or
// crashed, before registering them) and those replaced before the last stop, and
// writes each project's listing.
func openLake(ctx context.Context, db *sql.DB, root string, cfg LakeConfig, queryTimeout time.Duration, log *slog.Logger) (*lake, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("cannot place the lake directory: %w", err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the lake directory: %w", err)
	}
	if cfg.CompactParts <= 1 {
		cfg.CompactParts = DefaultCompactParts
	}
	if cfg.CompactBytes <= 0 {
		cfg.CompactBytes = DefaultCompactBytes
	}
	if cfg.CompactInterval <= 0 {
		cfg.CompactInterval = DefaultCompactInterval
	}
	if cfg.Grace <= 0 {
		cfg.Grace = queryTimeout + time.Minute
	}
	l := &lake{root: root, db: db, cfg: cfg, log: log, partPattern: partPattern(root), unlisted: map[int64]bool{}}
	if cfg.S3 != nil {
		if l.remote, err = openRemote(ctx, cfg.S3, cfg.CacheBytes); err != nil {
			return nil, err
		}
	}
	catalog, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	l.current.Store(&catalog)
	// No query runs yet: every replaced file may go.
	if _, err := db.ExecContext(ctx, `DELETE FROM meta.lake_garbage`); err != nil {
		return nil, fmt.Errorf("cannot empty the lake's garbage: %w", err)
	}
	known, err := l.known(ctx, catalog)
	if err != nil {
		return nil, err
	}
	if err := l.removeStrays(known); err != nil {
		return nil, err
	}
	if l.remote != nil {
		if err := l.sweepRemote(ctx, catalog, known); err != nil {
			return nil, err
		}
	}
	for team := range catalog {
		l.publish(team, catalog[team])
	}
	return l, nil
}

// read reads the catalog.
func (l *lake) read(ctx context.Context) (lakeCatalog, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT team_id, day, path, rows, bytes, min_timestamp, max_timestamp, slot_keys, level, created_at
		FROM meta.lake_parts ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("cannot read the lake's parts: %w", err)
	}
	defer rows.Close()
	catalog := lakeCatalog{}
	for rows.Next() {
		var p lakePart
		var keys []any
		if err := rows.Scan(&p.Team, &p.Day, &p.Path, &p.Rows, &p.Bytes, &p.MinTimestamp, &p.MaxTimestamp, &keys, &p.Level, &p.CreatedAt); err != nil {
			return nil, fmt.Errorf("cannot read the lake's parts: %w", err)
		}
		for i, k := range keys {
			if s, ok := k.(string); ok && i < slotCount {
				p.SlotKeys[i] = s
			}
		}
		catalog[p.Team] = append(catalog[p.Team], p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the lake's parts: %w", err)
	}
	return catalog, nil
}

// known are the paths of catalog's parts and of the quarantined ones.
func (l *lake) known(ctx context.Context, catalog lakeCatalog) (map[string]bool, error) {
	known := map[string]bool{}
	for _, parts := range catalog {
		for _, p := range parts {
			known[p.Path] = true
		}
	}
	rows, err := l.db.QueryContext(ctx, `SELECT path FROM meta.lake_quarantine`)
	if err != nil {
		return nil, fmt.Errorf("cannot read the lake's quarantine: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("cannot read the lake's quarantine: %w", err)
		}
		known[p] = true
	}
	return known, rows.Err()
}

// removeStrays removes the files of the lake directory that are neither a part (of
// known, by path) nor a listing.
func (l *lake) removeStrays(known map[string]bool) error {
	return filepath.WalkDir(l.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("cannot read the lake directory: %w", err)
		}
		if d.IsDir() && d.Name() == quarantineDir {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() == listingName {
			return nil
		}
		rel, err := filepath.Rel(l.root, path)
		if err != nil || known[filepath.ToSlash(rel)] {
			return err
		}
		l.log.Info("removing a lake file that no part names", "path", path)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("cannot remove a stray lake file: %w", err)
		}
		return nil
	})
}

// parts are the current parts of team, oldest first; the caller must not change them.
func (l *lake) parts(team int64) []lakePart {
	return (*l.current.Load())[team]
}

// partPath is the path, relative to the lake directory, of a part of team and day
// named name.
func (l *lake) partPath(team int64, day time.Time, name string) string {
	return "team_id=" + strconv.FormatInt(team, 10) + "/date=" + day.Format(time.DateOnly) + "/" + name
}

// abs is the absolute path of a part's relative one.
func (l *lake) abs(rel string) string { return filepath.Join(l.root, filepath.FromSlash(rel)) }

// remove removes the files (and objects) of parts that were written and not
// registered.
func (l *lake) remove(parts []lakePart) {
	paths := make([]string, len(parts))
	for i, p := range parts {
		paths[i] = p.Path
		if err := os.Remove(l.abs(p.Path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn("cannot remove an unregistered part; it goes at the next start", "path", p.Path, "err", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), transferTimeout)
	defer cancel()
	if err := l.forget(ctx, paths); err != nil {
		l.log.Warn("cannot remove an unregistered part from the bucket; it goes at the next start", "err", err)
	}
}

// registerPartSQL registers one part in the transaction that commits its events.
const registerPartSQL = `INSERT INTO meta.lake_parts VALUES (nextval('meta.lake_part_id_seq'), ?, ?::DATE, ?, ?, ?, ?, ?, ?::VARCHAR[], ?, ?)`

// registerArgs are registerPartSQL's arguments for p, registered at createdAt, which
// it records as p's.
func (p *lakePart) registerArgs(createdAt time.Time) []any {
	p.CreatedAt = createdAt
	return []any{p.Team, p.Day.Format(time.DateOnly), p.Path, p.Rows, p.Bytes, p.MinTimestamp, p.MaxTimestamp,
		p.SlotKeys[:], p.Level, createdAt}
}

// change replaces the parts of removed (by path) with added in the current catalog,
// once the transaction that made the change committed, and marks the projects it
// touched for their listings to be written again.
func (l *lake) change(removed map[string]bool, added []lakePart) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.current.Load()
	next := make(lakeCatalog, len(old)+1)
	for team, parts := range old {
		next[team] = parts
	}
	if len(removed) > 0 {
		for team, parts := range next {
			kept := slices.DeleteFunc(slices.Clone(parts), func(p lakePart) bool { return removed[p.Path] })
			if len(kept) != len(parts) {
				next[team], l.unlisted[team] = kept, true
			}
		}
	}
	for _, p := range added {
		// A new slice each time: the old catalog's readers keep theirs.
		next[p.Team] = append(slices.Clip(next[p.Team]), p)
		l.unlisted[p.Team] = true
	}
	l.current.Store(&next)
}

// listingName is the name of a project's listing of its current parts.
const listingName = "_current"

// listingInterval is how often the lake's goroutine writes the listings that changes
// made stale. The Writer's commits do not write them: a commit that touches many
// projects would write as many files before its events are acknowledged, and a
// listing is for scripts and other engines, which a second's delay does not harm.
const listingInterval = time.Second

// writeListings writes the listing of each project that a change marked since the
// last call, from the catalog as it is now. Only the listings' goroutine calls it,
// and close after that goroutine ended.
func (l *lake) writeListings() {
	l.mu.Lock()
	teams := l.unlisted
	l.unlisted = map[int64]bool{}
	l.mu.Unlock()
	catalog := *l.current.Load()
	for team := range teams {
		l.publish(team, catalog[team])
	}
}

// publish rewrites team's listing: written beside and renamed, so that a reader sees
// the old one or the new one whole. It is not fsynced: the catalog is the truth, and
// Open writes every listing again. With a bucket the listing names the parts' objects
// (s3:// URLs), and is uploaded beside them too.
func (l *lake) publish(team int64, parts []lakePart) {
	dir := filepath.Join(l.root, "team_id="+strconv.FormatInt(team, 10))
	var b strings.Builder
	for _, p := range parts {
		if l.remote != nil {
			b.WriteString(l.remote.url(p.Path))
		} else {
			b.WriteString(l.abs(p.Path))
		}
		b.WriteByte('\n')
	}
	if l.remote != nil {
		l.publishRemote(team, "team_id="+strconv.FormatInt(team, 10)+"/"+listingName, b.String())
	}
	tmp := filepath.Join(dir, listingName+".tmp")
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = os.WriteFile(tmp, []byte(b.String()), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, listingName))
	}
	if err != nil {
		l.log.Warn("cannot write the listing of a project's parts", "project", team, "err", err)
	}
}

// LakeFiles are the absolute paths of a project's current parts (their s3:// URLs with
// a bucket), as its listing in the lake directory data holds them (hedge lake files):
// the parts of the last change the running or last hedge made.
func LakeFiles(lakeDir string, team int64) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(lakeDir, "team_id="+strconv.FormatInt(team, 10), listingName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no part yet
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the lake's listing of project %d: %w", team, err)
	}
	return strings.Fields(string(b)), nil
}

// eventSource is the SQL of a relation of events with columns (each a column of the
// events table and of a part; "properties" is the text): the rows of the events
// table, and those of parts, which the caller read from the catalog once (a
// compaction may replace them after, and their files stay for the grace). The caller
// filters the rows. Without a lake (l nil), the table's.
func eventSource(l *lake, parts []lakePart, columns ...string) string {
	fromTable := slices.Clone(columns)
	for i, c := range fromTable {
		if c == "properties" {
			fromTable[i] = PropertiesText + " AS properties"
		}
	}
	table := `SELECT ` + strings.Join(fromTable, ", ") + ` FROM events`
	if l == nil || len(parts) == 0 {
		return "(" + table + ")"
	}
	return "(" + table + " UNION ALL SELECT " + strings.Join(columns, ", ") + " FROM " + l.readParts(parts) + ")"
}

// eventSource is eventSource of team's current parts, for a read of team's events.
func (w *Warehouse) eventSource(team int64, columns ...string) string {
	var parts []lakePart
	if w.lake != nil {
		parts = w.lake.parts(team)
	}
	return eventSource(w.lake, parts, columns...)
}

// readParts is the read_parquet call of parts.
func (l *lake) readParts(parts []lakePart) string {
	var b strings.Builder
	b.WriteString("read_parquet([")
	for i, p := range parts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + strings.ReplaceAll(l.abs(p.Path), "'", "''") + "'")
	}
	// hive_partitioning off: the columns of the path are columns of the files too.
	b.WriteString("], hive_partitioning = false)")
	return b.String()
}

// allParts are the current parts of every project.
func (l *lake) allParts() []lakePart {
	var all []lakePart
	for _, parts := range *l.current.Load() {
		all = append(all, parts...)
	}
	return all
}

// start starts the writing of listings, the compaction and the removal of replaced
// files, until close. The listings have a goroutine of their own, so that a long merge
// does not hold them back.
func (l *lake) start() {
	l.stop = make(chan struct{})
	l.every(listingInterval, l.writeListings)
	l.every(l.cfg.CompactInterval, l.compactOnce)
}

// every runs f every interval on a goroutine of its own, until close.
func (l *lake) every(interval time.Duration, f func()) {
	l.running.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
				f()
			}
		}
	})
}

// compactOnce merges the parts that are due and removes the files replaced before the
// grace; close interrupts it.
func (l *lake) compactOnce() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	if err := l.compact(ctx, time.Now()); err != nil && ctx.Err() == nil {
		l.log.Error("cannot compact the lake", "err", err)
	}
	if err := l.removeGarbage(ctx, time.Now()); err != nil && ctx.Err() == nil {
		l.log.Error("cannot remove the lake's replaced files", "err", err)
	}
}

// close stops the compaction, interrupting a merge in progress (its file is removed
// as a stray at the next start), and writes the listings that are stale.
func (l *lake) close() {
	if l.stop != nil {
		close(l.stop)
		l.running.Wait()
		l.stop = nil
	}
	l.writeListings()
}
