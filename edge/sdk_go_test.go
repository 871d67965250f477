package edge_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/posthog/posthog-go"

	"github.com/hedge-analytics/hedge/edge"
)

// deliveries records what posthog-go reports about each message.
type deliveries struct {
	mu       sync.Mutex
	failures []error
	sent     int
}

func (d *deliveries) Success(posthog.APIMessage) { d.mu.Lock(); d.sent++; d.mu.Unlock() }
func (d *deliveries) Failure(_ posthog.APIMessage, err error) {
	d.mu.Lock()
	d.failures = append(d.failures, err)
	d.mu.Unlock()
}

// TestPostHogGoClient drives the real posthog-go client against the capture listener:
// every kind of event it sends, gzip-compressed, and a historical migration.
func TestPostHogGoClient(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	var report deliveries
	client, err := posthog.NewWithConfig(env.token, posthog.Config{
		Endpoint:    env.url,
		Compression: posthog.CompressionGzip,
		Interval:    50 * time.Millisecond,
		Callback:    &report,
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	id := func(name string) string {
		ids[name] = uuid.NewString()
		return ids[name]
	}
	surveyID := "0190f0f0-0000-7000-8000-00000000beef"
	for _, m := range []posthog.Message{
		posthog.Capture{Uuid: id("custom"), DistinctId: "go-user", Event: "signed up", Properties: posthog.NewProperties().Set("plan", "pro")},
		posthog.Capture{Uuid: id("pageview"), DistinctId: "go-user", Event: "$pageview", Properties: posthog.NewProperties().Set("$current_url", "https://example.com/pricing")},
		posthog.Capture{Uuid: id("screen"), DistinctId: "go-user", Event: "$screen", Properties: posthog.NewProperties().Set("$screen_name", "Home")},
		posthog.Identify{Uuid: id("identify"), DistinctId: "go-user", Properties: posthog.NewProperties().Set("email", "go@example.com")},
		posthog.Alias{Uuid: id("alias"), DistinctId: "go-user", Alias: "go-alias"},
		posthog.GroupIdentify{Uuid: id("groupidentify"), Type: "company", Key: "acme", Properties: posthog.NewProperties().Set("name", "Acme")},
		posthog.Capture{Uuid: id("grouped"), DistinctId: "go-user", Event: "grouped", Groups: posthog.NewGroups().Set("company", "acme")},
		posthog.Capture{Uuid: id("personless"), DistinctId: "go-anon", Event: "personless", Properties: posthog.NewProperties().Set("$process_person_profile", false)},
		posthog.Capture{Uuid: id("survey shown"), DistinctId: "go-user", Event: "survey shown", Properties: posthog.NewProperties().Set("$survey_id", surveyID)},
		posthog.Capture{Uuid: id("survey sent"), DistinctId: "go-user", Event: "survey sent", Properties: posthog.NewProperties().Set("$survey_id", surveyID).Set("$survey_response", "yes")},
		posthog.Capture{Uuid: id("survey dismissed"), DistinctId: "go-user", Event: "survey dismissed", Properties: posthog.NewProperties().Set("$survey_id", surveyID)},
		posthog.Capture{Uuid: id("survey without id"), DistinctId: "go-user", Event: "survey sent"},
	} {
		if err := client.Enqueue(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}

	historical, err := posthog.NewWithConfig(env.token, posthog.Config{Endpoint: env.url, HistoricalMigration: true, Callback: &report})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Date(2023, 1, 15, 10, 0, 0, 0, time.UTC)
	for i := range 3 {
		historical.Enqueue(posthog.Capture{Uuid: id("historical" + string(rune('0'+i))), DistinctId: "go-hist", Event: "imported", Timestamp: old.Add(time.Duration(i) * time.Minute)})
	}
	if err := historical.Close(); err != nil {
		t.Fatal(err)
	}
	if len(report.failures) > 0 || report.sent != 15 {
		t.Fatalf("posthog-go reported %d sent, failures %v", report.sent, report.failures)
	}

	for _, c := range []struct{ key, event, distinctID, lane string }{
		{"custom", "signed up", "go-user", "realtime"},
		{"pageview", "$pageview", "go-user", "realtime"},
		{"screen", "$screen", "go-user", "realtime"},
		{"identify", "$identify", "go-user", "realtime"},
		{"alias", "$create_alias", "go-user", "realtime"}, // distinct_id only in properties
		{"groupidentify", "$groupidentify", "$company_acme", "realtime"},
		{"grouped", "grouped", "go-user", "realtime"},
		{"personless", "personless", "go-anon", "realtime"},
		{"survey shown", "survey shown", "go-user", "realtime"},
		{"survey sent", "survey sent", "go-user", "realtime"},
		{"survey dismissed", "survey dismissed", "go-user", "realtime"},
		{"historical0", "imported", "go-hist", "historical"},
		{"historical1", "imported", "go-hist", "historical"},
		{"historical2", "imported", "go-hist", "historical"},
	} {
		got, ok := env.event(t, ids[c.key])
		if !ok || got.name != c.event || got.distinctID != c.distinctID || got.lane != c.lane {
			t.Fatalf("%s stored as %+v (found %v), want %s by %s on %s", c.key, got, ok, c.event, c.distinctID, c.lane)
		}
	}
	if _, ok := env.event(t, ids["survey without id"]); ok {
		t.Fatal("a survey event without $survey_id was stored")
	}
	if n := env.count(t, `SELECT count(*) FROM ingestion_warnings WHERE type = 'missing_survey_id'`); n != 1 {
		t.Fatalf("%d missing_survey_id warnings, want 1", n)
	}

	props := func(key string) map[string]any {
		got, _ := env.event(t, ids[key])
		var m map[string]any
		if err := json.Unmarshal([]byte(got.properties), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if set, _ := props("identify")["$set"].(map[string]any); set["email"] != "go@example.com" {
		t.Fatalf("identify: the top-level $set is not in properties: %v", props("identify"))
	}
	if p := props("alias"); p["alias"] != "go-alias" {
		t.Fatalf("alias properties %v", p)
	}
	if groups, _ := props("grouped")["$groups"].(map[string]any); groups["company"] != "acme" {
		t.Fatalf("$groups not kept: %v", props("grouped"))
	}
	if p := props("pageview"); p["$current_url"] != "https://example.com/pricing" || p["$lib"] != "posthog-go" {
		t.Fatalf("pageview properties %v", p)
	}
	got, _ := env.event(t, ids["historical1"])
	if !got.timestamp.Equal(old.Add(time.Minute)) {
		t.Fatalf("historical timestamp %v, want %v", got.timestamp, old.Add(time.Minute))
	}
}
