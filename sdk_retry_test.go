package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	env, first := startRestartable(t, dataDir)
	boot := readBootstrap(t, dataDir)
	node := startNodeScript(t, "retry.mjs", 2*time.Minute, first.captureURL, boot.ProjectAPIKey)
	if !node.waitFor("committed") {
		node.cmd.Wait()
		t.Fatalf("posthog-node did not send its batch:\n%s", node.log.String())
	}

	first.stop(t, syscall.SIGKILL)
	restarted := restart(t, env, first)
	fmt.Fprintln(node.stdin, "restarted")
	if err := node.wait(); err != nil {
		t.Fatalf("node retry.mjs: %v\n%s", err, node.log.String())
	}
	var manifest struct {
		UUIDs    []string `json:"uuids"`
		Requests []struct {
			URL    string `json:"url"`
			Status int    `json:"status"`
			Lost   bool   `json:"lost"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(node.stdout.Bytes(), &manifest); err != nil {
		t.Fatalf("manifest: %v\n%s\n%s", err, node.stdout.String(), node.log.String())
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
	env, first := startRestartable(t, dataDir)
	boot := readBootstrap(t, dataDir)
	node := startNodeScript(t, "kill.mjs", 3*time.Minute, first.captureURL, boot.ProjectAPIKey)
	if !node.waitFor("answered 20") {
		node.cmd.Wait()
		t.Fatalf("posthog-node did not get 20 answers:\n%s", node.log.String())
	}
	node.drain()
	fmt.Fprintln(node.stdin, "kill")
	time.Sleep(100 * time.Millisecond) // requests in flight are committed, their answers lost
	first.stop(t, syscall.SIGKILL)
	time.Sleep(500 * time.Millisecond) // the SDK's requests fail meanwhile, and are retried
	restarted := restart(t, env, first)
	fmt.Fprintln(node.stdin, "restarted")
	if err := node.wait(); err != nil {
		t.Fatalf("node kill.mjs: %v\n%s", err, node.log.String())
	}
	var manifest struct {
		UUIDs    []string `json:"uuids"`
		Requests []struct {
			UUIDs  []string `json:"uuids"`
			Status int      `json:"status"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(node.stdout.Bytes(), &manifest); err != nil {
		t.Fatalf("manifest: %v\n%s\n%s", err, clip(node.stdout.Bytes()), node.log.String())
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
		t.Fatalf("%d of %d events stored: posthog-node gave up on some\n%s", len(stored), len(manifest.UUIDs), node.log.String())
	}
	if recognised == nil || recognised[1] == "0" {
		t.Fatalf("no retry of a committed batch was recognised (%v): the kill lost no answer of a committed request", recognised)
	}
	t.Logf("%d events in %d requests (%d answered 200, %d failed: hedge killed or down, or the answer lost); %d events sent more than once, each stored once (%s of them committed before the kill, skipped as retries)",
		len(manifest.UUIDs), len(manifest.Requests), acknowledged, failed, retried, recognised[1])
}

// startRestartable starts hedge on dataDir with a capture address that a restart with
// the returned env keeps, so that an SDK retries against the hedge started again.
func startRestartable(t *testing.T, dataDir string) (env []string, p *process) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env = []string{"HEDGE_DATA=" + dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=" + addr}
	p = startProcess(t, env)
	if p.captureURL == "" {
		t.Fatalf("hedge did not start:\n%s", p.log())
	}
	return env, p
}

// restart starts hedge again with env, after first was stopped, and checks that it
// answers where first did.
func restart(t *testing.T, env []string, first *process) *process {
	t.Helper()
	p := startProcess(t, env)
	if p.captureURL != first.captureURL {
		t.Fatalf("hedge restarted at %q, want %s:\n%s", p.captureURL, first.captureURL, p.log())
	}
	return p
}

// nodeScript is a script of the SDK project running against hedge: its stdout (the
// manifest it prints at the end) kept, its stdin the test's signals to it, its stderr
// its progress, one line at a time, copied into log.
type nodeScript struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stdin  io.Writer
	lines  *bufio.Scanner
	log    strings.Builder
	// drained is closed once drain has read stderr to its end.
	drained chan struct{}
}

// startNodeScript starts the script, killed after timeout, sending to captureURL with
// the project key.
func startNodeScript(t *testing.T, script string, timeout time.Duration, captureURL, projectKey string) *nodeScript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	n := &nodeScript{cmd: exec.CommandContext(ctx, "node", script)}
	n.cmd.Dir = sdkProject
	n.cmd.Env = append(os.Environ(), "HEDGE_CAPTURE_URL="+captureURL, "HEDGE_PROJECT_KEY="+projectKey)
	n.cmd.Stdout = &n.stdout
	stdin, err := n.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := n.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.stdin, n.lines = stdin, bufio.NewScanner(stderr)
	return n
}

// waitFor reads the script's progress until the line, and reports whether it came.
func (n *nodeScript) waitFor(line string) bool {
	for n.lines.Scan() {
		if n.lines.Text() == line {
			return true
		}
		n.log.WriteString(n.lines.Text() + "\n")
	}
	return false
}

// drain copies the rest of the script's progress into log in the background, so that
// a script that goes on writing while the test works is never blocked on its stderr.
func (n *nodeScript) drain() {
	n.drained = make(chan struct{})
	go func() {
		for n.lines.Scan() {
			n.log.WriteString(n.lines.Text() + "\n")
		}
		close(n.drained)
	}()
}

// wait waits for the script to end, its progress read to the end first (Wait closes
// stderr); log is whole once it returns.
func (n *nodeScript) wait() error {
	if n.drained == nil {
		n.drain()
	}
	<-n.drained
	return n.cmd.Wait()
}
