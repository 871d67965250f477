package admin

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

func (a *API) bindGroups() {
	a.handle(fiber.MethodGet, "/projects/:project_id/groups_types/", "group:read", a.groupTypeList)
	a.handle(fiber.MethodGet, "/projects/:project_id/groups/", "group:read", a.groupList)
	a.handle(fiber.MethodGet, "/projects/:project_id/groups/find/", "group:read", a.groupFind)
}

type groupTypeRecord struct {
	GroupType      string  `json:"group_type"`
	GroupTypeIndex int     `json:"group_type_index"`
	NameSingular   *string `json:"name_singular"`
	NamePlural     *string `json:"name_plural"`
}

// GET /api/projects/{project_id}/groups_types/ (group:read)
// The project's group types in index order, as a plain JSON array (as PostHog).
func (a *API) groupTypeList(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	rows, err := a.db.QueryContext(c.UserContext(),
		`SELECT group_type, group_type_index FROM group_type_mappings WHERE team_id = ? ORDER BY group_type_index`, pr.id)
	if err != nil {
		return fmt.Errorf("cannot list group types of project %d: %w", pr.id, err)
	}
	defer rows.Close()
	types := []groupTypeRecord{}
	for rows.Next() {
		var t groupTypeRecord
		if err := rows.Scan(&t.GroupType, &t.GroupTypeIndex); err != nil {
			return fmt.Errorf("cannot read group types of project %d: %w", pr.id, err)
		}
		types = append(types, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read group types of project %d: %w", pr.id, err)
	}
	return c.JSON(types)
}

type groupRecord struct {
	GroupTypeIndex  int             `json:"group_type_index"`
	GroupKey        string          `json:"group_key"`
	GroupProperties json.RawMessage `json:"group_properties"`
	CreatedAt       time.Time       `json:"created_at"`
}

// groupTypeIndexOf reads the required ?group_type_index= (0-4).
func groupTypeIndexOf(c *fiber.Ctx) (int, error) {
	index, err := strconv.Atoi(c.Query("group_type_index"))
	if err != nil || index < 0 || index > 4 {
		return 0, errValidation("group_type_index", "invalid_input", "A group type index from 0 to 4 is required.")
	}
	return index, nil
}

// GET /api/projects/{project_id}/groups/?group_type_index=N (group:read)
// The groups of one type, newest first; ?search= matches the group key.
func (a *API) groupList(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	index, err := groupTypeIndexOf(c)
	if err != nil {
		return err
	}
	where := ` WHERE team_id = ? AND group_type_index = ?`
	args := []any{pr.id, index}
	if search := c.Query("search"); search != "" {
		where += ` AND contains(lower(group_key), lower(?))`
		args = append(args, search)
	}
	pg := pageOf(c)
	ctx := c.UserContext()
	var count int
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM groups`+where, args...).Scan(&count); err != nil {
		return fmt.Errorf("cannot count groups of project %d: %w", pr.id, err)
	}
	rows, err := a.db.QueryContext(ctx, `SELECT group_type_index, group_key, group_properties, created_at FROM groups`+where+
		` ORDER BY created_at DESC, group_key LIMIT ? OFFSET ?`, append(args, pg.limit, pg.offset)...)
	if err != nil {
		return fmt.Errorf("cannot list groups of project %d: %w", pr.id, err)
	}
	defer rows.Close()
	groups := []groupRecord{}
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return fmt.Errorf("cannot read groups of project %d: %w", pr.id, err)
		}
		groups = append(groups, g)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read groups of project %d: %w", pr.id, err)
	}
	return a.sendPage(c, pg, count, groups)
}

// GET /api/projects/{project_id}/groups/find/?group_type_index=N&group_key=K (group:read)
func (a *API) groupFind(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	index, err := groupTypeIndexOf(c)
	if err != nil {
		return err
	}
	g, err := scanGroup(a.db.QueryRowContext(c.UserContext(), `SELECT group_type_index, group_key, group_properties, created_at FROM groups
		WHERE team_id = ? AND group_type_index = ? AND group_key = ?`, pr.id, index, c.Query("group_key")))
	if errors.Is(err, sql.ErrNoRows) {
		return errRecordNotFound()
	}
	if err != nil {
		return fmt.Errorf("cannot read a group of project %d: %w", pr.id, err)
	}
	return c.JSON(g)
}

func scanGroup(row interface{ Scan(...any) error }) (groupRecord, error) {
	var g groupRecord
	var props string
	if err := row.Scan(&g.GroupTypeIndex, &g.GroupKey, &props, &g.CreatedAt); err != nil {
		return g, err
	}
	g.GroupProperties = json.RawMessage(props)
	return g, nil
}
