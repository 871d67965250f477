package admin

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

// tileRecord is a dashboard tile: an insight with its result, or a text card.
type tileRecord struct {
	ID               int64          `json:"id"`
	Insight          *insightRecord `json:"insight"`
	Text             *textRecord    `json:"text"`
	Layouts          rawJSON        `json:"layouts"`
	Color            *string        `json:"color"`
	FiltersOverrides rawJSON        `json:"filters_overrides"`
	Order            int            `json:"order"`
	LastRefresh      *time.Time     `json:"last_refresh"`
	IsCached         bool           `json:"is_cached"`
	// Error is why the tile's insight has no result, as PostHog's tiles carry it; absent
	// when it has one. The insight's query_error says the same.
	Error *tileError `json:"error,omitempty"`
}

// tileError is why a tile's insight could not be computed: type is the API error's
// type (validation_error for a query that may not run, server_error for a failure of
// hedge's), message its detail, or for a failure of hedge's a message that holds none.
type tileError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// tileFailed is the message of a tile whose query failed for a reason of hedge's, which
// the log holds.
const tileFailed = "The insight's query failed on the server; the other tiles are not affected."

type textRecord struct {
	ID             int64       `json:"id"`
	Body           string      `json:"body"`
	CreatedBy      *userRecord `json:"created_by"`
	LastModifiedBy *userRecord `json:"last_modified_by"`
	LastModifiedAt time.Time   `json:"last_modified_at"`
	Team           int64       `json:"team"`
}

// tileRow is a tile as stored: its record, and the ids its insight and its text's
// authors are read by.
type tileRow struct {
	tileRecord
	insightID               *int64
	textCreator, textEditor *int64
}

