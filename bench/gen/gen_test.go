package gen

import (
	"encoding/json"
	"testing"
	"time"
)

// The events keep the shape the package promises: posthog-js-like, 20-40 properties,
// 700-900 bytes on average, every one valid JSON with a distinct_id and the token.
func TestEventShape(t *testing.T) {
	g := New(Config{Seed: 1, PersonlessShare: 0.3})
	const n = 5000
	total := 0
	names := map[string]int{}
	for range n {
		e := g.Event(nil, "phc_test", time.Now())
		var m struct {
			Event      string         `json:"event"`
			UUID       string         `json:"uuid"`
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(e, &m); err != nil {
			t.Fatalf("%v: %s", err, e)
		}
		if p := len(m.Properties); p < 20 || p > 40 {
			t.Fatalf("%d properties: %s", p, e)
		}
		if m.Properties["distinct_id"] == "" || m.Properties["token"] != "phc_test" || m.UUID == "" {
			t.Fatalf("event without distinct_id, token or uuid: %s", e)
		}
		names[m.Event]++
		total += len(e)
	}
	if avg := total / n; avg < 700 || avg > 900 {
		t.Fatalf("average event size %d bytes, want 700-900", avg)
	}
	for _, name := range []string{"$pageview", "$identify", "$create_alias", "$groupidentify", "$autocapture"} {
		if names[name] == 0 {
			t.Fatalf("no %s events in %d: %v", name, n, names)
		}
	}
	var batch struct {
		APIKey string            `json:"api_key"`
		Batch  []json.RawMessage `json:"batch"`
	}
	if err := json.Unmarshal(g.Batch(nil, "phc_test", 1000, time.Now()), &batch); err != nil || len(batch.Batch) != 1000 || batch.APIKey != "phc_test" {
		t.Fatalf("batch of %d events, api_key %q: %v", len(batch.Batch), batch.APIKey, err)
	}
	var single map[string]any
	if err := json.Unmarshal(g.Single(nil, "phc_test", time.Now()), &single); err != nil || single["api_key"] != "phc_test" || single["event"] == "" {
		t.Fatalf("single event %v: %v", single, err)
	}
}
