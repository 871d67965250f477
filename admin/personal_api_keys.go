package admin

import (
	"context"
	"fmt"

	"github.com/bytedance/sonic"
	"github.com/google/uuid"
)

// newPersonalAPIKey makes a key in PostHog's shape: phx_ and 47-48 base62 characters.
func newPersonalAPIKey() string { return "phx_" + randomToken(35, 47) }

// insertPersonalAPIKey creates a key for the user and returns it. This is the only
// time the key exists in clear: the database keeps its hash and a mask.
func insertPersonalAPIKey(ctx context.Context, q querier, userID int64, label string, scopes []string) (string, error) {
	key := newPersonalAPIKey()
	scopesJSON, err := sonic.MarshalString(scopes)
	if err != nil {
		return "", fmt.Errorf("cannot encode scopes %v: %w", scopes, err)
	}
	if _, err := q.ExecContext(ctx, `
		INSERT INTO meta.personal_api_keys (id, user_id, label, secure_value, mask_value, scopes, created_at)
		VALUES (?, ?, ?, ?, ?, ?, now())`,
		uuid.Must(uuid.NewV7()), userID, label, hashKey(key), maskKey(key), scopesJSON); err != nil {
		return "", fmt.Errorf("cannot create a personal API key for user %d: %w", userID, err)
	}
	return key, nil
}
