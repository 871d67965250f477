package warehouse

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Export models: what a batch export writes.
const (
	ExportEvents  = "events"
	ExportPersons = "persons"
)

// ParquetCompressions maps the compression names a batch export may ask for to
// DuckDB's Parquet codecs.
var ParquetCompressions = map[string]string{
	"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "brotli": "brotli", "lz4": "lz4_raw", "none": "uncompressed",
}

// ExportRequest is one window of one project's events or persons to write as Parquet.
type ExportRequest struct {
	Team  int64
	Model string // ExportEvents or ExportPersons
	// Start and End bound the window [Start, End), by commit time unless EventTime:
	// the inserted_at of events, the updated_at of persons and distinct ids. By commit
	// time, an event that arrives late is in the window it arrived in, and consecutive
	// windows export each row once.
	Start, End time.Time
	// EventTime bounds the window by the events' timestamp instead: the events that
	// happened in it, whenever they were committed. For the events model only.
	EventTime bool
	// IncludeEvents keeps only these event names (empty: all), ExcludeEvents drops
	// these; Properties are event property filters. For the events model only.
	IncludeEvents, ExcludeEvents []string
	Properties                   []PropertyFilter
	// Compression is a key of ParquetCompressions; "" is zstd.
	Compression string
	// Dir is a directory under StagingDir that holds nothing else; the files are
	// written there and belong to the caller.
	Dir string
}

// ExportFile is one Parquet file of an export: the rows of one date.
type ExportFile struct {
	// Date (YYYY-MM-DD, UTC) is the date of the events' timestamps; for persons, of the
	// window's start.
	Date  string
	Path  string
	Rows  int64
	Bytes int64
}

// CheckExportFilters says whether filters can select the events of a batch export:
// event property filters only.
func CheckExportFilters(filters []PropertyFilter) error {
	_, _, withPersons, err := propertyFilters(filters)
	if err != nil {
		return err
	}
	if withPersons {
		return queryErrorf("batch exports filter on event properties only")
	}
	return nil
}

// Export writes the window as Parquet files into r.Dir: for events, one file per date
// of their timestamps (Hive-style date=YYYY-MM-DD directories), rows in timestamp
// order; for persons, one file of every distinct id whose person or mapping changed in
// the window. It first waits until every commit that can hold rows of the window has
// ended (Writer.Committed), so the window is complete when it is read: by commit time,
// the commits that began before its end; by event time, where any commit can hold
// rows of the window, the commits open when Export is called.
//
// Columns are typed: uuid and person_id as text, timestamp and inserted_at as
// timestamps (UTC), properties as JSON text, $group_0..4 as text.
func (w *Warehouse) Export(ctx context.Context, r ExportRequest) ([]ExportFile, error) {
	codec, ok := ParquetCompressions[r.Compression]
	if r.Compression == "" {
		codec, ok = "zstd", true
	}
	if !ok {
		return nil, fmt.Errorf("cannot export with compression %q", r.Compression)
	}
	if r.EventTime && r.Model != ExportEvents {
		return nil, fmt.Errorf("cannot export %s by event time: only events have one", r.Model)
	}
	if rel, err := filepath.Rel(w.StagingDir(), r.Dir); err != nil || rel == "." || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("cannot export to %s: exports write in a directory under %s", r.Dir, w.StagingDir())
	}
	until := r.End
	if r.EventTime {
		until = w.writer.cfg.Now().UTC()
	}
	if err := w.waitCommitted(ctx, until); err != nil {
		return nil, err
	}
	// The path is hedge's own (the staging directory and a run id), never a user's; a
	// COPY target cannot be a bound parameter, so it is quoted here.
	target := "'" + strings.ReplaceAll(r.Dir, "'", "''") + "'"
	switch r.Model {
	case ExportEvents:
		return w.exportEvents(ctx, r, target, codec)
	case ExportPersons:
		return w.exportPersons(ctx, r, codec)
	}
	return nil, fmt.Errorf("cannot export model %q", r.Model)
}

// waitCommitted returns once no commit that began before end is still open.
func (w *Warehouse) waitCommitted(ctx context.Context, end time.Time) error {
	for {
		committed := w.writer.Committed()
		if !committed.Before(end) {
			return nil
		}
		wait := min(end.Sub(committed), 100*time.Millisecond)
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot export before %s: %w", end.Format(time.RFC3339), ctx.Err())
		case <-time.After(wait):
		}
	}
}

