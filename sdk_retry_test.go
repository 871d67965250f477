package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNodeRetryAfterKill: posthog-node sends a batch, hedge commits it and is killed
// with SIGKILL, and the SDK, which acts as if the answer never came (what a kill
// between commit and answer does to it), retries the batch against hedge started
// again on the same address and data: every event is stored once.
func TestNodeRetryAfterKill(t *testing.T) {
	requireSDKs(t)
	dataDir := t.TempDir()
	// The restarted hedge must answer where the SDK sends: a fixed capture address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := []string{"HEDGE_DATA=" + dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=" + addr}
	first := startProcess(t, env)
	if first.captureURL == "" {
		t.Fatalf("hedge did not start:\n%s", first.log())
	}
	boot := readBootstrap(t, dataDir)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "retry.mjs")
	node.Dir = sdkProject
	node.Env = append(os.Environ(), "HEDGE_CAPTURE_URL="+first.captureURL, "HEDGE_PROJECT_KEY="+boot.ProjectAPIKey)
	var stdout bytes.Buffer
	node.Stdout = &stdout
	stdin, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := node.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var nodeLog strings.Builder
	for lines.Scan() && lines.Text() != "committed" {
		nodeLog.WriteString(lines.Text() + "\n")
	}
	if lines.Text() != "committed" {
		node.Wait()
		t.Fatalf("posthog-node did not send its batch:\n%s", nodeLog.String())
	}

	first.stop(t, syscall.SIGKILL)
	restarted := startProcess(t, env)
	if restarted.captureURL != first.captureURL {
		t.Fatalf("hedge restarted at %q, want %s:\n%s", restarted.captureURL, first.captureURL, restarted.log())
	}
	fmt.Fprintln(stdin, "restarted")
	logged := make(chan struct{})
	go func() {
		for lines.Scan() {
			nodeLog.WriteString(lines.Text() + "\n")
		}
		close(logged)
	}()
	<-logged
	if err := node.Wait(); err != nil {
		t.Fatalf("node retry.mjs: %v\n%s", err, nodeLog.String())
	}
	var manifest struct {
		UUIDs    []string `json:"uuids"`
		Requests []struct {
			URL    string `json:"url"`
			Status int    `json:"status"`
			Lost   bool   `json:"lost"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &manifest); err != nil {
		t.Fatalf("manifest: %v\n%s\n%s", err, stdout.String(), nodeLog.String())
	}
	retried := 0
	for _, r := range manifest.Requests {
		if r.Status != 200 {
			t.Fatalf("request %s answered %d", r.URL, r.Status)
		}
		if !r.Lost {
			retried++
		}
	}
	if len(manifest.UUIDs) != 10 || len(manifest.Requests) < 2 || retried == 0 {
		t.Fatalf("%d events, requests %+v: want a batch of 10 sent, its answer lost, and sent again", len(manifest.UUIDs), manifest.Requests)
	}
	if code := restarted.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("hedge exited %d:\n%s", code, restarted.log())
	}

	db := openDatabase(t, dataDir)
	for _, id := range manifest.UUIDs {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM events WHERE uuid = ? AND team_id = ?`, id, boot.ProjectID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("event %s stored %d times after the retry, want once", id, n)
		}
	}
	t.Logf("a batch of %d events committed, hedge killed, the batch retried by posthog-node (%d requests): each stored once",
		len(manifest.UUIDs), len(manifest.Requests))
}

