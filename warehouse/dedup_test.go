package warehouse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/testlog"
)

// The set agrees with a plain model (each project's fingerprints, oldest first)
// through random adds of a few projects, one sending most, duplicates, bound
// evictions, rollbacks and expiries, and its table, its lists and its heap hold exactly
// the model's fingerprints after each step. At the bound, the fingerprint forgotten is
// the oldest of a project holding the most. Fingerprints are drawn from few values, and
// some share their home slot, so runs form, wrap around the table's end and are broken
// by removals. Expiry may forget a fingerprint from window to window+grain after its
// commit: the model forgets it by window+grain, and follows the set in between. A twin
// set takes the same fingerprints through addAll, and must end each step the same.
func TestRecentEventsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const window = time.Hour
	type held struct {
		fp   uint64
		at   time.Time
		step int
	}
	for _, bound := range []int{1, 7, 100, 1000} {
		r := newRecentEvents(window, bound, testlog.New())
		twin := newRecentEvents(window, bound, testlog.New())
		model := map[int64][]held{}
		total := func() int {
			n := 0
			for _, hs := range model {
				n += len(hs)
			}
			return n
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for step := range 5000 {
			now = now.Add(time.Duration(rng.IntN(int(2 * time.Second))))
			r.expire(now)
			twin.expire(now)
			for team, hs := range model {
				for len(hs) > 0 && !hs[0].at.After(now.Add(-window-r.grain)) {
					hs = hs[1:]
				}
				for len(hs) > len(heldBy(r, team)) {
					if hs[0].at.After(now.Add(-window)) {
						t.Fatalf("bound %d step %d: forgot a fingerprint of project %d of %v at %v, within the window", bound, step, team, hs[0].at, now)
					}
					hs = hs[1:]
				}
				model[team] = hs
			}
			// A commit: runs of events of projects 1 to 4, 1 sending most, added (by add,
			// checked against the model one by one, and by addAll to the twin), then
			// COMMIT or a rollback.
			for range rng.IntN(4) {
				team := int64(1)
				if rng.IntN(3) == 0 {
					team = int64(rng.IntN(4) + 1)
				}
				p := r.project(team)
				fps := make([]uint64, rng.IntN(20))
				for i := range fps {
					switch rng.IntN(3) {
					case 0:
						fps[i] = uint64(rng.IntN(5000))<<3 | uint64(team) // often held already
					case 1:
						fps[i] = uint64(rng.IntN(64)+1)<<52 | uint64(team) // few homes: long runs
					default:
						fps[i] = rng.Uint64()<<3 | uint64(team)
					}
					dup := slices.ContainsFunc(model[team], func(h held) bool { return h.fp == fps[i] })
					most := 0
					for _, hs := range model {
						most = max(most, len(hs))
					}
					full := total() == bound
					if got := r.add(p, fps[i]); got != dup {
						t.Fatalf("bound %d step %d: %x of project %d added: duplicate %v, want %v", bound, step, fps[i], team, got, dup)
					}
					if dup {
						continue
					}
					if full {
						// One project lost its oldest: one that held the most.
						victim := int64(0)
						for other, hs := range model {
							if n := len(heldBy(r, other)); n < len(hs) || (other == team && n == len(hs)) {
								victim = other
							}
						}
						if victim == 0 || len(model[victim]) != most {
							t.Fatalf("bound %d step %d: the bound forgot a fingerprint of project %d, holding %d, where the most is %d",
								bound, step, victim, len(model[victim]), most)
						}
						model[victim] = model[victim][1:]
					}
					model[team] = append(model[team], held{fps[i], now, step})
				}
				twinDups := make([]bool, len(fps))
				twin.addAll(twin.project(team), fps, twinDups)
			}
			if rng.IntN(5) == 0 {
				// What the failed commit forgot at the bound stays forgotten.
				r.rollback()
				twin.rollback()
				for team, hs := range model {
					model[team] = slices.DeleteFunc(hs, func(h held) bool { return h.step == step })
				}
			} else {
				r.committed(now)
				twin.committed(now)
			}
			for team, hs := range model {
				want := make([]uint64, len(hs))
				for i, h := range hs {
					want[i] = h.fp
				}
				if got := heldBy(r, team); !slices.Equal(got, want) {
					t.Fatalf("bound %d step %d: project %d holds %x, want %x", bound, step, team, got, want)
				}
				if got := heldBy(twin, team); !slices.Equal(got, want) {
					t.Fatalf("bound %d step %d: through addAll, project %d holds %x, want %x", bound, step, team, got, want)
				}
			}
			checkRecentEvents(t, r, total())
			checkRecentEvents(t, twin, total())
		}
	}
}

