package hogql

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Check decides, on serialized, the JSON that DuckDB's json_serialize_sql makes of a
// query, whether a project's user may run it with params bound parameters. A refusal
// is an *Error; serialized that is not such JSON is another error.
//
// It allows only what it recognizes: each kind of node it accepts lists its fields and
// what each one holds (a query, a table, an expression, a type, or plain data such as
// names and flags), every field is checked as what it holds, and a node kind it does
// not know, or a field it does not know that is set, refuses the query. A syntax
// DuckDB adds, or a corner of an old one, is refused until it is described here; it
// never passes unseen.
//
// Table names resolve as DuckDB's binder resolves them: a WITH query (CTE) is visible
// in the query that defines it, after its own definition, and in the queries nested in
// that one; any other name must be one of tables (functions.go). A CTE's name must be a
// plain identifier (letters, digits and _) other than those tables', so that a name
// taken for a CTE where DuckDB does not see one can only fail to resolve: never reach
// a table, nor a file.
//
// What Check cannot see is the caller's to do, before the query runs: refuse it when
// one of ctes, the names of its CTEs in lower case, names a table or view of the
// database (in any schema, DuckDB's own included); and run it where each of tables
// that the query names is a view of the project's rows (person_distinct_ids is a
// table of the database too, of every project) and Macros are defined (their guards
// bound the sizes Check cannot read from the query's constants).
func Check(serialized string, params int) (ctes []string, err error) {
	c := checker{params: params}
	if err := c.checkStatement(serialized); err != nil {
		return nil, err
	}
	return c.ctes, nil
}

// checker is the state of one Check.
type checker struct {
	params int      // how many parameters the caller binds: exactly that many must appear
	seen   int      // the parameters met
	ctes   []string // the CTE names the statement defines, lower case
}

// cteScope is the chain of CTE names visible at a point of the statement.
type cteScope struct {
	name   string
	parent *cteScope
}

func (s *cteScope) has(name string) bool {
	for ; s != nil; s = s.parent {
		if s.name == name {
			return true
		}
	}
	return false
}

func (s *cteScope) with(name string) *cteScope { return &cteScope{name: name, parent: s} }

// checkStatement reads serialized and returns why the query may not run, or nil.
func (c *checker) checkStatement(serialized string) error {
	var parsed struct {
		Error        bool              `json:"error"`
		ErrorType    string            `json:"error_type"`
		ErrorMessage string            `json:"error_message"`
		Statements   []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(serialized), &parsed); err != nil {
		return fmt.Errorf("cannot read the parsed query: %w", err)
	}
	if parsed.Error {
		if strings.Contains(parsed.ErrorMessage, "Only SELECT statements") {
			return errorf("only SELECT queries can run here")
		}
		return errorf("the query does not parse: %s", parsed.ErrorMessage)
	}
	if len(parsed.Statements) != 1 {
		return errorf("send exactly one SELECT statement (this holds %d)", len(parsed.Statements))
	}
	var statement any
	if err := json.Unmarshal(parsed.Statements[0], &statement); err != nil {
		return fmt.Errorf("cannot read the parsed query: %w", err)
	}
	c.seen, c.ctes = 0, nil
	if err := c.statement(statement, nil); err != nil {
		return err
	}
	if c.seen != c.params {
		if c.params == 0 {
			return errorf("the query may not have parameters")
		}
		return errorf("the query has %d parameters where %d are bound", c.seen, c.params)
	}
	return nil
}

// role is what a field of a node holds, and so how it is checked.
type role uint8

const (
	fData        role = iota // names, flags, enum values, positions: nothing that runs
	fLiteral                 // a constant's value: data that is never evaluated
	fExpr                    // an expression, or null
	fExprs                   // a list of expressions
	fExprLists               // a list of lists of expressions (VALUES rows)
	fQuery                   // a query node
	fQueries                 // a list of query nodes
	fStatement               // a SELECT statement: a query node and its parameter names
	fTable                   // a table reference
	fOrders                  // a list of ORDER BY terms
	fModifier                // a result modifier: ORDER BY, LIMIT, DISTINCT ON
	fModifiers               // a list of result modifiers
	fType                    // a type, as in a cast
	fTypes                   // a list of types
	fSample                  // sampling options, or null
	fCaseChecks              // CASE's WHEN ... THEN pairs
	fReplaceList             // * REPLACE's columns and their expressions
	fHandled                 // checked by the node's own code
)

