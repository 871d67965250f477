package warehouse

import (
	"encoding/json"
	"fmt"
	"strings"
)

// HogQL here is DuckDB SQL plus the forms PostHog users write: properties.$key (and
// person.properties.key) for JSON property access, count() and a few ClickHouse
// functions (defined as macros on the query connection, see queryMacros). rewriteHogQL
// turns the property forms into DuckDB's; checkStatement then decides, on DuckDB's own
// parse of the result, whether it may run.

// rewriteHogQL replaces, outside strings and comments, "<x>properties.<key>[.<key>...]"
// with json_extract_string(<x>properties, '$."<key>"...'), and person.properties.<key>
// with the same over the person_properties column. It reports whether the query reads
// person properties, which needs the events view that joins persons.
func rewriteHogQL(query string) (string, bool, error) {
	var out strings.Builder
	usesPerson := false
	toks := lexHogQL(query)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tokString && afterArrow(toks, i) {
			out.WriteString(keyPath(t.text))
			continue
		}
		if t.kind != tokIdent || !strings.EqualFold(t.text, "properties") || !isDot(toks, i+1) || !isKey(toks, i+2) {
			out.WriteString(t.text)
			continue
		}
		// The column: properties, or <qualifier>.properties; person.properties is the
		// joined person's.
		column := "properties"
		prefix := out.String()
		if strings.HasSuffix(prefix, ".") {
			start := strings.LastIndexFunc(strings.TrimSuffix(prefix, "."), func(r rune) bool { return !isIdentRune(r) }) + 1
			qualifier := prefix[start : len(prefix)-1]
			if strings.EqualFold(qualifier, "person") {
				column, usesPerson = "person_properties", true
				prefix = prefix[:start]
			} else {
				column = qualifier + ".properties"
				prefix = prefix[:start]
			}
			out.Reset()
			out.WriteString(prefix)
		}
		var path strings.Builder
		path.WriteString("$")
		j := i + 1
		for isDot(toks, j) && isKey(toks, j+1) {
			key := toks[j+1].text
			if toks[j+1].kind == tokQuoted {
				key = strings.ReplaceAll(key[1:len(key)-1], `""`, `"`)
			}
			if strings.ContainsAny(key, `"\`) {
				return "", false, fmt.Errorf("the property name %q cannot be read with the dot form; use json_extract_string", key)
			}
			path.WriteString(`."` + key + `"`)
			j += 2
		}
		fmt.Fprintf(&out, "json_extract_string(%s, '%s')", column, strings.ReplaceAll(path.String(), "'", "''"))
		i = j - 1
	}
	return out.String(), usesPerson, nil
}

// afterArrow reports whether toks[i] is the right side of a -> or ->> operator.
func afterArrow(toks []token, i int) bool {
	j := i - 1
	for j >= 0 && (toks[j].kind == tokSpace || toks[j].kind == tokComment) {
		j--
	}
	return j >= 1 && toks[j].text == ">" && toks[j-1].text == "-" || j >= 2 && toks[j].text == ">" && toks[j-1].text == ">" && toks[j-2].text == "-"
}

// keyPath makes a string literal used as a JSON path that names a PostHog property
// ('$current_url': to DuckDB an invalid JSONPath) the path of that key; real paths
// ('$.a', '$[0]') and plain keys stay as written.
func keyPath(literal string) string {
	key := strings.ReplaceAll(literal[1:len(literal)-1], "''", "'")
	if len(key) < 2 || key[0] != '$' || key[1] == '.' || key[1] == '[' || strings.ContainsAny(key, `"\`) {
		return literal
	}
	return "'" + strings.ReplaceAll(`$."`+key+`"`, "'", "''") + "'"
}

func isDot(toks []token, i int) bool {
	return i < len(toks) && toks[i].kind == tokPunct && toks[i].text == "."
}
func isKey(toks []token, i int) bool {
	return i < len(toks) && (toks[i].kind == tokIdent || toks[i].kind == tokQuoted)
}

func isIdentRune(r rune) bool {
	return r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80
}

type tokenKind uint8

const (
	tokSpace tokenKind = iota
	tokComment
	tokString // '...'
	tokQuoted // "..."
	tokIdent  // including $name, which HogQL uses for PostHog's properties
	tokPunct
)

type token struct {
	kind tokenKind
	text string
}

// lexHogQL splits a query into tokens that, concatenated, give it back unchanged.
func lexHogQL(q string) []token {
	var toks []token
	for i := 0; i < len(q); {
		c := q[i]
		start := i
		kind := tokPunct
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			kind = tokSpace
			for i < len(q) && strings.IndexByte(" \t\n\r", q[i]) >= 0 {
				i++
			}
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			kind = tokComment
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			kind = tokComment
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = len(q)
			} else {
				i += end + 4
			}
		case c == '\'' || c == '"':
			kind = tokString
			if c == '"' {
				kind = tokQuoted
			}
			for i++; i < len(q); i++ {
				if q[i] == c {
					if i+1 < len(q) && q[i+1] == c { // a doubled quote is one quote
						i++
						continue
					}
					i++
					break
				}
			}
		case isIdentRune(rune(c)):
			kind = tokIdent
			for i < len(q) && isIdentRune(rune(q[i])) {
				i++
			}
		default:
			i++
		}
		if i > len(q) {
			i = len(q)
		}
		toks = append(toks, token{kind, q[start:i]})
	}
	return toks
}

