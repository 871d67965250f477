package warehouse

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// The Writer writes the properties text to its zstd column, and the rows stored before
// it move there in the background; every read answers the same before and after. A
// file of DuckDB's older storage format, which cannot hold zstd, is upgraded when
// hedge attaches it.
func TestPropertiesTextMove(t *testing.T) {
	f := func(name, format string) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "hedge.duckdb")
			db := openBeforeIn(t, path, 16, format)
			var want []string // the properties texts, by event name
			for i := range 20 {
				name := fmt.Sprintf("old %02d", i)
				text := fmt.Sprintf(`{"$browser":"B%d","plan":"p%d","n":%d}`, i%3, i, i)
				insertOldEvent(t, db, 1, name, text)
				want = append(want, name+" "+text)
			}
			db.Close()
			w := openTestWarehouse(t, path, Config{BackfillRows: 7})
			defer w.Close()
			batch := &Batch{}
			for i := range 5 {
				e := testEvent(1, fmt.Sprintf("new %02d", i))
				e.Properties = fmt.Sprintf(`{"$browser":"N%d","plan":"n%d"}`, i, i)
				batch.Events = append(batch.Events, e)
				want = append(want, e.Name+" "+e.Properties)
			}
			if err := w.Writer().Submit(batch); err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			// reads checks what a query reads and where each row holds its text:
			// oldInOld of the old rows in the old column, and so many of the new.
			reads := func(when string, oldInOld, newInOld int) {
				t.Helper()
				r, err := w.Queries().HogQL(ctx, utc, `SELECT event || ' ' || properties, properties.$browser FROM events ORDER BY event`)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, row := range r.Results {
					got = append(got, row[0].(string))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: read %q, want %q", when, got, want)
				}
				var old, new, both int
				if err := w.DB().QueryRow(`SELECT count(*) FILTER (event LIKE 'old%' AND properties IS NOT NULL),
					count(*) FILTER (event LIKE 'new%' AND properties IS NOT NULL),
					count(*) FILTER ((properties IS NULL) = (properties_zstd IS NULL)) FROM events`).Scan(&old, &new, &both); err != nil {
					t.Fatal(err)
				}
				if old != oldInOld || new != newInOld || both != 0 {
					t.Fatalf("%s: %d old and %d new rows in properties (want %d, %d), %d rows in both columns or neither",
						when, old, new, oldInOld, newInOld, both)
				}
			}
			reads("before the move", 20, 0)
			w.StartBackfill()
			if err := w.WaitBackfill(ctx); err != nil {
				t.Fatal(err)
			}
			reads("after the move", 0, 0)
			if _, err := w.DB().Exec(`CHECKPOINT`); err != nil {
				t.Fatal(err)
			}
			var compressed bool
			if err := w.DB().QueryRow(`SELECT bool_or(compression = 'ZSTD') FROM pragma_storage_info('events')
				WHERE column_name = 'properties_zstd'`).Scan(&compressed); err != nil || !compressed {
				t.Fatalf("properties_zstd not compressed with zstd (%v)", err)
			}
		})
	}
	f("DuckDB 1.5's format", "v1.5.0")
	f("DuckDB 1.0's format", "v1.0.0")
}
