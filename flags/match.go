package flags

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// operator is a property filter's operator.
type operator uint8

const (
	opUnknown operator = iota
	opExact
	opIsNot
	opIcontains
	opNotIcontains
	opRegex
	opNotRegex
	opGt
	opGte
	opLt
	opLte
	opIsSet
	opIsNotSet
	opIsDateBefore
	opIsDateAfter
	opIsDateExact
	opSemverEq
	opSemverNeq
	opSemverGt
	opSemverGte
	opSemverLt
	opSemverLte
	opSemverTilde
	opSemverCaret
	opSemverWildcard
	opStartsWith
	opNotStartsWith
	opEndsWith
	opNotEndsWith
	opIcontainsMulti
	opNotIcontainsMulti
	opBetween
	opNotBetween
	opIn
	opNotIn
	opFlagEvaluatesTo
)

var operators = map[string]operator{
	"":                    opExact, // a filter without an operator is exact
	"exact":               opExact,
	"is_not":              opIsNot,
	"icontains":           opIcontains,
	"not_icontains":       opNotIcontains,
	"regex":               opRegex,
	"not_regex":           opNotRegex,
	"gt":                  opGt,
	"gte":                 opGte,
	"lt":                  opLt,
	"lte":                 opLte,
	"is_set":              opIsSet,
	"is_not_set":          opIsNotSet,
	"is_date_before":      opIsDateBefore,
	"is_date_after":       opIsDateAfter,
	"is_date_exact":       opIsDateExact,
	"semver_eq":           opSemverEq,
	"semver_neq":          opSemverNeq,
	"semver_gt":           opSemverGt,
	"semver_gte":          opSemverGte,
	"semver_lt":           opSemverLt,
	"semver_lte":          opSemverLte,
	"semver_tilde":        opSemverTilde,
	"semver_caret":        opSemverCaret,
	"semver_wildcard":     opSemverWildcard,
	"starts_with":         opStartsWith,
	"not_starts_with":     opNotStartsWith,
	"ends_with":           opEndsWith,
	"not_ends_with":       opNotEndsWith,
	"icontains_multi":     opIcontainsMulti,
	"not_icontains_multi": opNotIcontainsMulti,
	"between":             opBetween,
	"not_between":         opNotBetween,
	"in":                  opIn,
	"not_in":              opNotIn,
	"flag_evaluates_to":   opFlagEvaluatesTo,
}

// negated reports whether op is the "not" form of an operator, which matches a
// property that is absent.
func (op operator) negated() bool {
	switch op {
	case opIsNot, opNotIcontains, opNotRegex, opNotStartsWith, opNotEndsWith, opNotIcontainsMulti, opNotBetween:
		return true
	}
	return false
}

// filterValue is a filter's value prepared, once per definitions, for its operator.
type filterValue struct {
	// null: the filter has no value, or null; it matches nothing but is_set and
	// is_not_set.
	null bool
	v    value
	// exact: the lowercase text of the value, or of each element of a list; or, for a
	// value of true/false texts, their truthiness.
	lower         string
	itemsLower    []string
	truthyOrFalsy bool
	truthy        bool
	// icontains, starts_with, ends_with: the ASCII-lowercase text; icontains_multi: of
	// each element.
	asciiLower string
	multiLower []string
	// gt, gte, lt, lte: the number; between: the bounds.
	num      float64
	numOK    bool
	low      float64
	high     float64
	boundsOK bool
	// regex: the compiled pattern, nil when it is invalid.
	re *pattern
	// is_date_*: the date.
	date    dateSpec
	dateOK  bool
	version semver
	rng     semverRange
	semOK   bool
}

// compileValue prepares raw, a filter's value, for op.
func compileValue(op operator, raw []byte) filterValue {
	fv := filterValue{v: rawValue(raw)}
	if fv.v.kind == kindNull {
		fv.null = true
		return fv
	}
	text := fv.v.text()
	switch op {
	case opExact, opIsNot:
		fv.truthyOrFalsy = truthyOrFalsy(&fv.v)
		fv.truthy = truthy(&fv.v)
		if fv.v.kind == kindArray {
			fv.itemsLower = make([]string, len(fv.v.items))
			for i := range fv.v.items {
				fv.itemsLower[i] = lowerUnicode(fv.v.items[i].text())
			}
		} else {
			fv.lower = lowerUnicode(text)
		}
	case opIcontains, opNotIcontains, opStartsWith, opNotStartsWith, opEndsWith, opNotEndsWith:
		fv.asciiLower = lowerASCII(text)
	case opIcontainsMulti, opNotIcontainsMulti:
		if fv.v.kind == kindArray {
			for i := range fv.v.items {
				fv.multiLower = append(fv.multiLower, lowerASCII(fv.v.items[i].text()))
			}
		} else {
			fv.multiLower = []string{lowerASCII(text)}
		}
	case opRegex, opNotRegex:
		fv.re = compileRegex(text)
	case opGt, opGte, opLt, opLte:
		fv.num, fv.numOK = toFloat(&fv.v)
	case opBetween, opNotBetween:
		if fv.v.kind == kindArray && len(fv.v.items) == 2 {
			low, okLow := toFloat(&fv.v.items[0])
			high, okHigh := toFloat(&fv.v.items[1])
			fv.low, fv.high = low, high
			fv.boundsOK = okLow && okHigh && !math.IsNaN(low) && !math.IsNaN(high) && low <= high
		}
	case opIsDateBefore, opIsDateAfter, opIsDateExact:
		if fv.v.kind == kindString {
			fv.date, fv.dateOK = parseDateSpec(fv.v.s)
		}
	case opSemverEq, opSemverNeq, opSemverGt, opSemverGte, opSemverLt, opSemverLte:
		fv.version, fv.semOK = parseVersionText(text)
	case opSemverTilde, opSemverCaret, opSemverWildcard:
		fv.rng, fv.semOK = parseSemverRange(op, text)
	}
	return fv
}