// queryTables are the tables a user query may read: views of the project's rows, made
// on the query's connection (see Queries.run).
var queryTables = map[string]bool{"events": true, "persons": true, "groups": true}

// queryTableFunctions are the table functions a query may call: they generate rows and
// read nothing.
var queryTableFunctions = map[string]bool{"range": true, "generate_series": true, "unnest": true}

// queryFunctions are the scalar, aggregate and window functions, and the operators (as
// DuckDB's parser names them), a query may call. Everything else is refused: DuckDB
// also has functions that read files, settings or the catalog.
var queryFunctions = func() map[string]bool {
	m := map[string]bool{}
	for _, names := range []string{
		// aggregates
		`count count_star sum avg mean min max any_value arg_min arg_max argmin argmax min_by max_by bool_and bool_or
		first last list array_agg string_agg group_concat median mode quantile quantile_cont quantile_disc
		approx_count_distinct approx_quantile stddev stddev_pop stddev_samp variance var_pop var_samp corr covar_pop
		covar_samp histogram product entropy kurtosis skewness bit_and bit_or bit_xor fsum favg count_if sumif`,
		// window
		`row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value`,
		// numbers
		`abs ceil ceiling floor round sqrt cbrt pow power exp ln log log2 log10 sign greatest least trunc random pi
		isnan isinf isfinite even gcd lcm bit_count mod`,
		// text
		`lower upper lcase ucase length len strlen char_length character_length concat concat_ws substring substr
		left right trim ltrim rtrim replace reverse repeat lpad rpad position strpos instr contains starts_with
		prefix ends_with suffix split_part string_split str_split regexp_matches regexp_full_match regexp_replace
		regexp_extract regexp_extract_all regexp_split_to_array md5 sha256 hash format printf ascii chr translate
		levenshtein jaccard url_encode url_decode nfc_normalize strip_accents like_escape ilike_escape`,
		// time
		`now current_timestamp get_current_timestamp current_date today date_trunc datetrunc date_part datepart
		date_diff datediff date_sub datesub date_add strftime strptime try_strptime epoch epoch_ms epoch_us epoch_ns
		to_timestamp make_date make_timestamp make_time dayname monthname year month day hour minute second
		millisecond microsecond week weekday dayofweek dayofmonth dayofyear quarter isodow isoyear yearweek
		last_day age time_bucket timezone to_days to_hours to_minutes to_seconds to_weeks to_months to_years
		to_milliseconds to_microseconds`,
		// json
		`json_extract json_extract_string json_extract_path json_extract_path_text json_value json_exists json_keys
		json_type json_valid json_array_length json_contains json_object json_array to_json json json_structure`,
		// lists, structs, maps
		`list_value list_pack array_value array_extract list_extract list_element array_slice list_slice array_length
		list_contains list_has array_contains array_has list_position list_indexof list_distinct list_unique
		list_sort list_reverse_sort list_transform array_transform apply list_filter array_filter filter
		list_reduce array_reduce reduce list_concat list_cat array_concat array_cat flatten list_aggregate
		list_aggr aggregate list_sum list_min list_max list_avg list_count array_to_string list_string_agg
		struct_pack struct_extract struct_insert row map map_extract element_at cardinality map_keys map_values`,
		// conditions and the rest
		`coalesce ifnull nullif if iff typeof gen_random_uuid uuid`,
		// the table functions of queryTableFunctions, which are scalar functions too
		`range generate_series unnest`,
		// ClickHouse forms HogQL users write, defined as macros (queryMacros)
		`uniq tostartofday tostartofhour tostartofweek tostartofmonth tostartofyear todate todatetime tostring
		toint tofloat`,
		// operators
		`+ - * / // % ** ^ || ~~ !~~ ~~* !~~* ~~~ !~~~ -> ->> @> <@ && << >> & | ~ ^@ ! array_extract array_slice`,
	} {
		for _, name := range strings.Fields(names) {
			m[name] = true
		}
	}
	return m
}()

