package hogql

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Reads is what a query reads of the tables that the caller makes views of, as its
// parse (json_serialize_sql's) says: the caller defines the views it needs and joins
// no more than they read, so that a query over the events alone runs as it always did.
type Reads struct {
	// PersonID: the query names a person_id column, or selects a star (events' star
	// holds person_id): events' person_id must be the person now, read through the
	// person overrides.
	PersonID bool
	// Person: it reads a column of the person joined to events or to
	// person_distinct_ids (person_properties, person_created_at...; Rewrite writes
	// person.properties.x and person.created_at so).
	Person bool
	// Groups are the indexes (0-4) whose group the query reads through events'
	// group_<n>_ columns (Rewrite writes group_0.properties.x so).
	Groups [5]bool
	// Tables are the tables the query names, in lower case.
	Tables map[string]bool
}

// PersonColumns are the columns of the person joined to events and to
// person_distinct_ids, as Rewrite writes person.<field>.
var PersonColumns = []string{"person_properties", "person_created_at", "person_is_identified"}

// groupColumn is a column of a group joined to events, as Rewrite writes
// group_<n>.<field>: its group index in group 1.
var groupColumn = regexp.MustCompile(`^group_([0-4])_(properties|created_at)$`)

// ReadsOf reads serialized, DuckDB's parse of a query that Check accepted.
func ReadsOf(serialized string) (Reads, error) {
	var parsed any
	if err := json.Unmarshal([]byte(serialized), &parsed); err != nil {
		return Reads{}, fmt.Errorf("cannot read the parsed query: %w", err)
	}
	r := Reads{Tables: map[string]bool{}}
	r.walk(parsed)
	return r, nil
}

// walk visits every node of v: it looks at every table reference, column and star,
// wherever the parse puts them, rather than at the places a query kind holds them.
func (r *Reads) walk(v any) {
	switch v := v.(type) {
	case map[string]any:
		switch {
		case v["type"] == "BASE_TABLE":
			name, _ := v["table_name"].(string)
			r.Tables[strings.ToLower(name)] = true
		case v["class"] == "STAR":
			r.PersonID = true
		case v["class"] == "COLUMN_REF":
			names, _ := v["column_names"].([]any)
			if len(names) > 0 {
				last, _ := names[len(names)-1].(string)
				r.column(strings.ToLower(last))
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

func (r *Reads) column(name string) {
	switch {
	case name == "person_id":
		r.PersonID = true
	case strings.HasPrefix(name, "person_"):
		for _, c := range PersonColumns {
			if name == c {
				r.Person, r.PersonID = true, true
			}
		}
	default:
		if m := groupColumn.FindStringSubmatch(name); m != nil {
			r.Groups[m[1][0]-'0'] = true
		}
	}
}
