package flags

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/flags/flagcases"
)

// TestOperatorCases runs the operator table of the contract (package flagcases) against
// Evaluate; the edge's tests run it against /flags/.
func TestOperatorCases(t *testing.T) {
	for _, c := range flagcases.Operators(t) {
		t.Run(c.Name, func(t *testing.T) {
			flag := &Flag{ID: 1, Key: "operator-case", Active: true, Filters: Filters{Groups: []Condition{{
				Properties: []PropertyFilter{{Key: "prop", Type: FilterPerson, Operator: c.Operator, Value: c.Value}},
			}}}}
			r := &Request{DistinctID: "user", Now: c.Instant(), Location: c.Location()}
			if c.Property != nil {
				r.PersonPropertyOverrides = map[string]any{"prop": flagcases.Decode(t, c.Property)}
			}
			results, failed := Evaluate(&Definitions{Flags: []*Flag{flag}}, r)
			if failed || len(results) != 1 {
				t.Fatalf("Evaluate = %+v, failed %v", results, failed)
			}
			got := results[0]
			wantCode := ReasonNoConditionMatch
			if c.Want {
				wantCode = ReasonConditionMatch
			}
			if got.Enabled != c.Want || got.Reason.Code != wantCode || *got.Reason.ConditionIndex != 0 {
				t.Fatalf("%s %s against %s: enabled %v (%s), want %v", c.Operator, c.Value, c.Property, got.Enabled, got.Reason.Code, c.Want)
			}
		})
	}
}

// The stored properties go through another path than the request's: the same cases
// against them.
func TestOperatorCasesOnStoredProperties(t *testing.T) {
	for _, c := range flagcases.Operators(t) {
		if c.Property == nil {
			continue
		}
		op := filterOperator(&PropertyFilter{Operator: c.Operator})
		fv := compileValue(op, c.Value)
		v := rawValue(bytes.TrimSpace(c.Property))
		mc := matchContext{now: time.Now(), loc: time.UTC}
		if c.Now != "" {
			mc.now = c.Instant()
		}
		if c.Timezone != "" {
			mc.loc = c.Location()
		}
		if got := matchValue(op, &fv, &property{v: v, set: true}, &mc); got != c.Want {
			t.Errorf("%s: %s %s against stored %s = %v, want %v", c.Name, c.Operator, c.Value, c.Property, got, c.Want)
		}
	}
}

func TestNumberText(t *testing.T) {
	f := func(raw, want string) {
		t.Helper()
		if got := rawValue([]byte(raw)); got.kind != kindNumber || got.text() != want {
			t.Fatalf("text of %s = %q (kind %d), want %q", raw, got.text(), got.kind, want)
		}
		if got := anyValue(json.Number(raw)); got.text() != want {
			t.Fatalf("text of json.Number(%s) = %q, want %q", raw, got.text(), want)
		}
	}
	f("5", "5")
	f("-5", "-5")
	f("0", "0")
	f("-0", "0")
	f("5.0", "5.0")
	f("5.50", "5.5")
	f("5.5", "5.5")
	f("-0.0", "-0.0")
	f("1e3", "1000.0")
	f("1E3", "1000.0")
	f("0.001", "0.001")
	f("0.00001", "0.00001")
	f("0.000001", "1e-6")
	f("1.5e-7", "1.5e-7")
	f("1e15", "1000000000000000.0")
	f("1e16", "1e16")
	f("1.2345e16", "1.2345e16")
	f("123456789012345678", "123456789012345678")
	f("9223372036854775807", "9223372036854775807")
	f("18446744073709551615", "18446744073709551615")
	f("18446744073709551616", "1.8446744073709552e19")
	f("0.1", "0.1")
	f("100", "100")
}

func TestFloatText(t *testing.T) {
	f := func(x float64, want string) {
		t.Helper()
		if v := anyValue(x); v.text() != want {
			got := v.text()
			t.Fatalf("text of float64 %v = %q, want %q", x, got, want)
		}
	}
	f(5, "5.0")
	f(0.5, "0.5")
	f(1e21, "1e21")
	f(-2.5e-10, "-2.5e-10")
	f(math.Inf(1), "null")
}

