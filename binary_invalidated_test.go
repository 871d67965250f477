package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"
)

// When DuckDB invalidates the database, hedge exits with status 1 for its supervisor
// to restart it, rather than answer 503 and 500 until someone does; the restart has
// every event it acknowledged. The invalidation is a real one: a checkpoint that cannot
// write the database file (here past a file size limit put on the process, as a full
// disk would stop it) is fatal to DuckDB.
func TestBinaryExitsWhenTheDatabaseIsInvalidated(t *testing.T) {
	dataDir := t.TempDir()
	env := []string{"HEDGE_DATA=" + dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=127.0.0.1:0"}
	// Started with SIGXFSZ ignored, which a write past the file size limit set below
	// raises: DuckDB's threads are not Go's, and on them Go's runtime lets a signal it
	// was not asked for take its default action, which kills.
	cmd := exec.Command("sh", "-c", `trap "" XFSZ && exec "$0" serve --checkpoint-interval 200ms`, hedgeBinary(t))
	cmd.Env = append(os.Environ(), env...)
	p, serving := launchCommand(t, cmd)
	waitServing(t, p, serving)
	if p.captureURL == "" {
		t.Fatalf("hedge did not start:\n%s", p.log())
	}
	boot := readBootstrap(t, dataDir)
	// An event, and the checkpoint after it, which writes the WAL (the migrations and
	// the bootstrap too) into the database file.
	event := fmt.Sprintf(`{"api_key":%q,"event":"first","distinct_id":"u","uuid":%q}`, boot.ProjectAPIKey, uuid.NewString())
	if status, body := request(t, "POST", p.captureURL+"/capture/", "", event); status != 200 {
		t.Fatalf("capture: %d %s", status, body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if info, err := os.Stat(filepath.Join(dataDir, databaseFile+".wal")); err != nil || info.Size() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint emptied the WAL:\n%s", p.log())
		}
	}
	info, err := os.Stat(filepath.Join(dataDir, databaseFile))
	if err != nil {
		t.Fatal(err)
	}
	// Writes past the file's size fail (EFBIG), as on a full disk: the WAL, shorter,
	// takes commits, and the checkpoint that must grow the file fails.
	pid := p.cmd.Process.Pid
	var was unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &was); err != nil {
		t.Skipf("cannot read the process's file size limit: %v", err)
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: uint64(info.Size()), Max: was.Max}, nil); err != nil {
		t.Skipf("cannot lower the process's file size limit: %v", err)
	}
	var acknowledged []string
	filler := make([]byte, 4096)
	deadline := time.Now().Add(time.Minute)
	for exited := false; !exited; {
		select {
		case <-p.exited:
			exited = true
			continue
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("hedge still runs a minute after its file size limit was lowered to %d bytes:\n%s", info.Size(), p.log())
		}
		ids := make([]string, 20)
		events := make([]string, len(ids))
		for i := range ids {
			rand.Read(filler) // incompressible, so the checkpoint needs room
			ids[i] = uuid.NewString()
			events[i] = fmt.Sprintf(`{"event":"filler","distinct_id":"u","uuid":%q,"properties":{"x":%q}}`, ids[i], hex.EncodeToString(filler))
		}
		body := fmt.Sprintf(`{"api_key":%q,"batch":[%s]}`, boot.ProjectAPIKey, strings.Join(events, ","))
		resp, err := http.Post(p.captureURL+"/batch/", "application/json", strings.NewReader(body))
		if err != nil {
			continue // hedge is exiting
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			acknowledged = append(acknowledged, ids...)
		}
		time.Sleep(500 * time.Millisecond) // an idle writer checkpoints (--checkpoint-interval)
	}
	log := p.log()
	if code := p.cmd.ProcessState.ExitCode(); code != 1 || strings.Count(log, "DuckDB has invalidated the database") != 1 {
		t.Fatalf("hedge exited %d (%v); want 1, having logged the invalidation once:\n%s", code, p.cmd.ProcessState, log)
	}
	if len(acknowledged) == 0 {
		t.Fatalf("no event acknowledged before the invalidation:\n%s", log)
	}
	restarted := startProcess(t, env)
	if restarted.captureURL == "" {
		t.Fatalf("hedge did not start again:\n%s", restarted.log())
	}
	if status, body := request(t, "GET", restarted.captureURL+"/_health", "", ""); status != 200 {
		t.Fatalf("/_health after the restart: %d %s", status, body)
	}
	if code := restarted.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM after the restart: exit %d:\n%s", code, restarted.log())
	}
	var stored int
	if err := openDatabase(t, dataDir).QueryRow(`SELECT count(DISTINCT uuid) FROM events WHERE list_contains(?::VARCHAR[], uuid::VARCHAR)`,
		acknowledged).Scan(&stored); err != nil || stored != len(acknowledged) {
		t.Fatalf("%d of the %d events acknowledged before the invalidation are stored (%v)", stored, len(acknowledged), err)
	}
	t.Logf("%d events acknowledged before the invalidation, all stored after the restart", len(acknowledged))
}
