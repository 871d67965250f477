package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

// sdkProject is the Node project that drives posthog-node and posthog-js; `make test`
// installs its pinned packages with npm ci.
const sdkProject = "edge/testdata/sdk-js"

// requireSDKs skips the test when the SDKs are not installed in sdkProject, and fails
// it when HEDGE_REQUIRE_SDK_TESTS is set (make test).
func requireSDKs(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sdkProject, "node_modules")); err != nil {
		if os.Getenv("HEDGE_REQUIRE_SDK_TESTS") != "" {
			t.Fatalf("the SDKs are not installed in %s (make test runs npm ci there): %v", sdkProject, err)
		}
		t.Skipf("the SDKs are not installed: run make test, or npm ci --prefix %s", sdkProject)
	}
}

// runNode runs node with args in the SDK project, env added to the test's environment,
// and decodes the JSON manifest the script prints into manifest.
func runNode(ctx context.Context, env []string, manifest any, args ...string) error {
	node := exec.CommandContext(ctx, "node", args...)
	node.Dir = sdkProject
	node.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	node.Stderr = &stderr
	out, err := node.Output()
	if err != nil {
		return fmt.Errorf("%v\n%s\n%s", err, clip(out), stderr.String())
	}
	if err := json.Unmarshal(out, manifest); err != nil {
		return fmt.Errorf("manifest: %v\n%s\n%s", err, clip(out), stderr.String())
	}
	return nil
}

// clip is the start and the end of a long output.
func clip(out []byte) string {
	if len(out) <= 4000 {
		return string(out)
	}
	return string(out[:2000]) + "\n...\n" + string(out[len(out)-2000:])
}

// TestNodeSDKs runs the real posthog-node and posthog-js (in jsdom) against a live
// `hedge serve` and checks every event they sent in the database.
func TestNodeSDKs(t *testing.T) {
	requireSDKs(t)
	hedge, boot, dataDir := startServing(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var manifest struct {
		Events []struct {
			SDK        string         `json:"sdk"`
			UUID       string         `json:"uuid"`
			Event      string         `json:"event"`
			DistinctID string         `json:"distinct_id"`
			Lane       string         `json:"lane"`
			Timestamp  string         `json:"timestamp"`
			Set        map[string]any `json:"set"`
			Anon       string         `json:"anon"`
		} `json:"events"`
		Requests []struct {
			SDK    string `json:"sdk"`
			URL    string `json:"url"`
			Status int    `json:"status"`
		} `json:"requests"`
	}
	if err := runNode(ctx, []string{"HEDGE_CAPTURE_URL=" + hedge.captureURL, "HEDGE_PROJECT_KEY=" + boot.ProjectAPIKey}, &manifest, "run.mjs"); err != nil {
		t.Fatalf("node run.mjs: %v", err)
	}
	if code := hedge.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("hedge exited %d:\n%s", code, hedge.log())
	}

	bySDK := map[string]int{}
	for _, r := range manifest.Requests {
		if r.Status != 200 {
			t.Errorf("%s request %s answered %d", r.SDK, r.URL, r.Status)
		}
		bySDK[r.SDK]++
	}
	if bySDK["node"] == 0 || bySDK["js"] == 0 {
		t.Fatalf("requests by SDK %v: both SDKs must have sent", bySDK)
	}

	db := openDatabase(t, dataDir)
	for _, e := range manifest.Events {
		var lane, properties string
		var ts time.Time
		var err error
		if e.UUID != "" {
			err = db.QueryRow(`SELECT lane, `+warehouse.PropertiesText+`, "timestamp" FROM events WHERE uuid = ? AND event = ? AND distinct_id = ? AND team_id = ?`,
				e.UUID, e.Event, e.DistinctID, boot.ProjectID).Scan(&lane, &properties, &ts)
		} else {
			err = db.QueryRow(`SELECT lane, `+warehouse.PropertiesText+`, "timestamp" FROM events WHERE event = ? AND distinct_id = ? AND team_id = ? LIMIT 1`,
				e.Event, e.DistinctID, boot.ProjectID).Scan(&lane, &properties, &ts)
		}
		if err != nil {
			t.Fatalf("%s event %s by %s (uuid %q) not stored: %v", e.SDK, e.Event, e.DistinctID, e.UUID, err)
		}
		if lane != e.Lane {
			t.Fatalf("%s event %s on lane %s, want %s", e.SDK, e.Event, lane, e.Lane)
		}
		var props map[string]any
		if err := json.Unmarshal([]byte(properties), &props); err != nil {
			t.Fatalf("%s event %s: properties are not JSON: %v", e.SDK, e.Event, err)
		}
		set, _ := props["$set"].(map[string]any)
		for k, v := range e.Set {
			if set[k] != v {
				t.Fatalf("%s %s: properties.$set[%s] = %v, want %v (properties %s)", e.SDK, e.Event, k, set[k], v, properties)
			}
		}
		if e.Anon != "" && props["$anon_distinct_id"] != e.Anon {
			t.Fatalf("%s %s: $anon_distinct_id %v, want %s", e.SDK, e.Event, props["$anon_distinct_id"], e.Anon)
		}
		if e.Timestamp != "" {
			want, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
			if !ts.Equal(want) {
				t.Fatalf("%s %s: timestamp %v, want %v", e.SDK, e.Event, ts, want)
			}
		}
	}
	t.Logf("%d events from posthog-node and posthog-js stored as sent (%d requests, all 200)", len(manifest.Events), len(manifest.Requests))
}
