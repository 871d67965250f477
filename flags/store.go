package flags

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hedge-analytics/hedge/internal/records"
	"github.com/hedge-analytics/hedge/warehouse"
)

// DefaultMaxProjects is Config.MaxProjects when it is zero.
const DefaultMaxProjects = 10_000

// Config is what a Store needs.
type Config struct {
	DB *sql.DB
	// GroupTypes are a project's group types, which the warehouse keeps: the local
	// evaluation definitions carry them. Nil: no project has group types (tests).
	GroupTypes func(ctx context.Context, team int64) ([]warehouse.GroupType, error)
	// MaxProjects is how many projects' definitions the cache holds at most (default
	// DefaultMaxProjects); past it the least recently read are dropped, to be read
	// again from the database when next asked for.
	MaxProjects int
	// MaxOverrideRows is how many experience continuity rows one project may hold
	// (default DefaultMaxOverrideRows); see HashKeyOverrides.
	MaxOverrideRows int
	Logger          *slog.Logger
}

// Store is the only reader and writer of the flag and cohort tables, with an
// in-memory cache of each project's Definitions that every change through it
// invalidates at once.
//
// Writes are serialized by one lock: each checks what it is about to change against
// the rest of the project (keys unique among live flags, versions, dependencies
// between flags, cohorts in use), which must not change under it.
type Store struct {
	db         *sql.DB
	groupTypes func(ctx context.Context, team int64) ([]warehouse.GroupType, error)
	log        *slog.Logger
	write      sync.Mutex
	cache      *definitionsCache
	overrides  overrideRows
}

// NewStore returns the store over cfg.DB.
func NewStore(cfg Config) *Store {
	if cfg.MaxProjects <= 0 {
		cfg.MaxProjects = DefaultMaxProjects
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.GroupTypes == nil {
		cfg.GroupTypes = func(context.Context, int64) ([]warehouse.GroupType, error) { return nil, nil }
	}
	if cfg.MaxOverrideRows <= 0 {
		cfg.MaxOverrideRows = DefaultMaxOverrideRows
	}
	return &Store{db: cfg.DB, groupTypes: cfg.GroupTypes, log: cfg.Logger, cache: newDefinitionsCache(cfg.MaxProjects),
		overrides: overrideRows{max: cfg.MaxOverrideRows, teams: map[int64]*teamOverrides{}}}
}

// Definitions are the project's flags and cohorts as evaluation reads them, from
// memory unless a change made them stale.
func (s *Store) Definitions(ctx context.Context, team int64) (*Definitions, error) {
	e, err := s.cache.get(ctx, team, s.loadDefinitions)
	if err != nil {
		return nil, err
	}
	return e.defs, nil
}

// changed drops the project's cached definitions after a change to its flags or
// cohorts committed: the next read of them is the database's.
func (s *Store) changed(team int64) { s.cache.invalidate(team) }

// project reads what validation checks a change of the project against.
func (s *Store) project(ctx context.Context, team int64) (*projectView, error) {
	flags, err := records.All(ctx, s.db, fmt.Sprintf("feature flags of project %d", team), scanFlag,
		flagColumns+` WHERE team_id = ? AND NOT deleted ORDER BY key`, team)
	if err != nil {
		return nil, err
	}
	cohorts, err := s.liveCohorts(ctx, team)
	if err != nil {
		return nil, err
	}
	return &projectView{flags: flags, cohorts: cohorts}, nil
}

// liveCohorts are the project's cohorts that are not deleted, by id.
func (s *Store) liveCohorts(ctx context.Context, team int64) (map[int64]*Cohort, error) {
	list, err := records.All(ctx, s.db, fmt.Sprintf("cohorts of project %d", team), scanCohort,
		cohortColumns+` WHERE team_id = ? AND NOT deleted`, team)
	if err != nil {
		return nil, err
	}
	cohorts := make(map[int64]*Cohort, len(list))
	for _, c := range list {
		cohorts[c.ID] = c
	}
	return cohorts, nil
}

// nullableUser is a user id column: NULL for 0, no known user.
func nullableUser(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// mustJSON encodes a value of this package's types for a JSON text column.
func mustJSON(v any) string {
	text, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("BUG: cannot encode %T: %v", v, err))
	}
	return string(text)
}

// now is the time a change is stored at, in UTC.
func now() time.Time { return time.Now().UTC() }
