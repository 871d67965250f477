package hogql

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Materialize rewrites the reads of events' materialized properties in query to read
// their columns: each json_extract_string(<events>.properties, '$."<key>"') whose key
// column names (column(key) is the column's SQL, ok when key has one) becomes that
// column. serialized is DuckDB's parse of query (json_serialize_sql), which says where
// each read starts and which table it reads, and which Check has accepted.
//
// A read is of events when the SELECT it is in reads the events table directly: its
// FROM is events alone (properties unqualified, or qualified by the table's name or
// alias), or a join in which the qualifier names events. Any other properties column
// (persons', a subquery's, a CTE's, an outer query's) is left as it is, read as JSON.
//
// It is all or nothing: when the query holds a star (*, t.*, COLUMNS(*): the events
// view that has the columns would show them), or a read of a materialized property of
// events that is not written as Rewrite writes it (which could be grouped by where its
// rewritten twin is selected, and must then stay the same text), the query is
// returned as it is. A select item that is such a read alone, without an alias, keeps
// the name DuckDB gives the read (ColumnName reads it): the column is aliased so.
// changed reports whether the query now reads a column.
func Materialize(query, serialized string, column func(key string) (sql string, ok bool)) (rewritten string, changed bool, err error) {
	var parsed struct {
		Statements []any `json:"statements"`
	}
	if err := json.Unmarshal([]byte(serialized), &parsed); err != nil {
		return "", false, fmt.Errorf("cannot read the parsed query: %w", err)
	}
	m := materializer{query: query, column: column}
	for _, s := range parsed.Statements {
		m.walk(s, nil, false)
	}
	if m.refused || len(m.reads) == 0 {
		return query, false, nil
	}
	slices.SortFunc(m.reads, func(a, b materializedRead) int { return a.start - b.start })
	var out strings.Builder
	last := 0
	for _, r := range m.reads {
		if r.start < last {
			return query, false, nil // overlapping reads: not a parse of this text
		}
		out.WriteString(query[last:r.start])
		out.WriteString(r.sql)
		last = r.end
	}
	out.WriteString(query[last:])
	return out.String(), true, nil
}

// eventsScope is what a SELECT's FROM makes of a properties column: whether an
// unqualified one is events', and the names (lower case) that qualify events.
type eventsScope struct {
	unqualified bool
	names       []string
}

func (s *eventsScope) qualifies(name string) bool {
	for _, n := range s.names {
		if n == strings.ToLower(name) {
			return true
		}
	}
	return false
}

type materializedRead struct {
	start, end int
	sql        string
}

type materializer struct {
	query   string
	column  func(string) (string, bool)
	reads   []materializedRead
	refused bool
}

// walk visits a parsed node under scope, the nearest SELECT's; item says node is a
// whole select item.
func (m *materializer) walk(node any, scope *eventsScope, item bool) {
	switch n := node.(type) {
	case []any:
		for _, x := range n {
			m.walk(x, scope, false)
		}
	case map[string]any:
		if n["class"] == "STAR" {
			m.refused = true
			return
		}
		if n["type"] == "SELECT_NODE" {
			// Its FROM's tables are what its expressions' columns name first (a
			// subquery's SELECT, met below, makes its own scope).
			scope = selectScope(n["from_table"])
			for k, x := range n {
				if k == "select_list" {
					list, _ := x.([]any)
					for _, item := range list {
						m.walk(item, scope, true)
					}
					continue
				}
				m.walk(x, scope, false)
			}
			return
		}
		if n["class"] == "FUNCTION" && m.read(n, scope, item) {
			return
		}
		for _, x := range n {
			m.walk(x, scope, false)
		}
	}
}

