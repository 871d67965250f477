package hogql

import (
	"slices"
	"strings"
)

// tables are the tables a query may read, PostHog's: the caller makes them views of
// one project's rows, on the connection the query runs on.
var tables = map[string]bool{"events": true, "persons": true, "groups": true, "person_distinct_ids": true, "sessions": true}

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
		// ClickHouse forms HogQL users write, defined as macros (Macros); the
		// aggregates among them are in aggregateNames
		`tostartofminute tostartofhour tostartofsecond tostartoffiveminutes tostartoffiveminute tostartoftenminutes
		tostartoffifteenminutes tostartofday tostartofweek tomonday tostartofmonth tostartofquarter
		tostartofyear toyear toquarter tomonth todayofmonth todayofweek todayofyear tohour tominute tosecond
		toyyyymm toyyyymmdd tounixtimestamp yesterday todate todatetime dateadd datesub addseconds addminutes
		addhours adddays addweeks addmonths addyears subtractseconds subtractminutes subtracthours subtractdays
		subtractweeks subtractmonths subtractyears tostring toint tofloat splitbychar splitbystring replaceall
		replaceone replaceregexpall replaceregexpone startswith endswith trimleft trimright trimboth empty notempty
		arrayjoin has indexof arrayfilter arraymap arrayexists arraycount arraysort arraystringconcat`,
		// operators
		`+ - * / // % ** ^ || ~~ !~~ ~~* !~~* ~~~ !~~~ -> ->> @> <@ && << >> & | ~ ^@ ! array_extract array_slice`,
	} {
		for _, name := range strings.Fields(names) {
			m[name] = true
		}
	}
	return m
}()

// aggregateNames are the aggregate functions of functions, the ClickHouse ones
// defined as macros (Macros) among them.
const aggregateNames = `count count_star sum avg mean min max any_value arg_min arg_max argmin argmax min_by max_by
	bool_and bool_or first last list array_agg string_agg group_concat median mode quantile quantile_cont
	quantile_disc approx_count_distinct approx_quantile stddev stddev_pop stddev_samp variance var_pop var_samp corr
	covar_pop covar_samp histogram product entropy kurtosis skewness bit_and bit_or bit_xor fsum favg count_if sumif
	uniq uniqexact uniqif countif avgif minif maxif grouparray groupuniqarray`

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
// Check allows calls of them. The guards come first: the ClickHouse macros that call
// a guarded function (arrayFilter calls list_filter) are checked, when defined, against
// the guard, which takes a lambda where DuckDB's own function is already bound.
var Macros = strings.TrimPrefix(guardMacros, ";") + ";" + clickHouseMacros