// queryMacros give the ClickHouse functions HogQL queries use most their DuckDB meaning.
const queryMacros = `
	CREATE OR REPLACE TEMP MACRO uniq(x) AS count(DISTINCT x);
	CREATE OR REPLACE TEMP MACRO toStartOfDay(x) AS date_trunc('day', x);
	CREATE OR REPLACE TEMP MACRO toStartOfHour(x) AS date_trunc('hour', x);
	CREATE OR REPLACE TEMP MACRO toStartOfWeek(x) AS date_trunc('week', x);
	CREATE OR REPLACE TEMP MACRO toStartOfMonth(x) AS date_trunc('month', x);
	CREATE OR REPLACE TEMP MACRO toStartOfYear(x) AS date_trunc('year', x);
	CREATE OR REPLACE TEMP MACRO toDate(x) AS CAST(x AS DATE);
	CREATE OR REPLACE TEMP MACRO toDateTime(x) AS CAST(x AS TIMESTAMPTZ);
	CREATE OR REPLACE TEMP MACRO toString(x) AS CAST(x AS VARCHAR);
	CREATE OR REPLACE TEMP MACRO toInt(x) AS TRY_CAST(x AS BIGINT);
	CREATE OR REPLACE TEMP MACRO toFloat(x) AS TRY_CAST(x AS DOUBLE)`

// statementChecker walks the JSON that json_serialize_sql makes of a query and refuses
// anything outside what a project's user may run. It denies by default: a node class it
// does not know is refused.
type statementChecker struct {
	// realTables are the names (lower case) of every table and view of the database,
	// which a CTE may not take: inside its own definition a CTE's name means the real
	// table, which is not filtered by project.
	realTables map[string]bool
	ctes       map[string]bool
	params     int // how many parameters the caller binds
}

// checkStatement parses serialized (json_serialize_sql's output) and returns why the
// query may not run, or nil.
func (c *statementChecker) checkStatement(serialized string) error {
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
			return queryErrorf("only SELECT queries can run here")
		}
		return queryErrorf("the query does not parse: %s", parsed.ErrorMessage)
	}
	if len(parsed.Statements) != 1 {
		return queryErrorf("send exactly one SELECT statement (this holds %d)", len(parsed.Statements))
	}
	var statement any
	if err := json.Unmarshal(parsed.Statements[0], &statement); err != nil {
		return fmt.Errorf("cannot read the parsed query: %w", err)
	}
	c.ctes = map[string]bool{}
	c.collectCTEs(statement)
	for name := range c.ctes {
		if c.realTables[name] || queryTables[name] {
			return queryErrorf("a WITH query may not be named %q, the name of a table", name)
		}
	}
	return c.walk(statement)
}

// collectCTEs gathers every CTE name the statement defines.
func (c *statementChecker) collectCTEs(v any) {
	switch v := v.(type) {
	case map[string]any:
		if cteMap, ok := v["cte_map"].(map[string]any); ok {
			entries, _ := cteMap["map"].([]any)
			for _, e := range entries {
				if entry, ok := e.(map[string]any); ok {
					if name, ok := entry["key"].(string); ok {
						c.ctes[strings.ToLower(name)] = true
					}
				}
			}
		}
		for _, child := range v {
			c.collectCTEs(child)
		}
	case []any:
		for _, child := range v {
			c.collectCTEs(child)
		}
	}
}

