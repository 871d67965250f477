package warehouse

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCheckMaterializedProperties: the choices SetMaterializedProperties refuses, and
// some it takes.
func TestCheckMaterializedProperties(t *testing.T) {
	for _, c := range []struct {
		keys []string
		want string // "" to accept
	}{
		{nil, ""},
		{[]string{"plan", "$utm_source", "a.b", "a b", "é", "a/b", "~", "[0]"}, ""},
		{[]string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, "at most 8"},
		{[]string{"plan", "plan"}, `"plan" is listed twice`},
		{[]string{"$browser"}, "materialized for every project already"},
		{[]string{""}, "blank"},
		{[]string{strings.Repeat("k", 201)}, "at most 200 bytes"},
		{[]string{`a"b`}, "may not hold quotes"},
		{[]string{`it's`}, "may not hold quotes"},
		{[]string{`a\b`}, "may not hold quotes"},
		{[]string{"*"}, "may not hold quotes"},
		{[]string{"a\nb"}, "may not hold quotes"},
		{[]string{"\xff"}, "may not hold quotes"},
	} {
		err := CheckMaterializedProperties(c.keys)
		var refused *MaterializedPropertiesError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: refused: %v", c.keys, err)
		case c.want != "" && (!errors.As(err, &refused) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want a refusal saying %q", c.keys, err, c.want)
		}
	}
}

