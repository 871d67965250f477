package flags

import (
	"strconv"
	"testing"
)

func TestHash(t *testing.T) {
	f := func(prefix, id, salt string, want float64) {
		t.Helper()
		if got := hash(prefix, id, salt); got != want {
			t.Fatalf("hash(%q, %q, %q) = %v, want %v", prefix, id, salt, got, want)
		}
	}
	f("holdout-", "some_distinct_id", "", 0.7270002403585725)

	// A flag's empty identifier hashes to 0; a holdout's is hashed.
	if got := flagHash("simple-flag.", "", ""); got != 0 {
		t.Fatalf("flagHash of an empty identifier = %v, want 0", got)
	}
	if got := hash("holdout-", "", ""); got == 0 {
		t.Fatalf("hash of an empty holdout identifier = 0")
	}
}

// simpleFlagResults are PostHog's answers for distinct_id_0 … distinct_id_99 on
// "simple-flag", one condition with no properties and a rollout of 45%: T on, F off
// (posthog's test_simple_flag_consistency, shared by the libraries that evaluate flags).
const simpleFlagResults = "FTTFTFFTFT" + "FTTFTFFFTT" + "FTFFTFTTFF" + "FTTTTFFFFF" + "FTTFTTFFFT" +
	"TFFFFTFTFT" + "FTTFTFTFTT" + "FFTFFTFTFF" + "TFFFTTFTTF" + "TTTTTFTTFF"

// multivariateFlagResults are PostHog's answers for distinct_id_0 … distinct_id_59 on
// "multivariate-flag", rollout 55%, variants first 50%, second 20%, third 20%, fourth
// 5%, fifth 5%: the digit of the variant, 0 off (test_multivariate_flag_consistency).
const multivariateFlagResults = "2210021000" + "1301210041" + "0300011111" + "1303210300" + "1201120100" +
	"1112102232"

func TestConsistencyWithPostHog(t *testing.T) {
	fifty := 50.0
	rollout := func(p float64) *float64 { return &p }
	simple := &Flag{ID: 1, Key: "simple-flag", Active: true, Filters: Filters{
		Groups: []Condition{{RolloutPercentage: rollout(45)}},
	}}
	variants := []Variant{
		{Key: "first-variant", RolloutPercentage: fifty},
		{Key: "second-variant", RolloutPercentage: 20},
		{Key: "third-variant", RolloutPercentage: 20},
		{Key: "fourth-variant", RolloutPercentage: 5},
		{Key: "fifth-variant", RolloutPercentage: 5},
	}
	multi := &Flag{ID: 2, Key: "multivariate-flag", Active: true, Filters: Filters{
		Groups:       []Condition{{RolloutPercentage: rollout(55)}},
		Multivariate: &Multivariate{Variants: variants},
	}}
	d := &Definitions{Flags: []*Flag{multi, simple}}
	for i := range len(simpleFlagResults) {
		id := "distinct_id_" + strconv.Itoa(i)
		results, _ := Evaluate(d, &Request{DistinctID: id})
		got := map[string]Result{}
		for _, r := range results {
			got[r.Key] = r
		}
		s := got["simple-flag"]
		wantOn := simpleFlagResults[i] == 'T'
		wantCode := ReasonConditionMatch
		if !wantOn {
			wantCode = ReasonOutOfRollout
		}
		if s.Enabled != wantOn || s.Reason.Code != wantCode || *s.Reason.ConditionIndex != 0 {
			t.Fatalf("simple-flag for %s: enabled %v (%s), want %v (%s)", id, s.Enabled, s.Reason.Code, wantOn, wantCode)
		}
		if i >= len(multivariateFlagResults) {
			continue
		}
		m := got["multivariate-flag"]
		wantVariant := ""
		if c := multivariateFlagResults[i]; c != '0' {
			wantVariant = variants[c-'1'].Key
		}
		if m.Variant != wantVariant || m.Enabled != (wantVariant != "") {
			t.Fatalf("multivariate-flag for %s: %v %q, want %q", id, m.Enabled, m.Variant, wantVariant)
		}
	}
}
