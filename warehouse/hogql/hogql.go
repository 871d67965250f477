// Package hogql is the query API's language: HogQL, which here is DuckDB SQL plus the
// forms PostHog users write, properties.$key (and person.properties.key) for JSON
// property access, the lazy joins of events (person, group_0, session), count(), and
// ClickHouse's functions and forms as PostHog documents them (Macros, and the
// rewrites of dialect.go).
//
// It is the security boundary of the query API: Rewrite turns the property forms into
// DuckDB's, and Check decides, on DuckDB's own parse of the result, whether a project's
// user may run it. Everything here is pure: no database, no file, no network. The
// caller has DuckDB parse the query (json_serialize_sql) and makes the checks that
// need the database's catalog (see Check).
package hogql

import "fmt"

// Error is a query that may not run, or cannot be read, for a reason its author can
// act on: Detail says why, in words meant for them and holding no data of the
// database.
type Error struct{ Detail string }

func (e *Error) Error() string { return e.Detail }

func errorf(format string, args ...any) error {
	return &Error{Detail: fmt.Sprintf(format, args...)}
}
