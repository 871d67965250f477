package warehouse

import "github.com/VictoriaMetrics/metrics"

// The properties text of events lives in one of two columns (migration 16): the
// Writer writes properties_zstd, compressed with zstd (about 130 bytes an event of
// bench JSON, against 330-420 for DuckDB's own choice of compression; the Writer's
// ceiling rose by a tenth to a fifth), and leaves properties NULL; the rows stored
// before the migration hold theirs in properties until the move (a backfill,
// backfill.go) takes it over. So every read of the text is PropertiesText:
// coalesce(properties_zstd, properties), right for each row whether it moved or not,
// and cheap once the old column is NULL (DuckDB stores a run of NULLs as a constant).
//
// zstd needs a database file in DuckDB 1.2's storage format or newer (in an older one
// DuckDB stores the column uncompressed, three times the size): hedge attaches every
// file in DuckDB 1.5's (storageVersion), which upgrades a file written before.

// PropertiesText is the SQL of an event's properties text in the events table: what
// reads the table itself, not through the query engine's views, reads.
const PropertiesText = "coalesce(properties_zstd, properties)"

// propertiesText is PropertiesText of the events row alias names.
func propertiesText(alias string) string {
	return "coalesce(" + alias + ".properties_zstd, " + alias + ".properties)"
}

// propertiesMoveRows is the most rows of a chunk of the move: four row groups, about
// 30 MB of text to compress at the next checkpoint, a tenth of a second on two cores.
const propertiesMoveRows = 4 * RowGroupRows

var (
	propertiesMoved = metrics.NewCounter(`hedge_properties_move_rows_total`)
	// propertiesMovePending is the rows still to move; 0 once done.
	propertiesMovePending = metrics.NewGauge(`hedge_properties_move_pending_rows`, nil)
)

// propertiesMove is the job of moving the properties text of the rows stored before
// migration 16 to properties_zstd.
func propertiesMove() backfillJob {
	return backfillJob{what: "properties text", table: "meta.properties_move", rows: propertiesMoveRows,
		update: `UPDATE events SET properties_zstd = properties, properties = NULL
			WHERE rowid >= $1 AND rowid < $2 AND properties IS NOT NULL`,
		filled: propertiesMoved, pending: propertiesMovePending}
}
