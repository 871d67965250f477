package flags

import (
	"context"
	"fmt"
	"strings"
)

// insertAttempts is how many times the overrides of one request are inserted before
// giving up: a concurrent request inserting the same rows makes an attempt fail.
const insertAttempts = 3

// HashKeyOverrides are the identifiers that experience continuity keeps for the flags
// of d that have it, when asked for distinctID (and anonID, the anonymous id it came
// from, or ""): when anonID is given, it is first stored for both ids of every such
// flag that has none yet. Only called when d has such a flag.
//
// The rows are keyed by distinct id (PostHog keys them by person): the answer is the
// distinct id's own row, else the anonymous id's. Rows are never changed once written,
// so a user keeps the identifier of their first anonymous id.
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
		for _, id := range ids {
			for _, key := range keys {
				if _, ok := rows[id][key]; !ok {
					missing = append(missing, d.Team, id, key, anonID)
				}
			}
		}
		if len(missing) > 0 {
			if err := s.insertOverrides(ctx, missing); err != nil {
				return nil, err
			}
			if rows, err = s.readOverrides(ctx, d.Team, ids, keys); err != nil {
				return nil, err
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

// insertOverrides inserts rows (team, distinct id, flag key, hash key, flattened)
// that are not there yet. Another request inserting the same rows at once makes the
// insert fail rather than wait; the next attempt finds them there.
func (s *Store) insertOverrides(ctx context.Context, rows []any) error {
	values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", len(rows)/4), ", ")
	var err error
	for range insertAttempts {
		if _, err = s.db.ExecContext(ctx, `INSERT INTO meta.feature_flag_hash_key_overrides
			(team_id, distinct_id, feature_flag_key, hash_key) VALUES `+values+` ON CONFLICT DO NOTHING`, rows...); err == nil {
			return nil
		}
	}
	return fmt.Errorf("cannot store hash key overrides: %w", err)
}
