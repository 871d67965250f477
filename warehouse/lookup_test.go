package warehouse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hedge-analytics/hedge/warehouse"
)

// The reads of flag evaluation (PersonProperties, GroupProperties, GroupTypeNames),
// driven through Writer.Submit: each must answer as of the last commit, cached or not.

// answer is what a lookup answered: "-" stands for not found; an error fails the test.
func (env *identityEnv) answer(props string, found bool, err error) string {
	env.t.Helper()
	if err != nil {
		env.t.Fatal(err)
	}
	if !found {
		return "-"
	}
	return props
}

// wantProps checks PersonProperties of distinctID in project: "-" stands for not found.
func (env *identityEnv) wantProps(project int64, distinctID, want string) {
	env.t.Helper()
	if props := env.answer(env.w.PersonProperties(context.Background(), project, distinctID)); props != want {
		env.t.Fatalf("properties of %q in project %d: %s, want %s", distinctID, project, props, want)
	}
}

// wantGroupProps checks GroupProperties: "-" stands for not found.
func (env *identityEnv) wantGroupProps(typeIndex int, key, want string) {
	env.t.Helper()
	if props := env.answer(env.w.GroupProperties(context.Background(), team, typeIndex, key)); props != want {
		env.t.Fatalf("properties of group %d/%s: %s, want %s", typeIndex, key, props, want)
	}
}

// Each answer is read twice: the first may come from the database, the second from
// the cache, and both must be the last commit's.
func TestLookupPersonProperties(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	twice := func(project int64, distinctID, want string) {
		t.Helper()
		env.wantProps(project, distinctID, want)
		env.wantProps(project, distinctID, want)
	}
	// Unknown until its first event is committed; a personless event makes no person.
	twice(team, "anon", "-")
	env.send(event{Name: "pageview", DistinctID: "anon", Personless: true})
	twice(team, "anon", "-")
	env.send(event{Name: "pageview", DistinctID: "anon", Set: `{"first_page":"/pricing","plan":"free"}`})
	twice(team, "anon", `{"first_page":"/pricing","plan":"free"}`)

	// $set and $unset replace what is cached.
	env.send(event{Name: "e", DistinctID: "anon", Set: `{"plan":"trial"}`})
	twice(team, "anon", `{"first_page":"/pricing","plan":"trial"}`)
	env.send(event{Name: "e", DistinctID: "anon", Unset: `["first_page"]`})
	twice(team, "anon", `{"plan":"trial"}`)
	// An event that changes nothing leaves the cache as it is.
	env.send(event{Name: "e", DistinctID: "anon", Set: `{"plan":"trial"}`})
	twice(team, "anon", `{"plan":"trial"}`)

	// $identify into a new distinct id: both read the one person.
	env.send(event{Name: "$identify", DistinctID: "user", AnonDistinctID: "anon", Set: `{"email":"u@example.com"}`})
	twice(team, "user", `{"email":"u@example.com","plan":"trial"}`)
	twice(team, "anon", `{"email":"u@example.com","plan":"trial"}`)

	// A merge of two persons, both cached: the merged-away one's distinct ids read the
	// survivor.
	env.send(event{Name: "e", DistinctID: "device", Set: `{"device":"phone","plan":"free"}`})
	twice(team, "device", `{"device":"phone","plan":"free"}`)
	env.send(event{Name: "$merge_dangerously", DistinctID: "user", Alias: "device"})
	want := `{"device":"phone","email":"u@example.com","plan":"trial"}`
	for _, id := range []string{"anon", "user", "device"} {
		twice(team, id, want)
	}

	// Another project's distinct id of the same name is another person.
	const other = 2
	twice(other, "anon", "-")
	env.send(event{TeamID: other, Name: "e", DistinctID: "anon", Set: `{"p":2}`})
	twice(other, "anon", `{"p":2}`)
	twice(team, "anon", want)
}

