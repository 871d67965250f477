package hogql

import (
	"errors"
	"strings"
	"testing"
)

func TestRewrite(t *testing.T) {
	f := func(query, want string, wantPerson bool) {
		t.Helper()
		got, usesPerson, err := Rewrite(query)
		if err != nil {
			t.Fatalf("Rewrite(%q): %v", query, err)
		}
		if got != want || usesPerson != wantPerson {
			t.Fatalf("Rewrite(%q) = %q, %v\nwant %q, %v", query, got, usesPerson, want, wantPerson)
		}
	}
	// Property forms, of events, of an alias, of the joined person.
	f(`SELECT properties.$current_url FROM events`, `SELECT json_extract_string(properties, '$."$current_url"') FROM events`, false)
	f(`SELECT e.properties.$browser FROM events e`, `SELECT json_extract_string(e.properties, '$."$browser"') FROM events e`, false)
	f(`SELECT person.properties.email FROM events`, `SELECT json_extract_string(person_properties, '$."email"') FROM events`, true)
	f(`SELECT PERSON.Properties.email FROM events`, `SELECT json_extract_string(person_properties, '$."email"') FROM events`, true)
	f(`SELECT properties.a.b FROM events`, `SELECT json_extract_string(properties, '$."a"."b"') FROM events`, false)
	f(`SELECT properties."a key" FROM events`, `SELECT json_extract_string(properties, '$."a key"') FROM events`, false)
	// Quotes in a key are doubled in the path's literal.
	f(`SELECT properties."it's" FROM events`, `SELECT json_extract_string(properties, '$."it''s"') FROM events`, false)
	// Untouched: strings, comments, a bare properties column, properties of nothing.
	f(`SELECT 'properties.$x' FROM events`, `SELECT 'properties.$x' FROM events`, false)
	f(`SELECT 1 -- properties.$x`, `SELECT 1 -- properties.$x`, false)
	f(`SELECT 1 /* properties.$x */`, `SELECT 1 /* properties.$x */`, false)
	f(`SELECT properties FROM events`, `SELECT properties FROM events`, false)
	f(`SELECT properties. FROM events`, `SELECT properties. FROM events`, false)
	f(`SELECT myproperties.x FROM t`, `SELECT myproperties.x FROM t`, false)
	// A PostHog property name as a JSON path after -> and ->>; real paths stay.
	f(`SELECT properties->>'$current_url'`, `SELECT properties->>'$."$current_url"'`, false)
	f(`SELECT properties -> /* c */ '$lib'`, `SELECT properties -> /* c */ '$."$lib"'`, false)
	f(`SELECT properties->>'$.a', properties->'$[0]', properties->>'plain', properties->>'$'`,
		`SELECT properties->>'$.a', properties->'$[0]', properties->>'plain', properties->>'$'`, false)
	f(`SELECT properties->>'$it''s'`, `SELECT properties->>'$."$it''s"'`, false)
	f(`SELECT '$current_url'`, `SELECT '$current_url'`, false)
	f(``, ``, false)
	// A string or quoted name the query never closes is the rest of the query, left for
	// DuckDB to refuse; it is no key and no path.
	f(`SELECT properties->'`, `SELECT properties->'`, false)
	f(`SELECT properties->'$lib`, `SELECT properties->'$lib`, false)
	f(`SELECT properties."`, `SELECT properties."`, false)
	f(`SELECT properties."a`, `SELECT properties."a`, false)
	f(`SELECT properties."a"" FROM events`, `SELECT properties."a"" FROM events`, false)
}

func TestRewriteRefuses(t *testing.T) {
	f := func(query, want string) {
		t.Helper()
		_, _, err := Rewrite(query)
		var refused *Error
		if !errors.As(err, &refused) || refused.Detail != want {
			t.Fatalf("Rewrite(%q): %v, want the refusal %q", query, err, want)
		}
	}
	f(`SELECT properties."a""b" FROM events`, `the property name "a\"b" cannot be read with the dot form; use json_extract_string`)
	f(`SELECT properties."a\b" FROM events`, `the property name "a\\b" cannot be read with the dot form; use json_extract_string`)
}

// The lexer gives the query back unchanged, whatever it holds: Rewrite copies what it
// does not rewrite token by token.
func TestLex(t *testing.T) {
	f := func(query string, want ...string) {
		t.Helper()
		var texts []string
		for _, tok := range lex(query) {
			texts = append(texts, tok.text)
		}
		if strings.Join(texts, "") != query {
			t.Fatalf("lex(%q) does not give the query back: %q", query, texts)
		}
		if strings.Join(texts, "|") != strings.Join(want, "|") {
			t.Fatalf("lex(%q) = %q, want %q", query, texts, want)
		}
	}
	f(`SELECT a.$b`, `SELECT`, ` `, `a`, `.`, `$b`)
	f(`'it''s' "a""b"`, `'it''s'`, ` `, `"a""b"`)
	f(`'open`, `'open`)
	f(`"open`, `"open`)
	f("1 -- c\n2", `1`, ` `, `-- c`, "\n", `2`)
	f(`1 /* c */ 2`, `1`, ` `, `/* c */`, ` `, `2`)
	f(`/* open`, `/* open`)
	f(`a->>'x'`, `a`, `-`, `>`, `>`, `'x'`)
	f(`é1`, `é1`)
	f(``)
}

func TestColumnName(t *testing.T) {
	f := func(column, want string) {
		t.Helper()
		if got := ColumnName(column); got != want {
			t.Fatalf("ColumnName(%q) = %q, want %q", column, got, want)
		}
	}
	f(`json_extract_string(properties, '$."$current_url"')`, "properties.$current_url")
	f(`json_extract_string(e.properties, '$."a"."b"')`, "e.properties.a.b")
	f(`json_extract_string(person_properties, '$."email"')`, "person.properties.email")
	f(`json_extract_string(properties, '$."it''s"')`, "properties.it's")
	f("count_star()", "count()")
	f("count(DISTINCT person_id)", "count(DISTINCT person_id)")
	f(`json_extract_string(properties, '$.a')`, `json_extract_string(properties, '$.a')`)
}

func TestStripLabel(t *testing.T) {
	f := func(item, want string) {
		t.Helper()
		if got := StripLabel(item); got != want {
			t.Fatalf("StripLabel(%q) = %q, want %q", item, got, want)
		}
	}
	f(`coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen`, `coalesce(properties.$current_url, properties.$screen_name)`)
	f(`  event  `, `event`)
	f(`count() -- Total`, `count()`)
	f(`event -- one -- two`, `event`)
	f(`'a -- b'`, `'a -- b'`)
	f(`event /* c */`, `event /* c */`)
	f("event -- c\n", "event")
	f("event -- c\n+ 1", "event -- c\n+ 1")
	f(`-- only a label`, ``)
}

// FuzzRewrite: any text a user sends is lexed back to itself and rewritten without a
// panic (the query API hands Rewrite every query before DuckDB sees it).
func FuzzRewrite(f *testing.F) {
	for _, q := range []string{
		`SELECT properties.$current_url FROM events`, `SELECT person.properties."a""b" FROM events`,
		`SELECT properties->>'$it''s'`, `SELECT properties->'`, `SELECT properties."`, `/* open`, `-- x`,
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		var back strings.Builder
		for _, tok := range lex(q) {
			back.WriteString(tok.text)
		}
		if back.String() != q {
			t.Fatalf("lex(%q) gives back %q", q, back.String())
		}
		Rewrite(q)
	})
}
