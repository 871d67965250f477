package warehouse_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

var identitySeed = flag.Uint64("identity.seed", 0, "seed of TestIdentityRandomized (0: a new one each run)")

// modelPerson is a person of the model: a set of distinct ids.
type modelPerson struct {
	ids        map[string]bool
	props      map[string]any
	identified bool
	created    time.Time
}

// identityModel is a small, independent statement of the identity rules, to compare
// the Writer's persons and groups with: $set_once, $set and $unset precedence; merges
// by $identify, $create_alias and $merge_dangerously, never with an illegal id, never
// of an identified person unless dangerous, the survivor keeping its values and the
// earliest created_at; personless events touching nothing; at most five group types,
// indexed in order of appearance; groups made by $groupidentify alone.
type identityModel struct {
	byID   map[string]*modelPerson
	types  []string
	groups map[string]map[string]any // "<index>/<key>" → properties
}

// modelEvent is what the random sequence sends.
type modelEvent struct {
	name, distinctID string
	personless       bool
	set, setOnce     map[string]any
	unset            []string
	anon, alias      string
	groupType        string
	groupKey         string
	groupSet         map[string]any
	groups           [][2]string // in order: type, key
	at               time.Time
}

// The universe of distinct ids; the last three are illegal to merge.
var (
	modelIDs     = append(numbered("u", 200), "null", "undefined", "'guest'")
	modelIllegal = map[string]bool{"null": true, "undefined": true, "'guest'": true}
	modelKeys    = []string{"k1", "k2", "k3", "k4"}
	modelTypes   = []string{"company", "team", "project", "org", "region", "sixth", "seventh"}
)

func numbered(prefix string, n int) []string {
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("%s%d", prefix, i))
	}
	return ids
}

func (m *identityModel) apply(e modelEvent) {
	if e.personless {
		return
	}
	for _, g := range e.groups {
		m.typeIndex(g[0])
	}
	if e.name == "$groupidentify" {
		if i, ok := m.typeIndex(e.groupType); ok {
			k := fmt.Sprintf("%d/%s", i, e.groupKey)
			if m.groups[k] == nil {
				m.groups[k] = map[string]any{}
			}
			maps.Copy(m.groups[k], e.groupSet)
		}
	}
	switch {
	case e.name == "$identify" && e.anon != "":
		m.merge(e.anon, e.distinctID, false, e.at)
	case e.name == "$create_alias" && e.alias != "":
		m.merge(e.distinctID, e.alias, false, e.at)
	case e.name == "$merge_dangerously" && e.alias != "":
		m.merge(e.alias, e.distinctID, true, e.at)
	}
	p := m.byID[e.distinctID]
	if p == nil {
		p = &modelPerson{ids: map[string]bool{e.distinctID: true}, props: map[string]any{}, created: e.at}
		m.byID[e.distinctID] = p
	}
	if e.name == "$groupidentify" {
		return
	}
	existed := map[string]bool{}
	for _, k := range e.unset {
		_, existed[k] = p.props[k]
	}
	for k, v := range e.setOnce {
		if _, ok := p.props[k]; !ok {
			p.props[k] = v
		}
	}
	maps.Copy(p.props, e.set)
	for _, k := range e.unset {
		if existed[k] {
			delete(p.props, k)
		}
	}
}

func (m *identityModel) typeIndex(name string) (int, bool) {
	if i := slices.Index(m.types, name); i >= 0 {
		return i, true
	}
	if len(m.types) == 5 {
		return 0, false
	}
	m.types = append(m.types, name)
	return len(m.types) - 1, true
}

func (m *identityModel) merge(other, into string, dangerous bool, at time.Time) {
	if other == into || modelIllegal[other] || modelIllegal[into] {
		return
	}
	po, pi := m.byID[other], m.byID[into]
	switch {
	case po == nil && pi == nil:
		p := &modelPerson{ids: map[string]bool{other: true, into: true}, props: map[string]any{}, identified: true, created: at}
		m.byID[other], m.byID[into] = p, p
	case pi == nil:
		po.ids[into], po.identified, m.byID[into] = true, true, po
	case po == nil:
		pi.ids[other], pi.identified, m.byID[other] = true, true, pi
	case po == pi:
		po.identified = true
	case po.identified && !dangerous:
	default:
		for k, v := range po.props {
			if _, ok := pi.props[k]; !ok {
				pi.props[k] = v
			}
		}
		if po.created.Before(pi.created) {
			pi.created = po.created
		}
		pi.identified = true
		for id := range po.ids {
			pi.ids[id], m.byID[id] = true, pi
		}
	}
}

