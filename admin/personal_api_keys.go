package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

// maxPersonalAPIKeys is PostHog's MAX_API_KEYS_PER_USER.
const maxPersonalAPIKeys = 10

func (a *API) bindPersonalAPIKeys() {
	a.handle(fiber.MethodGet, "/personal_api_keys/", "personal_api_key:read", a.personalAPIKeyList)
	a.handle(fiber.MethodPost, "/personal_api_keys/", "personal_api_key:write", a.personalAPIKeyCreate)
	a.handle(fiber.MethodGet, "/personal_api_keys/:id/", "personal_api_key:read", a.personalAPIKeyRetrieve)
	a.handle(fiber.MethodDelete, "/personal_api_keys/:id/", "personal_api_key:write", a.personalAPIKeyDelete)
}

// newPersonalAPIKey makes a key in PostHog's shape: phx_ and 47-48 base62 characters.
func newPersonalAPIKey() string { return "phx_" + randomToken(35, 47) }

// insertPersonalAPIKey creates a key for the user and returns it. This is the only
// time the key exists in clear: the database keeps its hash and a mask.
func insertPersonalAPIKey(ctx context.Context, q querier, userID int64, label string, scopes []string) (string, error) {
	key, _, err := insertScopedPersonalAPIKey(ctx, q, userID, label, scopes, nil, nil)
	return key, err
}

// insertScopedPersonalAPIKey is insertPersonalAPIKey with the key's organization and
// project restrictions (empty: none); it also returns the key's id.
func insertScopedPersonalAPIKey(ctx context.Context, q querier, userID int64, label string, scopes, organizations []string, teams []int64) (string, uuid.UUID, error) {
	key := newPersonalAPIKey()
	id := uuid.Must(uuid.NewV7())
	if _, err := q.ExecContext(ctx, `
		INSERT INTO meta.personal_api_keys (id, user_id, label, secure_value, mask_value, scopes,
			scoped_organizations, scoped_teams, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, now())`,
		id, userID, label, hashKey(key), maskKey(key), mustJSON(nonNil(scopes)),
		mustJSON(nonNil(organizations)), mustJSON(nonNil(teams))); err != nil {
		return "", uuid.Nil, fmt.Errorf("cannot create a personal API key for user %d: %w", userID, err)
	}
	return key, id, nil
}

// personalAPIKeyRecord is a key as PostHog shows it: value is the key itself, only in
// the answer that creates it (null afterwards); mask_value is what identifies it later.
type personalAPIKeyRecord struct {
	ID                  string     `json:"id"`
	Label               string     `json:"label"`
	Value               *string    `json:"value"`
	MaskValue           string     `json:"mask_value"`
	CreatedAt           time.Time  `json:"created_at"`
	LastUsedAt          *time.Time `json:"last_used_at"`
	UserID              int64      `json:"user_id"`
	Scopes              rawJSON    `json:"scopes"`
	ScopedTeams         rawJSON    `json:"scoped_teams"`
	ScopedOrganizations rawJSON    `json:"scoped_organizations"`
}

const personalAPIKeyColumns = `SELECT id::VARCHAR, label, mask_value, created_at, last_used_at, user_id, scopes,
	scoped_teams, scoped_organizations FROM meta.personal_api_keys`

func scanPersonalAPIKey(row records.Scanner) (personalAPIKeyRecord, error) {
	var r personalAPIKeyRecord
	err := row.Scan(&r.ID, &r.Label, &r.MaskValue, &r.CreatedAt, &r.LastUsedAt, &r.UserID, &r.Scopes,
		&r.ScopedTeams, &r.ScopedOrganizations)
	r.CreatedAt, r.LastUsedAt = r.CreatedAt.UTC(), utcTime(r.LastUsedAt)
	return r, err
}

// personalAPIKeyInput is the body of POST /api/personal_api_keys/.
type personalAPIKeyInput struct {
	Label               optional[string]   `json:"label"`
	Scopes              optional[[]string] `json:"scopes"`
	ScopedOrganizations []string           `json:"scoped_organizations"`
	ScopedTeams         []int64            `json:"scoped_teams"`
}

