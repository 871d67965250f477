package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The compaction. Each commit writes a part per project and day, a few a second
// under load, and a query's cost grows with the files it opens, so the compaction
// merges a project's small parts of one day (each under CompactBytes) into one part,
// in tiers, so that a row is rewritten a few times, not at every merge: once
// CompactParts parts of one level gather (the Writer's are level 0, a merge's one
// more than its parts'), they become one of the next level; a day before yesterday's,
// whose events rarely grow, has all its small parts merged as soon as it has two. A
// merge takes parts of one set of slot keys only (a slot column means its key's
// values), in the order they were registered, until their sizes reach CompactBytes. Its part keeps one row of each uuid (the first stored), as
// PostHog's table keeps one row of an event sent twice, in the order the parts were
// stored, which is about their time order (a sort of the merge's rows ran DuckDB out
// of its memory limit at 2 million events); zstd at level 1 (138 bytes an event of
// bench events, some 150,000 events a second on two cores).
//
// The merge writes its file first, then swaps the parts in one transaction of the
// catalog: a reader of the catalog sees the old parts or the new one, each row once.
// The old files wait in meta.lake_garbage for the grace (LakeConfig.Grace), which a
// query that read the catalog before the swap runs within; a crash leaves the merged
// file unregistered (removed at the next start) or the swap whole.

// compact merges what is due at now, and returns at the first failure or once ctx ends;
// a merge that fails on a damaged part quarantines it and goes on without it.
func (l *lake) compact(ctx context.Context, now time.Time) error {
	for _, parts := range l.mergeable(now) {
		if ctx.Err() != nil {
			return nil
		}
		if err := l.merge(ctx, parts, now); err != nil && !l.quarantineIfDamaged(ctx, err) {
			return err
		}
	}
	return nil
}

// mergeable are the groups of parts due for a merge at now.
func (l *lake) mergeable(now time.Time) [][]lakePart {
	type key struct {
		team  int64
		day   int64
		slots [slotCount]string
		level int // -1 for a day before yesterday's: every level together
	}
	yesterday := now.UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour).Unix()
	groups := map[key][]lakePart{}
	var order []key
	for _, parts := range *l.current.Load() {
		for _, p := range parts {
			if p.Bytes >= l.cfg.CompactBytes {
				continue
			}
			k := key{p.Team, p.Day.Unix(), p.SlotKeys, p.Level}
			if k.day < yesterday {
				k.level = -1
			}
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], p)
		}
	}
	var due [][]lakePart
	for _, k := range order {
		parts := groups[k]
		if len(parts) < l.cfg.CompactParts && (len(parts) < 2 || k.level >= 0) {
			continue
		}
		// At most CompactBytes of parts in one merge, and two at least.
		var size int64
		n := 0
		for n < len(parts) && (n < 2 || size < l.cfg.CompactBytes) {
			size += parts[n].Bytes
			n++
		}
		due = append(due, parts[:n])
	}
	return due
}

