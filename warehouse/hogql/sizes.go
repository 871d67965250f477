package hogql

import (
	"fmt"
	"math"
	"strings"
)

// The bounds of the functions whose result an argument makes as large, or as slow to
// compute, as it likes. DuckDB's memory_limit does not count the values an expression
// builds (only buffers, hash tables, sorts and aggregate states), and DuckDB computes a
// call whose arguments are constant while it plans the query, where neither the time
// limit nor a cancellation stops it (len(range(200000000)) takes 17 GB there). A value
// is built for up to 2048 rows at once, so a bound of one value weighs up to 2048 times
// as much in one step of a query.
//
// Two walls hold them. Check refuses a call whose size it can read from the query's
// constants (sizeError, formatError). The guards of Macros, which replace these
// functions on the query's connection, check the size at run time, before the value
// is built, whatever the arguments are; and they keep every such call, and every
// lambda function, from being computed while the query is planned. printf and format
// take any number of arguments, which a macro cannot: Check allows them only a
// constant format, whose widths it reads.
//
// Not bounded: a value a query doubles by using it twice, a || a over the columns of
// nested subqueries, or a list a lambda returns for each element of another. These run
// with the query, where the time limit and Stop interrupt it between two steps; DuckDB
// caps a string at 4 GB.
const (
	// maxListElements bounds the lists of range and generate_series as scalar
	// functions. As table functions (FROM range(n)) they stream rows and need none.
	maxListElements = 10_000
	// maxStringBytes bounds the values of repeat, lpad and rpad, and what replace,
	// regexp_replace and array_to_string may add to a string beyond a small multiple
	// of their input.
	maxStringBytes = 100_000
	// maxFormatWidth bounds the widths and precisions of printf's and format's
	// formats.
	maxFormatWidth = 1_000
	// maxEditCells bounds levenshtein's work: the product of its strings' lengths.
	maxEditCells = 1_000_000
	// growthFactor is how many bytes a replacement may put in the place of each byte
	// it replaces before its growth counts against maxStringBytes.
	growthFactor = 16
)

// The refusals of oversized calls, which Check and the guards of Macros share.

func listMessage(name string) string {
	return fmt.Sprintf("the function %s makes lists of at most %d elements here: select FROM %s(...) to generate more rows",
		name, maxListElements, name)
}

func padMessage(name string) string {
	return fmt.Sprintf("the function %s pads to at most %d characters here", name, maxStringBytes)
}

func growthMessage(name, what string) string {
	return fmt.Sprintf("the function %s adds at most %d bytes of %s here", name, maxStringBytes, what)
}

func formatConstant(name string) string {
	return fmt.Sprintf("the function %s takes a constant string as its format here", name)
}

func formatWidth(name string) string {
	return fmt.Sprintf("the widths and precisions of %s's format are at most %d here", name, maxFormatWidth)
}

func formatFromValues(name string) string {
	return fmt.Sprintf("the widths and precisions of %s's format are numbers here, not taken from the arguments", name)
}

var (
	repeatMessage = fmt.Sprintf("the function repeat makes values of at most %d bytes here", maxStringBytes)
	editMessage   = fmt.Sprintf("the function levenshtein compares strings whose lengths multiply to at most %d here", maxEditCells)
)

// sizeError refuses a call of a sized function (see the bounds above) whose size the
// query's constants show to be past its bound. A size that depends on a row is the
// guards' to check.
func sizeError(name string, args []any) error {
	switch name {
	case "range", "generate_series":
		if n, ok := rangeLength(name, args); ok && n > maxListElements {
			return errorf("%s", listMessage(name))
		}
	case "repeat":
		if n, ok := stringSize(map[string]any{"class": "FUNCTION", "function_name": name, "children": args}); ok && n > maxStringBytes {
			return errorf("%s", repeatMessage)
		}
		if len(args) == 2 {
			// Whatever it repeats, a value of at least a byte.
			if n, ok := literalNumber(args[1]); ok && n > maxStringBytes {
				return errorf("%s", repeatMessage)
			}
		}
	case "lpad", "rpad":
		if len(args) == 3 {
			if n, ok := literalNumber(args[1]); ok && n > maxStringBytes {
				return errorf("%s", padMessage(name))
			}
		}
	case "printf", "format":
		return formatError(name, args)
	}
	return nil
}

// rangeLength is about how many elements range or generate_series (which includes its
// end) makes of literal numbers; ok is false when an argument is not one.
func rangeLength(name string, args []any) (n float64, ok bool) {
	values := make([]float64, len(args))
	for i, a := range args {
		if values[i], ok = literalNumber(a); !ok {
			return 0, false
		}
	}
	switch len(values) {
	case 1:
		n = values[0]
	case 2:
		n = values[1] - values[0]
	case 3:
		if values[2] == 0 {
			return 0, false // DuckDB refuses it
		}
		n = math.Floor((values[1] - values[0]) / values[2])
	default:
		return 0, false
	}
	if name == "generate_series" {
		n++
	}
	return n, true
}

