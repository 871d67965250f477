package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/schemas"
)

// migrationsFS is a migrations directory holding the named files of schemas plus extra.
func migrationsFS(t *testing.T, extra map[string]string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, text := range extra {
		fsys["migrations/"+name] = &fstest.MapFile{Data: []byte(text)}
	}
	embedded, err := readMigrations(schemas.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range embedded {
		fsys["migrations/"+m.name+".sql"] = &fstest.MapFile{Data: []byte(m.sql)}
	}
	return fsys
}

func TestMigrateOlderDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	embedded, err := readMigrations(schemas.Migrations)
	if err != nil {
		t.Fatal(err)
	}

	w, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	version, err := SchemaVersion(ctx, w.DB())
	if err != nil || version != len(embedded) {
		t.Fatalf("fresh database: version %d (err %v), want %d", version, err, len(embedded))
	}
	w.Close()

	// A newer hedge brings a migration the database has not seen: it is applied once.
	next := len(embedded) + 1
	newer := migrationsFS(t, map[string]string{
		fmt.Sprintf("%04d_probe.sql", next): `CREATE TABLE meta.probe (id INTEGER); INSERT INTO meta.probe VALUES (42);`,
	})
	for range 2 {
		w, err = Open(ctx, Config{Path: path, Migrations: newer})
		if err != nil {
			t.Fatal(err)
		}
		var rows int
		if err := w.DB().QueryRow(`SELECT count(*) FROM meta.probe`).Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("meta.probe rows = %d (err %v), want 1: the migration must run exactly once", rows, err)
		}
		if version, _ := SchemaVersion(ctx, w.DB()); version != next {
			t.Fatalf("version %d, want %d", version, next)
		}
		w.Close()
	}

	// The older hedge refuses the newer database instead of running against it.
	_, err = Open(ctx, Config{Path: path})
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("older binary on newer database: err %v, want a refusal", err)
	}
}

func TestMigrateFailureLeavesVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	embedded, _ := readMigrations(schemas.Migrations)
	broken := migrationsFS(t, map[string]string{
		fmt.Sprintf("%04d_broken.sql", len(embedded)+1): `CREATE TABLE meta.half (id INTEGER); SELECT * FROM no_such_table;`,
	})
	if _, err := Open(ctx, Config{Path: path, Migrations: broken}); err == nil {
		t.Fatal("a failing migration must fail Open")
	}
	w, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if version, _ := SchemaVersion(ctx, w.DB()); version != len(embedded) {
		t.Fatalf("version %d after a failed migration, want %d", version, len(embedded))
	}
	if _, err := w.DB().Exec(`SELECT * FROM meta.half`); err == nil {
		t.Fatal("a failed migration left its first statement applied")
	}
}

func TestReadMigrationsRejects(t *testing.T) {
	f := func(files map[string]string) {
		t.Helper()
		fsys := fstest.MapFS{}
		for name, text := range files {
			fsys["migrations/"+name] = &fstest.MapFile{Data: []byte(text)}
		}
		if _, err := readMigrations(fsys); err == nil {
			t.Fatalf("readMigrations(%v) accepted a broken set", files)
		}
	}
	f(map[string]string{"0002_gap.sql": ""})                     // starts at 2
	f(map[string]string{"0001_a.sql": "", "0003_c.sql": ""})     // gap
	f(map[string]string{"0001_a.sql": "", "nonumber.sql": ""})   // no version
	f(map[string]string{"0001_a.sql": "", "0001_again.sql": ""}) // duplicate
}

// openBefore creates a database at path with the migrations before version only, as
// an earlier hedge made it, and returns it open: plain DuckDB, for the Writer and the
// rest of today's warehouse need today's schema.
func openBefore(t testing.TB, path string, version int) *sql.DB {
	t.Helper()
	return openBeforeIn(t, path, version, "")
}

