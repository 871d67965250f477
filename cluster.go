package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hedge-analytics/hedge/admin"
)

// hedge cluster up|down --dir D runs a cluster of three hedge serve processes on
// loopback, for trying a cluster and for tests: one JetStream cluster whose streams
// are replicated on all three (R3), an edge on each, and the warehouse on the first.
// D/cluster.json says where everything is; each node keeps its data and its log in
// D/<name>/ (hedge.log there holds what it prints).

// clusterFile is D/cluster.json.
type clusterFile struct {
	Nodes []clusterNode `json:"nodes"`
	// Bootstrap is the warehouse node's bootstrap.json: the project's API key and the
	// personal API key that scripts drive the cluster with.
	Bootstrap json.RawMessage `json:"bootstrap,omitempty"`
	// Secret authenticates the nodes' routes (--log-cluster-secret), given to each in
	// its environment.
	Secret string `json:"secret"`
	// Lake is the bucket the warehouse node keeps the lake's parts in, chosen at the
	// first up and kept; nil: its data directory's lake.
	Lake *clusterLake `json:"lake,omitempty"`
}

// clusterLake is the warehouse node's --lake-s3 flags; the keys come from the
// environment of up (HEDGE_LAKE_S3_ACCESS_KEY_ID and ..._SECRET_ACCESS_KEY), which the
// nodes inherit, and are not written to cluster.json.
type clusterLake struct {
	S3       string `json:"s3"`
	Endpoint string `json:"endpoint"`
	Insecure bool   `json:"insecure,omitempty"`
	Region   string `json:"region,omitempty"`
}

// flags are the lake's hedge serve flags.
func (l *clusterLake) flags() []string {
	if l == nil {
		return nil
	}
	flags := []string{"--lake-s3", l.S3, "--lake-s3-endpoint", l.Endpoint, "--lake-s3-insecure=" + strconv.FormatBool(l.Insecure)}
	if l.Region != "" {
		flags = append(flags, "--lake-s3-region", l.Region)
	}
	return flags
}

// clusterNode is one node of clusterFile. Its addresses are chosen at the first up
// and kept, so that a node restarts where its peers route to it.
type clusterNode struct {
	Name string `json:"name"`
	// PID is the process last started for the node; up and down act on it only while
	// it is that node's hedge (its command line names the node's data directory).
	PID        int    `json:"pid"`
	CaptureURL string `json:"capture_url"`
	// AdminURL is where the node's management requests go: the warehouse node's
	// management listener, the only one of the cluster.
	AdminURL  string `json:"admin_url"`
	Warehouse bool   `json:"warehouse"`
	DataDir   string `json:"data_dir"`
	// LogAddr is the node's --log-cluster address, AdminAddr the warehouse node's
	// management listener.
	LogAddr   string `json:"log_addr"`
	AdminAddr string `json:"admin_addr,omitempty"`
}

const (
	clusterFileName = "cluster.json"
	clusterSize     = 3
	// clusterWait bounds how long up waits for the nodes to answer /_health.
	clusterWait = 3 * time.Minute
	// clusterStopWait is how long down waits for a node's graceful stop (which drains
	// the log into the warehouse) before it kills the node.
	clusterStopWait = 90 * time.Second
)

func clusterCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down") {
		fmt.Fprintln(stderr, "usage: hedge cluster up|down --dir DIR")
		return 2
	}
	fs := flag.NewFlagSet("cluster "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "./hedge-cluster", "directory of the cluster: cluster.json and a data directory per node")
	var lake clusterLake
	if args[0] == "up" {
		fs.StringVar(&lake.S3, "lake-s3", "", "s3://bucket/prefix that the warehouse node keeps the lake's parts in (hedge serve --lake-s3), chosen at the first up; the keys come from HEDGE_LAKE_S3_ACCESS_KEY_ID and HEDGE_LAKE_S3_SECRET_ACCESS_KEY")
		fs.StringVar(&lake.Endpoint, "lake-s3-endpoint", "", "host[:port] of the S3-compatible server of --lake-s3")
		fs.BoolVar(&lake.Insecure, "lake-s3-insecure", false, "speak HTTP, not HTTPS, to --lake-s3-endpoint")
		fs.StringVar(&lake.Region, "lake-s3-region", "", "the region of the --lake-s3 bucket (hedge serve's default when empty)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "hedge cluster: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "hedge cluster:", err)
		return 1
	}
	if args[0] == "up" {
		var l *clusterLake
		if lake != (clusterLake{}) {
			l = &lake
		}
		err = clusterUp(abs, l, stdout)
	} else {
		err = clusterDown(abs, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "hedge cluster:", err)
		return 1
	}
	return 0
}