func TestLookupGroupProperties(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	twice := func(typeIndex int, key, want string) {
		t.Helper()
		env.wantGroupProps(typeIndex, key, want)
		env.wantGroupProps(typeIndex, key, want)
	}
	// Absent, and cached as absent, until $groupidentify creates it.
	twice(0, "acme", "-")
	env.send(event{Name: "e", DistinctID: "u", Groups: `{"company":"acme"}`}) // $groups creates no group
	twice(0, "acme", "-")
	env.send(event{Name: "$groupidentify", DistinctID: "u", GroupType: "company", GroupKey: "acme", GroupSet: `{"plan":"pro"}`})
	twice(0, "acme", `{"plan":"pro"}`)
	env.send(event{Name: "$groupidentify", DistinctID: "u", GroupType: "company", GroupKey: "acme", GroupSet: `{"seats":5}`})
	twice(0, "acme", `{"plan":"pro","seats":5}`)
	// The key is matched exactly, and per type index; an index out of range has no group.
	twice(0, "ACME", "-")
	twice(1, "acme", "-")
	twice(-1, "acme", "-")
	twice(5, "acme", "-")
	env.send(event{Name: "$groupidentify", DistinctID: "u", GroupType: "team", GroupKey: "acme", GroupSet: `{"t":1}`})
	twice(1, "acme", `{"t":1}`)
	twice(0, "acme", `{"plan":"pro","seats":5}`)
}

func TestLookupGroupTypeNames(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	f := func(project int64, want ...string) {
		t.Helper()
		var w [5]string
		copy(w[:], want)
		if got := env.w.GroupTypeNames(project); got != w {
			t.Fatalf("group types of project %d: %q, want %q", project, got, w)
		}
	}
	f(team)
	env.send(event{Name: "e", DistinctID: "u", Groups: `{"company":"c","team":"t"}`})
	f(team, "company", "team")
	f(2)
	env.send(event{Name: "$groupidentify", DistinctID: "u", GroupType: "project", GroupKey: "p"},
		event{TeamID: 2, Name: "e", DistinctID: "u", Groups: `{"org":"o"}`})
	f(team, "company", "team", "project")
	f(2, "org")
	env.send(event{Name: "e", DistinctID: "u", Groups: `{"a":"1","b":"2","c":"3"}`}) // the sixth type gets no index
	f(team, "company", "team", "project", "a", "b")
}

// A restart answers the same, from cold caches (distinct ids and persons are read back
// from the database) and the group types that Open loads.
func TestLookupRestart(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{})
	env.send(
		event{Name: "e", DistinctID: "anon", Set: `{"a":1}`},
		event{Name: "$identify", DistinctID: "user", AnonDistinctID: "anon", Set: `{"b":2}`},
		event{Name: "$groupidentify", DistinctID: "user", GroupType: "company", GroupKey: "c1", GroupSet: `{"plan":"pro"}`},
		event{Name: "e", DistinctID: "user", Groups: `{"team":"t1"}`},
	)
	check := func() {
		t.Helper()
		env.wantProps(team, "anon", `{"a":1,"b":2}`)
		env.wantProps(team, "user", `{"a":1,"b":2}`)
		env.wantProps(team, "nobody", "-")
		env.wantGroupProps(0, "c1", `{"plan":"pro"}`)
		env.wantGroupProps(1, "t1", "-")
		if got, want := env.w.GroupTypeNames(team), [5]string{"company", "team"}; got != want {
			t.Fatalf("group types %q, want %q", got, want)
		}
	}
	check()
	env.restart()
	check()
	// And the reopened Writer invalidates as the first one did.
	env.send(event{Name: "e", DistinctID: "anon", Set: `{"a":3}`})
	env.wantProps(team, "user", `{"a":3,"b":2}`)
}