// stringSize is the size in bytes of a string the query's constants make: a literal,
// or repeat, lpad or rpad of literals; ok is false for any other expression.
func stringSize(v any) (n float64, ok bool) {
	node, _ := v.(map[string]any)
	switch stringField(node, "class") {
	case "CONSTANT":
		value, _ := node["value"].(map[string]any)
		typ, _ := value["type"].(map[string]any)
		s, isString := value["value"].(string)
		if stringField(typ, "id") != "VARCHAR" || !isString {
			return 0, false
		}
		return float64(len(s)), true
	case "FUNCTION":
		args, _ := node["children"].([]any)
		switch strings.ToLower(stringField(node, "function_name")) {
		case "repeat":
			if len(args) != 2 {
				return 0, false
			}
			size, ok := stringSize(args[0])
			count, countOK := literalNumber(args[1])
			return max(size*count, 0), ok && countOK
		case "lpad", "rpad":
			if len(args) != 3 {
				return 0, false
			}
			count, ok := literalNumber(args[1])
			return max(count, 0), ok
		}
	}
	return 0, false
}

// literalNumber is the value of a numeric literal, possibly negated or cast; ok is
// false for any other expression.
func literalNumber(v any) (float64, bool) {
	node, _ := v.(map[string]any)
	switch stringField(node, "class") {
	case "CONSTANT":
		value, _ := node["value"].(map[string]any)
		typ, _ := value["type"].(map[string]any)
		switch x := value["value"].(type) {
		case float64:
			if stringField(typ, "id") == "DECIMAL" {
				info, _ := typ["type_info"].(map[string]any)
				scale, _ := info["scale"].(float64)
				return x / math.Pow10(int(scale)), true
			}
			return x, true
		case map[string]any: // HUGEINT and UHUGEINT: two 64-bit halves
			upper, ok1 := x["upper"].(float64)
			lower, ok2 := x["lower"].(float64)
			return upper*math.Pow(2, 64) + lower, ok1 && ok2
		}
	case "CAST":
		return literalNumber(node["child"])
	case "FUNCTION":
		args, _ := node["children"].([]any)
		if stringField(node, "function_name") == "-" && len(args) == 1 {
			n, ok := literalNumber(args[0])
			return -n, ok
		}
	}
	return 0, false
}

// formatError refuses printf or format unless its format is a literal whose widths and
// precisions are numbers of at most maxFormatWidth: a width makes a value that large,
// and one taken from an argument (printf's *, format's nested {}) could be any size.
func formatError(name string, args []any) error {
	if len(args) == 0 {
		return nil // DuckDB refuses it
	}
	node, _ := args[0].(map[string]any)
	value, _ := node["value"].(map[string]any)
	format, ok := value["value"].(string)
	if stringField(node, "class") != "CONSTANT" || !ok {
		return errorf("%s", formatConstant(name))
	}
	var specs []string
	if name == "printf" {
		specs = printfSpecs(format)
	} else {
		specs = formatSpecs(format)
	}
	for _, spec := range specs {
		if strings.ContainsAny(spec, "*{") {
			return errorf("%s", formatFromValues(name))
		}
		number := 0
		for i := 0; i < len(spec); i++ {
			if c := spec[i]; c >= '0' && c <= '9' {
				if number = number*10 + int(c-'0'); number > maxFormatWidth {
					return errorf("%s", formatWidth(name))
				}
			} else {
				number = 0
			}
		}
	}
	return nil
}

// printfSpecs are the conversion specifications of a printf format, each from after its
// % to its conversion letter (or to the end).
func printfSpecs(format string) []string {
	var specs []string
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			i++
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0123456789.*$'hlLqjzt", format[j]) >= 0 {
			j++
		}
		specs = append(specs, format[i+1:j])
		i = j
	}
	return specs
}

// formatSpecs are the replacement fields of a format (fmt's syntax) without their
// braces: argument id and spec. A nested brace stays in its field.
func formatSpecs(format string) []string {
	var specs []string
	for i := 0; i < len(format); i++ {
		if format[i] != '{' {
			continue
		}
		if i+1 < len(format) && format[i+1] == '{' {
			i++
			continue
		}
		depth, j := 1, i+1
		for ; j < len(format) && depth > 0; j++ {
			switch format[j] {
			case '{':
				depth++
			case '}':
				depth--
			}
		}
		specs = append(specs, strings.TrimSuffix(format[i+1:j], "}"))
		i = j - 1
	}
	return specs
}

