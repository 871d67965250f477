package hogql

import (
	"fmt"
	"regexp"
	"strings"
)

// Rewrite replaces, outside strings and comments, "<x>properties.<key>[.<key>...]"
// with json_extract_string(<x>properties, '$."<key>"...'), and person.properties.<key>
// with the same over the person_properties column; a string literal on the right of
// -> or ->> that names a PostHog property ('$current_url') becomes the JSON path of
// that key. usesPerson reports whether the query reads person properties, which needs
// an events view that joins persons. Then the ClickHouse forms DuckDB cannot read
// become DuckDB's (dialect): backtick names first, which may be property keys
// (properties.`$browser`), and the calls, operators and scalar WITHs last, over the
// rewritten properties. The result is still to be checked (Check): the rewrite makes
// no query safe, it only changes how properties and ClickHouse's forms are written.
func Rewrite(query string) (rewritten string, usesPerson bool, err error) {
	var out strings.Builder
	toks := lex(backticks(query))
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
				return "", false, errorf("the property name %q cannot be read with the dot form; use json_extract_string", key)
			}
			path.WriteString(`."` + key + `"`)
			j += 2
		}
		fmt.Fprintf(&out, "json_extract_string(%s, '%s')", column, strings.ReplaceAll(path.String(), "'", "''"))
		i = j - 1
	}
	rewritten, err = dialect(out.String())
	if err != nil {
		return "", false, err
	}
	return rewritten, usesPerson, nil
}

// rewrittenColumn is the name DuckDB gives a column that Rewrite wrote from a property
// form: json_extract_string(<column>, '$."<key>"...').
var rewrittenColumn = regexp.MustCompile(`^json_extract_string\(((?:[A-Za-z_][A-Za-z0-9_]*\.)?properties|person_properties), '\$((?:\."[^"]*")+)'\)$`)

var rewrittenKey = regexp.MustCompile(`\."([^"]*)"`)

// ColumnName is the name PostHog gives a result column that DuckDB named column: a
// property read as it was written (properties.$current_url, person.properties.email),
// count() for DuckDB's count_star(); other columns as DuckDB names them.
func ColumnName(column string) string {
	if column == "count_star()" {
		return "count()"
	}
	m := rewrittenColumn.FindStringSubmatch(column)
	if m == nil {
		return column
	}
	name := m[1]
	if name == "person_properties" {
		name = "person.properties"
	}
	for _, key := range rewrittenKey.FindAllStringSubmatch(m[2], -1) {
		name += "." + strings.ReplaceAll(key[1], "''", "'")
	}
	return name
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
