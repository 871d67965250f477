package hogql

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parsed is testdata/<name>.json's parse of its query, as json_serialize_sql wrote it.
// TestHogQLTestdata, in package warehouse, makes these files with DuckDB and checks
// that they are still its parse.
func parsed(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Query      string          `json:"query"`
		Serialized json.RawMessage `json:"serialized"`
	}
	if err := json.Unmarshal(data, &c); err != nil || c.Serialized == nil {
		t.Fatalf("%s: no parsed query: %v", name, err)
	}
	return string(c.Serialized)
}

func TestCheckAccepts(t *testing.T) {
	f := func(name string, params int, wantCTEs ...string) {
		t.Helper()
		ctes, err := Check(parsed(t, name), params)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(ctes, wantCTEs) {
			t.Fatalf("%s: CTEs %q, want %q", name, ctes, wantCTEs)
		}
	}
	f("select_events", 0)
	f("property_count", 0)
	f("macros", 0)
	f("join_persons", 0)
	f("groups", 0)
	f("window", 0)
	f("count_window", 0)
	f("star_exclude_replace", 0)
	f("columns", 0)
	f("lambda", 0)
	f("values", 0)
	f("range", 0)
	f("json_cast", 0) // current_date, a bare word for a function; a cast to JSON
	f("having_subquery", 0)
	f("aggregate_in_subquery", 0)
	f("parameters", 2)
	// CTE names come back in lower case, once each, for the caller to check against
	// the catalog: a CTE named after a table of the database passes here.
	f("ctes", 0, "a", "b")
	f("ctes_materialized", 0, "a", "b")
	f("cte_recursive", 0, "r")
	f("ctes_nested", 0, "x")
	f("cte_named_after_table", 0, "ingestion_warnings")
}

