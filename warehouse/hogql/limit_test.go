package hogql

import "testing"

// The default LIMIT goes after the query's last token: before the comments that end
// it, in place of a final ';'. Whether DuckDB then reads it as the query's LIMIT is
// WithLimit's check, on DuckDB's parse (tested through the query API).
func TestAppendLimit(t *testing.T) {
	f := func(query, want string) {
		t.Helper()
		if got := appendLimit(query, 101); got != want {
			t.Fatalf("%q: %q, want %q", query, got, want)
		}
	}
	f("SELECT 1", "SELECT 1 LIMIT 101")
	f("SELECT 1\n", "SELECT 1 LIMIT 101\n")
	f("SELECT 1;", "SELECT 1 LIMIT 101")
	f("SELECT 1 ;\n", "SELECT 1 LIMIT 101\n")
	f("SELECT 1 -- one", "SELECT 1 LIMIT 101 -- one")
	f("SELECT 1 ORDER BY 1\n-- one\n/* two */", "SELECT 1 ORDER BY 1 LIMIT 101\n-- one\n/* two */")
	f("SELECT 1; -- one", "SELECT 1 LIMIT 101 -- one")
	f("SELECT '-- not a comment'", "SELECT '-- not a comment' LIMIT 101")
	f("SELECT \"a;\" FROM t", "SELECT \"a;\" FROM t LIMIT 101")
}