// matchContext is what the operators read besides the filter and the property: the
// instant "now" and the project's time zone, for dates; and the meter of the
// evaluation's work.
type matchContext struct {
	now   time.Time
	loc   *time.Location
	meter meter
}

// meter bounds the time of one evaluation without reading the clock for every filter.
// Each flag, condition and filter spends units before its work, about a nanosecond's
// worth each (a byte of text read or compared counts one), and the clock is read once
// clockEvery units were spent since it last was: a request of ordinary flags reads it
// only when it starts. Once the deadline has passed the meter stays expired, and the
// evaluation answers the flags it has not decided with a timeout.
type meter struct {
	deadline time.Time // the zero time: none
	spent    int
	expired  bool
}

// Units of the meter: clockEvery (about a millisecond of work) between two readings of
// the clock; what a flag or a condition (a hash) and what a filter cost besides the
// text it reads; what each value of an exact list costs.
const (
	clockEvery     = 1 << 20
	flagUnits      = 256
	conditionUnits = 256
	filterUnits    = 64
	itemUnits      = 8
)

// start starts the meter of an evaluation that must end by deadline (zero: none).
func (m *meter) start(deadline time.Time) {
	m.deadline, m.spent = deadline, 0
	m.expired = !deadline.IsZero() && !time.Now().Before(deadline)
}

// spend records work about to be done and reports whether the deadline has passed,
// in which case the work is not to be done.
func (m *meter) spend(units int) bool {
	if m.expired {
		return true
	}
	if m.spent += units; m.spent < clockEvery {
		return false
	}
	m.spent = 0
	m.expired = !m.deadline.IsZero() && !time.Now().Before(m.deadline)
	return m.expired
}

// matchUnits is the meter's estimate of matching the text of v against fv with op.
func matchUnits(op operator, fv *filterValue, v *value) int {
	n := len(v.text())
	switch op {
	case opIcontains, opNotIcontains, opIcontainsMulti, opNotIcontainsMulti:
		// icontains_multi spends for each value as it searches.
		return filterUnits + min(n, maxSearchText)
	case opRegex, opNotRegex:
		if fv.re != nil {
			return filterUnits + fv.re.units(min(n, maxSearchText))
		}
	case opExact, opIsNot:
		return filterUnits + n + len(fv.itemsLower)*itemUnits
	}
	return filterUnits + n
}