func TestValueText(t *testing.T) {
	f := func(raw, want string) {
		t.Helper()
		if got := rawValue([]byte(raw)); got.text() != want {
			t.Fatalf("text of %s = %q, want %q", raw, got.text(), want)
		}
	}
	f(`"a\"b"`, `a"b`)
	f(`null`, "null")
	f(`true`, "true")
	f(`false`, "false")
	f(`[1, "a", null, 2.0]`, `[1,"a",null,2.0]`)
	f(`{"b": 1, "a": [true]}`, `{"a":[true],"b":1}`)
	f(`["\u0001\n<é>"]`, `["\u0001\n<é>"]`)
}

func TestLowerUnicode(t *testing.T) {
	f := func(s, want string) {
		t.Helper()
		if got := lowerUnicode(s); got != want {
			t.Fatalf("lowerUnicode(%q) = %q, want %q", s, got, want)
		}
		if pr := (&property{v: stringValue(s), set: true}); !pr.equalLower(want) {
			t.Fatalf("equalLower(%q, %q) = false", s, want)
		}
	}
	f("ABC def", "abc def")
	f("ÉCOLE", "école")
	f("Straße", "straße")
	f("STRASSE", "strasse")
	f("İ", "i\u0307")
	f("ΟΔΟΣ", "οδος")
	f("ΟΔΟΣ ΣΑ", "οδος σα")
	f("Σ", "σ")
	f("K", "k") // the Kelvin sign
}

func TestTranslatePattern(t *testing.T) {
	f := func(pattern, want string) {
		t.Helper()
		if got := translatePattern(pattern); got != want {
			t.Fatalf("translatePattern(%q) = %q, want %q", pattern, got, want)
		}
	}
	f(`^abc`, `^abc`)
	f(`abc$`, `abc\z`)
	f(`a\$b`, `a\$b`)
	f(`[$]`, `[$]`)
	f(`[]$]$`, `[]$]\z`)
	f(`[^]$]`, `[^]$]`)
	f(`(?m)^a$`, `(?m)^a$`)
	f(`(?i-m)a$`, `(?i-m)a\z`)
	f(`(?P<x>a)(?P=x)`, `(?<x>a)\k<x>`)
}

func TestRegexTimeout(t *testing.T) {
	// Catastrophic backtracking, in a look-ahead that only the backtracking engine
	// takes: the match stops, and neither operator matches.
	value := []byte(`"(?=^(a+)+$)"`)
	v := stringValue(strings.Repeat("a", 40) + "!")
	mc := matchContext{now: time.Now(), loc: time.UTC}
	for _, op := range []operator{opRegex, opNotRegex} {
		fv := compileValue(op, value)
		if fv.re == nil || fv.re.backtracking == nil {
			t.Fatal("a look-ahead is not on the backtracking engine")
		}
		start := time.Now()
		if matchValue(op, &fv, &property{v: v, set: true}, &mc) {
			t.Fatalf("operator %d matched a pattern that timed out", op)
		}
		if elapsed := time.Since(start); elapsed > 500*time.Millisecond {
			t.Fatalf("the match took %v", elapsed)
		}
	}
}

// A pattern Go's linear-time engine takes runs there, with Python's Unicode \d, \w
// and \s, and answers even on a value that makes a backtracking engine run for ever;
// the rest goes to the backtracking engine.
func TestCompileRegex(t *testing.T) {
	f := func(source string, linear bool, matches, misses string) {
		t.Helper()
		p := compileRegex(source)
		if p == nil || (p.linear != nil) != linear {
			t.Fatalf("%q: compiled %+v, want linear %v", source, p, linear)
		}
		if m, ok := p.match(matches); !m || !ok {
			t.Fatalf("%q does not match %q", source, matches)
		}
		if m, ok := p.match(misses); m || !ok {
			t.Fatalf("%q matches %q", source, misses)
		}
	}
	f(`^user[0-9]*[13579]@(acme|example)\.com$`, true, "user121@acme.com", "user121@acme.com\n")
	f(`^(a+)+$`, true, strings.Repeat("a", 40), strings.Repeat("a", 40)+"!")
	f(`^\d+$`, true, "١٢٣", "12a")                         // Arabic-Indic digits are digits
	f(`^\w+\s\w+$`, true, "café\u00a0crème", "café-crème") // and accented letters word characters, no-break space a space
	f(`^[\w-]+$`, true, "é-e", "é e")
	f(`^\D+$`, true, "abc", "a٣")
	f(`^[^\d]+$`, true, "abc", "a1")
	f(`(?P<x>a)-(?P=x)`, false, "a-a", "a-b")  // back-reference
	f(`foo(?!bar)`, false, "foobaz", "foobar") // look-ahead
	f(`\bcat\b`, false, "a cat", "concat")     // Unicode word boundary
	f(`^[\S]+$`, false, "abc", "a b")          // a negated class inside a class
	if compileRegex(`(unclosed`) != nil {
		t.Fatal("an invalid pattern compiled")
	}
}

