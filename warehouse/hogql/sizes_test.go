package hogql

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Check refuses a call whose constants make a value past its function's bound, with a
// refusal naming the function and the bound, and lets smaller ones through.
func TestCheckBoundsSizes(t *testing.T) {
	f := func(name, want string) {
		t.Helper()
		_, err := Check(parsed(t, name), 0)
		if want == "" {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return
		}
		var refused *Error
		if !errors.As(err, &refused) || refused.Detail != want {
			t.Fatalf("%s: %v\nwant the refusal %q", name, err, want)
		}
	}
	f("size_range_small", "")
	f("size_small", "")
	f("size_range_huge", "the function range makes lists of at most 10000 elements here: select FROM range(...) to generate more rows")
	f("size_range_step", "the function range makes lists of at most 10000 elements here: select FROM range(...) to generate more rows")
	f("size_generate_series_huge", "the function generate_series makes lists of at most 10000 elements here: select FROM generate_series(...) to generate more rows")
	f("range", "") // the table function streams its rows
	f("size_repeat_nested", "the function repeat makes values of at most 100000 bytes here")
	f("size_repeat_count", "the function repeat makes values of at most 100000 bytes here")
	f("size_lpad", "the function lpad pads to at most 100000 characters here")
	f("size_printf_width", "the widths and precisions of printf's format are at most 1000 here")
	f("size_printf_star", "the widths and precisions of printf's format are numbers here, not taken from the arguments")
	f("size_printf_format_column", "the function printf takes a constant string as its format here")
	f("size_format_width", "the widths and precisions of format's format are at most 1000 here")
	f("size_format_nested", "the widths and precisions of format's format are numbers here, not taken from the arguments")
	f("list_reduce", "the function list_reduce is not allowed here")
}

func TestFormatSpecs(t *testing.T) {
	f := func(specs func(string) []string, format string, want ...string) {
		t.Helper()
		if got := specs(format); !slices.Equal(got, want) {
			t.Fatalf("%q: %q, want %q", format, got, want)
		}
	}
	f(printfSpecs, "no specs, 100%% sure")
	f(printfSpecs, "%d and %-10.3f, %s", "", "-10.3", "")
	f(printfSpecs, "%*d %1$5s", "*", "1$5")
	f(printfSpecs, "ends in %", "")
	f(formatSpecs, "{{}} literal braces")
	f(formatSpecs, "{} {0:>10} {:.{}f}", "", "0:>10", ":.{}f")
	f(formatSpecs, "{unclosed", "unclosed")
}

// Macros replaces each function Check bounds, and each lambda function, with a guard
// that calls DuckDB's own under its system name; warehouse's tests run them.
func TestMacrosGuard(t *testing.T) {
	for _, name := range []string{"range", "generate_series", "repeat", "lpad", "rpad", "replace", "regexp_replace",
		"array_to_string", "levenshtein", "list_transform", "array_transform", "list_apply", "array_apply", "apply",
		"list_filter", "array_filter", "filter"} {
		if !strings.Contains(Macros, "TEMP MACRO "+name+"(") {
			t.Errorf("Macros do not replace %s", name)
		}
		if !functions[name] {
			t.Errorf("%s is guarded but not allowed", name)
		}
	}
	for _, name := range []string{"hedge_bounded", "hedge_unfolded"} {
		if functions[name] {
			t.Errorf("a query may call %s, a guard's helper", name)
		}
	}
}
