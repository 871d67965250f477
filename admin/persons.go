package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
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

func newPersonRecord(p warehouse.Person) personRecord {
	id := p.ID.String()
	r := personRecord{ID: id, UUID: id, DistinctIDs: p.DistinctIDs, Properties: json.RawMessage(p.Properties),
		IsIdentified: p.IsIdentified, CreatedAt: p.CreatedAt}
	r.Name = displayName(r.Properties, r.DistinctIDs)
	return r
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
// id; ?search= matches the email property or any distinct id, ignoring case; ?cohort=
// keeps the persons in the project's cohort of that id now.
func (a *API) personList(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	pg := pageOf(c)
	filter := warehouse.PersonFilter{DistinctID: c.Query("distinct_id"), Search: c.Query("search")}
	if text := c.Query("cohort"); text != "" {
		id, ok := cohortIDOf(text)
		if !ok {
			return errValidation("cohort", "invalid_input", fmt.Sprintf("%q is not a cohort id.", text))
		}
		if filter.Cohort, err = a.cohortResolver(c.UserContext(), pr.id, "cohort").cohort(id, nil); err != nil {
			return err
		}
	}
	persons, count, err := a.warehouse.Persons(c.UserContext(), pr.id, filter, pg.limit, pg.offset)
	return a.sendPersons(c, pg, "cohort", persons, count, err)
}

// sendPersons answers a page of persons (count in all), or the error err of reading
// them: a cohort the query cannot read is a 400 on attr.
func (a *API) sendPersons(c *fiber.Ctx, pg page, attr string, persons []warehouse.Person, count int, err error) error {
	var queryErr *warehouse.QueryError
	if errors.As(err, &queryErr) {
		return errValidation(attr, "invalid_input", queryErr.Detail)
	}
	if err != nil {
		return err
	}
	results := make([]personRecord, len(persons))
	for i, p := range persons {
		results[i] = newPersonRecord(p)
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
	p, ok, err := a.warehouse.Person(c.UserContext(), pr.id, id)
	if err != nil {
		return err
	}
	if !ok {
		return errRecordNotFound()
	}
	return c.JSON(newPersonRecord(p))
}