// TestChosenMaterializedReads: the slots of the properties projects choose give the
// answers reading the JSON gives, through HogQL, EventsQuery, TrendsQuery and
// FunnelsQuery, for rows stored before the choice (before their backfill and after)
// and after it; when a project changes a key for another, the slot's old values are
// never read as the new key's; two projects whose different keys share a slot never
// read each other's; and a restart resumes the backfill where it stood.
func TestChosenMaterializedReads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	one, two := Scope{Team: 1, Timezone: "UTC"}, Scope{Team: 2, Timezone: "UTC"}
	now := time.Now().Add(time.Hour)
	submit := func(w *Warehouse) {
		t.Helper()
		var events []Event
		for _, team := range []int64{1, 2} {
			for i := range materializedValues {
				for _, name := range []string{"$pageview", "second"} {
					e := testEvent(team, name)
					e.Timestamp, e.Properties = time.Now(), chosenDoc(i)
					events = append(events, e)
				}
			}
		}
		for _, team := range []int64{1, 2} { // a batch is one project's
			var batch []Event
			for _, e := range events {
				if e.TeamID == team {
					batch = append(batch, e)
				}
			}
			if err := w.Writer().Submit(&Batch{Events: batch}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// whole checks that slot 0 holds key's value in every row of team from row on.
	whole := func(w *Warehouse, team int64, key string, from int64) {
		t.Helper()
		var differ, rows int
		if err := w.DB().QueryRow(`SELECT count(*) FILTER (mat_slot_0 IS DISTINCT FROM json_extract_string(`+PropertiesText+`, '$."`+key+`"')),
			count(*) FROM events WHERE team_id = ? AND rowid >= ?`, team, from).Scan(&differ, &rows); err != nil || differ != 0 || rows == 0 {
			t.Fatalf("project %d, %s: %d of %d rows from %d differ from their JSON (%v)", team, key, differ, rows, from, err)
		}
	}
	set := func(w *Warehouse, team int64, keys ...string) {
		t.Helper()
		if err := w.SetMaterializedProperties(ctx, team, keys); err != nil {
			t.Fatal(err)
		}
		if got := w.MaterializedProperties(team); !slices.Equal(got, keys) {
			t.Fatalf("project %d materializes %q, want %q", team, got, keys)
		}
	}

	w := openTestWarehouse(t, path, Config{BackfillRows: 5})
	submit(w) // before any choice
	// Two projects, different keys, the same slot.
	set(w, 1, "plan")
	set(w, 2, "company")
	if w.slots.of(1).keys[0] != "plan" || w.slots.of(2).keys[0] != "company" {
		t.Fatalf("the projects' slots: %q and %q, want plan and company in slot 0", w.slots.of(1).keys, w.slots.of(2).keys)
	}
	checkMaterializedReads(t, w, one, []string{"plan"}, now, "before the backfill")
	checkMaterializedReads(t, w, two, []string{"company"}, now, "before the backfill")
	w.StartBackfill()
	if err := w.WaitBackfill(ctx); err != nil {
		t.Fatal(err)
	}
	whole(w, 1, "plan", 0)
	whole(w, 2, "company", 0)
	submit(w) // after the choice: filled on ingest
	whole(w, 1, "plan", 0)
	whole(w, 2, "company", 0)
	checkMaterializedReads(t, w, one, []string{"plan"}, now, "after the backfill")
	checkMaterializedReads(t, w, two, []string{"company"}, now, "after the backfill")

	// The queries read the slot, each project its own rows of it.
	if _, err := w.DB().Exec(`UPDATE events SET mat_slot_0 = 'column' WHERE team_id = 1`); err != nil {
		t.Fatal(err)
	}
	r, err := w.Queries().HogQL(ctx, one, `SELECT DISTINCT properties.plan FROM events`)
	if err != nil || fmt.Sprint(r.Results) != "[[column]]" {
		t.Fatalf("HogQL reads %v (%v), want the slot's", r, err)
	}
	events, err := w.Queries().Events(ctx, one, EventsQuery{Select: []string{"count()"},
		Properties: []PropertyFilter{{Key: "plan", Value: "column"}}, Limit: 10}, now)
	if err != nil || fmt.Sprint(events.Results) != fmt.Sprint([][]any{{int64(4 * len(materializedValues))}}) {
		t.Fatalf("EventsQuery's filter reads %v (%v), want the slot's", events, err)
	}
	checkMaterializedReads(t, w, two, []string{"company"}, now, "beside another project's values in the slot")
	w.Close()

	// Project 1 changes plan for company, which takes slot 0 with plan's old values in
	// it; nothing is backfilled yet.
	w = openTestWarehouse(t, path, Config{BackfillRows: 5})
	set(w, 1, "company")
	checkMaterializedReads(t, w, one, []string{"company"}, now, "after a change, before its backfill")
	end := w.slots.of(1).slots[0].end
	submit(w)
	whole(w, 1, "company", end) // the rows after the change: filled on ingest
	checkMaterializedReads(t, w, one, []string{"company"}, now, "after a change and new rows, before its backfill")

	// One chunk of the backfill, then a restart: it resumes after that chunk.
	work, ok := w.slots.pending()
	if !ok || work.team != 1 || !slices.Equal(work.slots, []int{0}) {
		t.Fatalf("the backfill to do: %+v (%v), want project 1's slot 0", work, ok)
	}
	if err := w.slots.backfill.chunk(ctx, work, work.next+5); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w = openTestWarehouse(t, path, Config{BackfillRows: 5})
	defer w.Close()
	if st := w.slots.of(1).slots[0]; st.next.Load() != work.next+5 || st.end != end {
		t.Fatalf("after a restart the backfill stands at [%d, %d), want [%d, %d)", st.next.Load(), st.end, work.next+5, end)
	}
	checkMaterializedReads(t, w, one, []string{"company"}, now, "after a restart, during the backfill")
	w.StartBackfill()
	if err := w.WaitBackfill(ctx); err != nil {
		t.Fatal(err)
	}
	whole(w, 1, "company", 0)
	whole(w, 2, "company", 0)
	checkMaterializedReads(t, w, one, []string{"company"}, now, "after the change's backfill")
	checkMaterializedReads(t, w, two, []string{"company"}, now, "after the change's backfill")
	// Plan is read from the JSON again.
	checkMaterializedReads(t, w, one, []string{"plan"}, now, "once no longer chosen")
}

// chosenDoc is the properties of the events of TestChosenMaterializedReads: plan and
// company with values of materializedValues, not the same ones, and their twins.
func chosenDoc(i int) string {
	plan := twinsDoc([]string{"plan"}, materializedValues[i])
	company := twinsDoc([]string{"company"}, materializedValues[(i+3)%len(materializedValues)])
	return plan[:len(plan)-1] + "," + company[1:]
}
