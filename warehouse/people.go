package warehouse

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

// The reads of persons and groups as the Writer left them at its last commit: the
// management API lists and finds them here, so that the tables the identity model
// writes are read by the package that defines what their rows mean.

// Person is a person with the distinct ids that belong to it now.
type Person struct {
	ID uuid.UUID
	// Properties is the JSON object text of the person's properties.
	Properties   string
	IsIdentified bool
	CreatedAt    time.Time
	// DistinctIDs are sorted; a person has at least one, but a reader racing a merge
	// may see none.
	DistinctIDs []string
}

// PersonFilter narrows a list of persons; zero values match every person.
type PersonFilter struct {
	// DistinctID finds the person that this distinct id belongs to.
	DistinctID string
	// Search matches the email property, or any distinct id, containing it, ignoring
	// case.
	Search string
	// Cohort keeps the persons in the cohort now.
	Cohort *Cohort
}

// personColumns selects what a Person needs; its distinct ids come as a JSON list.
const personColumns = `SELECT p.id, p.properties, p.is_identified, p.created_at,
	(SELECT to_json(list(d.distinct_id ORDER BY d.distinct_id))::VARCHAR FROM person_distinct_ids d
	 WHERE d.team_id = p.team_id AND d.person_id = p.id)
	FROM persons p`

func scanPerson(row records.Scanner) (Person, error) {
	var p Person
	var ids sql.NullString
	if err := row.Scan(&p.ID, &p.Properties, &p.IsIdentified, &p.CreatedAt, &ids); err != nil {
		return p, err
	}
	p.DistinctIDs = []string{}
	if ids.Valid {
		if err := json.Unmarshal([]byte(ids.String), &p.DistinctIDs); err != nil {
			return p, fmt.Errorf("cannot read the distinct ids of person %s: %w", p.ID, err)
		}
	}
	return p, nil
}

// Persons is one page (limit, offset) of the project's persons that match f, newest
// first, and how many match in all.
func (w *Warehouse) Persons(ctx context.Context, team int64, f PersonFilter, limit, offset int) ([]Person, int, error) {
	where := ` WHERE p.team_id = ?`
	args := []any{team}
	if f.DistinctID != "" {
		where += ` AND p.id IN (SELECT person_id FROM person_distinct_ids WHERE team_id = ? AND distinct_id = ?)`
		args = append(args, team, f.DistinctID)
	}
	if search := strings.ToLower(strings.TrimSpace(f.Search)); search != "" {
		where += ` AND (contains(lower(coalesce(json_extract_string(p.properties, '$.email'), '')), ?)
			OR p.id IN (SELECT person_id FROM person_distinct_ids WHERE team_id = ? AND contains(lower(distinct_id), ?)))`
		args = append(args, search, team, search)
	}
	if f.Cohort != nil {
		condition, bound, err := cohortCondition(f.Cohort)
		if err != nil {
			return nil, 0, err
		}
		where += ` AND p.id IN (SELECT person_id FROM (SELECT id AS person_id, properties AS person_properties FROM persons
			WHERE team_id = ?) WHERE ` + condition + `)`
		args = append(append(args, team), bound...)
	}
	what := fmt.Sprintf("persons of project %d", team)
	return records.Page(ctx, w.db, what, scanPerson, `SELECT count(*) FROM persons p`+where,
		personColumns+where+` ORDER BY p.created_at DESC, p.id`, args, limit, offset)
}

// Person is the project's person with the given id; ok is false when it has none.
func (w *Warehouse) Person(ctx context.Context, team int64, id uuid.UUID) (p Person, ok bool, err error) {
	p, err = scanPerson(w.db.QueryRowContext(ctx, personColumns+` WHERE p.team_id = ? AND p.id = ?`, team, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("cannot read person %s of project %d: %w", id, team, err)
	}
	return p, true, nil
}

// PersonsByID are the project's persons of ids, in the order of ids; an id that is no
// person of the project (merged away since the caller read it) is left out.
func (w *Warehouse) PersonsByID(ctx context.Context, team int64, ids []uuid.UUID) ([]Person, error) {
	texts := make([]string, len(ids))
	for i, id := range ids {
		texts[i] = id.String()
	}
	found, err := records.All(ctx, w.db, fmt.Sprintf("persons of project %d", team), scanPerson,
		personColumns+` WHERE p.team_id = ? AND p.id IN (SELECT unnest(?::VARCHAR[])::UUID)`, team, texts)
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]Person, len(found))
	for _, p := range found {
		byID[p.ID] = p
	}
	persons := make([]Person, 0, len(ids))
	for _, id := range ids {
		if p, ok := byID[id]; ok {
			persons = append(persons, p)
		}
	}
	return persons, nil
}

// GroupType is a group type of a project and the index of its events' $group_N column.
type GroupType struct {
	Name  string
	Index int
}

// GroupTypes are the project's group types in index order.
func (w *Warehouse) GroupTypes(ctx context.Context, team int64) ([]GroupType, error) {
	scan := func(row records.Scanner) (GroupType, error) {
		var t GroupType
		err := row.Scan(&t.Name, &t.Index)
		return t, err
	}
	return records.All(ctx, w.db, fmt.Sprintf("group types of project %d", team), scan,
		`SELECT group_type, group_type_index FROM group_type_mappings WHERE team_id = ? ORDER BY group_type_index`, team)
}

// Group is a group as its $groupidentify events left it.
type Group struct {
	TypeIndex int
	Key       string
	// Properties is the JSON object text of the group's properties.
	Properties string
	CreatedAt  time.Time
}

const groupColumns = `SELECT group_type_index, group_key, group_properties, created_at FROM groups`

func scanGroup(row records.Scanner) (Group, error) {
	var g Group
	err := row.Scan(&g.TypeIndex, &g.Key, &g.Properties, &g.CreatedAt)
	return g, err
}

// Groups is one page (limit, offset) of the project's groups of one type, newest
// first, and how many there are in all; search keeps the groups whose key contains
// it, ignoring case.
func (w *Warehouse) Groups(ctx context.Context, team int64, typeIndex int, search string, limit, offset int) ([]Group, int, error) {
	where := ` WHERE team_id = ? AND group_type_index = ?`
	args := []any{team, typeIndex}
	if search != "" {
		where += ` AND contains(lower(group_key), lower(?))`
		args = append(args, search)
	}
	what := fmt.Sprintf("groups of project %d", team)
	return records.Page(ctx, w.db, what, scanGroup, `SELECT count(*) FROM groups`+where,
		groupColumns+where+` ORDER BY created_at DESC, group_key`, args, limit, offset)
}

// Group is the project's group of the given type and key; ok is false when it has none.
func (w *Warehouse) Group(ctx context.Context, team int64, typeIndex int, key string) (g Group, ok bool, err error) {
	g, err = scanGroup(w.db.QueryRowContext(ctx, groupColumns+` WHERE team_id = ? AND group_type_index = ? AND group_key = ?`,
		team, typeIndex, key))
	if errors.Is(err, sql.ErrNoRows) {
		return g, false, nil
	}
	if err != nil {
		return g, false, fmt.Errorf("cannot read a group of project %d: %w", team, err)
	}
	return g, true, nil
}
