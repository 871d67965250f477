package flags

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The rules a flag or a cohort follows to be stored, refused in PostHog's words: pure
// functions of the change and of what the rest of the project holds (projectView),
// which the Store reads under its write lock. The checks run in the order of PostHog's
// serializer, so that a change with several faults is refused for the same one.

// ValidationError is a change that is refused: the management API answers it as a
// 400 validation_error.
type ValidationError struct {
	// Attr is the field the error is about, or "" for the change as a whole.
	Attr string
	// Code is DRF's code of the error: required, unique, invalid_key, invalid_input...
	Code   string
	Detail string
}

func (e *ValidationError) Error() string { return e.Detail }

func invalid(attr, code, detail string) *ValidationError {
	return &ValidationError{Attr: attr, Code: code, Detail: detail}
}

// invalidFilters is a refusal of a flag's filters (code invalid_input unless given).
func invalidFilters(format string, args ...any) *ValidationError {
	return invalid("filters", "invalid_input", fmt.Sprintf(format, args...))
}

// ConflictError is an update made from an older version of a flag that changes a
// field another update changed since that version: the management API answers 409.
type ConflictError struct {
	// LastModifiedBy is the user of the flag's latest update, 0 when unknown.
	LastModifiedBy int64
}

func (e *ConflictError) Error() string {
	return "the feature flag was updated since the version the change was made from"
}

// Limits of a flag's definition.
const (
	maxKeyLength      = 400
	maxNameLength     = 400  // a cohort's name
	maxDescription    = 1000 // a cohort's description
	maxPropertyValues = 1000 // values of one property filter
	maxDependentsSaid = 5    // flags a refusal names before "and N more"
	// maxConditions and maxConditionFilters bound the work of one flag's evaluation:
	// the condition sets of a flag and the property filters of one condition set, the
	// limits of PostHog's flags service for the rules of a flag and the predicates of
	// one rule.
	maxConditions       = 100
	maxConditionFilters = 100
	// maxFilterBytes bounds a flag's filters, payloads included, as stored (compact
	// JSON): PostHog's default (MAX_FEATURE_FLAG_FILTER_SIZE_BYTES).
	maxFilterBytes = 512 << 10
)

// Limits of a project's flags that are not deleted: what every /flags/ answer and the
// local evaluation definitions are made of, and what evaluation holds in memory. The
// count is PostHog's; the totals are hedge's, as 2,000 flags of 512 KB would be a
// gigabyte: the payloads (an answer carries one per flag at most) bound what an
// anonymous /flags/ request is answered, the filters what the project holds in memory
// and what its definitions weigh. A change that grows a project past them is refused;
// one that does not (a flag disabled or deleted, smaller filters) goes through, so that
// a project stored past them before they existed can shrink.
const (
	maxProjectFlags       = 2000
	maxProjectFilterBytes = 8 << 20
	// MaxProjectPayloadBytes bounds the payloads of a project's flags: the sum of
	// their stored JSON texts.
	MaxProjectPayloadBytes = 2 << 20
)

var keyPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// FlagChange is what a create or an update of a flag sends; nil fields are not sent:
// an update leaves them as they are, a create takes PostHog's defaults. Strings are
// taken as sent (surrounding white space is trimmed, as DRF does).
type FlagChange struct {
	Key  *string
	Name *string
	// Filters is the JSON the request sent, nil when it sent none. An update whose
	// filters have no "groups" leaves the filters as they are, as PostHog does.
	Filters                    json.RawMessage
	Active                     *bool
	Deleted                    *bool
	EnsureExperienceContinuity *bool
	EvaluationRuntime          *string
	BucketingIdentifier        *string
	// Tags and EvaluationTags replace the flag's when not nil.
	Tags                  []string
	EvaluationTags        []string
	IsRemoteConfiguration *bool
	// HasEncryptedPayloads is kept and answered, but hedge stores payloads as they
	// are: a personal API key reads them decrypted in PostHog too.
	HasEncryptedPayloads *bool
	// Version is the version of the flag the update was made from, nil when not
	// sent: an update from an older version that changes a field changed since then
	// is a ConflictError.
	Version *int
}

// projectView is what validation knows of the rest of a project.
type projectView struct {
	flags   []*Flag           // the flags that are not deleted
	cohorts map[int64]*Cohort // the cohorts that are not deleted
}