// TestNodeRetryUnderLoadAfterKill: posthog-node, four clients at once, sends a steady
// stream of batches; hedge is killed with SIGKILL while some are in flight, and the
// answers of those committed just before the kill never reach the SDK (kill.mjs throws
// them away, as a kill between commit and answer does); hedge starts again on the same
// address and data, and the SDK retries every request that failed until hedge answers.
// Every event of a request answered 200 is stored exactly once, no event is stored
// twice however often it was sent, and the retries of committed batches were
// recognised.
func TestNodeRetryUnderLoadAfterKill(t *testing.T) {
	requireSDKs(t)
	dataDir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := []string{"HEDGE_DATA=" + dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=" + addr}
	first := startProcess(t, env)
	if first.captureURL == "" {
		t.Fatalf("hedge did not start:\n%s", first.log())
	}
	boot := readBootstrap(t, dataDir)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "kill.mjs")
	node.Dir = sdkProject
	node.Env = append(os.Environ(), "HEDGE_CAPTURE_URL="+first.captureURL, "HEDGE_PROJECT_KEY="+boot.ProjectAPIKey)
	var stdout bytes.Buffer
	node.Stdout = &stdout
	stdin, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := node.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var nodeLog strings.Builder
	for lines.Scan() && lines.Text() != "answered 20" {
		nodeLog.WriteString(lines.Text() + "\n")
	}
	if lines.Text() != "answered 20" {
		node.Wait()
		t.Fatalf("posthog-node did not get 20 answers:\n%s", nodeLog.String())
	}
	logged := make(chan struct{})
	go func() {
		for lines.Scan() {
			nodeLog.WriteString(lines.Text() + "\n")
		}
		close(logged)
	}()
	fmt.Fprintln(stdin, "kill")
	time.Sleep(100 * time.Millisecond) // requests in flight are committed, their answers lost
	first.stop(t, syscall.SIGKILL)
	time.Sleep(500 * time.Millisecond) // the SDK's requests fail meanwhile, and are retried
	restarted := startProcess(t, env)
	if restarted.captureURL != first.captureURL {
		t.Fatalf("hedge restarted at %q, want %s:\n%s", restarted.captureURL, first.captureURL, restarted.log())
	}
	fmt.Fprintln(stdin, "restarted")
	err = node.Wait()
	<-logged
	if err != nil {
		t.Fatalf("node kill.mjs: %v\n%s", err, nodeLog.String())
	}
	var manifest struct {
		UUIDs    []string `json:"uuids"`
		Requests []struct {
			UUIDs  []string `json:"uuids"`
			Status int      `json:"status"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &manifest); err != nil {
		t.Fatalf("manifest: %v\n%s\n%s", err, clip(stdout.Bytes()), nodeLog.String())
	}
	// The retries the restarted hedge recognised: sent again after a commit whose answer
	// was lost.
	_, metrics := request(t, "GET", restarted.adminURL+"/metrics", "", "")
	recognised := regexp.MustCompile(`(?m)^hedge_capture_events_dropped_total\{reason="duplicate_uuid"\} (\d+)$`).FindStringSubmatch(metrics)
	if code := restarted.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("hedge exited %d:\n%s", code, restarted.log())
	}

	stored := map[string]int{}
	rows, err := openDatabase(t, dataDir).Query(`SELECT uuid::VARCHAR FROM events WHERE event = 'under-load' AND team_id = ?`, boot.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		stored[id]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sent := map[string]int{} // how many requests held each uuid
	acknowledged, failed := 0, 0
	for _, r := range manifest.Requests {
		for _, id := range r.UUIDs {
			sent[id]++
		}
		switch r.Status {
		case 200:
			acknowledged++
			for _, id := range r.UUIDs {
				if stored[id] != 1 {
					t.Fatalf("event %s of a request answered 200 is stored %d times, want once", id, stored[id])
				}
			}
		case 0:
			failed++
		default:
			t.Fatalf("a request was answered %d", r.Status)
		}
	}
	retried := 0
	for id, n := range stored {
		if n > 1 {
			t.Fatalf("event %s is stored %d times", id, n)
		}
		if sent[id] > 1 {
			retried++
		}
	}
	if failed == 0 || retried == 0 {
		t.Fatalf("%d requests failed and %d stored events were sent more than once: the kill hit no request in flight", failed, retried)
	}
	if len(stored) != len(manifest.UUIDs) {
		t.Fatalf("%d of %d events stored: posthog-node gave up on some\n%s", len(stored), len(manifest.UUIDs), nodeLog.String())
	}
	if recognised == nil || recognised[1] == "0" {
		t.Fatalf("no retry of a committed batch was recognised (%v): the kill lost no answer of a committed request", recognised)
	}
	t.Logf("%d events in %d requests (%d answered 200, %d failed: hedge killed or down, or the answer lost); %d events sent more than once, each stored once (%s of them committed before the kill, skipped as retries)",
		len(manifest.UUIDs), len(manifest.Requests), acknowledged, failed, retried, recognised[1])
}
