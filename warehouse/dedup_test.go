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

// The set agrees with a plain model (a slice of the fingerprints held, oldest first)
// through random adds, duplicates, bound evictions, rollbacks and expiries, and its
// table holds exactly the model's fingerprints after each step. Fingerprints are drawn
// from few values, and some share their home slot, so runs form, wrap around the
// table's end and are broken by removals. Expiry may forget a fingerprint from window
// to window+grain after its commit: the model forgets it by window+grain, and follows
// the set in between.
func TestRecentEventsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const window = time.Hour
	type held struct {
		fp uint64
		at time.Time
	}
	for _, bound := range []int{1, 7, 100, 1000} {
		r := newRecentEvents(window, bound, testlog.New())
		var model []held
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for step := range 5000 {
			now = now.Add(time.Duration(rng.IntN(int(2 * time.Second))))
			r.expire(now)
			for len(model) > 0 && !model[0].at.After(now.Add(-window-r.grain)) {
				model = model[1:]
			}
			for len(model) > r.n {
				if model[0].at.After(now.Add(-window)) {
					t.Fatalf("bound %d step %d: forgot a fingerprint of %v at %v, within the window", bound, step, model[0].at, now)
				}
				model = model[1:]
			}
			// A commit: its events added (by addAll, which the writer uses, or one by one),
			// then COMMIT or a rollback.
			first, before := r.seq(), len(model)
			fps, want := make([]uint64, rng.IntN(40)), []bool{}
			for i := range fps {
				switch rng.IntN(3) {
				case 0:
					fps[i] = uint64(rng.IntN(5000)) + 1 // often held already
				case 1:
					fps[i] = uint64(rng.IntN(64)+1) << 52 // few homes: long runs
				default:
					fps[i] = rng.Uint64() | 1
				}
				dup := slices.ContainsFunc(model, func(h held) bool { return h.fp == fps[i] })
				want = append(want, dup)
				if !dup {
					if len(model) == bound {
						model, before = model[1:], before-1
					}
					model = append(model, held{fps[i], now})
				}
			}
			got := make([]bool, len(fps))
			if step%2 == 0 {
				r.addAll(fps, got)
			} else {
				for i, fp := range fps {
					got[i] = r.add(fp)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("bound %d step %d: %x added: duplicates %v, want %v", bound, step, fps, got, want)
			}
			if rng.IntN(5) == 0 {
				// What the failed commit forgot at the bound stays forgotten.
				r.rollback(first)
				model = model[:max(before, 0)]
			} else {
				r.committed(now)
			}
			heldFPs := make([]uint64, len(model))
			for i, h := range model {
				heldFPs[i] = h.fp
			}
			checkRecentEvents(t, r, heldFPs)
		}
	}
}

// checkRecentEvents checks that r holds exactly the fingerprints want, oldest first,
// each found from its home slot.
func checkRecentEvents(t *testing.T, r *recentEvents, want []uint64) {
	t.Helper()
	var fifo []uint64
	for k := range r.n {
		fifo = append(fifo, r.fifo[r.ring(k)])
	}
	if !slices.Equal(fifo, want) {
		t.Fatalf("holds %d fingerprints %x, want %d %x", r.n, fifo, len(want), want)
	}
	used := 0
	for _, fp := range r.slots {
		if fp != 0 {
			used++
		}
	}
	if used != r.n {
		t.Fatalf("the table holds %d fingerprints, the FIFO %d", used, r.n)
	}
	for _, fp := range fifo {
		found := false
		for i := r.home(fp); r.slots[i] != 0; i = r.next(i) {
			if r.slots[i] == fp {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("%x is held but not found from its home slot", fp)
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