func (p *projectView) flag(id int64) *Flag {
	for _, f := range p.flags {
		if f.ID == id {
			return f
		}
	}
	return nil
}

func (p *projectView) flagWithKey(key string) *Flag {
	for _, f := range p.flags {
		if f.Key == key {
			return f
		}
	}
	return nil
}

// defaultFilters are the filters of a flag created without any: one condition set
// with no properties and no rollout percentage, which matches everyone (PostHog reads
// a flag stored without groups so).
func defaultFilters() Filters {
	return Filters{Groups: []Condition{{Properties: []PropertyFilter{}}}, Payloads: map[string]string{}}
}

// apply checks ch against current (nil when creating) and the rest of the project,
// and returns the flag it makes: its version, times and users are the Store's.
func (ch *FlagChange) apply(current *Flag, p *projectView) (*Flag, error) {
	creating := current == nil
	var next Flag
	if creating {
		next = Flag{Active: true, EvaluationRuntime: RuntimeAll, BucketingIdentifier: BucketByDistinctID,
			Tags: []string{}, EvaluationTags: []string{}}
	} else {
		next = *current
	}
	if ch.Name != nil {
		name := strings.TrimSpace(*ch.Name)
		if strings.ContainsRune(name, 0) {
			return nil, errNullCharacters("name")
		}
		next.Name = name
	}
	switch {
	case ch.Key != nil:
		key := strings.TrimSpace(*ch.Key)
		if err := checkKey(key, current, p); err != nil {
			return nil, err
		}
		next.Key = key
	case creating:
		return nil, invalid("key", "required", "This field is required.")
	}
	switch {
	case ch.Filters != nil:
		// The flag's own key is the stored one on an update, as in PostHog.
		self := next.Key
		if !creating {
			self = current.Key
		}
		filters, sent, err := checkFilters(ch.Filters, creating, self, p)
		if err != nil {
			return nil, err
		}
		if sent {
			next.Filters = filters
		}
	case creating:
		next.Filters = defaultFilters()
	}
	setBool(&next.Deleted, ch.Deleted)
	setBool(&next.Active, ch.Active)
	setBool(&next.EnsureExperienceContinuity, ch.EnsureExperienceContinuity)
	if ch.Tags != nil {
		next.Tags = ch.Tags
	}
	if ch.EvaluationTags != nil {
		next.EvaluationTags = ch.EvaluationTags
	}
	setBool(&next.IsRemoteConfiguration, ch.IsRemoteConfiguration)
	setBool(&next.HasEncryptedPayloads, ch.HasEncryptedPayloads)
	if ch.EvaluationRuntime != nil {
		if err := choice("evaluation_runtime", *ch.EvaluationRuntime, RuntimeServer, RuntimeClient, RuntimeAll); err != nil {
			return nil, err
		}
		next.EvaluationRuntime = *ch.EvaluationRuntime
	}
	if ch.BucketingIdentifier != nil {
		if err := choice("bucketing_identifier", *ch.BucketingIdentifier, BucketByDistinctID, BucketByDeviceID); err != nil {
			return nil, err
		}
		next.BucketingIdentifier = *ch.BucketingIdentifier
	}
	if !creating {
		if err := ch.checkUpdate(current, &next, p); err != nil {
			return nil, err
		}
	}
	if !next.Deleted {
		if err := checkProjectLimits(current, &next, p); err != nil {
			return nil, err
		}
	}
	return &next, nil
}

// flagBytes are the bytes of f's filters as stored and of its payloads (their JSON
// texts).
func flagBytes(f *Flag) (filters, payloads int) {
	for _, text := range f.Filters.Payloads {
		payloads += len(text)
	}
	return len(mustJSON(f.Filters)), payloads
}

