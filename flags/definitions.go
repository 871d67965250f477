package flags

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hedge-analytics/hedge/internal/records"
	"github.com/hedge-analytics/hedge/warehouse"
)

// A project's Definitions as evaluation reads them, and the definitions the server
// SDKs download for local evaluation, built from them.

// loadDefinitions reads the project's flags that are not deleted, sorted by key, and
// the cohorts they use (directly, or through other cohorts) that are not deleted.
func (s *Store) loadDefinitions(ctx context.Context, team int64) (*Definitions, error) {
	built := now()
	flags, err := records.All(ctx, s.db, fmt.Sprintf("feature flags of project %d", team), scanFlag,
		flagColumns+` WHERE team_id = ? AND NOT deleted`, team)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(flags, byKey)
	cohorts, err := s.liveCohorts(ctx, team)
	if err != nil {
		return nil, err
	}
	return &Definitions{Team: team, Flags: flags, Cohorts: usedCohorts(flags, cohorts, false), Built: built}, nil
}

// usedCohorts are the cohorts (of cohorts) that flags' conditions use, directly or
// through other cohorts; static ones too unless dynamicOnly.
func usedCohorts(flags []*Flag, cohorts map[int64]*Cohort, dynamicOnly bool) map[int64]*Cohort {
	used := map[int64]*Cohort{}
	add := func(c *Cohort) {
		if !dynamicOnly || !c.IsStatic {
			used[c.ID] = c
		}
	}
	for _, f := range flags {
		for _, c := range f.Filters.Groups {
			for _, prop := range c.Properties {
				if prop.Type != FilterCohort {
					continue
				}
				id, ok := cohortID(prop.Value)
				cohort := cohorts[id]
				if !ok || cohort == nil {
					continue
				}
				add(cohort)
				for _, dep := range cohortDependencies(cohort, cohorts) {
					add(dep)
				}
			}
		}
	}
	return used
}

// localEvaluation is the body of the local evaluation definitions of a project, for
// the group types it was built with.
type localEvaluation struct {
	groupTypes string // the group type mapping's JSON
	body       []byte
	etag       string
}

// LocalEvaluation is the body that /flags/definitions answers for the project, and
// its ETag, which changes whenever the body does: when a flag or a cohort changes, or
// the project gets a new group type. Built once per change, then served from memory.
func (s *Store) LocalEvaluation(ctx context.Context, team int64) (body []byte, etag string, err error) {
	e, err := s.cache.get(ctx, team, s.loadDefinitions)
	if err != nil {
		return nil, "", err
	}
	types, err := s.groupTypes(ctx, team)
	if err != nil {
		return nil, "", fmt.Errorf("cannot read the group types of project %d: %w", team, err)
	}
	mapping := groupTypeMapping(types)
	key := mustJSON(mapping)
	if l := e.local.Load(); l != nil && l.groupTypes == key {
		return l.body, l.etag, nil
	}
	body = localEvaluationBody(e.defs, mapping)
	sum := sha256.Sum256(body)
	l := &localEvaluation{groupTypes: key, body: body, etag: hex.EncodeToString(sum[:16])}
	e.local.Store(l)
	return l.body, l.etag, nil
}

// groupTypeMapping is the group types by index, as text.
func groupTypeMapping(types []warehouse.GroupType) map[string]string {
	mapping := make(map[string]string, len(types))
	for _, t := range types {
		mapping[strconv.Itoa(t.Index)] = t.Name
	}
	return mapping
}

// localFlag is a flag as the local evaluation definitions show it.
type localFlag struct {
	ID                         int64    `json:"id"`
	TeamID                     int64    `json:"team_id"`
	Name                       string   `json:"name"`
	Key                        string   `json:"key"`
	Active                     bool     `json:"active"`
	Deleted                    bool     `json:"deleted"`
	EnsureExperienceContinuity bool     `json:"ensure_experience_continuity"`
	HasEncryptedPayloads       bool     `json:"has_encrypted_payloads"`
	Version                    int      `json:"version"`
	EvaluationRuntime          string   `json:"evaluation_runtime"`
	BucketingIdentifier        string   `json:"bucketing_identifier"`
	EvaluationContexts         []string `json:"evaluation_contexts"`
	HasExperiment              bool     `json:"has_experiment"`
	Filters                    Filters  `json:"filters"`
}

// surveyTargetingPrefix starts the keys of the flags that target surveys, which local
// evaluation leaves out.
const surveyTargetingPrefix = "survey-targeting-"

