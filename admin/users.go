package admin

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// insertUser creates an active user and returns its integer id. Emails are stored
// lower-cased, so that lookups by email ignore case.
func insertUser(ctx context.Context, q querier, email, firstName string) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `
		INSERT INTO meta.users (uuid, distinct_id, email, first_name, created_at)
		VALUES (?, ?, ?, ?, now()) RETURNING id`,
		uuid.Must(uuid.NewV7()), randomToken(32, 43), strings.ToLower(email), firstName).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("cannot create user %s: %w", email, err)
	}
	return id, nil
}
