package hogql

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rewrite replaces, outside strings and comments, "<x>properties.<key>[.<key>...]"
// with json_extract_string(<x>properties, '$."<key>"...'), read as a DOUBLE where it is
// used as a number (numericUse), and person.properties.<key> with the same over the
// person_properties column; the other fields of events' lazy joins (person.id,
// group_0.properties.key, session.$session_duration) become the columns of the events
// view that hold them, a field a join has not is refused; $session_id and $window_id
// are properties, other $names quoted names ($group_0), where DuckDB would see
// parameters; a string literal on the right of -> or ->> that names a PostHog
// property ('$current_url') becomes the JSON path of that key. A name a query gives a
// table (FROM persons AS person) is the table's, not a join's. usesPerson reports
// whether the query reads the person's columns, which needs an events view that joins
// persons. Then the ClickHouse forms DuckDB cannot read
// become DuckDB's (dialect): backtick names first, which may be property keys
// (properties.`$browser`), and the calls, operators and scalar WITHs last, over the
// rewritten properties. The result is still to be checked (Check): the rewrite makes
// no query safe, it only changes how properties and ClickHouse's forms are written.
func Rewrite(query string) (rewritten string, usesPerson bool, err error) {
	var out strings.Builder
	toks := lex(backticks(query))
	aliases := joinAliases(toks)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tokString && afterArrow(toks, i) {
			out.WriteString(keyPath(t.text))
			continue
		}
		if column, ok, known := lazyField(toks, i); ok && !aliases[strings.ToLower(t.text)] {
			// person.id, e.person.created_at, group_0.key...: a column of the events
			// view (or of person_distinct_ids') that holds the joined field.
			if !known {
				return "", false, errorf("the field %s.%s does not exist here: %s", t.text, toks[i+2].text, lazyFieldNames[joinKind(lazyJoinOf(t.text))])
			}
			out.WriteString(column)
			usesPerson = usesPerson || strings.HasPrefix(column, "person_") && column != "person_id"
			i += 2
			continue
		}
		if key := strings.ToLower(t.text); t.kind == tokIdent && eventProperties[key] {
			// events' $session_id and $window_id: its properties' (a materialized
			// column where one holds it, as for properties.$session_id).
			column, prefix := "properties", out.String()
			if strings.HasSuffix(prefix, ".") {
				start := qualifierStart(prefix)
				column = prefix[start:] + column
				out.Reset()
				out.WriteString(prefix[:start])
			}
			fmt.Fprintf(&out, `json_extract_string(%s, '$."%s"')`, column, key)
			continue
		}
		if t.kind == tokIdent && dollarName(t.text) {
			// A column named with a $ ($group_0, sessions' $session_duration), which
			// DuckDB would read as a named parameter: quoted. Property keys after
			// properties. are the property form's, above.
			out.WriteString(`"` + t.text + `"`)
			continue
		}
		if t.kind != tokIdent || !strings.EqualFold(t.text, "properties") || !isDot(toks, i+1) || !isKey(toks, i+2) {
			out.WriteString(t.text)
			continue
		}
		// The column: properties, or <qualifier>.properties; person.properties is the
		// joined person's (person_properties, of the events or person_distinct_ids
		// qualified before it: e.person.properties), group_<n>.properties the joined
		// group's.
		column := "properties"
		prefix := out.String()
		if strings.HasSuffix(prefix, ".") {
			start := qualifierStart(prefix)
			qualifier := prefix[start : len(prefix)-1]
			prefix = prefix[:start]
			switch joined := lazyJoinOf(qualifier); {
			case joined != "" && joined != "session" && !aliases[joined]:
				column = joined + "_properties"
				usesPerson = usesPerson || joined == "person"
				if strings.HasSuffix(prefix, ".") {
					outer := qualifierStart(prefix)
					column = prefix[outer:] + column
					prefix = prefix[:outer]
				}
			default:
				column = qualifier + ".properties"
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
				return "", false, errorf("the property name %q cannot be read with the dot form; use json_extract_string", key)
			}
			path.WriteString(`."` + key + `"`)
			j += 2
		}
		read := fmt.Sprintf("json_extract_string(%s, '%s')", column, strings.ReplaceAll(path.String(), "'", "''"))
		if numericUse(toks, i, j) {
			// PostHog types a property by the values it has seen, and reads a numeric
			// one as a number: here, a property used as one is read as one (NULL
			// when its value is no number).
			read = "TRY_CAST(" + read + " AS DOUBLE)"
		}
		out.WriteString(read)
		i = j - 1
	}
	rewritten, err = dialect(out.String())
	if err != nil {
		return "", false, err
	}
	return rewritten, usesPerson, nil
}

