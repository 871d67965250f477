package flags

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hedge-analytics/hedge/internal/records"
)

// The cohorts of meta.cohorts: read for the management API and for the definitions,
// created and updated after the checks of validate.go, under the Store's write lock.

const cohortColumns = `SELECT id, team_id, name, description, filters, is_static, deleted, version, created_at, created_by,
	updated_at FROM meta.cohorts`

func scanCohort(row records.Scanner) (*Cohort, error) {
	var c Cohort
	var filters string
	var createdBy sql.NullInt64
	if err := row.Scan(&c.ID, &c.TeamID, &c.Name, &c.Description, &filters, &c.IsStatic, &c.Deleted, &c.Version,
		&c.CreatedAt, &createdBy, &c.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(filters), &c.Filters); err != nil {
		return nil, fmt.Errorf("cannot read the filters of cohort %d: %w", c.ID, err)
	}
	c.CreatedBy = createdBy.Int64
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return &c, nil
}

// Cohorts is one page (limit, offset) of the project's cohorts that are not deleted,
// newest first, and how many there are in all; search keeps those whose name
// contains it, ignoring case.
func (s *Store) Cohorts(ctx context.Context, team int64, search string, limit, offset int) ([]*Cohort, int, error) {
	where := ` WHERE team_id = ? AND NOT deleted`
	args := []any{team}
	if search != "" {
		where += ` AND contains(lower(name), lower(?))`
		args = append(args, search)
	}
	return records.Page(ctx, s.db, fmt.Sprintf("cohorts of project %d", team), scanCohort,
		`SELECT count(*) FROM meta.cohorts`+where, cohortColumns+where+` ORDER BY created_at DESC, id DESC`, args, limit, offset)
}

// Cohort is the project's cohort with the given id, deleted or not; ok is false when
// the project has none.
func (s *Store) Cohort(ctx context.Context, team, id int64) (c *Cohort, ok bool, err error) {
	c, err = scanCohort(s.db.QueryRowContext(ctx, cohortColumns+` WHERE team_id = ? AND id = ?`, team, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot read cohort %d of project %d: %w", id, team, err)
	}
	return c, true, nil
}

// CreateCohort checks and stores a new cohort of the project, made by user (0:
// unknown), and returns it as stored.
func (s *Store) CreateCohort(ctx context.Context, team, user int64, ch CohortChange) (*Cohort, error) {
	s.write.Lock()
	defer s.write.Unlock()
	cohorts, err := s.liveCohorts(ctx, team)
	if err != nil {
		return nil, err
	}
	c, err := ch.apply(nil, &projectView{cohorts: cohorts})
	if err != nil {
		return nil, err
	}
	at := now()
	var id int64
	if err := s.db.QueryRowContext(ctx, `INSERT INTO meta.cohorts (team_id, name, description, filters, is_static, deleted,
		version, created_at, created_by, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?) RETURNING id`,
		team, c.Name, c.Description, mustJSON(c.Filters), c.IsStatic, c.Deleted, at, nullableUser(user), at).Scan(&id); err != nil {
		return nil, fmt.Errorf("cannot create a cohort in project %d: %w", team, err)
	}
	s.changed(team)
	created, _, err := s.Cohort(ctx, team, id)
	return created, err
}

// UpdateCohort checks and applies a change to the project's cohort with the given id
// (deleted or not) and returns it as stored; ok is false when the project has no such
// cohort. The flags that use it see the change at once.
func (s *Store) UpdateCohort(ctx context.Context, team, id int64, ch CohortChange) (c *Cohort, ok bool, err error) {
	s.write.Lock()
	defer s.write.Unlock()
	current, ok, err := s.Cohort(ctx, team, id)
	if err != nil || !ok {
		return nil, ok, err
	}
	cohorts, err := s.liveCohorts(ctx, team)
	if err != nil {
		return nil, true, err
	}
	next, err := ch.apply(current, &projectView{cohorts: cohorts})
	if err != nil {
		return nil, true, err
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE meta.cohorts SET name = ?, description = ?, filters = ?, is_static = ?,
		deleted = ?, version = version + 1, updated_at = ? WHERE id = ?`,
		next.Name, next.Description, mustJSON(next.Filters), next.IsStatic, next.Deleted, now(), id); err != nil {
		return nil, true, fmt.Errorf("cannot update cohort %d: %w", id, err)
	}
	s.changed(team)
	c, ok, err = s.Cohort(ctx, team, id)
	return c, ok, err
}
