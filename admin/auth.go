package admin

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bytedance/sonic"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

// principal is the authenticated caller of a request: a personal API key and its user,
// or a session (scopes "*") and its user.
// It lives in the request's Locals for the length of the request.
type principal struct {
	userID              int64
	scopes              []string
	scopedOrganizations []string // empty: every organization of the user
	scopedTeams         []int64  // empty: every project of those organizations
}

const principalLocal = "hedge.principal"

// allows reports whether the key's scopes grant scope ("<object>:<read|write>"):
// "*" grants everything and "<object>:write" implies "<object>:read".
func (p *principal) allows(scope string) bool {
	object, action, _ := strings.Cut(scope, ":")
	for _, s := range p.scopes {
		if s == "*" || s == scope || (action == "read" && s == object+":write") {
			return true
		}
	}
	return false
}

// require authenticates the request and checks that its key grants scope; the
// handlers after it find the caller with principalOf.
func (a *API) require(scope string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p, err := a.authenticate(c)
		if err != nil {
			return err
		}
		if !p.allows(scope) {
			return errPermissionDenied(fmt.Sprintf("API key missing required scope '%s'", scope))
		}
		c.Locals(principalLocal, p)
		return c.Next()
	}
}

func principalOf(c *fiber.Ctx) *principal {
	return c.Locals(principalLocal).(*principal)
}

var bearerPattern = regexp.MustCompile(`^Bearer\s+(\S.+)$`)

// findKey looks for a personal API key where PostHog does, and only the first place
// that has one counts: the Authorization header, the JSON body field
// personal_api_key, the query string. source names the place for error messages.
func findKey(c *fiber.Ctx) (key, source string) {
	// pha_ tokens are OAuth access tokens, which hedge does not issue.
	if m := bearerPattern.FindStringSubmatch(c.Get(fiber.HeaderAuthorization)); m != nil && !strings.HasPrefix(m[1], "pha_") {
		return m[1], "Authorization header"
	}
	if body := c.Body(); len(body) > 0 && strings.HasPrefix(c.Get(fiber.HeaderContentType), fiber.MIMEApplicationJSON) {
		if node, err := sonic.Get(body, "personal_api_key"); err == nil {
			if s, err := node.String(); err == nil && s != "" {
				return s, "body"
			}
		}
	}
	if key := c.Query("personal_api_key"); key != "" {
		return key, "query string"
	}
	return "", ""
}

// authenticate finds the request's personal API key and its active user, or without a
// key its session (sessions.go). Keys are looked up by their sha256, the only form
// stored.
func (a *API) authenticate(c *fiber.Ctx) (*principal, error) {
	key, source := findKey(c)
	if key == "" {
		p, err := a.sessionPrincipal(c)
		if err == nil && p == nil {
			err = errNotAuthenticated()
		}
		return p, err
	}
	hashed := hashKey(key)
	var stored, scopes, organizations, teams string
	var id uuid.UUID
	var lastUsed sql.NullTime
	var p principal
	err := a.db.QueryRowContext(c.UserContext(), `
		SELECT k.id, k.secure_value, k.user_id, k.scopes, k.scoped_organizations, k.scoped_teams, k.last_used_at
		FROM meta.personal_api_keys k JOIN meta.users u ON u.id = k.user_id
		WHERE k.secure_value = ? AND u.is_active`, hashed).
		Scan(&id, &stored, &p.userID, &scopes, &organizations, &teams, &lastUsed)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && subtle.ConstantTimeCompare([]byte(stored), []byte(hashed)) != 1) {
		return nil, errAuthenticationFailed("Personal API key found in request " + source + " is invalid.")
	}
	if err != nil {
		return nil, fmt.Errorf("cannot look up a personal API key: %w", err)
	}
	if err := decodeJSONColumns(
		jsonColumn{"scopes", scopes, &p.scopes},
		jsonColumn{"scoped_organizations", organizations, &p.scopedOrganizations},
		jsonColumn{"scoped_teams", teams, &p.scopedTeams},
	); err != nil {
		return nil, fmt.Errorf("cannot read personal API key of user %d: %w", p.userID, err)
	}
	if !lastUsed.Valid || time.Since(lastUsed.Time) >= keyUseResolution {
		a.markKeyUsed(c.UserContext(), id)
	}
	return &p, nil
}

// keyUseResolution is how stale a key's last_used_at may get: PostHog writes it when a
// key authenticates a request and the stored time is older than an hour, so a key in
// constant use costs one write an hour, not one per request. The stored time is read
// by the lookup that authenticates the key anyway, so this needs no state of its own
// and holds across restarts.
const keyUseResolution = time.Hour

// markKeyUsed sets the key's last_used_at to now. Requests racing past the hour each
// try, and the condition lets only the first write; a failed write is logged and the
// request goes on, since the time is informational.
func (a *API) markKeyUsed(ctx context.Context, id uuid.UUID) {
	now := time.Now()
	if _, err := a.db.ExecContext(ctx, `UPDATE meta.personal_api_keys SET last_used_at = ?
		WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`, now, id, now.Add(-keyUseResolution)); err != nil {
		a.log.Warn("cannot record the use of a personal API key", "key", id, "err", err)
	}
}

// jsonColumn is a JSON text column to decode into target.
type jsonColumn struct {
	name   string
	text   string
	target any
}

func decodeJSONColumns(columns ...jsonColumn) error {
	for _, col := range columns {
		if err := sonic.UnmarshalString(col.text, col.target); err != nil {
			return fmt.Errorf("cannot decode column %s: %w", col.name, err)
		}
	}
	return nil
}
