package hogql

import (
	"errors"
	"fmt"
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
	// The lazy joins of events: the person's and the groups' fields, qualified or not;
	// the session's.
	f(`SELECT e.person.properties.email, pdi.person.properties.plan FROM events e`,
		`SELECT json_extract_string(e.person_properties, '$."email"'), json_extract_string(pdi.person_properties, '$."plan"') FROM events e`, true)
	f(`SELECT person.id, events.person.created_at, person.properties FROM events`,
		`SELECT person_id, events.person_created_at, person_properties FROM events`, true)
	f(`SELECT person.id FROM events`, `SELECT person_id FROM events`, false)
	f(`SELECT group_0.properties.name, e.group_4.key, group_1.created_at FROM events e`,
		`SELECT json_extract_string(group_0_properties, '$."name"'), e."$group_4", group_1_created_at FROM events e`, false)
	f(`SELECT group_5.key FROM t`, `SELECT group_5.key FROM t`, false)
	f(`WITH person AS (SELECT 1 AS x) SELECT person.x FROM person`, `WITH person AS (SELECT 1 AS x) SELECT person.x FROM person`, false)
	f(`SELECT session.$session_duration, e.session.id FROM events e`, `SELECT "session_$session_duration", e."session_session_id" FROM events e`, false)
	// A table aliased with a join's name is read as the query says.
	f(`SELECT person.id, person.properties.email FROM persons AS person`,
		`SELECT person.id, json_extract_string(person.properties, '$."email"') FROM persons AS person`, false)
	f(`SELECT session.session_id FROM sessions session`, `SELECT session.session_id FROM sessions session`, false)
	f(`SELECT group_0.key FROM (SELECT 1 AS key) group_0`, `SELECT group_0.key FROM (SELECT 1 AS key) group_0`, false)
	// events' $session_id and $window_id are properties.
	f(`SELECT $session_id, e.$window_id FROM events e`,
		`SELECT json_extract_string(properties, '$."$session_id"'), json_extract_string(e.properties, '$."$window_id"') FROM events e`, false)
	// A bare $name is a column; $1 a parameter.
	f(`SELECT $group_0, s.$pageview_count, $1 FROM sessions s`, `SELECT "$group_0", s."$pageview_count", $1 FROM sessions s`, false)
	// A property used as a number is read as one.
	f(`properties.n * 2`, `TRY_CAST(json_extract_string(properties, '$."n"') AS DOUBLE) * 2`, false)
	f(`SELECT 1 - e.properties.n, sum(properties.m), sumIf(properties.k, true), properties.s FROM events e`,
		`SELECT 1 - TRY_CAST(json_extract_string(e.properties, '$."n"') AS DOUBLE), sum(TRY_CAST(json_extract_string(properties, '$."m"') AS DOUBLE)), `+
			`sumIf(TRY_CAST(json_extract_string(properties, '$."k"') AS DOUBLE), true), json_extract_string(properties, '$."s"') FROM events e`, false)
	f(`SELECT *, properties.a, count(*) FROM events WHERE properties->>'x' = '1'`,
		`SELECT *, json_extract_string(properties, '$."a"'), count(*) FROM events WHERE properties->>'x' = '1'`, false)
	f(`SELECT properties.n > 5, 9.5 <= properties.m, properties.k != 1, properties.j > -1, properties.s = '5', properties.t = x`,
		`SELECT TRY_CAST(json_extract_string(properties, '$."n"') AS DOUBLE) > 5, 9.5 <= TRY_CAST(json_extract_string(properties, '$."m"') AS DOUBLE), `+
			`(TRY_CAST(json_extract_string(properties, '$."k"') AS DOUBLE) IS DISTINCT FROM 1), TRY_CAST(json_extract_string(properties, '$."j"') AS DOUBLE) > -1, `+
			`json_extract_string(properties, '$."s"') = '5', json_extract_string(properties, '$."t"') = x`, false)
	// HogQL's = NULL.
	f(`SELECT a = NULL, NULL = b, c == NULL, d <= NULL, x := NULL`, `SELECT a IS NULL, (b IS NULL), c IS NULL, d <= NULL, x := NULL`, false)
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
	f(`SELECT person.nothing FROM events`, `the field person.nothing does not exist here: person has id, properties, created_at and is_identified`)
	f(`SELECT e.group_2.name FROM events e`, `the field group_2.name does not exist here: a group has key, properties and created_at`)
	f(`SELECT session.duration FROM events`, `the field session.duration does not exist here: session has the columns of sessions`)
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
	// Reads inside an expression, read as numbers, of the joins.
	f(`sum(TRY_CAST(json_extract_string(properties, '$."amount"') AS DOUBLE))`, "sum(properties.amount)")
	f(`coalesce(json_extract_string(properties, '$."a"'), json_extract_string(e.group_0_properties, '$."b"'))`,
		"coalesce(properties.a, e.group_0.properties.b)")
	f(`TRY_CAST(x AS DOUBLE) + TRY_CAST(json_extract_string(properties, '$."n"') AS INTEGER)`,
		`TRY_CAST(x AS DOUBLE) + TRY_CAST(properties.n AS INTEGER)`)
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
		"SELECT properties.`$browser` ?? 'x'", `WITH 1 AS a, t AS (SELECT a) SELECT quantiles(0.5)(a) FROM t`,
		`SELECT multiIf(a, b, c), JSONExtractString(j, 'k', 1), formatDateTime(t, '%F'), extract(s, '(a)')`, "`open",
		`properties.n * 2`, `SELECT e.person.properties.x - 1, group_0.key, session.id, $group_0 = NULL FROM persons person`,
		`SELECT arrayMap((x, y) -> x + y, a, b), JSONExtract(j, 'k', 'Nullable(Int8)'), toStartOfInterval(t, INTERVAL 5 minute)`,
		`NULL = x`, `= NULL`, `arrayMap((`, `person.`, `sum(properties.x`,
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

// TestRewriteDialect: the ClickHouse forms DuckDB cannot read as macros become DuckDB's
// SQL (their answers are TestHogQLDialect's, in package warehouse).
func TestRewriteDialect(t *testing.T) {
	f := func(query, want string) {
		t.Helper()
		got, _, err := Rewrite(query)
		if err != nil {
			t.Fatalf("Rewrite(%q): %v", query, err)
		}
		if got != want {
			t.Fatalf("Rewrite(%q)\n = %q\nwant %q", query, got, want)
		}
	}
	// Backtick names, property keys among them.
	f("SELECT properties.`$browser`, `a``b`, `x\"y` FROM events",
		`SELECT json_extract_string(properties, '$."$browser"'), "a`+"`"+`b", "x""y" FROM events`)
	f("SELECT '`not a name`'", "SELECT '`not a name`'")
	// Parametric aggregates; DuckDB's own quantile(x, p) stays.
	f(`SELECT quantile(0.9)(x), quantiles(0.1, 0.5) (x), quantile(x, 0.5)`,
		`SELECT quantile_cont(x, 0.9), quantile_cont(x, [0.1, 0.5]), quantile(x, 0.5)`)
	// Calls inside calls, rewritten from the inside.
	f(`SELECT multiIf(a, any(b), c, extract(s, '(x)'), 'e')`,
		`SELECT CASE WHEN a THEN any_value(b) WHEN c THEN regexp_extract(s, '(x)', 1) ELSE 'e' END`)
	// SQL's forms of keywords stay: EXTRACT(part FROM x), position(a IN b), = ANY (...).
	f(`SELECT EXTRACT(year FROM t), position('a' IN s), x = ANY (SELECT 1), extract(s, 'a(?:b)')`,
		`SELECT EXTRACT(year FROM t), position('a' IN s), x = ANY (SELECT 1), regexp_extract(s, 'a(?:b)')`)
	f(`SELECT position(s, 'a'), like(s, 'a%'), notILike(s, 'a%')`, `SELECT strpos(s, 'a'), (s LIKE 'a%'), (s NOT ILIKE 'a%')`)
	f(`SELECT formatDateTime(t, '%Y-%m-%d %H:%i %M 100%%')`, `SELECT strftime(t, '%Y-%m-%d %H:%M %B 100%%')`)
	f(`SELECT JSONExtractRaw(properties, 'a', 2, -1)`, `SELECT coalesce(CAST(json_extract((properties), '$."a"[1][#-1]') AS VARCHAR), '')`)
	// ??, left to right, over calls, properties, brackets and casts.
	f(`SELECT a ?? b ?? c`, `SELECT coalesce(coalesce(a, b), c)`)
	f(`SELECT properties.x ?? 'none', f(x)[1] ?? (y + 1), x::INT ?? 0`,
		`SELECT coalesce(json_extract_string(properties, '$."x"'), 'none'), coalesce(f(x)[1], (y + 1)), coalesce(x::INT, 0)`)
	// Scalar WITHs stand for their expressions; WITH queries stay.
	f(`WITH 'p' AS e1, 2 AS n, t AS (SELECT n AS m) SELECT e1, x.e1, e1(), 3 AS e1 FROM t WHERE event = e1`,
		`WITH t AS (SELECT (2) AS m) SELECT ('p') AS e1, x.e1, e1(), 3 AS e1 FROM t WHERE event = ('p')`)
	f(`WITH 1 AS n SELECT f(n, 2), n FROM (SELECT n)`, `SELECT f((1), 2), (1) AS n FROM (SELECT (1))`)
	f(`WITH t AS (SELECT 1) SELECT * FROM t`, `WITH t AS (SELECT 1) SELECT * FROM t`)
	f(`WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r`, `WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r`)
	f(`WITH now() - INTERVAL 7 DAY AS since SELECT since`, `SELECT (now() - INTERVAL 7 DAY) AS since`)
	// != and <> that stand alone hold for a NULL, as HogQL's do; inside arithmetic they
	// stay SQL's.
	f(`SELECT count() FROM events WHERE properties.x != 'a' AND NOT (b <> 2) OR f(c)[1] != d`,
		`SELECT count() FROM events WHERE (json_extract_string(properties, '$."x"') IS DISTINCT FROM 'a') AND NOT ((b IS DISTINCT FROM 2)) OR (f(c)[1] IS DISTINCT FROM d)`)
	f(`SELECT a + 1 != 2, a != b * 2, CASE WHEN a != 1 THEN 0 END`, `SELECT a + 1 != 2, a != b * 2, CASE WHEN (a IS DISTINCT FROM 1) THEN 0 END`)
	f(`SELECT a <> ALL (SELECT 1), a != any(SELECT 1)`, `SELECT a <> ALL (SELECT 1), a != any(SELECT 1)`)
}

func TestCapturingGroup(t *testing.T) {
	for pattern, want := range map[string]bool{
		`a(b)`: true, `(?P<n>a)`: true, `(?<n>a)`: true, `a`: false, `a\(b\)`: false, `(?:a)`: false, `(?i)a`: false,
		`[(]a`: false, `[]()]`: false, `\\(a)`: true,
	} {
		if got := capturingGroup(pattern); got != want {
			t.Errorf("capturingGroup(%q) = %v, want %v", pattern, got, want)
		}
	}
}

func TestRewriteDialectRefuses(t *testing.T) {
	f := func(query, want string) {
		t.Helper()
		_, _, err := Rewrite(query)
		var refused *Error
		if !errors.As(err, &refused) || refused.Detail != want {
			t.Fatalf("Rewrite(%q): %v, want the refusal %q", query, err, want)
		}
	}
	f(`SELECT extract(s, p)`, `extract(s, pattern) takes a constant pattern here`)
	f(`SELECT formatDateTime(t, '%Q')`, `formatDateTime's specifier %Q is not supported here`)
	f(`SELECT formatDateTime(t, '%')`, `formatDateTime's format ends with a lone %`)
	f(`SELECT multiIf(a, b)`, `multiIf takes pairs of a condition and a value, then the value otherwise`)
	f(`SELECT JSONExtractString(j, 0)`, `the keys of the JSON functions are constant strings or non-zero integers here`)
	f(`SELECT JSONExtractString(j, 'a"b')`, `the JSON key "a\"b" cannot be read here`)
	f(`SELECT quantile(0.5, 0.6)(x)`, `quantile(p)(x) takes one level and one value`)
}

// TestRewriteDialectBounds: the rewrites that repeat text stop at a bound, before the
// text they make grows past it.
func TestRewriteDialectBounds(t *testing.T) {
	f := func(query string, want error) {
		t.Helper()
		if _, _, err := Rewrite(query); err != want {
			t.Fatalf("Rewrite(%.60q...): %v, want %v", query, err, want)
		}
	}
	// Each JSONExtractString reads its JSON twice: nested 30 deep, 2^30 copies.
	f(strings.Repeat("JSONExtractString(", 30)+"'{}'"+strings.Repeat(", 'a')", 30), errRewrittenLength)
	f("SELECT "+strings.Repeat("any(", maxRewriteDepth+2)+"1"+strings.Repeat(")", maxRewriteDepth+2), errRewriteDepth)
	f("SELECT 1"+strings.Repeat(" ?? 1", maxNullish+1), errNullish)
	// Each scalar uses the one before it three times.
	var with strings.Builder
	with.WriteString("WITH 'aaaaaaaa' AS s0")
	for i := 1; i < 20; i++ {
		fmt.Fprintf(&with, ", s%d || s%d || s%d AS s%d", i-1, i-1, i-1, i)
	}
	f(with.String()+" SELECT s19", errRewrittenLength)
}
