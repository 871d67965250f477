package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/warehouse"
)

// Tests in this file run the real hedge binary as a child process, as a user would,
// to check what only a process can show: flags and environment, signals, exit codes,
// the file lock, and that a SIGKILL loses no acknowledged event.

var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopBrowser()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// hedgeBinary builds the hedge command once per test run.
func hedgeBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "hedge-bin-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "hedge")
		out, err := exec.Command("go", "build", "-o", binary.path, ".").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// process is a running `hedge serve`.
type process struct {
	cmd        *exec.Cmd
	adminURL   string
	captureURL string
	exited     chan struct{}
	mu         sync.Mutex
	logs       strings.Builder
}

var servingLine = regexp.MustCompile(`msg=serving admin_url=(\S+) capture_url=(\S+)`)

// startProcess starts `hedge serve` with env added to the test's environment and
// waits until it serves, or returns the process once it has exited.
func startProcess(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	p, serving := launchProcess(t, env, args...)
	p = waitServing(t, p, serving)
	if p.captureURL != "" {
		adminURLs.Store(p.captureURL, p.adminURL)
	}
	return p
}

// adminURLs is the management listener's URL of each started hedge's capture URL,
// for waitApplied.
var adminURLs sync.Map

// waitApplied waits until the hedge whose capture listener is at captureURL has
// applied to its warehouse every message its event log acknowledged: through the log
// (the default), a 200 means durable, and the events are queryable once applied. It
// compares the process's counters of messages published and applied (/metrics), so it
// holds on the direct path at once.
func waitApplied(t *testing.T, captureURL string) {
	t.Helper()
	adminURL, ok := adminURLs.Load(captureURL)
	if !ok {
		t.Fatalf("no hedge started with the capture URL %s", captureURL)
	}
	counter := regexp.MustCompile(`(?m)^hedge_log_(published|applied)_messages_total (\d+)$`)
	for deadline := time.Now().Add(time.Minute); ; {
		_, text := request(t, "GET", adminURL.(string)+"/metrics", "", "")
		counts := map[string]int{}
		for _, m := range counter.FindAllStringSubmatch(text, -1) {
			counts[m[1]], _ = strconv.Atoi(m[2])
		}
		if counts["applied"] >= counts["published"] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the warehouse applied %d of the %d messages the log acknowledged within a minute", counts["applied"], counts["published"])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitServing waits until p serves, or returns it once it has exited.
func waitServing(t *testing.T, p *process, serving <-chan struct{}) *process {
	t.Helper()
	select {
	case <-serving:
	case <-p.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("hedge did not start serving:\n%s", p.log())
	}
	return p
}

// startServing starts `hedge serve` on a new data directory, on ports of its own, and
// reads what it bootstrapped.
func startServing(t *testing.T) (p *process, boot admin.Bootstrap, dataDir string) {
	t.Helper()
	dataDir = t.TempDir()
	p = startProcess(t, []string{"HEDGE_DATA=" + dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=127.0.0.1:0"})
	if p.captureURL == "" {
		t.Fatalf("hedge did not start:\n%s", p.log())
	}
	return p, readBootstrap(t, dataDir), dataDir
}

// openDatabase opens the database of a stopped hedge, until the test ends.
func openDatabase(t *testing.T, dataDir string) *sql.DB {
	t.Helper()
	wh, err := warehouse.Open(context.Background(), warehouse.Config{Path: filepath.Join(dataDir, databaseFile)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close() })
	return wh.DB()
}

// launchProcess starts `hedge serve` and returns at once, with a channel closed when
// it logs that it serves (which it does not below --log-level info).
func launchProcess(t *testing.T, env []string, args ...string) (*process, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(hedgeBinary(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return launchCommand(t, cmd)
}

// launchCommand is launchProcess of a command that runs `hedge serve` (through a shell
// that sets its process up, say).
func launchCommand(t *testing.T, cmd *exec.Cmd) (*process, <-chan struct{}) {
	t.Helper()
	p := &process{cmd: cmd, exited: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan struct{})
	go func() {
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			line := scanner.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			if m := servingLine.FindStringSubmatch(line); m != nil {
				p.adminURL, p.captureURL = m[1], m[2]
				close(serving)
			}
			p.mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
		p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p, serving
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// stop sends sig and returns the exit code.
func (p *process) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Fatalf("hedge did not exit after %v:\n%s", sig, p.log())
	}
	return p.cmd.ProcessState.ExitCode()
}

func TestBinaryVersion(t *testing.T) {
	out, err := exec.Command(hedgeBinary(t), "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "hedge ") || !strings.Contains(string(out), "DuckDB v1.5.6") {
		t.Fatalf("hedge version: %q %v", out, err)
	}
}

// A SIGKILL in the middle of ingestion loses no acknowledged event and leaves a file
// that opens; SIGTERM shuts down cleanly with everything checkpointed.
func TestBinaryCrashAndShutdown(t *testing.T) {
	dataDir := t.TempDir()
	env := []string{
		"HEDGE_DATA=" + dataDir,
		"HEDGE_ADMIN_ADDR=127.0.0.1:0",
		"HEDGE_CAPTURE_ADDR=127.0.0.1:0",
		"HEDGE_ADMIN_EMAIL=env@example.com",
	}
	first := startProcess(t, env, "--admin-email", "flag@example.com")
	boot := readBootstrap(t, dataDir)
	if boot.UserEmail != "flag@example.com" {
		t.Fatalf("user_email %q: the flag must win over HEDGE_ADMIN_EMAIL", boot.UserEmail)
	}

	// DuckDB admits one process per file: a second hedge must refuse, not share it.
	second := startProcess(t, env)
	if code := second.stop(t, syscall.SIGTERM); code == 0 || !strings.Contains(second.log(), "another hedge") {
		t.Fatalf("a second hedge on the same data directory exited %d:\n%s", code, second.log())
	}

	// Ingest from several clients, single events and gzip batches, and kill hedge
	// while requests are in flight.
	var mu sync.Mutex
	var acknowledged []uuid.UUID
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for client := range 6 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				size := 1
				if client%2 == 1 {
					size = 50
				}
				ids := make([]uuid.UUID, size)
				events := make([]string, size)
				for j := range ids {
					ids[j] = uuid.Must(uuid.NewV7())
					events[j] = fmt.Sprintf(`{"event":"crash-test","distinct_id":"client-%d","uuid":%q,"properties":{"i":%d}}`, client, ids[j], i)
				}
				var req *http.Request
				if size == 1 {
					body := strings.Replace(events[0], "{", fmt.Sprintf(`{"api_key":%q,`, boot.ProjectAPIKey), 1)
					req, _ = http.NewRequest("POST", first.captureURL+"/capture/", strings.NewReader(body))
				} else {
					var zipped bytes.Buffer
					zw := gzip.NewWriter(&zipped)
					fmt.Fprintf(zw, `{"api_key":%q,"batch":[%s]}`, boot.ProjectAPIKey, strings.Join(events, ","))
					zw.Close()
					req, _ = http.NewRequest("POST", first.captureURL+"/batch/", &zipped)
					req.Header.Set("Content-Encoding", "gzip")
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					continue // the connection died with the process
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					mu.Lock()
					acknowledged = append(acknowledged, ids...)
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(time.Second)
	first.stop(t, syscall.SIGKILL)
	cancel()
	wg.Wait()
	if len(acknowledged) < 10 {
		t.Fatalf("only %d events acknowledged before the kill", len(acknowledged))
	}

	restarted := startProcess(t, env)
	if restarted.adminURL == "" {
		t.Fatalf("hedge did not restart after SIGKILL:\n%s", restarted.log())
	}
	if strings.Contains(restarted.log(), "bootstrapped") {
		t.Fatal("the restart bootstrapped again")
	}
	if os.Getenv("HEDGE_LOG") == "jetstream" && !strings.Contains(restarted.log(), `msg="event log open"`) {
		t.Fatalf("HEDGE_LOG=jetstream, and hedge did not open the event log:\n%s", restarted.log())
	}
	// The killed process left its commits in the WAL, which the restart replays and says so.
	if !regexp.MustCompile(`msg="replaying the write-ahead log before serving" wal=\S+ wal_bytes=[1-9]`).MatchString(restarted.log()) {
		t.Fatalf("the restart did not say it replays the WAL:\n%s", restarted.log())
	}
	status, _ := request(t, "GET", restarted.adminURL+"/api/organizations/"+boot.OrganizationID+"/projects/", boot.PersonalAPIKey, "")
	if status != 200 {
		t.Fatalf("bootstrap key after restart: %d", status)
	}
	if code := restarted.stop(t, syscall.SIGTERM); code != 0 || !strings.Contains(restarted.log(), "database checkpointed") {
		t.Fatalf("SIGTERM: exit %d:\n%s", code, restarted.log())
	}
	if info, err := os.Stat(filepath.Join(dataDir, databaseFile+".wal")); err == nil && info.Size() > 0 {
		t.Fatalf("a clean shutdown left a %d-byte WAL", info.Size())
	}

	counts := map[uuid.UUID]int{}
	rows, err := openDatabase(t, dataDir).Query(`SELECT uuid FROM events WHERE event = 'crash-test'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		rows.Scan(&id)
		counts[id]++
	}
	rows.Close()
	for _, id := range acknowledged {
		if counts[id] != 1 {
			t.Fatalf("acknowledged event %s is stored %d times after SIGKILL, want exactly once (%d acknowledged)",
				id, counts[id], len(acknowledged))
		}
	}
	t.Logf("%d events acknowledged before SIGKILL, all present once; %d stored in all", len(acknowledged), len(counts))
}

// SIGINT (Ctrl-C at a terminal) shuts hedge down as SIGTERM does: exit 0, nothing
// logged as an error, the acknowledged event stored and the WAL checkpointed into
// the file.
func TestBinaryShutdownSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p, boot, dataDir := startServing(t)
			id := uuid.NewString()
			event := fmt.Sprintf(`{"api_key":%q,"event":"before %s","distinct_id":"u","uuid":%q}`, boot.ProjectAPIKey, sig, id)
			if status, body := request(t, "POST", p.captureURL+"/capture/", "", event); status != 200 {
				t.Fatalf("capture: %d %s", status, body)
			}
			code := p.stop(t, sig)
			log := p.log()
			if code != 0 || !strings.Contains(log, `msg="shutting down"`) || !strings.Contains(log, `msg="database checkpointed"`) ||
				strings.Contains(log, "level=ERROR") {
				t.Fatalf("after %v: exit %d:\n%s", sig, code, log)
			}
			if info, err := os.Stat(filepath.Join(dataDir, databaseFile+".wal")); err == nil && info.Size() > 0 {
				t.Fatalf("shutdown on %v left a %d-byte WAL", sig, info.Size())
			}
			var n int
			if err := openDatabase(t, dataDir).QueryRow(`SELECT count(*) FROM events WHERE uuid = ?`, id).Scan(&n); err != nil || n != 1 {
				t.Fatalf("the acknowledged event is stored %d times (%v)", n, err)
			}
		})
	}
}

// SIGTERM interrupts the users' queries rather than wait out their time limit: hedge
// exits cleanly within seconds, and a query running then answers 503.
func TestBinaryShutdownInterruptsQueries(t *testing.T) {
	p, boot, _ := startServing(t)
	answered := make(chan int, 1)
	go func() {
		body := `{"query": {"kind": "HogQLQuery", "query": "SELECT count(*) FROM range(1000000000000)"}}`
		req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/projects/%d/query/", p.adminURL, boot.ProjectID), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+boot.PersonalAPIKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	time.Sleep(time.Second) // the query runs
	start := time.Now()
	if code := p.stop(t, syscall.SIGTERM); code != 0 || strings.Contains(p.log(), "level=ERROR") {
		t.Fatalf("exit %d:\n%s", code, p.log())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("hedge took %s to exit with a query running:\n%s", took, p.log())
	}
	if status := <-answered; status != http.StatusServiceUnavailable {
		t.Fatalf("the running query answered %d, want 503", status)
	}
}

// --log-level sets what hedge logs: debug adds the Writer's checkpoints to the info
// lines, info leaves them out, and error leaves a clean run silent.
func TestBinaryLogLevel(t *testing.T) {
	checkpoints := regexp.MustCompile(`(?m)^hedge_writer_checkpoints_total ([0-9]+)$`)
	f := func(level string, check func(log string) bool) {
		t.Helper()
		dataDir := t.TempDir()
		p, _ := launchProcess(t, []string{"HEDGE_DATA=" + dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=127.0.0.1:0"},
			"--log-level", level, "--checkpoint-interval", "100ms")
		// Below info hedge does not log where it serves: bootstrap.json says it.
		var boot admin.Bootstrap
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if text, err := os.ReadFile(filepath.Join(dataDir, admin.BootstrapFile)); err == nil && json.Unmarshal(text, &boot) == nil {
				break
			}
			select {
			case <-p.exited:
				t.Fatalf("--log-level %s: hedge exited:\n%s", level, p.log())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("--log-level %s: no bootstrap.json:\n%s", level, p.log())
			}
		}
		event := fmt.Sprintf(`{"api_key":%q,"event":"e","distinct_id":"u"}`, boot.ProjectAPIKey)
		if status, body := request(t, "POST", boot.CaptureURL+"/capture/", "", event); status != 200 {
			t.Fatalf("--log-level %s: capture: %d %s", level, status, body)
		}
		// The Writer checkpoints the committed event within an interval or two.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, metrics := request(t, "GET", boot.AdminURL+"/metrics", "", "")
			if m := checkpoints.FindStringSubmatch(metrics); m != nil && m[1] != "0" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("--log-level %s: no checkpoint:\n%s", level, p.log())
			}
		}
		if code := p.stop(t, syscall.SIGTERM); code != 0 || !check(p.log()) {
			t.Fatalf("--log-level %s: exit %d, logged:\n%s", level, code, p.log())
		}
	}
	f("debug", func(log string) bool {
		return strings.Contains(log, `level=DEBUG msg="checkpoint done"`) && strings.Contains(log, "level=INFO msg=serving")
	})
	f("info", func(log string) bool {
		return !strings.Contains(log, "level=DEBUG") && strings.Contains(log, "level=INFO msg=serving")
	})
	f("error", func(log string) bool { return log == "" })
}

// The first start's password signs in to the console; `hedge passwd` on the stopped
// data directory replaces it, and refuses while hedge serves.
func TestBinaryPasswd(t *testing.T) {
	signIn := func(p *process, email, password string) int {
		status, _ := request(t, "POST", p.adminURL+"/api/login/", "", fmt.Sprintf(`{"email":%q,"password":%q}`, email, password))
		return status
	}
	passwd := func(dataDir, email, password string) (int, string) {
		cmd := exec.Command(hedgeBinary(t), "passwd", "--data", dataDir, "--email", email)
		cmd.Stdin = strings.NewReader(password + "\n")
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	p, boot, dataDir := startServing(t)
	if status := signIn(p, boot.UserEmail, boot.AdminPassword); status != 200 {
		t.Fatalf("the bootstrap password: %d", status)
	}
	if code, out := passwd(dataDir, boot.UserEmail, "another password"); code == 0 || !strings.Contains(out, "another hedge") {
		t.Fatalf("passwd while hedge serves: exit %d\n%s", code, out)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if code, out := passwd(dataDir, boot.UserEmail, "short"); code != 1 || !strings.Contains(out, "too short") {
		t.Fatalf("a short password: exit %d\n%s", code, out)
	}
	if code, out := passwd(dataDir, "nobody@example.com", "another password"); code != 1 || !strings.Contains(out, "no active user") {
		t.Fatalf("an unknown user: exit %d\n%s", code, out)
	}
	if code, out := passwd(dataDir, strings.ToUpper(boot.UserEmail), "another password"); code != 0 {
		t.Fatalf("passwd: exit %d\n%s", code, out)
	}
	restarted := startProcess(t, []string{"HEDGE_DATA=" + dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=127.0.0.1:0"})
	if signIn(restarted, boot.UserEmail, boot.AdminPassword) != 400 || signIn(restarted, boot.UserEmail, "another password") != 200 {
		t.Fatal("the new password does not replace the old one")
	}
}