// TestLookupRandomized replays the random identity sequence of TestIdentityRandomized
// and, after every batch, compares every distinct id's PersonProperties and every
// group's GroupProperties (absent ones included) with the model, through a cache of
// 16 persons and two groups, smaller than what the sequence makes (about 80 persons
// and 20 groups): answers come from the cache, from the database, and from both across
// merges. A failure names its seed; replay it with -identity.seed=N.
func TestLookupRandomized(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{PersonCacheSize: 64, PropertiesCacheSize: 16})
	seed, r, model := randomSequence(2)
	ctx := context.Background()
	for batch := range 40 {
		env.send(model.randomBatch(r, env.at, 25)...)
		// Twice: once reading what the cache lacks, once more from the cache.
		for range 2 {
			for _, id := range modelIDs {
				want := "-"
				if p := model.byID[id]; p != nil {
					b, _ := json.Marshal(p.props)
					want = string(b)
				}
				if props := env.answer(env.w.PersonProperties(ctx, team, id)); props != want {
					t.Fatalf("seed %d, batch %d: properties of %q %s, model %s", seed, batch, id, props, want)
				}
			}
			for i := range 5 {
				for _, key := range modelKeys {
					want := "-"
					if props, ok := model.groups[fmt.Sprintf("%d/%s", i, key)]; ok {
						b, _ := json.Marshal(props)
						want = string(b)
					}
					if props := env.answer(env.w.GroupProperties(ctx, team, i, key)); props != want {
						t.Fatalf("seed %d, batch %d: group %d/%s %s, model %s", seed, batch, i, key, props, want)
					}
				}
			}
		}
		var types [5]string
		copy(types[:], model.types)
		if got := env.w.GroupTypeNames(team); got != types {
			t.Fatalf("seed %d, batch %d: group types %q, model %q", seed, batch, got, types)
		}
	}
}

// Many lookups that miss at once share batch reads, each answered with its own person.
func TestLookupBatchedMisses(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{PropertiesCacheSize: 16})
	const persons = 300
	var events []event
	for i := range persons {
		events = append(events, event{Name: "e", DistinctID: fmt.Sprintf("u%d", i), Set: fmt.Sprintf(`{"i":%d}`, i)})
	}
	env.send(events...)
	var wg sync.WaitGroup
	errs := make(chan error, persons)
	for g := range 50 {
		wg.Go(func() {
			for k := range persons / 5 {
				i := (g*7 + k) % persons // overlapping: ids repeat within and across batches
				props, found, err := env.w.PersonProperties(context.Background(), team, fmt.Sprintf("u%d", i))
				if want := fmt.Sprintf(`{"i":%d}`, i); err != nil || !found || props != want {
					errs <- fmt.Errorf("u%d: %s %v %v, want %s", i, props, found, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Readers never see an older value than the last one whose Submit returned before
// they started, while commits change the persons they read: a stale fill would stay in
// the cache and fail this as soon as the next commit is acknowledged. Run it with -race.
func TestLookupConcurrent(t *testing.T) {
	env := newIdentityEnv(t, warehouse.Config{PropertiesCacheSize: 2})
	ids := []string{"a", "b", "c", "d"}
	var committed [4]atomic.Int64 // the last n of each id that Submit acknowledged
	for i, id := range ids {
		env.send(event{Name: "e", DistinctID: id, Set: `{"n":0}`})
		committed[i].Store(0)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				i := k % len(ids)
				floor := committed[i].Load()
				props, found, err := env.w.PersonProperties(context.Background(), team, ids[i])
				if err != nil || !found {
					errs <- fmt.Errorf("%s: found %v, %v", ids[i], found, err)
					return
				}
				var p struct{ N int64 }
				if err := json.Unmarshal([]byte(props), &p); err != nil {
					errs <- err
					return
				}
				if p.N < floor {
					errs <- fmt.Errorf("%s: read n=%d after n=%d was committed", ids[i], p.N, floor)
					return
				}
				reads.Add(1)
			}
		})
	}
	for n := int64(1); n <= 200; n++ {
		i := int(n) % len(ids)
		env.send(event{Name: "e", DistinctID: ids[i], Set: `{"n":` + strconv.FormatInt(n, 10) + `}`})
		committed[i].Store(n)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d reads beside 200 commits", reads.Load())
}
