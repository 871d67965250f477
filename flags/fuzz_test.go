package flags

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/flags/flagcases"
)

// FuzzMatch gives the operators any operator name, any filter value and any property
// (JSON; "" for an absent property), stored or from the request: nothing may panic,
// and both paths must agree.
func FuzzMatch(f *testing.F) {
	for _, c := range flagcases.Operators(f) {
		f.Add(c.Operator, string(c.Value), string(c.Property))
	}
	f.Add("regex", `"(a|aa)*$"`, `"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"`)
	f.Add("is_date_exact", `"2024-10-27 02:30"`, `"-0m"`)
	f.Add("semver_wildcard", `">=1.2.3-alpha, <1.2.3, ~1, ^0.0"`, `"1.2.3-beta+x"`)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		f.Fatalf("cannot load a time zone: %v", err)
	}
	mc := matchContext{now: time.Date(2024, 3, 31, 1, 30, 0, 0, time.UTC), loc: paris}
	f.Fuzz(func(t *testing.T, op, filterJSON, propertyJSON string) {
		if !json.Valid([]byte(filterJSON)) || (propertyJSON != "" && !json.Valid([]byte(propertyJSON))) {
			return // the definitions and the request are valid JSON
		}
		o := filterOperator(&PropertyFilter{Operator: op})
		fv := compileValue(o, []byte(filterJSON))
		present := propertyJSON != ""
		var stored, sent value
		if present {
			stored = rawValue([]byte(propertyJSON))
			sent = anyValue(flagcases.Decode(t, []byte(propertyJSON)))
		}
		a := matchValue(o, &fv, &property{v: stored, set: present}, &mc)
		b := matchValue(o, &fv, &property{v: sent, set: present}, &mc)
		if a != b && o != opRegex && o != opNotRegex { // a regex may time out on one path only
			t.Fatalf("%s %s against %s: stored %v, sent %v", op, filterJSON, propertyJSON, a, b)
		}
	})
}
