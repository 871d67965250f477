package admin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

func (a *API) bindProjects() {
	a.handle(fiber.MethodGet, "/organizations/:organization_id/projects/", "project:read", a.projectList)
}

// projectListItem carries exactly the fields the spec lists for project list items.
type projectListItem struct {
	ID                         int64           `json:"id"`
	UUID                       string          `json:"uuid"`
	Organization               string          `json:"organization"`
	APIToken                   string          `json:"api_token"`
	Name                       string          `json:"name"`
	CompletedSnippetOnboarding bool            `json:"completed_snippet_onboarding"`
	HasCompletedOnboardingFor  json.RawMessage `json:"has_completed_onboarding_for"`
	IngestedEvent              bool            `json:"ingested_event"`
	IsDemo                     bool            `json:"is_demo"`
	Timezone                   string          `json:"timezone"`
	AccessControl              bool            `json:"access_control"`
}

// GET /api/organizations/{organization_id}/projects/ (project:read)
// The organization's projects, oldest first; a key scoped to some projects sees only those.
func (a *API) projectList(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationOf(c, p)
	if err != nil {
		return err
	}
	pg := pageOf(c)
	ctx := c.UserContext()
	const visible = `organization_id = ? AND (len(?::BIGINT[]) = 0 OR list_contains(?::BIGINT[], id))`
	args := []any{m.organizationID, p.scopedTeams, p.scopedTeams}
	var count int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM meta.projects WHERE `+visible, args...).Scan(&count); err != nil {
		return fmt.Errorf("cannot count projects of %s: %w", m.organizationID, err)
	}
	rows, err := a.db.QueryContext(ctx, `
		SELECT id, uuid::VARCHAR, organization_id::VARCHAR, api_token, name, completed_snippet_onboarding,
		       has_completed_onboarding_for, ingested_event, is_demo, timezone, access_control
		FROM meta.projects WHERE `+visible+` ORDER BY id LIMIT ? OFFSET ?`,
		append(args, pg.limit, pg.offset)...)
	if err != nil {
		return fmt.Errorf("cannot list projects of %s: %w", m.organizationID, err)
	}
	defer rows.Close()
	items := []projectListItem{}
	for rows.Next() {
		var it projectListItem
		var onboarding *string
		if err := rows.Scan(&it.ID, &it.UUID, &it.Organization, &it.APIToken, &it.Name, &it.CompletedSnippetOnboarding,
			&onboarding, &it.IngestedEvent, &it.IsDemo, &it.Timezone, &it.AccessControl); err != nil {
			return fmt.Errorf("cannot read projects of %s: %w", m.organizationID, err)
		}
		if onboarding != nil {
			it.HasCompletedOnboardingFor = json.RawMessage(*onboarding)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read projects of %s: %w", m.organizationID, err)
	}
	return a.sendPage(c, pg, count, items)
}

// newProjectToken makes a project API token in PostHog's shape: phc_ and 43 base62 characters.
func newProjectToken() string { return "phc_" + randomToken(32, 43) }

// insertProject creates a project with PostHog's defaults and returns its id and API
// token. The caller adds the token to ProjectTokens once its transaction commits.
func insertProject(ctx context.Context, q querier, organizationID uuid.UUID, name string) (int64, string, error) {
	token := newProjectToken()
	var id int64
	err := q.QueryRowContext(ctx, `
		INSERT INTO meta.projects (uuid, organization_id, name, api_token, created_at, updated_at)
		VALUES (?, ?, ?, ?, now(), now()) RETURNING id`,
		uuid.Must(uuid.NewV7()), organizationID, name, token).Scan(&id)
	if err != nil {
		return 0, "", fmt.Errorf("cannot create project %q in %s: %w", name, organizationID, err)
	}
	return id, token, nil
}