// openBeforeIn is openBefore of a new file in DuckDB's storage format (as "v1.5.0"; ""
// for DuckDB's default, which a hedge before the format was chosen wrote).
func openBeforeIn(t testing.TB, path string, version int, format string) *sql.DB {
	t.Helper()
	embedded, err := readMigrations(schemas.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	before := fstest.MapFS{}
	for _, m := range embedded {
		if m.version < version {
			before["migrations/"+m.name+".sql"] = &fstest.MapFile{Data: []byte(m.sql)}
		}
	}
	dsn := path
	if format != "" {
		dsn += "?storage_compatibility_version=" + format
	}
	db, err := sql.Open("duckdb", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(context.Background(), db, before, slog.New(slog.DiscardHandler)); err != nil {
		db.Close()
		t.Fatal(err)
	}
	return db
}

// insertOldEvent stores an event in a database that openBefore made, as its Writer
// stored them.
func insertOldEvent(t *testing.T, db *sql.DB, team int64, name, properties string) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO events (uuid, team_id, event, distinct_id, person_id, "timestamp", inserted_at, properties, lane)
		VALUES (uuid(), ?, ?, 'user-1', uuid(), now(), now(), ?, 'realtime')`, team, name, properties); err != nil {
		t.Fatal(err)
	}
}

// reopen closes db, made by openBefore, and opens its file as a warehouse, which
// migrates it; the warehouse closes when the test ends.
func reopen(t *testing.T, db *sql.DB, path string) *Warehouse {
	t.Helper()
	db.Close()
	w, err := Open(context.Background(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// queryStrings runs a query of one text column and returns its rows.
func queryStrings(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var values []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return values
}

// Migration 10 rewrites the lone surrogate escapes of stored documents that DuckDB
// cannot read, and leaves every readable document as it is.
func TestMigrateLoneSurrogates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	db := openBefore(t, path, 10)
	stored := map[string]string{
		"lone":    `{"a":"x\ud800y","b":"\ud83d\ude00"}`,
		"pair":    `{"a":"\ud83d\ude00"}`,
		"escaped": `{"a":"\\ud800"}`,
	}
	for name, props := range stored {
		insertOldEvent(t, db, 1, name, props)
	}
	if _, err := db.Exec(`INSERT INTO persons (id, team_id, properties, created_at, is_identified, version, updated_at)
		VALUES (uuid(), 1, '{"name":"\udc00"}', now(), true, 0, now())`); err != nil {
		t.Fatal(err)
	}
	w := reopen(t, db, path)
	want := map[string]string{
		"lone":    `{"a":"x\ufffdy","b":"\ufffd\ufffd"}`,
		"pair":    stored["pair"],
		"escaped": stored["escaped"],
	}
	for name, props := range want {
		var got string
		if err := w.DB().QueryRow(`SELECT `+PropertiesText+` FROM events WHERE event = ?`, name).Scan(&got); err != nil || got != props {
			t.Fatalf("%s: %s %v, want %s", name, got, err, props)
		}
	}
	var bad, persons int
	if err := w.DB().QueryRow(`SELECT count(*) FILTER (properties <> '{"name":"\ufffd"}'), count(*) FROM persons`).Scan(&bad, &persons); err != nil || bad != 0 || persons == 0 {
		t.Fatalf("%d of %d persons not repaired (%v)", bad, persons, err)
	}
	var n int
	if err := w.DB().QueryRow(`SELECT count(json_extract_string(` + PropertiesText + `, '$.a')) FROM events`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("property reads after the repair: %d %v", n, err)
	}
}

// Migration 11 replaces the run errors of earlier hedges, which could hold server
// paths, with the sentence of an error of hedge itself.
func TestMigrateRunErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	db := openBefore(t, path, 11)
	for i, runError := range []any{"cannot write /srv/hedge-data/.staging/x: permission denied", nil} {
		if _, err := db.Exec(`INSERT INTO meta.batch_export_runs (id, batch_export_id, team_id, data_interval_start, data_interval_end,
			status, latest_error, created_at, last_updated_at) VALUES (uuid(), uuid(), 1, ?, ?, 'Failed', ?, now(), now())`,
			fmt.Sprintf("2026-01-0%dT00:00:00Z", i+1), fmt.Sprintf("2026-01-0%dT01:00:00Z", i+1), runError); err != nil {
			t.Fatal(err)
		}
	}
	w := reopen(t, db, path)
	errs := queryStrings(t, w.DB(), `SELECT coalesce(latest_error, '') FROM meta.batch_export_runs ORDER BY data_interval_start`)
	if strings.Join(errs, "|") != "hedge could not export this window: an error of hedge itself, which its log records|" {
		t.Fatalf("run errors after the migration: %q", errs)
	}
}

// Migration 12 records the backfills of earlier hedges, which queued every window at
// once, as having queued them all, with the length of their export's windows.
func TestMigrateBackfillQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	db := openBefore(t, path, 12)
	export := uuid.NewString()
	if _, err := db.Exec(`INSERT INTO meta.batch_exports (id, team_id, name, model, destination_type, destination_config, "interval",
		created_at, last_updated_at) VALUES (?, 1, 'x', 'events', 'Parquet', '{}', 'day', now(), now())`, export); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO meta.batch_export_backfills VALUES (uuid(), ?, 1, '2026-01-01', '2026-01-03', now())`, export); err != nil {
		t.Fatal(err)
	}
	w := reopen(t, db, path)
	var seconds int64
	var queued, end, endAt time.Time
	if err := w.DB().QueryRow(`SELECT window_seconds, queued_through, windows_end, end_at FROM meta.batch_export_backfills`).Scan(
		&seconds, &queued, &end, &endAt); err != nil {
		t.Fatal(err)
	}
	if seconds != 86400 || !queued.Equal(endAt) || !end.Equal(endAt) {
		t.Fatalf("after the migration: window_seconds %d, queued_through %v, windows_end %v, want 86400, %v, %v", seconds, queued, end, endAt, endAt)
	}
}

