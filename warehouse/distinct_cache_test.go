package warehouse

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

// len is how many entries the cache holds.
func (c *shardedLRU[K, V]) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.lru.Len()
		s.mu.Unlock()
	}
	return n
}

// namedEvents are events of project 1 for the distinct ids prefix0..prefix<n-1>, each
// setting a.
func namedEvents(prefix string, n int) []Event {
	events := make([]Event, n)
	for i := range events {
		events[i] = testEvent(1, "e")
		events[i].DistinctID = fmt.Sprintf("%s%d", prefix, i)
		events[i].Set = `{"a":1}`
	}
	return events
}

// The distinct-id cache holds at most its size of ids, whatever the Writer and the
// lookups put in it, and every id resolves all the same.
func TestDistinctCacheBound(t *testing.T) {
	const size, ids = 1000, 3000
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{DistinctIDCacheSize: size})
	defer w.Close()
	ctx := context.Background()
	check := func(when string) {
		t.Helper()
		if n := w.writer.identity.distinct.lru.len(); n > size {
			t.Fatalf("%s: %d distinct ids cached, more than %d", when, n, size)
		}
	}
	events := namedEvents("u", ids)
	for i := 0; i < ids; i += 500 {
		if err := w.Writer().Submit(&Batch{Events: events[i : i+500]}); err != nil {
			t.Fatal(err)
		}
		check("after a commit")
	}
	for i := range ids {
		if _, found, err := w.PersonProperties(ctx, 1, fmt.Sprintf("nobody%d", i)); found || err != nil {
			t.Fatalf("nobody%d: found %v, %v", i, found, err)
		}
	}
	check("after lookups of ids without a person")
	for i := range ids {
		if props, found, err := w.PersonProperties(ctx, 1, fmt.Sprintf("u%d", i)); !found || err != nil || props != `{"a":1}` {
			t.Fatalf("u%d: %s %v %v", i, props, found, err)
		}
	}
	check("after lookups of ids with a person")
	// Every id again, mostly read back from the database: none gets a second person.
	events = namedEvents("u", ids)
	for i := range events {
		events[i].Set = `{"b":2}`
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	check("after a commit of stored ids")
	var persons, distinctIDs, changed int
	err := w.DB().QueryRow(`SELECT (SELECT count(*) FROM persons), (SELECT count(*) FROM person_distinct_ids),
		(SELECT count(*) FROM persons WHERE properties = '{"a":1,"b":2}')`).Scan(&persons, &distinctIDs, &changed)
	if err != nil {
		t.Fatal(err)
	}
	if persons != ids || distinctIDs != ids || changed != ids {
		t.Fatalf("%d persons (%d changed), %d distinct ids; want %d of each", persons, changed, distinctIDs, ids)
	}
}

// The Writer reads the distinct ids that a commit names and the cache lacks in one query
// for the whole commit, and none that the cache holds, nor new ones, which the stored
// filter knows no row holds. Open reads none: after a restart the cache is empty and
// the stored ids are read back as commits name them.
func TestDistinctIDReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{})
	defer func() { w.Close() }()
	<-w.stored.done // filled: an empty table
	// f submits the events and checks the reads and the ids read that it took.
	f := func(events []Event, wantReads, wantIDs uint64) {
		t.Helper()
		reads, ids := distinctReadsTotal.Get(), distinctIDsReadTotal.Get()
		if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
			t.Fatal(err)
		}
		if r, i := distinctReadsTotal.Get()-reads, distinctIDsReadTotal.Get()-ids; r != wantReads || i != wantIDs {
			t.Fatalf("%d reads of %d ids, want %d of %d", r, i, wantReads, wantIDs)
		}
	}
	// 50 ids, each twice, and an $identify that names one more.
	events := append(namedEvents("u", 50), namedEvents("u", 50)...)
	identify := testEvent(1, EventIdentify)
	identify.DistinctID, identify.AnonDistinctID = "u0", "anon"
	events = append(events, identify)
	renew := func() {
		for i := range events {
			events[i].UUID = uuid.Must(uuid.NewV7())
		}
	}
	f(events, 0, 0) // all new
	renew()
	f(events, 0, 0) // all cached

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = openTestWarehouse(t, path, Config{})
	if n := w.writer.identity.distinct.lru.len(); n != 0 {
		t.Fatalf("Open cached %d distinct ids", n)
	}
	<-w.stored.done
	renew()
	f(events, 1, 51)
	var persons, distinctIDs int
	if err := w.DB().QueryRow(`SELECT (SELECT count(*) FROM persons), (SELECT count(*) FROM person_distinct_ids)`).Scan(&persons, &distinctIDs); err != nil {
		t.Fatal(err)
	}
	if persons != 50 || distinctIDs != 51 {
		t.Fatalf("%d persons, %d distinct ids after a restart; want 50 and 51", persons, distinctIDs)
	}
}

// A commit that fails leaves the distinct-id cache as the database is: the new distinct
// id it would have given a person has none, for the Writer and for the lookups.
func TestDistinctCacheFailedCommit(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	poison := namedEvents("ghost", 1)
	poison[0].Properties = "{\"bad\":\"\xff\"}"
	if err := w.Writer().Submit(&Batch{Events: poison}); err == nil {
		t.Fatal("the invalid event was accepted")
	}
	k := distinctKey{1, "ghost0"}
	if id, ok := w.writer.identity.distinct.lru.get(w.writer.identity.distinct.hash(k), k); ok && id != uuid.Nil {
		t.Fatalf("the failed commit cached person %s", id)
	}
	ctx := context.Background()
	if _, found, err := w.PersonProperties(ctx, 1, "ghost0"); found || err != nil {
		t.Fatalf("after the failed commit: found %v, %v", found, err)
	}
	good := namedEvents("ghost", 1)
	good[0].Set = `{"a":2}`
	if err := w.Writer().Submit(&Batch{Events: good}); err != nil {
		t.Fatal(err)
	}
	if props, found, err := w.PersonProperties(ctx, 1, "ghost0"); !found || err != nil || props != `{"a":2}` {
		t.Fatalf("after the good commit: %s %v %v", props, found, err)
	}
}