// numericUse reports whether the property read of toks[i:j] (properties.<key>..., i
// at properties) is used as a number: an operand of arithmetic (+, -, *, /, %), or
// the value that sum, avg, sumIf or avgIf adds up.
func numericUse(toks []token, i, j int) bool {
	start := i // the read's first token, its qualifiers included
	for start >= 2 && isDot(toks, start-1) && (toks[start-2].kind == tokIdent || toks[start-2].kind == tokQuoted) {
		start -= 2
	}
	before, after := previousToken(toks, start-1), nextToken(toks, j)
	arithmetic := func(k int) bool {
		return k >= 0 && k < len(toks) && toks[k].kind == tokPunct && strings.Contains("+-*/%", toks[k].text) &&
			// not an arrow (->, ->>), a comment, nor a star (SELECT *)
			!(toks[k].text == "-" && k+1 < len(toks) && toks[k+1].text == ">")
	}
	if arithmetic(after) || before >= 0 && arithmetic(before) && toks[before].text != "*" || comparedWithNumber(toks, before, after) {
		return true
	}
	if before >= 0 && toks[before].text == "*" {
		// a product, not SELECT * or count(*)
		if k := previousToken(toks, before-1); k >= 0 && (toks[k].kind == tokIdent && !comparisonEdges[strings.ToLower(toks[k].text)] ||
			toks[k].kind == tokString || toks[k].text == ")" || toks[k].text == "]") {
			return true
		}
	}
	if before < 1 || toks[before].text != "(" || after >= len(toks) {
		return false
	}
	call := previousToken(toks, before-1)
	if call < 0 || toks[call].kind != tokIdent {
		return false
	}
	switch strings.ToLower(toks[call].text) {
	case "sum", "avg":
		return toks[after].text == ")"
	case "sumif", "avgif":
		return toks[after].text == ","
	}
	return false
}

// comparedWithNumber reports whether the read between toks[before] and toks[after] is
// compared (=, !=, <, <=, >, >=...) with a number written as such, on either side.
func comparedWithNumber(toks []token, before, after int) bool {
	comparison := func(k int) bool {
		return k >= 0 && k < len(toks) && toks[k].kind == tokPunct && len(toks[k].text) == 1 && strings.Contains("<>=!", toks[k].text)
	}
	number := func(k int) bool {
		return k >= 0 && k < len(toks) && toks[k].kind == tokIdent && toks[k].text[0] >= '0' && toks[k].text[0] <= '9'
	}
	k := after
	for comparison(k) && k-after < 2 {
		k++
	}
	if n := nextToken(toks, k); k > after && (number(n) || n < len(toks) && toks[n].text == "-" && number(nextToken(toks, n+1))) {
		return true
	}
	k = before
	for comparison(k) && before-k < 2 {
		k--
	}
	return k < before && number(previousToken(toks, k))
}

// qualifierStart is where the name that ends prefix, before its final dot, starts.
func qualifierStart(prefix string) int {
	return strings.LastIndexFunc(strings.TrimSuffix(prefix, "."), func(r rune) bool { return !isIdentRune(r) }) + 1
}

// lazyJoinOf is the prefix of the columns that hold a lazy join's fields, for the
// name of the join (person, group_0...), or "" for any other name.
func lazyJoinOf(name string) string {
	name = strings.ToLower(name)
	if name == "person" || name == "session" || len(name) == 7 && strings.HasPrefix(name, "group_") && name[6] >= '0' && name[6] <= '4' {
		return name
	}
	return ""
}

// eventProperties are the columns of PostHog's events table that are properties here.
var eventProperties = map[string]bool{"$session_id": true, "$window_id": true}

// dollarName reports whether name is a $ and a name ($group_0), not a parameter ($1).
func dollarName(name string) bool {
	if len(name) < 2 || name[0] != '$' {
		return false
	}
	r, _ := utf8.DecodeRuneInString(name[1:])
	return r == '_' || unicode.IsLetter(r)
}

// joinAliases are the names of lazy joins (lazyJoinOf) that toks give a table or a
// subquery as its alias (FROM persons AS person, FROM sessions session): a field of
// such a name is the table's, as the query says, and no join's.
func joinAliases(toks []token) map[string]bool {
	var aliases map[string]bool
	for i, t := range toks {
		if t.kind != tokIdent || lazyJoinOf(t.text) == "" || isDot(toks, nextToken(toks, i+1)) {
			continue
		}
		if p := previousToken(toks, i-1); p >= 0 && (toks[p].text == ")" || toks[p].kind == tokIdent &&
			(tables[strings.ToLower(toks[p].text)] || aliasWords[strings.ToLower(toks[p].text)])) {
			if aliases == nil {
				aliases = map[string]bool{}
			}
			aliases[strings.ToLower(t.text)] = true
		}
	}
	return aliases
}

// aliasWords are the words before a name that make it a table's: an alias (AS), or a
// table read by that name (a WITH query's).
var aliasWords = map[string]bool{"as": true, "from": true, "join": true}

