package warehouse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A query cannot make DuckDB build a value past the bounds of package hogql, whether
// the size comes from its constants (Check refuses it before it runs) or from its rows
// (the guards of hogql.Macros fail it before the value is built); smaller values, and
// the functions' other uses, are as before. The oversized ones here are small enough
// to be built, so that a hedge without the bounds fails this test rather than the host.
func TestHogQLBoundsSizes(t *testing.T) {
	f := newQueryFixture(t, Config{})
	const (
		rangeBound  = "the function range makes lists of at most 10000 elements here: select FROM range(...) to generate more rows"
		repeatBound = "the function repeat makes values of at most 100000 bytes here"
	)
	refused := func(query, want string) {
		t.Helper()
		start := time.Now()
		_, err := f.hogql(t, utc, query)
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Detail != want {
			t.Fatalf("%s: %v\nwant the refusal %q", query, err, want)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("%s: refused after %s", query, took)
		}
	}
	answers := func(query, want string) {
		t.Helper()
		result, err := f.hogql(t, utc, query)
		if err != nil || fmt.Sprint(result.Results) != want {
			t.Fatalf("%s: %v, %v\nwant %s", query, result, err, want)
		}
	}
	// Sizes in the query's constants: the checker's refusals.
	refused(`SELECT len(range(20000))`, rangeBound)
	refused(`SELECT length(repeat(repeat('a', 1000), 200))`, repeatBound)
	refused(`SELECT length(printf('%200000d', 1))`, "the widths and precisions of printf's format are at most 1000 here")
	// Sizes from rows, or computed: the guards' refusals, as DuckDB reports them.
	failed := func(message string) string { return "the query failed: Invalid Input Error: " + message }
	refused(`SELECT len(range(n)) FROM (SELECT 10001 AS n)`, failed(rangeBound))
	refused(`SELECT len(range(10 * 1001))`, failed(rangeBound))
	refused(`SELECT len(generate_series(0, n)) FROM (SELECT 10000 AS n)`,
		failed("the function generate_series makes lists of at most 10000 elements here: select FROM generate_series(...) to generate more rows"))
	refused(`SELECT len(range(TIMESTAMP '2026-01-01', TIMESTAMP '2027-01-01', INTERVAL 1 MINUTE))`, failed(rangeBound))
	refused(`SELECT length(repeat(event, 100000)) FROM events`, failed(repeatBound))
	refused(`SELECT length(repeat([1, 2, 3], 20000))`, failed(repeatBound))
	refused(`SELECT length(lpad(event, (length(event) * 20000)::INTEGER, '.')) FROM events`,
		failed("the function lpad pads to at most 100000 characters here"))
	refused(`SELECT length(replace(repeat('a', 10000), 'a', repeat('b', 1000)))`,
		failed("the function replace adds at most 100000 bytes of replacements here"))
	refused(`SELECT length(regexp_replace(repeat('a', 10000), '', repeat('b', 100), 'g'))`,
		failed("the function regexp_replace adds at most 100000 bytes of replacements here"))
	refused(`SELECT length(array_to_string(range(5000), '`+strings.Repeat("-", 100)+`'))`,
		failed("the function array_to_string adds at most 100000 bytes of separators here"))
	refused(`SELECT levenshtein(repeat('a', 2000), repeat('b', 2000))`,
		failed("the function levenshtein compares strings whose lengths multiply to at most 1000000 here"))
	// Within the bounds, and the functions' everyday uses.
	answers(`SELECT len(range(1000)), len(range(n)) FROM (SELECT 10000 AS n)`, "[[1000 10000]]")
	answers(`SELECT len(range(TIMESTAMP '2026-01-01', TIMESTAMP '2026-01-02', INTERVAL 1 HOUR)), generate_series(1, 3), range(3, 0, -1)`,
		"[[24 [1 2 3] [3 2 1]]]")
	answers(`SELECT count(*) FROM range(100000)`, "[[100000]]") // the table function streams
	answers(`SELECT repeat('ab', 3), repeat([1], 2), lpad('7', 3, '0'), rpad('7', 3, '0'), printf('%05d', 7), format('{:>3}', 7)`,
		"[[ababab [1 1] 007 700 00007   7]]")
	answers(`SELECT replace('a,b', ',', ', '), regexp_replace('a1b22', '[0-9]+', '#', 'g'), array_to_string([1, 2], ' - '), levenshtein('kitten', 'sitting')`,
		"[[a, b a#b# 1 - 2 3]]")
	answers(`SELECT list_transform([1, 2], x -> x * 2), list_filter([1, 2, 3], x -> x > 1), [x + 1 for x in [1, 2] if x > 1], list_apply([1], (x, i) -> x + i)`,
		"[[[2 4] [2 3] [3] [2]]]")
	answers(`SELECT range(NULL), repeat(NULL, 2), lpad(NULL, 2, ' ')`, "[[<nil> <nil> <nil>]]")
}

// DuckDB computes a call whose arguments are constant while it plans the query, where
// neither the time limit nor Stop interrupts it, whether or not a row needs it. The
// lambda functions, which square a list's size with ease, never are: they run with the
// query, here on no row at all. Planned, this one took 0.8 s and 250 MB.
func TestLambdasRunWithTheQuery(t *testing.T) {
	f := newQueryFixture(t, Config{})
	for _, query := range []string{
		`SELECT len(flatten(list_transform(range(1500), x -> range(1500)))) FROM events WHERE false`,
		`SELECT len(list_filter(range(1500), x -> len(range(1500)) > 0)) FROM events WHERE false`,
		`SELECT len(flatten([range(1500) for x in range(1500)])) FROM events WHERE false`,
	} {
		start := time.Now()
		result, err := f.hogql(t, utc, query)
		if err != nil || len(result.Results) != 0 {
			t.Fatalf("%s: %v %v", query, result, err)
		}
		if took := time.Since(start); took > 300*time.Millisecond {
			t.Fatalf("%s took %s: computed while planning", query, took)
		}
	}
}

// A query's text is bounded: DuckDB's parse of it, which the checker reads, weighs
// hundreds of times as much.
func TestHogQLQueryLength(t *testing.T) {
	f := newQueryFixture(t, Config{})
	long := "SELECT [" + strings.Repeat("1,", maxQueryBytes/2) + "1]"
	_, err := f.hogql(t, utc, long)
	var qe *QueryError
	if !errors.As(err, &qe) || qe.Detail != "the query is longer than 64 KB: shorten it" {
		t.Fatalf("a long query: %v", err)
	}
	eq := EventsQuery{Select: []string{"[" + strings.Repeat("1,", maxQueryBytes/2) + "1]"}}
	if _, err := f.w.Queries().Events(context.Background(), utc, eq, f.now); !errors.As(err, &qe) || qe.Detail != "the query is longer than 64 KB: shorten it" {
		t.Fatalf("a long EventsQuery item: %v", err)
	}
}
