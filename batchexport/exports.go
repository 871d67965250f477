package batchexport

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

// Export is a batch export as stored: what it exports, how often, and where to,
// its destination's secrets included. The management API validates what users send
// into an Export; the Runner keeps it.
type Export struct {
	ID     string
	TeamID int64
	Name   string
	// Model is ExportEvents or ExportPersons of the warehouse.
	Model           string
	DestinationType string
	// Config is the destination's config, secrets included (SecretFields names them).
	Config   map[string]any
	Interval string
	Paused   bool
	// LastPausedAt is when the export was last paused; Pause sets it.
	LastPausedAt   *time.Time
	StartAt, EndAt *time.Time
	// Filters is the JSON text of the export's property filters, or nil for none.
	Filters       json.RawMessage
	CreatedAt     time.Time
	LastUpdatedAt time.Time
}

const exportColumns = `SELECT b.id, b.team_id, b.name, b.model, b.destination_type, b.destination_config,
	b."interval", b.paused, b.last_paused_at, b.start_at, b.end_at, b.filters, b.created_at, b.last_updated_at
	FROM meta.batch_exports b`

func scanExport(row records.Scanner) (Export, error) {
	var e Export
	var id uuid.UUID
	var config string
	var filters sql.NullString
	if err := row.Scan(&id, &e.TeamID, &e.Name, &e.Model, &e.DestinationType, &config, &e.Interval, &e.Paused,
		&e.LastPausedAt, &e.StartAt, &e.EndAt, &filters, &e.CreatedAt, &e.LastUpdatedAt); err != nil {
		return e, err
	}
	e.ID = id.String()
	if err := json.Unmarshal([]byte(config), &e.Config); err != nil {
		return e, fmt.Errorf("cannot read the destination of batch export %s: %w", e.ID, err)
	}
	if e.Config == nil {
		e.Config = map[string]any{}
	}
	if filters.Valid {
		e.Filters = json.RawMessage(filters.String)
	}
	e.LastPausedAt, e.StartAt, e.EndAt = utc(e.LastPausedAt), utc(e.StartAt), utc(e.EndAt)
	e.CreatedAt, e.LastUpdatedAt = e.CreatedAt.UTC(), e.LastUpdatedAt.UTC()
	return e, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ofTeams is the condition on meta.batch_exports b for the exports of the given
// projects that are not deleted; its one argument is the list of team ids.
const ofTeams = `NOT b.deleted AND list_contains(?::BIGINT[], b.team_id)`

// teamList is a team id list as a query argument: never nil, so that no team matches
// an empty list.
func teamList(teams []int64) []int64 {
	if teams == nil {
		return []int64{}
	}
	return teams
}

// Exports is one page (limit, offset) of the exports of the given projects, newest
// first, and how many there are in all.
func (r *Runner) Exports(ctx context.Context, teams []int64, limit, offset int) ([]Export, int, error) {
	return records.Page(ctx, r.db, "batch exports", scanExport,
		`SELECT count(*) FROM meta.batch_exports b WHERE `+ofTeams,
		exportColumns+` WHERE `+ofTeams+` ORDER BY b.created_at DESC, b.id DESC`, []any{teamList(teams)}, limit, offset)
}

// Export is the export with the given id if it belongs to one of the given projects
// and is not deleted; ok is false otherwise.
func (r *Runner) Export(ctx context.Context, teams []int64, id string) (e Export, ok bool, err error) {
	parsed, err := uuid.Parse(id)
	if err != nil {
		return e, false, nil
	}
	e, err = scanExport(r.db.QueryRowContext(ctx, exportColumns+` WHERE b.id = ? AND `+ofTeams, parsed, teamList(teams)))
	if errors.Is(err, sql.ErrNoRows) {
		return e, false, nil
	}
	if err != nil {
		return e, false, fmt.Errorf("cannot read batch export %s: %w", id, err)
	}
	return e, true, nil
}

// Create stores a new export and fills in its id and times. The times are the
// Runner's: the first window an export runs is the one its creation falls in. An
// export created paused has been paused since it was created, which is where an
// unpause resumes from.
func (r *Runner) Create(ctx context.Context, e *Export) error {
	now := r.Now().UTC()
	e.ID, e.CreatedAt, e.LastUpdatedAt = uuid.Must(uuid.NewV7()).String(), now, now
	if e.Paused {
		e.LastPausedAt = &now
	}
	config, err := json.Marshal(e.Config)
	if err != nil {
		return fmt.Errorf("cannot encode the destination of batch export %q: %w", e.Name, err)
	}
	if _, err := r.db.ExecContext(ctx, `
		INSERT INTO meta.batch_exports (id, team_id, name, model, destination_type, destination_config, "interval",
			paused, last_paused_at, start_at, end_at, filters, created_at, last_updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.TeamID, e.Name, e.Model, e.DestinationType, string(config), e.Interval,
		e.Paused, e.LastPausedAt, e.StartAt, e.EndAt, nullableText(e.Filters), now, now); err != nil {
		return fmt.Errorf("cannot create batch export %q for project %d: %w", e.Name, e.TeamID, err)
	}
	return nil
}

// Update stores what an update may change of an export: its name, model, destination
// config, interval, bounds and filters. Pausing is SetPaused's.
func (r *Runner) Update(ctx context.Context, e Export) error {
	config, err := json.Marshal(e.Config)
	if err != nil {
		return fmt.Errorf("cannot encode the destination of batch export %s: %w", e.ID, err)
	}
	if _, err := r.db.ExecContext(ctx, `UPDATE meta.batch_exports SET name = ?, model = ?, destination_config = ?,
		"interval" = ?, start_at = ?, end_at = ?, filters = ?, last_updated_at = now() WHERE id = ?`,
		e.Name, e.Model, string(config), e.Interval, e.StartAt, e.EndAt, nullableText(e.Filters), e.ID); err != nil {
		return fmt.Errorf("cannot update batch export %s: %w", e.ID, err)
	}
	return nil
}

func nullableText(j json.RawMessage) *string {
	if len(j) == 0 {
		return nil
	}
	s := string(j)
	return &s
}
