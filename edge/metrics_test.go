package edge_test

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"

	"github.com/hedge-analytics/hedge/edge"
)

// captureCounters reads the capture listener's counters as /metrics exposes them.
func captureCounters(t *testing.T) map[string]float64 {
	t.Helper()
	var buf bytes.Buffer
	metrics.WritePrometheus(&buf, false)
	counters := map[string]float64{}
	scanner := bufio.NewScanner(&buf)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "hedge_capture_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		value, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		counters[line[:i]] = value
	}
	return counters
}

// The counters exposed at /metrics move by what each request did, and no other
// capture counter moves: accepted events by lane, dropped events by reason (only once
// committed; a uuid its project stored already is one), requests by status, and body
// bytes as received and as decoded.
func TestCaptureCounters(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{OverflowRate: 1, OverflowBurst: 1})
	const (
		bodyBytes    = `hedge_capture_body_bytes_total`
		payloadBytes = `hedge_capture_payload_bytes_total`
	)
	accepted := func(lane string) string { return `hedge_capture_events_accepted_total{lane="` + lane + `"}` }
	dropped := func(reason string) string { return `hedge_capture_events_dropped_total{reason="` + reason + `"}` }
	requests := func(status int) string { return fmt.Sprintf(`hedge_capture_requests_total{status="%d"}`, status) }
	batch := func(events ...string) []byte {
		return fmt.Appendf(nil, `{"api_key":%q,"batch":[%s]}`, env.token, strings.Join(events, ","))
	}

	mixed := batch(`{"event":"a","distinct_id":"u1"}`, `{"event":"b","distinct_id":"u2"}`, `{"distinct_id":"u3"}`, `{"event":"c"}`)
	zipped := gzipped(t, mixed)
	historical := fmt.Appendf(nil, `{"api_key":%q,"historical_migration":true,"batch":[{"event":"h","distinct_id":"hot"},{"event":"h","distinct_id":"hot"},{"event":"h","distinct_id":"hot"}]}`, env.token)
	hot := batch(`{"event":"o","distinct_id":"hot"}`, `{"event":"o","distinct_id":"hot"}`, `{"event":"o","distinct_id":"hot"}`)
	everyReason := batch(
		`{"distinct_id":"u"}`, `{"event":"e"}`, `{"event":"survey sent","distinct_id":"u"}`,
		`{"event":"$identify","distinct_id":"u","properties":{"$process_person_profile":false}}`,
		`{"event":"$groupidentify","distinct_id":"u","properties":{"$group_type":"company","$group_key":"`+strings.Repeat("k", 401)+`"}}`,
		`{"event":"$groupidentify","distinct_id":"u","properties":{"$group_type":"company","$group_key":"k","$group_set":[]}}`,
	)
	repeated := batch(`{"event":"r","distinct_id":"u","uuid":"0192f0c4-0000-7000-8000-0000000000d1"}`,
		`{"event":"r","distinct_id":"u","uuid":"0192f0c4-0000-7000-8000-0000000000d1"}`)
	noKey := []byte(`{"event":"e","distinct_id":"u"}`)
	malformed := []byte(`{"api_key":"` + env.token + `","batch":[`)
	tooLarge := batchOfSize(t, env.token, 2<<20)
	for _, sc := range []struct {
		name    string
		method  string
		path    string
		body    []byte
		headers map[string]string
		status  int
		want    map[string]float64 // the counters that move, by how much
	}{
		{"gzip batch with skipped events", "POST", "/batch/", zipped, map[string]string{"Content-Encoding": "gzip"}, 200, map[string]float64{
			requests(200): 1, bodyBytes: float64(len(zipped)), payloadBytes: float64(len(mixed)),
			accepted("realtime"): 2, dropped("missing_event_name"): 1, dropped("missing_distinct_id"): 1,
		}},
		{"historical batch", "POST", "/batch/", historical, nil, 200, map[string]float64{
			requests(200): 1, bodyBytes: float64(len(historical)), payloadBytes: float64(len(historical)),
			accepted("historical"): 3,
		}},
		{"one realtime, two over the rate", "POST", "/batch/", hot, nil, 200, map[string]float64{
			requests(200): 1, bodyBytes: float64(len(hot)), payloadBytes: float64(len(hot)),
			accepted("realtime"): 1, accepted("overflow"): 2,
		}},
		{"every reason to skip", "POST", "/batch/", everyReason, nil, 200, map[string]float64{
			requests(200): 1, bodyBytes: float64(len(everyReason)), payloadBytes: float64(len(everyReason)),
			dropped("missing_event_name"): 1, dropped("missing_distinct_id"): 1, dropped("missing_survey_id"): 1,
			dropped("group_key_too_long"): 1, dropped("invalid_group_set"): 1,
			dropped("invalid_event_when_process_person_profile_is_false"): 1,
		}},
		{"a uuid twice", "POST", "/batch/", repeated, nil, 200, map[string]float64{
			requests(200): 1, bodyBytes: float64(len(repeated)), payloadBytes: float64(len(repeated)),
			accepted("realtime"): 1, dropped("duplicate_uuid"): 1,
		}},
		{"the same request retried", "POST", "/batch/", repeated, nil, 200, map[string]float64{
			requests(200): 1, bodyBytes: float64(len(repeated)), payloadBytes: float64(len(repeated)),
			dropped("duplicate_uuid"): 2,
		}},
		{"missing token", "POST", "/capture/", noKey, nil, 401, map[string]float64{
			requests(401): 1, bodyBytes: float64(len(noKey)), payloadBytes: float64(len(noKey)),
		}},
		{"malformed JSON", "POST", "/batch/", malformed, nil, 400, map[string]float64{
			requests(400): 1, bodyBytes: float64(len(malformed)), payloadBytes: float64(len(malformed)),
		}},
		{"body over the limit, not read", "POST", "/e/", tooLarge, nil, 413, map[string]float64{requests(413): 1}},
		{"wrong method", "GET", "/e/", nil, nil, 405, map[string]float64{requests(405): 1}},
		{"unknown path", "POST", "/nowhere", []byte(`{}`), nil, 404, map[string]float64{requests(404): 1}},
		{"preflight", "OPTIONS", "/e/", nil, map[string]string{"Origin": "https://example.com"}, 200, map[string]float64{requests(200): 1}},
		{"health is not a capture request", "GET", "/_health", nil, nil, 200, nil},
	} {
		t.Run(sc.name, func(t *testing.T) {
			before := captureCounters(t)
			if a := env.send(t, sc.method, sc.path, sc.body, sc.headers); a.status != sc.status {
				t.Fatalf("answered %d %s, want %d", a.status, a.body, sc.status)
			}
			checkDeltas(t, before, captureCounters(t), sc.want)
		})
	}

	// A request the writer refuses counts as a 503 and nothing it held as accepted or
	// dropped: none of it is stored.
	env.warehouse.Writer().Close()
	before := captureCounters(t)
	if a := env.send(t, "POST", "/batch/", mixed, nil); a.status != 503 {
		t.Fatalf("with the writer closed: %d %s", a.status, a.body)
	}
	checkDeltas(t, before, captureCounters(t), map[string]float64{
		requests(503): 1, bodyBytes: float64(len(mixed)), payloadBytes: float64(len(mixed)),
	})
}

func checkDeltas(t *testing.T, before, after, want map[string]float64) {
	t.Helper()
	for name := range want {
		if _, ok := after[name]; !ok {
			t.Fatalf("no counter %s among %v", name, slices.Sorted(maps.Keys(after)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if got := after[name] - before[name]; got != want[name] {
			t.Errorf("%s moved by %v, want %v", name, got, want[name])
		}
	}
}
