package flags

import (
	"unicode/utf8"

	"github.com/hedge-analytics/hedge/internal/jsontext"
)

// initialProperties maps each property that ingestion copies once, as $initial_<p>, to
// that copy. Evaluation fills a missing $initial_<p> from <p>, so that a condition on
// it holds before ingestion has written it.
var initialProperties = map[string]string{
	"$app_build":        "$initial_app_build",
	"$app_name":         "$initial_app_name",
	"$app_namespace":    "$initial_app_namespace",
	"$app_version":      "$initial_app_version",
	"$browser":          "$initial_browser",
	"$browser_version":  "$initial_browser_version",
	"$device_type":      "$initial_device_type",
	"$current_url":      "$initial_current_url",
	"$pathname":         "$initial_pathname",
	"$os":               "$initial_os",
	"$os_version":       "$initial_os_version",
	"$referring_domain": "$initial_referring_domain",
	"$referrer":         "$initial_referrer",
	"$screen_height":    "$initial_screen_height",
	"$screen_width":     "$initial_screen_width",
	"$viewport_height":  "$initial_viewport_height",
	"$viewport_width":   "$initial_viewport_width",
	"$raw_user_agent":   "$initial_raw_user_agent",
	"utm_source":        "$initial_utm_source",
	"utm_medium":        "$initial_utm_medium",
	"utm_campaign":      "$initial_utm_campaign",
	"utm_content":       "$initial_utm_content",
	"utm_term":          "$initial_utm_term",
	"gclid":             "$initial_gclid",
	"gad_source":        "$initial_gad_source",
	"gclsrc":            "$initial_gclsrc",
	"dclid":             "$initial_dclid",
	"gbraid":            "$initial_gbraid",
	"wbraid":            "$initial_wbraid",
	"fbclid":            "$initial_fbclid",
	"msclkid":           "$initial_msclkid",
	"twclid":            "$initial_twclid",
	"li_fat_id":         "$initial_li_fat_id",
	"mc_cid":            "$initial_mc_cid",
	"igshid":            "$initial_igshid",
	"ttclid":            "$initial_ttclid",
	"rdt_cid":           "$initial_rdt_cid",
	"epik":              "$initial_epik",
	"qclid":             "$initial_qclid",
	"sccid":             "$initial_sccid",
	"irclid":            "$initial_irclid",
	"_kx":               "$initial__kx",
}

// property is one property of a bag: its value, if the person or group has it, and
// what the operators derive from its text, computed on first use: once per evaluation
// however many filters read the property, so that a long text is lowercased or scanned
// for non-ASCII once, not once per filter or per value of a list.
type property struct {
	v   value
	set bool
	// searchLower is searchText of the text with its ASCII letters lowercased.
	searchLower    string
	hasSearchLower bool
	// ascii: the text is all ASCII (known once asciiKnown); lower is the text
	// lowercased by lowerUnicode, for a text that is not.
	asciiKnown, ascii bool
	lower             string
	hasLower          bool
}

// maxSearchText is how much of a property's text the search operators (icontains,
// icontains_multi, regex and their negations) read: its first 8 KiB. Their cost grows
// with the text times the filter (the values of icontains_multi, the size of a pattern),
// and the text comes from the caller: a longer text is searched in its first 8 KiB only.
const maxSearchText = 8 << 10

// searchText is what the search operators read of s: all of it up to maxSearchText
// bytes, else its first maxSearchText bytes less an incomplete last character.
func searchText(s string) string {
	if len(s) <= maxSearchText {
		return s
	}
	cut := maxSearchText
	for cut > maxSearchText-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// searchLowerText is searchText of the property's text, ASCII letters lowercased.
func (pr *property) searchLowerText() string {
	if !pr.hasSearchLower {
		pr.searchLower, pr.hasSearchLower = lowerASCII(searchText(pr.v.text())), true
	}
	return pr.searchLower
}

// equalLower reports whether the property's text, lowercased by lowerUnicode, is lower.
func (pr *property) equalLower(lower string) bool {
	s := pr.v.text()
	if !pr.asciiKnown {
		pr.ascii, pr.asciiKnown = isASCII(s), true
	}
	if pr.ascii {
		return equalLowerASCII(s, lower)
	}
	if !pr.hasLower {
		pr.lower, pr.hasLower = lowerUnicode(s), true
	}
	return pr.lower == lower
}

// unset is a property that is not set, read by the filters of groups that have no
// properties. It is never written.
var unset property

// bag holds the properties of one person or group that the definitions read, each at
// the index the plan gave its key. It only lives for one evaluation: its strings may
// alias the request.
type bag []property

// fillObject sets the members of obj, a JSON object (stored properties), whose keys
// have an index; a later member wins over an earlier one with the same key.
func (b bag) fillObject(obj string, index map[string]int) {
	if obj == "" {
		return
	}
	jsontext.Members(jsontext.StringToBytes(obj), func(key, raw []byte) {
		if i, ok := index[jsontext.String(key)]; ok {
			b[i] = property{v: rawValue(raw), set: true}
		}
	})
}

// fillMap sets the members of m (request properties) whose keys have an index.
func (b bag) fillMap(m map[string]any, index map[string]int) {
	if len(m) == 0 {
		return
	}
	// Iterate over the smaller of the two.
	if len(m) <= len(index) {
		for k, x := range m {
			if i, ok := index[k]; ok {
				b[i] = property{v: anyValue(x), set: true}
			}
		}
		return
	}
	for k, i := range index {
		if x, ok := m[k]; ok {
			b[i] = property{v: anyValue(x), set: true}
		}
	}
}

// personBag is the person's properties: the stored ones and distinct_id, then the
// request's, which win, then each missing $initial_<p> filled from <p>.
func (e *evaluator) personBag() bag {
	if e.personReady {
		return e.person
	}
	e.personReady = true
	p, r := e.plan, e.req
	b := e.person
	b.fillObject(r.PersonProperties, p.personKeys)
	if p.distinctIDKey >= 0 {
		b[p.distinctIDKey] = property{v: stringValue(r.DistinctID), set: true}
	}
	b.fillMap(r.PersonPropertyOverrides, p.personKeys)
	for _, pair := range p.initialPairs {
		if !b[pair.initial].set && b[pair.source].set {
			b[pair.initial] = b[pair.source]
		}
	}
	return b
}

// groupBag is the properties of the caller's group of the type at index: the stored
// ones, then the request's, which win, then $group_key, the group's key. A type the
// project does not have has none.
func (e *evaluator) groupBag(index int) bag {
	if index < 0 || index >= len(e.groups) {
		return nil
	}
	if e.groupReady[index] {
		return e.groups[index]
	}
	e.groupReady[index] = true
	p, r := e.plan, e.req
	if len(e.groups[index]) != len(p.groupKeys) {
		e.groups[index] = make(bag, len(p.groupKeys))
	}
	b := e.groups[index]
	name := r.GroupTypes[index]
	if name == "" {
		return b
	}
	b.fillObject(r.GroupProperties[name], p.groupKeys)
	b.fillMap(r.GroupPropertyOverrides[name], p.groupKeys)
	if key, ok := r.Groups[name]; ok && p.groupKeyKey >= 0 {
		b[p.groupKeyKey] = property{v: stringValue(key), set: true}
	}
	return b
}
