package hogql

import (
	"fmt"
	"strconv"
	"strings"
)

// The ClickHouse forms of HogQL that DuckDB's parser refuses, or that no macro can
// give (a name DuckDB reserves, a variable number of arguments, a constant read at
// rewrite time, a parametric aggregate), rewritten to DuckDB's SQL before Check reads
// the result. Like the property forms, they are rewritten outside strings and
// comments, and the result is checked as any query: nothing here makes a query safe.

// backticks makes each `name` of ClickHouse (the lexer's tokQuoted) a "name" of
// DuckDB, which has no backtick quoting: a " inside is doubled, a doubled backtick is
// one backtick.
func backticks(query string) string {
	if !strings.Contains(query, "`") {
		return query
	}
	var out strings.Builder
	for _, t := range lex(query) {
		if t.kind == tokQuoted && t.text[0] == '`' {
			name := strings.ReplaceAll(t.text[1:len(t.text)-1], "``", "`")
			t.text = `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		}
		out.WriteString(t.text)
	}
	return out.String()
}

// The bounds of the rewrites, which run before the caller measures the query: a
// rewrite may repeat an argument (the JSON functions read theirs twice) and a scalar
// WITH is put in place at each use, so nesting them grows the text exponentially.
const (
	// maxRewrittenBytes bounds the text the rewrites make (a query runs if it is
	// shorter still: the caller's bound).
	maxRewrittenBytes = 256 << 10
	// maxRewriteDepth bounds the nesting of rewritten calls, each rewritten from the
	// inside, and maxNullish the ?? operators, each rewritten over the whole query.
	maxRewriteDepth = 64
	maxNullish      = 100
)

var (
	errRewrittenLength = errorf("the query is longer than %d KB once its ClickHouse forms are rewritten", maxRewrittenBytes>>10)
	errRewriteDepth    = errorf("the query nests ClickHouse's functions more than %d deep", maxRewriteDepth)
	errNullish         = errorf("the query uses ?? more than %d times", maxNullish)
)

// dialect rewrites the calls of callRewrites, the ?? operator and a WITH clause's
// scalars (scalarCTEs) of query.
func dialect(query string) (string, error) {
	query, err := rewriteCalls(lex(query), 0)
	if err != nil {
		return "", err
	}
	if query, err = nullishOperators(query); err != nil {
		return "", err
	}
	return scalarCTEs(notEquals(equalsNull(query)))
}

// equalsNull rewrites x = NULL (and ==, and NULL = x) to x IS NULL, HogQL's rule: SQL's
// comparison with NULL is NULL, which drops every row. x != NULL becomes x IS
// DISTINCT FROM NULL (notEquals), which is x IS NOT NULL.
func equalsNull(query string) string {
	if !strings.Contains(strings.ToLower(query), "null") {
		return query
	}
	toks := lex(query)
	var b strings.Builder
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.text != "=" || i > 0 && strings.Contains("<>!=:", toks[i-1].text) {
			b.WriteString(t.text)
			continue
		}
		end := i // the operator's last token
		if i+1 < len(toks) && toks[i+1].text == "=" {
			end = i + 1
		}
		if n := nextToken(toks, end+1); n < len(toks) && strings.EqualFold(toks[n].text, "null") && toks[n].kind == tokIdent {
			after := nextToken(toks, n+1)
			if after >= len(toks) || toks[after].text != "(" && toks[after].text != "." && toks[after].text != ":" {
				if i == 0 || toks[i-1].kind != tokSpace {
					b.WriteString(" ")
				}
				b.WriteString("IS NULL")
				i = n
				continue
			}
		}
		// NULL = x: x IS NULL, when NULL stands alone on the left
		if p := previousToken(toks, i-1); p >= 0 && strings.EqualFold(toks[p].text, "null") && toks[p].kind == tokIdent &&
			comparisonEdge(toks, previousToken(toks, p-1)) {
			if right := operandEnd(toks, end+1); right >= 0 && comparisonEdge(toks, nextToken(toks, right+1)) {
				written := b.String()
				b.Reset()
				b.WriteString(strings.TrimSuffix(strings.TrimRight(written, " \t\n\r"), toks[p].text))
				b.WriteString("(" + join(toks[nextToken(toks, end+1):right+1]) + " IS NULL)")
				i = right
				continue
			}
		}
		b.WriteString(join(toks[i : end+1]))
		i = end
	}
	return b.String()
}

// notEquals rewrites a != b and a <> b to (a IS DISTINCT FROM b), HogQL's rule: a
// property that is missing (NULL) differs from any value, so properties.x != 'a' holds
// for the events without x (where SQL's != is NULL and drops them), and two NULLs are
// equal. Only a comparison that stands alone is rewritten, operands as ?? reads them
// between a clause's keyword, a bracket, a comma or AND/OR/NOT and the next such:
// in a + 1 != b, where operators bind the operands, the comparison stays SQL's.
func notEquals(query string) string {
	toks := lex(query)
	var b strings.Builder
	last := 0 // toks before last are written
	for i := 0; i+1 < len(toks); i++ {
		if !(toks[i].text == "!" && toks[i+1].text == "=" || toks[i].text == "<" && toks[i+1].text == ">") {
			continue
		}
		left, right := operandStart(toks, i-1), operandEnd(toks, i+2)
		if left < last || right < 0 || !comparisonEdge(toks, previousToken(toks, left-1)) || !comparisonEdge(toks, nextToken(toks, right+1)) ||
			quantified[strings.ToLower(toks[nextToken(toks, i+2)].text)] {
			continue
		}
		b.WriteString(join(toks[last:left]))
		b.WriteString("(" + join(toks[left:previousToken(toks, i-1)+1]) + " IS DISTINCT FROM " + join(toks[nextToken(toks, i+2):right+1]) + ")")
		last, i = right+1, right
	}
	b.WriteString(join(toks[last:]))
	return b.String()
}

// quantified are the words of SQL's x != ANY (subquery), which stays SQL's.
var quantified = map[string]bool{"any": true, "all": true, "some": true}

// comparisonEdges are the keywords that end what a comparison's operand may be.
var comparisonEdges = map[string]bool{"select": true, "where": true, "having": true, "qualify": true, "on": true,
	"and": true, "or": true, "not": true, "when": true, "then": true, "else": true, "end": true, "as": true,
	"from": true, "group": true, "order": true, "limit": true, "offset": true, "union": true, "except": true,
	"intersect": true, "window": true}

// comparisonEdge reports whether toks[i] (the start or the end of the query when out
// of range) ends a comparison's operand.
func comparisonEdge(toks []token, i int) bool {
	if i < 0 || i >= len(toks) {
		return true
	}
	switch t := toks[i]; t.kind {
	case tokPunct:
		return t.text == "(" || t.text == ")" || t.text == "," || t.text == ";"
	case tokIdent:
		return comparisonEdges[strings.ToLower(t.text)]
	}
	return false
}

// callRewrite makes DuckDB's SQL of a call from its arguments' SQL (already
// rewritten) and, for a parametric aggregate (quantile(0.9)(x)), its parameters'.
type callRewrite func(args, params []string) (string, error)

// callRewrites are the calls rewritten, by name in lower case; parametric are those
// that take parameters before their arguments.
var (
	callRewrites map[string]callRewrite
	parametric   = map[string]bool{"quantile": true, "quantiles": true}
)

func init() {
	like := func(op string) callRewrite {
		return func(args, _ []string) (string, error) {
			if len(args) != 2 {
				return "", nil
			}
			return "(" + args[0] + " " + op + " " + args[1] + ")", nil
		}
	}
	callRewrites = map[string]callRewrite{
		// any is a keyword of DuckDB's parser: ClickHouse's any(x) is DuckDB's
		// any_value(x), some value of the group.
		"any": func(args, _ []string) (string, error) {
			return "any_value(" + strings.Join(args, ", ") + ")", nil
		},
		// quantile(p)(x) interpolates between the two nearest values, as DuckDB's
		// quantile_cont does (ClickHouse samples past 8192 values); quantiles(p1,
		// p2...)(x) is the array of those.
		"quantile": func(args, params []string) (string, error) {
			if params == nil {
				return "", nil // DuckDB's own quantile(x, p)
			}
			if len(params) != 1 || len(args) != 1 {
				return "", errorf("quantile(p)(x) takes one level and one value")
			}
			return "quantile_cont(" + args[0] + ", " + params[0] + ")", nil
		},
		"quantiles": func(args, params []string) (string, error) {
			if len(params) == 0 || len(args) != 1 {
				return "", errorf("quantiles(p1, p2, ...)(x) takes levels and one value")
			}
			return "quantile_cont(" + args[0] + ", [" + strings.Join(params, ", ") + "])", nil
		},
		// multiIf(c1, v1, c2, v2, ..., else): the value of the first condition that
		// holds.
		"multiif": func(args, _ []string) (string, error) {
			if len(args) < 3 || len(args)%2 == 0 {
				return "", errorf("multiIf takes pairs of a condition and a value, then the value otherwise")
			}
			var b strings.Builder
			b.WriteString("CASE")
			for i := 0; i+1 < len(args); i += 2 {
				b.WriteString(" WHEN " + args[i] + " THEN " + args[i+1])
			}
			b.WriteString(" ELSE " + args[len(args)-1] + " END")
			return b.String(), nil
		},
		// extract(s, pattern) is ClickHouse's, SQL's EXTRACT(part FROM x) has no
		// comma: the first group's match when the pattern has a group, else the whole
		// match; '' without a match (as regexp_extract gives).
		"extract": func(args, _ []string) (string, error) {
			if len(args) != 2 {
				return "", nil
			}
			pattern, ok := stringLiteral(args[1])
			if !ok {
				return "", errorf("extract(s, pattern) takes a constant pattern here")
			}
			if capturingGroup(pattern) {
				return "regexp_extract(" + args[0] + ", " + args[1] + ", 1)", nil
			}
			return "regexp_extract(" + args[0] + ", " + args[1] + ")", nil
		},
		// position(haystack, needle): 1-based, 0 when absent; SQL's position(a IN b)
		// has no comma.
		"position": func(args, _ []string) (string, error) {
			if len(args) != 2 {
				return "", nil
			}
			return "strpos(" + args[0] + ", " + args[1] + ")", nil
		},
		// like(s, pattern) and its kin are SQL's operators, whose names DuckDB's
		// parser reserves.
		"like":           like("LIKE"),
		"ilike":          like("ILIKE"),
		"notlike":        like("NOT LIKE"),
		"notilike":       like("NOT ILIKE"),
		"formatdatetime": formatDateTime,
		// The higher-order functions over several arrays, whose lambda takes an element
		// of each: over one, they are macros (Macros).
		"arraymap":    multiArray("arrayMap", "list_transform(%s, %s)"),
		"arrayfilter": multiArray("arrayFilter", "list_filter(%s, %s)"),
		"arrayexists": multiArray("arrayExists", "(len(list_filter(%s, %s)) > 0)"),
		"arraycount":  multiArray("arrayCount", "len(list_filter(%s, %s))"),
		// toStartOfInterval(t, INTERVAL n unit[, zone]): the start of t's bucket of
		// that width; buckets of a day or less start at midnight (as ClickHouse's, which
		// count from the epoch); longer ones from DuckDB's origin, 3 January 2000 (a
		// Monday: a week's bucket starts on Monday, as in ClickHouse) or 1 January 2000.
		"tostartofinterval": func(args, _ []string) (string, error) {
			if len(args) < 2 || len(args) > 3 {
				return "", errorf("toStartOfInterval takes a time, an INTERVAL and optionally a time zone")
			}
			return "time_bucket(" + strings.Join(append([]string{args[1], args[0]}, args[2:]...), ", ") + ")", nil
		},
		// JSONExtract(json, keys..., 'Type'): the value as the type names it, as the
		// JSONExtract<Type> functions read it; Nullable(Type) is NULL where those give
		// their default.
		"jsonextract": func(args, _ []string) (string, error) {
			if len(args) < 2 {
				return "", errorf("JSONExtract takes a JSON value, the keys to read and a type")
			}
			typ, ok := stringLiteral(args[len(args)-1])
			if !ok {
				return "", errorf("JSONExtract takes a constant type here")
			}
			nullable := strings.HasPrefix(typ, "Nullable(") && strings.HasSuffix(typ, ")")
			if nullable {
				typ = typ[len("Nullable(") : len(typ)-1]
			}
			name := ""
			switch {
			case typ == "String":
				name = "jsonextractstring"
			case typ == "Bool" || typ == "Boolean":
				name = "jsonextractbool"
			case strings.HasPrefix(typ, "Float"):
				name = "jsonextractfloat"
			case strings.HasPrefix(typ, "Int") || strings.HasPrefix(typ, "UInt"):
				name = "jsonextractint"
			default:
				return "", errorf("JSONExtract's type %s is not supported here: String, Int*, UInt*, Float*, Bool, or Nullable of one", typ)
			}
			sql, err := callRewrites[name](args[:len(args)-1], nil)
			if err != nil || !nullable {
				return sql, err
			}
			present, err := jsonExtract(func(j, p string) string {
				return "coalesce(json_type(" + j + ", " + p + ") NOT IN ('NULL'), false)" // not <>, which notEquals rewrites
			})(args[:len(args)-1], nil)
			if err != nil {
				return "", err
			}
			return "CASE WHEN " + present + " THEN " + sql + " END", nil
		},
		// ClickHouse's JSON functions read the value at the keys (a string is an
		// object's key, an integer a 1-based index into an array, negative from the
		// end) and give the type's default ('', 0, false) when it is missing or of
		// another type.
		"jsonextractstring": jsonExtract(func(j, p string) string {
			return "CASE WHEN json_type(" + j + ", " + p + ") = 'VARCHAR' THEN json_extract_string(" + j + ", " + p + ") ELSE '' END"
		}),
		"jsonextractint": jsonExtract(func(j, p string) string {
			return "CASE WHEN json_type(" + j + ", " + p + ") IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN coalesce(TRY_CAST(trunc(CAST(json_extract_string(" +
				j + ", " + p + ") AS DOUBLE)) AS BIGINT), 0) ELSE 0 END"
		}),
		"jsonextractfloat": jsonExtract(func(j, p string) string {
			return "CASE WHEN json_type(" + j + ", " + p + ") IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN CAST(json_extract_string(" +
				j + ", " + p + ") AS DOUBLE) ELSE 0 END"
		}),
		// A boolean, where ClickHouse answers UInt8's 1 or 0 (as for its comparisons).
		"jsonextractbool": jsonExtract(func(j, p string) string {
			return "CASE WHEN json_type(" + j + ", " + p + ") = 'BOOLEAN' THEN CAST(json_extract_string(" + j + ", " + p + ") AS BOOLEAN) ELSE false END"
		}),
		// The value's JSON text, '' when missing.
		"jsonextractraw": jsonExtract(func(j, p string) string {
			return "coalesce(CAST(json_extract(" + j + ", " + p + ") AS VARCHAR), '')"
		}),
		// The JSON texts of an array's elements, [] when it is no array.
		"jsonextractarrayraw": jsonExtract(func(j, p string) string {
			all := p[:len(p)-1] + "[*]'" // the path's literal, of each element
			return "CASE WHEN json_type(" + j + ", " + p + ") = 'ARRAY' THEN CAST(json_extract(" + j + ", " + all + ") AS VARCHAR[]) ELSE [] END"
		}),
		// Whether the keys lead to a value, a boolean (ClickHouse's 1 or 0).
		"jsonhas": jsonExtract(func(j, p string) string {
			return "coalesce(json_exists(" + j + ", " + p + "), false)"
		}),
	}
}

// multiArray rewrites name(f, a1, a2, ...), ClickHouse's higher-order function over
// several arrays, to shape (of DuckDB's list function over a1 and a lambda): f's first
// parameter is a1's element, and each other one the element of its array at the same
// position, read by the index DuckDB gives a lambda of two parameters. Over one array
// it is left to the macro.
func multiArray(name, shape string) callRewrite {
	return func(args, _ []string) (string, error) {
		if len(args) <= 2 {
			return "", nil
		}
		params, body, ok := lambdaOf(args[0])
		if !ok || len(params) != len(args)-1 {
			return "", errorf("%s over %d arrays takes a lambda of %d parameters first", name, len(args)-1, len(args)-1)
		}
		const index = "hogql_i" // a name the lambda's body is refused to use
		if strings.Contains(strings.ToLower(body), index) {
			return "", errorf("%s's lambda may not name %s", name, index)
		}
		elements := map[string]string{}
		for k, p := range params[1:] {
			elements[p] = "(" + args[k+2] + ")[" + index + "]"
		}
		body, err := substitute(lex(body), elements)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(shape, args[1], "("+params[0]+", "+index+") -> "+body), nil
	}
}

// lambdaOf reads a lambda of several parameters, (x, y) -> body.
func lambdaOf(sql string) (params []string, body string, ok bool) {
	toks := lex(strings.TrimSpace(sql))
	if len(toks) == 0 || toks[0].text != "(" {
		return nil, "", false
	}
	end := closing(toks, 0)
	if end < 0 {
		return nil, "", false
	}
	for i := nextToken(toks, 1); i < end; i = nextToken(toks, i+1) {
		if toks[i].kind != tokIdent {
			return nil, "", false
		}
		params = append(params, toks[i].text)
		if i = nextToken(toks, i+1); i < end && toks[i].text != "," {
			return nil, "", false
		}
	}
	arrow := nextToken(toks, end+1)
	if arrow+1 >= len(toks) || toks[arrow].text != "-" || toks[arrow+1].text != ">" {
		return nil, "", false
	}
	return params, join(toks[arrow+2:]), len(params) > 0
}

// jsonExtract rewrites a ClickHouse JSON function whose keys are constants: value
// makes its SQL from the JSON's SQL and the path's literal.
func jsonExtract(value func(json, path string) string) callRewrite {
	return func(args, _ []string) (string, error) {
		if len(args) == 0 {
			return "", errorf("the JSON functions take a JSON value and the keys to read")
		}
		path := "$"
		for _, a := range args[1:] {
			if key, ok := stringLiteral(a); ok {
				if strings.ContainsAny(key, `"\`) {
					return "", errorf("the JSON key %q cannot be read here", key)
				}
				path += `."` + key + `"`
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(a))
			switch {
			case err != nil || n == 0:
				return "", errorf("the keys of the JSON functions are constant strings or non-zero integers here")
			case n > 0:
				path += "[" + strconv.Itoa(n-1) + "]"
			default:
				path += "[#" + strconv.Itoa(n) + "]"
			}
		}
		return value("("+args[0]+")", sqlString(path)), nil
	}
}

