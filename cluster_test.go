package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/internal/s3test"
)

// testCluster is a cluster that `hedge cluster up` started for a test, as its
// cluster.json says; the test's cleanup ends it.
type testCluster struct {
	bin, dir string
	boot     admin.Bootstrap
}

func startCluster(t *testing.T, args ...string) *testCluster {
	t.Helper()
	c := &testCluster{bin: hedgeBinary(t), dir: t.TempDir()}
	t.Cleanup(func() {
		if out, err := exec.Command(c.bin, "cluster", "down", "--dir", c.dir).CombinedOutput(); err != nil {
			t.Errorf("hedge cluster down: %v\n%s", err, out)
		}
	})
	c.up(t, args...)
	if err := json.Unmarshal(c.file(t).Bootstrap, &c.boot); err != nil {
		t.Fatalf("cluster.json's bootstrap: %v", err)
	}
	return c
}

// up runs hedge cluster up (with args), which starts the nodes that are not running.
func (c *testCluster) up(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(c.bin, append([]string{"cluster", "up", "--dir", c.dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("hedge cluster up: %v\n%s\n%s", err, out, c.logs(t))
	}
}

func (c *testCluster) file(t *testing.T) *clusterFile {
	t.Helper()
	f, err := readCluster(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// kill SIGKILLs node i and waits until it is gone.
func (c *testCluster) kill(t *testing.T, i int) {
	t.Helper()
	n := c.file(t).Nodes[i]
	if err := syscall.Kill(n.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("cannot kill %s: %v", n.Name, err)
	}
	for running(&n) {
		time.Sleep(20 * time.Millisecond)
	}
}

// logs is the end of every node's hedge.log, for a failure's message.
func (c *testCluster) logs(t *testing.T) string {
	var b strings.Builder
	f, err := readCluster(c.dir)
	if err != nil {
		return ""
	}
	for _, n := range f.Nodes {
		out, _ := exec.Command("tail", "-n", "30", filepath.Join(n.DataDir, "hedge.log")).Output()
		fmt.Fprintf(&b, "--- %s\n%s", n.Name, out)
	}
	return b.String()
}

// problems are the warnings and errors of every node's hedge.log, but for the log
// server's own about peers and quorum, which a test that kills nodes provokes.
func (c *testCluster) problems(t *testing.T) string {
	var b strings.Builder
	for _, n := range c.file(t).Nodes {
		text, _ := os.ReadFile(filepath.Join(n.DataDir, "hedge.log"))
		for _, line := range strings.Split(string(text), "\n") {
			if (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) && !strings.Contains(line, `msg="log: `) {
				fmt.Fprintf(&b, "%s: %s\n", n.Name, line)
			}
		}
	}
	return b.String()
}

// clusterLoad sends /batch/ requests of batchSize events through every edge of a
// cluster, two senders per edge, until stop, and counts per edge the events answered
// 200 (acked, by uuid) and the requests that were not.
type clusterLoad struct {
	mu     sync.Mutex
	acked  map[string]bool
	perJob []atomic.Int64 // acked events per edge
	failed atomic.Int64
	stopCh chan struct{}
	wg     sync.WaitGroup
}

func startClusterLoad(edges []string, key string) *clusterLoad {
	const batchSize, senders = 20, 2
	l := &clusterLoad{acked: map[string]bool{}, perJob: make([]atomic.Int64, len(edges)), stopCh: make(chan struct{})}
	client := &http.Client{Timeout: 10 * time.Second}
	for e, edge := range edges {
		for s := range senders {
			l.wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-l.stopCh:
						return
					default:
					}
					var body bytes.Buffer
					uuids := make([]string, batchSize)
					fmt.Fprintf(&body, `{"api_key":%q,"batch":[`, key)
					for i := range uuids {
						uuids[i] = fmt.Sprintf("00000000-0000-4000-8%03d-%012d", e*10+s, n*batchSize+i)
						if i > 0 {
							body.WriteByte(',')
						}
						fmt.Fprintf(&body, `{"event":"load","uuid":%q,"distinct_id":"user-%d","properties":{"edge":%d}}`, uuids[i], i%7, e)
					}
					body.WriteString("]}")
					resp, err := client.Post(edge+"/batch/", "application/json", &body)
					if err == nil {
						resp.Body.Close()
					}
					if err != nil || resp.StatusCode != http.StatusOK {
						l.failed.Add(1)
						time.Sleep(50 * time.Millisecond)
						continue
					}
					l.mu.Lock()
					for _, u := range uuids {
						l.acked[u] = true
					}
					l.mu.Unlock()
					l.perJob[e].Add(batchSize)
				}
			})
		}
	}
	return l
}

func (l *clusterLoad) stop() {
	close(l.stopCh)
	l.wg.Wait()
}