// Migration 17 writes the person overrides of the events stored before it: an event
// whose person is not its distinct id's counts for the latter, one row per old person
// of a project; events of no person take their distinct id's.
func TestMigratePersonOverrides(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	db := openBefore(t, path, 17)
	const (
		kept   = "00000000-0000-0000-0000-00000000000a" // a's person, then and now
		merged = "00000000-0000-0000-0000-00000000000b" // b's person, merged into kept
		other  = "00000000-0000-0000-0000-00000000000c" // c's person, and a's of project 2
		alone  = "00000000-0000-0000-0000-00000000000d" // d's events sent without a person
	)
	for _, d := range []struct {
		team     int64
		distinct string
		person   string
	}{{1, "a", kept}, {1, "b", kept}, {1, "c", other}, {2, "a", other}, {2, "b", other}} {
		if _, err := db.Exec(`INSERT INTO person_distinct_ids VALUES (?, ?, ?::UUID, 0, now())`, d.team, d.distinct, d.person); err != nil {
			t.Fatal(err)
		}
	}
	events := []struct {
		team     int64
		distinct string
		person   *string
		now      string
	}{
		{1, "a", new(kept), kept}, {1, "b", new(merged), kept}, {1, "b", new(merged), kept},
		{1, "c", nil, other}, {1, "d", new(alone), alone}, {2, "a", new(other), other}, {2, "b", new(merged), other},
	}
	for i, e := range events {
		if _, err := db.Exec(`INSERT INTO events (uuid, team_id, event, distinct_id, person_id, "timestamp", inserted_at, properties, lane)
			VALUES (uuid(), ?, ?, ?, ?::UUID, now(), now(), '{}', 'realtime')`, e.team, strconv.Itoa(i), e.distinct, e.person); err != nil {
			t.Fatal(err)
		}
	}
	w := reopen(t, db, path)
	overrides := queryStrings(t, w.DB(), `SELECT team_id || ' ' || old_person_id || ' ' || person_id FROM person_overrides ORDER BY ALL`)
	if want := []string{"1 " + merged + " " + kept, "2 " + merged + " " + other}; !slices.Equal(overrides, want) {
		t.Fatalf("overrides %q, want %q", overrides, want)
	}
	for i, e := range events {
		var person string
		if err := w.DB().QueryRow(`SELECT coalesce(o.person_id, e.person_id)::VARCHAR FROM events e
			LEFT JOIN person_overrides o ON o.team_id = e.team_id AND o.old_person_id = e.person_id
			WHERE e.event = ?`, strconv.Itoa(i)).Scan(&person); err != nil || person != e.now {
			t.Errorf("event %d of %q in project %d counts for %s (%v), want %s", i, e.distinct, e.team, person, err, e.now)
		}
	}
}