// lazyFields are the fields of the lazy joins of events that are columns of the
// events view, and the column of each (group_<n>.key is $group_<n>); a join's
// properties are its <join>_properties, read by the property form.
var lazyFields = map[string]map[string]string{
	"person": {"id": "person_id", "created_at": "person_created_at", "is_identified": "person_is_identified", "properties": "person_properties"},
	"group":  {"key": `"$group_%s"`, "created_at": "group_%s_created_at", "properties": "group_%s_properties"},
}

// sessionFields are the fields of events' session join, the sessions table's columns.
var sessionFields = map[string]bool{"session_id": true, "id": true, "distinct_id": true, "$start_timestamp": true,
	"$end_timestamp": true, "$session_duration": true, "$entry_current_url": true, "$entry_pathname": true,
	"$exit_current_url": true, "$exit_pathname": true, "$urls": true, "$num_uniq_urls": true, "$pageview_count": true,
	"$autocapture_count": true, "$screen_count": true}

// lazyFieldNames say, by kind of join (joinKind), which fields it has.
var lazyFieldNames = map[string]string{
	"person":  "person has id, properties, created_at and is_identified",
	"group":   "a group has key, properties and created_at",
	"session": "session has the columns of sessions",
}

// joinKind is the kind of a lazy join (lazyJoinOf): person, session, or group for
// group_0 to group_4.
func joinKind(joined string) string {
	if strings.HasPrefix(joined, "group_") {
		return "group"
	}
	return joined
}

// lazyField is the column of toks[i:i+3] when they are a lazy join's field
// (person.id, group_0.created_at, person.properties whole): ok when toks[i:i+3] name
// a join's field (join.name), and known when the join has that field.
func lazyField(toks []token, i int) (column string, ok, known bool) {
	if toks[i].kind != tokIdent || !isDot(toks, i+1) || i+2 >= len(toks) || toks[i+2].kind != tokIdent {
		return "", false, false
	}
	joined := lazyJoinOf(toks[i].text)
	field := strings.ToLower(toks[i+2].text)
	if joined == "" || field == "properties" && isDot(toks, i+3) && isKey(toks, i+4) {
		return "", false, false
	}
	switch joinKind(joined) {
	case "person":
		column, known = lazyFields["person"][field]
		return column, true, known
	case "session":
		// The columns of PostHog's sessions table, each its own in the events view.
		if !sessionFields[field] {
			return "", true, false
		}
		if field == "id" {
			field = "session_id"
		}
		return `"session_` + field + `"`, true, true
	}
	column, known = lazyFields["group"][field]
	return strings.ReplaceAll(column, "%s", joined[6:]), true, known
}

// rewrittenRead is a property read as Rewrite writes it, json_extract_string(<column>,
// '$."<key>"...'), and as DuckDB names it in a column's name, read as a number or not
// (TRY_CAST(... AS DOUBLE)): the column in group 1, the path in 2, the cast in 3.
var rewrittenRead = regexp.MustCompile(`(TRY_CAST\()?json_extract_string\(((?:[A-Za-z_][A-Za-z0-9_]*\.)?(?:person_|group_[0-4]_)?properties), '\$((?:\."[^"]*")+)'\)( AS DOUBLE\))?`)

var rewrittenKey = regexp.MustCompile(`\."([^"]*)"`)

// ColumnName is the name PostHog gives a result column that DuckDB named column: each
// property read as it was written (properties.$current_url, person.properties.email,
// sum(properties.amount)), count() for DuckDB's count_star(); the rest as DuckDB
// names it.
func ColumnName(column string) string {
	if column == "count_star()" {
		return "count()"
	}
	if !strings.Contains(column, "json_extract_string(") {
		return column
	}
	return rewrittenRead.ReplaceAllStringFunc(column, func(read string) string {
		m := rewrittenRead.FindStringSubmatch(read)
		name := m[2]
		if before, joined, ok := strings.Cut(name, "_properties"); ok { // person_properties: person.properties
			name = before + "." + joined + "properties"
		}
		for _, key := range rewrittenKey.FindAllStringSubmatch(m[3], -1) {
			name += "." + strings.ReplaceAll(key[1], "''", "'")
		}
		switch cast, typed := m[1] != "", m[4] != ""; {
		case cast && !typed: // another cast's end
			return m[1] + name
		case typed && !cast:
			return name + m[4]
		}
		return name
	})
}

// StripLabel drops what PostHog writes after an EventsQuery column to name it,
// "coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen": a
// line comment ending the item, and the spaces around what is left. PostHog answers
// the column under the whole text.
func StripLabel(item string) string {
	toks := lex(strings.TrimSpace(item))
	if n := len(toks); n > 0 && toks[n-1].kind == tokComment && strings.HasPrefix(toks[n-1].text, "--") {
		toks = toks[:n-1]
	}
	var out strings.Builder
	for _, t := range toks {
		out.WriteString(t.text)
	}
	return strings.TrimSpace(out.String())
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