// clusterUp starts whichever of the cluster's nodes are not running (all of them the
// first time), waits until every node answers, and writes cluster.json. lake, given at
// the first up, is the bucket of the lake's parts; a later up keeps the first's.
func clusterUp(dir string, lake *clusterLake, stdout io.Writer) error {
	c, err := readCluster(dir)
	if errors.Is(err, os.ErrNotExist) {
		c, err = planCluster(dir)
		if err == nil {
			c.Lake = lake
		}
	} else if err == nil && lake != nil && (c.Lake == nil || *lake != *c.Lake) {
		// The catalog names the parts where the first up put them: another bucket
		// would hold none of them.
		return fmt.Errorf("the cluster of %s keeps its lake where its first up put it (%s): --lake-s3 cannot change it", dir, c.lakeName())
	}
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the hedge binary: %w", err)
	}
	exited := make(map[string]<-chan error)
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if running(n) {
			continue
		}
		if exited[n.Name], err = startNode(self, c, n); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "started %s (pid %d)\n", n.Name, n.PID)
	}
	// Written before the wait, so that down ends what was started even if the wait fails.
	if err := writeCluster(dir, c); err != nil {
		return err
	}
	deadline := time.Now().Add(clusterWait)
	for _, n := range c.Nodes {
		if err := waitHealthy(n, exited[n.Name], deadline); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		if n.Warehouse {
			if c.Bootstrap, err = os.ReadFile(filepath.Join(n.DataDir, admin.BootstrapFile)); err != nil {
				return fmt.Errorf("cannot read the warehouse node's bootstrap: %w", err)
			}
		}
	}
	if err := writeCluster(dir, c); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		role := "edge"
		if n.Warehouse {
			role = "edge, warehouse, management API " + n.AdminURL
		}
		fmt.Fprintf(stdout, "%s: capture %s (%s)\n", n.Name, n.CaptureURL, role)
	}
	fmt.Fprintf(stdout, "lake: %s\n", c.lakeName())
	fmt.Fprintf(stdout, "cluster up: %s\n", filepath.Join(dir, clusterFileName))
	return nil
}

// clusterDown stops the cluster's running nodes: SIGTERM, then SIGKILL for a node not
// gone after clusterStopWait.
func clusterDown(dir string, stdout io.Writer) error {
	c, err := readCluster(dir)
	if err != nil {
		return err
	}
	// The warehouse node first, while the others keep the log's quorum: its graceful
	// stop applies what the log holds. Events the other edges take meanwhile wait in
	// the log for the next up.
	for _, warehouse := range []bool{true, false} {
		var stopping []clusterNode
		for _, n := range c.Nodes {
			if n.Warehouse == warehouse && running(&n) && syscall.Kill(n.PID, syscall.SIGTERM) == nil {
				stopping = append(stopping, n)
			}
		}
		deadline := time.Now().Add(clusterStopWait)
		for _, n := range stopping {
			for running(&n) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if running(&n) {
				syscall.Kill(n.PID, syscall.SIGKILL)
				fmt.Fprintf(stdout, "killed %s (pid %d): it did not stop within %s\n", n.Name, n.PID, clusterStopWait)
				continue
			}
			fmt.Fprintf(stdout, "stopped %s (pid %d)\n", n.Name, n.PID)
		}
	}
	return nil
}

// lakeName says where the cluster keeps its lake.
func (c *clusterFile) lakeName() string {
	if c.Lake == nil {
		return "the warehouse node's data directory"
	}
	return c.Lake.S3
}