// clickHouseMacros define the ClickHouse functions of Macros, each with the
// ClickHouse meaning it reproduces. DuckDB folds the case of function names, so
// countIf, countif and COUNTIF are one macro. The forms a macro cannot give (a
// keyword's name, a variable number of arguments, a constant to read at rewrite
// time, ClickHouse's parametric aggregates) are Rewrite's (dialect.go).
const clickHouseMacros = `
	-- Aggregates. ClickHouse's -If combinator aggregates the rows where its last
	-- argument holds; sum and sumIf of no row are 0 there, not NULL. uniq is an
	-- estimate in ClickHouse and uniqExact exact: both are exact here, which uniq's
	-- estimate approaches. groupArray and groupUniqArray skip NULLs and make [] of no
	-- row.
	CREATE OR REPLACE TEMP MACRO uniq(x) AS count(DISTINCT x);
	CREATE OR REPLACE TEMP MACRO uniqExact(x) AS count(DISTINCT x);
	CREATE OR REPLACE TEMP MACRO uniqIf(x, c) AS count(DISTINCT x) FILTER (WHERE c);
	CREATE OR REPLACE TEMP MACRO countIf(c) AS count_if(c);
	CREATE OR REPLACE TEMP MACRO sumIf(x, c) AS coalesce(sum(x) FILTER (WHERE c), 0);
	CREATE OR REPLACE TEMP MACRO avgIf(x, c) AS avg(x) FILTER (WHERE c);
	CREATE OR REPLACE TEMP MACRO minIf(x, c) AS min(x) FILTER (WHERE c);
	CREATE OR REPLACE TEMP MACRO maxIf(x, c) AS max(x) FILTER (WHERE c);
	CREATE OR REPLACE TEMP MACRO groupArray(x) AS coalesce(list(x) FILTER (WHERE x IS NOT NULL), []);
	CREATE OR REPLACE TEMP MACRO groupUniqArray(x) AS coalesce(list(DISTINCT x) FILTER (WHERE x IS NOT NULL), []);
	-- Dates, in the connection's time zone. The toStartOf... of a day or longer are
	-- Dates in ClickHouse, those of an hour or shorter DateTimes. toStartOfWeek's mode
	-- 0 (the default) starts weeks on Sunday, an odd mode on Monday; toDayOfWeek
	-- counts Monday 1 to Sunday 7.
	CREATE OR REPLACE TEMP MACRO toStartOfMinute(x) AS date_trunc('minute', x);
	CREATE OR REPLACE TEMP MACRO toStartOfHour(x) AS date_trunc('hour', x);
	CREATE OR REPLACE TEMP MACRO toStartOfSecond(x) AS date_trunc('second', x);
	CREATE OR REPLACE TEMP MACRO toStartOfFiveMinutes(x) AS time_bucket(INTERVAL 5 MINUTE, x);
	CREATE OR REPLACE TEMP MACRO toStartOfFiveMinute(x) AS time_bucket(INTERVAL 5 MINUTE, x);
	CREATE OR REPLACE TEMP MACRO toStartOfTenMinutes(x) AS time_bucket(INTERVAL 10 MINUTE, x);
	CREATE OR REPLACE TEMP MACRO toStartOfFifteenMinutes(x) AS time_bucket(INTERVAL 15 MINUTE, x);
	CREATE OR REPLACE TEMP MACRO toStartOfDay(x) AS date_trunc('day', x);
	CREATE OR REPLACE TEMP MACRO toStartOfWeek(x) AS CAST(x AS DATE) - CAST(dayofweek(x) AS INTEGER),
		(x, mode) AS CAST(x AS DATE) - CAST(CASE WHEN mode % 2 = 1 THEN isodow(x) - 1 ELSE dayofweek(x) END AS INTEGER);
	CREATE OR REPLACE TEMP MACRO toMonday(x) AS CAST(x AS DATE) - CAST(isodow(x) - 1 AS INTEGER);
	CREATE OR REPLACE TEMP MACRO toStartOfMonth(x) AS CAST(date_trunc('month', x) AS DATE);
	CREATE OR REPLACE TEMP MACRO toStartOfQuarter(x) AS CAST(date_trunc('quarter', x) AS DATE);
	CREATE OR REPLACE TEMP MACRO toStartOfYear(x) AS CAST(date_trunc('year', x) AS DATE);
	CREATE OR REPLACE TEMP MACRO toYear(x) AS year(x);
	CREATE OR REPLACE TEMP MACRO toQuarter(x) AS quarter(x);
	CREATE OR REPLACE TEMP MACRO toMonth(x) AS month(x);
	CREATE OR REPLACE TEMP MACRO toDayOfMonth(x) AS day(x);
	CREATE OR REPLACE TEMP MACRO toDayOfWeek(x) AS isodow(x);
	CREATE OR REPLACE TEMP MACRO toDayOfYear(x) AS dayofyear(x);
	CREATE OR REPLACE TEMP MACRO toHour(x) AS hour(x);
	CREATE OR REPLACE TEMP MACRO toMinute(x) AS minute(x);
	CREATE OR REPLACE TEMP MACRO toSecond(x) AS second(x);
	CREATE OR REPLACE TEMP MACRO toYYYYMM(x) AS year(x) * 100 + month(x);
	CREATE OR REPLACE TEMP MACRO toYYYYMMDD(x) AS year(x) * 10000 + month(x) * 100 + day(x);
	CREATE OR REPLACE TEMP MACRO toUnixTimestamp(x) AS CAST(epoch(CAST(x AS TIMESTAMPTZ)) AS BIGINT);
	CREATE OR REPLACE TEMP MACRO yesterday() AS CAST(current_date - 1 AS DATE);
	CREATE OR REPLACE TEMP MACRO toDate(x) AS CAST(x AS DATE);
	CREATE OR REPLACE TEMP MACRO toDateTime(x) AS CAST(x AS TIMESTAMPTZ);
	-- dateDiff counts the unit's boundaries crossed, as DuckDB's date_diff does, but
	-- weeks start on Monday (ClickHouse's toRelativeWeekNum), where date_diff counts
	-- whole weeks.
	CREATE OR REPLACE TEMP MACRO dateDiff(unit, a, b) AS CASE WHEN lower(unit) IN ('week', 'weeks')
		THEN (toMonday(b) - toMonday(a)) // 7 ELSE date_diff(unit, a, b) END;
	-- dateAdd and dateSub take the unit first, as a string ('day', 'hour', ...); DuckDB's
	-- own datesub, a difference, gives way to ClickHouse's.
	CREATE OR REPLACE TEMP MACRO dateAdd(unit, n, x) AS x + n * CAST('1 ' || unit AS INTERVAL);
	CREATE OR REPLACE TEMP MACRO dateSub(unit, n, x) AS x - n * CAST('1 ' || unit AS INTERVAL);
	CREATE OR REPLACE TEMP MACRO addSeconds(x, n) AS x + n * INTERVAL 1 SECOND;
	CREATE OR REPLACE TEMP MACRO addMinutes(x, n) AS x + n * INTERVAL 1 MINUTE;
	CREATE OR REPLACE TEMP MACRO addHours(x, n) AS x + n * INTERVAL 1 HOUR;
	CREATE OR REPLACE TEMP MACRO addDays(x, n) AS x + n * INTERVAL 1 DAY;
	CREATE OR REPLACE TEMP MACRO addWeeks(x, n) AS x + n * INTERVAL 7 DAY;
	CREATE OR REPLACE TEMP MACRO addMonths(x, n) AS x + n * INTERVAL 1 MONTH;
	CREATE OR REPLACE TEMP MACRO addYears(x, n) AS x + n * INTERVAL 1 YEAR;
	CREATE OR REPLACE TEMP MACRO subtractSeconds(x, n) AS x - n * INTERVAL 1 SECOND;
	CREATE OR REPLACE TEMP MACRO subtractMinutes(x, n) AS x - n * INTERVAL 1 MINUTE;
	CREATE OR REPLACE TEMP MACRO subtractHours(x, n) AS x - n * INTERVAL 1 HOUR;
	CREATE OR REPLACE TEMP MACRO subtractDays(x, n) AS x - n * INTERVAL 1 DAY;
	CREATE OR REPLACE TEMP MACRO subtractWeeks(x, n) AS x - n * INTERVAL 7 DAY;
	CREATE OR REPLACE TEMP MACRO subtractMonths(x, n) AS x - n * INTERVAL 1 MONTH;
	CREATE OR REPLACE TEMP MACRO subtractYears(x, n) AS x - n * INTERVAL 1 YEAR;
	-- Strings. splitBy... take the separator first; replaceOne replaces the first
	-- occurrence; the Regexp forms take RE2 patterns and \0-\9 in the replacement, as
	-- DuckDB's regexp_replace does (through its guard). empty and notEmpty are of
	-- strings and arrays.
	CREATE OR REPLACE TEMP MACRO toString(x) AS CAST(x AS VARCHAR);
	CREATE OR REPLACE TEMP MACRO toInt(x) AS TRY_CAST(x AS BIGINT);
	CREATE OR REPLACE TEMP MACRO toFloat(x) AS TRY_CAST(x AS DOUBLE);
	CREATE OR REPLACE TEMP MACRO splitByChar(sep, s) AS string_split(s, sep);
	CREATE OR REPLACE TEMP MACRO splitByString(sep, s) AS string_split(s, sep);
	CREATE OR REPLACE TEMP MACRO replaceAll(s, old, new) AS replace(s, old, new);
	CREATE OR REPLACE TEMP MACRO replaceOne(s, old, new) AS CASE WHEN old = '' OR strpos(s, old) = 0 THEN s
		ELSE substr(s, 1, strpos(s, old) - 1) || new || substr(s, strpos(s, old) + length(old)) END;
	CREATE OR REPLACE TEMP MACRO replaceRegexpAll(s, pattern, new) AS regexp_replace(s, pattern, new, 'g');
	CREATE OR REPLACE TEMP MACRO replaceRegexpOne(s, pattern, new) AS regexp_replace(s, pattern, new);
	CREATE OR REPLACE TEMP MACRO startsWith(s, prefix) AS starts_with(s, prefix);
	CREATE OR REPLACE TEMP MACRO endsWith(s, suffix) AS ends_with(s, suffix);
	CREATE OR REPLACE TEMP MACRO trimLeft(s) AS ltrim(s);
	CREATE OR REPLACE TEMP MACRO trimRight(s) AS rtrim(s);
	CREATE OR REPLACE TEMP MACRO trimBoth(s) AS trim(s);
	CREATE OR REPLACE TEMP MACRO empty(x) AS length(x) = 0;
	CREATE OR REPLACE TEMP MACRO notEmpty(x) AS length(x) > 0;
	-- Arrays. ClickHouse's higher-order functions take the lambda first, DuckDB's
	-- second (through their guards); indexOf is 1-based and 0 when absent; arrayJoin
	-- makes a row of each element, as unnest does in a select list.
	CREATE OR REPLACE TEMP MACRO arrayJoin(a) AS unnest(a);
	CREATE OR REPLACE TEMP MACRO has(a, x) AS list_contains(a, x);
	CREATE OR REPLACE TEMP MACRO indexOf(a, x) AS coalesce(list_position(a, x), 0);
	CREATE OR REPLACE TEMP MACRO arrayFilter(f, a) AS list_filter(a, f);
	CREATE OR REPLACE TEMP MACRO arrayMap(f, a) AS list_transform(a, f);
	CREATE OR REPLACE TEMP MACRO arrayExists(f, a) AS len(list_filter(a, f)) > 0;
	CREATE OR REPLACE TEMP MACRO arrayCount(f, a) AS len(list_filter(a, f));
	CREATE OR REPLACE TEMP MACRO arraySort(a) AS list_sort(a);
	CREATE OR REPLACE TEMP MACRO arrayStringConcat(a) AS array_to_string(a, ''), (a, sep) AS array_to_string(a, sep)`