func TestCheckRefuses(t *testing.T) {
	f := func(name string, params int, want string) {
		t.Helper()
		ctes, err := Check(parsed(t, name), params)
		var refused *Error
		if !errors.As(err, &refused) || refused.Detail != want || ctes != nil {
			t.Fatalf("%s: CTEs %q, error %v\nwant the refusal %q", name, ctes, err, want)
		}
	}
	const (
		onlySelect = "only SELECT queries can run here"
		nameAlone  = "tables are read by name alone: events, persons, groups, person_distinct_ids or sessions"
		setting    = "the function current_setting is not allowed here"
	)
	// Files, through table functions and names.
	f("read_csv", 0, "the table function read_csv is not allowed here")
	f("read_csv_list", 0, "the table function read_csv is not allowed here")
	f("read_text", 0, "the table function read_text is not allowed here")
	f("read_parquet", 0, "the table function read_parquet is not allowed here")
	f("glob", 0, "the table function glob is not allowed here")
	f("query_function", 0, "the table function query is not allowed here")
	f("query_table", 0, "the table function query_table is not allowed here")
	f("serialized_sql", 0, "the table function json_execute_serialized_sql is not allowed here")
	f("file_by_name", 0, "the table /etc/passwd does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("file_by_quoted_name", 0, "the table secret.csv does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("file_in_join", 0, "the table secret.csv does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")

	// Statements other than one SELECT.
	f("copy", 0, onlySelect)
	f("attach", 0, onlySelect)
	f("pragma", 0, onlySelect)
	f("set", 0, onlySelect)
	f("install", 0, onlySelect)
	f("call", 0, onlySelect)
	f("explain", 0, onlySelect)
	f("delete", 0, onlySelect)
	f("create_macro", 0, onlySelect)
	f("pivot", 0, onlySelect)
	f("write_after_read", 0, onlySelect)
	f("write_behind_comment", 0, onlySelect)
	f("two_statements", 0, "send exactly one SELECT statement (this holds 2)")
	f("unpivot", 0, "pivot is not allowed here")
	f("describe", 0, "show ref is not allowed here")
	f("syntax_error", 0, `the query does not parse: syntax error at or near "SELEC"`)

	// Settings, the environment, the catalog, types from it.
	f("current_setting", 0, setting)
	f("duckdb_settings", 0, "the table function duckdb_settings is not allowed here")
	f("settings_under_catalog", 0, "the table function duckdb_settings is not allowed here")
	f("getenv", 0, "the function getenv is not allowed here")
	f("current_database", 0, "the function current_database is not allowed here")
	f("current_user", 0, "current_user is not allowed here")
	f("version", 0, "the function version is not allowed here")
	f("pg_settings", 0, "the table pg_settings does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("information_schema", 0, nameAlone)
	f("list_aggregate", 0, "the function list_aggregate is not allowed here")
	f("inet", 0, "the type inet is not allowed here")
	f("catalog_type", 0, "the type some_type is not allowed here")
	f("export_state", 0, "export state (function) is not allowed here")

	// Other tables, under a schema or a catalog, or at another version.
	f("schema_events", 0, nameAlone)
	f("catalog_events", 0, nameAlone)
	f("ingestion_warnings", 0, "the table ingestion_warnings does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("time_travel", 0, "at clause (base table) is not allowed here")
	f("alias_as_table", 0, "the table e does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")

	// Expressions hold subqueries and lambdas, and each is checked.
	f("star_replace_subquery", 0, nameAlone)
	f("lambda_setting", 0, setting)
	f("columns_lambda_setting", 0, setting)
	f("where_subquery", 0, "the table function read_text is not allowed here")
	f("order_subquery", 0, setting)
	f("limit_subquery", 0, nameAlone)
	f("window_frame_subquery", 0, setting)
	f("filter_subquery", 0, setting)
	f("union_subquery", 0, "the table function read_text is not allowed here")
	f("lateral_subquery", 0, setting)
	f("recursive_subquery", 0, "the table pg_settings does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")

	// A CTE is seen in its own query, after its definition; its name is a plain
	// identifier other than a table's.
	f("cte_outside_query_plain", 0, "the table x does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("cte_in_sibling", 0, "the table x does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("cte_before_definition_plain", 0, "the table b does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("cte_in_own_definition", 0, "the table x does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("cte_recursive_first_part", 0, "the table r does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("cte_before_definition", 0, "the table secret.csv does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("cte_before_definition_materialized", 0, "the table secret.csv does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions")
	f("cte_outside_query", 0, `a WITH query is named with letters, digits and _ only, not "secret.csv"`)
	f("cte_named_like_file", 0, `a WITH query is named with letters, digits and _ only, not "secret.csv"`)
	f("cte_named_events", 0, `a WITH query may not be named "events", the name of a table`)

	// Exactly as many parameters as the caller binds.
	f("parameter_dollar", 0, "the query may not have parameters")
	f("parameter_named", 0, "the query may not have parameters")
	f("parameters", 0, "the query may not have parameters")
	f("parameters", 1, "the query has 2 parameters where 1 are bound")
	f("parameters", 3, "the query has 2 parameters where 3 are bound")
}

// Check refuses what it does not know: a node kind, a set field, a field of another
// shape than its kind's. The parse here is DuckDB's, changed as a newer DuckDB could.
func TestCheckRefusesTheUnknown(t *testing.T) {
	const unchecked = "the query has a part that cannot be checked, so it may not run"
	f := func(change func(node, item map[string]any), want string) {
		t.Helper()
		var serialized map[string]any
		if err := json.Unmarshal([]byte(parsed(t, "select_events")), &serialized); err != nil {
			t.Fatal(err)
		}
		node := serialized["statements"].([]any)[0].(map[string]any)["node"].(map[string]any)
		change(node, node["select_list"].([]any)[0].(map[string]any))
		changed, err := json.Marshal(serialized)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Check(string(changed), 0)
		if want == "" {
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			return
		}
		var refused *Error
		if !errors.As(err, &refused) || refused.Detail != want {
			t.Fatalf("%v, want the refusal %q", err, want)
		}
	}
	f(func(node, item map[string]any) {}, "")
	f(func(node, item map[string]any) { item["class"] = "NEW_KIND" }, "new kind expressions are not allowed here")
	f(func(node, item map[string]any) { node["type"] = "NEW_NODE" }, "new node is not allowed here")
	f(func(node, item map[string]any) { node["new_clause"] = map[string]any{"x": 1} }, "new clause (select node) is not allowed here")
	f(func(node, item map[string]any) { item["new_flag"] = true }, "new flag (column ref) is not allowed here")
	f(func(node, item map[string]any) { node["new_clause"], item["new_flag"] = nil, false }, "") // unset: nothing to refuse
	f(func(node, item map[string]any) { node["select_list"] = "event" }, unchecked)
	f(func(node, item map[string]any) { item["alias"] = map[string]any{"class": "CONSTANT"} }, unchecked)
	f(func(node, item map[string]any) { node["where_clause"] = []any{} }, unchecked)
}

func TestCheckStatements(t *testing.T) {
	f := func(serialized, want string) {
		t.Helper()
		_, err := Check(serialized, 0)
		var refused *Error
		if !errors.As(err, &refused) || refused.Detail != want {
			t.Fatalf("%s: %v, want the refusal %q", serialized, err, want)
		}
	}
	f(`{"error": false, "statements": []}`, "send exactly one SELECT statement (this holds 0)")
	f(`{"error": false, "statements": [1]}`, "the query has a part that cannot be checked, so it may not run")
	f(`{"error": true, "error_message": "Only SELECT statements can be serialized to json!"}`, "only SELECT queries can run here")
	f(`{"error": true, "error_message": "bad"}`, "the query does not parse: bad")

	// What is not json_serialize_sql's JSON is no refusal of the user's query.
	_, err := Check("not JSON", 0)
	var refused *Error
	if err == nil || errors.As(err, &refused) || !strings.HasPrefix(err.Error(), "cannot read the parsed query: ") {
		t.Fatalf("not JSON: %v", err)
	}
}

func TestCallsAggregate(t *testing.T) {
	f := func(name string, want bool) {
		t.Helper()
		var serialized struct {
			Statements []struct {
				Node map[string]any `json:"node"`
			} `json:"statements"`
		}
		if err := json.Unmarshal([]byte(parsed(t, name)), &serialized); err != nil || len(serialized.Statements) != 1 {
			t.Fatalf("%s: %v", name, err)
		}
		if got := CallsAggregate(serialized.Statements[0].Node); got != want {
			t.Fatalf("%s: CallsAggregate = %v, want %v", name, got, want)
		}
	}
	f("select_events", false)
	f("property_count", true) // count_star
	f("macros", true)         // uniq, a macro
	f("having_subquery", true)
	f("window", false)
	f("count_window", false)          // a window function, not an aggregate
	f("aggregate_in_subquery", false) // the subquery's own
	f("lambda", false)
}
