// Package faults causes, for tests, real faults of the DuckDB database hedge runs on,
// rather than imitations of their errors.
package faults

import (
	"database/sql"
	"fmt"
	"strings"
)

// Invalidate makes DuckDB invalidate the database behind db, as it does after a fatal
// error: it fills a table's primary-key index, which DuckDB holds in memory, with keys
// of 1.9 MB until an insert fails for want of memory and its rollback fails too. The
// database must have been opened with a memory_limit of 64 MB or so (more takes longer);
// every statement on it fails from then on. It returns the error of the statement that
// invalidated it.
func Invalidate(db *sql.DB) error {
	if _, err := db.Exec(`CREATE TABLE invalidate_by_memory (k VARCHAR PRIMARY KEY)`); err != nil {
		return fmt.Errorf("cannot create the table that invalidates: %w", err)
	}
	for i := range 1000 {
		key := strings.Repeat(fmt.Sprint(i%10), 1900000) + fmt.Sprint(i)
		if _, err := db.Exec(`INSERT INTO invalidate_by_memory VALUES (?), (?) ON CONFLICT DO NOTHING`, key, key+"b"); err != nil {
			if strings.Contains(err.Error(), "FATAL") {
				return err
			}
			return fmt.Errorf("an insert failed without invalidating the database: %w", err)
		}
	}
	return fmt.Errorf("1000 inserts did not invalidate the database: is its memory_limit low?")
}
