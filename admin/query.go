package admin

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hedge-analytics/hedge/warehouse"
)

func (a *API) bindQuery() {
	a.handle(fiber.MethodPost, "/projects/:project_id/query/", "query:read", a.queryRun)
	a.handle(fiber.MethodDelete, "/projects/:project_id/query/:query_id/", "query:read", a.queryCancel)
}

// POST /api/projects/{project_id}/query/ (query:read)
// Body {"query": {"kind": "EventsQuery" | "TrendsQuery" | "FunnelsQuery" | "StickinessQuery" |
// "RetentionQuery" | "LifecycleQuery" | "PathsQuery" | "WebOverviewQuery" |
// "WebStatsTableQuery" | "HogQLQuery", ...}}. A query
// reads the project's rows only, in its time zone; a query that may not run, or that
// fails for a reason of its own, answers 400 saying why. A client_query_id names the
// query for DELETE .../query/{client_query_id}/ while it runs (query_cancel.go).
func (a *API) queryRun(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	var body struct {
		Query         json.RawMessage `json:"query"`
		ClientQueryID string          `json:"client_query_id"`
	}
	if err := bindBody(c, &body); err != nil {
		return err
	}
	if len(body.Query) == 0 || string(body.Query) == "null" {
		return errRequired("query")
	}
	scope, err := a.scopeOf(c.UserContext(), pr.id)
	if err != nil {
		return err
	}
	ctx, done, err := a.running.start(c.UserContext(), pr.id, body.ClientQueryID)
	if err != nil {
		return err
	}
	defer done()
	result, err := a.runQuery(ctx, scope, body.Query)
	if err != nil && errors.Is(context.Cause(ctx), errQueryCancelled) {
		return errQueryWasCancelled()
	}
	if err != nil {
		return err
	}
	return c.JSON(result)
}

// queryKind is a query's kind, and the query itself: PostHog's InsightVizNode and
// DataTableNode wrap the query in source.
func queryKind(raw json.RawMessage) (string, json.RawMessage, error) {
	var q struct {
		Kind   string          `json:"kind"`
		Source json.RawMessage `json:"source"`
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		return "", nil, errValidation("query", "invalid_input", "The query must be an object with a kind.")
	}
	if (q.Kind == "InsightVizNode" || q.Kind == "DataTableNode") && len(q.Source) > 0 {
		return queryKind(q.Source)
	}
	return q.Kind, raw, nil
}

