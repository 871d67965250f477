package hogql

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// WithLimit gives query, whose parse (json_serialize_sql's) is serialized, a LIMIT of n
// when its statement has none of its own at the top (neither LIMIT nor LIMIT n%; a
// subquery's does not count): PostHog's default limit of a HogQLQuery. An OFFSET of the
// query's own is kept. added reports whether the query had no LIMIT, and limited is
// then the query with LIMIT n; else limited is query, unchanged.
//
// The LIMIT goes after the query's last token (a final ';' dropped), before the
// comments that end it. Which statement that LIMIT then bounds is DuckDB's to say, so
// parse (DuckDB's json_serialize_sql) reads the result, and the result is used only if
// its parse is serialized with one change: the LIMIT n at the top. Any other outcome
// (a form the tokens cannot end, a LIMIT that landed elsewhere) is an *Error asking
// for a LIMIT of the query's own. A query that does not parse, or holds more than one
// statement, is returned unchanged, for Check to refuse.
func WithLimit(query, serialized string, n int, parse func(string) (string, error)) (limited string, added bool, err error) {
	before, err := topNode(serialized)
	if err != nil {
		return "", false, err
	}
	if before == nil || limitModifier(before, "LIMIT_PERCENT_MODIFIER") != nil {
		return query, false, nil
	}
	if m := limitModifier(before, "LIMIT_MODIFIER"); m != nil && m["limit"] != nil {
		return query, false, nil
	}
	limited = appendLimit(query, n)
	after, err := parse(limited)
	if err != nil {
		return "", false, err
	}
	afterNode, err := topNode(after)
	if err != nil {
		return "", false, err
	}
	if afterNode == nil || !limitOnlyChange(before, afterNode, n) {
		return "", false, errorf("hedge cannot add its default LIMIT to this query: end it with a LIMIT of its own")
	}
	return limited, true, nil
}

// appendLimit writes " LIMIT n" after the last token of query that is neither space
// nor comment, dropping a ';' there.
func appendLimit(query string, n int) string {
	end, cut, at := 0, 0, 0 // the text up to end is kept; the text from cut on follows the LIMIT
	for _, t := range lex(query) {
		at += len(t.text)
		if t.kind != tokSpace && t.kind != tokComment {
			end, cut = at, at
			if t.text == ";" {
				end = at - 1
			}
		}
	}
	// A line comment ending the query would swallow what follows it on its line: the
	// LIMIT comes before the comments, on the last token's line.
	return strings.TrimRight(query[:end], " \t\r\n") + " LIMIT " + fmt.Sprint(n) + query[cut:]
}

// topNode is the node of the one statement of serialized (a SELECT_NODE or a
// SET_OPERATION_NODE), nil when it holds no single statement.
func topNode(serialized string) (map[string]any, error) {
	var parsed struct {
		Statements []struct {
			Node map[string]any `json:"node"`
		} `json:"statements"`
	}
	if err := json.Unmarshal([]byte(serialized), &parsed); err != nil {
		return nil, fmt.Errorf("cannot read the parsed query: %w", err)
	}
	if len(parsed.Statements) != 1 {
		return nil, nil
	}
	return parsed.Statements[0].Node, nil
}

// limitModifier is node's modifier of kind, nil when it has none.
func limitModifier(node map[string]any, kind string) map[string]any {
	if i := modifierIndex(node, kind); i >= 0 {
		return node["modifiers"].([]any)[i].(map[string]any)
	}
	return nil
}

// modifierIndex is where node's modifier of kind is in its modifiers, -1 when it has
// none.
func modifierIndex(node map[string]any, kind string) int {
	modifiers, _ := node["modifiers"].([]any)
	for i, m := range modifiers {
		if m, ok := m.(map[string]any); ok && m["type"] == kind {
			return i
		}
	}
	return -1
}

// limitOnlyChange says whether after is before with LIMIT n at its top: the constant n
// in before's LIMIT modifier (which held only an OFFSET), or in a LIMIT modifier of
// its own, the last; and nothing else changed but where nodes start in the text.
func limitOnlyChange(before, after map[string]any, n int) bool {
	i := modifierIndex(after, "LIMIT_MODIFIER")
	if i < 0 {
		return false
	}
	modifiers := after["modifiers"].([]any)
	m := modifiers[i].(map[string]any)
	limit, _ := m["limit"].(map[string]any)
	value, _ := limit["value"].(map[string]any)
	if limit["class"] != "CONSTANT" || value["value"] != float64(n) || value["is_null"] != false {
		return false
	}
	// Take the LIMIT out of after, which must then be before.
	m["limit"] = nil
	if modifierIndex(before, "LIMIT_MODIFIER") < 0 {
		if i != len(modifiers)-1 || m["offset"] != nil {
			return false
		}
		after["modifiers"] = modifiers[:i]
	}
	return reflect.DeepEqual(WithoutLocations(before), WithoutLocations(after))
}

// WithoutLocations drops the query_location fields of a parse (where in the text each
// node starts), in place, and returns it: what two parses of the same query written
// differently still share.
func WithoutLocations(v any) any {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "query_location")
		for _, x := range v {
			WithoutLocations(x)
		}
	case []any:
		for _, x := range v {
			WithoutLocations(x)
		}
	}
	return v
}