// matchValue reports whether a property pr (set or not) matches a filter: op and fv.
// An error (a value that is not a number, a date or a version where one is needed, an
// invalid pattern or bounds) is a non-match, for the "not" operators too; only an absent
// property makes them match. The search operators (icontains, icontains_multi, regex
// and their negations) read the first maxSearchText bytes of the property's text. The
// work is spent on mc's meter first: when it has expired, matchValue answers false and
// the caller, which checks the meter, fails the flag.
func matchValue(op operator, fv *filterValue, pr *property, mc *matchContext) bool {
	switch op {
	case opIsSet:
		return pr.set // a property set to null is set
	case opIsNotSet:
		return !pr.set
	}
	if fv.null {
		return false
	}
	if !pr.set {
		// Absent: the "not" operators match, the others do not.
		return op.negated()
	}
	v := &pr.v
	if mc.meter.spend(matchUnits(op, fv, v)) {
		return false
	}
	switch op {
	case opExact, opIsNot:
		return exactMatch(fv, pr) == (op == opExact)
	case opIcontains, opNotIcontains:
		return strings.Contains(pr.searchLowerText(), fv.asciiLower) == (op == opIcontains)
	case opStartsWith, opNotStartsWith:
		return hasPrefixFoldASCII(v.text(), fv.asciiLower) == (op == opStartsWith)
	case opEndsWith, opNotEndsWith:
		return hasSuffixFoldASCII(v.text(), fv.asciiLower) == (op == opEndsWith)
	case opIcontainsMulti, opNotIcontainsMulti:
		// One pass of strings.Contains (linear in the text) per value, over the text
		// lowercased once.
		text := pr.searchLowerText()
		any := false
		for _, s := range fv.multiLower {
			if mc.meter.spend(len(text) + len(s)) {
				return false
			}
			if strings.Contains(text, s) {
				any = true
				break
			}
		}
		return any == (op == opIcontainsMulti)
	case opRegex, opNotRegex:
		if fv.re == nil {
			return false // an invalid pattern matches nothing, negated or not
		}
		m, ok := fv.re.match(searchText(v.text()))
		if !ok {
			return false // the match ran out of time
		}
		return m == (op == opRegex)
	case opGt, opGte, opLt, opLte:
		p, ok := toFloat(v)
		if !ok || !fv.numOK {
			return false // both sides must be numbers: no comparison of texts
		}
		switch op {
		case opGt:
			return p > fv.num
		case opGte:
			return p >= fv.num
		case opLt:
			return p < fv.num
		}
		return p <= fv.num
	case opBetween, opNotBetween:
		if !fv.boundsOK {
			return false
		}
		p, ok := toFloat(v)
		if !ok || math.IsNaN(p) {
			return false
		}
		return (p >= fv.low && p <= fv.high) == (op == opBetween)
	case opIsDateBefore, opIsDateAfter, opIsDateExact:
		p, ok := propertyDate(v, mc)
		if !ok || !fv.dateOK {
			return false
		}
		f, ok := fv.date.instant(mc)
		if !ok {
			return false
		}
		switch op {
		case opIsDateBefore:
			return p.Before(f)
		case opIsDateAfter:
			return p.After(f)
		}
		return p.Equal(f)
	case opSemverEq, opSemverNeq, opSemverGt, opSemverGte, opSemverLt, opSemverLte:
		p, ok := parseVersionText(v.text())
		if !ok || !fv.semOK {
			return false
		}
		c := p.compare(&fv.version)
		switch op {
		case opSemverEq:
			return c == 0
		case opSemverNeq:
			return c != 0
		case opSemverGt:
			return c > 0
		case opSemverGte:
			return c >= 0
		case opSemverLt:
			return c < 0
		}
		return c <= 0
	case opSemverTilde, opSemverCaret, opSemverWildcard:
		p, ok := parseVersionText(v.text())
		if !ok || !fv.semOK {
			return false
		}
		return fv.rng.matches(&p)
	}
	// in and not_in belong to cohort filters, flag_evaluates_to to flag filters; on a
	// property they, and unknown operators, match nothing.
	return false
}

// exactMatch is exact: when the filter's value is a boolean, "true" or "false" (any
// case) or a list of only those, the truthiness of the two sides (true or "true" in any
// case, or a list of only such, against everything else); when it is a list, whether
// the property's text equals one element's, ignoring case; else whether the texts are
// equal, ignoring case.
func exactMatch(fv *filterValue, pr *property) bool {
	if fv.truthyOrFalsy {
		return truthy(&pr.v) == fv.truthy
	}
	if fv.v.kind == kindArray {
		for _, item := range fv.itemsLower {
			if pr.equalLower(item) {
				return true
			}
		}
		return false
	}
	return pr.equalLower(fv.lower)
}

// truthyOrFalsy reports whether v is a boolean, "true" or "false" in any case, or a
// list of only those (an empty list too).
func truthyOrFalsy(v *value) bool {
	switch v.kind {
	case kindBool:
		return true
	case kindString:
		return equalFoldASCII(v.s, "true") || equalFoldASCII(v.s, "false")
	case kindArray:
		for i := range v.items {
			if !truthyOrFalsy(&v.items[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// truthy reports whether v is true, "true" in any case, or a list of only those (an
// empty list too).
func truthy(v *value) bool {
	switch v.kind {
	case kindBool:
		return v.b
	case kindString:
		return equalFoldASCII(v.s, "true")
	case kindArray:
		for i := range v.items {
			if !truthy(&v.items[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// toFloat is v as a number: a JSON number, or text that reads as one (decimal, with an
// optional sign and exponent; "inf" and "nan" too).
func toFloat(v *value) (float64, bool) {
	if v.kind == kindNumber {
		return v.num, true
	}
	return parseFloatText(v.text())
}

// parseFloatText reads s as a decimal number: an optional sign, digits with an optional
// point and fraction, an optional exponent; or inf, infinity or nan in any case.
// Hexadecimal and digit separators are not numbers.
func parseFloatText(s string) (float64, bool) {
	if !decimalSyntax(s) {
		return 0, false // before ParseFloat, whose error allocates
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeError(err) {
		return 0, false
	}
	return f, true
}

// decimalSyntax reports whether s is written as parseFloatText reads numbers.
func decimalSyntax(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if equalFoldASCII(s, "inf") || equalFoldASCII(s, "infinity") || equalFoldASCII(s, "nan") {
		return true
	}
	i, digits := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}