// heldBy is what r holds of team's, oldest first.
func heldBy(r *recentEvents, team int64) []uint64 {
	p := r.projects[team]
	if p == nil {
		return nil
	}
	var fps []uint64
	for k := p.head; k >= 0; k = r.next[k] {
		fps = append(fps, r.fps[k])
	}
	if len(fps) != p.n || (p.n > 0 && r.fps[p.tail] != fps[len(fps)-1]) {
		panic(fmt.Sprintf("project %d: a list of %d, n %d", team, len(fps), p.n))
	}
	return fps
}

// checkRecentEvents checks that r holds n fingerprints in all, each in its table, found
// from its home slot, and that its heap is in order.
func checkRecentEvents(t *testing.T, r *recentEvents, n int) {
	t.Helper()
	var fifo []uint64
	for team := range r.projects {
		fifo = append(fifo, heldBy(r, team)...)
	}
	if len(fifo) != n || r.n != n {
		t.Fatalf("holds %d fingerprints in its lists, counts %d, want %d", len(fifo), r.n, n)
	}
	used := 0
	for _, fp := range r.slots {
		if fp != 0 {
			used++
		}
	}
	if used != r.n {
		t.Fatalf("the table holds %d fingerprints, the lists %d", used, r.n)
	}
	for _, fp := range fifo {
		found := false
		for i := r.home(fp); r.slots[i] != 0; i = r.nextSlot(i) {
			if r.slots[i] == fp {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("%x is held but not found from its home slot", fp)
		}
	}
	if len(r.heap) != len(r.projects) {
		t.Fatalf("%d projects in the heap, %d in the map", len(r.heap), len(r.projects))
	}
	for i, p := range r.heap {
		if p.index != i || (i > 0 && r.heap[(i-1)/2].n < p.n) {
			t.Fatalf("heap out of order at %d: %d holding %d, its parent %d", i, p.index, p.n, r.heap[(i-1)/2].n)
		}
	}
}

// An event whose project stored its uuid within the window is answered as accepted
// (Submit returns nil) and not stored again, nor applied to its person; anything else
// is stored.
func TestWriterSkipsStoredUUIDs(t *testing.T) {
	a, b, c := uuid.MustParse("0192f0c4-0000-7000-8000-00000000000a"), uuid.MustParse("0192f0c4-0000-7000-8000-00000000000b"),
		uuid.MustParse("0192f0c4-0000-7000-8000-00000000000c")
	ev := func(team int64, id uuid.UUID) Event {
		e := testEvent(team, "retried")
		e.UUID = id
		return e
	}
	poison := ev(1, a)
	poison.Properties = "{\"bad\":\"\xff\"}" // DuckDB refuses invalid UTF-8: the commit fails
	setPlan := func(id uuid.UUID, plan string) Event {
		e := ev(1, id)
		e.Set = `{"plan":"` + plan + `"}`
		return e
	}
	const window = time.Hour
	type step struct {
		restart bool
		later   time.Duration // the clock moves on before the step
		send    []Batch       // submitted at once, one commit (each on its own lane)
		dups    []int         // each batch's Duplicates
		fails   bool
	}
	send := func(events ...Event) []Batch { return []Batch{{Events: events}} }
	// flood is ten events of project 1, of uuids of their own.
	var flood []Event
	floodIDs := map[uuid.UUID][]int64{a: {2}}
	for i := range 10 {
		id := uuid.MustParse(fmt.Sprintf("0192f0c4-0000-7000-8000-0000000001%02d", i))
		flood, floodIDs[id] = append(flood, ev(1, id)), []int64{1}
	}
	for _, sc := range []struct {
		name  string
		cfg   Config
		steps []step
		want  map[uuid.UUID][]int64 // the projects of each uuid's rows
		plan  string                // the person's plan, if the scenario sets one
	}{
		{name: "twice in one request", steps: []step{{send: send(ev(1, a), ev(1, b), ev(1, a)), dups: []int{1}}},
			want: map[uuid.UUID][]int64{a: {1}, b: {1}}},
		{name: "in two requests", steps: []step{
			{send: send(ev(1, a)), dups: []int{0}},
			{send: send(ev(1, b), ev(1, a)), dups: []int{1}},
		}, want: map[uuid.UUID][]int64{a: {1}, b: {1}}},
		{name: "in two requests of one commit", cfg: Config{FlushRows: 2, FlushInterval: time.Minute}, steps: []step{
			{send: []Batch{{Lane: LaneRealtime, Events: []Event{ev(1, a)}}, {Lane: LaneHistorical, Events: []Event{ev(1, a)}}}, dups: []int{0, 1}},
		}, want: map[uuid.UUID][]int64{a: {1}}},
		{name: "across a restart", steps: []step{
			{send: send(ev(1, a)), dups: []int{0}},
			{restart: true, later: window - time.Minute, send: send(ev(1, a)), dups: []int{1}},
		}, want: map[uuid.UUID][]int64{a: {1}}},
		{name: "in another project", steps: []step{
			{send: send(ev(1, a), ev(2, a)), dups: []int{0}},
			{send: send(ev(2, a), ev(3, a)), dups: []int{1}},
		}, want: map[uuid.UUID][]int64{a: {1, 2, 3}}},
		{name: "after a failed commit", steps: []step{
			{send: send(poison), fails: true},
			{send: send(ev(1, a)), dups: []int{0}},
		}, want: map[uuid.UUID][]int64{a: {1}}},
		{name: "within the window", steps: []step{
			{send: send(ev(1, a)), dups: []int{0}},
			{later: window - time.Second, send: send(ev(1, a)), dups: []int{1}},
		}, want: map[uuid.UUID][]int64{a: {1}}},
		{name: "after the window", steps: []step{
			{send: send(ev(1, a)), dups: []int{0}},
			{later: window + window/1024, send: send(ev(1, a)), dups: []int{0}},
		}, want: map[uuid.UUID][]int64{a: {1, 1}}},
		{name: "after the window, across a restart", steps: []step{
			{send: send(ev(1, a)), dups: []int{0}},
			{send: send(ev(1, b)), later: window / 2, dups: []int{0}},
			{restart: true, later: window / 2, send: send(ev(1, a), ev(1, b)), dups: []int{1}},
		}, want: map[uuid.UUID][]int64{a: {1, 1}, b: {1}}},
		{name: "beyond the bound", cfg: Config{DedupEvents: 2}, steps: []step{
			{send: send(ev(1, a), ev(1, b), ev(1, c)), dups: []int{0}},
			{send: send(ev(1, c), ev(1, a)), dups: []int{1}},
		}, want: map[uuid.UUID][]int64{a: {1, 1}, b: {1}, c: {1}}},
		{name: "beyond the bound, across a restart", cfg: Config{DedupEvents: 2}, steps: []step{
			{send: send(ev(1, a)), dups: []int{0}},
			{send: send(ev(1, b)), later: time.Second, dups: []int{0}},
			{send: send(ev(1, c)), later: time.Second, dups: []int{0}},
			{restart: true, send: send(ev(1, a), ev(1, c)), dups: []int{1}},
		}, want: map[uuid.UUID][]int64{a: {1, 1}, b: {1}, c: {1}}},
		// One project's volume forgets its own oldest uuids, not another's.
		{name: "beyond the bound, after another project's flood", cfg: Config{DedupEvents: 4}, steps: []step{
			{send: send(ev(2, a)), dups: []int{0}},
			{send: send(flood...), dups: []int{0}},
			{send: send(ev(2, a)), dups: []int{1}},
		}, want: floodIDs},
		{name: "beyond the bound, after another project's flood, across a restart", cfg: Config{DedupEvents: 4}, steps: []step{
			{send: send(ev(2, a)), dups: []int{0}},
			{send: send(flood...), later: time.Second, dups: []int{0}},
			{restart: true, send: send(ev(2, a)), dups: []int{1}},
		}, want: floodIDs},
		{name: "a duplicate changes no person", steps: []step{
			{send: send(setPlan(a, "free")), dups: []int{0}},
			{send: send(setPlan(a, "paid")), dups: []int{1}},
		}, want: map[uuid.UUID][]int64{a: {1}}, plan: "free"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hedge.duckdb")
			// The clock only moves between steps, while the writer waits for a submission.
			now := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
			cfg := sc.cfg
			cfg.DedupWindow, cfg.Now = window, func() time.Time { return now }
			w := openTestWarehouse(t, path, cfg)
			defer func() { w.Close() }()
			for i, st := range sc.steps {
				now = now.Add(st.later)
				if st.restart {
					if err := w.Close(); err != nil {
						t.Fatal(err)
					}
					w = openTestWarehouse(t, path, cfg)
				}
				batches := make([]*Batch, len(st.send))
				for j := range st.send {
					batches[j] = &st.send[j]
				}
				err := w.Writer().Submit(batches...)
				if st.fails {
					if err == nil {
						t.Fatalf("step %d: the poisoned commit succeeded", i)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				for j, want := range st.dups {
					if got := st.send[j].Duplicates; got != want {
						t.Fatalf("step %d: batch %d had %d duplicates, want %d", i, j, got, want)
					}
				}
			}
			got := map[uuid.UUID][]int64{}
			rows, err := w.DB().Query(`SELECT uuid, team_id FROM events ORDER BY team_id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var id uuid.UUID
				var team int64
				if err := rows.Scan(&id, &team); err != nil {
					t.Fatal(err)
				}
				got[id] = append(got[id], team)
			}
			if fmt.Sprint(got) != fmt.Sprint(sc.want) {
				t.Fatalf("stored (uuid: projects) %v, want %v", got, sc.want)
			}
			if sc.plan != "" {
				persons, _, err := w.Persons(context.Background(), 1, PersonFilter{DistinctID: "user-1"}, 2, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(persons) != 1 || !strings.Contains(persons[0].Properties, `"plan":"`+sc.plan+`"`) {
					t.Fatalf("persons %+v, want one with plan %s", persons, sc.plan)
				}
			}
		})
	}
}
