package flags

import "time"

// Request is what one evaluation knows of its caller. Nothing in it is kept.
type Request struct {
	DistinctID     string
	AnonDistinctID string
	DeviceID       string
	// Groups maps a group type to the caller's key of it (numbers as decimal text).
	Groups map[string]string
	// PersonProperties is the JSON object of the person's stored properties ("" for
	// none); PersonPropertyOverrides, from the request, win over it.
	PersonProperties        string
	PersonPropertyOverrides map[string]any
	// GroupProperties holds, by group type, the JSON object of the stored properties
	// of the caller's group; GroupPropertyOverrides, from the request, win over them.
	GroupProperties        map[string]string
	GroupPropertyOverrides map[string]map[string]any
	// GroupTypes are the project's group types by index ("" where unused).
	GroupTypes [5]string
	// FlagKeys, when not nil, limits the evaluation to these flags and what they
	// depend on.
	FlagKeys []string
	// Runtime is RuntimeClient, RuntimeServer or "" (not known).
	Runtime            string
	EvaluationContexts []string
	OnlySurveyFlags    bool
	// HashKeyOverrides are the identifiers that experience continuity keeps, by flag key.
	HashKeyOverrides map[string]string
	Now              time.Time
	// Location is the project's time zone for dates without one; nil: UTC.
	Location *time.Location
}

// Result is one flag's answer.
type Result struct {
	Key     string
	Enabled bool
	// Variant is the variant's key, or "" for none.
	Variant string
	Reason  Reason
	ID      int64
	Version int
	// Payload is the stored payload of the answer (a JSON text), or nil for none.
	Payload       *string
	HasExperiment bool
	Failed        bool
}

// Reason says why a flag answered what it did, as PostHog says it.
type Reason struct {
	Code string
	// ConditionIndex is the index of the deciding condition, or nil.
	ConditionIndex *int
	Description    string
}

// Evaluate answers every flag of d that r asks for (not inactive, and kept by the
// runtime, context and survey filters), in d's order, and whether any of them failed.
func Evaluate(d *Definitions, r *Request) (results []Result, errorsWhileComputing bool) {
	panic("unimplemented") // replaced by the evaluator
}
