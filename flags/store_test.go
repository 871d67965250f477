package flags

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hedge-analytics/hedge/internal/testlog"
	"github.com/hedge-analytics/hedge/warehouse"
)

// newTestStore is a Store over a new, migrated warehouse; groupTypes answers for
// every project.
func newTestStore(t *testing.T, maxProjects int, groupTypes *[]warehouse.GroupType) *Store {
	t.Helper()
	wh, err := warehouse.Open(context.Background(), warehouse.Config{Path: filepath.Join(t.TempDir(), "hedge.duckdb"), Logger: testlog.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close() })
	cfg := Config{DB: wh.DB(), MaxProjects: maxProjects, Logger: testlog.New()}
	if groupTypes != nil {
		cfg.GroupTypes = func(context.Context, int64) ([]warehouse.GroupType, error) { return *groupTypes, nil }
	}
	return NewStore(cfg)
}

func ptr[T any](v T) *T { return &v }

func mustCreate(t *testing.T, s *Store, team int64, ch FlagChange) *Flag {
	t.Helper()
	f, err := s.CreateFlag(context.Background(), team, 1, ch)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustUpdate(t *testing.T, s *Store, team, id int64, ch FlagChange) *Flag {
	t.Helper()
	f, ok, err := s.UpdateFlag(context.Background(), team, id, 2, ch)
	if err != nil || !ok {
		t.Fatalf("update %d: %v %v", id, ok, err)
	}
	return f
}

func TestStoreFlags(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, 0, nil)
	beta := mustCreate(t, s, 1, FlagChange{Key: ptr("beta"), Name: ptr("Beta"), Tags: []string{"web"}})
	if beta.ID == 0 || beta.Version != 1 || !beta.Active || beta.CreatedBy != 1 || beta.LastModifiedBy != 1 || beta.CreatedAt.IsZero() ||
		len(beta.Filters.Groups) != 1 || beta.Tags[0] != "web" {
		t.Fatalf("created %+v", beta)
	}
	mustCreate(t, s, 1, FlagChange{Key: ptr("alpha"), Filters: []byte(`{"groups":[{"properties":[]}],"multivariate":{"variants":[{"key":"a","rollout_percentage":100}]}}`)})
	mustCreate(t, s, 2, FlagChange{Key: ptr("beta")}) // another project's key

	list := func(f FlagFilter) string {
		t.Helper()
		flags, count, err := s.Flags(ctx, 1, f, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]string, len(flags))
		for i, f := range flags {
			keys[i] = f.Key
		}
		return fmt.Sprintf("%d %s", count, strings.Join(keys, ","))
	}
	for f, want := range map[*FlagFilter]string{
		{}:                       "2 alpha,beta",
		{Search: "ALP"}:          "1 alpha",
		{Search: "bet"}:          "1 beta",
		{Type: "boolean"}:        "1 beta",
		{Type: "multivariant"}:   "1 alpha",
		{Active: ptr(false)}:     "0 ",
		{Type: "remote_config"}:  "0 ",
		{CreatedBy: 1}:           "2 alpha,beta",
		{EvaluationRuntime: "x"}: "0 ",
	} {
		if got := list(*f); got != want {
			t.Errorf("list %+v: %s, want %s", *f, got, want)
		}
	}

	// Every update makes a version; one from an older version conflicts only on the
	// fields changed since.
	updated := mustUpdate(t, s, 1, beta.ID, FlagChange{Name: ptr("Beta 2"), Version: ptr(1)})
	if updated.Version != 2 || updated.Name != "Beta 2" || updated.LastModifiedBy != 2 {
		t.Fatalf("updated %+v", updated)
	}
	mustUpdate(t, s, 1, beta.ID, FlagChange{Active: ptr(false), Version: ptr(1)}) // active did not change since 1
	_, _, err := s.UpdateFlag(ctx, 1, beta.ID, 3, FlagChange{Name: ptr("Beta 3"), Version: ptr(1)})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || conflict.LastModifiedBy != 2 {
		t.Fatalf("stale name change: %v", err)
	}
	mustUpdate(t, s, 1, beta.ID, FlagChange{Name: ptr("Beta 2"), Version: ptr(1)}) // no change of name: no conflict
	mustUpdate(t, s, 1, beta.ID, FlagChange{Name: ptr("Beta 3"), Version: ptr(4)})
	if _, ok, err := s.UpdateFlag(ctx, 2, beta.ID, 2, FlagChange{}); ok || err != nil {
		t.Fatalf("another project's flag: %v %v", ok, err)
	}

	// A deleted flag stays readable, frees its key, and is removed when a flag takes it.
	deleted := mustUpdate(t, s, 1, beta.ID, FlagChange{Deleted: ptr(true)})
	if !deleted.Deleted || list(FlagFilter{}) != "1 alpha" {
		t.Fatalf("deleted %+v, list %s", deleted, list(FlagFilter{}))
	}
	again := mustCreate(t, s, 1, FlagChange{Key: ptr("beta")})
	if _, ok, _ := s.Flag(ctx, 1, beta.ID); ok || again.Version != 1 {
		t.Fatalf("the deleted flag is still there, or the new one is not new: %+v", again)
	}
	if _, err := s.CreateFlag(ctx, 1, 1, FlagChange{Key: ptr("beta")}); err == nil || err.(*ValidationError).Code != "unique" {
		t.Fatalf("a second beta: %v", err)
	}
	if f, ok, err := s.LiveFlag(ctx, 1, fmt.Sprint(again.ID)); !ok || err != nil || f.Key != "beta" {
		t.Fatalf("by id: %+v %v %v", f, ok, err)
	}
	if f, ok, err := s.LiveFlag(ctx, 1, "alpha"); !ok || err != nil || f.Key != "alpha" {
		t.Fatalf("by key: %+v %v %v", f, ok, err)
	}
}