// read records n when it reads a materialized property of events, and reports
// whether it was such a read (recorded or refused).
func (m *materializer) read(n map[string]any, scope *eventsScope, item bool) bool {
	name, _ := n["function_name"].(string)
	children, _ := n["children"].([]any)
	if !strings.EqualFold(name, "json_extract_string") || len(children) != 2 {
		return false
	}
	ref, _ := children[0].(map[string]any)
	constant, _ := children[1].(map[string]any)
	if ref["class"] != "COLUMN_REF" || constant["class"] != "CONSTANT" {
		return false
	}
	names, _ := ref["column_names"].([]any)
	if len(names) == 0 || len(names) > 2 || !strings.EqualFold(fmt.Sprint(names[len(names)-1]), "properties") {
		return false
	}
	value, _ := constant["value"].(map[string]any)
	path, _ := value["value"].(string)
	key, ok := pathKey(path)
	if !ok {
		return false
	}
	column, ok := m.column(key)
	if !ok {
		return false
	}
	qualifier := ""
	if len(names) == 2 {
		qualifier = fmt.Sprint(names[0])
	}
	if scope == nil || qualifier == "" && !scope.unqualified || qualifier != "" && !scope.qualifies(qualifier) {
		return true // another table's properties: read as JSON
	}
	location, _ := n["query_location"].(float64)
	start := int(location)
	// As Rewrite writes it: the function and the column in any case (DuckDB's names
	// are), the path exactly.
	head, tail := "json_extract_string(properties, ", `'$."`+key+`"')`
	if qualifier != "" {
		head = "json_extract_string(" + qualifier + ".properties, "
	}
	end := start + len(head) + len(tail)
	if location != float64(start) || start < 0 || end > len(m.query) ||
		!strings.EqualFold(m.query[start:start+len(head)], head) || m.query[start+len(head):end] != tail {
		m.refused = true // written otherwise: see Materialize
		return true
	}
	sql := column
	if qualifier != "" {
		sql = m.query[start+len("json_extract_string("):start+len("json_extract_string(")+len(qualifier)] + "." + column
	}
	if item && n["alias"] == "" {
		sql += ` AS "` + strings.ReplaceAll(m.query[start:end], `"`, `""`) + `"`
	}
	m.reads = append(m.reads, materializedRead{start: start, end: end, sql: sql})
	return true
}

// selectScope is the scope a SELECT's FROM makes (nil: none of its properties are events').
func selectScope(from any) *eventsScope {
	t, _ := from.(map[string]any)
	switch t["type"] {
	case "BASE_TABLE":
		if name, ok := eventsTable(t); ok {
			return &eventsScope{unqualified: true, names: []string{name}}
		}
	case "JOIN":
		s := &eventsScope{}
		var visit func(t map[string]any)
		visit = func(t map[string]any) {
			switch t["type"] {
			case "BASE_TABLE":
				if name, ok := eventsTable(t); ok {
					s.names = append(s.names, name)
				}
			case "JOIN":
				l, _ := t["left"].(map[string]any)
				r, _ := t["right"].(map[string]any)
				visit(l)
				visit(r)
			}
		}
		visit(t)
		return s
	}
	return nil
}

// eventsTable reports whether t is the events table, and the name that qualifies it.
func eventsTable(t map[string]any) (string, bool) {
	table, _ := t["table_name"].(string)
	schema, _ := t["schema_name"].(string)
	catalog, _ := t["catalog_name"].(string)
	if !strings.EqualFold(table, "events") || schema != "" || catalog != "" {
		return "", false
	}
	if alias, _ := t["alias"].(string); alias != "" {
		return strings.ToLower(alias), true
	}
	return "events", true
}

// pathKey is the top-level key a JSON path names: $."key", $.key or the pointer /key.
func pathKey(path string) (string, bool) {
	switch {
	case strings.HasPrefix(path, `$."`) && strings.HasSuffix(path, `"`) && len(path) > 4:
		key := path[3 : len(path)-1]
		return key, !strings.ContainsAny(key, `"\`)
	case strings.HasPrefix(path, "$.") && len(path) > 2:
		key := path[2:]
		return key, !strings.ContainsAny(key, `."[]*\`)
	case strings.HasPrefix(path, "/") && len(path) > 1:
		key := path[1:]
		if strings.Contains(key, "/") {
			return "", false
		}
		return strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~"), true
	}
	return "", false
}