// tiles are the dashboard's live tiles in PostHog's order: by the small layout's y, then
// x (a tile without one last), each insight with its computed result.
func (a *API) tiles(ctx context.Context, d dashboardRow, override rawJSON) ([]tileRecord, error) {
	rows, err := a.db.QueryContext(ctx, `SELECT t.id, t.insight_id, t.text_id, t.layouts, t.color, t.filters_overrides,
		x.body, x.created_by, x.last_modified_by, x.last_modified_at
		FROM meta.dashboard_tiles t LEFT JOIN meta.texts x ON x.id = t.text_id
		WHERE t.dashboard_id = ? AND NOT t.deleted`, d.id)
	if err != nil {
		return nil, fmt.Errorf("cannot read the tiles of dashboard %d: %w", d.id, err)
	}
	defer rows.Close()
	var found []tileRow
	var userIDs []int64
	for rows.Next() {
		var t tileRow
		var textID *int64
		var body sql.NullString
		var modified sql.NullTime
		if err := rows.Scan(&t.ID, &t.insightID, &textID, &t.Layouts, &t.Color, &t.FiltersOverrides,
			&body, &t.textCreator, &t.textEditor, &modified); err != nil {
			return nil, fmt.Errorf("cannot read the tiles of dashboard %d: %w", d.id, err)
		}
		if textID != nil {
			t.Text = &textRecord{ID: *textID, Body: body.String, LastModifiedAt: modified.Time.UTC(), Team: d.team}
			for _, id := range []*int64{t.textCreator, t.textEditor} {
				if id != nil {
					userIDs = append(userIDs, *id)
				}
			}
		}
		found = append(found, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the tiles of dashboard %d: %w", d.id, err)
	}
	users, err := a.usersByID(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	for i := range found {
		if t := &found[i]; t.Text != nil {
			t.Text.CreatedBy, t.Text.LastModifiedBy = userOf(users, t.textCreator), userOf(users, t.textEditor)
		}
	}
	// The insights' results are computed as many at a time as a project's queries may
	// run (warehouse.ProjectQueries), so that a cold dashboard takes about the time of
	// its slowest tiles, not of all of them in a row. A tile's query that fails fails
	// that tile alone (tileInsight); the first other failure (the request ending, the
	// metadata unreadable) stops the rest.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	shown := make([]bool, len(found))
	running := make(chan struct{}, warehouse.ProjectQueries)
	var computing sync.WaitGroup
	for i := range found {
		t := &found[i]
		if t.insightID == nil {
			shown[i] = true
			continue
		}
		select {
		case running <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		computing.Go(func() {
			defer func() { <-running }()
			ok, err := a.tileInsight(ctx, d, t, override)
			if err != nil {
				cancel(err)
			}
			shown[i] = ok
		})
	}
	computing.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	tiles := make([]tileRecord, 0, len(found))
	for i, t := range found {
		if shown[i] {
			tiles = append(tiles, t.tileRecord)
		}
	}
	slices.SortStableFunc(tiles, func(x, y tileRecord) int {
		xy, xx := smallLayout(x.Layouts)
		yy, yx := smallLayout(y.Layouts)
		return cmp.Or(cmp.Compare(xy, yy), cmp.Compare(xx, yx), cmp.Compare(x.ID, y.ID))
	})
	for i := range tiles {
		tiles[i].Order = i
	}
	return tiles, nil
}

// tileInsight fills tile t of dashboard d with its insight and the insight's result
// under the dashboard's filters, the tile's and override; false when the insight was
// deleted on its own, which leaves the tile empty and not shown.
func (a *API) tileInsight(ctx context.Context, d dashboardRow, t *tileRow, override rawJSON) (bool, error) {
	insight, err := a.insight(ctx, d.team, *t.insightID, false)
	if errors.Is(err, errInsightNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// A tile's filters_overrides stored unreadable fail its own result only.
	filters, err := mergeFilters("filters_overrides", d.filters, t.FiltersOverrides, override)
	var query rawJSON
	if err == nil {
		query, err = filters.apply(insight.Query)
	}
	refused, err := a.computeResult(ctx, d.team, &insight, query, err)
	switch {
	case err != nil && ctx.Err() != nil:
		return false, err
	case err != nil:
		// The tile's own query failed: the dashboard shows it with the error, and its
		// other tiles, as PostHog computes tiles independently.
		a.log.Error("cannot compute a dashboard tile", "dashboard", d.id, "tile", t.ID, "insight", insight.ID, "err", err)
		message := tileFailed
		insight.QueryError = &message
		t.Error = &tileError{Type: "server_error", Message: message}
	case refused != nil:
		t.Error = &tileError{Type: refused.Type, Message: refused.Detail}
	}
	t.Insight, t.LastRefresh, t.IsCached = &insight, insight.LastRefresh, insight.IsCached
	return true, nil
}

func userOf(users map[int64]userRecord, id *int64) *userRecord {
	if id == nil {
		return nil
	}
	if u, ok := users[*id]; ok {
		return &u
	}
	return nil
}

// smallLayout is the y and x of a tile's "sm" layout, 100 for what is missing.
func smallLayout(layouts rawJSON) (int, int) {
	var l struct {
		SM *struct{ X, Y *int } `json:"sm"`
	}
	y, x := 100, 100
	if json.Unmarshal(layouts, &l) == nil && l.SM != nil {
		if l.SM.Y != nil {
			y = *l.SM.Y
		}
		if l.SM.X != nil {
			x = *l.SM.X
		}
	}
	return y, x
}

// tileEdit is one item of PATCH dashboard {"tiles": [...]}, as PostHog reads it: without
// an id and with a text, a new text card; with an id, changes to that tile. A tile's
// insight is never changed this way.
type tileEdit struct {
	ID   *int64 `json:"id"`
	Text *struct {
		Body *string `json:"body"`
	} `json:"text"`
	Layouts          optional[rawJSON] `json:"layouts"`
	Color            optional[string]  `json:"color"`
	FiltersOverrides optional[rawJSON] `json:"filters_overrides"`
	Deleted          optional[bool]    `json:"deleted"`
}

// errTextNotEditable refuses to change a text card that is also on a dashboard the
// caller may not edit (mayEditContent), in the words of errInsightNotEditable.
var errTextNotEditable = errPermissionDenied("This text card is on a dashboard that can only be edited by its owner, " +
	"team members invited to editing the dashboard, and project admins.")

// The longest text card body and tile color (PostHog's model limits).
const (
	maxTextBody  = 4000
	maxTileColor = 400
)

// editTiles applies the edits of PATCH dashboard {"tiles": [...]} to the dashboard,
// which the caller may edit. A text card's body is the card's, which may be on other
// dashboards too (a shallow copy shares it): changing it needs edit rights on every
// one of them (mayEditContent).
func (a *API) editTiles(ctx context.Context, tx *sql.Tx, pr project, dashboardID, userID int64, edits []tileEdit) error {
	team := pr.id
	for i, e := range edits {
		attr := fmt.Sprintf("tiles__%d", i)
		if e.Text != nil && e.Text.Body != nil && len([]rune(*e.Text.Body)) > maxTextBody {
			return errMaxLength(attr+"__text__body", 4000)
		}
		if e.Layouts.Set && !e.Layouts.Null && !isJSONObject(e.Layouts.Value) {
			return errValidation(attr+"__layouts", "invalid_input", "Layouts must be a dictionary.")
		}
		if e.Color.Set && len([]rune(e.Color.Value)) > maxTileColor {
			return errMaxLength(attr+"__color", 400)
		}
		if e.FiltersOverrides.Set && !e.FiltersOverrides.Null && !isJSONObject(e.FiltersOverrides.Value) {
			return errValidation(attr+"__filters_overrides", "invalid_input", "Filters overrides must be a dictionary.")
		}
		if e.ID == nil {
			if e.Text == nil || e.Text.Body == nil {
				return errValidation(attr, "invalid_input", "A new tile needs a text with a body; insights join dashboards through the insight's dashboards field.")
			}
			layouts := "{}"
			if e.Layouts.Set && !e.Layouts.Null {
				layouts = string(e.Layouts.Value)
			}
			var color *string
			if e.Color.Set && !e.Color.Null {
				color = &e.Color.Value
			}
			if err := insertTextTile(ctx, tx, team, dashboardID, userID, *e.Text.Body, layouts, color); err != nil {
				return err
			}
			continue
		}
		var textID *int64
		err := tx.QueryRowContext(ctx, `SELECT text_id FROM meta.dashboard_tiles WHERE id = ? AND dashboard_id = ?`, *e.ID, dashboardID).Scan(&textID)
		if errors.Is(err, sql.ErrNoRows) {
			return errValidation(attr+"__id", "invalid_input", fmt.Sprintf("Tile %d is not on this dashboard.", *e.ID))
		}
		if err != nil {
			return fmt.Errorf("cannot read tile %d: %w", *e.ID, err)
		}
		sets := map[string]any{}
		if e.Layouts.Set {
			sets["layouts"] = cmp.Or(string(e.Layouts.Value), "{}")
		}
		if e.Color.Set {
			if e.Color.Null {
				sets["color"] = nil
			} else {
				sets["color"] = e.Color.Value
			}
		}
		if e.FiltersOverrides.Set {
			sets["filters_overrides"] = cmp.Or(string(e.FiltersOverrides.Value), "{}")
		}
		if e.Deleted.Set {
			sets["deleted"] = e.Deleted.Value
		}
		if err := updateColumns(ctx, tx, "meta.dashboard_tiles", *e.ID, sets); err != nil {
			return err
		}
		if e.Text != nil && e.Text.Body != nil && textID != nil {
			if ok, err := a.mayEditContent(ctx, tx, pr, userID, textContent, *textID); err != nil {
				return err
			} else if !ok {
				return errTextNotEditable
			}
			if _, err := tx.ExecContext(ctx, `UPDATE meta.texts SET body = ?, last_modified_by = ?, last_modified_at = now() WHERE id = ?`,
				*e.Text.Body, userID, *textID); err != nil {
				return fmt.Errorf("cannot update text %d: %w", *textID, err)
			}
		}
	}
	return nil
}

func insertTextTile(ctx context.Context, q querier, team, dashboardID, userID int64, body, layouts string, color *string) error {
	var textID int64
	if err := q.QueryRowContext(ctx, `INSERT INTO meta.texts (team_id, body, created_by, last_modified_by, last_modified_at)
		VALUES (?, ?, ?, ?, now()) RETURNING id`, team, body, userID, userID).Scan(&textID); err != nil {
		return fmt.Errorf("cannot create a text card: %w", err)
	}
	return insertTile(ctx, q, dashboardID, nil, &textID, layouts, color, "{}")
}

func insertTile(ctx context.Context, q querier, dashboardID int64, insightID, textID *int64, layouts string, color *string, filtersOverrides string) error {
	if _, err := q.ExecContext(ctx, `INSERT INTO meta.dashboard_tiles (dashboard_id, insight_id, text_id, layouts, color, filters_overrides)
		VALUES (?, ?, ?, ?, ?, ?)`, dashboardID, insightID, textID, layouts, color, filtersOverrides); err != nil {
		return fmt.Errorf("cannot add a tile to dashboard %d: %w", dashboardID, err)
	}
	return nil
}

// addTemplateTiles creates a template's insights and text cards on the dashboard.
func addTemplateTiles(ctx context.Context, tx *sql.Tx, team, dashboardID, userID int64, t *dashboardTemplate) error {
	for _, tile := range t.Tiles {
		layouts := "{}"
		if len(tile.Layouts) > 0 {
			layouts = string(tile.Layouts)
		}
		switch tile.Type {
		case "TEXT":
			if err := insertTextTile(ctx, tx, team, dashboardID, userID, tile.Body, layouts, tile.Color); err != nil {
				return err
			}
		case "INSIGHT":
			insightID, err := insertInsight(ctx, tx, team, userID, newInsight{name: tile.Name, description: tile.Description, query: string(tile.Query)})
			if err != nil {
				return err
			}
			if err := insertTile(ctx, tx, dashboardID, &insightID, nil, layouts, tile.Color, "{}"); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyTiles puts the live tiles of dashboard from on dashboard to: pointing at the same
// insights and text cards, or at copies of them when deep (insight names get " (Copy)").
func copyTiles(ctx context.Context, tx *sql.Tx, team, from, to, userID int64, deep bool) error {
	rows, err := tx.QueryContext(ctx, `SELECT t.insight_id, t.text_id, t.layouts, t.color, t.filters_overrides
		FROM meta.dashboard_tiles t LEFT JOIN meta.insights i ON i.id = t.insight_id
		WHERE t.dashboard_id = ? AND NOT t.deleted AND NOT coalesce(i.deleted, false) ORDER BY t.id`, from)
	if err != nil {
		return fmt.Errorf("cannot read the tiles of dashboard %d: %w", from, err)
	}
	type tile struct {
		insightID, textID         *int64
		layouts, filtersOverrides string
		color                     *string
	}
	var tiles []tile
	for rows.Next() {
		var t tile
		if err := rows.Scan(&t.insightID, &t.textID, &t.layouts, &t.color, &t.filtersOverrides); err != nil {
			rows.Close()
			return fmt.Errorf("cannot read the tiles of dashboard %d: %w", from, err)
		}
		tiles = append(tiles, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read the tiles of dashboard %d: %w", from, err)
	}
	for _, t := range tiles {
		if deep {
			var err error
			if t.insightID != nil {
				t.insightID, err = copyInsight(ctx, tx, team, *t.insightID, userID)
			} else if t.textID != nil {
				t.textID, err = copyText(ctx, tx, *t.textID, userID)
			}
			if err != nil {
				return err
			}
		}
		if err := insertTile(ctx, tx, to, t.insightID, t.textID, t.layouts, t.color, t.filtersOverrides); err != nil {
			return err
		}
	}
	return nil
}

func copyText(ctx context.Context, tx *sql.Tx, id, userID int64) (*int64, error) {
	var copied int64
	err := tx.QueryRowContext(ctx, `INSERT INTO meta.texts (team_id, body, created_by, last_modified_by, last_modified_at)
		SELECT team_id, body, ?, ?, now() FROM meta.texts WHERE id = ? RETURNING id`, userID, userID, id).Scan(&copied)
	if err != nil {
		return nil, fmt.Errorf("cannot copy text %d: %w", id, err)
	}
	return &copied, nil
}
