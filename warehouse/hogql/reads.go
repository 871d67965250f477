package hogql

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Reads is what a query reads of the persons of events, as its parse
// (json_serialize_sql's) says: the caller joins no more than the query reads, so that
// a query over the events alone runs as it always did.
type Reads struct {
	// PersonID: the query names a person_id column, or selects a star (events' star
	// holds person_id): events' person_id must be the person now, read through the
	// person overrides.
	PersonID bool
	// Person: it reads a column of the person joined to events or to
	// person_distinct_ids (PersonColumns; Rewrite writes person.properties.x and
	// person.created_at so).
	Person bool
}

// PersonColumns are the columns of the person joined to events and to
// person_distinct_ids, as Rewrite writes person.<field>.
var PersonColumns = []string{"person_properties", "person_created_at", "person_is_identified"}

// ReadsOf reads serialized, DuckDB's parse of a query.
func ReadsOf(serialized string) (Reads, error) {
	var parsed any
	if err := json.Unmarshal([]byte(serialized), &parsed); err != nil {
		return Reads{}, fmt.Errorf("cannot read the parsed query: %w", err)
	}
	var r Reads
	r.walk(parsed)
	return r, nil
}

// walk visits every node of v: it looks at every column and star, wherever the parse
// puts them, rather than at the places a query kind holds them.
func (r *Reads) walk(v any) {
	switch v := v.(type) {
	case map[string]any:
		switch v["class"] {
		case "STAR":
			r.PersonID = true
		case "COLUMN_REF":
			names, _ := v["column_names"].([]any)
			if len(names) > 0 {
				last, _ := names[len(names)-1].(string)
				switch last = strings.ToLower(last); {
				case last == "person_id":
					r.PersonID = true
				case slices.Contains(PersonColumns, last):
					r.Person, r.PersonID = true, true
				}
			}
		}
		for _, x := range v {
			r.walk(x)
		}
	case []any:
		for _, x := range v {
			r.walk(x)
		}
	}
}
