package main

import (
	"github.com/hedge-analytics/hedge/internal/testlog"

	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/warehouse"
)

// testServeConfig is hedge serve's configuration on dataDir, with the log of the
// default (HEDGE_LOG=direct: the direct path, as the binary reads it).
func testServeConfig(dataDir string) serveConfig {
	cfg := serveConfig{
		dataDir:         dataDir,
		adminAddr:       "127.0.0.1:0",
		captureAddr:     "127.0.0.1:0",
		adminEmail:      "admin@localhost",
		shutdownTimeout: 10 * time.Second,
		logMode:         logJetStream,
	}
	if os.Getenv("HEDGE_LOG") == logDirect {
		cfg.logMode = logDirect
	}
	return cfg
}

func startTestServer(t *testing.T, dataDir string) *server {
	t.Helper()
	s, err := start(context.Background(), testServeConfig(dataDir), testlog.New())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitApplied waits until s's warehouse has applied what its event log holds, when
// the log is on: then what capture acknowledged is queryable.
func (s *server) waitApplied(t *testing.T) {
	t.Helper()
	if s.consumer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.consumer.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

func request(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(text)
}

func readBootstrap(t *testing.T, dataDir string) admin.Bootstrap {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(dataDir, admin.BootstrapFile))
	if err != nil {
		t.Fatal(err)
	}
	var b admin.Bootstrap
	if err := json.Unmarshal(text, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// The first start bootstraps and its credentials work on both listeners; a captured
// event survives a restart, and the restart bootstraps nothing.
func TestServeBootstrapAndRestart(t *testing.T) {
	dataDir := t.TempDir()
	s := startTestServer(t, dataDir)
	if s.bootstrap == nil {
		t.Fatal("the first start did not bootstrap")
	}
	boot := readBootstrap(t, dataDir)
	if boot != *s.bootstrap || boot.AdminURL != s.adminURL || boot.CaptureURL != s.captureURL || boot.UserEmail != "admin@localhost" {
		t.Fatalf("bootstrap.json %+v, server %+v at %s %s", boot, s.bootstrap, s.adminURL, s.captureURL)
	}

	projects := fmt.Sprintf("/api/organizations/%s/projects/", boot.OrganizationID)
	status, body := request(t, "GET", s.adminURL+projects, boot.PersonalAPIKey, "")
	if status != 200 || !strings.Contains(body, fmt.Sprintf(`"id":%d`, boot.ProjectID)) || !strings.Contains(body, boot.ProjectAPIKey) {
		t.Fatalf("projects: %d %s", status, body)
	}
	capture := fmt.Sprintf(`{"api_key":%q,"event":"signed up","distinct_id":"user-1","uuid":"0192f0c4-64f2-7a4e-9d52-f4a6f2b4b2a1","properties":{"plan":"pro"}}`, boot.ProjectAPIKey)
	if status, body := request(t, "POST", s.captureURL+"/capture/", "", capture); status != 200 || body != `{"status": 1}` {
		t.Fatalf("capture: %d %s", status, body)
	}
	// The capture counters are on the management listener's /metrics.
	status, metrics := request(t, "GET", s.adminURL+"/metrics", "", "")
	if status != 200 || !strings.Contains(metrics, `hedge_capture_requests_total{status="200"} `) ||
		strings.Contains(metrics, `hedge_capture_requests_total{status="200"} 0`+"\n") ||
		!strings.Contains(metrics, `hedge_writer_events_total{lane="realtime"} `) || !strings.Contains(metrics, "process_resident_memory_bytes") {
		t.Fatalf("/metrics: %d\n%s", status, metrics)
	}
	for _, url := range []string{s.adminURL, s.captureURL} {
		if status, body := request(t, "GET", url+"/_health", "", ""); status != 200 || body != `{"status":"ok"}` {
			t.Fatalf("health of %s: %d %s", url, status, body)
		}
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	s = startTestServer(t, dataDir)
	defer s.stop()
	if s.bootstrap != nil {
		t.Fatal("the second start bootstrapped again")
	}
	if again := readBootstrap(t, dataDir); again != boot {
		t.Fatalf("bootstrap.json changed on restart: %+v", again)
	}
	var organizations, events int
	db := s.warehouse.DB()
	db.QueryRow(`SELECT count(*) FROM meta.organizations`).Scan(&organizations)
	err := db.QueryRow(`SELECT count(*) FROM events WHERE uuid = '0192f0c4-64f2-7a4e-9d52-f4a6f2b4b2a1'
		AND event = 'signed up' AND team_id = ? AND `+warehouse.PropertiesText+` = '{"plan":"pro"}'`, boot.ProjectID).Scan(&events)
	if err != nil || organizations != 1 || events != 1 {
		t.Fatalf("after restart: %d organizations, %d events (err %v); want 1 and 1", organizations, events, err)
	}
	if status, _ := request(t, "GET", s.adminURL+projects, boot.PersonalAPIKey, ""); status != 200 {
		t.Fatalf("the bootstrap key stopped working after a restart: %d", status)
	}
}

// A shutdown right after the start still stops both listeners: a server's Shutdown
// that comes before its Serve has taken the listener leaves it to stop, which closes
// it (before, such a Serve accepted for ever and the shutdown never ended).
func TestServeStopRightAfterStart(t *testing.T) {
	dataDir := t.TempDir()
	for range 20 {
		started := make(chan *server, 1)
		go func() { started <- startTestServer(t, dataDir) }()
		var s *server
		select {
		case s = <-started:
		case <-time.After(time.Minute):
			t.Fatal("the start did not end")
		}
		stopped := make(chan error, 1)
		go func() { stopped <- s.stop() }()
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the shutdown did not end")
		}
	}
}
