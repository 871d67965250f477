package flags

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hedge-analytics/hedge/internal/records"
)

// The flags of meta.feature_flags: read for the management API, created and updated
// after the checks of validate.go, under the Store's write lock.

const flagColumns = `SELECT id, team_id, key, name, filters, active, deleted, version, ensure_experience_continuity,
	evaluation_runtime, bucketing_identifier, evaluation_tags, tags, is_remote_configuration, has_encrypted_payloads,
	created_at, created_by, updated_at, last_modified_by FROM meta.feature_flags`

func scanFlag(row records.Scanner) (*Flag, error) {
	var f Flag
	var filters, evaluationTags, tags string
	var createdBy, modifiedBy sql.NullInt64
	if err := row.Scan(&f.ID, &f.TeamID, &f.Key, &f.Name, &filters, &f.Active, &f.Deleted, &f.Version,
		&f.EnsureExperienceContinuity, &f.EvaluationRuntime, &f.BucketingIdentifier, &evaluationTags, &tags,
		&f.IsRemoteConfiguration, &f.HasEncryptedPayloads, &f.CreatedAt, &createdBy, &f.UpdatedAt, &modifiedBy); err != nil {
		return nil, err
	}
	for _, col := range []struct {
		name, text string
		dst        any
	}{{"filters", filters, &f.Filters}, {"evaluation_tags", evaluationTags, &f.EvaluationTags}, {"tags", tags, &f.Tags}} {
		if err := json.Unmarshal([]byte(col.text), col.dst); err != nil {
			return nil, fmt.Errorf("cannot read the %s of feature flag %d: %w", col.name, f.ID, err)
		}
	}
	f.CreatedBy, f.LastModifiedBy = createdBy.Int64, modifiedBy.Int64
	f.CreatedAt, f.UpdatedAt = f.CreatedAt.UTC(), f.UpdatedAt.UTC()
	return &f, nil
}

// FlagFilter narrows a list of flags; zero values match every flag.
type FlagFilter struct {
	// Search matches the key or the name, ignoring case.
	Search string
	Active *bool
	// Type is "boolean" (no variants), "multivariant", "remote_config", or
	// "experiment" (hedge has no experiments: none); anything else matches all.
	Type string
	// EvaluationRuntime keeps the flags of that runtime.
	EvaluationRuntime string
	// CreatedBy keeps the flags of that user.
	CreatedBy int64
}

// where is the condition of f on meta.feature_flags, with its arguments.
func (f FlagFilter) where(team int64) (string, []any) {
	where := ` WHERE team_id = ? AND NOT deleted`
	args := []any{team}
	if f.Search != "" {
		where += ` AND (contains(lower(key), lower(?)) OR contains(lower(name), lower(?)))`
		args = append(args, f.Search, f.Search)
	}
	if f.Active != nil {
		where += ` AND active = ?`
		args = append(args, *f.Active)
	}
	const variants = `coalesce(json_array_length(filters, '$.multivariate.variants'), 0)`
	switch f.Type {
	case "boolean":
		where += ` AND ` + variants + ` = 0`
	case "multivariant":
		where += ` AND ` + variants + ` > 0`
	case "remote_config":
		where += ` AND is_remote_configuration`
	case "experiment":
		where += ` AND false`
	}
	if f.EvaluationRuntime != "" {
		where += ` AND evaluation_runtime = ?`
		args = append(args, f.EvaluationRuntime)
	}
	if f.CreatedBy != 0 {
		where += ` AND created_by = ?`
		args = append(args, f.CreatedBy)
	}
	return where, args
}

// Flags is one page (limit, offset) of the project's flags that are not deleted and
// match f, newest first, and how many match in all.
func (s *Store) Flags(ctx context.Context, team int64, f FlagFilter, limit, offset int) ([]*Flag, int, error) {
	where, args := f.where(team)
	return records.Page(ctx, s.db, fmt.Sprintf("feature flags of project %d", team), scanFlag,
		`SELECT count(*) FROM meta.feature_flags`+where,
		flagColumns+where+` ORDER BY created_at DESC, id DESC`, args, limit, offset)
}

