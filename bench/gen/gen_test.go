package gen

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"
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

// Stamped bodies, plain and gzip, carry the uuids of their send and nothing else
// changes: the gzip form decompresses (checksum included) to the stamped JSON text.
func TestBodyStamp(t *testing.T) {
	g := New(Config{Seed: 2, PersonlessShare: 0.3})
	now := time.Now()
	batch := g.BatchBody(BodyConfig{Token: "phc_test", Events: 300, Time: now})
	big := g.BatchBody(BodyConfig{Token: "phc_test", Events: 1 << 30, MaxBytes: 200_000, Historical: true, Time: now})
	single := g.SingleBody("phc_test", now)
	if big.PlainLen() >= 200_000 || big.PlainLen() < 199_000 || big.Events < 200 {
		t.Fatalf("a body capped at 200,000 bytes has %d bytes, %d events", big.PlainLen(), big.Events)
	}
	f := func(b *Body, historical bool, run uint32, send uint64) {
		t.Helper()
		sent := b.Stamp([]byte("junk before"), run, send)[len("junk before"):]
		if len(sent) != b.Len() {
			t.Fatalf("stamped %d bytes, Len says %d", len(sent), b.Len())
		}
		text := sent
		if b.gz != nil {
			zr, err := gzip.NewReader(bytes.NewReader(sent))
			if err != nil {
				t.Fatal(err)
			}
			if text, err = io.ReadAll(zr); err != nil {
				t.Fatalf("gzip body of send %d: %v", send, err)
			}
			if b.Events > 1 && len(sent) > len(text)/3 {
				t.Fatalf("gzip body of %d bytes for %d bytes of JSON", len(sent), len(text))
			}
		}
		var v struct {
			UUID       string `json:"uuid"`
			Historical bool   `json:"historical_migration"`
			Batch      []struct {
				UUID string `json:"uuid"`
			} `json:"batch"`
		}
		if err := json.Unmarshal(text, &v); err != nil {
			t.Fatalf("%v: %.200s", err, text)
		}
		ids := []string{v.UUID}
		if v.Batch != nil {
			ids = ids[:0]
			for _, e := range v.Batch {
				ids = append(ids, e.UUID)
			}
		}
		if len(ids) != b.Events || v.Historical != historical {
			t.Fatalf("%d events (historical %v), want %d", len(ids), v.Historical, b.Events)
		}
		for i, id := range ids {
			if want := string(StampedUUID(nil, run, send, uint64(i))); id != want {
				t.Fatalf("event %d of send %d has uuid %s, want %s", i, send, id, want)
			}
			if _, err := uuid.Parse(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, b := range []*Body{batch, big, single, batch.Gzip(), big.Gzip(), single.Gzip()} {
		historical := bytes.Equal(b.plain, big.plain)
		f(b, historical, 0xdeadbeef, 0)
		f(b, historical, 7, 123456789012)
	}
	if got := string(StampedUUID(nil, 0x0badf00d, 123456789, 42)); got != "0badf00d-0001-2345-6789-000000000042" {
		t.Fatalf("StampedUUID = %s", got)
	}
}