var scopePattern = regexp.MustCompile(`^[a-z][a-z_]*:(read|write)$`)

// validate checks the fields on their own; what the key may grant is checked against
// its creator by grantable.
func (in *personalAPIKeyInput) validate() error {
	switch {
	case !in.Label.Set || in.Label.Null:
		return errRequired("label")
	case in.Label.Value == "":
		return errBlank("label")
	case utf8.RuneCountInString(in.Label.Value) > 40:
		return errMaxLength("label", 40)
	case !in.Scopes.Set || in.Scopes.Null:
		return errRequired("scopes")
	case len(in.Scopes.Value) == 0:
		// PostHog reads an empty list as "*" for old keys; hedge asks for the scopes.
		return errValidation("scopes", "empty", "This list may not be empty.")
	}
	for _, s := range in.Scopes.Value {
		if s != "*" && !scopePattern.MatchString(s) {
			return errValidation("scopes", "invalid_input", "Invalid scope: "+s)
		}
	}
	for _, o := range in.ScopedOrganizations {
		if _, err := uuid.Parse(o); err != nil {
			return errValidation("scoped_organizations", "invalid_input", "Invalid organization UUID")
		}
	}
	return nil
}

// grantable checks that the new key grants nothing its creator's key does not: each
// scope is one the creator has ("*" only from "*"), and a creator restricted to some
// organizations or projects can make only keys restricted to those (an empty list
// inherits the creator's).
func (in *personalAPIKeyInput) grantable(creator *principal) error {
	for _, s := range in.Scopes.Value {
		if (s == "*" && !slices.Contains(creator.scopes, "*")) || !creator.allows(s) {
			return errPermissionDenied(fmt.Sprintf("This API key cannot grant scope '%s', which it does not have.", s))
		}
	}
	if len(creator.scopedOrganizations) > 0 {
		if len(in.ScopedOrganizations) == 0 {
			in.ScopedOrganizations = creator.scopedOrganizations
		}
		for _, o := range in.ScopedOrganizations {
			if !slices.Contains(creator.scopedOrganizations, o) {
				return errPermissionDenied(fmt.Sprintf("This API key does not have access to the requested organization: ID %s.", o))
			}
		}
	}
	if len(creator.scopedTeams) > 0 {
		if len(in.ScopedTeams) == 0 {
			in.ScopedTeams = creator.scopedTeams
		}
		for _, t := range in.ScopedTeams {
			if !slices.Contains(creator.scopedTeams, t) {
				return errPermissionDenied(fmt.Sprintf("This API key does not have access to the requested project: ID %d.", t))
			}
		}
	}
	return nil
}