// localEvaluationBody is PostHog's local evaluation definitions of d: every flag that
// is not deleted, active or not, sorted by key, but those with encrypted payloads or
// that target surveys (and the flags that depend on one of those); each flag filter
// names its flag by key rather than id, with the dependency_chain to evaluate it
// (empty when it cannot be: a flag that depends on itself, on a cycle, or on a flag
// that is not there); the dynamic cohorts the flags use, by id; the group types.
func localEvaluationBody(d *Definitions, groupTypes map[string]string) []byte {
	excluded := map[string]bool{} // flag ids, as flag filters name them
	for _, f := range d.Flags {
		if f.HasEncryptedPayloads || strings.HasPrefix(f.Key, surveyTargetingPrefix) {
			excluded[strconv.FormatInt(f.ID, 10)] = true
		}
	}
	// A flag that depends on a flag left out is left out too, and so on.
	for grown := true; grown; {
		grown = false
		for _, f := range d.Flags {
			id := strconv.FormatInt(f.ID, 10)
			if excluded[id] {
				continue
			}
			for _, dep := range dependencyIDs(&f.Filters) {
				if excluded[strconv.FormatInt(dep, 10)] {
					excluded[id], grown = true, true
					break
				}
			}
		}
	}
	keyOf := map[string]string{}
	var kept []*Flag
	for _, f := range d.Flags {
		if id := strconv.FormatInt(f.ID, 10); !excluded[id] {
			keyOf[id] = f.Key
			kept = append(kept, f)
		}
	}

	flags := make([]localFlag, 0, len(kept))
	byKey := map[string]*localFlag{}
	for _, f := range kept {
		flags = append(flags, localFlag{ID: f.ID, TeamID: f.TeamID, Name: f.Name, Key: f.Key, Active: f.Active,
			EnsureExperienceContinuity: f.EnsureExperienceContinuity, HasEncryptedPayloads: f.HasEncryptedPayloads,
			Version: f.Version, EvaluationRuntime: f.EvaluationRuntime, BucketingIdentifier: f.BucketingIdentifier,
			EvaluationContexts: nonNil(f.EvaluationTags), Filters: copyFilters(&f.Filters)})
	}
	for i := range flags {
		byKey[flags[i].Key] = &flags[i]
		forEachFlagFilter(&flags[i].Filters, func(prop *PropertyFilter) {
			if key, ok := keyOf[strings.TrimSpace(prop.Key)]; ok {
				prop.Key = key
			}
		})
	}
	chains := dependencyChains{flags: byKey, memo: map[string][]string{}}
	for i := range flags {
		forEachFlagFilter(&flags[i].Filters, func(prop *PropertyFilter) { prop.DependencyChain = chains.of(prop.Key) })
	}

	cohorts := map[string]PropertyGroup{}
	for id, c := range usedCohorts(kept, d.Cohorts, true) {
		cohorts[strconv.FormatInt(id, 10)] = c.Filters.Properties
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Flags                   []localFlag              `json:"flags"`
		GroupTypeMapping        map[string]string        `json:"group_type_mapping"`
		Cohorts                 map[string]PropertyGroup `json:"cohorts"`
		MinimalFlagCalledEvents bool                     `json:"minimal_flag_called_events"`
		PropertyMatchingVersion int                      `json:"property_matching_version"`
	}{flags, groupTypes, cohorts, false, 1}); err != nil {
		panic(fmt.Sprintf("BUG: cannot encode the local evaluation definitions of project %d: %v", d.Team, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// copyFilters is a copy of f whose conditions and their filters may be changed
// without changing f.
func copyFilters(f *Filters) Filters {
	c := *f
	c.Groups = slices.Clone(f.Groups)
	for i := range c.Groups {
		c.Groups[i].Properties = slices.Clone(c.Groups[i].Properties)
	}
	return c
}

// forEachFlagFilter calls fn with each flag filter of f's conditions, in order.
func forEachFlagFilter(f *Filters, fn func(*PropertyFilter)) {
	for i := range f.Groups {
		for j := range f.Groups[i].Properties {
			if prop := &f.Groups[i].Properties[j]; prop.Type == FilterFlag {
				fn(prop)
			}
		}
	}
}

// dependencyChains computes, for a flag's key, the keys of the flags to evaluate
// before it and its own last: a depth-first walk of the flags it depends on (in the
// order its filters name them), empty when the flag depends on itself or on a cycle,
// or any flag on the way is not in flags.
type dependencyChains struct {
	flags map[string]*localFlag
	memo  map[string][]string
}

func (d *dependencyChains) of(key string) []string {
	if chain, ok := d.memo[key]; ok {
		return chain
	}
	chain := []string{}
	if f := d.flags[key]; f == nil || !dependsOn(f, key) {
		visited, walking := map[string]bool{}, map[string]bool{}
		var walk func(key string) bool
		walk = func(key string) bool {
			switch {
			case walking[key]:
				return false
			case visited[key]:
				return true
			}
			f := d.flags[key]
			if f == nil {
				return false
			}
			walking[key] = true
			ok := true
			forEachFlagFilter(&f.Filters, func(prop *PropertyFilter) {
				if ok && prop.Key != key {
					ok = walk(prop.Key)
				}
			})
			if !ok {
				return false
			}
			delete(walking, key)
			visited[key] = true
			chain = append(chain, key)
			return true
		}
		if !walk(key) {
			chain = []string{}
		}
	}
	d.memo[key] = chain
	return chain
}

// dependsOn reports a flag filter of f on the flag with the given key.
func dependsOn(f *localFlag, key string) bool {
	found := false
	forEachFlagFilter(&f.Filters, func(prop *PropertyFilter) { found = found || prop.Key == key })
	return found
}
