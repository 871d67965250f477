package edge_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hedge-analytics/hedge/edge"
)

// What one anonymous /flags/ request can cost a project is bounded: the payloads its
// answer carries, the time its evaluation takes, and how many of the project's
// evaluations run at once.

// slowFlag is the filters of a flag of 100 condition sets (the most a flag has), each a
// pattern that backtracks without end on a value of a's and a "!": each match stops
// after 20 ms, 2 s for the flag.
func slowFlag() string {
	condition := `{"properties":[{"key":"prop","type":"person","operator":"regex","value":"(?=^(a+)+$)"}]}`
	return `{"groups":[` + strings.TrimSuffix(strings.Repeat(condition+",", 100), ",") + `]}`
}

const backtracks = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"

// TestFlagsEvaluationDeadline: an evaluation stops at its deadline; the flags it did not
// decide answer failed with the reason timeout, the answer holds those it decided, and
// errorsWhileComputingFlags, which SDKs read as "keep what you had".
func TestFlagsEvaluationDeadline(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	env.createFlag(t, p.id, "a-quick", everyone)
	for _, key := range []string{"b-slow", "c-slow", "d-slow"} { // 6 s of matching in all
		env.createFlag(t, p.id, key, slowFlag())
	}
	got := env.flagsFor(t, "", map[string]any{"token": p.token, "distinct_id": "u", "person_properties": map[string]any{"prop": backtracks}}, nil)
	if !got.Errors || !got.Flags["a-quick"].Enabled || got.Flags["a-quick"].Failed {
		t.Fatalf("answered %s", got.summary())
	}
	// The first slow flag needs 2 s, past the 500 ms of the deadline; the others are
	// not started.
	for _, key := range []string{"b-slow", "c-slow", "d-slow"} {
		if d := got.Flags[key]; !d.Failed || d.Enabled || d.Reason.Code != "timeout" || d.Reason.Description != "Flag evaluation timed out" {
			t.Fatalf("%s answered %+v", key, d)
		}
	}
}

// TestFlagsProjectEvaluations: a project's evaluations run at most FlagEvaluations at
// once; a request that finds none free answers 429 as PostHog's flags service does
// when it limits a project, and other projects are not held up.
func TestFlagsProjectEvaluations(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{FlagEvaluations: 1})
	busy, other := env.newProject(t, ""), env.newProject(t, "")
	env.createFlag(t, busy.id, "slow", slowFlag())
	env.createFlag(t, other.id, "quick", everyone)
	body := func(token string) []byte {
		return fmt.Appendf(nil, `{"token":%q,"distinct_id":"u","person_properties":{"prop":%q}}`, token, backtracks)
	}
	answers := make([]answer, 6) // five to the busy project, the last to the other
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			token := busy.token
			if i == len(answers)-1 {
				token = other.token
			}
			a, err := env.do("POST", "/flags/?v=2", body(token), nil)
			if err != nil {
				a.body = err.Error()
			}
			answers[i] = a
		})
	}
	wg.Wait()
	limited, evaluated := 0, 0
	for _, a := range answers[:len(answers)-1] {
		switch {
		case a.status == 429:
			if want := `{"type":"validation_error","code":"rate_limit_exceeded","detail":"Rate limit exceeded","attr":null}`; a.body != want {
				t.Fatalf("429 %s, want %s", a.body, want)
			}
			limited++
		case a.status == 200 && strings.Contains(a.body, `"code":"timeout"`):
			evaluated++
		default:
			t.Fatalf("the busy project answered %d %s", a.status, a.body)
		}
	}
	// The slot is held for the evaluation's 500 ms; a request waits 100 ms for it.
	if evaluated < 1 || limited < 1 {
		t.Fatalf("of 5 requests at once, %d were evaluated and %d limited", evaluated, limited)
	}
	if got := decodeFlags(t, answers[len(answers)-1]).summary(); got != "quick=true" {
		t.Fatalf("the other project answered %q", got)
	}
}

// TestFlagsAnswerPayloads: the payloads an answer carries are bounded by a project's
// total (2 MB), which the flags API keeps; flags stored past it before it existed
// answer without the payloads past the bound, and errorsWhileComputingFlags, and the
// project can still list and delete them.
func TestFlagsAnswerPayloads(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	keys := []string{"a", "b", "c"}
	ids := map[string]int64{}
	for _, key := range keys {
		ids[key] = env.createFlag(t, p.id, key, everyone).ID
	}
	// 1.5 MB payloads each, written as a project stored them before the bound: 4.5 MB.
	for _, key := range keys {
		filters := fmt.Sprintf(`{"groups":[{"properties":[],"rollout_percentage":100}],"payloads":{"true":%q}}`,
			`"`+strings.Repeat(key, 1_500_000)+`"`)
		if _, err := env.warehouse.DB().Exec(`UPDATE meta.feature_flags SET filters = ? WHERE id = ?`, filters, ids[key]); err != nil {
			t.Fatal(err)
		}
	}
	a := env.send(t, "POST", "/flags/?v=2", fmt.Appendf(nil, `{"token":%q,"distinct_id":"u"}`, p.token), nil)
	got := decodeFlags(t, a)
	if len(a.body) > 2<<20+10_000 || !got.Errors || got.summary() != "a=true b=true c=true errors" {
		t.Fatalf("answered %d bytes: %s", len(a.body), got.summary())
	}
	if payload := got.Flags["a"].Metadata.Payload; payload == nil || len(*payload) != 1_500_002 {
		t.Fatalf("the first flag's payload is left out")
	}
	if got.Flags["b"].Metadata.Payload != nil || got.Flags["c"].Metadata.Payload != nil {
		t.Fatal("the answer carries payloads past the bound")
	}

	list := env.manage(t, "GET", fmt.Sprintf("/api/projects/%d/feature_flags/", p.id), nil)
	var page struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal([]byte(list.body), &page); list.status != 200 || page.Count != 3 {
		t.Fatalf("listing: %d %.300s (%v)", list.status, list.body, err)
	}
	for _, key := range keys {
		if a := env.manage(t, "PATCH", fmt.Sprintf("/api/projects/%d/feature_flags/%d/", p.id, ids[key]), map[string]any{"deleted": true}); a.status != 200 {
			t.Fatalf("deleting %s: %d %.300s", key, a.status, a.body)
		}
	}
}