// Node types and expression classes that carry no risk of their own; their children
// are checked as any node.
var (
	safeNodeTypes = map[string]bool{
		"SELECT_NODE": true, "SET_OPERATION_NODE": true, "CTE_NODE": true, "RECURSIVE_CTE_NODE": true,
		"JOIN": true, "SUBQUERY": true, "EMPTY": true, "EXPRESSION_LIST": true,
		"ORDER_MODIFIER": true, "LIMIT_MODIFIER": true, "LIMIT_PERCENT_MODIFIER": true, "DISTINCT_MODIFIER": true,
	}
	safeExpressionClasses = map[string]bool{
		"COLUMN_REF": true, "CONSTANT": true, "COMPARISON": true, "CONJUNCTION": true, "OPERATOR": true,
		"CASE": true, "CAST": true, "BETWEEN": true, "STAR": true, "SUBQUERY": true, "LAMBDA": true,
		"POSITIONAL_REFERENCE": true, "COLLATE": true, "LAMBDA_REF": true,
	}
)

func (c *statementChecker) walk(v any) error {
	switch v := v.(type) {
	case []any:
		for _, child := range v {
			if err := c.walk(child); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if err := c.checkNode(v); err != nil {
			return err
		}
		for key, child := range v {
			if key == "value" { // a constant's value (skipped), or a CTE map entry (walked)
				if entry, ok := child.(map[string]any); !ok || entry["query"] == nil {
					continue
				}
			}
			if err := c.walk(child); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *statementChecker) checkNode(n map[string]any) error {
	class, _ := n["class"].(string)
	typ, _ := n["type"].(string)
	switch {
	case class == "FUNCTION" || class == "WINDOW" || class == "AGGREGATE":
		// The parser itself names some built-ins under schema main ([1, 2] is
		// main.list_value); only allow-listed built-in names pass, so that is harmless.
		name := strings.ToLower(stringField(n, "function_name"))
		schema := stringField(n, "schema")
		if stringField(n, "catalog") != "" || (schema != "" && schema != "main") || !queryFunctions[name] {
			return queryErrorf("the function %s is not allowed here", name)
		}
	case class == "PARAMETER":
		if c.params == 0 {
			return queryErrorf("the query may not have parameters")
		}
	case class != "":
		if !safeExpressionClasses[class] {
			return queryErrorf("%s expressions are not allowed here", strings.ToLower(class))
		}
	case typ == "BASE_TABLE":
		name := strings.ToLower(stringField(n, "table_name"))
		if stringField(n, "catalog_name") != "" || stringField(n, "schema_name") != "" {
			return queryErrorf("tables are read by name alone: events, persons or groups")
		}
		if at, ok := n["at_clause"]; ok && at != nil {
			return queryErrorf("AT clauses are not allowed here")
		}
		if !queryTables[name] && !c.ctes[name] {
			return queryErrorf("the table %s does not exist here: a query reads events, persons and groups", name)
		}
	case typ == "TABLE_FUNCTION":
		function, _ := n["function"].(map[string]any)
		name := strings.ToLower(stringField(function, "function_name"))
		if !queryTableFunctions[name] || stringField(function, "catalog") != "" || stringField(function, "schema") != "" {
			return queryErrorf("the table function %s is not allowed here", name)
		}
	case typ != "" && !safeNodeTypes[typ] && !strings.HasSuffix(typ, "_MODIFIER") && !knownLeafType(typ):
		return queryErrorf("%s is not allowed here", strings.ToLower(strings.ReplaceAll(typ, "_", " ")))
	}
	return nil
}

// knownLeafType: the type fields of value types and modifiers' parts, not query nodes.
func knownLeafType(typ string) bool {
	switch typ {
	case "ASCENDING", "DESCENDING", "ORDER_DEFAULT", "ORDER_DEFAULT_NULLS", "INVALID":
		return true
	}
	return false
}

func stringField(n map[string]any, key string) string {
	s, _ := n[key].(string)
	return s
}
