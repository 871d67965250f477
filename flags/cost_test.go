package flags

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The cost of one evaluation is bounded whatever the caller sends: the search operators
// read the first 8 KiB of a property, each property's text is lowercased once however
// many filters and values read it, and past the request's deadline the flags not yet
// decided answer a timeout.

// personFlag is an active flag on one person property.
func personFlag(id int64, key, operator string, value any) *Flag {
	raw, _ := json.Marshal(value)
	return &Flag{ID: id, Key: key, Active: true, Filters: Filters{Groups: []Condition{{
		Properties: []PropertyFilter{{Key: "prop", Type: FilterPerson, Operator: operator, Value: raw}},
	}}}}
}

// evaluateText evaluates d for a person whose "prop" is text and returns the answers by
// key.
func evaluateText(t *testing.T, d *Definitions, text string, deadline time.Time) (map[string]Result, bool) {
	t.Helper()
	results, failed := Evaluate(d, &Request{DistinctID: "user", PersonPropertyOverrides: map[string]any{"prop": text}, Deadline: deadline})
	byKey := map[string]Result{}
	for _, r := range results {
		byKey[r.Key] = r
	}
	return byKey, failed
}

// TestSearchText: the red team's request, a 1.9 MB property against a 1,000-value
// icontains_multi, is searched in its first 8 KiB: a value found there matches, one
// found only past it does not (and not_icontains_multi, icontains and regex read the
// same).
func TestSearchText(t *testing.T) {
	values := make([]string, 1000)
	for i := range values {
		values[i] = fmt.Sprintf("needle-%04d", i)
	}
	d := &Definitions{Flags: []*Flag{
		personFlag(1, "contains", "icontains", "NEEDLE-0999"),
		personFlag(2, "contains-multi", "icontains_multi", values),
		personFlag(3, "not-contains-multi", "not_icontains_multi", values),
		personFlag(4, "regex", "regex", `(?i)needle-\d{4}`),
	}}
	filler := strings.Repeat("ab", 950_000) // 1.9 MB
	at := func(offset int) string { return filler[:offset] + "Needle-0999" + filler[offset:] }
	f := func(name, text, want string) {
		t.Helper()
		got, failed := evaluateText(t, d, text, time.Time{})
		var on []string
		for _, key := range []string{"contains", "contains-multi", "not-contains-multi", "regex"} {
			if got[key].Enabled {
				on = append(on, key)
			}
		}
		if failed || strings.Join(on, " ") != want {
			t.Fatalf("%s: enabled %q (failed %v), want %q", name, on, failed, want)
		}
	}
	f("at the start", at(0), "contains contains-multi regex")
	f("ending at 8 KiB", at(8<<10-len("Needle-0999")), "contains contains-multi regex")
	f("across 8 KiB", at(8<<10-5), "not-contains-multi")
	f("past 8 KiB", at(1_000_000), "not-contains-multi")
	// The text is cut at a character, not inside one.
	f("past 8 KiB, multibyte", strings.Repeat("é", 4<<10)+"needle-0999", "not-contains-multi")
}

// TestTextLoweredOnce: an exact list of 1,000 values against a long text that is not
// ASCII lowercases the text once, not once per value.
func TestTextLoweredOnce(t *testing.T) {
	values := make([]string, 1000)
	for i := range values {
		values[i] = fmt.Sprintf("VALEUR-%04d-É", i)
	}
	d := &Definitions{Flags: []*Flag{personFlag(1, "exact", "exact", values)}}
	text := strings.Repeat("Été ", 16_000)
	r := &Request{DistinctID: "user", PersonPropertyOverrides: map[string]any{"prop": text}}
	Evaluate(d, r) // prepares the definitions
	allocs := testing.AllocsPerRun(5, func() {
		if results, _ := Evaluate(d, r); results[0].Enabled {
			t.Fatal("matched")
		}
	})
	if allocs > 10 {
		t.Fatalf("%v allocations per evaluation: the text is lowercased per value", allocs)
	}
}

// TestEvaluationDeadline: past the deadline the flags not yet decided answer failed
// with the reason timeout, and the answer holds those decided before.
func TestEvaluationDeadline(t *testing.T) {
	// The red team's flag: 2,000 conditions of a pattern that backtracks without end
	// on the value (each match stops after 20 ms); 40 s of matching without a
	// deadline.
	slow := &Flag{ID: 2, Key: "b-slow", Active: true}
	for range 2000 {
		slow.Filters.Groups = append(slow.Filters.Groups, Condition{Properties: []PropertyFilter{
			{Key: "prop", Type: FilterPerson, Operator: "regex", Value: json.RawMessage(`"(?=^(a+)+$)"`)},
		}})
	}
	d := &Definitions{Flags: []*Flag{
		personFlag(1, "a-before", "icontains", "a"),
		slow,
		personFlag(3, "c-after", "icontains", "a"),
	}}
	text := strings.Repeat("a", 40) + "!"
	timedOut := func(r Result) bool {
		return r.Failed && !r.Enabled && r.Reason.Code == "timeout" && r.Reason.Description == "Flag evaluation timed out" &&
			r.Reason.ConditionIndex == nil
	}

	// A deadline far shorter than the slow flag's 40 s, yet long enough for the first
	// flag on a loaded machine (50 ms once passed before it under make test's load).
	got, failed := evaluateText(t, d, text, time.Now().Add(2*time.Second))
	if !failed || !got["a-before"].Enabled || got["a-before"].Failed || !timedOut(got["b-slow"]) || !timedOut(got["c-after"]) {
		t.Fatalf("with a deadline: failed %v, %+v", failed, got)
	}

	got, failed = evaluateText(t, d, text, time.Now().Add(-time.Millisecond))
	if !failed || len(got) != 3 || !timedOut(got["a-before"]) || !timedOut(got["b-slow"]) || !timedOut(got["c-after"]) {
		t.Fatalf("past the deadline: failed %v, %+v", failed, got)
	}
}