// TestCluster starts a cluster of three OS processes with `hedge cluster up`, sends
// with posthog-node through every edge, then loads all three edges while it SIGKILLs
// an edge-only node and later the warehouse node, each started again with `cluster
// up`: the other edges keep answering 200 (into the log while the warehouse is down),
// and every acknowledged event is stored exactly once.
func TestCluster(t *testing.T) {
	requireSDKs(t)
	c := startCluster(t)
	f := c.file(t)
	var edges []string
	for _, n := range f.Nodes {
		edges = append(edges, n.CaptureURL)
	}
	adminURL := f.Nodes[0].AdminURL
	project := fmt.Sprintf("%s/api/projects/%d", adminURL, c.boot.ProjectID)

	// Flags are evaluated by the warehouse node, whichever edge is asked.
	status, body := request(t, http.MethodPost, project+"/feature_flags/", c.boot.PersonalAPIKey,
		`{"key":"cluster-flag","active":true,"filters":{"groups":[{"properties":[],"rollout_percentage":100}]}}`)
	if status != http.StatusCreated {
		t.Fatalf("creating a flag: %d %s", status, body)
	}
	var sdkEvents []string
	{
		var manifest struct {
			Events []struct{ UUID, Host string } `json:"events"`
			Flags  []struct {
				Host  string         `json:"host"`
				Flags map[string]any `json:"flags"`
			} `json:"flags"`
			Requests []struct {
				URL    string `json:"url"`
				Status int    `json:"status"`
			} `json:"requests"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := runNode(ctx, []string{"HEDGE_CAPTURE_URLS=" + strings.Join(edges, ","), "HEDGE_PROJECT_KEY=" + c.boot.ProjectAPIKey}, &manifest, "cluster.mjs"); err != nil {
			t.Fatalf("node cluster.mjs: %v", err)
		}
		for _, r := range manifest.Requests {
			if r.Status != http.StatusOK {
				t.Errorf("posthog-node's request %s answered %d", r.URL, r.Status)
			}
		}
		for _, fl := range manifest.Flags {
			if fl.Flags["cluster-flag"] != true {
				t.Errorf("flags through %s: %v, want cluster-flag true", fl.Host, fl.Flags)
			}
		}
		if len(manifest.Flags) != len(edges) || len(manifest.Events) != 25*len(edges) {
			t.Fatalf("posthog-node sent %d events and %d flag requests, want %d and %d", len(manifest.Events), len(manifest.Flags), 25*len(edges), len(edges))
		}
		for _, e := range manifest.Events {
			sdkEvents = append(sdkEvents, e.UUID)
		}
	}

	load := startClusterLoad(edges, c.boot.ProjectAPIKey)
	time.Sleep(2 * time.Second)
	c.kill(t, 1) // an edge-only node, and a replica of every stream
	time.Sleep(2 * time.Second)
	c.up(t)
	time.Sleep(2 * time.Second)
	c.kill(t, 0) // the warehouse node, and the leader of some streams
	killed, before := time.Now(), load.perJob[2].Load()
	// JetStream elects new stream leaders within seconds (its election timeout);
	// meanwhile publishes wait, or answer 503 past the edge's deadline.
	for load.perJob[2].Load() == before {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("node3's edge acknowledged no event in the 30 s after the warehouse node was killed\n%s", c.logs(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("node3's edge acknowledged again %s after the warehouse node was killed", time.Since(killed).Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	began := time.Now()
	c.up(t)
	t.Logf("the warehouse node restarted in %s", time.Since(began).Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	load.stop()
	t.Logf("acknowledged %d events (%d, %d, %d by edge); %d requests not answered 200",
		len(load.acked), load.perJob[0].Load(), load.perJob[1].Load(), load.perJob[2].Load(), load.failed.Load())

	// Without a quorum (both other nodes killed), an edge answers 503 with Retry-After
	// within its deadline, never a 200 from memory; the event it refused is not
	// counted, and the nodes come back.
	c.kill(t, 1)
	c.kill(t, 2)
	began = time.Now()
	resp, err := http.Post(edges[0]+"/batch/", "application/json", strings.NewReader(fmt.Sprintf(
		`{"api_key":%q,"batch":[{"event":"no quorum","distinct_id":"d"}]}`, c.boot.ProjectAPIKey)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("without a quorum: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	t.Logf("without a quorum the edge answered %d after %s", resp.StatusCode, time.Since(began).Round(time.Millisecond))
	c.up(t)

	// Once the warehouse has applied the log, a graceful stop, and the database is read.
	want := len(load.acked) + len(sdkEvents)
	began = time.Now()
	// Some events of requests not answered 200 are stored too, so the count passes the
	// acknowledged ones before the warehouse has applied them all: it must also stay
	// the same for 3 s.
	deadline := time.Now().Add(2 * time.Minute)
	last, since := -1, time.Now()
	for {
		status, body := request(t, http.MethodPost, project+"/query/", c.boot.PersonalAPIKey,
			`{"query":{"kind":"HogQLQuery","query":"SELECT count() FROM events"}}`)
		var answer struct{ Results [][]int }
		if status == http.StatusOK && json.Unmarshal([]byte(body), &answer) == nil && len(answer.Results) == 1 {
			if n := answer.Results[0][0]; n != last {
				last, since = n, time.Now()
			}
		}
		if last >= want && time.Since(since) >= 3*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the warehouse's events (%d) did not reach the %d acknowledged and stay after 2 minutes: %d %s\n%s", last, want, status, body, c.logs(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the warehouse had applied the log %s after the load", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	out, err := exec.Command(c.bin, "cluster", "down", "--dir", c.dir).CombinedOutput()
	if err != nil {
		t.Fatalf("hedge cluster down: %v\n%s", err, out)
	}
	t.Logf("hedge cluster down took %s:\n%s", time.Since(began).Round(time.Millisecond), out)
	// The events are in the lake: hedge lake files lists the parts, which stock DuckDB
	// reads.
	out, err = exec.Command(c.bin, "lake", "files", "--cluster", c.dir, "--project", fmt.Sprint(c.boot.ProjectID)).Output()
	if err != nil {
		t.Fatalf("hedge lake files: %v\n%s", err, out)
	}
	stock, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer stock.Close()
	rows, err := stock.Query(`SELECT uuid::VARCHAR, count(*) FROM read_parquet(?::VARCHAR[]) GROUP BY uuid`, strings.Fields(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for rows.Next() {
		var uuid string
		var n int
		if err := rows.Scan(&uuid, &n); err != nil {
			t.Fatal(err)
		}
		stored[uuid] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var lost []string
	duplicated := 0
	for _, n := range stored {
		if n > 1 {
			duplicated++
		}
	}
	for u := range load.acked {
		if stored[u] == 0 {
			lost = append(lost, u)
		}
	}
	for _, u := range sdkEvents {
		if stored[u] == 0 {
			lost = append(lost, u)
		}
	}
	if len(lost) != 0 || duplicated != 0 {
		slices.Sort(lost)
		t.Fatalf("of %d acknowledged events, %d lost (%v); %d uuids stored more than once\n%s",
			want, len(lost), lost[:min(len(lost), 20)], duplicated, c.problems(t))
	}
}

// TestClusterLakeS3: hedge cluster up --lake-s3 starts the warehouse node with its lake
// in the bucket, which the events captured through another node's edge reach; the
// bucket is kept in cluster.json (without the keys) for the next up, which refuses
// another.
func TestClusterLakeS3(t *testing.T) {
	s3 := s3test.New(t)
	ctx := context.Background()
	client := s3.Client(t)
	if err := client.MakeBucket(ctx, "lake", minio.MakeBucketOptions{Region: s3test.Region}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HEDGE_LAKE_S3_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("HEDGE_LAKE_S3_SECRET_ACCESS_KEY", s3test.SecretKey)
	c := startCluster(t, "--lake-s3", "s3://lake/cluster", "--lake-s3-endpoint", s3.Addr, "--lake-s3-insecure")
	f := c.file(t)
	if f.Lake == nil || f.Lake.S3 != "s3://lake/cluster" || f.Lake.Endpoint != s3.Addr || !f.Lake.Insecure {
		t.Fatalf("cluster.json's lake: %+v", f.Lake)
	}
	if text, err := os.ReadFile(filepath.Join(c.dir, clusterFileName)); err != nil || strings.Contains(string(text), s3test.SecretKey) {
		t.Fatalf("cluster.json holds the bucket's secret key (or cannot be read: %v)", err)
	}
	var batch []string
	for i := range 100 {
		batch = append(batch, fmt.Sprintf(`{"event":"cluster lake","distinct_id":"user-%d"}`, i%7))
	}
	resp, err := http.Post(f.Nodes[2].CaptureURL+"/batch/", "application/json", strings.NewReader(fmt.Sprintf(`{"api_key":%q,"batch":[%s]}`, c.boot.ProjectAPIKey, strings.Join(batch, ","))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("capture through node3: %d", resp.StatusCode)
	}
	objects := func() (n int) {
		for o := range client.ListObjects(ctx, "lake", minio.ListObjectsOptions{Prefix: "cluster/team_id=", Recursive: true}) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			if strings.HasSuffix(o.Key, ".parquet") {
				n++
			}
		}
		return n
	}
	project := fmt.Sprintf("%s/api/projects/%d/query/", f.Nodes[0].AdminURL, c.boot.ProjectID)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		_, body := request(t, http.MethodPost, project, c.boot.PersonalAPIKey, `{"query":{"kind":"HogQLQuery","query":"SELECT count() FROM events WHERE event = 'cluster lake'"}}`)
		if strings.Contains(body, `"results":[[100]]`) && objects() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the capture: %s, %d parts in the bucket\n%s", body, objects(), c.logs(t))
		}
	}
	out, err := exec.Command(c.bin, "cluster", "up", "--dir", c.dir, "--lake-s3", "s3://other/cluster", "--lake-s3-endpoint", s3.Addr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot change it") {
		t.Fatalf("cluster up with another bucket: %v\n%s", err, out)
	}
	c.up(t) // the nodes run: nothing to start, and the lake stays
	if f := c.file(t); f.Lake == nil || f.Lake.S3 != "s3://lake/cluster" {
		t.Fatalf("cluster.json's lake after another up: %+v", f.Lake)
	}
}
