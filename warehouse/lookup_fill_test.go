package warehouse

import (
	"context"
	"hash/maphash"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

// The races of a lookup's fill with a commit, forced: the commit lands between the
// lookup's read of the database and its insert (afterRead), or before its read
// (beforeRead).

// lookupEnv is a warehouse whose events all go to project 1, for the fill tests.
type lookupEnv struct {
	t *testing.T
	w *Warehouse
}

func newLookupEnv(t *testing.T) *lookupEnv {
	t.Helper()
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	t.Cleanup(func() { w.Close() })
	return &lookupEnv{t: t, w: w}
}

func (env *lookupEnv) send(events ...Event) {
	env.t.Helper()
	if err := env.submit(events...); err != nil {
		env.t.Fatal(err)
	}
}

// submit is send for the hooks, which run on the lookups' goroutines: the test checks
// hookErr once the lookup has returned.
func (env *lookupEnv) submit(events ...Event) error {
	for i := range events {
		e := testEvent(1, events[i].Name)
		e.DistinctID, e.Set, e.AnonDistinctID = events[i].DistinctID, events[i].Set, events[i].AnonDistinctID
		e.GroupType, e.GroupKey, e.GroupSet = events[i].GroupType, events[i].GroupKey, events[i].GroupSet
		events[i] = e
	}
	return env.w.Writer().Submit(&Batch{Events: events})
}

// once makes a hook that submits events at its first call, and does nothing at later
// calls; wait reports the submission's error.
func (env *lookupEnv) once(events ...Event) (hook func(), wait func()) {
	var err error
	done := false
	hook = func() {
		if !done {
			done = true
			err = env.submit(events...)
		}
	}
	wait = func() {
		env.t.Helper()
		if !done || err != nil {
			env.t.Fatalf("the hook ran: %v, with %v", done, err)
		}
	}
	return hook, wait
}

func (env *lookupEnv) person(distinctID string) (string, bool) {
	env.t.Helper()
	props, found, err := env.w.PersonProperties(context.Background(), 1, distinctID)
	if err != nil {
		env.t.Fatal(err)
	}
	return props, found
}

// cachedPerson is what the cache holds for distinctID's person.
func (env *lookupEnv) cachedPerson(distinctID string) (string, bool) {
	l := env.w.lookups
	k := distinctKey{1, distinctID}
	id, ok := l.distinct.lru.get(l.distinct.hash(k), k)
	if !ok || id == uuid.Nil {
		env.t.Fatalf("%q has no person in the cache", distinctID)
	}
	return l.persons.get(maphash.Comparable(l.seed, id), id)
}

// A lookup reads person properties v1, then a commit sets v2 and evicts, then the
// lookup fills: it answers v1 (it read before the commit) but must not cache it.
func TestLookupStaleFill(t *testing.T) {
	env := newLookupEnv(t)
	l := env.w.lookups
	env.send(Event{Name: "e", DistinctID: "u", Set: `{"v":1}`})
	var wait func()
	l.afterRead, wait = env.once(Event{Name: "e", DistinctID: "u", Set: `{"v":2}`})
	if props, _ := env.person("u"); props != `{"v":1}` {
		t.Fatalf("the racing lookup read %s, want the value before the commit", props)
	}
	wait()
	if props, ok := env.cachedPerson("u"); ok {
		t.Fatalf("the stale %s was cached after the commit that changed it", props)
	}
	if props, _ := env.person("u"); props != `{"v":2}` {
		t.Fatalf("after the commit: %s", props)
	}
	// Without a commit in between, the fill is cached.
	if props, ok := env.cachedPerson("u"); !ok || props != `{"v":2}` {
		t.Fatalf("cached %s %v, want the fill of {\"v\":2}", props, ok)
	}

	// The same for a group cached as absent: the commit that creates it wins.
	l.afterRead, wait = env.once(Event{Name: EventGroupIdentify, DistinctID: "u", GroupType: "company", GroupKey: "c1", GroupSet: `{"plan":"pro"}`})
	ctx := context.Background()
	if _, found, err := env.w.GroupProperties(ctx, 1, 0, "c1"); found || err != nil {
		t.Fatalf("the racing lookup found the group (%v): it read before the commit", err)
	}
	wait()
	props, found, err := env.w.GroupProperties(ctx, 1, 0, "c1")
	if !found || err != nil || props != `{"plan":"pro"}` {
		t.Fatalf("after the commit: %s %v %v, the absence was cached", props, found, err)
	}
}

// A commit that changes a key of the same stripe drops the fill too (a needless miss,
// never a stale value); one that changes nothing cached does not.
func TestLookupFillStripes(t *testing.T) {
	env := newLookupEnv(t)
	l := env.w.lookups
	env.send(Event{Name: "e", DistinctID: "u", Set: `{"v":1}`}, Event{Name: "e", DistinctID: "other", Set: `{"v":1}`})
	var wait func()
	l.afterRead, wait = env.once(Event{Name: "e", DistinctID: "new-person", Set: `{"v":1}`})
	env.person("u")
	wait()
	if _, ok := env.cachedPerson("u"); !ok {
		t.Fatal("a commit that only made a new person dropped the fill")
	}
	// An invalidation of a key in u's stripe, stamped by hand: colliding keys are
	// rare to come by.
	u := distinctKey{1, "u"}
	id, _ := l.distinct.lru.get(l.distinct.hash(u), u)
	h := maphash.Comparable(l.seed, id)
	l.persons.remove(h, id)
	stamped := false
	l.afterRead = func() {
		if !stamped {
			stamped = true
			l.mu.Lock()
			l.stripes[h%lookupStripes] = l.seq.Add(1)
			l.mu.Unlock()
		}
	}
	if props, _ := env.person("u"); props != `{"v":1}` {
		t.Fatalf("read %s", props)
	}
	if _, ok := env.cachedPerson("u"); ok {
		t.Fatal("a fill was cached although its stripe changed after its read")
	}
}

// A lookup that resolved the distinct id just before a commit merged the person away
// finds no such person in the database, and reads the survivor the id resolves to now.
func TestLookupMergedAwayBeforeRead(t *testing.T) {
	env := newLookupEnv(t)
	l := env.w.lookups
	env.send(Event{Name: "e", DistinctID: "anon", Set: `{"a":1}`}, Event{Name: "e", DistinctID: "user", Set: `{"u":1}`})
	// $identify merges anon's person, not identified, into user's.
	var wait func()
	l.beforeRead, wait = env.once(Event{Name: EventIdentify, DistinctID: "user", AnonDistinctID: "anon"})
	props, found := env.person("anon")
	wait()
	if !found || props != `{"a":1,"u":1}` {
		t.Fatalf("anon after its person was merged away: %s %v, want the survivor's properties", props, found)
	}
	if cached, ok := env.cachedPerson("anon"); !ok || cached != props {
		t.Fatalf("the survivor's properties were not cached: %s %v", cached, ok)
	}
}

// A lookup reads that a distinct id has no person, then a commit gives it one: the
// lookup answers as it read, and must not cache that absence over the commit's person.
func TestLookupStaleDistinctFill(t *testing.T) {
	env := newLookupEnv(t)
	l := env.w.lookups
	l.stored = nil // the lookup reads the new id, as while the stored filter fills
	var wait func()
	l.afterRead, wait = env.once(Event{Name: "e", DistinctID: "new", Set: `{"v":1}`})
	if props, found := env.person("new"); found {
		t.Fatalf("the racing lookup found %s: it read before the commit", props)
	}
	wait()
	if props, found := env.person("new"); !found || props != `{"v":1}` {
		t.Fatalf("after the commit: %s %v; the absence read before it was cached", props, found)
	}
}

// A lookup reads a distinct id's person, then a commit merges that person away: the
// distinct id's new person stays cached, and the lookup answers with it.
func TestLookupStaleDistinctMove(t *testing.T) {
	env := newLookupEnv(t)
	l := env.w.lookups
	env.send(Event{Name: "e", DistinctID: "anon", Set: `{"a":1}`}, Event{Name: "e", DistinctID: "user", Set: `{"u":1}`})
	anon := distinctKey{1, "anon"}
	l.distinct.lru.remove(l.distinct.hash(anon), anon) // as if evicted: the lookup reads it
	var wait func()
	l.afterRead, wait = env.once(Event{Name: EventIdentify, DistinctID: "user", AnonDistinctID: "anon"})
	props, found := env.person("anon")
	wait()
	if !found || props != `{"a":1,"u":1}` {
		t.Fatalf("anon after its person was merged away: %s %v, want the survivor's properties", props, found)
	}
	user, _ := l.distinct.lru.get(l.distinct.hash(distinctKey{1, "user"}), distinctKey{1, "user"})
	if id, _ := l.distinct.lru.get(l.distinct.hash(anon), anon); id != user {
		t.Fatalf("anon is cached with person %s, the survivor is %s", id, user)
	}
}