// stringLiteral is the value of a string literal's SQL (spaces around it allowed).
func stringLiteral(sql string) (string, bool) {
	toks := lex(strings.TrimSpace(sql))
	if len(toks) != 1 || toks[0].kind != tokString {
		return "", false
	}
	return strings.ReplaceAll(toks[0].text[1:len(toks[0].text)-1], "''", "'"), true
}

// capturingGroup reports whether an RE2 pattern has a capturing group: a ( that is not
// escaped, not in a class, and not (? other than (?P<name> or (?<name>.
func capturingGroup(pattern string) bool {
	inClass := false
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
			if i+1 < len(pattern) && pattern[i+1] == ']' {
				i++
			}
		case c == '(':
			rest := pattern[i+1:]
			if !strings.HasPrefix(rest, "?") || strings.HasPrefix(rest, "?P<") || strings.HasPrefix(rest, "?<") && !strings.HasPrefix(rest, "?<=") && !strings.HasPrefix(rest, "?<!") {
				return true
			}
		}
	}
	return false
}

// dateFormats are ClickHouse's formatDateTime specifiers and DuckDB's strftime's for
// them. %M is the month's name, %i the minutes (ClickHouse since 23.4, which
// PostHog runs); %e and %k are unpadded, as DuckDB has no padding with spaces.
var dateFormats = map[byte]string{
	'a': "%a", 'b': "%b", 'c': "%m", 'C': "%C", 'd': "%d", 'D': "%m/%d/%y", 'e': "%-d", 'F': "%Y-%m-%d",
	'h': "%I", 'H': "%H", 'i': "%M", 'I': "%I", 'j': "%j", 'k': "%-H", 'l': "%-I", 'm': "%m", 'M': "%B",
	'n': "\n", 'p': "%p", 'r': "%I:%M %p", 'R': "%H:%M", 's': "%S", 'S': "%S", 't': "\t", 'T': "%H:%M:%S",
	'u': "%u", 'V': "%V", 'w': "%w", 'W': "%A", 'y': "%y", 'Y': "%Y", 'z': "%z", '%': "%%",
}

