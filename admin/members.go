package admin

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// Organization membership levels (reference/posthog-behaviour.md §2.1).
const (
	levelMember = 1
	levelAdmin  = 8
	levelOwner  = 15
)

// insertMembership makes the user a member of the organization at level.
func insertMembership(ctx context.Context, q querier, organizationID uuid.UUID, userID int64, level int) error {
	if _, err := q.ExecContext(ctx, `
		INSERT INTO meta.memberships (id, organization_id, user_id, level, joined_at, updated_at)
		VALUES (?, ?, ?, ?, now(), now())`,
		uuid.Must(uuid.NewV7()), organizationID, userID, level); err != nil {
		return fmt.Errorf("cannot add user %d to organization %s: %w", userID, organizationID, err)
	}
	return nil
}
