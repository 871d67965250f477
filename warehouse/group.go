package warehouse

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bytedance/sonic"

	"github.com/hedge-analytics/hedge/internal/jsontext"
)

// Groups in the identity model: the group types of each project, with their indexes
// (the events' $group_N columns), and the groups $groupidentify creates and updates.

// maxGroupTypes is PostHog's limit per project; a sixth type gets no index.
const maxGroupTypes = 5

type groupKey struct {
	team  int64
	index int
	key   string
}

// group is one row of the groups table as the writer holds it.
type group struct {
	key       groupKey
	props     map[string]json.RawMessage
	createdAt time.Time
	version   int64
	stored    bool
}

type groupTypeRow struct {
	team  int64
	name  string
	index int
}

// eventGroups fills the event's $group_N columns from its $groups, giving new group
// types an index while the project has fewer than five; it never creates a group (only
// $groupidentify does). $groups that is not a valid JSON object gives no groups, as in
// PostHog. A key is a JSON string unescaped or a number as written; other values are
// no key.
//
// The keys it puts in columns alias e.Groups: they only go into the event's row, which
// the commit appends (copying them) while e is alive. The one string kept beyond the
// commit, a new type's name, groupTypeIndex copies.
func (x *identity) eventGroups(e *Event, columns *[maxGroupTypes]string) error {
	groups := jsontext.StringToBytes(e.Groups)
	if !jsontext.IsObject(groups[jsontext.SkipSpace(groups, 0):]) || !identityJSON.Valid(groups) {
		return nil
	}
	known := true
	jsontext.Members(groups, func(typ, _ []byte) {
		if _, ok := x.knownGroupType(e.TeamID, jsontext.String(typ)); !ok {
			known = false
		}
	})
	if known {
		// The last member of a type decides its column, as if the object were a map.
		jsontext.Members(groups, func(typ, key []byte) {
			index, _ := x.knownGroupType(e.TeamID, jsontext.String(typ))
			columns[index] = jsontext.Text(key)
		})
		return nil
	}
	// New types get indexes in the order they appear in the event.
	jsontext.Members(groups, func(typ, raw []byte) {
		if key := jsontext.Text(raw); key != "" {
			if index, ok := x.groupTypeIndex(e.TeamID, jsontext.String(typ)); ok {
				columns[index] = key
			}
		}
	})
	return nil
}

// knownGroupType is the index of a group type the project already has.
func (x *identity) knownGroupType(team int64, name string) (int, bool) {
	if name == "" { // unused slots hold ""; no type is named so
		return 0, false
	}
	types := x.delta.groupTypes[team]
	if types == nil {
		types = x.groupTypes[team]
	}
	if types != nil {
		for i, t := range types {
			if t == name {
				return i, true
			}
		}
	}
	return 0, false
}

// groupIdentify creates the group of a $groupidentify or merges its $group_set into the
// group's properties, key by key.
func (x *identity) groupIdentify(ctx context.Context, e *Event) error {
	if e.GroupType == "" || e.GroupKey == "" {
		return nil
	}
	index, ok := x.groupTypeIndex(e.TeamID, e.GroupType)
	if !ok {
		return nil // a sixth type: no index, no group
	}
	var set map[string]sonic.NoCopyRawMessage
	if e.GroupSet != "" {
		identityJSON.UnmarshalFromString(e.GroupSet, &set)
	}
	k := groupKey{e.TeamID, index, e.GroupKey}
	g, err := x.group(ctx, k, e.Timestamp)
	if err != nil {
		return err
	}
	changed := !g.stored && x.delta.groups[k] == nil // a new group is written even if empty
	for key, v := range set {
		if old, ok := g.props[key]; !ok || !bytes.Equal(old, v) {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	g = x.mutableGroup(k, g)
	for key, v := range set { // copied: they alias the request, and groups outlive it
		g.props[strings.Clone(key)] = bytes.Clone(v)
	}
	g.version++
	return nil
}

// groupTypeIndex is the index of the project's group type, given one if the type is
// new and the project has fewer than five.
func (x *identity) groupTypeIndex(team int64, name string) (int, bool) {
	if index, ok := x.knownGroupType(team, name); ok || name == "" {
		return index, ok
	}
	changed := new([maxGroupTypes]string)
	if types := x.delta.groupTypes[team]; types != nil {
		*changed = *types
	} else if types := x.groupTypes[team]; types != nil {
		*changed = *types
	}
	free := slices.Index(changed[:], "")
	if free < 0 {
		return 0, false
	}
	changed[free] = strings.Clone(name)
	x.delta.groupTypes[team] = changed
	x.delta.newTypes = append(x.delta.newTypes, groupTypeRow{team: team, name: changed[free], index: free})
	return free, true
}

// group returns the group as it is in this commit so far, or a new, unstored one
// created at at; it must not be changed (see mutableGroup).
func (x *identity) group(ctx context.Context, k groupKey, at time.Time) (*group, error) {
	if g, ok := x.delta.groups[k]; ok {
		return g, nil
	}
	if g, ok := x.groups.Get(k); ok {
		return g, nil
	}
	g := &group{key: k, props: map[string]json.RawMessage{}, createdAt: at}
	var props string
	err := x.db.QueryRowContext(ctx, `SELECT group_properties, created_at, version FROM groups
		WHERE team_id = ? AND group_type_index = ? AND group_key = ?`, k.team, k.index, k.key).Scan(&props, &g.createdAt, &g.version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return g, nil
	case err != nil:
		return nil, fmt.Errorf("cannot read group %s: %w", k.key, err)
	}
	g.stored = true
	if err := json.Unmarshal([]byte(props), &g.props); err != nil {
		return nil, fmt.Errorf("cannot read the properties of group %s: %w", k.key, err)
	}
	g.key.key = strings.Clone(k.key)
	x.groups.Add(g.key, g)
	return g, nil
}

// mutableGroup returns the delta's copy of g, to be changed in this commit.
func (x *identity) mutableGroup(k groupKey, g *group) *group {
	if d, ok := x.delta.groups[k]; ok {
		return d
	}
	c := *g
	c.key.key = strings.Clone(k.key)
	c.props = make(map[string]json.RawMessage, len(g.props))
	for key, v := range g.props {
		c.props[key] = v
	}
	x.delta.groups[k] = &c
	return &c
}

// flushGroups writes the commit's new group types and changed groups into the open
// transaction, by exec on the transaction's connection. Groups are few next to events,
// so plain statements are enough.
func (x *identity) flushGroups(exec func(query string, args ...any) error) error {
	for _, r := range x.delta.newTypes {
		if err := exec(`INSERT INTO group_type_mappings VALUES (?, ?, ?)`, r.team, r.name, int64(r.index)); err != nil {
			return fmt.Errorf("cannot add group type %q: %w", r.name, err)
		}
	}
	for _, g := range x.delta.groups {
		props, err := json.Marshal(g.props)
		if err != nil {
			return fmt.Errorf("cannot encode group %s: %w", g.key.key, err)
		}
		if g.stored {
			err = exec(`UPDATE groups SET group_properties = ?, version = ?
				WHERE team_id = ? AND group_type_index = ? AND group_key = ?`, string(props), g.version, g.key.team, int64(g.key.index), g.key.key)
		} else {
			err = exec(`INSERT INTO groups VALUES (?, ?, ?, ?, ?, ?)`,
				g.key.team, int64(g.key.index), g.key.key, string(props), g.createdAt, g.version)
		}
		if err != nil {
			return fmt.Errorf("cannot write group %s: %w", g.key.key, err)
		}
	}
	return nil
}