// formatDateTime(t, format[, timezone]) is strftime of a constant format translated
// specifier by specifier; a specifier without a translation is refused.
func formatDateTime(args, _ []string) (string, error) {
	if len(args) < 2 || len(args) > 3 {
		return "", errorf("formatDateTime takes a time, a format and optionally a time zone")
	}
	format, ok := stringLiteral(args[1])
	if !ok {
		return "", errorf("formatDateTime takes a constant format here")
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		if i+1 == len(format) {
			return "", errorf("formatDateTime's format ends with a lone %%")
		}
		i++
		spec, ok := dateFormats[format[i]]
		if !ok {
			return "", errorf("formatDateTime's specifier %%%c is not supported here", format[i])
		}
		b.WriteString(spec)
	}
	t := args[0]
	if len(args) == 3 {
		t = "timezone(" + args[2] + ", " + t + ")"
	}
	return "strftime(" + t + ", " + sqlString(b.String()) + ")", nil
}

// rewriteCalls writes toks back with each call of callRewrites rewritten, its
// arguments first; toks are depth deep in rewritten calls.
func rewriteCalls(toks []token, depth int) (string, error) {
	if depth > maxRewriteDepth {
		return "", errRewriteDepth
	}
	var out strings.Builder
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		rewrite := callRewrites[strings.ToLower(t.text)]
		open := nextToken(toks, i+1)
		if t.kind != tokIdent || rewrite == nil || afterDot(toks, i) || open >= len(toks) || toks[open].text != "(" ||
			afterComparison(toks, i) {
			out.WriteString(t.text)
			continue
		}
		end := closing(toks, open)
		if end < 0 {
			out.WriteString(t.text)
			continue
		}
		args, err := callArgs(toks[open+1:end], depth)
		if err != nil {
			return "", err
		}
		var params []string
		if second := nextToken(toks, end+1); parametric[strings.ToLower(t.text)] && second < len(toks) && toks[second].text == "(" {
			if secondEnd := closing(toks, second); secondEnd >= 0 {
				params = args
				if args, err = callArgs(toks[second+1:secondEnd], depth); err != nil {
					return "", err
				}
				end = secondEnd
			}
		}
		sql, err := rewrite(args, params)
		if err != nil {
			return "", err
		}
		if sql == "" { // left as written
			out.WriteString(t.text)
			continue
		}
		if out.WriteString(sql); out.Len() > maxRewrittenBytes {
			return "", errRewrittenLength
		}
		i = end
	}
	return out.String(), nil
}

