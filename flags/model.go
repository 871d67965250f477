package flags

import (
	"bytes"
	"encoding/json"
	"time"
)

// Flag is a feature flag's definition, as stored and as evaluation reads it.
type Flag struct {
	ID      int64
	TeamID  int64
	Key     string
	Name    string // PostHog's description of the flag; may be blank
	Filters Filters
	Active  bool
	Deleted bool
	// Version is 1 on create and grows by one with every update.
	Version int
	// EnsureExperienceContinuity keeps the flag's value of an anonymous user after they
	// identify: the anonymous id stays the identifier that is hashed.
	EnsureExperienceContinuity bool
	// EvaluationRuntime is RuntimeServer, RuntimeClient or RuntimeAll.
	EvaluationRuntime string
	// BucketingIdentifier is BucketByDistinctID or BucketByDeviceID.
	BucketingIdentifier   string
	EvaluationTags        []string
	IsRemoteConfiguration bool
	HasEncryptedPayloads  bool
	Tags                  []string
	CreatedAt             time.Time
	CreatedBy             int64 // the user's id, 0 when unknown
	UpdatedAt             time.Time
	LastModifiedBy        int64
}

// Evaluation runtimes and bucketing identifiers of a flag.
const (
	RuntimeServer = "server"
	RuntimeClient = "client"
	RuntimeAll    = "all"

	BucketByDistinctID = "distinct_id"
	BucketByDeviceID   = "device_id"
)

// Filters is a flag's targeting, in PostHog's JSON shape.
type Filters struct {
	// Groups are the condition sets, evaluated in order.
	Groups       []Condition   `json:"groups"`
	Multivariate *Multivariate `json:"multivariate"`
	// Payloads are the stored payloads by variant key ("true" for a boolean flag), each
	// a JSON text kept as a string.
	Payloads map[string]string `json:"payloads"`
	// AggregationGroupTypeIndex makes the flag a group flag: it targets groups of that
	// type, and their key is hashed. nil: persons.
	AggregationGroupTypeIndex *int `json:"aggregation_group_type_index"`
	// SuperGroups is the legacy early-access form: its first condition decides when a
	// person has any of its property keys.
	SuperGroups []Condition `json:"super_groups,omitempty"`
	// FeatureEnrollment makes $feature_enrollment/<key> of the person decide.
	FeatureEnrollment *bool    `json:"feature_enrollment,omitempty"`
	Holdout           *Holdout `json:"holdout,omitempty"`
}

// Condition is one condition set: all its properties must match, then the rollout
// percentage of identifiers passes.
type Condition struct {
	Properties []PropertyFilter `json:"properties"`
	// RolloutPercentage is 0 to 100; nil means 100.
	RolloutPercentage *float64 `json:"rollout_percentage"`
	// Variant, when it names one of the flag's variants, is the variant of a match.
	Variant *string `json:"variant"`
	// AggregationGroupTypeIndex of the condition (mixed targeting); absent: the flag's.
	AggregationGroupTypeIndex Aggregation `json:"aggregation_group_type_index,omitzero"`
	Description               *string     `json:"description,omitempty"`
	SortKey                   *string     `json:"sort_key,omitempty"`
}

// Aggregation is a condition's aggregation_group_type_index, which has three states:
// absent (the flag's own aggregation), null (persons), or a group type index.
type Aggregation struct {
	Set   bool
	Index *int
}

// IsZero reports an absent aggregation, which is omitted from JSON.
func (a Aggregation) IsZero() bool { return !a.Set }

func (a Aggregation) MarshalJSON() ([]byte, error) { return json.Marshal(a.Index) }

func (a *Aggregation) UnmarshalJSON(b []byte) error {
	a.Set, a.Index = true, nil
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	return json.Unmarshal(b, &a.Index)
}

