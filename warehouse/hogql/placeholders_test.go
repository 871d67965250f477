package hogql

import (
	"errors"
	"fmt"
	"testing"
)

func TestPlaceholders(t *testing.T) {
	f := func(query string, values map[string]any, want string, wantArgs ...any) {
		t.Helper()
		got, args, err := Placeholders(query, values)
		if err != nil || got != want || fmt.Sprintf("%#v", args) != fmt.Sprintf("%#v", wantArgs) && len(args)+len(wantArgs) > 0 {
			t.Fatalf("Placeholders(%q) = %q %v %v, want %q %v", query, got, args, err, want, wantArgs)
		}
	}
	v := map[string]any{"key": "acme'; DROP TABLE events; --", "n": 2.0, "yes": true, "none": nil}
	f(`SELECT {n} + 1`, v, `SELECT ? + 1`, 2.0)
	f(`SELECT count() FROM events WHERE "$group_0" = { key } AND {yes} AND {none} IS NULL`, v,
		`SELECT count() FROM events WHERE "$group_0" = ? AND ? AND ? IS NULL`, v["key"], true, nil)
	f(`SELECT {n}, {n}`, v, `SELECT ?, ?`, 2.0, 2.0)
	// Strings, quoted names, comments and struct literals are not placeholders.
	f(`SELECT '{n}', "{n}" -- {n}`, v, `SELECT '{n}', "{n}" -- {n}`)
	f(`SELECT {'n': 1}`, v, `SELECT {'n': 1}`)
	// Without values nothing changes, placeholders included (DuckDB then refuses them).
	f(`SELECT {n}`, nil, `SELECT {n}`)

	refused := func(query string, values map[string]any, want string) {
		t.Helper()
		_, _, err := Placeholders(query, values)
		var e *Error
		if !errors.As(err, &e) || e.Detail != want {
			t.Fatalf("Placeholders(%q): %v, want the refusal %q", query, err, want)
		}
	}
	refused(`SELECT {missing}`, v, "the placeholder {missing} has no value in values")
	refused(`SELECT {list}`, map[string]any{"list": []any{1.0}}, "the value of {list} must be a string, a number, a boolean or null")
	refused(`SELECT {big}`, map[string]any{"big": string(make([]byte, maxPlaceholderValue+1))}, "the value of {big} is longer than 64 KB")
}