// reachable checks that the user belongs to every organization and reaches every
// project the key is scoped to (projectLevelSQL), with PostHog's messages.
func reachable(ctx context.Context, q querier, userID int64, in *personalAPIKeyInput) error {
	for _, o := range in.ScopedOrganizations {
		var member bool
		if err := q.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.memberships WHERE user_id = ? AND organization_id::VARCHAR = ?`,
			userID, o).Scan(&member); err != nil {
			return fmt.Errorf("cannot check membership of user %d in %s: %w", userID, o, err)
		}
		if !member {
			return errValidation("scoped_organizations", "invalid_input", "You must be a member of all organizations that you are scoping the key to.")
		}
	}
	for _, t := range in.ScopedTeams {
		_, member, err := projectLevelOf(ctx, q, t, userID)
		if err != nil {
			return err
		}
		if !member {
			return errValidation("scoped_teams", "invalid_input", "You must be a member of all teams that you are scoping the key to.")
		}
	}
	return nil
}

// GET /api/personal_api_keys/ (personal_api_key:read)
// The user's keys, newest first, as a plain JSON array: PostHog does not paginate
// this list (a user has at most 10 keys).
func (a *API) personalAPIKeyList(c *fiber.Ctx) error {
	p := principalOf(c)
	rows, err := a.db.QueryContext(c.UserContext(), personalAPIKeyColumns+` WHERE user_id = ? ORDER BY created_at DESC, id DESC`, p.userID)
	if err != nil {
		return fmt.Errorf("cannot list personal API keys of user %d: %w", p.userID, err)
	}
	defer rows.Close()
	keys := []personalAPIKeyRecord{}
	for rows.Next() {
		r, err := scanPersonalAPIKey(rows)
		if err != nil {
			return fmt.Errorf("cannot read personal API keys of user %d: %w", p.userID, err)
		}
		keys = append(keys, r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read personal API keys of user %d: %w", p.userID, err)
	}
	return c.JSON(keys)
}

// POST /api/personal_api_keys/ (personal_api_key:write)
// Makes a key for the caller's user; the answer carries the key in value, once.
func (a *API) personalAPIKeyCreate(c *fiber.Ctx) error {
	p := principalOf(c)
	var in personalAPIKeyInput
	if err := bindValid(c, &in); err != nil {
		return err
	}
	if err := in.grantable(p); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := reachable(ctx, a.db, p.userID, &in); err != nil {
		return err
	}
	var count int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM meta.personal_api_keys WHERE user_id = ?`, p.userID).Scan(&count); err != nil {
		return fmt.Errorf("cannot count personal API keys of user %d: %w", p.userID, err)
	}
	if count >= maxPersonalAPIKeys {
		return errValidation("", "invalid_input", fmt.Sprintf(
			"You can only have %d personal API keys. Remove an existing key before creating a new one.", maxPersonalAPIKeys))
	}
	key, id, err := insertScopedPersonalAPIKey(ctx, a.db, p.userID, in.Label.Value, in.Scopes.Value, in.ScopedOrganizations, in.ScopedTeams)
	if err != nil {
		return err
	}
	r, err := scanPersonalAPIKey(a.db.QueryRowContext(ctx, personalAPIKeyColumns+` WHERE id = ?`, id))
	if err != nil {
		return fmt.Errorf("cannot read personal API key %s: %w", id, err)
	}
	r.Value = &key
	return c.Status(fiber.StatusCreated).JSON(r)
}

// GET /api/personal_api_keys/{id}/ (personal_api_key:read)
// {id} may be @current, the key of the request.
func (a *API) personalAPIKeyRetrieve(c *fiber.Ctx) error {
	p := principalOf(c)
	id, err := a.personalAPIKeyID(c)
	if err != nil {
		return err
	}
	r, err := scanPersonalAPIKey(a.db.QueryRowContext(c.UserContext(), personalAPIKeyColumns+` WHERE id = ? AND user_id = ?`, id, p.userID))
	if errors.Is(err, sql.ErrNoRows) {
		return errRecordNotFound()
	}
	if err != nil {
		return fmt.Errorf("cannot read personal API key %s: %w", id, err)
	}
	return c.JSON(r)
}

// DELETE /api/personal_api_keys/{id}/ (personal_api_key:write)
// Revokes one of the user's keys (the request's own too, as @current).
func (a *API) personalAPIKeyDelete(c *fiber.Ctx) error {
	p := principalOf(c)
	id, err := a.personalAPIKeyID(c)
	if err != nil {
		return err
	}
	res, err := a.db.ExecContext(c.UserContext(), `DELETE FROM meta.personal_api_keys WHERE id = ? AND user_id = ?`, id, p.userID)
	if err != nil {
		return fmt.Errorf("cannot delete personal API key %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errRecordNotFound()
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// personalAPIKeyID is the key id of the path; @current is the request's own key.
func (a *API) personalAPIKeyID(c *fiber.Ctx) (uuid.UUID, error) {
	if c.Params("id") == "@current" {
		key, _ := findKey(c)
		var id uuid.UUID
		err := a.db.QueryRowContext(c.UserContext(), `SELECT id FROM meta.personal_api_keys WHERE secure_value = ?`, hashKey(key)).Scan(&id)
		if err != nil {
			return uuid.Nil, fmt.Errorf("cannot look up the request's personal API key: %w", err)
		}
		return id, nil
	}
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return uuid.Nil, errRecordNotFound()
	}
	return id, nil
}
