package hogql

import "strings"

// maxPlaceholderValue bounds a value's text, as maxQueryBytes bounds a query's: a
// value is data, but DuckDB holds it with the query while it runs.
const maxPlaceholderValue = 64 << 10

// Placeholders binds PostHog's HogQL placeholders: each {name} of query (outside
// strings, quoted names and comments) becomes a positional parameter (?) bound to
// values[name], in the order they occur, so a value is always data and never SQL. A
// value is a string, a number, a boolean or null; a placeholder without a value, or a
// value of another kind, is an *Error. With no values the query is left as it is (a
// DuckDB struct literal such as {'a': 1} is never a placeholder: its keys are strings).
func Placeholders(query string, values map[string]any) (string, []any, error) {
	if len(values) == 0 {
		return query, nil, nil
	}
	toks := lex(query)
	var b strings.Builder
	var args []any
	for i := 0; i < len(toks); i++ {
		name, end, ok := placeholderAt(toks, i)
		if !ok {
			b.WriteString(toks[i].text)
			continue
		}
		v, found := values[name]
		if !found {
			return "", nil, errorf("the placeholder {%s} has no value in values", name)
		}
		switch v := v.(type) {
		case string:
			if len(v) > maxPlaceholderValue {
				return "", nil, errorf("the value of {%s} is longer than %d KB", name, maxPlaceholderValue>>10)
			}
		case float64, bool, nil:
		default:
			return "", nil, errorf("the value of {%s} must be a string, a number, a boolean or null", name)
		}
		b.WriteString("?")
		args = append(args, v)
		i = end
	}
	return b.String(), args, nil
}

// placeholderAt reports whether toks[i] starts a placeholder, "{" name "}" with
// spaces allowed inside the braces, and returns its name and the index of its "}".
func placeholderAt(toks []token, i int) (name string, end int, ok bool) {
	if toks[i].kind != tokPunct || toks[i].text != "{" {
		return "", 0, false
	}
	j := i + 1
	skip := func() {
		for j < len(toks) && toks[j].kind == tokSpace {
			j++
		}
	}
	skip()
	if j >= len(toks) || toks[j].kind != tokIdent {
		return "", 0, false
	}
	name = toks[j].text
	j++
	skip()
	if j >= len(toks) || toks[j].kind != tokPunct || toks[j].text != "}" {
		return "", 0, false
	}
	return name, j, true
}