func (w *Warehouse) exportEvents(ctx context.Context, r ExportRequest, target, codec string) ([]ExportFile, error) {
	column := "inserted_at"
	if r.EventTime {
		column = `"timestamp"`
	}
	where := []string{"team_id = ?", column + " >= ?", column + " < ?"}
	args := []any{r.Team, r.Start, r.End}
	if len(r.IncludeEvents) > 0 {
		where = append(where, "event IN ("+placeholders(len(r.IncludeEvents))+")")
		for _, e := range r.IncludeEvents {
			args = append(args, e)
		}
	}
	if len(r.ExcludeEvents) > 0 {
		where = append(where, "event NOT IN ("+placeholders(len(r.ExcludeEvents))+")")
		for _, e := range r.ExcludeEvents {
			args = append(args, e)
		}
	}
	conditions, bound, withPersons, err := propertyFilters(r.Properties)
	if err != nil {
		return nil, err
	}
	if withPersons {
		return nil, fmt.Errorf("cannot export with person property filters")
	}
	where, args = append(where, conditions...), append(args, bound...)
	if w.lake != nil {
		if err := w.lake.ready(ctx, w.lake.parts(r.Team)); err != nil {
			return nil, fmt.Errorf("cannot export the events of project %d: %w", r.Team, err)
		}
	}
	query := `COPY (
		SELECT uuid::VARCHAR AS uuid, event, distinct_id, person_id::VARCHAR AS person_id, "timestamp", inserted_at, properties,
			"$group_0", "$group_1", "$group_2", "$group_3", "$group_4",
			strftime("timestamp" AT TIME ZONE 'UTC', '%Y-%m-%d') AS date
		FROM ` + w.eventSource(r.Team, "team_id", "uuid", "event", "distinct_id", "person_id", `"timestamp"`, "inserted_at", "properties",
		`"$group_0"`, `"$group_1"`, `"$group_2"`, `"$group_3"`, `"$group_4"`) + ` events
		WHERE ` + strings.Join(where, " AND ") + `
		ORDER BY "timestamp", uuid
	) TO ` + target + ` (FORMAT parquet, PARTITION_BY (date), COMPRESSION ` + codec + `, FILENAME_PATTERN 'part-{i}')`
	if _, err := w.db.ExecContext(ctx, query, args...); err != nil {
		return nil, fmt.Errorf("cannot export the events of project %d: %w", r.Team, err)
	}
	return w.exportedFiles(ctx, r.Dir)
}

func (w *Warehouse) exportPersons(ctx context.Context, r ExportRequest, codec string) ([]ExportFile, error) {
	dir := filepath.Join(r.Dir, "date="+r.Start.UTC().Format(time.DateOnly))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot export persons: %w", err)
	}
	target := "'" + strings.ReplaceAll(filepath.Join(dir, "part-0.parquet"), "'", "''") + "'"
	// One row per distinct id, PostHog's persons export: a person shows up when it or
	// the mapping of one of its distinct ids changed in the window.
	query := `COPY (
		SELECT d.distinct_id, p.id::VARCHAR AS person_id, p.properties, p.created_at, p.is_identified,
			p.version AS person_version, d.version AS person_distinct_id_version,
			greatest(p.updated_at, d.updated_at) AS updated_at
		FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
		WHERE d.team_id = ? AND p.team_id = ?
			AND ((p.updated_at >= ? AND p.updated_at < ?) OR (d.updated_at >= ? AND d.updated_at < ?))
		ORDER BY d.distinct_id
	) TO ` + target + ` (FORMAT parquet, COMPRESSION ` + codec + `)`
	if _, err := w.db.ExecContext(ctx, query, r.Team, r.Team, r.Start, r.End, r.Start, r.End); err != nil {
		return nil, fmt.Errorf("cannot export the persons of project %d: %w", r.Team, err)
	}
	return w.exportedFiles(ctx, r.Dir)
}

// exportedFiles lists the date=*/part-*.parquet files under dir, in date order, with
// the rows each holds.
func (w *Warehouse) exportedFiles(ctx context.Context, dir string) ([]ExportFile, error) {
	var files []ExportFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".parquet" {
			return err
		}
		date, ok := strings.CutPrefix(filepath.Base(filepath.Dir(path)), "date=")
		if !ok {
			return fmt.Errorf("cannot tell the date of %s", path)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := ExportFile{Date: date, Path: path, Bytes: info.Size()}
		if err := w.db.QueryRowContext(ctx, `SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata(?)`, path).Scan(&f.Rows); err != nil {
			return fmt.Errorf("cannot read the rows of %s: %w", path, err)
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list the exported files: %w", err)
	}
	slices.SortFunc(files, func(a, b ExportFile) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}