func TestStoreCohorts(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, 0, nil)
	people, err := s.CreateCohort(ctx, 1, 1, CohortChange{Name: ptr("People"),
		Filters: []byte(`{"properties":{"type":"AND","values":[{"key":"email","type":"person","operator":"icontains","value":"@x.com"}]}}`)})
	if err != nil || people.Version != 1 || people.CreatedBy != 1 {
		t.Fatalf("created %+v %v", people, err)
	}
	if _, err := s.CreateCohort(ctx, 1, 1, CohortChange{Name: ptr("Listed"), IsStatic: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	cohorts, count, err := s.Cohorts(ctx, 1, "peo", 100, 0)
	if err != nil || count != 1 || cohorts[0].ID != people.ID {
		t.Fatalf("search: %v %d %v", cohorts, count, err)
	}
	updated, ok, err := s.UpdateCohort(ctx, 1, people.ID, CohortChange{Name: ptr("Everyone"), Deleted: ptr(true)})
	if err != nil || !ok || updated.Version != 2 || !updated.Deleted || updated.Name != "Everyone" {
		t.Fatalf("updated %+v %v %v", updated, ok, err)
	}
	if _, count, _ := s.Cohorts(ctx, 1, "", 100, 0); count != 1 {
		t.Fatalf("%d cohorts listed, the deleted one too", count)
	}
	if _, ok, _ := s.UpdateCohort(ctx, 2, people.ID, CohortChange{}); ok {
		t.Fatal("another project's cohort updated")
	}
}

// Every change through the Store shows in the next Definitions: flags, their
// versions, the cohorts they use.
func TestDefinitionsSeeEveryChange(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, 2, nil)
	defs := func(team int64) *Definitions {
		t.Helper()
		d, err := s.Definitions(ctx, team)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := defs(1); len(d.Flags) != 0 || d.Team != 1 {
		t.Fatalf("empty project: %+v", d)
	}
	cohort, err := s.CreateCohort(ctx, 1, 1, CohortChange{Filters: []byte(`{"properties":{"type":"AND","values":[{"key":"plan","type":"person","value":"pro"}]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	b := mustCreate(t, s, 1, FlagChange{Key: ptr("b"), Filters: []byte(fmt.Sprintf(`{"groups":[{"properties":[{"key":"id","type":"cohort","value":%d}]}]}`, cohort.ID))})
	a := mustCreate(t, s, 1, FlagChange{Key: ptr("a"), Active: ptr(false)})
	d := defs(1)
	if len(d.Flags) != 2 || d.Flags[0].Key != "a" || d.Flags[1].Key != "b" || d.Cohorts[cohort.ID] == nil {
		t.Fatalf("definitions %+v", d)
	}
	if defs(1) != d {
		t.Fatal("the second read is not from memory")
	}
	mustUpdate(t, s, 1, b.ID, FlagChange{Name: ptr("renamed")})
	if d := defs(1); d.Flags[1].Name != "renamed" || d.Flags[1].Version != 2 {
		t.Fatalf("after an update: %+v", d.Flags[1])
	}
	if _, _, err := s.UpdateCohort(ctx, 1, cohort.ID, CohortChange{Filters: []byte(`{"properties":{"type":"OR","values":[]}}`)}); err != nil {
		t.Fatal(err)
	}
	if d := defs(1); d.Cohorts[cohort.ID].Filters.Properties.Type != "OR" {
		t.Fatalf("after a cohort update: %+v", d.Cohorts[cohort.ID])
	}
	mustUpdate(t, s, 1, a.ID, FlagChange{Deleted: ptr(true)})
	if d := defs(1); len(d.Flags) != 1 || d.Flags[0].Key != "b" {
		t.Fatalf("after a delete: %+v", d.Flags)
	}
	// At most MaxProjects projects are held.
	defs(2)
	defs(3)
	if n := s.cache.len(); n != 2 {
		t.Fatalf("%d projects held, want 2", n)
	}
}

// A fill that read the database before a change must not be kept: a read that starts
// after the change reads again, and what the old fill read goes only to the reader
// that started it, before the change.
func TestCacheFillRacingInvalidation(t *testing.T) {
	c := newDefinitionsCache(10)
	var loads atomic.Int32
	reading, release := make(chan struct{}), make(chan struct{})
	load := func(context.Context, int64) (*Definitions, error) {
		n := loads.Add(1)
		if n == 1 { // the first fill reads "before the change", slowly
			close(reading)
			<-release
		}
		return &Definitions{Team: 1, Flags: []*Flag{{Version: int(n)}}}, nil
	}
	version := func(e *cacheEntry, err error) int {
		if err != nil {
			t.Error(err)
			return 0
		}
		return e.defs.Flags[0].Version
	}
	first := make(chan int)
	go func() { first <- version(c.get(context.Background(), 1, load)) }()
	<-reading
	c.invalidate(1) // the change commits while the first fill reads
	if v := version(c.get(context.Background(), 1, load)); v != 2 {
		t.Fatalf("a read after the change got version %d, want a new fill's (2)", v)
	}
	close(release)
	if v := <-first; v != 1 {
		t.Fatalf("the first reader got %d", v)
	}
	if v := version(c.get(context.Background(), 1, load)); v != 2 {
		t.Fatalf("the stale fill was kept: version %d", v)
	}
	if n := loads.Load(); n != 2 {
		t.Fatalf("%d loads, want 2", n)
	}
}

// Readers hammering Definitions while flags change: once an update returns, every
// read that starts after it sees it.
func TestDefinitionsUnderConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, 0, nil)
	f := mustCreate(t, s, 1, FlagChange{Key: ptr("hot")})
	var committed atomic.Int64
	committed.Store(1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				want := committed.Load()
				d, err := s.Definitions(ctx, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if got := int64(d.Flags[0].Version); got < want {
					t.Errorf("read version %d after version %d committed", got, want)
					return
				}
			}
		}()
	}
	for range 20 {
		updated := mustUpdate(t, s, 1, f.ID, FlagChange{})
		committed.Store(int64(updated.Version))
	}
	close(stop)
	wg.Wait()
}

func TestLocalEvaluationETag(t *testing.T) {
	ctx := context.Background()
	types := []warehouse.GroupType{}
	s := newTestStore(t, 0, &types)
	body, etag, err := s.LocalEvaluation(ctx, 1)
	if err != nil || string(body) != `{"flags":[],"group_type_mapping":{},"cohorts":{},"minimal_flag_called_events":false,"property_matching_version":1}` {
		t.Fatalf("empty project: %s %v", body, err)
	}
	seen := map[string]bool{etag: true}
	next := func(what string) {
		t.Helper()
		body, e, err := s.LocalEvaluation(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if seen[e] {
			t.Fatalf("ETag unchanged after %s: %s", what, body)
		}
		seen[e] = true
		if _, again, _ := s.LocalEvaluation(ctx, 1); again != e {
			t.Fatalf("ETag changed without a change, after %s", what)
		}
	}
	f := mustCreate(t, s, 1, FlagChange{Key: ptr("beta")})
	next("a new flag")
	mustUpdate(t, s, 1, f.ID, FlagChange{Active: ptr(false)})
	next("an update")
	types = append(types, warehouse.GroupType{Name: "company", Index: 0})
	next("a new group type")
	if _, err := s.CreateCohort(ctx, 1, 1, CohortChange{IsStatic: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, e, _ := s.LocalEvaluation(ctx, 1); !seen[e] {
		t.Fatal("a cohort no flag uses changed the ETag")
	}
}

func TestHashKeyOverrides(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, 0, nil)
	mustCreate(t, s, 1, FlagChange{Key: ptr("sticky"), EnsureExperienceContinuity: ptr(true)})
	mustCreate(t, s, 1, FlagChange{Key: ptr("sticky-off"), EnsureExperienceContinuity: ptr(true), Active: ptr(false)})
	mustCreate(t, s, 1, FlagChange{Key: ptr("plain")})
	d, err := s.Definitions(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// want checks the overrides read for distinctID (with anonID, when it identifies).
	want := func(when, distinctID, anonID, want string) {
		t.Helper()
		o, err := s.HashKeyOverrides(ctx, d, distinctID, anonID)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(o); got != want {
			t.Fatalf("%s: %s, want %s", when, got, want)
		}
	}
	want("nothing stored yet", "user", "", "map[]")
	// Identifying stores the anonymous id for both ids, for the active flags only.
	want("after identify", "user", "anon-1", "map[sticky:anon-1]")
	want("the user later", "user", "", "map[sticky:anon-1]")
	want("the anonymous id later", "anon-1", "", "map[sticky:anon-1]")
	// A second anonymous id changes nothing for the user, and gets a row of its own.
	want("a second anonymous id", "user", "anon-2", "map[sticky:anon-1]")
	want("the second anonymous id", "anon-2", "", "map[sticky:anon-2]")
	// Concurrent identifies of one user agree.
	var wg sync.WaitGroup
	results := make([]string, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.HashKeyOverrides(ctx, d, "racer", fmt.Sprintf("anon-r%d", i))
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = o["sticky"]
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r != results[0] || r == "" {
			t.Fatalf("concurrent identifies disagree: %v", results)
		}
	}
}

// TestHashKeyOverridesBounded: a request stores the continuity rows of its first 500
// continuity flags, and a project at most Config.MaxOverrideRows rows; past them rows
// are not stored and the request is answered with those already stored. A row found
// stored already takes no room, and another project has its own.
func TestHashKeyOverridesBounded(t *testing.T) {
	ctx := context.Background()
	wh, err := warehouse.Open(ctx, warehouse.Config{Path: filepath.Join(t.TempDir(), "hedge.duckdb"), Logger: testlog.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close() })
	s := NewStore(Config{DB: wh.DB(), MaxOverrideRows: 1006, Logger: testlog.New()})
	defs := func(team int64, n int) *Definitions {
		d := &Definitions{Team: team}
		for i := range n {
			d.Flags = append(d.Flags, &Flag{Key: fmt.Sprintf("sticky-%03d", i), Active: true, EnsureExperienceContinuity: true})
		}
		return d
	}
	stored := func(team int64) int {
		t.Helper()
		var n int
		if err := wh.DB().QueryRow(`SELECT count(*) FROM meta.feature_flag_hash_key_overrides WHERE team_id = ?`, team).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	f := func(d *Definitions, distinctID, anonID string, wantOverrides, wantStored int) {
		t.Helper()
		o, err := s.HashKeyOverrides(ctx, d, distinctID, anonID)
		if err != nil {
			t.Fatal(err)
		}
		if len(o) != wantOverrides || stored(d.Team) != wantStored {
			t.Fatalf("%s (anon %s): %d overrides, %d rows stored; want %d, %d", distinctID, anonID, len(o), stored(d.Team), wantOverrides, wantStored)
		}
	}
	many := defs(1, 501)
	f(many, "user-1", "anon-1", 500, 1000) // the 501st flag has no row
	f(many, "user-1", "anon-1", 501, 1002) // until the next request
	few := defs(1, 2)
	f(few, "user-1", "anon-1", 2, 1002) // stored already: no room taken
	f(few, "user-2", "anon-2", 2, 1006) // the last room
	f(few, "user-3", "anon-3", 0, 1006) // the project is full: nothing stored
	f(few, "user-2", "anon-3", 2, 1006) // rows stored before still answer
	f(defs(2, 2), "user-3", "anon-3", 2, 4)
	// A store started again counts the rows the project holds.
	s = NewStore(Config{DB: wh.DB(), MaxOverrideRows: 1006, Logger: testlog.New()})
	f(few, "user-4", "anon-4", 0, 1006)
}
