package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// The cluster scenarios send a load of the other scenarios to a cluster of three
// hedge serve processes that `hedge cluster up` starts on this machine (one JetStream
// cluster, streams replicated on all three, an edge on each node, the warehouse on
// node1), their connections spread evenly over the nodes' capture listeners, and the
// report compares each with the same load on one hedge, directly and through the log.

// clusterSuffix ends the name of a scenario that runs against a cluster (scenario.Cluster).
const clusterSuffix = "-cluster"

// lakeSuffix ends the name of a scenario whose hedge keeps its events in the lake
// (scenario.Lake, queryBench.Lake).
const lakeSuffix = "-lake"

// clusterNodes is how many nodes `hedge cluster up` starts: a cluster scenario's
// connections are a multiple of it, so that each node takes as many.
const clusterNodes = 3

// clusterFile is the part of <dir>/cluster.json, which `hedge cluster up` writes,
// that the suite needs.
type clusterFile struct {
	Nodes []struct {
		Name       string `json:"name"`
		PID        int    `json:"pid"`
		CaptureURL string `json:"capture_url"`
		Warehouse  bool   `json:"warehouse"`
		DataDir    string `json:"data_dir"`
	} `json:"nodes"`
	// Bootstrap is the warehouse node's bootstrap.json.
	Bootstrap bootstrap `json:"bootstrap"`
}

func readClusterFile(dir string) (*clusterFile, error) {
	path := filepath.Join(dir, "cluster.json")
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the cluster's nodes: %w", err)
	}
	var c clusterFile
	if err := json.Unmarshal(text, &c); err != nil {
		return nil, fmt.Errorf("cannot read the cluster's nodes in %s: %w", path, err)
	}
	if len(c.Nodes) != clusterNodes || c.Bootstrap.AdminURL == "" {
		return nil, fmt.Errorf("%s holds %d nodes and management API %q: want %d nodes and one", path, len(c.Nodes), c.Bootstrap.AdminURL, clusterNodes)
	}
	return &c, nil
}

// warehouseDir is the data directory of the node that holds the warehouse.
func (c *clusterFile) warehouseDir() (string, error) {
	for _, n := range c.Nodes {
		if n.Warehouse {
			return n.DataDir, nil
		}
	}
	return "", errors.New("no node of the cluster holds the warehouse")
}

// hedgeCluster is a cluster the suite started with `hedge cluster up`. Its nodes run
// in sessions of their own, not as the suite's children: `hedge cluster down` stops
// them, and their exit status is not the suite's to read, so an unclean stop is found
// in their logs (exitErrors).
type hedgeCluster struct {
	binary, dir string
	file        *clusterFile
	// logStart is where each node's hedge.log (appended to at every up) was when the
	// suite started the cluster: what the nodes logged since is this cluster's.
	logStart map[string]int64
}

// exitErrors are the messages after which hedge serve exits 1 (serve.go's serve).
var exitErrors = []string{`msg="unclean shutdown"`, `msg="listener failed"`, `msg="DuckDB has invalidated the database`}

// startCluster runs `hedge cluster up --dir dir` with binary, which returns once every
// node answers, and reads where the nodes are.
func startCluster(ctx context.Context, binary, dir string) (*hedgeCluster, error) {
	c := &hedgeCluster{binary: binary, dir: dir, logStart: map[string]int64{}}
	// The nodes' directories are planned by up, as node1..node3 of dir (cluster.go),
	// and a log a previous up left in them is not this cluster's.
	for i := range clusterNodes {
		name := fmt.Sprintf("node%d", i+1)
		if info, err := os.Stat(filepath.Join(dir, name, "hedge.log")); err == nil {
			c.logStart[name] = info.Size()
		}
	}
	if out, err := c.command(ctx, "up"); err != nil {
		// up may have started some nodes before it failed: down ends those.
		c.kill()
		return nil, fmt.Errorf("cannot start the cluster: hedge cluster up: %w\n%s\n%s", err, out, c.logTail())
	}
	file, err := readClusterFile(dir)
	if err != nil {
		c.kill()
		return nil, err
	}
	c.file = file
	return c, nil
}

// command runs `hedge cluster <verb> --dir dir` and returns what it printed. The nodes
// inherit its environment: without HEDGE_* variables, as startHedge's hedge.
func (c *hedgeCluster) command(ctx context.Context, verb string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.binary, "cluster", verb, "--dir", c.dir)
	cmd.Env = hedgeEnv()
	return cmd.CombinedOutput()
}

