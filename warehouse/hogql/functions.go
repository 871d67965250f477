package hogql

import (
	"slices"
	"strings"
)

// tables are the tables a query may read: the caller makes them views of one
// project's rows, on the connection the query runs on.
var tables = map[string]bool{"events": true, "persons": true, "groups": true}

// tableFunctions are the table functions a query may call: they generate rows and
// read nothing.
var tableFunctions = map[string]bool{"range": true, "generate_series": true, "unnest": true}

// functions are the scalar, aggregate and window functions, and the operators (as
// DuckDB's parser names them), a query may call. Everything else is refused: DuckDB
// also has functions that read files, settings or the catalog. list_aggregate and its
// aliases are left out: they call a function named by a string, past this list.
// list_reduce and its aliases are left out too: their accumulator may double at each
// element (a || a), past any bound, in one step that nothing interrupts.
var functions = func() map[string]bool {
	m := map[string]bool{}
	for _, names := range []string{
		aggregateNames,
		// window
		`row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value`,
		// numbers
		`abs ceil ceiling floor round sqrt cbrt pow power exp ln log log2 log10 sign greatest least trunc random pi
		isnan isinf isfinite even gcd lcm bit_count mod`,
		// text
		`lower upper lcase ucase length len strlen char_length character_length concat concat_ws substring substr
		left right trim ltrim rtrim replace reverse repeat lpad rpad position strpos instr contains starts_with
		prefix ends_with suffix split_part string_split str_split regexp_matches regexp_full_match regexp_replace
		regexp_extract regexp_extract_all regexp_split_to_array md5 sha256 hash format printf ascii chr translate
		levenshtein jaccard url_encode url_decode nfc_normalize strip_accents like_escape ilike_escape`,
		// time
		`now current_timestamp get_current_timestamp current_date today get_current_time current_localtime
		current_localtimestamp date_trunc datetrunc date_part datepart
		date_diff datediff date_sub datesub date_add strftime strptime try_strptime epoch epoch_ms epoch_us epoch_ns
		to_timestamp make_date make_timestamp make_time dayname monthname year month day hour minute second
		millisecond microsecond week weekday dayofweek dayofmonth dayofyear quarter isodow isoyear yearweek
		last_day age time_bucket timezone to_days to_hours to_minutes to_seconds to_weeks to_months to_years
		to_milliseconds to_microseconds`,
		// json
		`json_extract json_extract_string json_extract_path json_extract_path_text json_value json_exists json_keys
		json_type json_valid json_array_length json_contains json_object json_array to_json json json_structure`,
		// lists, structs, maps
		`list_value list_pack array_value array_extract list_extract list_element array_slice list_slice array_length
		list_contains list_has array_contains array_has list_position list_indexof list_distinct list_unique
		list_sort list_reverse_sort list_transform array_transform list_apply array_apply apply list_filter
		array_filter filter list_concat list_cat array_concat array_cat flatten
		list_sum list_min list_max list_avg list_count array_to_string list_string_agg
		struct_pack struct_extract struct_insert row map map_extract element_at cardinality map_keys map_values`,
		// conditions and the rest
		`coalesce ifnull nullif if iff typeof gen_random_uuid uuid`,
		// the table functions of tableFunctions, which are scalar functions too
		`range generate_series unnest`,
		// ClickHouse forms HogQL users write, defined as macros (Macros)
		`uniq tostartofday tostartofhour tostartofweek tostartofmonth tostartofyear todate todatetime tostring
		toint tofloat`,
		// operators
		`+ - * / // % ** ^ || ~~ !~~ ~~* !~~* ~~~ !~~~ -> ->> @> <@ && << >> & | ~ ^@ ! array_extract array_slice`,
	} {
		for _, name := range strings.Fields(names) {
			m[name] = true
		}
	}
	return m
}()

// aggregateNames are the aggregate functions of functions, uniq (a macro) among
// them.
const aggregateNames = `count count_star sum avg mean min max any_value arg_min arg_max argmin argmax min_by max_by
	bool_and bool_or first last list array_agg string_agg group_concat median mode quantile quantile_cont
	quantile_disc approx_count_distinct approx_quantile stddev stddev_pop stddev_samp variance var_pop var_samp corr
	covar_pop covar_samp histogram product entropy kurtosis skewness bit_and bit_or bit_xor fsum favg count_if sumif
	uniq`

// aggregateFunctions is aggregateNames as a set.
var aggregateFunctions = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range strings.Fields(aggregateNames) {
		m[name] = true
	}
	return m
}()

// CallsAggregate reports whether v, a node of json_serialize_sql's output decoded
// into maps and slices, calls an aggregate function outside a subquery (whose
// aggregates are its own).
func CallsAggregate(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		if v["class"] == "SUBQUERY" {
			return false
		}
		if name, _ := v["function_name"].(string); v["class"] == "FUNCTION" && aggregateFunctions[strings.ToLower(name)] {
			return true
		}
		for _, x := range v {
			if CallsAggregate(x) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(v, CallsAggregate)
	}
	return false
}

// Macros is SQL to run on a query's connection before the query. It gives the
// ClickHouse functions HogQL queries use most their DuckDB meaning, and replaces the
// functions whose result an argument sizes with guards that bound it (guardMacros).
// Check allows calls of them.
var Macros = clickHouseMacros + guardMacros

// clickHouseMacros define the ClickHouse functions of Macros.
const clickHouseMacros = `
	CREATE OR REPLACE TEMP MACRO uniq(x) AS count(DISTINCT x);
	CREATE OR REPLACE TEMP MACRO toStartOfDay(x) AS date_trunc('day', x);
	CREATE OR REPLACE TEMP MACRO toStartOfHour(x) AS date_trunc('hour', x);
	CREATE OR REPLACE TEMP MACRO toStartOfWeek(x) AS date_trunc('week', x);
	CREATE OR REPLACE TEMP MACRO toStartOfMonth(x) AS date_trunc('month', x);
	CREATE OR REPLACE TEMP MACRO toStartOfYear(x) AS date_trunc('year', x);
	CREATE OR REPLACE TEMP MACRO toDate(x) AS CAST(x AS DATE);
	CREATE OR REPLACE TEMP MACRO toDateTime(x) AS CAST(x AS TIMESTAMPTZ);
	CREATE OR REPLACE TEMP MACRO toString(x) AS CAST(x AS VARCHAR);
	CREATE OR REPLACE TEMP MACRO toInt(x) AS TRY_CAST(x AS BIGINT);
	CREATE OR REPLACE TEMP MACRO toFloat(x) AS TRY_CAST(x AS DOUBLE)`
