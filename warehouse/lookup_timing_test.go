package warehouse

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/uuid"
)

// BenchmarkPersonProperties looks up the properties of 10,000 persons from parallel
// goroutines, as /flags/ requests do: cached (the steady state), of distinct ids that
// have no person (answered by the distinct-id cache alone), and uncached (a cache of 16
// persons: nearly every lookup reads DuckDB, through the lookups' own pool), with a
// lookup per core at a time and with 64 at a time, whose misses share batch reads;
// and of distinct ids that have no person, with a distinct-id cache of 16 (each lookup
// reads the distinct id, which scans person_distinct_ids, with the misses beside it).
func BenchmarkPersonProperties(b *testing.B) {
	const persons = 10000
	for _, bench := range []struct {
		name                 string
		cacheSize, distincts int
		prefix               string // of the distinct ids looked up
		found                bool
		perCore              int // lookups at a time per GOMAXPROCS
	}{
		{"cached", DefaultPropertiesCacheSize, 0, "user-", true, 1},
		{"unknown", DefaultPropertiesCacheSize, 0, "nobody-", false, 1},
		{"uncached", 16, 0, "user-", true, 1},
		{"uncached-64", 16, 0, "user-", true, 64 / runtime.GOMAXPROCS(0)},
		{"unknown-uncached-64", DefaultPropertiesCacheSize, 16, "nobody-", false, 64 / runtime.GOMAXPROCS(0)},
	} {
		b.Run(bench.name, func(b *testing.B) {
			events := make([]Event, persons)
			ids := make([]string, persons)
			for i := range events {
				events[i] = testEvent(1, "pageview")
				events[i].DistinctID = fmt.Sprintf("user-%d", i)
				events[i].Set = fmt.Sprintf(`{"email":"user-%d@example.com","plan":"pro","$initial_referrer":"https://example.com/"}`, i)
				ids[i] = fmt.Sprintf("%s%d", bench.prefix, i)
			}
			w := lookupWarehouse(b, Config{PropertiesCacheSize: bench.cacheSize, DistinctIDCacheSize: bench.distincts}, events)
			defer w.Close()
			measureLookups(b, ids, bench.found, bench.perCore, func(ctx context.Context, id string) (string, bool, error) {
				return w.PersonProperties(ctx, 1, id)
			})
		})
	}
}

// BenchmarkGroupProperties looks up 1,000 groups from parallel goroutines: cached,
// and uncached (a cache of two groups: nearly every lookup reads DuckDB).
func BenchmarkGroupProperties(b *testing.B) {
	const groups = 1000
	for _, bench := range []struct {
		name      string
		cacheSize int
	}{
		{"cached", DefaultPropertiesCacheSize},
		{"uncached", 16},
	} {
		b.Run(bench.name, func(b *testing.B) {
			events := make([]Event, groups)
			keys := make([]string, groups)
			for i := range events {
				keys[i] = uuid.NewString()
				events[i] = testEvent(1, EventGroupIdentify)
				events[i].GroupType, events[i].GroupKey, events[i].GroupSet = "company", keys[i], `{"plan":"pro","seats":12}`
			}
			w := lookupWarehouse(b, Config{PropertiesCacheSize: bench.cacheSize}, events)
			defer w.Close()
			measureLookups(b, keys, true, 1, func(ctx context.Context, key string) (string, bool, error) {
				return w.GroupProperties(ctx, 1, 0, key)
			})
		})
	}
}

// lookupWarehouse opens a warehouse with cfg and stores events in it.
func lookupWarehouse(b *testing.B, cfg Config, events []Event) *Warehouse {
	cfg.Path = filepath.Join(b.TempDir(), "hedge.duckdb")
	w, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		w.Close()
		b.Fatal(err)
	}
	return w
}

// measureLookups looks up every key once (warming the cache), then measures lookups
// from parallel goroutines, perCore at a time per GOMAXPROCS, each going through the
// keys from a random one; every lookup must find (or not) as found says.
func measureLookups(b *testing.B, keys []string, found bool, perCore int, lookup func(ctx context.Context, key string) (string, bool, error)) {
	ctx := context.Background()
	for _, key := range keys {
		if _, _, err := lookup(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetParallelism(perCore)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(keys))
		for pb.Next() {
			i = (i + 1) % len(keys)
			if _, ok, err := lookup(ctx, keys[i]); err != nil || ok != found {
				b.Fatalf("%s: found %v, %v", keys[i], ok, err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

// BenchmarkInvalidate measures what the Writer pays after a commit that changed 5,000
// cached persons and 50 groups: what apply adds to a commit of 10,000 events that
// change half their persons.
func BenchmarkInvalidate(b *testing.B) {
	w, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "hedge.duckdb")})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	l := w.lookups
	var d identityDelta
	d.persons = map[uuid.UUID]*person{}
	d.groups = map[groupKey]*group{}
	for i := range 5000 {
		p := &person{id: personIDFor(1, fmt.Sprint(i)), stored: true}
		d.persons[p.id] = p
	}
	for i := range 50 {
		k := groupKey{1, 0, fmt.Sprint(i)}
		d.groups[k] = &group{key: k}
	}
	fill := func() {
		for id := range d.persons {
			l.persons.add(maphash.Comparable(l.seed, id), id, `{"plan":"pro"}`)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		fill()
		b.StartTimer()
		l.invalidate(l.stampDistinct(&d), &d)
	}
}