func TestParseDateSpec(t *testing.T) {
	now := time.Date(2024, 3, 31, 12, 0, 0, 0, time.UTC)
	mc := matchContext{now: now, loc: time.UTC}
	f := func(s string, want time.Time) {
		t.Helper()
		spec, ok := parseDateSpec(s)
		if !ok {
			t.Fatalf("parseDateSpec(%q) failed", s)
		}
		got, ok := spec.instant(&mc)
		if !ok || !got.Equal(want) {
			t.Fatalf("parseDateSpec(%q) = %v (%v), want %v", s, got, ok, want)
		}
	}
	utc := func(y int, m time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, m, d, h, mi, s, ns, time.UTC)
	}
	f("-3d", utc(2024, 3, 28, 12, 0, 0, 0))
	f("3d", utc(2024, 3, 28, 12, 0, 0, 0))
	f("000h", now)
	f("-1m", utc(2024, 2, 29, 12, 0, 0, 0))
	f("-12m", utc(2023, 3, 29, 12, 0, 0, 0)) // one month at a time: through February 29
	f("-1y", utc(2023, 3, 31, 12, 0, 0, 0))
	f("2024-06-01T10:00:00Z", utc(2024, 6, 1, 10, 0, 0, 0))
	f("2024-06-01t10:00:00z", utc(2024, 6, 1, 10, 0, 0, 0))
	f("2024-06-01 10:00:00.5+02:00", utc(2024, 6, 1, 8, 0, 0, 500_000_000))
	f("2024-06-01", utc(2024, 6, 1, 0, 0, 0, 0))
	f("2024-6-1", utc(2024, 6, 1, 0, 0, 0, 0))
	f("2024-06-01T10:30", utc(2024, 6, 1, 10, 30, 0, 0))
	f("2024-06-01 10:30:15.123456789", utc(2024, 6, 1, 10, 30, 15, 123456789))
	f("1620021848429", time.UnixMilli(1620021848429).UTC())
	f("2 Jun 2021 06:31:39 -0700", utc(2021, 6, 2, 13, 31, 39, 0))
	f("2021-05-02 23:31:36 +0200", utc(2021, 5, 2, 21, 31, 36, 0))
	f("2021-05-02 23:31:36 UTC", utc(2021, 5, 2, 23, 31, 36, 0))

	bad := func(s string) {
		t.Helper()
		if _, ok := parseDateSpec(s); ok {
			t.Fatalf("parseDateSpec(%q) succeeded", s)
		}
	}
	bad("")
	bad("1x")
	bad("1.2y")
	bad("10000d")
	bad("99999999999999999999d")
	bad("2024-02-30")
	bad("2024-13-01")
	bad("2024-06-01T25:00")
	bad("2024-06-01T10:00:00+25:00")
	bad("bazinga")
	bad("12345")
	bad("2024-06-01 ")
}

func TestParseVersion(t *testing.T) {
	f := func(s, want string) {
		t.Helper()
		v, ok := parseVersionText(s)
		if want == "" {
			if ok {
				t.Fatalf("parseVersionText(%q) = %+v, want none", s, v)
			}
			return
		}
		w, _ := parseStrictVersion(want)
		if !ok || v.compare(&w) != 0 || v.build != w.build {
			t.Fatalf("parseVersionText(%q) = %+v (%v), want %s", s, v, ok, want)
		}
	}
	f("1.2.3", "1.2.3")
	f("v1.2.3", "1.2.3")
	f("3.10", "3.10.0")
	f("3.08", "3.8.0")
	f("0", "0.0.0")
	f("1.2.3-alpha.1+build.007", "1.2.3-alpha.1+build.007")
	f("1.2-beta", "1.2.0-beta")
	f("1.2.3.4", "")
	f("V1.2.3", "")
	f("1.2.3-01", "")
	f("1.2.3-", "")
	f("1..3", "")
	f("a.b.c", "")
	f("", "")
	f("18446744073709551616.0.0", "")
}

