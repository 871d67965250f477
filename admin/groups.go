package admin

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hedge-analytics/hedge/warehouse"
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
	types, err := a.warehouse.GroupTypes(c.UserContext(), pr.id)
	if err != nil {
		return err
	}
	records := make([]groupTypeRecord, len(types))
	for i, t := range types {
		records[i] = groupTypeRecord{GroupType: t.Name, GroupTypeIndex: t.Index}
	}
	return c.JSON(records)
}

type groupRecord struct {
	GroupTypeIndex  int             `json:"group_type_index"`
	GroupKey        string          `json:"group_key"`
	GroupProperties json.RawMessage `json:"group_properties"`
	CreatedAt       time.Time       `json:"created_at"`
}

func newGroupRecord(g warehouse.Group) groupRecord {
	return groupRecord{GroupTypeIndex: g.TypeIndex, GroupKey: g.Key, GroupProperties: json.RawMessage(g.Properties), CreatedAt: g.CreatedAt}
}

// groupTypeOf is the project of the path and the group type index of the required
// ?group_type_index= (0-4).
func (a *API) groupTypeOf(c *fiber.Ctx) (project, int, error) {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return pr, 0, err
	}
	index, err := strconv.Atoi(c.Query("group_type_index"))
	if err != nil || index < 0 || index > 4 {
		return pr, 0, errValidation("group_type_index", "invalid_input", "A group type index from 0 to 4 is required.")
	}
	return pr, index, nil
}

// GET /api/projects/{project_id}/groups/?group_type_index=N (group:read)
// The groups of one type, newest first; ?search= matches the group key.
func (a *API) groupList(c *fiber.Ctx) error {
	pr, index, err := a.groupTypeOf(c)
	if err != nil {
		return err
	}
	pg := pageOf(c)
	groups, count, err := a.warehouse.Groups(c.UserContext(), pr.id, index, c.Query("search"), pg.limit, pg.offset)
	if err != nil {
		return err
	}
	records := make([]groupRecord, len(groups))
	for i, g := range groups {
		records[i] = newGroupRecord(g)
	}
	return a.sendPage(c, pg, count, records)
}

// GET /api/projects/{project_id}/groups/find/?group_type_index=N&group_key=K (group:read)
func (a *API) groupFind(c *fiber.Ctx) error {
	pr, index, err := a.groupTypeOf(c)
	if err != nil {
		return err
	}
	g, ok, err := a.warehouse.Group(c.UserContext(), pr.id, index, c.Query("group_key"))
	if err != nil {
		return err
	}
	if !ok {
		return errRecordNotFound()
	}
	return c.JSON(newGroupRecord(g))
}
