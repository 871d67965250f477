package warehouse

import (
	"bytes"
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"

	"github.com/hedge-analytics/hedge/internal/jsontext"
)

// Materialized properties: the event properties most queried (those PostHog's own
// insights and web analytics read) have columns of their own in events, "mat_<key>"
// (migration 14), so that a query reads a column where it would parse every event's
// properties text. Each column holds, for every row, exactly what
// json_extract_string(properties, '$."<key>"') returns for it: the Writer fills it on
// ingest (materializer), rows stored before the columns existed are filled in the
// background (backfill.go), and the query engine reads the column wherever a query
// reads that property of events (hogql.MaterializedReads, Queries.open).

// materializedKeys are the materialized properties, in the order of their columns in
// events (migration 14; TestMaterializedColumnsMatchMigration checks the two agree).
var materializedKeys = [...]string{
	"$current_url", "$pathname", "$host", "$browser", "$os", "$device_type",
	"$referring_domain", "$session_id", "$lib", "$screen_name",
}

const materializedCount = len(materializedKeys)

// materializedColumn is the column of a materialized key, unquoted.
func materializedColumn(key string) string { return "mat_" + key }

// isMaterialized reports whether key has a column.
func isMaterialized(key string) bool { return materializedIndex(key) >= 0 }

// materializedIndex is key's position in materializedKeys, or -1. A switch rather
// than a map: the Writer asks it for every member of every event's properties, and
// the compiler makes a switch on a []byte's string conversion neither allocate nor hash.
func materializedIndex(key string) int {
	switch key {
	case "$current_url":
		return 0
	case "$pathname":
		return 1
	case "$host":
		return 2
	case "$browser":
		return 3
	case "$os":
		return 4
	case "$device_type":
		return 5
	case "$referring_domain":
		return 6
	case "$session_id":
		return 7
	case "$lib":
		return 8
	case "$screen_name":
		return 9
	}
	return -1
}

// materializer takes the materialized properties out of an event's properties text,
// for the Writer: one pass over the object's members (jsontext.Members), no map.
type materializer struct {
	// values are the last event's, in the order of their columns in events: the fixed
	// keys' (materializedKeys), then the project's slots' (materialized_slots.go). A
	// value is a string, or nil for NULL; a string aliases the properties text unless
	// it had to be unescaped or rendered.
	values [materializedCount + slotCount]driver.Value
	// render is DuckDB's own text of a JSON value that is neither a plain string nor a
	// plain number, boolean or null (render is json_extract_string(value, '$'),
	// which gives for a value what json_extract_string gives for the member holding
	// it): the Writer's prepared query, on its connection.
	render func(value string) (driver.Value, error)
	err    error
}

// extract sets m.values from properties, the JSON object text of one event, and
// chosen, the keys of its project's slots ("" for a slot unused; nil when it uses
// none). Only the first member of a key counts, as json_extract_string reads it.
func (m *materializer) extract(properties string, chosen *[slotCount]string) error {
	var seen [materializedCount + slotCount]bool
	m.values, m.err = [materializedCount + slotCount]driver.Value{}, nil
	jsontext.Members(jsontext.StringToBytes(properties), func(key, value []byte) {
		if m.err != nil || len(key) < 3 {
			return
		}
		i := -1
		// Every fixed key starts with $ (or an escape of it).
		if key[1] == '$' || key[1] == '\\' {
			i = materializedIndex(jsontext.BytesToString(key[1 : len(key)-1]))
			if i < 0 && bytes.IndexByte(key, '\\') >= 0 {
				for k, name := range materializedKeys {
					if jsontext.KeyIs(key, name) {
						i = k
						break
					}
				}
			}
		}
		if i < 0 && chosen != nil {
			i = chosenIndex(key, chosen)
		}
		if i < 0 || seen[i] {
			return
		}
		seen[i] = true
		m.values[i], m.err = m.value(value)
	})
	return m.err
}

// chosenIndex is the index in materializer.values of the slot of chosen whose key is
// the quoted key, as Members passes it, or -1. A comparison of the key's bytes with
// each of a few keys: no key chosen holds an escape (checkChosenKey), so a key
// written without one is the same only when its bytes are.
func chosenIndex(key []byte, chosen *[slotCount]string) int {
	inner := jsontext.BytesToString(key[1 : len(key)-1])
	escaped := bytes.IndexByte(key, '\\') >= 0
	for s, name := range chosen {
		if name != "" && (inner == name || escaped && jsontext.KeyIs(key, name)) {
			return materializedCount + s
		}
	}
	return -1
}

// value is what json_extract_string gives for a member whose value is raw: a string
// unquoted (and unescaped), true and false, a whole number of at most 18 digits as
// written (DuckDB reads it as an integer and writes it back the same), NULL for null;
// any other value (a fraction or exponent, which DuckDB writes as it prints doubles,
// -0, larger numbers, objects and arrays, which it writes minified) is DuckDB's own
// rendering of it, rare in these properties.
func (m *materializer) value(raw []byte) (driver.Value, error) {
	switch {
	case len(raw) >= 2 && raw[0] == '"':
		if bytes.IndexByte(raw, '\\') < 0 {
			return jsontext.BytesToString(raw[1 : len(raw)-1]), nil
		}
		if s := jsontext.String(raw); s != "" {
			// Unescaped as DuckDB unescapes: the edge stored only valid JSON, its lone
			// surrogates repaired (jsontext.RepairSurrogates).
			return s, nil
		}
	case string(raw) == "null":
		return nil, nil
	case string(raw) == "true", string(raw) == "false", plainInteger(raw):
		return jsontext.BytesToString(raw), nil
	}
	return m.render(string(raw))
}

// plainInteger reports whether raw is an integer JSON number of at most 18 digits
// without a leading zero, which DuckDB writes back as it is written: it fits an int64.
// -0 is not: DuckDB writes it 0.
func plainInteger(raw []byte) bool {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || digits[0] == '0' && (len(digits) > 1 || len(raw) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// renderQuery is DuckDB's text of one JSON value, what materializer.render runs.
const renderQuery = `SELECT json_extract_string(?::VARCHAR, '$')`

// renderer is materializer.render on a connection: the prepared renderQuery.
func renderer(conn driver.Conn) (func(string) (driver.Value, error), func() error, error) {
	stmt, err := conn.Prepare(renderQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot prepare the rendering of property values: %w", err)
	}
	dest := make([]driver.Value, 1)
	render := func(value string) (driver.Value, error) {
		rows, err := stmt.(driver.StmtQueryContext).QueryContext(context.Background(), []driver.NamedValue{{Ordinal: 1, Value: value}})
		if err != nil {
			return nil, fmt.Errorf("cannot render a property value: %w", err)
		}
		defer rows.Close()
		if err := rows.Next(dest); err != nil && err != io.EOF {
			return nil, fmt.Errorf("cannot render a property value: %w", err)
		}
		return dest[0], nil
	}
	return render, stmt.Close, nil
}

// materializedPaths is the SQL list of the columns' values as read from the
// properties text, in column order: what the backfill writes and what the columns must
// equal. One json_extract_string of a list of paths parses each event's text once.
func materializedPaths() string {
	paths := make([]string, materializedCount)
	for i, k := range materializedKeys {
		paths[i] = `'$."` + k + `"'`
	}
	return "[" + strings.Join(paths, ", ") + "]"
}