// checkProjectLimits checks a change that leaves next not deleted against the limits
// of the project's flags: a new flag (or a deleted one restored) may not make more than
// maxProjectFlags, and a change may not take the project's filters or payloads past
// their totals when it grows them.
func checkProjectLimits(current, next *Flag, p *projectView) error {
	live := current != nil && !current.Deleted // and so among p.flags
	if !live && len(p.flags) >= maxProjectFlags {
		return invalid("", "invalid_input", fmt.Sprintf("Maximum of %s feature flags allowed per team. Please delete unused flags.",
			thousands(maxProjectFlags)))
	}
	filters, payloads := flagBytes(next)
	var wereFilters, werePayloads int
	if live {
		wereFilters, werePayloads = flagBytes(current)
	}
	if filters <= wereFilters && payloads <= werePayloads {
		return nil
	}
	totalFilters, totalPayloads := filters, payloads
	for _, f := range p.flags {
		if !live || f.ID != current.ID {
			fb, pb := flagBytes(f)
			totalFilters, totalPayloads = totalFilters+fb, totalPayloads+pb
		}
	}
	switch {
	case filters > wereFilters && totalFilters > maxProjectFilterBytes:
		return invalidFilters("The feature flags of this project would exceed the maximum total size of %s. Total size: %s. "+
			"Please simplify conditions, reduce payload sizes or delete unused flags.", formatBytes(maxProjectFilterBytes), formatBytes(totalFilters))
	case payloads > werePayloads && totalPayloads > MaxProjectPayloadBytes:
		return invalidFilters("The payloads of this project's feature flags would exceed the maximum total size of %s. Total size: %s. "+
			"Please reduce payload sizes or delete unused flags.", formatBytes(MaxProjectPayloadBytes), formatBytes(totalPayloads))
	}
	return nil
}

