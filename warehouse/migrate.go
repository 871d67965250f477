package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"
)

// migration is one file migrations/NNNN_name.sql: it brings the schema to version NNNN.
type migration struct {
	version int
	name    string
	sql     string
}

// readMigrations loads the migration files of fsys in version order. Versions must run
// 1, 2, 3... without gaps, so a missing file cannot be skipped silently.
func readMigrations(fsys fs.FS) ([]migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("cannot list migrations: %w", err)
	}
	migrations := make([]migration, 0, len(files))
	for _, file := range files {
		base := strings.TrimSuffix(path.Base(file), ".sql")
		number, _, ok := strings.Cut(base, "_")
		version, err := strconv.Atoi(number)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("cannot use migration %s: its name must be NNNN_name.sql", file)
		}
		text, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("cannot read migration %s: %w", file, err)
		}
		migrations = append(migrations, migration{version: version, name: base, sql: string(text)})
	}
	// fs.Glob returns names in lexical order, which is version order for zero-padded names;
	// the check below catches a name that is not.
	for i, m := range migrations {
		if m.version != i+1 {
			return nil, fmt.Errorf("cannot use migration %s: expected version %d here", m.name, i+1)
		}
	}
	return migrations, nil
}

// migrate applies the migrations that the database has not seen yet, each in its own
// transaction together with its row in meta.schema_migrations.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS, log *slog.Logger) error {
	migrations, err := readMigrations(fsys)
	if err != nil {
		return err
	}
	const bookkeeping = `
		CREATE SCHEMA IF NOT EXISTS meta;
		CREATE TABLE IF NOT EXISTS meta.schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       VARCHAR     NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL
		)`
	if _, err := db.ExecContext(ctx, bookkeeping); err != nil {
		return fmt.Errorf("cannot create meta.schema_migrations: %w", err)
	}
	current, err := SchemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("cannot use this database: its schema version %d is newer than this hedge knows (%d); run a newer hedge", current, len(migrations))
	}
	for _, m := range migrations[current:] {
		if err := applyMigration(ctx, db, m); err != nil {
			return err
		}
		log.Info("migration applied", "version", m.version, "name", m.name)
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin migration %s: %w", m.name, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("cannot apply migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta.schema_migrations VALUES (?, ?, now())`, m.version, m.name); err != nil {
		return fmt.Errorf("cannot record migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit migration %s: %w", m.name, err)
	}
	return nil
}

// SchemaVersion is the highest migration applied to the database, 0 for a new one.
func SchemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var version int
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM meta.schema_migrations`).Scan(&version); err != nil {
		return 0, fmt.Errorf("cannot read the schema version: %w", err)
	}
	return version, nil
}
