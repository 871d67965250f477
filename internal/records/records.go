// Package records reads the rows of a SQL query into typed records: the loop of
// Next, Scan and Err that every list of the management API and of the warehouse would
// otherwise write out again, with one wording for its errors.
package records

import (
	"context"
	"database/sql"
	"fmt"
)

// Scanner is what *sql.Row and *sql.Rows have in common: one row's columns.
type Scanner interface{ Scan(dest ...any) error }

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common for reading.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// All reads every row that query selects with scan; what names the records in errors
// ("domains of organization X"). The answer is never nil, so that it renders as [].
func All[T any](ctx context.Context, q Querier, what string, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("cannot list %s: %w", what, err)
	}
	defer rows.Close()
	all := []T{}
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", what, err)
		}
		all = append(all, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", what, err)
	}
	return all, nil
}

// Page reads the page (limit, offset) of the rows that list selects, in list's order,
// and how many rows count counts in all. Both queries take args; list ends with its
// ORDER BY, and the page's LIMIT and OFFSET are added to it.
func Page[T any](ctx context.Context, q Querier, what string, scan func(Scanner) (T, error),
	count, list string, args []any, limit, offset int) ([]T, int, error) {
	var total int
	if err := q.QueryRowContext(ctx, count, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("cannot count %s: %w", what, err)
	}
	args = append(args[:len(args):len(args)], limit, offset)
	page, err := All(ctx, q, what, scan, list+` LIMIT ? OFFSET ?`, args...)
	return page, total, err
}
