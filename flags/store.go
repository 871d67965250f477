package flags

import (
	"context"
	"database/sql"
	"log/slog"
)

// Config is what a Store needs.
type Config struct {
	DB     *sql.DB
	Logger *slog.Logger
}

// Store is the only reader and writer of the flag and cohort tables, with an
// in-memory cache of each project's Definitions that every change through it
// invalidates at once.
type Store struct{}

// NewStore returns the store over cfg.DB.
func NewStore(cfg Config) *Store { return &Store{} }

// Definitions are the project's flags and cohorts as evaluation reads them, from
// memory unless a change made them stale.
func (s *Store) Definitions(ctx context.Context, team int64) (*Definitions, error) {
	panic("unimplemented") // replaced by the store
}

// HashKeyOverrides are the identifiers experience continuity keeps for the flags of
// d that have it, when asked for distinctID (and anonID, the anonymous id it came
// from, or ""): when anonID is given, it is first stored for both ids of every such
// flag that has none yet. Only called when d has such a flag.
func (s *Store) HashKeyOverrides(ctx context.Context, d *Definitions, distinctID, anonID string) (map[string]string, error) {
	panic("unimplemented") // replaced by the store
}
