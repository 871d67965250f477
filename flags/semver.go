package flags

import (
	"strconv"
	"strings"
)

// semver is a version MAJOR.MINOR.PATCH[-PRE][+BUILD].
type semver struct {
	major, minor, patch uint64
	pre, build          string
}

// parseVersionText reads a version as the semver operators do: without a leading v,
// trimmed, the leading zeros of numeric parts dropped and missing parts padded with 0
// ("v3.08" is 3.8.0, "2" is 2.0.0), then strictly: exactly three numeric parts ("1.2.3.4"
// is not a version), a pre-release of dot-separated alphanumeric identifiers without
// leading zeros in numeric ones, and build metadata.
func parseVersionText(text string) (semver, bool) {
	s := strings.TrimSpace(strings.TrimPrefix(text, "v"))
	core, suffix := s, ""
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		core, suffix = s[:i], s[i:]
	}
	var v semver
	parts := [3]*uint64{&v.major, &v.minor, &v.patch}
	for n := 0; ; n++ {
		part, rest, more := strings.Cut(core, ".")
		if n == len(parts) || !isDigits(part) {
			return v, false // a fourth part, or an empty or non-numeric one
		}
		x, err := strconv.ParseUint(stripLeadingZeros(part), 10, 64)
		if err != nil {
			return v, false
		}
		*parts[n] = x
		if !more {
			break
		}
		core = rest
	}
	_, ok := v.readSuffix(suffix) // suffix is "" or starts with - or +: all of it is read
	return v, ok
}

// canonicalVersion drops leading zeros from the numeric parts before any pre-release or
// build suffix and pads the parts to three.
func canonicalVersion(s string) string {
	core, suffix := s, ""
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		core, suffix = s[:i], s[i:]
	}
	parts := strings.Split(core, ".")
	for i, p := range parts {
		parts[i] = stripLeadingZeros(p)
	}
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	return strings.Join(parts, ".") + suffix
}

// stripLeadingZeros drops the leading zeros of a part made only of digits ("08" is "8",
// "000" is "0") and leaves any other part.
func stripLeadingZeros(p string) string {
	if !isDigits(p) {
		return p
	}
	if t := strings.TrimLeft(p, "0"); t != "" {
		return t
	}
	return "0"
}

func parseStrictVersion(s string) (semver, bool) {
	var v semver
	var ok bool
	if v.major, s, ok = numericPart(s); !ok || !strings.HasPrefix(s, ".") {
		return v, false
	}
	if v.minor, s, ok = numericPart(s[1:]); !ok || !strings.HasPrefix(s, ".") {
		return v, false
	}
	if v.patch, s, ok = numericPart(s[1:]); !ok {
		return v, false
	}
	s, ok = v.readSuffix(s)
	return v, ok && s == ""
}

// readSuffix reads the pre-release (-PRE) and build metadata (+BUILD) that s may start
// with into v; rest is what follows them, false when one is not valid.
func (v *semver) readSuffix(s string) (rest string, ok bool) {
	if strings.HasPrefix(s, "-") {
		end := strings.IndexByte(s, '+')
		if end < 0 {
			end = len(s)
		}
		v.pre, s = s[1:end], s[end:]
		if !validIdentifiers(v.pre, true) {
			return s, false
		}
	}
	if strings.HasPrefix(s, "+") {
		v.build, s = s[1:], ""
		if !validIdentifiers(v.build, false) {
			return s, false
		}
	}
	return s, true
}

// numericPart reads a number without leading zeros from the start of s.
func numericPart(s string) (uint64, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || (i > 1 && s[0] == '0') {
		return 0, s, false
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	return n, s[i:], err == nil
}

// validIdentifiers reports whether s is dot-separated, non-empty identifiers of ASCII
// letters, digits and hyphens; noLeadingZeros refuses numeric ones with leading zeros.
func validIdentifiers(s string, noLeadingZeros bool) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
		}
		if noLeadingZeros && len(id) > 1 && id[0] == '0' && isDigits(id) {
			return false
		}
	}
	return true
}

// compare orders versions by major, minor, patch, pre-release (a release after its
// pre-releases; identifiers numerically when both are numbers, numbers first, then in
// ASCII order; more identifiers after fewer), then build metadata.
func (v *semver) compare(w *semver) int {
	switch {
	case v.major != w.major:
		return cmpUint(v.major, w.major)
	case v.minor != w.minor:
		return cmpUint(v.minor, w.minor)
	case v.patch != w.patch:
		return cmpUint(v.patch, w.patch)
	}
	if c := comparePre(v.pre, w.pre); c != 0 {
		return c
	}
	return compareBuild(v.build, w.build)
}

