package warehouse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagingDir: DuckDB reads and writes no file but its own and those under the
// staging directory, whatever is asked of it, even on DB(), and no SET undoes that.
func TestStagingDir(t *testing.T) {
	dir := t.TempDir()
	w := openTestWarehouse(t, filepath.Join(dir, "hedge.duckdb"), Config{})
	defer w.Close()
	db := w.DB()
	staging := w.StagingDir()
	if info, err := os.Stat(staging); staging != filepath.Join(dir, "staging") || err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("staging directory %s: %v %v", staging, info, err)
	}

	// An export writes Parquet under it, and reads it back.
	export := filepath.Join(staging, "run-1")
	if _, err := db.Exec(`COPY (SELECT 1 AS n, '2026-11-02' AS date UNION ALL SELECT 2, '2026-11-03')
		TO '` + export + `' (FORMAT parquet, PARTITION_BY (date))`); err != nil {
		t.Fatalf("COPY into the staging directory: %v", err)
	}
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM read_parquet('` + export + `/*/*.parquet')`).Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("reading the export back: %d rows, %v", rows, err)
	}

	// Any other path is refused, reading or writing.
	elsewhere := t.TempDir()
	file := filepath.Join(elsewhere, "secret.csv")
	if err := os.WriteFile(file, []byte("k,v\nhedge-secret,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := func(query string) {
		t.Helper()
		var s string
		err := db.QueryRow(query).Scan(&s)
		if err == nil || strings.Contains(s, "hedge-secret") {
			t.Fatalf("%s ran: %q", query, s)
		}
	}
	refused(`SELECT k FROM read_csv('` + file + `')`)
	refused(`SELECT k FROM '` + file + `'`)
	refused(`SELECT content FROM read_text('` + file + `')`)
	refused(`SELECT content FROM read_text('/etc/hostname')`)
	refused(`SELECT file FROM glob('` + elsewhere + `/*')`)
	if rel, err := filepath.Rel(staging, file); err == nil { // staging/../../002/secret.csv: a way out
		refused(`SELECT k FROM read_csv('` + staging + "/" + rel + `')`)
	}
	for _, target := range []string{filepath.Join(elsewhere, "leak.csv"), staging + "/../leak.csv", staging + "x/leak.csv"} {
		if _, err := db.Exec(`COPY (SELECT 1) TO '` + target + `'`); err == nil {
			t.Fatalf("COPY to %s ran", target)
		}
		if _, err := os.Stat(filepath.Clean(target)); err == nil {
			t.Fatalf("COPY wrote %s", target)
		}
	}
	if _, err := db.Exec(`ATTACH '` + filepath.Join(elsewhere, "other.duckdb") + `' AS other`); err == nil {
		t.Fatal("ATTACH ran")
	}
	if _, err := db.Exec(`LOAD httpfs`); err == nil {
		t.Fatal("LOAD ran")
	}

	// The configuration is locked: nothing turns access back on.
	for _, set := range []string{
		`SET GLOBAL enable_external_access = true`,
		`SET enable_external_access = true`,
		`RESET enable_external_access`,
		`SET GLOBAL allowed_directories = ['/']`,
		`SET GLOBAL lock_configuration = false`,
	} {
		if _, err := db.Exec(set); err == nil {
			t.Fatalf("%s ran", set)
		}
	}
	refused(`SELECT k FROM read_csv('` + file + `')`)
}
