package hogql

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestMaterialize: the reads of materialized properties of events, and only those,
// become their columns; a query with a star, or with such a read written otherwise,
// stays as it is.
func TestMaterialize(t *testing.T) {
	column := func(key string) (string, bool) {
		if key == "$browser" || key == "$os" {
			return `"mat_` + key + `"`, true
		}
		return "", false
	}
	f := func(name, want string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		if want == "" {
			want = c.Query
		}
		got, changed, err := Materialize(c.Query, parsed(t, name), column)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want || changed != (want != c.Query) {
			t.Fatalf("%s:\n got %s (changed %v)\nwant %s", name, got, changed, want)
		}
	}
	f("materialize_alias", `SELECT "mat_$browser" AS b, count() FROM events GROUP BY b`)
	// A whole select item keeps the name of the read, which ColumnName knows.
	f("materialize_item", `SELECT "mat_$browser" AS "json_extract_string(properties, '$.""$browser""')", count() FROM events GROUP BY "mat_$browser"`)
	// Of a join, the reads qualified by events' alias, in any case.
	f("materialize_join", `SELECT e."mat_$os" AS os, json_extract_string(p.properties, '$."$os"') AS person_os FROM events e JOIN persons p ON p.id = e.person_id WHERE E."mat_$os" = 'Mac OS X'`)
	f("materialize_persons", "")
	// DuckDB's locations count bytes, as Go's strings do.
	f("materialize_unicode", `SELECT 'héllo 😀' AS h, "mat_$os" AS os FROM events`)
	// The subquery's properties are persons'; the outer query's events'.
	f("materialize_subquery", `SELECT (SELECT count() FROM persons WHERE json_extract_string(properties, '$."$os"') = 'iOS') AS n FROM events WHERE "mat_$os" = 'Mac OS X'`)
	f("materialize_star", "")
	f("materialize_spelled", "")
	f("materialize_other_key", "")
	f("materialize_cte", "")
	// An outer query's events, read from a subquery over persons: left as JSON.
	f("materialize_correlated", "")
}