func cmpUint(a, b uint64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

func comparePre(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1 // a release comes after its pre-releases
	case b == "":
		return -1
	}
	return compareIdentifiers(a, b, func(x, y string) int {
		if c := len(x) - len(y); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
}

func compareBuild(a, b string) int {
	return compareIdentifiers(a, b, func(x, y string) int {
		tx, ty := strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
		if c := len(tx) - len(ty); c != 0 {
			return c
		}
		if c := strings.Compare(tx, ty); c != 0 {
			return c
		}
		return len(x) - len(y)
	})
}

// compareIdentifiers compares dot-separated identifiers one by one: numeric ones with
// numeric, a numeric one before any other, others in ASCII order.
func compareIdentifiers(a, b string, numeric func(x, y string) int) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i, x := range as {
		if i >= len(bs) {
			return 1
		}
		y := bs[i]
		xn, yn := allDigits(x), allDigits(y)
		var c int
		switch {
		case xn && yn:
			c = numeric(x, y)
		case xn:
			return -1
		case yn:
			return 1
		default:
			c = strings.Compare(x, y)
		}
		if c != 0 {
			return c
		}
	}
	if len(as) < len(bs) {
		return -1
	}
	return 0
}

// allDigits is isDigits that holds for "" too.
func allDigits(s string) bool { return s == "" || isDigits(s) }

// rangeOp is the operator of one comparator of a version range.
type rangeOp uint8

const (
	rangeCaret rangeOp = iota // ^, and no operator
	rangeTilde
	rangeExact // =, and a wildcard version
	rangeGreater
	rangeGreaterEq
	rangeLess
	rangeLessEq
)

// comparator is one condition of a version range on a version whose minor and patch
// may be missing.
type comparator struct {
	op                  rangeOp
	major, minor, patch uint64
	hasMinor, hasPatch  bool
	pre                 string
}

// semverRange is a version range, as Cargo reads one: all its comparators must hold. A
// pre-release version is in it only when a comparator names the same major, minor and
// patch with a pre-release.
type semverRange struct {
	comparators []comparator
}

// parseSemverRange reads the filter of semver_tilde (~X.Y.Z: the same major and minor,
// at least the patch), semver_caret (^X.Y.Z: no change of the leftmost non-zero part)
// and semver_wildcard (X.*, X.Y.*, * — or any range, such as >=1.2, <2). The tilde and
// caret versions are read as parseVersionText reads versions; the wildcard only loses a
// leading v and the leading zeros of its parts.
func parseSemverRange(op operator, text string) (semverRange, bool) {
	s := strings.TrimSpace(strings.TrimPrefix(text, "v"))
	switch op {
	case opSemverTilde, opSemverCaret:
		v, ok := parseStrictVersion(canonicalVersion(s))
		if !ok {
			return semverRange{}, false
		}
		c := comparator{op: rangeCaret, major: v.major, minor: v.minor, patch: v.patch, hasMinor: true, hasPatch: true, pre: v.pre}
		if op == opSemverTilde {
			c.op = rangeTilde
		}
		return semverRange{comparators: []comparator{c}}, true
	}
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(stripLeadingZeros(p), "*", "x")
	}
	return parseVersionReq(strings.Join(parts, "."))
}

// parseVersionReq reads comma-separated comparators, each an optional operator (=, >,
// >=, <, <=, ~, ^; none is ^) and a version whose minor and patch may be missing or
// wildcards (x, X, *); a lone wildcard is any release.
func parseVersionReq(s string) (semverRange, bool) {
	var r semverRange
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return r, false
		}
		c, star, ok := parseComparator(part)
		if !ok {
			return r, false
		}
		if !star {
			r.comparators = append(r.comparators, c)
		}
	}
	return r, true
}

