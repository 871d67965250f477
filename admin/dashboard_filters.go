package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Dashboard filters: a dashboard's filters (date range and properties), a tile's
// filters_overrides and a request's filters_override apply to the queries of its
// insight tiles, as PostHog's dashboards apply them: a date_from or date_to set
// replaces that end of the query's date range (an EventsQuery's after and before), and
// properties are added to the query's own, both holding. The result is computed for
// the query so changed, and cached under it.

// dashboardFilters are the filters that apply to a dashboard's tiles: the layers given,
// later ones winning key by key (the dashboard's, then a tile's overrides, then the
// request's). A layer that is empty or null adds nothing.
type dashboardFilters struct {
	dateFrom, dateTo json.RawMessage // JSON strings, or nil when no layer sets them
	properties       []json.RawMessage
}

// filterLayer is one layer of dashboard filters.
type filterLayer struct {
	DateFrom   json.RawMessage   `json:"date_from"`
	DateTo     json.RawMessage   `json:"date_to"`
	Properties []json.RawMessage `json:"properties"`
}

// mergeFilters reads the layers in order. A layer that is not a JSON object is an
// error naming attr.
func mergeFilters(attr string, layers ...rawJSON) (dashboardFilters, error) {
	var f dashboardFilters
	for _, layer := range layers {
		if len(bytes.TrimSpace(layer)) == 0 || string(layer) == "null" {
			continue
		}
		var l filterLayer
		if err := json.Unmarshal(layer, &l); err != nil {
			return f, errValidation(attr, "invalid_input", "Filters must be a dictionary with date_from, date_to and a list of properties.")
		}
		if set(l.DateFrom) {
			f.dateFrom = l.DateFrom
		}
		if set(l.DateTo) {
			f.dateTo = l.DateTo
		}
		if l.Properties != nil {
			f.properties = l.Properties // a later layer's properties replace an earlier one's
		}
	}
	return f, nil
}

// set reports a value that is neither absent nor null.
func set(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// empty reports filters that change no query.
func (f dashboardFilters) empty() bool {
	return f.dateFrom == nil && f.dateTo == nil && len(f.properties) == 0
}

// apply is query with f applied: to the source of an InsightVizNode or DataTableNode,
// or to the query itself. A query of a kind filters do not apply to (HogQL) is
// returned as it is.
func (f dashboardFilters) apply(query rawJSON) (rawJSON, error) {
	if f.empty() || len(query) == 0 {
		return query, nil
	}
	var node map[string]json.RawMessage
	if err := json.Unmarshal(query, &node); err != nil {
		return nil, fmt.Errorf("cannot read an insight's query: %w", err)
	}
	var kind string
	json.Unmarshal(node["kind"], &kind)
	switch kind {
	case "InsightVizNode", "DataTableNode":
		if len(node["source"]) == 0 {
			return query, nil
		}
		source, err := f.apply(rawJSON(node["source"]))
		if err != nil {
			return nil, err
		}
		node["source"] = json.RawMessage(source)
	case "TrendsQuery", "FunnelsQuery", "StickinessQuery", "RetentionQuery", "LifecycleQuery", "PathsQuery", "WebOverviewQuery", "WebStatsTableQuery":
		var dateRange map[string]json.RawMessage
		if set(node["dateRange"]) {
			if err := json.Unmarshal(node["dateRange"], &dateRange); err != nil {
				return query, nil // the query's own error, which running it reports
			}
		}
		if f.dateFrom != nil || f.dateTo != nil {
			if dateRange == nil {
				dateRange = map[string]json.RawMessage{}
			}
			if f.dateFrom != nil {
				dateRange["date_from"] = f.dateFrom
			}
			if f.dateTo != nil {
				dateRange["date_to"] = f.dateTo
			}
			node["dateRange"] = mustRaw(dateRange)
		}
		f.addProperties(node)
	case "EventsQuery":
		if f.dateFrom != nil {
			node["after"] = f.dateFrom
		}
		if f.dateTo != nil {
			node["before"] = f.dateTo
		}
		f.addProperties(node)
	default:
		return query, nil
	}
	return rawJSON(mustRaw(node)), nil
}

// addProperties adds f's properties to those of node: to its list, or beside its
// property group, both holding.
func (f dashboardFilters) addProperties(node map[string]json.RawMessage) {
	if len(f.properties) == 0 {
		return
	}
	own := node["properties"]
	var list []json.RawMessage
	switch {
	case !set(own):
		node["properties"] = mustRaw(f.properties)
	case json.Unmarshal(own, &list) == nil:
		node["properties"] = mustRaw(append(list, f.properties...))
	default: // a property group
		node["properties"] = mustRaw(map[string]any{"type": "AND", "values": []any{own,
			map[string]any{"type": "AND", "values": f.properties}}})
	}
}

// mustRaw encodes v, which is made of JSON values already.
func mustRaw(v any) json.RawMessage { return json.RawMessage(mustJSON(v)) }