// withCommon adds, to a node kind's own fields, those every expression, table
// reference and query node has.
func withCommon(own map[string]role) map[string]role {
	own["class"], own["type"], own["alias"], own["query_location"] = fData, fData, fData, fData
	return own
}

// The node kinds a query may hold, each with its fields. A kind missing here is
// refused; so is a field missing here that is set (at_clause: time travel; a
// function's export_state; a join's duplicate-eliminated columns).
var (
	queryNodeFields = map[string]map[string]role{
		"SELECT_NODE": withCommon(map[string]role{"modifiers": fModifiers, "cte_map": fHandled,
			"select_list": fExprs, "from_table": fTable, "where_clause": fExpr, "group_expressions": fExprs,
			"group_sets": fData, "aggregate_handling": fData, "having": fExpr, "sample": fSample, "qualify": fExpr}),
		"SET_OPERATION_NODE": withCommon(map[string]role{"modifiers": fModifiers, "cte_map": fHandled,
			"setop_type": fData, "setop_all": fData, "left": fQuery, "right": fQuery, "children": fQueries}),
		// A MATERIALIZED CTE: query is its definition, child the query that reads it.
		"CTE_NODE": withCommon(map[string]role{"modifiers": fModifiers, "cte_map": fHandled,
			"cte_name": fData, "query": fHandled, "child": fHandled, "aliases": fData}),
		// WITH RECURSIVE's UNION: left runs once, right reads the rows so far by name.
		"RECURSIVE_CTE_NODE": withCommon(map[string]role{"modifiers": fModifiers, "cte_map": fHandled,
			"cte_name": fData, "union_all": fData, "left": fHandled, "right": fHandled, "aliases": fData,
			"key_targets": fExprs}),
	}
	tableRefFields = map[string]map[string]role{
		"BASE_TABLE": withCommon(map[string]role{"sample": fSample, "schema_name": fData, "table_name": fData,
			"catalog_name": fData, "column_name_alias": fData}),
		"SUBQUERY": withCommon(map[string]role{"sample": fSample, "subquery": fStatement, "column_name_alias": fData}),
		"JOIN": withCommon(map[string]role{"sample": fSample, "left": fTable, "right": fTable, "condition": fExpr,
			"join_type": fData, "ref_type": fData, "using_columns": fData, "delim_flipped": fData}),
		"TABLE_FUNCTION": withCommon(map[string]role{"sample": fSample, "function": fHandled,
			"column_name_alias": fData, "with_ordinality": fData}),
		"EXPRESSION_LIST": withCommon(map[string]role{"sample": fSample, "expected_names": fData,
			"expected_types": fTypes, "values": fExprLists}),
		"EMPTY": withCommon(map[string]role{"sample": fSample}),
	}
	expressionFields = map[string]map[string]role{
		"CONSTANT":             withCommon(map[string]role{"value": fLiteral}),
		"COLUMN_REF":           withCommon(map[string]role{"column_names": fData}),
		"PARAMETER":            withCommon(map[string]role{"identifier": fData}),
		"POSITIONAL_REFERENCE": withCommon(map[string]role{"index": fData}),
		"COMPARISON":           withCommon(map[string]role{"left": fExpr, "right": fExpr}),
		"CONJUNCTION":          withCommon(map[string]role{"children": fExprs}),
		"OPERATOR":             withCommon(map[string]role{"children": fExprs}),
		"BETWEEN":              withCommon(map[string]role{"input": fExpr, "lower": fExpr, "upper": fExpr}),
		"CASE":                 withCommon(map[string]role{"case_checks": fCaseChecks, "else_expr": fExpr}),
		"CAST":                 withCommon(map[string]role{"child": fExpr, "cast_type": fType, "try_cast": fData}),
		"COLLATE":              withCommon(map[string]role{"child": fExpr, "collation": fData}),
		"FUNCTION": withCommon(map[string]role{"function_name": fData, "schema": fData, "catalog": fData,
			"children": fExprs, "filter": fExpr, "order_bys": fModifier, "distinct": fData, "is_operator": fData}),
		"WINDOW": withCommon(map[string]role{"function_name": fData, "schema": fData, "catalog": fData,
			"children": fExprs, "partitions": fExprs, "orders": fOrders, "arg_orders": fOrders, "start": fData,
			"end": fData, "start_expr": fExpr, "end_expr": fExpr, "offset_expr": fExpr, "default_expr": fExpr,
			"ignore_nulls": fData, "filter_expr": fExpr, "exclude_clause": fData, "distinct": fData}),
		"SUBQUERY": withCommon(map[string]role{"subquery_type": fData, "subquery": fStatement, "child": fExpr,
			"comparison_type": fData}),
		// *, t.*, COLUMNS(...): EXCLUDE and RENAME hold column names, REPLACE expressions.
		"STAR": withCommon(map[string]role{"relation_name": fData, "exclude_list": fData,
			"qualified_exclude_list": fData, "rename_list": fData, "replace_list": fReplaceList,
			"columns": fData, "expr": fExpr}),
		"LAMBDA": withCommon(map[string]role{"lhs": fExpr, "expr": fExpr}),
	}
	modifierFields = map[string]map[string]role{
		"ORDER_MODIFIER":         {"type": fData, "orders": fOrders},
		"LIMIT_MODIFIER":         {"type": fData, "limit": fExpr, "offset": fExpr},
		"LIMIT_PERCENT_MODIFIER": {"type": fData, "limit": fExpr, "offset": fExpr},
		"DISTINCT_MODIFIER":      {"type": fData, "distinct_on_targets": fExprs},
	}
	statementFields  = map[string]role{"node": fQuery, "named_param_map": fData}
	orderFields      = map[string]role{"type": fData, "null_order": fData, "expression": fExpr}
	sampleFields     = map[string]role{"sample_size": fLiteral, "is_percentage": fData, "method": fData, "seed": fData, "repeatable": fData}
	caseCheckFields  = map[string]role{"when_expr": fExpr, "then_expr": fExpr}
	replaceFields    = map[string]role{"key": fData, "value": fExpr}
	cteMapFields     = map[string]role{"map": fHandled}
	cteEntryFields   = map[string]role{"key": fData, "value": fHandled}
	cteFields        = map[string]role{"aliases": fData, "query": fHandled, "materialized": fData, "key_targets": fExprs}
	operatorTypes    = map[string]bool{"OPERATOR_NOT": true, "OPERATOR_IS_NULL": true, "OPERATOR_IS_NOT_NULL": true, "COMPARE_IN": true, "COMPARE_NOT_IN": true, "OPERATOR_COALESCE": true, "ARRAY_EXTRACT": true, "ARRAY_SLICE": true, "STRUCT_EXTRACT": true, "ARRAY_CONSTRUCTOR": true, "OPERATOR_TRY": true, "OPERATOR_UNPACK": true}
	conjunctionTypes = map[string]bool{"CONJUNCTION_AND": true, "CONJUNCTION_OR": true}
	// typeInfos are the kinds of type details a cast may name: all plain data. A type
	// the parser does not know (UNBOUND: a user type, or an extension's) is looked up
	// in the catalog, and only JSON, the json extension's, may be.
	typeInfos = map[string]bool{"STRUCT_TYPE_INFO": true, "LIST_TYPE_INFO": true, "ARRAY_TYPE_INFO": true,
		"DECIMAL_TYPE_INFO": true, "ENUM_TYPE_INFO": true, "STRING_TYPE_INFO": true, "UNBOUND_TYPE_INFO": true}
	// sqlValueFunctions are the bare names DuckDB's binder turns into function calls
	// when no column has that name (SQL's CURRENT_DATE, USER...), with the function
	// each calls; functions decides as for any call.
	sqlValueFunctions = map[string]string{"current_catalog": "current_catalog", "current_date": "current_date",
		"current_schema": "current_schema", "current_role": "current_role", "current_time": "get_current_time",
		"current_timestamp": "get_current_timestamp", "current_user": "current_user", "localtime": "current_localtime",
		"localtimestamp": "current_localtimestamp", "session_user": "session_user", "user": "user"}
	// cteNamePattern: a CTE is named like a plain identifier, which DuckDB never reads
	// as a file (paths and URLs hold '/', '.' or ':').
	cteNamePattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

func (c *checker) statement(v any, s *cteScope) error {
	n, ok := v.(map[string]any)
	if !ok {
		return errUnchecked
	}
	return c.fields(n, "SELECT", statementFields, s)
}

func (c *checker) query(v any, s *cteScope) error {
	n, ok := v.(map[string]any)
	if !ok {
		return errUnchecked
	}
	typ := stringField(n, "type")
	spec, ok := queryNodeFields[typ]
	if !ok {
		return errorf("%s is not allowed here", words(typ))
	}
	inner, err := c.defineCTEs(n["cte_map"], s)
	if err != nil {
		return err
	}
	switch typ {
	case "CTE_NODE":
		// Its cte_map repeats the WITH clause; the definition sees the CTEs before
		// it, the query that follows sees this one too.
		if err := c.cteName(stringField(n, "cte_name")); err != nil {
			return err
		}
		name, _ := asciiLower(stringField(n, "cte_name"))
		if err := c.query(n["query"], s); err != nil {
			return err
		}
		if err := c.query(n["child"], s.with(name)); err != nil {
			return err
		}
		inner = s
	case "RECURSIVE_CTE_NODE":
		if err := c.cteName(stringField(n, "cte_name")); err != nil {
			return err
		}
		name, _ := asciiLower(stringField(n, "cte_name"))
		if err := c.query(n["left"], inner); err != nil {
			return err
		}
		if err := c.query(n["right"], inner.with(name)); err != nil {
			return err
		}
	}
	return c.fields(n, typ, spec, inner)
}

// defineCTEs checks a WITH clause's definitions and returns the scope of the query
// that has it: each definition sees the CTEs before it, never itself nor those after
// it (DuckDB reads such a name as a table, which is how a CTE named after a file read
// the file).
func (c *checker) defineCTEs(v any, s *cteScope) (*cteScope, error) {
	if isZero(v) {
		return s, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errUnchecked
	}
	if err := c.fields(m, "WITH", cteMapFields, s); err != nil {
		return nil, err
	}
	entries, ok := m["map"].([]any)
	if !ok && m["map"] != nil {
		return nil, errUnchecked
	}
	for _, e := range entries {
		entry, ok := e.(map[string]any)
		if !ok {
			return nil, errUnchecked
		}
		if err := c.fields(entry, "WITH", cteEntryFields, s); err != nil {
			return nil, err
		}
		if err := c.cteName(stringField(entry, "key")); err != nil {
			return nil, err
		}
		name, _ := asciiLower(stringField(entry, "key"))
		definition, ok := entry["value"].(map[string]any)
		if !ok {
			return nil, errUnchecked
		}
		if err := c.fields(definition, "WITH", cteFields, s); err != nil {
			return nil, err
		}
		if err := c.statement(definition["query"], s); err != nil {
			return nil, err
		}
		s = s.with(name)
	}
	return s, nil
}

// cteName checks the name a WITH query is given and notes it.
func (c *checker) cteName(given string) error {
	name, _ := asciiLower(given)
	if !cteNamePattern.MatchString(name) {
		return errorf("a WITH query is named with letters, digits and _ only, not %q", given)
	}
	if tables[name] {
		return errorf("a WITH query may not be named %q, the name of a table", name)
	}
	if !slices.Contains(c.ctes, name) {
		c.ctes = append(c.ctes, name)
	}
	return nil
}

func (c *checker) table(v any, s *cteScope) error {
	n, ok := v.(map[string]any)
	if !ok {
		return errUnchecked
	}
	typ := stringField(n, "type")
	spec, ok := tableRefFields[typ]
	if !ok {
		return errorf("%s is not allowed here", words(typ))
	}
	switch typ {
	case "BASE_TABLE":
		name, ok := asciiLower(stringField(n, "table_name"))
		if stringField(n, "catalog_name") != "" || stringField(n, "schema_name") != "" {
			return errorf("tables are read by name alone: events, persons, groups, person_distinct_ids or sessions")
		}
		if !ok || !tables[name] && !s.has(name) {
			return errorf("the table %s does not exist here: a query reads events, persons, groups, person_distinct_ids and sessions", name)
		}
	case "TABLE_FUNCTION":
		function, ok := n["function"].(map[string]any)
		if !ok || stringField(function, "class") != "FUNCTION" {
			return errUnchecked
		}
		if err := checkFunctionName(function, tableFunctions, "table function"); err != nil {
			return err
		}
		if err := c.fields(function, "FUNCTION", expressionFields["FUNCTION"], s); err != nil {
			return err
		}
	}
	return c.fields(n, typ, spec, s)
}

func (c *checker) expr(v any, s *cteScope) error {
	if v == nil {
		return nil
	}
	n, ok := v.(map[string]any)
	if !ok {
		return errUnchecked
	}
	class := stringField(n, "class")
	spec, ok := expressionFields[class]
	if !ok {
		return errorf("%s expressions are not allowed here", words(class))
	}
	typ := stringField(n, "type")
	switch class {
	case "FUNCTION", "WINDOW":
		if err := checkFunctionName(n, functions, "function"); err != nil {
			return err
		}
		if class == "FUNCTION" {
			args, _ := n["children"].([]any)
			if err := sizeError(strings.ToLower(stringField(n, "function_name")), args); err != nil {
				return err
			}
		}
	case "COLUMN_REF":
		if names, _ := n["column_names"].([]any); len(names) == 1 {
			name, _ := names[0].(string)
			if function, ok := sqlValueFunctions[strings.ToLower(name)]; ok && !functions[function] {
				return errorf("%s is not allowed here", strings.ToLower(name))
			}
		}
	case "PARAMETER":
		c.seen++
	case "OPERATOR":
		if !operatorTypes[typ] {
			return errorf("the operator %s is not allowed here", words(typ))
		}
	case "CONJUNCTION":
		if !conjunctionTypes[typ] {
			return errorf("%s is not allowed here", words(typ))
		}
	case "COMPARISON":
		if !strings.HasPrefix(typ, "COMPARE_") {
			return errorf("%s is not allowed here", words(typ))
		}
	}
	return c.fields(n, class, spec, s)
}

func (c *checker) modifier(v any, s *cteScope) error {
	n, ok := v.(map[string]any)
	if !ok {
		return errUnchecked
	}
	typ := stringField(n, "type")
	spec, ok := modifierFields[typ]
	if !ok {
		return errorf("%s is not allowed here", words(typ))
	}
	return c.fields(n, typ, spec, s)
}

// fields checks each field of n as what spec says it holds; a field spec does not
// name must be unset.
func (c *checker) fields(n map[string]any, kind string, spec map[string]role, s *cteScope) error {
	for _, key := range slices.Sorted(maps.Keys(n)) { // sorted: the same query, the same answer
		v := n[key]
		r, ok := spec[key]
		if !ok {
			if isZero(v) {
				continue
			}
			return errorf("%s (%s) is not allowed here", words(key), words(kind))
		}
		if err := c.field(r, v, s); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) field(r role, v any, s *cteScope) error {
	switch r {
	case fData:
		if !isData(v) {
			return errUnchecked
		}
	case fLiteral, fHandled:
	case fExpr:
		return c.expr(v, s)
	case fExprs:
		return each(v, func(x any) error { return c.expr(x, s) })
	case fExprLists:
		return each(v, func(x any) error { return each(x, func(y any) error { return c.expr(y, s) }) })
	case fQuery:
		return c.query(v, s)
	case fQueries:
		return each(v, func(x any) error { return c.query(x, s) })
	case fStatement:
		return c.statement(v, s)
	case fTable:
		return c.table(v, s)
	case fOrders:
		return each(v, func(x any) error { return c.object(x, "ORDER BY", orderFields, s) })
	case fModifier:
		return c.modifier(v, s)
	case fModifiers:
		return each(v, func(x any) error { return c.modifier(x, s) })
	case fType:
		return checkType(v)
	case fTypes:
		return each(v, checkType)
	case fSample:
		if v == nil {
			return nil
		}
		return c.object(v, "TABLESAMPLE", sampleFields, s)
	case fCaseChecks:
		return each(v, func(x any) error { return c.object(x, "CASE", caseCheckFields, s) })
	case fReplaceList:
		return each(v, func(x any) error { return c.object(x, "REPLACE", replaceFields, s) })
	default:
		return errUnchecked
	}
	return nil
}

// object checks a part of a node that is a JSON object with known fields.
func (c *checker) object(v any, kind string, spec map[string]role, s *cteScope) error {
	n, ok := v.(map[string]any)
	if !ok {
		return errUnchecked
	}
	return c.fields(n, kind, spec, s)
}

// errUnchecked: the parse holds something of a shape the checker does not know.
var errUnchecked = &Error{Detail: "the query has a part that cannot be checked, so it may not run"}

// checkFunctionName refuses a call of a function outside allowed, or named under a
// catalog or a schema other than main (where the parser itself puts some built-ins:
// [1, 2] is main.list_value).
func checkFunctionName(n map[string]any, allowed map[string]bool, what string) error {
	name := strings.ToLower(stringField(n, "function_name"))
	schema := stringField(n, "schema")
	if stringField(n, "catalog") != "" || (schema != "" && schema != "main") || !allowed[name] {
		return errorf("the %s %s is not allowed here", what, name)
	}
	return nil
}

// checkType refuses a type that names something in the catalog (an unbound type other
// than JSON) or holds anything but type details.
func checkType(v any) error {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["class"]; ok {
			return errUnchecked
		}
		if v["id"] == "UNBOUND" {
			info, _ := v["type_info"].(map[string]any)
			if stringField(info, "type") != "UNBOUND_TYPE_INFO" {
				return errUnchecked
			}
		}
		if t, ok := v["type"].(string); ok && strings.HasSuffix(t, "_TYPE_INFO") {
			if !typeInfos[t] || !isZero(v["extension_info"]) {
				return errorf("the type %s is not allowed here", words(t))
			}
			if t == "UNBOUND_TYPE_INFO" {
				name := stringField(v, "name")
				if !strings.EqualFold(name, "json") || stringField(v, "catalog") != "" || stringField(v, "schema") != "" ||
					!isZero(v["user_type_modifiers"]) {
					return errorf("the type %s is not allowed here", name)
				}
			}
		}
		for _, child := range v {
			if err := checkType(child); err != nil {
				return err
			}
		}
	case []any:
		return each(v, checkType)
	}
	return nil
}

func each(v any, check func(any) error) error {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return errUnchecked
	}
	for _, x := range list {
		if err := check(x); err != nil {
			return err
		}
	}
	return nil
}

// isData reports whether v is plain data: scalars, and lists and objects of them that
// are not nodes.
func isData(v any) bool {
	switch v := v.(type) {
	case nil, string, float64, bool:
		return true
	case []any:
		for _, x := range v {
			if !isData(x) {
				return false
			}
		}
		return true
	case map[string]any:
		for key, x := range v {
			if key == "class" || key == "type" || key == "node" || !isData(x) {
				return false
			}
		}
		return true
	}
	return false
}

// isZero reports whether v is unset: null, false, 0, "", or a list or object of such.
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case []any:
		for _, x := range v {
			if !isZero(x) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, x := range v {
			if !isZero(x) {
				return false
			}
		}
		return true
	}
	return false
}

// asciiLower folds case as DuckDB does for names, ASCII letters only; ok is false for a
// name with other characters (strings.ToLower would turn the Kelvin sign into k, which
// DuckDB does not).
func asciiLower(name string) (lower string, ok bool) {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return "", false
		}
	}
	return strings.ToLower(name), true
}

// words turns a parser name (COMPARE_IN, at_clause) into words for a message.
func words(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", " "))
}

func stringField(n map[string]any, key string) string {
	s, _ := n[key].(string)
	return s
}