// PropertyFilter is one filter of a condition or a cohort.
type PropertyFilter struct {
	Key string `json:"key"`
	// Type is FilterPerson, FilterGroup, FilterCohort or FilterFlag.
	Type string `json:"type"`
	// Operator is one of PostHog's operators; empty means exact.
	Operator string          `json:"operator,omitempty"`
	Value    json.RawMessage `json:"value"`
	Negation bool            `json:"negation,omitempty"`
	// GroupTypeIndex is the group type a group filter reads.
	GroupTypeIndex *int `json:"group_type_index,omitempty"`
	// DependencyChain is set only in definitions served for local evaluation: the keys
	// of the flags a flag filter depends on, in evaluation order, ending with its own;
	// empty (and still sent) when they cannot be resolved. nil is omitted.
	DependencyChain []string `json:"dependency_chain,omitzero"`
}

// Property filter types.
const (
	FilterPerson = "person"
	FilterGroup  = "group"
	FilterCohort = "cohort"
	FilterFlag   = "flag"
)

// Multivariate is a flag's variants, whose rollout percentages sum to 100.
type Multivariate struct {
	Variants []Variant `json:"variants"`
}

// Variant is one value of a multivariate flag.
type Variant struct {
	Key               string  `json:"key"`
	Name              *string `json:"name,omitempty"`
	RolloutPercentage float64 `json:"rollout_percentage"`
}

// Holdout excludes a share of identifiers from the flag: they get the variant
// "holdout-<id>".
type Holdout struct {
	ID                  int64   `json:"id"`
	ExclusionPercentage float64 `json:"exclusion_percentage"`
}

// Cohort is a set of persons a flag can target: static (a list, which hedge does not
// keep; a static cohort never matches) or defined by person properties.
type Cohort struct {
	ID          int64
	TeamID      int64
	Name        string
	Description string
	Filters     CohortFilters
	IsStatic    bool
	Deleted     bool
	CreatedAt   time.Time
	CreatedBy   int64
	UpdatedAt   time.Time
	// Version is 1 on create and grows by one with every update.
	Version int
}

// CohortFilters is a cohort's definition in PostHog's JSON shape.
type CohortFilters struct {
	Properties PropertyGroup `json:"properties"`
}

// PropertyGroup is an AND or OR over its values, each a group or a filter.
type PropertyGroup struct {
	Type   string         `json:"type"` // "AND" or "OR"
	Values []PropertyNode `json:"values"`
}

// PropertyNode is a property group or a property filter: JSON with "values" is a
// group, anything else a filter.
type PropertyNode struct {
	Group  *PropertyGroup
	Filter *PropertyFilter
}

func (n PropertyNode) MarshalJSON() ([]byte, error) {
	if n.Group != nil {
		return json.Marshal(n.Group)
	}
	return json.Marshal(n.Filter)
}

func (n *PropertyNode) UnmarshalJSON(b []byte) error {
	var probe struct {
		Values json.RawMessage `json:"values"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe.Values != nil {
		n.Group, n.Filter = new(PropertyGroup), nil
		return json.Unmarshal(b, n.Group)
	}
	n.Group, n.Filter = nil, new(PropertyFilter)
	return json.Unmarshal(b, n.Filter)
}

// Definitions is what evaluation reads of one project: its flags that are not
// deleted (active or not), sorted by key, and the cohorts they use. It is built
// once per change and then only read, by any number of requests at once.
type Definitions struct {
	Team    int64
	Flags   []*Flag
	Cohorts map[int64]*Cohort
	// Built is when these definitions were read from the database.
	Built time.Time
}

// StaticCohorts are the ids of the static cohorts the flags use, directly or through
// other cohorts, whose members a Request's StaticCohorts tells; nil when none.
func (d *Definitions) StaticCohorts() []int64 {
	var ids []int64
	for id, c := range d.Cohorts {
		if c.IsStatic && !c.Deleted {
			ids = append(ids, id)
		}
	}
	return ids
}