// merge replaces parts (of one project, day and set of slot keys) with one part.
func (l *lake) merge(ctx context.Context, parts []lakePart, now time.Time) error {
	start := time.Now()
	first := parts[0]
	level := 0
	for _, p := range parts {
		level = max(level, p.Level)
	}
	name := "c" + strconv.FormatInt(now.UnixMicro(), 10) + "-" + strconv.FormatUint(l.seq.Add(1), 10) + ".parquet"
	merged := lakePart{Team: first.Team, Day: first.Day, Path: l.partPath(first.Team, first.Day, name), SlotKeys: first.SlotKeys, Level: level + 1}
	path := l.abs(merged.Path)
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("cannot get a connection to compact the lake: %w", err)
	}
	defer conn.Close()
	// The uuids stored twice first, from the uuid column alone: a window over every
	// row of the merge would hold them all in memory (DuckDB ran out of its 256 MB
	// at 3 million events), where the duplicates are few, or none.
	if err := l.ready(ctx, parts); err != nil {
		return fmt.Errorf("cannot merge %d parts of project %d: %w", len(parts), first.Team, err)
	}
	source := l.readParts(parts)
	rows := `SELECT * FROM ` + source
	var duplicates int
	if err := conn.QueryRowContext(ctx, `CREATE OR REPLACE TEMP TABLE merge_duplicates AS
		SELECT uuid FROM `+source+` GROUP BY uuid HAVING count(*) > 1;
		SELECT count(*) FROM merge_duplicates`).Scan(&duplicates); err != nil {
		return fmt.Errorf("cannot merge %d parts of project %d: %w", len(parts), first.Team, err)
	}
	if duplicates > 0 {
		rows = `SELECT * FROM ` + source + ` WHERE uuid NOT IN (SELECT uuid FROM merge_duplicates)
			UNION ALL (SELECT * FROM ` + source + ` WHERE uuid IN (SELECT uuid FROM merge_duplicates)
				QUALIFY row_number() OVER (PARTITION BY uuid ORDER BY inserted_at) = 1)`
	}
	fail := func(err error) error {
		os.Remove(path)
		return fmt.Errorf("cannot merge %d parts of project %d: %w", len(parts), first.Team, err)
	}
	if err := l.copyPart(ctx, conn, rows, &merged); err != nil {
		return fail(err)
	}
	replaced := make([]string, len(parts))
	removed := make(map[string]bool, len(parts))
	for i, p := range parts {
		replaced[i], removed[p.Path] = p.Path, true
	}
	if err := swapParts(ctx, conn, replaced, &merged, now); err != nil {
		return fail(err)
	}
	l.change(removed, []lakePart{merged})
	lakeCompactions.Inc()
	lakeCompactionTime.UpdateDuration(start)
	l.log.Debug("lake parts merged", "project", first.Team, "day", first.Day.Format(time.DateOnly), "parts", len(parts),
		"rows", merged.Rows, "bytes", merged.Bytes, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// swapParts replaces the parts of paths with merged in the catalog, in one
// transaction on conn, and keeps the paths for removal after the grace.
func swapParts(ctx context.Context, conn *sql.Conn, paths []string, merged *lakePart, now time.Time) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	result, err := tx.ExecContext(ctx, `DELETE FROM meta.lake_parts WHERE list_contains(?::VARCHAR[], path)`, paths)
	if err != nil {
		return err
	}
	if n, err := result.RowsAffected(); err != nil || n != int64(len(paths)) {
		return fmt.Errorf("the catalog holds %d of the %d parts merged (%v)", n, len(paths), err)
	}
	if _, err := tx.ExecContext(ctx, registerPartSQL, merged.registerArgs(now)...); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta.lake_garbage SELECT unnest(?::VARCHAR[]), ?`, paths, now); err != nil {
		return err
	}
	return tx.Commit()
}

// copyPart writes the rows of query (SQL, on conn) as part's file, whole once it
// returns (keepFile), uploaded to the lake's bucket if it has one, and fills in part's
// bytes, rows and time range. On an error the file is not there.
func (l *lake) copyPart(ctx context.Context, conn *sql.Conn, query string, part *lakePart) error {
	path := l.abs(part.Path)
	tmp := path + ".tmp"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `COPY (`+query+`) TO '`+strings.ReplaceAll(tmp, "'", "''")+
		`' (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE `+strconv.Itoa(mergeRowGroupRows)+`)`); err != nil {
		os.Remove(tmp)
		return err
	}
	size, err := keepFile(tmp, path)
	if err != nil {
		return err
	}
	part.Bytes = size
	if err := conn.QueryRowContext(ctx, `SELECT count(*), min("timestamp"), max("timestamp") FROM `+l.readParts([]lakePart{*part})).
		Scan(&part.Rows, &part.MinTimestamp, &part.MaxTimestamp); err != nil {
		os.Remove(path)
		return err
	}
	if err := l.upload(*part); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// syncFile fsyncs the file at path.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// removeGarbage removes the files (and objects) replaced before now less the grace.
func (l *lake) removeGarbage(ctx context.Context, now time.Time) error {
	rows, err := l.db.QueryContext(ctx, `SELECT path FROM meta.lake_garbage WHERE replaced_at < ?`, now.Add(-l.cfg.Grace))
	if err != nil {
		return err
	}
	var paths []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return err
		}
		paths = append(paths, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range paths {
		if err := os.Remove(l.abs(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot remove replaced part %s: %w", p, err)
		}
		lakeGarbageRemoved.Inc()
	}
	if err := l.forget(ctx, paths); err != nil {
		return err
	}
	if len(paths) > 0 {
		if _, err := l.db.ExecContext(ctx, `DELETE FROM meta.lake_garbage WHERE list_contains(?::VARCHAR[], path)`, paths); err != nil {
			return fmt.Errorf("cannot forget removed parts: %w", err)
		}
	}
	return nil
}

// mergeRowGroupRows is the rows of a merged part's row groups: DuckDB's Parquet writer
// holds a row group in memory until it is written, some 1 KB an event with the
// properties text, within the 256 MB of its default memory limit beside the sort.
const mergeRowGroupRows = 2 * RowGroupRows
