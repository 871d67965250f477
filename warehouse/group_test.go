package warehouse

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

func TestEventGroups(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	// f reads groups as the $groups of an event of a project whose group types are known
	// (indexes in that order), and checks the event's $group_N columns and the types it
	// added, in the order it added them.
	f := func(known []string, groups string, want [maxGroupTypes]string, wantNew ...string) {
		t.Helper()
		x, err := loadIdentity(context.Background(), w.DB(), 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range known {
			x.groupTypeIndex(1, name)
		}
		x.apply()
		var got [maxGroupTypes]string
		if err := x.eventGroups(&Event{TeamID: 1, Groups: groups}, &got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("groups %s (known %q): columns %q, want %q", groups, known, got, want)
		}
		var added []string
		for _, r := range x.delta.newTypes {
			added = append(added, r.name)
		}
		if !slices.Equal(added, wantNew) {
			t.Fatalf("groups %s (known %q): new types %q, want %q", groups, known, added, wantNew)
		}
	}
	none := [maxGroupTypes]string{}
	f([]string{"company"}, `{"company":"c1"}`, [maxGroupTypes]string{"c1"})
	// New types get indexes in the order they appear.
	f(nil, `{"company":"c1","team":"t1"}`, [maxGroupTypes]string{"c1", "t1"}, "company", "team")
	f(nil, `{"team":"t1","company":"c1"}`, [maxGroupTypes]string{"t1", "c1"}, "team", "company")
	f([]string{"company"}, `{"team":"t1","company":"c1"}`, [maxGroupTypes]string{"c1", "t1"}, "team")
	// A string is unescaped, a number taken as written; other values are no key.
	f([]string{"company"}, `{"company":"a\"b\u00e9"}`, [maxGroupTypes]string{`a"bé`})
	f([]string{"company"}, `{"company":42}`, [maxGroupTypes]string{"42"})
	f(nil, `{"company":-1.5e3}`, [maxGroupTypes]string{"-1.5e3"}, "company")
	f(nil, `{"company":null,"team":"","x":true,"y":{},"z":[]}`, none)
	f([]string{"company"}, ` { "comp\u0061ny" : "c" } `, [maxGroupTypes]string{"c"})
	f(nil, `{"comp\u0061ny":"c"}`, [maxGroupTypes]string{"c"}, "company")
	// A sixth type gets no index.
	f([]string{"a", "b", "c", "d", "e"}, `{"f":"x","a":"1"}`, [maxGroupTypes]string{"1"})
	// Not an object, or not JSON: no groups, and no new types.
	for _, invalid := range []string{``, `null`, `[1]`, `"x"`, `{"company":"c1"`, `{"company":"c1"}x`, `{"company" "c1"}`, `{company:"c1"}`} {
		f(nil, invalid, none)
		f([]string{"company"}, invalid, none)
	}
}