// guardMacros are the Macros that replace the sized functions and the lambda functions
// on a query's connection. Each calls DuckDB's own function (system.main, a name Check
// never lets a query use) through hedge_bounded, which fails the query with the same
// refusal as Check when the size the call would build passes its bound, before it is
// built. The random() >= 0 of hedge_unfolded, always true, is volatile: DuckDB never
// computes an expression holding it while it plans the query, where the time limit
// cannot stop it, so every guarded call, and every lambda call, runs with the query.
var guardMacros = func() string {
	var b strings.Builder
	macro := func(format string, args ...any) {
		fmt.Fprintf(&b, ";\n\tCREATE OR REPLACE TEMP MACRO "+format, args...)
	}
	macro(`hedge_unfolded(v) AS CASE WHEN random() >= 0 THEN v END`)
	macro(`hedge_bounded(v, size, most, message) AS CASE WHEN size > most THEN error(message) ELSE hedge_unfolded(v) END`)
	for _, name := range []string{"range", "generate_series"} {
		extra := ""
		if name == "generate_series" {
			extra = " + 1"
		}
		most, message := maxListElements, sqlString(listMessage(name))
		macro(`%[1]s(a) AS system.main.%[1]s(hedge_bounded(a, a::HUGEINT%[2]s, %[3]d, %[4]s)),
		(a BIGINT, b BIGINT) AS system.main.%[1]s(a, hedge_bounded(b, b::HUGEINT - a%[2]s, %[3]d, %[4]s)),
		(a BIGINT, b BIGINT, c BIGINT) AS system.main.%[1]s(a, b, hedge_bounded(c, (b::HUGEINT - a) // c%[2]s, %[3]d, %[4]s)),
		(a TIMESTAMP, b TIMESTAMP, c INTERVAL) AS system.main.%[1]s(a, b, hedge_bounded(c, (epoch(b) - epoch(a)) / epoch(c)%[2]s, %[3]d, %[4]s)),
		(a TIMESTAMPTZ, b TIMESTAMPTZ, c INTERVAL) AS system.main.%[1]s(a, b, hedge_bounded(c, (epoch(b) - epoch(a)) / epoch(c)%[2]s, %[3]d, %[4]s))`,
			name, extra, most, message)
	}
	// A list is measured by its text, about its size in memory.
	macro(`repeat(s, n) AS system.main.repeat(s, hedge_bounded(n, strlen(s::VARCHAR)::HUGEINT * n, %d, %s))`,
		maxStringBytes, sqlString(repeatMessage))
	for _, name := range []string{"lpad", "rpad"} {
		macro(`%[1]s(s, n, fill) AS system.main.%[1]s(s, hedge_bounded(n, n, %[2]d, %[3]s), fill)`,
			name, maxStringBytes, sqlString(padMessage(name)))
	}
	macro(`replace(s, old, new) AS system.main.replace(s, old, hedge_bounded(new,
			CASE WHEN strlen(new) <= %[1]d * greatest(strlen(old), 1) THEN 0
			ELSE (strlen(s) // greatest(strlen(old), 1) + 1)::HUGEINT * strlen(new) END, %[2]d, %[3]s))`,
		growthFactor, maxStringBytes, sqlString(growthMessage("replace", "replacements")))
	// A pattern may match at every position, and \0 puts the match back.
	regexpGrowth := fmt.Sprintf(`CASE WHEN strlen(new) <= %d THEN 0 ELSE (strlen(s) + 1)::HUGEINT * strlen(new) END`, growthFactor)
	macro(`regexp_replace(s, pattern, new) AS system.main.regexp_replace(s, pattern, hedge_bounded(new, %[1]s, %[2]d, %[3]s)),
		(s, pattern, new, options) AS system.main.regexp_replace(s, pattern, hedge_bounded(new, %[1]s, %[2]d, %[3]s), options)`,
		regexpGrowth, maxStringBytes, sqlString(growthMessage("regexp_replace", "replacements")))
	// DuckDB takes only a constant separator: the list carries the guard.
	macro(`array_to_string(l, sep) AS system.main.array_to_string(hedge_bounded(l,
			CASE WHEN strlen(sep) <= %[1]d THEN 0 ELSE len(l)::HUGEINT * strlen(sep) END, %[2]d, %[3]s), sep)`,
		growthFactor, maxStringBytes, sqlString(growthMessage("array_to_string", "separators")))
	macro(`levenshtein(a, b) AS system.main.levenshtein(a, hedge_bounded(b, strlen(a)::HUGEINT * strlen(b), %d, %s))`,
		maxEditCells, sqlString(editMessage))
	// A lambda function of constants would be computed while the query is planned: one
	// calling range, or returning a list it captures, squares a list's size.
	for _, name := range []string{"list_transform", "array_transform", "list_apply", "array_apply", "apply"} {
		macro(`%s(l, f) AS system.main.list_transform(hedge_unfolded(l), f)`, name)
	}
	for _, name := range []string{"list_filter", "array_filter", "filter"} {
		macro(`%s(l, f) AS system.main.list_filter(hedge_unfolded(l), f)`, name)
	}
	return b.String()
}()

// sqlString quotes s as a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