// callArgs splits a call's tokens at its commas and rewrites each argument, the call
// being nesting deep in rewritten calls.
func callArgs(toks []token, nesting int) ([]string, error) {
	var args []string
	depth, start := 0, 0
	for i := 0; i <= len(toks); i++ {
		if i < len(toks) {
			switch toks[i].text {
			case "(", "[", "{":
				depth++
				continue
			case ")", "]", "}":
				depth--
				continue
			case ",":
				if depth != 0 {
					continue
				}
			default:
				continue
			}
		}
		arg, err := rewriteCalls(toks[start:i], nesting+1)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(arg) != "" || i < len(toks) {
			args = append(args, strings.TrimSpace(arg))
		}
		start = i + 1
	}
	return args, nil
}

// closing is the index of the bracket that closes toks[open], -1 when none does.
func closing(toks []token, open int) int {
	depth := 0
	for i := open; i < len(toks); i++ {
		if toks[i].kind != tokPunct {
			continue
		}
		switch toks[i].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// opening is the index of the bracket that toks[end] closes, -1 when none does.
func opening(toks []token, end int) int {
	depth := 0
	for i := end; i >= 0; i-- {
		if toks[i].kind != tokPunct {
			continue
		}
		switch toks[i].text {
		case ")", "]", "}":
			depth++
		case "(", "[", "{":
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// nextToken is the index of the first token from i on that is neither space nor
// comment (len(toks) when none is).
func nextToken(toks []token, i int) int {
	for i < len(toks) && (toks[i].kind == tokSpace || toks[i].kind == tokComment) {
		i++
	}
	return i
}

// previousToken is the index of the last token up to i that is neither space nor
// comment (-1 when none is).
func previousToken(toks []token, i int) int {
	for i >= 0 && (toks[i].kind == tokSpace || toks[i].kind == tokComment) {
		i--
	}
	return i
}

// afterComparison reports whether toks[i] follows a comparison operator: SQL's
// x = ANY (subquery), where ANY is no call.
func afterComparison(toks []token, i int) bool {
	j := previousToken(toks, i-1)
	return j >= 0 && toks[j].kind == tokPunct && strings.Contains("=<>", toks[j].text)
}

func afterDot(toks []token, i int) bool {
	j := previousToken(toks, i-1)
	return j >= 0 && toks[j].kind == tokPunct && toks[j].text == "."
}

// nullishOperators rewrites each a ?? b, ClickHouse's ifNull(a, b), to coalesce(a, b),
// from the left (a ?? b ?? c is coalesce(coalesce(a, b), c)). Its operands are what
// binds tighter than any operator: a name, a literal, a call, a bracketed expression,
// with their .name, [index] and ::type suffixes.
func nullishOperators(query string) (string, error) {
	if strings.Count(query, "??") > maxNullish {
		return "", errNullish
	}
	for {
		if len(query) > maxRewrittenBytes {
			return "", errRewrittenLength
		}
		toks := lex(query)
		at := -1
		for i := 0; i+1 < len(toks); i++ {
			if toks[i].text == "?" && toks[i+1].text == "?" {
				at = i
				break
			}
		}
		if at < 0 {
			return query, nil
		}
		left, right := operandStart(toks, at-1), operandEnd(toks, at+2)
		if left < 0 || right < 0 {
			return query, nil // for DuckDB to refuse
		}
		var b strings.Builder
		for _, t := range toks[:left] {
			b.WriteString(t.text)
		}
		b.WriteString("coalesce(" + join(toks[left:previousToken(toks, at-1)+1]) + ", " + join(toks[nextToken(toks, at+2):right+1]) + ")")
		for _, t := range toks[right+1:] {
			b.WriteString(t.text)
		}
		query = b.String()
	}
}

func join(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.text)
	}
	return b.String()
}

// operandStart is the index of the first token of the operand that ends at or before
// toks[i] (spaces skipped), -1 when there is none.
func operandStart(toks []token, i int) int {
	i = previousToken(toks, i)
	if i < 0 {
		return -1
	}
	for {
		t := toks[i]
		switch {
		case t.kind == tokPunct && (t.text == ")" || t.text == "]"):
			if i = opening(toks, i); i < 0 {
				return -1
			}
			// A call's name, an indexed value.
			if j := previousToken(toks, i-1); j >= 0 && (toks[j].kind == tokIdent || toks[j].kind == tokQuoted ||
				toks[i].text == "[" && (toks[j].text == ")" || toks[j].text == "]")) {
				i = j
				continue
			}
		case t.kind == tokIdent || t.kind == tokQuoted || t.kind == tokString:
		default:
			return -1
		}
		// A prefix: name. or a cast's ::.
		j := previousToken(toks, i-1)
		if j >= 1 && toks[j].text == "." || j >= 1 && toks[j].text == ":" && toks[j-1].text == ":" {
			k := j - 1
			if toks[j].text == ":" {
				k = j - 2
			}
			if k = previousToken(toks, k); k >= 0 && (toks[k].kind != tokPunct || toks[k].text == ")" || toks[k].text == "]") {
				i = k
				continue
			}
		}
		return i
	}
}

// operandEnd is the index of the last token of the operand that starts at or after
// toks[i] (spaces skipped), -1 when there is none.
func operandEnd(toks []token, i int) int {
	i = nextToken(toks, i)
	if i >= len(toks) {
		return -1
	}
	switch t := toks[i]; {
	case t.kind == tokPunct && (t.text == "(" || t.text == "["):
		if i = closing(toks, i); i < 0 {
			return -1
		}
	case t.kind == tokIdent || t.kind == tokQuoted || t.kind == tokString:
	default:
		return -1
	}
	for {
		j := nextToken(toks, i+1)
		switch {
		case j < len(toks) && (toks[j].text == "(" || toks[j].text == "["):
			if i = closing(toks, j); i < 0 {
				return -1
			}
		case j+1 < len(toks) && toks[j].text == ".":
			i = nextToken(toks, j+1)
		case j+2 < len(toks) && toks[j].text == ":" && toks[j+1].text == ":":
			i = nextToken(toks, j+2)
		default:
			return i
		}
	}
}

// scalarCTEs rewrites ClickHouse's WITH <expression> AS <name>, at the head of the
// query: the name stands for the expression in the rest of the query (in brackets),
// as ClickHouse reads it; the WITH clause keeps its queries (name AS (SELECT ...)).
func scalarCTEs(query string) (string, error) {
	toks := lex(query)
	with := nextToken(toks, 0)
	if with >= len(toks) || !strings.EqualFold(toks[with].text, "with") {
		return query, nil
	}
	scalars := map[string]string{} // name: SQL
	var kept []string
	i := nextToken(toks, with+1)
	if i < len(toks) && strings.EqualFold(toks[i].text, "recursive") {
		return query, nil
	}
	for {
		start := i
		if end := namedCTEEnd(toks, i); end >= 0 {
			kept = append(kept, join(toks[start:end+1]))
			i = end + 1
		} else {
			// An expression, at depth 0 up to AS <name> followed by , or SELECT.
			as := -1
			for j := i; j < len(toks); j++ {
				if toks[j].text == "(" || toks[j].text == "[" {
					if j = closing(toks, j); j < 0 {
						return query, nil
					}
					continue
				}
				if !strings.EqualFold(toks[j].text, "as") {
					continue
				}
				name := nextToken(toks, j+1)
				after := nextToken(toks, name+1)
				if name < len(toks) && toks[name].kind == tokIdent && after < len(toks) &&
					(toks[after].text == "," || strings.EqualFold(toks[after].text, "select")) {
					as = j
					break
				}
			}
			if as < 0 || as == start {
				return query, nil
			}
			name := nextToken(toks, as+1)
			// A scalar may use those before it.
			sql, err := substitute(toks[start:as], scalars)
			if err != nil {
				return "", err
			}
			scalars[toks[name].text] = "(" + strings.TrimSpace(sql) + ")"
			i = name + 1
		}
		i = nextToken(toks, i)
		if i < len(toks) && toks[i].text == "," {
			i = nextToken(toks, i+1)
			continue
		}
		break
	}
	if len(scalars) == 0 {
		return query, nil
	}
	var b strings.Builder
	b.WriteString(join(toks[:with]))
	if len(kept) > 0 {
		queries, err := substitute(lex(strings.Join(kept, ", ")), scalars)
		if err != nil {
			return "", err
		}
		b.WriteString(toks[with].text + " " + queries + " ")
	}
	rest, err := substitute(toks[i:], scalars)
	if err != nil {
		return "", err
	}
	b.WriteString(rest)
	return b.String(), nil
}

// substitute writes toks back with each name of m that is a column reference (not
// after a dot, not a call, not an alias after AS) replaced by its SQL. A name that is
// a whole item of the select list of toks's query (at the top, not in brackets) keeps
// its name as the column's, as in ClickHouse: WITH 1 AS n SELECT n answers a column n.
func substitute(toks []token, m map[string]string) (string, error) {
	var b strings.Builder
	depth := 0
	for i, t := range toks {
		switch t.text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		}
		if sql, ok := m[t.text]; ok && t.kind == tokIdent && !afterDot(toks, i) {
			next, previous := nextToken(toks, i+1), previousToken(toks, i-1)
			if (next >= len(toks) || toks[next].text != "(") && (previous < 0 || !strings.EqualFold(toks[previous].text, "as")) {
				if depth == 0 && previous >= 0 && (strings.EqualFold(toks[previous].text, "select") || toks[previous].text == ",") &&
					(next >= len(toks) || toks[next].text == "," || strings.EqualFold(toks[next].text, "from")) {
					sql += " AS " + t.text
				}
				if b.WriteString(sql); b.Len() > maxRewrittenBytes {
					return "", errRewrittenLength
				}
				continue
			}
		}
		b.WriteString(t.text)
	}
	return b.String(), nil
}

// namedCTEEnd is the index of the ) that ends a WITH query starting at toks[i], name
// [(columns)] AS [[NOT] MATERIALIZED] (query); -1 when toks[i] starts none.
func namedCTEEnd(toks []token, i int) int {
	if i >= len(toks) || toks[i].kind != tokIdent && toks[i].kind != tokQuoted {
		return -1
	}
	j := nextToken(toks, i+1)
	if j < len(toks) && toks[j].text == "(" {
		if j = closing(toks, j); j < 0 {
			return -1
		}
		j = nextToken(toks, j+1)
	}
	if j >= len(toks) || !strings.EqualFold(toks[j].text, "as") {
		return -1
	}
	j = nextToken(toks, j+1)
	if j < len(toks) && strings.EqualFold(toks[j].text, "not") {
		j = nextToken(toks, j+1)
	}
	if j < len(toks) && strings.EqualFold(toks[j].text, "materialized") {
		j = nextToken(toks, j+1)
	}
	if j >= len(toks) || toks[j].text != "(" {
		return -1
	}
	return closing(toks, j)
}
