package admin

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

func (a *API) bindPersons() {
	a.handle(fiber.MethodGet, "/projects/:project_id/persons/", "person:read", a.personList)
	a.handle(fiber.MethodGet, "/projects/:project_id/persons/:uuid/", "person:read", a.personRetrieve)
}

// personRecord is a person in PostHog's shape. id and uuid are the same UUID (hedge has
// no integer person ids).
type personRecord struct {
	ID           string          `json:"id"`
	UUID         string          `json:"uuid"`
	Name         string          `json:"name"`
	DistinctIDs  []string        `json:"distinct_ids"`
	Properties   json.RawMessage `json:"properties"`
	IsIdentified bool            `json:"is_identified"`
	CreatedAt    time.Time       `json:"created_at"`
}

// personColumns selects what a personRecord needs; its distinct ids come as a JSON list.
const personColumns = `SELECT p.id::VARCHAR, p.properties, p.is_identified, p.created_at,
	(SELECT to_json(list(d.distinct_id ORDER BY d.distinct_id))::VARCHAR FROM person_distinct_ids d
	 WHERE d.team_id = p.team_id AND d.person_id = p.id)
	FROM persons p`

func scanPerson(row interface{ Scan(...any) error }) (personRecord, error) {
	var r personRecord
	var props string
	var ids sql.NullString
	if err := row.Scan(&r.ID, &props, &r.IsIdentified, &r.CreatedAt, &ids); err != nil {
		return r, err
	}
	r.UUID, r.Properties = r.ID, json.RawMessage(props)
	r.DistinctIDs = []string{}
	if ids.Valid {
		if err := json.Unmarshal([]byte(ids.String), &r.DistinctIDs); err != nil {
			return r, fmt.Errorf("cannot read the distinct ids of person %s: %w", r.ID, err)
		}
	}
	r.Name = displayName(r.Properties, r.DistinctIDs)
	return r, nil
}

// displayName is what PostHog shows for a person: the first of email, name and username
// among its properties, else its first distinct id.
func displayName(props json.RawMessage, distinctIDs []string) string {
	var named struct{ Email, Name, Username any }
	json.Unmarshal(props, &named)
	for _, v := range []any{named.Email, named.Name, named.Username} {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	if len(distinctIDs) > 0 {
		return distinctIDs[0]
	}
	return ""
}

// GET /api/projects/{project_id}/persons/ (person:read)
// The project's persons, newest first. ?distinct_id= finds the person of one distinct
// id; ?search= matches the email property or any distinct id, ignoring case.
func (a *API) personList(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	where := ` WHERE p.team_id = ?`
	args := []any{pr.id}
	if id := c.Query("distinct_id"); id != "" {
		where += ` AND p.id IN (SELECT person_id FROM person_distinct_ids WHERE team_id = ? AND distinct_id = ?)`
		args = append(args, pr.id, id)
	}
	if search := strings.ToLower(strings.TrimSpace(c.Query("search"))); search != "" {
		where += ` AND (contains(lower(coalesce(json_extract_string(p.properties, '$.email'), '')), ?)
			OR p.id IN (SELECT person_id FROM person_distinct_ids WHERE team_id = ? AND contains(lower(distinct_id), ?)))`
		args = append(args, search, pr.id, search)
	}
	pg := pageOf(c)
	ctx := c.UserContext()
	var count int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM persons p`+where, args...).Scan(&count); err != nil {
		return fmt.Errorf("cannot count persons of project %d: %w", pr.id, err)
	}
	rows, err := a.db.QueryContext(ctx, personColumns+where+` ORDER BY p.created_at DESC, p.id LIMIT ? OFFSET ?`,
		append(args, pg.limit, pg.offset)...)
	if err != nil {
		return fmt.Errorf("cannot list persons of project %d: %w", pr.id, err)
	}
	defer rows.Close()
	results := []personRecord{}
	for rows.Next() {
		r, err := scanPerson(rows)
		if err != nil {
			return fmt.Errorf("cannot read persons of project %d: %w", pr.id, err)
		}
		results = append(results, r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read persons of project %d: %w", pr.id, err)
	}
	return a.sendPage(c, pg, count, results)
}

// GET /api/projects/{project_id}/persons/{uuid}/ (person:read)
func (a *API) personRetrieve(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	id, err := uuid.Parse(c.Params("uuid"))
	if err != nil {
		return errRecordNotFound()
	}
	r, err := scanPerson(a.db.QueryRowContext(c.UserContext(), personColumns+` WHERE p.team_id = ? AND p.id = ?`, pr.id, id))
	if errors.Is(err, sql.ErrNoRows) {
		return errRecordNotFound()
	}
	if err != nil {
		return fmt.Errorf("cannot read person %s: %w", id, err)
	}
	return c.JSON(r)
}
