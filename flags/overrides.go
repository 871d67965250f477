package flags

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// Bounds of the experience continuity rows (meta.feature_flag_hash_key_overrides),
// which any client holding a project's public token can make: each row is a key of the
// table's primary-key index, which DuckDB holds in memory (about 400 bytes a row with
// ids of 200 characters; some 600,000 such rows filled the default 256 MB).
const (
	// DefaultMaxOverrideRows is Config.MaxOverrideRows when it is zero: the rows one
	// project may hold, some 40 MB of index at most.
	DefaultMaxOverrideRows = 100_000
	// maxOverrideRowsPerRequest is the rows one request may store: two for each of
	// its first 500 continuity flags.
	maxOverrideRowsPerRequest = 1000
)

// HashKeyOverrides are the identifiers that experience continuity keeps for the flags
// of d that have it, when asked for distinctID (and anonID, the anonymous id it came
// from, or ""): when anonID is given, it is first stored for both ids of every such
// flag that has none yet. Only called when d has such a flag. The ids are at most 200
// characters, as the edge cuts them.
//
// The rows are keyed by distinct id (PostHog keys them by person): the answer is the
// distinct id's own row, else the anonymous id's. Rows are never changed once written,
// so a user keeps the identifier of their first anonymous id.
//
// Decision: rows are bounded, and past a bound they are not stored, which is logged
// once per project, while the flags are still answered: a request stores rows for its
// first 500 continuity flags (in the order of d.Flags), and a project holds at most
// Config.MaxOverrideRows rows. A continuity flag whose rows were not stored hashes the
// request's anonymous id, as PostHog does before its rows exist, so the user keeps
// their variant on the requests that send it (posthog-js sends it until one succeeds)
// but not on later ones. Rows are not expired to make room: a row removed would change
// the variant of a user who relies on it, where a row refused changes only those of
// users new to the flag.
func (s *Store) HashKeyOverrides(ctx context.Context, d *Definitions, distinctID, anonID string) (map[string]string, error) {
	var keys []string
	for _, f := range d.Flags {
		if f.Active && f.EnsureExperienceContinuity {
			keys = append(keys, f.Key)
		}
	}
	overrides := map[string]string{}
	if len(keys) == 0 {
		return overrides, nil
	}
	ids := []string{distinctID}
	if anonID != "" && anonID != distinctID {
		ids = append(ids, anonID)
	}
	rows, err := s.readOverrides(ctx, d.Team, ids, keys)
	if err != nil {
		return nil, err
	}
	if anonID != "" {
		var missing []any
		for _, key := range keys {
			for _, id := range ids {
				if _, ok := rows[id][key]; !ok && len(missing) < 4*maxOverrideRowsPerRequest {
					missing = append(missing, d.Team, id, key, anonID)
				}
			}
		}
		if len(missing) > 0 {
			stored, err := s.storeOverrides(ctx, d.Team, missing)
			if err != nil {
				return nil, err
			}
			if stored {
				if rows, err = s.readOverrides(ctx, d.Team, ids, keys); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, key := range keys {
		if hash, ok := rows[distinctID][key]; ok {
			overrides[key] = hash
		} else if hash, ok := rows[anonID][key]; ok {
			overrides[key] = hash
		}
	}
	return overrides, nil
}

// overrideRows are the continuity rows' counts of the projects that stored some since
// the start, read from the table once, to hold each under Config.MaxOverrideRows
// without counting the table at each request.
type overrideRows struct {
	max   int
	mu    sync.Mutex
	teams map[int64]*teamOverrides
}

type teamOverrides struct {
	// lock is held (a value in it) while a request stores the project's rows: one at a
	// time, so that the count stays exact and no two inserts of the same rows conflict,
	// and a request of another project never waits for it.
	lock   chan struct{}
	count  int  // -1 until read from the table
	warned bool // the refused rows were logged
}

func (o *overrideRows) team(team int64) *teamOverrides {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.teams[team]
	if t == nil {
		t = &teamOverrides{lock: make(chan struct{}, 1), count: -1}
		o.teams[team] = t
	}
	return t
}

// storeOverrides stores rows (team, distinct id, flag key, hash key, flattened) that
// were missing, those that are still, and reports false, storing nothing, when the
// project has no room for them (logged once per project).
func (s *Store) storeOverrides(ctx context.Context, team int64, rows []any) (bool, error) {
	t := s.overrides.team(team)
	select {
	case t.lock <- struct{}{}:
	case <-ctx.Done():
		return false, fmt.Errorf("cannot store hash key overrides: %w", ctx.Err())
	}
	defer func() { <-t.lock }()
	if t.count < 0 {
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM meta.feature_flag_hash_key_overrides WHERE team_id = ?`, team).Scan(&t.count); err != nil {
			t.count = -1
			return false, fmt.Errorf("cannot count the hash key overrides of project %d: %w", team, err)
		}
	}
	if t.count+len(rows)/4 > s.overrides.max {
		if !t.warned {
			t.warned = true
			s.log.Warn("a project holds as many experience continuity rows as it may: continuity flags keep the variant of users "+
				"new to them only on requests that send their anonymous id", "team", team, "rows", t.count, "max", s.overrides.max)
		}
		return false, nil
	}
	values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", len(rows)/4), ", ")
	res, err := s.db.ExecContext(ctx, `INSERT INTO meta.feature_flag_hash_key_overrides
		(team_id, distinct_id, feature_flag_key, hash_key) VALUES `+values+` ON CONFLICT DO NOTHING`, rows...)
	if err != nil {
		return false, fmt.Errorf("cannot store hash key overrides: %w", err)
	}
	if inserted, err := res.RowsAffected(); err == nil {
		t.count += int(inserted)
	} else {
		t.count += len(rows) / 4 // over the rows stored, never under
	}
	return true, nil
}

// readOverrides are the stored overrides of the given distinct ids and flag keys, by
// distinct id, then flag key.
func (s *Store) readOverrides(ctx context.Context, team int64, ids, keys []string) (map[string]map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT distinct_id, feature_flag_key, hash_key FROM meta.feature_flag_hash_key_overrides
		WHERE team_id = ? AND list_contains(?::VARCHAR[], distinct_id) AND list_contains(?::VARCHAR[], feature_flag_key)`, team, ids, keys)
	if err != nil {
		return nil, fmt.Errorf("cannot read the hash key overrides of project %d: %w", team, err)
	}
	defer rows.Close()
	byID := map[string]map[string]string{}
	for rows.Next() {
		var id, key, hash string
		if err := rows.Scan(&id, &key, &hash); err != nil {
			return nil, fmt.Errorf("cannot read the hash key overrides of project %d: %w", team, err)
		}
		if byID[id] == nil {
			byID[id] = map[string]string{}
		}
		byID[id][key] = hash
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the hash key overrides of project %d: %w", team, err)
	}
	return byID, nil
}