// randomEvent makes one event of the sequence.
func randomEvent(r *rand.Rand, at time.Time) modelEvent {
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	e := modelEvent{distinctID: pick(modelIDs), at: at, name: "event"}
	randomProps := func() map[string]any {
		m := map[string]any{}
		for range r.IntN(3) {
			m[pick(modelKeys)] = r.IntN(5)
		}
		return m
	}
	switch x := r.IntN(100); {
	case x < 10:
		e.personless = true
	case x < 18:
		e.name, e.anon = "$identify", pick(modelIDs)
	case x < 22:
		e.name, e.alias = "$create_alias", pick(modelIDs)
	case x < 23:
		e.name, e.alias = "$merge_dangerously", pick(modelIDs)
	case x < 46:
		e.name, e.groupType, e.groupKey, e.groupSet = "$groupidentify", pick(modelTypes), pick(modelKeys), randomProps()
	case x < 56:
		for range 1 + r.IntN(3) { // several at once: new types get indexes in event order
			e.groups = append(e.groups, [2]string{pick(modelTypes), pick(modelKeys)})
		}
	}
	if e.name != "$groupidentify" {
		e.set, e.setOnce = randomProps(), randomProps()
		for range r.IntN(2) {
			e.unset = append(e.unset, pick(modelKeys))
		}
	}
	return e
}

// row is the event as the edge hands it to the Writer. A personless event keeps its
// $set, $set_once and $unset here, which the edge strips: the Writer must ignore them.
func (e modelEvent) row() event {
	text := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	row := event{Name: e.name, DistinctID: e.distinctID, Personless: e.personless, AnonDistinctID: e.anon, Alias: e.alias}
	if len(e.set) > 0 {
		row.Set = text(e.set)
	}
	if len(e.setOnce) > 0 {
		row.SetOnce = text(e.setOnce)
	}
	if len(e.unset) > 0 {
		row.Unset = text(e.unset)
	}
	if e.name == "$groupidentify" {
		row.GroupType, row.GroupKey, row.GroupSet = e.groupType, e.groupKey, text(e.groupSet)
	}
	if len(e.groups) > 0 { // $groups in the given order (JSON objects keep it; Go maps do not)
		var pairs []string
		for _, g := range e.groups {
			pairs = append(pairs, fmt.Sprintf("%q:%q", g[0], g[1]))
		}
		row.Groups = "{" + strings.Join(pairs, ",") + "}"
	}
	return row
}

// randomSequence is the seed of a randomized test (-identity.seed, else a new one each
// run), its generator on the test's own stream, and the model, empty.
func randomSequence(stream uint64) (uint64, *rand.Rand, *identityModel) {
	seed := *identitySeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return seed, rand.New(rand.NewPCG(seed, stream)), &identityModel{byID: map[string]*modelPerson{}, groups: map[string]map[string]any{}}
}

// randomBatch is n random events, a second apart from at, applied to the model.
func (m *identityModel) randomBatch(r *rand.Rand, at time.Time, n int) []event {
	var events []event
	for range n {
		e := randomEvent(r, at.Add(time.Duration(len(events))*time.Second))
		m.apply(e)
		events = append(events, e.row())
	}
	return events
}

// TestIdentityRandomized replays a long random sequence of identity events through the
// Writer, in batches on the realtime and historical lanes, and compares the persons
// and groups it ends with to the model's, and each event's person now to its distinct
// id's. The Writer's person cache holds fewer
// persons than the sequence makes (about 80), so that persons are read back from the
// database as well as from memory. A failure names its seed; replay it with
// go test ./warehouse -run TestIdentityRandomized -identity.seed=N. It runs twice: with
// the person overrides of the sequence left in their table, and squashed into the
// events after every commit; and a third time with the events in the lake, whose
// parts keep their overrides.
func TestIdentityRandomized(t *testing.T) {
	t.Run("overrides", func(t *testing.T) { testIdentityRandomized(t, warehouse.Config{PersonCacheSize: 64}) })
	t.Run("squashed", func(t *testing.T) {
		testIdentityRandomized(t, warehouse.Config{PersonCacheSize: 64, SquashInterval: time.Nanosecond})
	})
	t.Run("lake", func(t *testing.T) {
		testIdentityRandomized(t, warehouse.Config{PersonCacheSize: 64, SquashInterval: time.Nanosecond, LakeDir: filepath.Join(t.TempDir(), "lake")})
	})
}