// formatBytes writes a size in B, KB or MB (of 1024), with one decimal past bytes.
func formatBytes(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

// thousands writes n with commas between groups of three digits, as Python's "{:,}".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

// errNullCharacters is DRF's refusal of a string with a NUL character.
func errNullCharacters(attr string) *ValidationError {
	return invalid(attr, "null_characters_not_allowed", "Null characters are not allowed.")
}

// choice is DRF's refusal of a value that is not one of a field's choices.
func choice(attr, value string, choices ...string) error {
	if slices.Contains(choices, value) {
		return nil
	}
	return invalid(attr, "invalid_choice", fmt.Sprintf("%q is not a valid choice.", value))
}

// checkKey checks a flag's key: unique among the project's flags that are not
// deleted (current excepted), of letters, digits, - and _, at most 400 characters.
func checkKey(key string, current *Flag, p *projectView) error {
	switch {
	case key == "":
		return invalid("key", "blank", "This field may not be blank.")
	case utf8.RuneCountInString(key) > maxKeyLength:
		return invalid("key", "max_length", fmt.Sprintf("Ensure this field has no more than %d characters.", maxKeyLength))
	case strings.ContainsRune(key, 0):
		return errNullCharacters("key")
	}
	if f := p.flagWithKey(key); f != nil && (current == nil || f.ID != current.ID) {
		return invalid("key", "unique", "There is already a feature flag with this key.")
	}
	if !keyPattern.MatchString(key) {
		return invalid("key", "invalid_key", "Only letters, numbers, hyphens (-) & underscores (_) are allowed.")
	}
	return nil
}

// checkUpdate is what an update may not do to current, whatever its fields: delete or
// disable a flag that active flags depend on, enable a flag that depends on disabled
// ones, or restore a flag whose key another flag has taken since.
func (ch *FlagChange) checkUpdate(current, next *Flag, p *projectView) error {
	if ch.Deleted != nil && *ch.Deleted {
		if deps := dependents(current.ID, p); len(deps) > 0 {
			return invalid("", "invalid_input", fmt.Sprintf("Cannot delete this feature flag because other flags depend on it: %s. "+
				"Please update or delete the dependent flags first.", flagList(deps)))
		}
	}
	if ch.Active != nil && !*ch.Active && current.Active {
		if deps := dependents(current.ID, p); len(deps) > 0 {
			return invalid("", "invalid_input", fmt.Sprintf("Cannot disable this feature flag because other flags depend on it: %s. "+
				"Please update or disable the dependent flags first.", flagList(deps)))
		}
	}
	if ch.Active != nil && *ch.Active && !current.Active {
		var disabled []*Flag
		for _, id := range dependencyIDs(&current.Filters) {
			if f := p.flag(id); f != nil && !f.Active && !slices.Contains(disabled, f) {
				disabled = append(disabled, f)
			}
		}
		if len(disabled) > 0 {
			slices.SortFunc(disabled, byKey)
			return invalid("", "invalid_input", fmt.Sprintf("Cannot enable this feature flag because it depends on disabled flags: %s. "+
				"Please enable the dependency flags first.", flagList(disabled)))
		}
	}
	if current.Deleted && !next.Deleted {
		if f := p.flagWithKey(next.Key); f != nil && f.ID != current.ID {
			return invalid("key", "unique", "There is already a feature flag with this key.")
		}
	}
	return nil
}

func byKey(a, b *Flag) int { return strings.Compare(a.Key, b.Key) }

// dependents are the active flags of the project, other than the flag with id, whose
// conditions depend on it, by key.
func dependents(id int64, p *projectView) []*Flag {
	var deps []*Flag
	for _, f := range p.flags {
		if f.ID != id && f.Active && slices.Contains(dependencyIDs(&f.Filters), id) {
			deps = append(deps, f)
		}
	}
	slices.SortFunc(deps, byKey)
	return deps
}

// flagList names flags as PostHog's refusals do: "key (ID: n)", at most five, then
// "and N more".
func flagList(flags []*Flag) string {
	names := make([]string, 0, maxDependentsSaid+1)
	for _, f := range flags[:min(len(flags), maxDependentsSaid)] {
		names = append(names, fmt.Sprintf("%s (ID: %d)", f.Key, f.ID))
	}
	if len(flags) > maxDependentsSaid {
		names = append(names, fmt.Sprintf("and %d more", len(flags)-maxDependentsSaid))
	}
	return strings.Join(names, ", ")
}

// dependencyIDs are the ids of the flags that f's conditions depend on (flag filters
// whose key is an integer), in the order written, without repeats.
func dependencyIDs(f *Filters) []int64 {
	var ids []int64
	for _, c := range f.Groups {
		for _, prop := range c.Properties {
			if prop.Type != FilterFlag {
				continue
			}
			if id, err := strconv.ParseInt(strings.TrimSpace(prop.Key), 10, 64); err == nil && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// filtersInput is a flag's filters as a request sends them: Filters, with the
// payloads as sent (objects, or JSON in strings).
type filtersInput struct {
	Filters
	Payloads json.RawMessage `json:"payloads"`
}

// Operators whose value PostHog requires to be a string.
var stringOperators = []string{"regex", "icontains", "not_regex", "not_icontains", "gte", "lte", "gt", "lt"}

// checkFilters checks a flag's filters as sent (raw) and returns them as stored: the
// Filters hedge knows (other fields are dropped), every payload a JSON text. sent is
// false when an update's filters have no groups: the update leaves them as they are.
// self is the flag's key ("" when a create sends none), for its dependencies.
func checkFilters(raw []byte, creating bool, self string, p *projectView) (f Filters, sent bool, err error) {
	v, err := decodeValue(raw)
	if err != nil {
		return f, false, invalidFilters("Filters are not valid (they are not JSON)")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return f, false, invalid("filters", "not_a_dict", fmt.Sprintf("Expected a dictionary of items but got type %q.", pythonTypeName(v)))
	}
	groups, hasGroups := m["groups"]
	if !hasGroups && !creating {
		return f, false, nil
	}
	if creating && !pyTruthy(groups) {
		return f, false, invalidFilters("Feature flags must have at least one condition set (group).")
	}
	var in filtersInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return f, false, structureError(err)
	}
	f = in.Filters
	if f.Groups == nil {
		f.Groups = []Condition{}
	}
	if len(f.Groups) > maxConditions {
		return f, false, invalidFilters("Feature flags cannot have more than %d condition sets.", maxConditions)
	}
	for i := range f.Groups {
		if f.Groups[i].Properties == nil {
			f.Groups[i].Properties = []PropertyFilter{}
		}
		for _, prop := range f.Groups[i].Properties {
			if prop.Key == "" && prop.Type != FilterFlag {
				return f, false, invalidFilters("Filters are not valid (every property filter needs a key)")
			}
		}
	}
	for _, c := range slices.Concat(f.Groups, f.SuperGroups) {
		if len(c.Properties) > maxConditionFilters {
			return f, false, invalidFilters("A condition set cannot have more than %d property filters.", maxConditionFilters)
		}
	}
	if err := checkTargets(&f, self, p); err != nil {
		return f, false, err
	}
	variants, err := checkVariants(&f)
	if err != nil {
		return f, false, err
	}
	for _, c := range f.Groups {
		if c.Variant != nil && *c.Variant != "" && !slices.Contains(variants, *c.Variant) {
			return f, false, invalidFilters("Filters are not valid (variant override does not exist)")
		}
		for _, prop := range c.Properties {
			if err := checkProperty(prop, p); err != nil {
				return f, false, err
			}
		}
	}
	if f.Payloads, err = checkPayloads(in.Payloads, pyTruthy(m["multivariate"]), variants); err != nil {
		return f, false, err
	}
	if size := len(mustJSON(f)); size > maxFilterBytes {
		return f, false, invalidFilters("Feature flag filters exceed maximum size of %s. Current size: %s. "+
			"Please simplify conditions or reduce payload sizes.", formatBytes(maxFilterBytes), formatBytes(size))
	}
	return f, true, nil
}

// structureError refuses filters that are not of the shape hedge reads, naming the
// field that is not.
func structureError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		// The field's path starts with the embedded Filters of filtersInput.
		return invalidFilters("Filters are not valid (%s must be %s)", strings.TrimPrefix(typeErr.Field, "Filters."), jsonKind(typeErr.Type))
	}
	return invalidFilters("Filters are not valid (%s)", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// pyTruthy is Python's truth of a decoded JSON value.
func pyTruthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	case json.Number:
		f, err := v.Float64()
		return err != nil || f != 0
	}
	return true
}

// propertyType is a filter's type, "event" when it has none, as PostHog reads it.
func propertyType(prop PropertyFilter) string {
	if prop.Type == "" {
		return "event"
	}
	return prop.Type
}

// checkTargets checks what the conditions may filter on: a person flag persons,
// cohorts and flags (flag filters with flag_evaluates_to, on active flags, without
// cycles), a group flag the properties of its group type only.
func checkTargets(f *Filters, self string, p *projectView) error {
	for _, c := range f.Groups {
		// A condition targets what its own aggregation_group_type_index says when it
		// has one (null: persons), else what the flag's says: a flag may mix person and
		// group conditions.
		index := f.AggregationGroupTypeIndex
		if c.AggregationGroupTypeIndex.Set {
			index = c.AggregationGroupTypeIndex.Index
		}
		for _, prop := range c.Properties {
			if index != nil {
				if prop.Type != FilterGroup || prop.GroupTypeIndex == nil || *prop.GroupTypeIndex != *index {
					return invalidFilters("Filters are not valid (can only use group properties)")
				}
				continue
			}
			if t := propertyType(prop); t != FilterPerson && t != FilterCohort && t != FilterFlag {
				return invalidFilters("Filters are not valid (can only use person, cohort, and flag properties)")
			}
			if prop.Type == FilterFlag && prop.Operator != "flag_evaluates_to" {
				return invalidFilters("Flag properties must use the 'flag_evaluates_to' operator")
			}
		}
	}
	return checkDependencies(f, self, p)
}

// checkDependencies checks the flags f depends on: each reference the id of an
// active flag of the project, none the flag itself, and no cycle through the flags
// they depend on in turn (the first one found, in key order, is named). A create
// that sends no key is not checked, as in PostHog.
func checkDependencies(f *Filters, self string, p *projectView) error {
	if self == "" {
		return nil
	}
	deps, err := dependencyKeys(f, p)
	if err != nil || len(deps) == 0 {
		return err
	}
	if slices.Contains(deps, self) {
		return invalidFilters("Feature flag '%s' cannot depend on itself", self)
	}
	// done holds the flags whose dependencies were all walked without a cycle: every
	// path starts at self, so a cycle through them would have been found then.
	done := map[string]bool{}
	var walk func(key string, path []string) error
	walk = func(key string, path []string) error {
		if i := slices.Index(path, key); i >= 0 {
			return invalidFilters("Circular dependency detected: %s", strings.Join(append(slices.Clone(path[i:]), key), " → "))
		}
		flag := p.flagWithKey(key)
		if done[key] || flag == nil {
			return nil
		}
		deps, err := dependencyKeys(&flag.Filters, p)
		if err != nil {
			return err
		}
		for _, dep := range deps {
			if err := walk(dep, append(slices.Clone(path), key)); err != nil {
				return err
			}
		}
		done[key] = true
		return nil
	}
	for _, dep := range deps {
		if err := walk(dep, []string{self}); err != nil {
			return err
		}
	}
	return nil
}

// dependencyKeys are the keys of the flags f's conditions depend on, sorted, each
// reference checked in the order written: the id of an active flag of the project.
func dependencyKeys(f *Filters, p *projectView) ([]string, error) {
	var keys []string
	for _, c := range f.Groups {
		for _, prop := range c.Properties {
			if prop.Type != FilterFlag || prop.Key == "" {
				continue
			}
			id, err := strconv.ParseInt(strings.TrimSpace(prop.Key), 10, 64)
			if err != nil {
				return nil, invalidFilters("Flag dependencies must reference flag IDs (integers), not flag keys. Invalid reference: '%s'", prop.Key)
			}
			dep := p.flag(id)
			switch {
			case dep == nil:
				return nil, invalidFilters("Flag dependency references non-existent flag with ID %d", id)
			case !dep.Active:
				return nil, invalidFilters("Cannot create dependency on disabled flag '%s' (ID: %d). Flag dependencies must reference active flags only.", dep.Key, id)
			}
			if !slices.Contains(keys, dep.Key) {
				keys = append(keys, dep.Key)
			}
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// checkVariants checks that a multivariate flag's rollout percentages sum to 100
// and returns its variants' keys.
func checkVariants(f *Filters) ([]string, error) {
	if f.Multivariate == nil {
		return nil, nil
	}
	var keys []string
	sum := 0.0
	for _, v := range f.Multivariate.Variants {
		if v.Key == "" {
			return nil, invalidFilters("Filters are not valid (every variant needs a key)")
		}
		keys = append(keys, v.Key)
		sum += v.RolloutPercentage
	}
	if len(keys) > 0 && sum != 100 {
		return nil, invalidFilters("Invalid variant definitions: Variant rollout percentages must sum to 100.")
	}
	return keys, nil
}

// checkProperty checks one filter's value against its type and operator.
func checkProperty(prop PropertyFilter, p *projectView) error {
	var value any
	if len(prop.Value) > 0 {
		var err error
		if value, err = decodeValue(prop.Value); err != nil {
			return invalidFilters("Filters are not valid (a property's value is not JSON)")
		}
	}
	if err := checkValueSize(prop, value); err != nil {
		return err
	}
	if prop.Type == FilterCohort {
		if err := checkCohortTarget(prop.Value, value, p); err != nil {
			return err
		}
	}
	if (prop.Operator == "is_date_before" || prop.Operator == "is_date_after") && !validDate(pyStr(value)) {
		return invalid("filters", "invalid_date", fmt.Sprintf("Invalid date value: %s", pyStr(value)))
	}
	if _, isString := value.(string); slices.Contains(stringOperators, prop.Operator) && !isString {
		return invalid("filters", "invalid_value", fmt.Sprintf("Invalid value for operator %s: %s", prop.Operator, pyStr(value)))
	}
	if (prop.Operator == "in" || prop.Operator == "not_in") && prop.Type != FilterCohort {
		return invalid("filters", "invalid_operator", fmt.Sprintf("The '%s' operator is only valid for cohort properties, not '%s' properties.",
			prop.Operator, propertyType(prop)))
	}
	return nil
}

// checkValueSize checks the size of a filter's value (decoded): at most
// maxPropertyValues values in a list, and a regex pattern of at most maxPatternLength
// characters.
func checkValueSize(prop PropertyFilter, value any) error {
	if list, ok := value.([]any); ok && len(list) > maxPropertyValues {
		return invalidFilters("Property group expressions of type %s cannot contain more than %d values.", prop.Key, maxPropertyValues)
	}
	if pattern, ok := value.(string); ok && (prop.Operator == "regex" || prop.Operator == "not_regex") &&
		utf8.RuneCountInString(pattern) > maxPatternLength {
		return invalidFilters("Regex patterns of property %s cannot be longer than %d characters.", prop.Key, maxPatternLength)
	}
	return nil
}

// checkCohortTarget checks a cohort filter's value: a cohort of the project, that is
// not deleted, whose definition (and that of every cohort it uses) filters on
// properties only, never on events.
func checkCohortTarget(raw json.RawMessage, value any, p *projectView) error {
	id, ok := cohortID(raw)
	cohort := p.cohorts[id]
	if !ok || cohort == nil {
		return invalid("filters", "cohort_does_not_exist", fmt.Sprintf("Cohort with id %s does not exist", pyStr(value)))
	}
	for _, c := range append([]*Cohort{cohort}, cohortDependencies(cohort, p.cohorts)...) {
		if hasBehavioralFilter(&c.Filters.Properties) {
			return invalid("filters", "behavioral_cohort_found", fmt.Sprintf("Cohort '%s' with filters on events cannot be used in feature flags.", c.Name))
		}
	}
	return nil
}

// cohortRefs are the ids of the cohorts a property group uses directly, in order.
func cohortRefs(g *PropertyGroup) []int64 {
	var ids []int64
	for _, n := range g.Values {
		switch {
		case n.Group != nil:
			ids = append(ids, cohortRefs(n.Group)...)
		case n.Filter != nil && n.Filter.Type == FilterCohort:
			if id, ok := cohortID(n.Filter.Value); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// cohortDependencies are the cohorts of cohorts that c uses, transitively, each once,
// nearest first; ids that are not in cohorts are skipped.
func cohortDependencies(c *Cohort, cohorts map[int64]*Cohort) []*Cohort {
	seen := map[int64]bool{c.ID: true}
	var deps []*Cohort
	queue := cohortRefs(&c.Filters.Properties)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		dep := cohorts[id]
		if seen[id] || dep == nil {
			continue
		}
		seen[id] = true
		deps = append(deps, dep)
		queue = append(queue, cohortRefs(&dep.Filters.Properties)...)
	}
	return deps
}

// hasBehavioralFilter reports a filter on events (PostHog's "behavioral" type) in g.
func hasBehavioralFilter(g *PropertyGroup) bool {
	for _, n := range g.Values {
		if (n.Group != nil && hasBehavioralFilter(n.Group)) || (n.Filter != nil && n.Filter.Type == "behavioral") {
			return true
		}
	}
	return false
}

var relativeDate = regexp.MustCompile(`^-?([0-9]+)[hdwmy]$`)

// validDate reports a date that PostHog's date operators read: relative to now
// (-30d, 1w; hours, days, weeks, months, years, fewer than 10000), or an ISO 8601
// date or date-time with or without a zone.
func validDate(s string) bool {
	if m := relativeDate.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		return err == nil && n < 10000
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// checkPayloads checks the payloads as sent (raw, nil when not sent) and returns them
// as stored, each a JSON text: an object is stored as Python's json.dumps of it (as
// PostHog does), a string must hold JSON and is kept as sent, a null is no payload,
// and any other value is stored as its JSON text (which SDKs read back the same). The
// keys must be the variants' of a multivariate flag, else only "true".
func checkPayloads(raw json.RawMessage, multivariate bool, variants []string) (map[string]string, error) {
	payloads := map[string]string{}
	if raw == nil {
		return payloads, nil
	}
	var sent map[string]json.RawMessage
	if err := json.Unmarshal(raw, &sent); err != nil || sent == nil {
		return nil, invalidFilters("Payloads must be passed as a dictionary")
	}
	for key, value := range sent {
		switch value[0] {
		case 'n':
			continue
		case '"':
			var text string
			if err := json.Unmarshal(value, &text); err != nil || !json.Valid([]byte(text)) {
				return nil, invalidFilters("Payload value is not valid JSON")
			}
			payloads[key] = text
		default:
			text, err := pythonJSON(value)
			if err != nil {
				return nil, invalidFilters("Payload value is not valid JSON")
			}
			payloads[key] = text
		}
	}
	for key := range sent {
		switch {
		case multivariate && !slices.Contains(variants, key):
			return nil, invalidFilters("Payload keys must match a variant key for multivariate flags")
		case !multivariate && (len(sent) > 1 || key != "true"):
			return nil, invalidFilters("Payload keys must be 'true' for boolean flags")
		}
	}
	return payloads, nil
}

// CohortChange is what a create or an update of a cohort sends; nil fields are not
// sent.
type CohortChange struct {
	Name        *string
	Description *string
	// Filters is the JSON the request sent, nil when it sent none:
	// {"properties": {"type": "AND"|"OR", "values": [...]}}.
	Filters  json.RawMessage
	IsStatic *bool
	Deleted  *bool
}

// Filter types a cohort's definition may use: person properties, other cohorts, and
// events (PostHog's behavioral filters, kept, which flags refuse to use).
var cohortFilterTypes = []string{FilterPerson, FilterCohort, "behavioral"}

// apply checks ch against current (nil when creating) and the project's other
// cohorts, and returns the cohort it makes.
func (ch *CohortChange) apply(current *Cohort, p *projectView) (*Cohort, error) {
	var next Cohort
	if current != nil {
		next = *current
	}
	if ch.Name != nil {
		name := strings.TrimSpace(*ch.Name)
		switch {
		case utf8.RuneCountInString(name) > maxNameLength:
			return nil, invalid("name", "max_length", fmt.Sprintf("Ensure this field has no more than %d characters.", maxNameLength))
		case strings.ContainsRune(name, 0):
			return nil, errNullCharacters("name")
		}
		next.Name = name
	}
	if ch.Description != nil {
		description := strings.TrimSpace(*ch.Description)
		if utf8.RuneCountInString(description) > maxDescription {
			return nil, invalid("description", "max_length", fmt.Sprintf("Ensure this field has no more than %d characters.", maxDescription))
		}
		next.Description = description
	}
	setBool(&next.Deleted, ch.Deleted)
	setBool(&next.IsStatic, ch.IsStatic)
	switch {
	case ch.Filters != nil:
		filters, err := checkCohortFilters(ch.Filters)
		if err != nil {
			return nil, err
		}
		next.Filters = filters
	case current == nil && !next.IsStatic:
		return nil, invalid("filters", "invalid_input", "Filters must be a dictionary with a 'properties' key.")
	case current == nil:
		next.Filters = CohortFilters{Properties: PropertyGroup{Type: "AND", Values: []PropertyNode{}}}
	}
	for _, id := range cohortRefs(&next.Filters.Properties) {
		if c := p.cohorts[id]; c == nil && (current == nil || id != current.ID) {
			return nil, invalid("", "invalid_input", "Invalid Cohort ID in filter")
		}
	}
	if current != nil && cohortLoops(&next, p.cohorts) {
		return nil, invalid("", "invalid_input", "Cohorts cannot reference other cohorts in a loop.")
	}
	return &next, nil
}

// checkCohortFilters checks a cohort's definition as sent and returns it as stored.
func checkCohortFilters(raw []byte) (CohortFilters, error) {
	var f CohortFilters
	v, err := decodeValue(raw)
	if m, ok := v.(map[string]any); err != nil || !ok || m["properties"] == nil {
		return f, invalid("filters", "invalid_input", "Filters must be a dictionary with a 'properties' key.")
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, structureError(err)
	}
	return f, checkPropertyGroup(&f.Properties, false)
}

// checkPropertyGroup checks a cohort's property group, and gives empty groups an
// empty list of values.
func checkPropertyGroup(g *PropertyGroup, nested bool) error {
	// "property" is the older name of an inner AND group, which stored cohorts still
	// carry; the outer group is AND or OR.
	if g.Type != "AND" && g.Type != "OR" && (!nested || g.Type != "property") {
		return invalidFilters("Filters are not valid (a property group's type must be AND or OR)")
	}
	if g.Values == nil {
		g.Values = []PropertyNode{}
	}
	for _, n := range g.Values {
		switch {
		case n.Group != nil:
			if err := checkPropertyGroup(n.Group, true); err != nil {
				return err
			}
		case n.Filter.Key == "":
			return invalidFilters("Filters are not valid (every property filter needs a key)")
		case !slices.Contains(cohortFilterTypes, n.Filter.Type):
			return invalidFilters("Filters are not valid (a cohort filters on person properties, other cohorts, or events, not on %q)", n.Filter.Type)
		case len(n.Filter.Value) > 0:
			// The values a flag's evaluation reads of the cohort are bounded as a flag's.
			value, err := decodeValue(n.Filter.Value)
			if err != nil {
				return invalidFilters("Filters are not valid (a property's value is not JSON)")
			}
			if err := checkValueSize(*n.Filter, value); err != nil {
				return err
			}
		}
	}
	return nil
}

// cohortLoops reports whether c reaches itself through the cohorts it uses, with c's
// new definition in place of its stored one.
func cohortLoops(c *Cohort, cohorts map[int64]*Cohort) bool {
	seen := map[int64]bool{}
	queue := cohortRefs(&c.Filters.Properties)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if id == c.ID {
			return true
		}
		if seen[id] || cohorts[id] == nil {
			continue
		}
		seen[id] = true
		queue = append(queue, cohortRefs(&cohorts[id].Filters.Properties)...)
	}
	return false
}