// Flag is the project's flag with the given id, deleted or not (a deleted flag is
// restored by an update); ok is false when the project has none.
func (s *Store) Flag(ctx context.Context, team, id int64) (f *Flag, ok bool, err error) {
	f, err = scanFlag(s.db.QueryRowContext(ctx, flagColumns+` WHERE team_id = ? AND id = ?`, team, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot read feature flag %d of project %d: %w", id, team, err)
	}
	return f, true, nil
}

// LiveFlag is the project's flag that is not deleted with the given key, or with the
// given id when keyOrID is all digits (as PostHog reads it: a key of digits only is
// found by its id); ok is false when there is none.
func (s *Store) LiveFlag(ctx context.Context, team int64, keyOrID string) (f *Flag, ok bool, err error) {
	query, arg := flagColumns+` WHERE team_id = ? AND NOT deleted AND key = ?`, any(keyOrID)
	if strings.Trim(keyOrID, "0123456789") == "" {
		id, err := strconv.ParseInt(keyOrID, 10, 64)
		if err != nil {
			return nil, false, nil // more digits than any id has
		}
		query, arg = flagColumns+` WHERE team_id = ? AND NOT deleted AND id = ?`, id
	}
	f, err = scanFlag(s.db.QueryRowContext(ctx, query, team, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot read feature flag %q of project %d: %w", keyOrID, team, err)
	}
	return f, true, nil
}

// CreateFlag checks and stores a new flag of the project, made by user (0: unknown),
// and returns it as stored. Flags of the project that were deleted with the same key
// are removed: the key is the new flag's.
func (s *Store) CreateFlag(ctx context.Context, team, user int64, ch FlagChange) (*Flag, error) {
	s.write.Lock()
	defer s.write.Unlock()
	p, err := s.project(ctx, team)
	if err != nil {
		return nil, err
	}
	f, err := ch.apply(nil, p)
	if err != nil {
		return nil, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot begin creating feature flag %q: %w", f.Key, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta.feature_flags WHERE team_id = ? AND key = ? AND deleted`, team, f.Key); err != nil {
		return nil, fmt.Errorf("cannot remove the deleted feature flags %q of project %d: %w", f.Key, team, err)
	}
	at := now()
	var id int64
	err = tx.QueryRowContext(ctx, `INSERT INTO meta.feature_flags (team_id, key, name, filters, active, deleted, version,
		ensure_experience_continuity, evaluation_runtime, bucketing_identifier, evaluation_tags, tags,
		is_remote_configuration, has_encrypted_payloads, created_at, created_by, updated_at, last_modified_by)
		VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		team, f.Key, f.Name, mustJSON(f.Filters), f.Active, f.Deleted, f.EnsureExperienceContinuity, f.EvaluationRuntime,
		f.BucketingIdentifier, mustJSON(f.EvaluationTags), mustJSON(f.Tags), f.IsRemoteConfiguration, f.HasEncryptedPayloads,
		at, nullableUser(user), at, nullableUser(user)).Scan(&id)
	if err != nil {
		return nil, fmt.Errorf("cannot create feature flag %q in project %d: %w", f.Key, team, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("cannot commit feature flag %q: %w", f.Key, err)
	}
	s.changed(team)
	created, _, err := s.Flag(ctx, team, id)
	return created, err
}

// flagFieldValues are a flag's fields as the API names them, each as comparable text:
// what an update compares to tell which fields it changes.
func flagFieldValues(f *Flag) map[string]string {
	return map[string]string{
		"key":                          f.Key,
		"name":                         f.Name,
		"filters":                      mustJSON(f.Filters),
		"active":                       strconv.FormatBool(f.Active),
		"deleted":                      strconv.FormatBool(f.Deleted),
		"ensure_experience_continuity": strconv.FormatBool(f.EnsureExperienceContinuity),
		"evaluation_runtime":           f.EvaluationRuntime,
		"bucketing_identifier":         f.BucketingIdentifier,
		"tags":                         mustJSON(f.Tags),
		"evaluation_tags":              mustJSON(f.EvaluationTags),
		"is_remote_configuration":      strconv.FormatBool(f.IsRemoteConfiguration),
		"has_encrypted_payloads":       strconv.FormatBool(f.HasEncryptedPayloads),
	}
}

// UpdateFlag checks and applies a change to the project's flag with the given id
// (deleted or not), made by user, and returns the flag as stored; ok is false when
// the project has no such flag. Every update makes a new version, even one that
// changes nothing. An update made from an older version (ch.Version) that changes a
// field changed since that version is refused with a ConflictError.
func (s *Store) UpdateFlag(ctx context.Context, team, id, user int64, ch FlagChange) (f *Flag, ok bool, err error) {
	s.write.Lock()
	defer s.write.Unlock()
	current, ok, err := s.Flag(ctx, team, id)
	if err != nil || !ok {
		return nil, ok, err
	}
	p, err := s.project(ctx, team)
	if err != nil {
		return nil, true, err
	}
	next, err := ch.apply(current, p)
	if err != nil {
		return nil, true, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, true, fmt.Errorf("cannot begin updating feature flag %d: %w", id, err)
	}
	defer tx.Rollback()
	var versionsText string
	if err := tx.QueryRowContext(ctx, `SELECT field_versions FROM meta.feature_flags WHERE id = ?`, id).Scan(&versionsText); err != nil {
		return nil, true, fmt.Errorf("cannot read the field versions of feature flag %d: %w", id, err)
	}
	var fieldVersions map[string]int
	if err := json.Unmarshal([]byte(versionsText), &fieldVersions); err != nil {
		return nil, true, fmt.Errorf("cannot read the field versions of feature flag %d: %w", id, err)
	}
	if fieldVersions == nil {
		fieldVersions = map[string]int{}
	}
	version := current.Version + 1
	before, after := flagFieldValues(current), flagFieldValues(next)
	for field, value := range after {
		if value == before[field] {
			continue
		}
		if ch.Version != nil && *ch.Version != current.Version && fieldVersions[field] > *ch.Version {
			return nil, true, &ConflictError{LastModifiedBy: current.LastModifiedBy}
		}
		fieldVersions[field] = version
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta.feature_flags SET key = ?, name = ?, filters = ?, active = ?, deleted = ?,
		version = ?, ensure_experience_continuity = ?, evaluation_runtime = ?, bucketing_identifier = ?, evaluation_tags = ?,
		tags = ?, is_remote_configuration = ?, has_encrypted_payloads = ?, field_versions = ?, updated_at = ?,
		last_modified_by = ? WHERE id = ?`,
		next.Key, next.Name, mustJSON(next.Filters), next.Active, next.Deleted, version, next.EnsureExperienceContinuity,
		next.EvaluationRuntime, next.BucketingIdentifier, mustJSON(next.EvaluationTags), mustJSON(next.Tags),
		next.IsRemoteConfiguration, next.HasEncryptedPayloads, mustJSON(fieldVersions), now(), nullableUser(user), id); err != nil {
		return nil, true, fmt.Errorf("cannot update feature flag %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, true, fmt.Errorf("cannot commit feature flag %d: %w", id, err)
	}
	s.changed(team)
	f, ok, err = s.Flag(ctx, team, id)
	return f, ok, err
}
