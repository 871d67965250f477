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
