package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// modelPerson is a person of the reference model: a set of distinct ids.
type modelPerson struct {
	ids        map[string]bool
	props      map[string]any
	identified bool
	created    time.Time
}

// identityModel is a small, independent statement of the identity rules (spec rules
// 2 and 5-9, reference §9), to compare hedge's persons and groups with.
type identityModel struct {
	byID   map[string]*modelPerson
	types  []string
	groups map[string]map[string]any // "<index>/<key>" → properties
}

// modelEvent is what the random sequence sends; the test renders it to JSON.
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

func (e modelEvent) json(token string) string {
	props := map[string]any{}
	if e.personless {
		props["$process_person_profile"] = false
	}
	if len(e.set) > 0 {
		props["$set"] = e.set
	}
	if len(e.setOnce) > 0 {
		props["$set_once"] = e.setOnce
	}
	if len(e.unset) > 0 {
		props["$unset"] = e.unset
	}
	if e.anon != "" {
		props["$anon_distinct_id"] = e.anon
	}
	if e.alias != "" {
		props["alias"] = e.alias
	}
	if e.name == "$groupidentify" {
		props["$group_type"], props["$group_key"], props["$group_set"] = e.groupType, e.groupKey, e.groupSet
	}
	body, _ := json.Marshal(props)
	text := string(body)
	if len(e.groups) > 0 { // $groups in the given order (JSON objects keep it; Go maps do not)
		var pairs []string
		for _, g := range e.groups {
			pairs = append(pairs, fmt.Sprintf("%q:%q", g[0], g[1]))
		}
		text = strings.TrimSuffix(text, "}")
		if text != "{" {
			text += ","
		}
		text += `"$groups":{` + strings.Join(pairs, ",") + "}}"
	}
	return fmt.Sprintf(`{"event":%q,"distinct_id":%q,"timestamp":%q,"properties":%s}`, e.name, e.distinctID, e.at.Format(time.RFC3339Nano), text)
}

// TestIdentityRandomized replays a long random sequence of identity events through the
// edge and compares the persons and groups hedge ends with to the reference model's.
func TestIdentityRandomized(t *testing.T) {
	env := newIdentityEnv(t)
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 1))
	model := &identityModel{byID: map[string]*modelPerson{}, groups: map[string]map[string]any{}}
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for batch := range 40 {
		var items []string
		for range 50 {
			e := randomEvent(r, at)
			at = at.Add(time.Second)
			model.apply(e)
			items = append(items, e.json(env.boot.ProjectAPIKey))
		}
		body := fmt.Sprintf(`{"api_key":%q,"historical_migration":%t,"batch":[%s]}`, env.boot.ProjectAPIKey, batch%3 == 0, strings.Join(items, ","))
		if status, text := request(t, "POST", env.s.captureURL+"/batch/", "", body); status != 200 {
			t.Fatalf("seed %d: batch answered %d %s", seed, status, text)
		}
	}

	describe := func(ids []string, props map[string]any, identified bool, created time.Time) string {
		sort.Strings(ids)
		b, _ := json.Marshal(props)
		return fmt.Sprintf("%v %s identified=%v created=%s", ids, b, identified, created.UTC().Format(time.RFC3339))
	}
	var want, got []string
	seen := map[*modelPerson]bool{}
	for _, p := range model.byID {
		if !seen[p] {
			seen[p] = true
			want = append(want, describe(slices.Collect(maps.Keys(p.ids)), p.props, p.identified, p.created))
		}
	}
	for _, p := range env.persons() {
		got = append(got, describe(p.DistinctIDs, p.Properties, p.IsIdentified, p.CreatedAt))
	}
	// JSON numbers come back as float64: compare through the same encoding.
	normalize := func(xs []string) string {
		sort.Strings(xs)
		return strings.Join(xs, "\n")
	}
	if normalize(want) != normalize(got) {
		t.Fatalf("seed %d: persons differ\nmodel:\n%s\nhedge:\n%s", seed, normalize(want), normalize(got))
	}

	var types []struct {
		GroupType string `json:"group_type"`
	}
	env.get("/groups_types/", &types)
	var gotTypes []string
	for _, ty := range types {
		gotTypes = append(gotTypes, ty.GroupType)
	}
	if !slices.Equal(gotTypes, model.types) {
		t.Fatalf("seed %d: group types %v, model %v", seed, gotTypes, model.types)
	}
	want, got = nil, nil
	for k, props := range model.groups {
		b, _ := json.Marshal(props)
		want = append(want, k+" "+string(b))
	}
	for i := range model.types {
		var page struct {
			Results []struct {
				GroupKey        string         `json:"group_key"`
				GroupProperties map[string]any `json:"group_properties"`
			}
		}
		env.get(fmt.Sprintf("/groups/?group_type_index=%d&limit=1000", i), &page)
		for _, g := range page.Results {
			b, _ := json.Marshal(g.GroupProperties)
			got = append(got, fmt.Sprintf("%d/%s %s", i, g.GroupKey, b))
		}
	}
	if normalize(want) != normalize(got) {
		t.Fatalf("seed %d: groups differ\nmodel:\n%s\nhedge:\n%s", seed, normalize(want), normalize(got))
	}
	t.Logf("seed %d: %d persons and %d groups agree with the model", seed, len(seen), len(model.groups))
}
