package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// moduleRoot is the directory of hedge's go.mod, where the suite builds and benchmarks.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("cannot find hedge's go.mod (run the suite inside the repository): %v", err)
	}
	return filepath.Dir(gomod), nil
}

// describe is the commit the working tree is at, -dirty when it has changes.
func describe(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// buildHedge builds the hedge command of the module at root into out.
func buildHedge(ctx context.Context, root, out, version string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X main.version="+version, "-o", out, ".")
	cmd.Dir = root
	if text, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cannot build hedge: %w\n%s", err, text)
	}
	return nil
}

// hedgeVersions runs `hedge version`: hedge's version and DuckDB's.
func hedgeVersions(ctx context.Context, binary string) (hedge, duckdb string, err error) {
	out, err := exec.CommandContext(ctx, binary, "version").Output()
	if err != nil {
		return "", "", fmt.Errorf("cannot run %s version: %w", binary, err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "hedge "); ok {
			hedge = v
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "DuckDB "); ok {
			duckdb = v
		}
	}
	return hedge, duckdb, nil
}

// bootstrap is the part of <data>/bootstrap.json a load test needs.
type bootstrap struct {
	OrganizationID string `json:"organization_id"`
	ProjectID      int64  `json:"project_id"`
	ProjectAPIKey  string `json:"project_api_key"`
	PersonalAPIKey string `json:"personal_api_key"`
	AdminURL       string `json:"admin_url"`
	CaptureURL     string `json:"capture_url"`
}

func readBootstrap(path string) (*bootstrap, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the credentials: %w", err)
	}
	var b bootstrap
	if err := json.Unmarshal(text, &b); err != nil {
		return nil, fmt.Errorf("cannot read the credentials in %s: %w", path, err)
	}
	return &b, nil
}

// hedgeProcess is a `hedge serve` the suite started.
type hedgeProcess struct {
	cmd                  *exec.Cmd
	adminURL, captureURL string
	exited               chan struct{}
	mu                   sync.Mutex
	logs                 []string // the last lines of its log
}

var servingLine = regexp.MustCompile(`msg=serving admin_url=(\S+) capture_url=(\S+)`)

// hedgeEnv is the environment the suite runs hedge in: its own without the HEDGE_*
// variables, so that the suite measures hedge's defaults whatever the shell has set.
func hedgeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HEDGE_") {
			env = append(env, kv)
		}
	}
	return env
}

// startHedge runs `hedge serve` on dataDir with both listeners on free loopback ports
// and waits until it serves, in hedgeEnv.
func startHedge(binary, dataDir string, pprof bool, flags ...string) (*hedgeProcess, error) {
	args := append([]string{"serve", "--data", dataDir, "--admin-addr", "127.0.0.1:0", "--capture-addr", "127.0.0.1:0"}, flags...)
	if pprof {
		args = append(args, "--pprof")
	}
	p := &hedgeProcess{cmd: exec.Command(binary, args...), exited: make(chan struct{})}
	p.cmd.Env = hedgeEnv()
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("cannot start hedge: %w", err)
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start hedge: %w", err)
	}
	serving := make(chan struct{})
	go func() {
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			line := scanner.Text()
			p.mu.Lock()
			p.logs = append(p.logs[max(0, len(p.logs)-49):], line)
			if m := servingLine.FindStringSubmatch(line); m != nil && p.adminURL == "" {
				p.adminURL, p.captureURL = m[1], m[2]
				close(serving)
			}
			p.mu.Unlock()
		}
		p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-serving:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("hedge exited before serving:\n%s", p.log())
	case <-time.After(2 * time.Minute):
		p.cmd.Process.Kill()
		<-p.exited
		return nil, fmt.Errorf("hedge did not serve within 2 minutes:\n%s", p.log())
	}
}

func (p *hedgeProcess) pid() int { return p.cmd.Process.Pid }

func (p *hedgeProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// logTail is the end of hedge's log, for an error.
func (p *hedgeProcess) logTail() string { return "hedge's log:\n" + p.log() }

// stop shuts hedge down with SIGTERM, as a service manager would, and reports an
// unclean exit: one that lost no event still must not fail.
func (p *hedgeProcess) stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(2 * time.Minute):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("hedge did not stop within 2 minutes of SIGTERM:\n%s", p.log())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("hedge exited %d after SIGTERM:\n%s", code, p.log())
	}
	return nil
}

// kill ends hedge at once, when the suite itself fails.
func (p *hedgeProcess) kill() {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	<-p.exited
}