// planCluster chooses the nodes' names, directories and free loopback ports.
func planCluster(dir string) (*clusterFile, error) {
	ports, err := freePorts(2*clusterSize + 1) // a log and a capture address each, and the management listener's
	if err != nil {
		return nil, err
	}
	addr := func() string {
		a := "127.0.0.1:" + strconv.Itoa(ports[0])
		ports = ports[1:]
		return a
	}
	c := &clusterFile{Secret: rand.Text()}
	for i := range clusterSize {
		name := "node" + strconv.Itoa(i+1)
		n := clusterNode{Name: name, DataDir: filepath.Join(dir, name), Warehouse: i == 0, LogAddr: addr()}
		n.CaptureURL = "http://" + addr()
		if n.Warehouse {
			n.AdminAddr = addr()
		}
		c.Nodes = append(c.Nodes, n)
	}
	for i := range c.Nodes {
		c.Nodes[i].AdminURL = "http://" + c.Nodes[0].AdminAddr
	}
	return c, nil
}

// freePorts returns n loopback ports free now: each held open until all are chosen.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cannot find a free port: %w", err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startNode starts n's hedge serve, in a session of its own so that it outlives up,
// and returns a channel that receives when it exits while up runs.
func startNode(self string, c *clusterFile, n *clusterNode) (<-chan error, error) {
	if err := os.MkdirAll(n.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create %s's directory: %w", n.Name, err)
	}
	out, err := os.OpenFile(filepath.Join(n.DataDir, "hedge.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s's log: %w", n.Name, err)
	}
	defer out.Close()
	var routes []string
	for _, peer := range c.Nodes {
		routes = append(routes, peer.LogAddr)
	}
	args := []string{"serve", "--data", n.DataDir, "--node-name", n.Name, "--log", logJetStream,
		"--log-cluster", n.LogAddr, "--log-routes", strings.Join(routes, ","),
		"--capture-addr", strings.TrimPrefix(n.CaptureURL, "http://"),
		"--warehouse=" + strconv.FormatBool(n.Warehouse)}
	if n.Warehouse {
		args = append(args, "--admin-addr", n.AdminAddr)
		args = append(args, c.Lake.flags()...)
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "HEDGE_LOG_CLUSTER_SECRET="+c.Secret)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", n.Name, err)
	}
	n.PID = cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited, nil
}

// running reports whether n's process runs and is n's hedge: a pid may have been
// taken by another process since.
func running(n *clusterNode) bool {
	if n.PID <= 0 || syscall.Kill(n.PID, 0) != nil {
		return false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(n.PID), "cmdline"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // no /proc to tell by: trust the pid
	}
	// A zombie's command line is empty; the arguments are NUL-separated.
	return bytes.Contains(cmdline, []byte("\x00--data\x00"+n.DataDir+"\x00"))
}

// waitHealthy waits until n's capture listener (and the warehouse node's management
// listener) answer /_health, its process exits, or the deadline passes.
func waitHealthy(n clusterNode, exited <-chan error, deadline time.Time) error {
	urls := []string{n.CaptureURL + "/_health"}
	if n.Warehouse {
		urls = append(urls, n.AdminURL+"/_health")
	}
	client := &http.Client{Timeout: 2 * time.Second}
	for _, u := range urls {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			cancel()
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
			select {
			case err := <-exited:
				return fmt.Errorf("%s exited (%v): see %s", n.Name, err, filepath.Join(n.DataDir, "hedge.log"))
			case <-time.After(200 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s does not answer %s after %s: see %s", n.Name, u, clusterWait, filepath.Join(n.DataDir, "hedge.log"))
			}
		}
	}
	return nil
}

func readCluster(dir string) (*clusterFile, error) {
	text, err := os.ReadFile(filepath.Join(dir, clusterFileName))
	if err != nil {
		return nil, err
	}
	c := &clusterFile{}
	if err := json.Unmarshal(text, c); err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", filepath.Join(dir, clusterFileName), err)
	}
	if len(c.Nodes) != clusterSize {
		return nil, fmt.Errorf("%s holds %d nodes, not %d", filepath.Join(dir, clusterFileName), len(c.Nodes), clusterSize)
	}
	return c, nil
}

// writeCluster replaces cluster.json whole (a rename), so a reader never sees half.
func writeCluster(dir string, c *clusterFile) error {
	text, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode cluster.json: %w", err)
	}
	path := filepath.Join(dir, clusterFileName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the cluster's directory: %w", err)
	}
	if err := os.WriteFile(path+".tmp", append(text, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot write cluster.json: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("cannot write cluster.json: %w", err)
	}
	return nil
}
