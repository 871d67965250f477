package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

// actorsQuery is PostHog's ActorsQuery whose source is an InsightActorsQuery or a
// FunnelsActorsQuery: the persons behind one point of an insight, the query PostHog's
// persons modal sends when a user clicks a point of a trend, a step of a funnel or a
// cohort of a retention. A bare InsightActorsQuery or FunnelsActorsQuery is read as
// the source of an ActorsQuery with the default columns.
type actorsQuery struct {
	Kind   string          `json:"kind"`
	Source json.RawMessage `json:"source"`
	// Select are the columns: actor (the person), created_at (the person's), and
	// event_count (their events in a trend's point, a lifecycle's interval or a
	// stickiness' range; of a paths' edge or node, their paths through it) or
	// appearances (the periods they came back in, of a retention's cohort); default
	// actor and the second.
	Select []string `json:"select"`
	Limit  int      `json:"limit"`
	Offset int      `json:"offset"`
}

// insightActorsQuery is PostHog's InsightActorsQuery: an insight query and its point.
type insightActorsQuery struct {
	Kind   string          `json:"kind"`
	Source json.RawMessage `json:"source"`
	// Day is the point's interval, as a trend's or a lifecycle's days name it, or of a
	// stickiness the bar's number of intervals (PostHog sends a number).
	Day any `json:"day"`
	// Status is a lifecycle bar's: new, returning, resurrecting or dormant.
	Status string `json:"status"`
	// Series is the index of the point's series.
	Series int `json:"series"`
	// Breakdown is the line's breakdown_value: PostHog sends a string or a number.
	Breakdown any `json:"breakdown"`
	// Compare is the line's compare_label.
	Compare string `json:"compare"`
	// Interval is a retention's cohort, its index (the oldest 0).
	Interval int `json:"interval"`
	// FunnelStep is a FunnelsActorsQuery's step, from 1 (who reached it), or from -2
	// (who reached the step before and not it); FunnelStepBreakdown its funnel's
	// breakdown value: PostHog sends a string, a number, or a list of one.
	FunnelStep          int `json:"funnelStep"`
	FunnelStepBreakdown any `json:"funnelStepBreakdown"`
	// PathStartKey, PathEndKey and PathDropoffKey are a paths' edge or node
	// ("2_/pricing"). PostHog sends them in the PathsQuery's pathsFilter; here they
	// are taken too, and win over the pathsFilter's.
	PathStartKey   string `json:"pathStartKey"`
	PathEndKey     string `json:"pathEndKey"`
	PathDropoffKey string `json:"pathDropoffKey"`
}

// actorColumns are the columns an actors query may select, by the kind of its insight;
// the first two are the default (a funnel's: the first).
var actorColumns = map[string][]string{
	"TrendsQuery":     {"actor", "event_count", "created_at"},
	"LifecycleQuery":  {"actor", "event_count", "created_at"},
	"StickinessQuery": {"actor", "event_count", "created_at"},
	"PathsQuery":      {"actor", "event_count", "created_at"},
	"RetentionQuery":  {"actor", "appearances", "created_at"},
	"FunnelsQuery":    {"actor", "created_at"},
}

// actorsResponse is the answer of an ActorsQuery, in PostHog's shape: a row per person,
// each column as selected, the actor as a person of the persons API.
type actorsResponse struct {
	Columns            []string `json:"columns"`
	Types              []string `json:"types"`
	Results            [][]any  `json:"results"`
	HasMore            bool     `json:"hasMore"`
	Limit              int      `json:"limit"`
	Offset             int      `json:"offset"`
	MissingActorsCount int      `json:"missing_actors_count"`
}