func parseComparator(s string) (c comparator, star, ok bool) {
	c.op = rangeCaret
	explicit := true
	switch {
	case strings.HasPrefix(s, ">="):
		c.op, s = rangeGreaterEq, s[2:]
	case strings.HasPrefix(s, "<="):
		c.op, s = rangeLessEq, s[2:]
	case strings.HasPrefix(s, ">"):
		c.op, s = rangeGreater, s[1:]
	case strings.HasPrefix(s, "<"):
		c.op, s = rangeLess, s[1:]
	case strings.HasPrefix(s, "="):
		c.op, s = rangeExact, s[1:]
	case strings.HasPrefix(s, "~"):
		c.op, s = rangeTilde, s[1:]
	case strings.HasPrefix(s, "^"):
		c.op, s = rangeCaret, s[1:]
	default:
		explicit = false
	}
	s = strings.TrimSpace(s)
	if build := strings.IndexByte(s, '+'); build >= 0 {
		s = s[:build] // build metadata plays no part in a range
	}
	core, pre := s, ""
	if i := strings.IndexByte(s, '-'); i >= 0 {
		core, pre = s[:i], s[i+1:]
		if !validIdentifiers(pre, true) {
			return c, false, false
		}
	}
	parts := strings.Split(core, ".")
	if len(parts) > 3 {
		return c, false, false
	}
	wildcard := false
	for i, p := range parts {
		if p == "x" || p == "X" || p == "*" {
			wildcard = true
			continue
		}
		if wildcard {
			return c, false, false // nothing but wildcards after a wildcard
		}
		n, rest, ok := numericPart(p)
		if !ok || rest != "" {
			return c, false, false
		}
		switch i {
		case 0:
			c.major = n
		case 1:
			c.minor, c.hasMinor = n, true
		case 2:
			c.patch, c.hasPatch = n, true
		}
	}
	if pre != "" && (wildcard || !c.hasPatch) {
		return c, false, false
	}
	c.pre = pre
	if wildcard {
		if parts[0] == "x" || parts[0] == "X" || parts[0] == "*" {
			return c, true, c.op == rangeCaret || c.op == rangeExact
		}
		if !explicit {
			c.op = rangeExact
		}
	}
	return c, false, true
}

func (r *semverRange) matches(v *semver) bool {
	for i := range r.comparators {
		if !r.comparators[i].matches(v) {
			return false
		}
	}
	if v.pre == "" {
		return true
	}
	for i := range r.comparators {
		c := &r.comparators[i]
		if c.major == v.major && c.hasMinor && c.minor == v.minor && c.hasPatch && c.patch == v.patch && c.pre != "" {
			return true
		}
	}
	return false
}

func (c *comparator) matches(v *semver) bool {
	switch c.op {
	case rangeExact:
		return c.matchesExact(v)
	case rangeGreater:
		return c.matchesGreater(v)
	case rangeGreaterEq:
		return c.matchesExact(v) || c.matchesGreater(v)
	case rangeLess:
		return c.matchesLess(v)
	case rangeLessEq:
		return c.matchesExact(v) || c.matchesLess(v)
	case rangeTilde:
		if v.major != c.major || (c.hasMinor && v.minor != c.minor) {
			return false
		}
		if c.hasPatch && v.patch != c.patch {
			return v.patch > c.patch
		}
		return comparePre(v.pre, c.pre) >= 0
	}
	// Caret: no change to the leftmost part that is not zero.
	if v.major != c.major {
		return false
	}
	if !c.hasMinor {
		return true
	}
	if !c.hasPatch {
		if c.major > 0 {
			return v.minor >= c.minor
		}
		return v.minor == c.minor
	}
	switch {
	case c.major > 0:
		if v.minor != c.minor {
			return v.minor > c.minor
		}
		if v.patch != c.patch {
			return v.patch > c.patch
		}
	case c.minor > 0:
		if v.minor != c.minor {
			return false
		}
		if v.patch != c.patch {
			return v.patch > c.patch
		}
	default:
		if v.minor != c.minor || v.patch != c.patch {
			return false
		}
	}
	return comparePre(v.pre, c.pre) >= 0
}

func (c *comparator) matchesExact(v *semver) bool {
	return v.major == c.major && (!c.hasMinor || v.minor == c.minor) && (!c.hasPatch || v.patch == c.patch) && v.pre == c.pre
}

func (c *comparator) matchesGreater(v *semver) bool { return c.order(v) > 0 }

func (c *comparator) matchesLess(v *semver) bool { return c.order(v) < 0 }

// order compares v with the parts the comparator gives: above 0 when v is greater,
// below 0 when it is lower, 0 when it has the same major and the same minor and
// patch where they are given (and, with the patch, no other pre-release order).
func (c *comparator) order(v *semver) int {
	switch {
	case v.major != c.major:
		return cmpUint(v.major, c.major)
	case !c.hasMinor:
		return 0
	case v.minor != c.minor:
		return cmpUint(v.minor, c.minor)
	case !c.hasPatch:
		return 0
	case v.patch != c.patch:
		return cmpUint(v.patch, c.patch)
	}
	return comparePre(v.pre, c.pre)
}
