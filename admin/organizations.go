package admin

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// insertOrganization creates an organization and returns its id.
func insertOrganization(ctx context.Context, q querier, name string) (uuid.UUID, error) {
	id := uuid.Must(uuid.NewV7())
	if _, err := q.ExecContext(ctx,
		`INSERT INTO meta.organizations (id, name, created_at, updated_at) VALUES (?, ?, now(), now())`, id, name); err != nil {
		return uuid.Nil, fmt.Errorf("cannot create organization %q: %w", name, err)
	}
	return id, nil
}