// runActors runs an ActorsQuery (or a bare InsightActorsQuery) for the project.
func (a *API) runActors(ctx context.Context, scope warehouse.Scope, kind string, raw json.RawMessage, now time.Time) (*actorsResponse, error) {
	var q actorsQuery
	if kind != "ActorsQuery" {
		q.Source = raw
	} else if err := decodeQuery(raw, &q); err != nil {
		return nil, err
	}
	if len(q.Source) == 0 {
		return nil, errRequired("query__source")
	}
	var point insightActorsQuery
	if err := decodeQuery(q.Source, &point); err != nil {
		return nil, err
	}
	if point.Kind != "InsightActorsQuery" && point.Kind != "FunnelsActorsQuery" {
		return nil, errValidation("query__source__kind", "invalid_choice", fmt.Sprintf("%q is not a valid choice: InsightActorsQuery or FunnelsActorsQuery.", point.Kind))
	}
	insightKind, insight, err := queryKind(point.Source)
	if err != nil {
		return nil, err
	}
	if (point.Kind == "FunnelsActorsQuery") != (insightKind == "FunnelsQuery") {
		return nil, errValidation("query__source__source__kind", "invalid_choice",
			fmt.Sprintf("A %s lists the persons of a %s: a funnel's are listed by a FunnelsActorsQuery, other insights' by an InsightActorsQuery.", point.Kind, insightKind))
	}
	columns, ok := actorColumns[insightKind]
	if !ok {
		return nil, errValidation("query__source__source__kind", "invalid_choice",
			fmt.Sprintf("The persons of a %s are not listed yet: hedge lists those of a TrendsQuery's points, a FunnelsQuery's steps, a RetentionQuery's cohorts, a LifecycleQuery's and a StickinessQuery's bars and a PathsQuery's edges and nodes.", insightKind))
	}
	if len(q.Select) == 0 {
		q.Select = columns[:min(2, len(columns)-1)]
	}
	for _, column := range q.Select {
		if !slices.Contains(columns, column) {
			return nil, errValidation("query__select", "invalid_input", fmt.Sprintf("%q is not a column of a %s's actors: choose among %s.", column, insightKind, strings.Join(columns, ", ")))
		}
	}
	var actors *warehouse.ActorsResult
	switch insightKind {
	case "FunnelsQuery":
		var funnel warehouse.FunnelsQuery
		if err := a.decodeQueryOf(ctx, scope.Team, insight, &funnel); err != nil {
			return nil, err
		}
		target := warehouse.FunnelsActors{Step: point.FunnelStep, Limit: q.Limit, Offset: q.Offset}
		if target.Breakdown, err = breakdownValue("query__source__funnelStepBreakdown", point.FunnelStepBreakdown, true); err != nil {
			return nil, err
		}
		if actors, err = a.queries.FunnelsActors(ctx, scope, funnel, target, now); err != nil {
			return nil, err
		}
	case "RetentionQuery":
		var retention warehouse.RetentionQuery
		if err := a.decodeQueryOf(ctx, scope.Team, insight, &retention); err != nil {
			return nil, err
		}
		if actors, err = a.queries.RetentionActors(ctx, scope, retention, point.Interval, q.Limit, q.Offset, now); err != nil {
			return nil, err
		}
	case "LifecycleQuery":
		var lifecycle warehouse.LifecycleQuery
		if err := a.decodeQueryOf(ctx, scope.Team, insight, &lifecycle); err != nil {
			return nil, err
		}
		day, err := dayText(point.Day)
		if err != nil {
			return nil, err
		}
		bar := warehouse.LifecycleActors{Day: day, Status: point.Status, Limit: q.Limit, Offset: q.Offset}
		if actors, err = a.queries.LifecycleActors(ctx, scope, lifecycle, bar, now); err != nil {
			return nil, err
		}
	case "StickinessQuery":
		var stickiness warehouse.StickinessQuery
		if err := a.decodeQueryOf(ctx, scope.Team, insight, &stickiness); err != nil {
			return nil, err
		}
		intervals, ok := point.Day.(float64)
		if !ok || intervals != float64(int(intervals)) {
			return nil, errValidation("query__source__day", "invalid_input", "A stickiness' day is the bar's number of intervals, a whole number.")
		}
		bar := warehouse.StickinessActors{Intervals: int(intervals), Series: point.Series, Limit: q.Limit, Offset: q.Offset}
		if actors, err = a.queries.StickinessActors(ctx, scope, stickiness, bar, now); err != nil {
			return nil, err
		}
	case "PathsQuery":
		var paths warehouse.PathsQuery
		if err := a.decodeQueryOf(ctx, scope.Team, insight, &paths); err != nil {
			return nil, err
		}
		f := paths.PathsFilter
		node := warehouse.PathsActors{StartKey: f.PathStartKey, EndKey: f.PathEndKey, DropoffKey: f.PathDropoffKey, Limit: q.Limit, Offset: q.Offset}
		if point.PathStartKey != "" || point.PathEndKey != "" || point.PathDropoffKey != "" {
			node.StartKey, node.EndKey, node.DropoffKey = point.PathStartKey, point.PathEndKey, point.PathDropoffKey
		}
		if actors, err = a.queries.PathsActors(ctx, scope, paths, node, now); err != nil {
			return nil, err
		}
	default:
		var trends warehouse.TrendsQuery
		if err := a.decodeQueryOf(ctx, scope.Team, insight, &trends); err != nil {
			return nil, err
		}
		day, err := dayText(point.Day)
		if err != nil {
			return nil, err
		}
		target := warehouse.TrendsActors{Day: day, Series: point.Series, Compare: point.Compare, Limit: q.Limit, Offset: q.Offset}
		if target.Breakdown, err = breakdownValue("query__source__breakdown", point.Breakdown, false); err != nil {
			return nil, err
		}
		if actors, err = a.queries.TrendsActors(ctx, scope, trends, target, now); err != nil {
			return nil, err
		}
	}
	ids := make([]uuid.UUID, len(actors.Actors))
	for i, actor := range actors.Actors {
		ids[i] = actor.PersonID
	}
	persons, err := a.warehouse.PersonsByID(ctx, scope.Team, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]warehouse.Person, len(persons))
	for _, p := range persons {
		byID[p.ID] = p
	}
	out := &actorsResponse{Columns: q.Select, Results: [][]any{}, HasMore: actors.HasMore, Limit: actors.Limit, Offset: actors.Offset}
	for _, column := range q.Select {
		out.Types = append(out.Types, map[string]string{"actor": "Tuple", "event_count": "UInt64", "appearances": "Array(UInt64)", "created_at": "DateTime"}[column])
	}
	for _, actor := range actors.Actors {
		p, ok := byID[actor.PersonID]
		if !ok { // merged away between the two reads
			out.MissingActorsCount++
			continue
		}
		row := make([]any, len(q.Select))
		for i, column := range q.Select {
			switch column {
			case "actor":
				row[i] = newPersonRecord(p)
			case "event_count":
				row[i] = actor.EventCount
			case "appearances":
				row[i] = actor.Appearances
			case "created_at":
				row[i] = p.CreatedAt
			}
		}
		out.Results = append(out.Results, row)
	}
	return out, nil
}

// breakdownValue reads a point's breakdown value, which PostHog sends as a string or a
// number, and for a funnel's step also as a list of one (a breakdown by one property):
// nil for none.
func breakdownValue(attr string, v any, listOfOne bool) (*string, error) {
	if list, ok := v.([]any); ok && listOfOne && len(list) == 1 {
		v = list[0]
	}
	switch b := v.(type) {
	case nil:
		return nil, nil
	case string:
		return &b, nil
	case float64:
		s := strconv.FormatFloat(b, 'f', -1, 64)
		return &s, nil
	}
	return nil, errValidation(attr, "invalid_input", "The breakdown must be a string or a number.")
}

// dayText reads a point's day of a trend or a lifecycle: a date or a time, as their
// days name them ("" for none).
func dayText(v any) (string, error) {
	switch d := v.(type) {
	case nil:
		return "", nil
	case string:
		return d, nil
	}
	return "", errValidation("query__source__day", "invalid_input", "Not a valid string.")
}