func TestVersionOrder(t *testing.T) {
	// Each version is lower than the next.
	versions := []string{
		"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.0+build", "1.0.1", "1.1.0", "2.0.0",
	}
	for i := 1; i < len(versions); i++ {
		a, _ := parseStrictVersion(versions[i-1])
		b, _ := parseStrictVersion(versions[i])
		if a.compare(&b) >= 0 || b.compare(&a) <= 0 {
			t.Fatalf("%s is not lower than %s", versions[i-1], versions[i])
		}
	}
}

func TestParseFloatText(t *testing.T) {
	f := func(s string, want float64, wantOK bool) {
		t.Helper()
		got, ok := parseFloatText(s)
		if ok != wantOK || (ok && got != want && !(math.IsNaN(got) && math.IsNaN(want))) {
			t.Fatalf("parseFloatText(%q) = %v, %v; want %v, %v", s, got, ok, want, wantOK)
		}
	}
	f("5", 5, true)
	f("+5", 5, true)
	f("-2.5", -2.5, true)
	f("1.", 1, true)
	f(".5", 0.5, true)
	f("1e3", 1000, true)
	f("1E-3", 0.001, true)
	f("1e400", math.Inf(1), true)
	f("-inf", math.Inf(-1), true)
	f("Infinity", math.Inf(1), true)
	f("NaN", math.NaN(), true)
	f("", 0, false)
	f(".", 0, false)
	f("e5", 0, false)
	f("1e", 0, false)
	f(" 1", 0, false)
	f("1_000", 0, false)
	f("0x10", 0, false)
	f("0x1p4", 0, false)
	f("2024-01-01", 0, false)
	f("infinite", 0, false)
}

func TestSemverRange(t *testing.T) {
	f := func(op operator, filter, version string, want bool) {
		t.Helper()
		r, ok := parseSemverRange(op, filter)
		if !ok {
			t.Fatalf("range %q did not parse", filter)
		}
		v, ok := parseVersionText(version)
		if !ok {
			t.Fatalf("version %q did not parse", version)
		}
		if got := r.matches(&v); got != want {
			t.Fatalf("%q matches %q = %v, want %v", filter, version, got, want)
		}
	}
	f(opSemverWildcard, ">1.2", "1.3.0", true)
	f(opSemverWildcard, ">1.2", "1.2.9", false)
	f(opSemverWildcard, "<1.2", "1.1.9", true)
	f(opSemverWildcard, "<=1.2", "1.2.9", true)
	f(opSemverWildcard, ">=1.2.3-beta", "1.2.3-rc.1", true)
	f(opSemverWildcard, ">=1.2.3-beta", "1.2.4-rc.1", false)
	f(opSemverWildcard, "=1.2.3", "1.2.3", true)
	f(opSemverWildcard, "~1", "1.9.0", true)
	f(opSemverWildcard, "^0.0", "0.0.9", true)
	f(opSemverWildcard, "^0.0", "0.1.0", false)
	f(opSemverWildcard, "1.x", "1.0.0", true)
	f(opSemverWildcard, "X", "0.0.1", true)
	f(opSemverWildcard, "*", "1.0.0-alpha", false)
	f(opSemverCaret, "0", "0.0.0", true)
	f(opSemverCaret, "0", "0.0.1", false)
	f(opSemverTilde, "v1.2.3-beta", "1.2.3-beta.2", true)

	bad := func(op operator, filter string) {
		t.Helper()
		if _, ok := parseSemverRange(op, filter); ok {
			t.Fatalf("range %q parsed", filter)
		}
	}
	bad(opSemverWildcard, "")
	bad(opSemverWildcard, "1.*.3")
	bad(opSemverWildcard, "1.2.3.4")
	bad(opSemverWildcard, ">=*")
	bad(opSemverWildcard, "1.2-beta")
	bad(opSemverWildcard, "1.2.3,")
	bad(opSemverTilde, "1.x")
	bad(opSemverCaret, "abc")
}