// runQuery runs a query object for the project. A query that may not run, or fails
// for a reason of its own, is a 400 *Error saying why.
func (a *API) runQuery(ctx context.Context, scope warehouse.Scope, raw json.RawMessage) (any, error) {
	kind, raw, err := queryKind(raw)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	var result any
	switch kind {
	case "HogQLQuery":
		var q struct {
			Query string `json:"query"`
			// Values fill the query's {name} placeholders, as bound parameters.
			Values map[string]any `json:"values"`
		}
		if err := decodeQuery(raw, &q); err != nil {
			return nil, err
		}
		if q.Query == "" {
			return nil, errRequired("query__query")
		}
		result, err = a.queries.HogQLValues(ctx, scope, q.Query, q.Values)
	case "EventsQuery":
		var q warehouse.EventsQuery
		if err := a.decodeQueryOf(ctx, scope.Team, raw, &q); err != nil {
			return nil, err
		}
		result, err = a.queries.Events(ctx, scope, q, now)
	case "TrendsQuery":
		var q warehouse.TrendsQuery
		if err := a.decodeQueryOf(ctx, scope.Team, raw, &q); err != nil {
			return nil, err
		}
		var trends *warehouse.TrendsResult
		if trends, err = a.queries.Trends(ctx, scope, q, now); err == nil {
			result = trends
		}
	case "FunnelsQuery":
		var q warehouse.FunnelsQuery
		if err := a.decodeQueryOf(ctx, scope.Team, raw, &q); err != nil {
			return nil, err
		}
		var funnels *warehouse.FunnelsResult
		if funnels, err = a.queries.Funnels(ctx, scope, q, now); err == nil {
			result = funnels
		}
	case "StickinessQuery":
		var q warehouse.StickinessQuery
		if err := a.decodeQueryOf(ctx, scope.Team, raw, &q); err != nil {
			return nil, err
		}
		var stickiness *warehouse.StickinessResult
		if stickiness, err = a.queries.Stickiness(ctx, scope, q, now); err == nil {
			result = stickiness
		}
	case "RetentionQuery":
		var q warehouse.RetentionQuery
		if err := a.decodeQueryOf(ctx, scope.Team, raw, &q); err != nil {
			return nil, err
		}
		var retention *warehouse.RetentionResult
		if retention, err = a.queries.Retention(ctx, scope, q, now); err == nil {
			result = retention
		}
	case "LifecycleQuery":
		var q warehouse.LifecycleQuery
		if err := a.decodeQueryOf(ctx, scope.Team, raw, &q); err != nil {
			return nil, err
		}
		var lifecycle *warehouse.LifecycleResult
		if lifecycle, err = a.queries.Lifecycle(ctx, scope, q, now); err == nil {
			result = lifecycle
		}
	case "PathsQuery":
		var q warehouse.PathsQuery
		if err := a.decodeQueryOf(ctx, scope.Team, raw, &q); err != nil {
			return nil, err
		}
		var paths *warehouse.PathsResult
		if paths, err = a.queries.Paths(ctx, scope, q, now); err == nil {
			result = paths
		}
	case "WebOverviewQuery":
		var q warehouse.WebOverviewQuery
		if err := a.decodeQueryOf(ctx, scope.Team, raw, &q); err != nil {
			return nil, err
		}
		var overview *warehouse.WebOverviewResult
		if overview, err = a.queries.WebOverview(ctx, scope, q, now); err == nil {
			result = overview
		}
	case "WebStatsTableQuery":
		var q warehouse.WebStatsTableQuery
		if err := a.decodeQueryOf(ctx, scope.Team, raw, &q); err != nil {
			return nil, err
		}
		var table *warehouse.WebStatsTableResult
		if table, err = a.queries.WebStatsTable(ctx, scope, q, now); err == nil {
			result = table
		}
	case "ActorsQuery", "InsightActorsQuery", "FunnelsActorsQuery":
		var actors *actorsResponse
		if actors, err = a.runActors(ctx, scope, kind, raw, now); err == nil {
			result = actors
		}
	default:
		return nil, errValidation("query__kind", "invalid_choice", fmt.Sprintf("%q is not a valid choice: EventsQuery, TrendsQuery, FunnelsQuery, StickinessQuery, RetentionQuery, LifecycleQuery, PathsQuery, WebOverviewQuery, WebStatsTableQuery, ActorsQuery or HogQLQuery.", kind))
	}
	var queryErr *warehouse.QueryError
	if errors.As(err, &queryErr) {
		return nil, errValidation("query", "query_error", queryErr.Detail)
	}
	if errors.Is(err, warehouse.ErrQueriesStopped) {
		return nil, errShuttingDown(err.Error())
	}
	if err != nil {
		return nil, err
	}
	return result, nil
}

// decodeQuery reads the query object into q; a field of the wrong type is a 400 naming it.
func decodeQuery(raw json.RawMessage, q any) error {
	err := decodeJSON(raw, q, "query__")
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return err
	}
	if err != nil {
		return errValidation("query", "invalid_input", "The query is not valid JSON.")
	}
	return nil
}

// scopeOf is the project as a query sees it: its id, time zone and week start.
func (a *API) scopeOf(ctx context.Context, team int64) (warehouse.Scope, error) {
	scope := warehouse.Scope{Team: team}
	var weekStart sql.NullInt64
	err := a.db.QueryRowContext(ctx, `SELECT timezone, week_start_day FROM meta.projects WHERE id = ?`, team).
		Scan(&scope.Timezone, &weekStart)
	if err != nil {
		return scope, fmt.Errorf("cannot read the settings of project %d: %w", team, err)
	}
	scope.WeekStartDay = int(weekStart.Int64) // unset: Sunday, PostHog's default
	return scope, nil
}