// target is the cluster as the load sees it: node1's management API, every node's
// capture listener and process.
func (c *hedgeCluster) target() *target {
	boot := c.file.Bootstrap
	t := &target{AdminURL: boot.AdminURL, ProjectID: boot.ProjectID, token: boot.ProjectAPIKey,
		api: newAPIClient(boot.AdminURL, boot.PersonalAPIKey, boot.ProjectID)}
	for _, n := range c.file.Nodes {
		t.CaptureURLs = append(t.CaptureURLs, n.CaptureURL)
		t.pids = append(t.pids, n.PID)
		t.nodes = append(t.nodes, n.Name)
	}
	t.CaptureURL = t.CaptureURLs[0]
	return t
}

// describe says where the nodes are, for the suite's log.
func (c *hedgeCluster) describe() string {
	var nodes []string
	for _, n := range c.file.Nodes {
		role := ""
		if n.Warehouse {
			role = ", warehouse, management " + c.file.Bootstrap.AdminURL
		}
		nodes = append(nodes, fmt.Sprintf("%s capture %s (pid %d%s)", n.Name, n.CaptureURL, n.PID, role))
	}
	return fmt.Sprintf("hedge cluster %s: %s", c.dir, strings.Join(nodes, "; "))
}

// stop runs `hedge cluster down` and reports what was unclean: a node that was gone
// before it, one it had to kill, one that logged why it exited 1.
func (c *hedgeCluster) stop() error {
	var problems []string
	for _, n := range c.file.Nodes {
		if syscall.Kill(n.PID, 0) != nil {
			problems = append(problems, fmt.Sprintf("%s (pid %d) exited before hedge cluster down", n.Name, n.PID))
		}
	}
	// The stop is bounded by down's own waits; an interrupted suite still stops it.
	out, err := c.command(context.Background(), "down")
	if err != nil {
		problems = append(problems, fmt.Sprintf("hedge cluster down: %v\n%s", err, out))
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "killed ") {
			problems = append(problems, "hedge cluster down "+strings.TrimSpace(line))
		}
	}
	for _, n := range c.file.Nodes {
		lines, err := c.nodeLog(n.Name, func(line string) bool {
			return slices.ContainsFunc(exitErrors, func(msg string) bool { return strings.Contains(line, msg) })
		})
		if err != nil {
			problems = append(problems, err.Error())
		}
		for _, line := range lines {
			problems = append(problems, n.Name+": "+line)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the cluster did not stop cleanly: %s\n%s", strings.Join(problems, "; "), c.logTail())
	}
	return nil
}

// kill stops the cluster when the suite itself fails: down, which signals only the
// processes that are still the nodes' hedge.
func (c *hedgeCluster) kill() {
	c.command(context.Background(), "down")
}

// logTail is the end of what each node logged since the cluster started, for an error.
func (c *hedgeCluster) logTail() string {
	var b strings.Builder
	for i := range clusterNodes {
		name := fmt.Sprintf("node%d", i+1)
		lines, err := c.nodeLog(name, func(string) bool { return true })
		if err != nil {
			fmt.Fprintf(&b, "%s\n", err)
			continue
		}
		fmt.Fprintf(&b, "%s's log (%s):\n%s\n", name, filepath.Join(c.dir, name, "hedge.log"), strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
	return b.String()
}

// nodeLog is the lines of the node's hedge.log since the cluster started that keep
// selects.
func (c *hedgeCluster) nodeLog(name string, keep func(string) bool) ([]string, error) {
	f, err := os.Open(filepath.Join(c.dir, name, "hedge.log"))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s's log: %w", name, err)
	}
	defer f.Close()
	if _, err := f.Seek(c.logStart[name], io.SeekStart); err != nil {
		return nil, fmt.Errorf("cannot read %s's log: %w", name, err)
	}
	var lines []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		if keep(scanner.Text()) {
			lines = append(lines, scanner.Text())
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("cannot read %s's log: %w", name, err)
	}
	return lines, nil
}

// versus is a cluster (or lake) scenario's figures over those of the same load on one
// hedge (with the events table) in the same suite: each a ratio, above 1 when the
// cluster's is higher (throughput, latency or memory alike).
type versus struct {
	// Scenario is the load on one hedge: the scenario's name without clusterSuffix or
	// lakeSuffix (directly), or with logSuffix instead (through the log).
	Scenario        string  `json:"scenario"`
	EventsPerSecond float64 `json:"events_per_second"`
	// StoredPerSecond compares the events acknowledged and stored a second: those of
	// the measured time over it and the wait for the warehouse to apply them.
	StoredPerSecond float64 `json:"stored_per_second"`
	LatencyP50      float64 `json:"latency_p50"`
	LatencyP99      float64 `json:"latency_p99"`
	LatencyMax      float64 `json:"latency_max"`
	// PeakRSS is the nodes' peaks added up over the one hedge's peak.
	PeakRSS float64 `json:"peak_rss"`
	// CaughtUp compares how long the row checks waited for the warehouse to apply the
	// acknowledged events; only through the log: hedge alone stores before it answers.
	CaughtUp float64 `json:"caught_up,omitempty"`
}

// compareCluster sets each cluster (and lake) scenario's comparison with the same load
// on one hedge, directly and through the log, where the suite ran those.
func compareCluster(results []*result) {
	find := func(name string) *result {
		for _, r := range results {
			if r.Scenario.Name == name {
				return r
			}
		}
		return nil
	}
	ratio := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return a / b
	}
	for _, res := range results {
		if !res.Scenario.Cluster && !res.Scenario.Lake {
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(res.Scenario.Name, clusterSuffix), lakeSuffix)
		for _, name := range []string{base, base + logSuffix} {
			other := find(name)
			if other == nil {
				continue
			}
			v := versus{Scenario: name, EventsPerSecond: ratio(res.EventsPerSecond, other.EventsPerSecond),
				LatencyP50: ratio(res.Latency.P50, other.Latency.P50), LatencyP99: ratio(res.Latency.P99, other.Latency.P99),
				LatencyMax: ratio(res.Latency.Max, other.Latency.Max), PeakRSS: ratio(float64(res.PeakRSS), float64(other.PeakRSS)),
				StoredPerSecond: ratio(storedPerSecond(res), storedPerSecond(other))}
			if other.Scenario.Log {
				v.CaughtUp = ratio(caughtUp(res).Seconds(), caughtUp(other).Seconds())
			}
			res.Versus = append(res.Versus, v)
		}
	}
}