func testIdentityRandomized(t *testing.T, cfg warehouse.Config) {
	env := newIdentityEnv(t, cfg)
	seed, r, model := randomSequence(1)
	for batch := range 40 {
		events := model.randomBatch(r, env.at, 50)
		lane := warehouse.LaneRealtime
		if batch%3 == 0 {
			lane = warehouse.LaneHistorical
		}
		env.sendLane(lane, events...) // timestamps each a second after the last, as the model's
	}

	describe := func(ids []string, props string, identified bool, created time.Time) string {
		slices.Sort(ids)
		return fmt.Sprintf("%v %s identified=%v created=%s", ids, props, identified, created.UTC().Format(time.RFC3339))
	}
	normalize := func(xs []string) string {
		slices.Sort(xs)
		return strings.Join(xs, "\n")
	}
	var want, got []string
	seen := map[*modelPerson]bool{}
	for _, p := range model.byID {
		if !seen[p] {
			seen[p] = true
			props, _ := json.Marshal(p.props) // keys sorted, as the Writer stores them
			want = append(want, describe(slices.Collect(maps.Keys(p.ids)), string(props), p.identified, p.created))
		}
	}
	for _, p := range env.persons(team) {
		got = append(got, describe(p.DistinctIDs, p.Properties, p.IsIdentified, p.CreatedAt))
	}
	if normalize(want) != normalize(got) {
		t.Fatalf("seed %d: persons differ\nmodel:\n%s\nwarehouse:\n%s", seed, normalize(want), normalize(got))
	}

	// Every event counts for its distinct id's person now, as queries read it through
	// person_overrides: the same person as through person_distinct_ids (or the one it
	// was ingested for, when its id has no person).
	var events, wrong int
	stored := "events"
	if cfg.LakeDir != "" {
		// The catalog, not the listing, which is written up to a second later.
		var files []string
		rows, err := env.w.DB().Query(`SELECT path FROM meta.lake_parts WHERE team_id = ?`, team)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var path string
			if err := rows.Scan(&path); err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.Join(cfg.LakeDir, path))
		}
		if err := rows.Err(); err != nil || len(files) == 0 {
			t.Fatalf("the lake's parts: %v (%v)", files, err)
		}
		stored = "read_parquet(['" + strings.Join(files, "', '") + "'])"
	}
	if err := env.w.DB().QueryRow(`SELECT count(*), count(*) FILTER (
			WHERE coalesce(o.person_id, e.person_id) IS DISTINCT FROM coalesce(d.person_id, e.person_id))
		FROM `+stored+` e
		LEFT JOIN person_distinct_ids d ON d.team_id = e.team_id AND d.distinct_id = e.distinct_id
		LEFT JOIN person_overrides o ON o.team_id = e.team_id AND o.old_person_id = e.person_id
		WHERE e.team_id = ?`, team).Scan(&events, &wrong); err != nil || events != 40*50 || wrong != 0 {
		t.Fatalf("seed %d: %d of %d events count for another person than their distinct id's (%v)", seed, wrong, events, err)
	}

	types, err := env.w.GroupTypes(context.Background(), team)
	if err != nil {
		t.Fatal(err)
	}
	var gotTypes []string
	for i, ty := range types {
		if ty.Index != i {
			t.Fatalf("seed %d: group type %q has index %d, want %d", seed, ty.Name, ty.Index, i)
		}
		gotTypes = append(gotTypes, ty.Name)
	}
	if !slices.Equal(gotTypes, model.types) {
		t.Fatalf("seed %d: group types %v, model %v", seed, gotTypes, model.types)
	}
	want = nil
	for k, props := range model.groups {
		b, _ := json.Marshal(props)
		want = append(want, k+" "+string(b))
	}
	if got := env.groups(team); normalize(want) != normalize(got) {
		t.Fatalf("seed %d: groups differ\nmodel:\n%s\nwarehouse:\n%s", seed, normalize(want), normalize(got))
	}
	t.Logf("seed %d: %d persons and %d groups agree with the model", seed, len(seen), len(model.groups))
}
