package warehouse

// The person row as the writer holds it, and what $set, $set_once and $unset do to it.

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bytedance/sonic"
	"github.com/google/uuid"
)

// person is one row of the persons table as the writer holds it.
type person struct {
	id         uuid.UUID
	team       int64
	props      map[string]json.RawMessage // values own their bytes
	createdAt  time.Time
	identified bool
	version    int64
	// stored: the row exists in the database (as of the last commit); otherwise it is
	// new in this commit and is appended, not updated.
	stored bool
}

func (p *person) clone() *person {
	c := *p
	c.props = make(map[string]json.RawMessage, len(p.props))
	for k, v := range p.props {
		c.props[k] = v
	}
	return &c
}

// propertiesJSON is the person's properties as JSON text, keys sorted so that equal
// persons are equal text.
func (p *person) propertiesJSON() string {
	keys := make([]string, 0, len(p.props))
	for k := range p.props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(k))
		b.WriteByte(':')
		b.Write(p.props[k])
	}
	b.WriteByte('}')
	return b.String()
}

// personUpdate is an event's $set_once, $set and $unset, parsed.
type personUpdate struct {
	set, setOnce map[string]sonic.NoCopyRawMessage
	unset        []string
}

func (u *personUpdate) empty() bool {
	return len(u.set) == 0 && len(u.setOnce) == 0 && len(u.unset) == 0
}

// parsePersonUpdate reads an event's raw $set, $set_once and $unset. A value of the
// wrong kind is ignored, as PostHog ignores it.
func parsePersonUpdate(e *Event) personUpdate {
	var u personUpdate
	if e.Set != "" {
		identityJSON.UnmarshalFromString(e.Set, &u.set)
	}
	if e.SetOnce != "" {
		identityJSON.UnmarshalFromString(e.SetOnce, &u.setOnce)
	}
	switch {
	case strings.HasPrefix(e.Unset, "["):
		var keys []any
		if identityJSON.UnmarshalFromString(e.Unset, &keys) == nil {
			for _, k := range keys {
				if s, ok := k.(string); ok {
					u.unset = append(u.unset, s)
				}
			}
		}
	case strings.HasPrefix(e.Unset, "{"):
		var keys map[string]sonic.NoCopyRawMessage
		if identityJSON.UnmarshalFromString(e.Unset, &keys) == nil {
			for k := range keys {
				u.unset = append(u.unset, k)
			}
		}
	}
	return u
}

// changes reports whether apply would change p.
func (u *personUpdate) changes(p *person) bool {
	for k := range u.setOnce {
		if _, ok := p.props[k]; !ok {
			return true
		}
	}
	for k, v := range u.set {
		if old, ok := p.props[k]; !ok || !bytes.Equal(old, v) {
			return true
		}
	}
	for _, k := range u.unset {
		if _, ok := p.props[k]; ok {
			return true
		}
	}
	return false
}

// apply changes p as the event asks, by PostHog's rules, and reports whether anything
// changed: $set_once fills keys the person does not have, $set overwrites (winning
// over $set_once within the event), and $unset removes keys that existed before the
// event, after the sets, so for such a key in both $set and $unset the unset wins.
func (u *personUpdate) apply(p *person) bool {
	var existedBefore []bool
	for _, k := range u.unset {
		_, ok := p.props[k]
		existedBefore = append(existedBefore, ok)
	}
	changed := false
	// Keys and values are copied: they alias the request, and persons outlive it.
	for k, v := range u.setOnce {
		if _, ok := p.props[k]; !ok {
			p.props[strings.Clone(k)] = bytes.Clone(v)
			changed = true
		}
	}
	for k, v := range u.set {
		if old, ok := p.props[k]; !ok || !bytes.Equal(old, v) {
			p.props[strings.Clone(k)] = bytes.Clone(v)
			changed = true
		}
	}
	for i, k := range u.unset {
		if existedBefore[i] {
			delete(p.props, k)
			changed = true
		}
	}
	return changed
}

// personNamespace makes the deterministic person ids of hedge: a person created for a
// distinct id, and the events of that distinct id sent without a person
// ($process_person_profile: false), get UUIDv5(namespace, "<team>:<distinct_id>"). So
// personless events of an anonymous id belong to the person that a later identify
// creates for it.
var personNamespace = uuid.MustParse("6b7e3f0a-1c2d-5e4f-8a9b-0c1d2e3f4a5b")

func personIDFor(team int64, distinctID string) uuid.UUID {
	name := make([]byte, 0, 24+len(distinctID))
	name = strconv.AppendInt(name, team, 10)
	name = append(name, ':')
	name = append(name, distinctID...)
	return uuid.NewSHA1(personNamespace, name)
}

// illegalDistinctID reports the ids that PostHog never merges: blank
// ones, and the placeholders broken clients send instead of a real id, also when
// wrapped in single or double quotes. The list is matched against the id as sent.
func illegalDistinctID(id string) bool {
	if strings.TrimSpace(id) == "" {
		return true
	}
	bare := id
	if n := len(id); n >= 2 && (id[0] == '\'' && id[n-1] == '\'' || id[0] == '"' && id[n-1] == '"') {
		bare = id[1 : n-1]
	}
	switch strings.ToLower(bare) {
	case "anonymous", "guest", "distinctid", "distinct_id", "id", "not_authenticated", "email", "undefined", "true", "false":
		return true
	}
	switch bare {
	case "[object Object]", "NaN", "None", "none", "null", "0":
		return true
	}
	return false
}