// storedPerSecond is the events a scenario had acknowledged and stored a second: its
// rate over its measured time, spread over that time and the wait for the warehouse
// to apply them (none when the 200 waits for the commit).
func storedPerSecond(r *result) float64 {
	d := r.Scenario.Duration.Seconds()
	if d <= 0 {
		return 0
	}
	return r.EventsPerSecond * d / (d + caughtUp(r).Seconds())
}

// caughtUp is the longest wait of a scenario's row checks for the warehouse to apply
// what was acknowledged.
func caughtUp(r *result) time.Duration {
	var d time.Duration
	for _, run := range r.Runs {
		d = max(d, run.Rows.CaughtUp)
	}
	return d
}

// printVersus writes a cluster scenario's figures beside those of the same load on one
// hedge (results), each followed by the cluster's ratio to it.
func printVersus(w io.Writer, r *result, results []*result) {
	if r.Scenario.Cluster {
		fmt.Fprintf(w, "\n%s (%d nodes) beside one hedge; ratio: the cluster's figure over the one hedge's:\n", r.Scenario.Name, clusterNodes)
	} else {
		fmt.Fprintf(w, "\n%s beside the events table; ratio: the lake's figure over the table's:\n", r.Scenario.Name)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tevents/s\tstored/s\tp50\tp99\tmax\tcaught up\tpeak RSS\t")
	row := func(res *result) {
		caught := "-"
		if res.Scenario.Log || res.Scenario.Cluster || res.Scenario.Lake {
			caught = caughtUp(res).Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s MiB\t\n", res.Scenario.Name, thousands(res.EventsPerSecond), thousands(storedPerSecond(res)),
			millis(res.Latency.P50), millis(res.Latency.P99), millis(res.Latency.Max), caught, thousands(float64(res.PeakRSS>>20)))
	}
	row(r)
	for _, v := range r.Versus {
		for _, other := range results {
			if other.Scenario.Name == v.Scenario {
				row(other)
			}
		}
		caught := "-"
		if v.CaughtUp > 0 {
			caught = fmt.Sprintf("%.2f", v.CaughtUp)
		}
		fmt.Fprintf(tw, "  ratio\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%.2f\t\n", v.EventsPerSecond, v.StoredPerSecond, v.LatencyP50, v.LatencyP99, v.LatencyMax, caught, v.PeakRSS)
	}
	tw.Flush()
	if len(r.NodePeakRSS) > 0 {
		var nodes []string
		for _, name := range slices.Sorted(maps.Keys(r.NodePeakRSS)) {
			nodes = append(nodes, fmt.Sprintf("%s %s MiB", name, thousands(float64(r.NodePeakRSS[name]>>20))))
		}
		fmt.Fprintf(w, "%s: peak RSS per node: %s (added up above: what the nodes need on machines of their own)\n", r.Scenario.Name, strings.Join(nodes, ", "))
	}
}
