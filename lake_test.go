package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/hedge-analytics/hedge/eventlog"
	"github.com/hedge-analytics/hedge/internal/s3test"
	"github.com/hedge-analytics/hedge/internal/testlog"
	"github.com/hedge-analytics/hedge/warehouse"
)

// TestServeLake: the events of a hedge that kept them in its table move to the lake
// (hedge lake move); hedge serve --storage lake --log jetstream stores what capture
// acknowledges as Parquet parts, which the query API reads with the moved ones, and a
// restart keeps; hedge lake files lists them and stock DuckDB reads them.
func TestServeLake(t *testing.T) {
	dataDir := t.TempDir()
	s := startTestServer(t, dataDir)
	boot := readBootstrap(t, dataDir)
	capture := fmt.Sprintf(`{"api_key":%q,"event":"lake test","distinct_id":"user-1","properties":{"before":"the lake"}}`, boot.ProjectAPIKey)
	if status, body := request(t, "POST", s.captureURL+"/capture/", "", capture); status != 200 {
		t.Fatalf("capture: %d %s", status, body)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"lake", "move", "--data", dataDir}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "moved 1 events") {
		t.Fatalf("hedge lake move: exit %d: %s%s", code, out.String(), errOut.String())
	}

	cfg := testServeConfig(dataDir)
	cfg.logMode, cfg.storage = logJetStream, storageLake
	if err := cfg.checkModes(); err != nil {
		t.Fatal(err)
	}
	s, err := start(context.Background(), cfg, testlog.New())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.stop() }()
	var batch []string
	for i := range 200 {
		batch = append(batch, fmt.Sprintf(`{"event":"lake test","distinct_id":"user-%d","properties":{"i":%d}}`, i%7, i))
	}
	for range 3 {
		body := fmt.Sprintf(`{"api_key":%q,"batch":[%s]}`, boot.ProjectAPIKey, strings.Join(batch, ","))
		if status, answer := request(t, "POST", s.captureURL+"/batch/", "", body); status != 200 {
			t.Fatalf("capture: %d %s", status, answer)
		}
	}
	query := func(url string) int {
		t.Helper()
		status, body := request(t, "POST", fmt.Sprintf("%s/api/projects/%d/query/", url, boot.ProjectID), boot.PersonalAPIKey,
			`{"query":{"kind":"HogQLQuery","query":"SELECT count() FROM events WHERE event = 'lake test'"}}`)
		var answer struct{ Results [][]int }
		if status != 200 || json.Unmarshal([]byte(body), &answer) != nil || len(answer.Results) != 1 {
			t.Fatalf("query: %d %s", status, body)
		}
		return answer.Results[0][0]
	}
	deadline := time.Now().Add(30 * time.Second)
	for query(s.adminURL) != 601 {
		if time.Now().After(deadline) {
			t.Fatalf("the query API counts %d events 30 s after 600 were acknowledged, and 1 moved", query(s.adminURL))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s, err = start(context.Background(), cfg, testlog.New())
	if err != nil {
		t.Fatal(err)
	}
	if n := query(s.adminURL); n != 601 {
		t.Fatalf("after a restart the query API counts %d events, want 601", n)
	}
	var tableRows int
	if err := s.warehouse.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&tableRows); err != nil || tableRows != 0 {
		t.Fatalf("the events table holds %d rows (%v): want none, all in the lake", tableRows, err)
	}

	out.Reset()
	if code := run([]string{"lake", "files", "--data", dataDir, "--project", fmt.Sprint(boot.ProjectID)}, nil, &out, &errOut); code != 0 {
		t.Fatalf("hedge lake files: exit %d: %s", code, errOut.String())
	}
	files := strings.Fields(out.String())
	if len(files) == 0 || !strings.HasPrefix(files[0], filepath.Join(dataDir, lakeDir)) {
		t.Fatalf("hedge lake files printed %q", out.String())
	}
	if n := stockCount(t, files, `event = 'lake test'`); n != 601 {
		t.Fatalf("stock DuckDB reads %d events from the listed parts, want 601", n)
	}
}

// TestServeLakeS3: hedge serve --storage lake --lake-s3 keeps what capture
// acknowledges in the bucket, which stock DuckDB reads once downloaded, and answers
// from it after its lake directory is lost; hedge lake files lists s3:// URLs.
func TestServeLakeS3(t *testing.T) {
	s3 := s3test.New(t)
	ctx := context.Background()
	client := s3.Client(t)
	if err := client.MakeBucket(ctx, "lake", minio.MakeBucketOptions{Region: s3test.Region}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HEDGE_LAKE_S3_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("HEDGE_LAKE_S3_SECRET_ACCESS_KEY", s3test.SecretKey)
	dataDir := t.TempDir()
	cfg := testServeConfig(dataDir)
	cfg.logMode, cfg.storage = logJetStream, storageLake
	cfg.lakeS3 = &warehouse.LakeS3{Bucket: "lake", Prefix: "hedge"}
	cfg.lakeS3Endpoint, cfg.lakeS3Insecure, cfg.lakeS3Region = s3.Addr, true, s3test.Region
	if err := cfg.checkModes(); err != nil {
		t.Fatal(err)
	}
	s, err := start(ctx, cfg, testlog.New())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.stop() }()
	boot := readBootstrap(t, dataDir)
	var batch []string
	for i := range 300 {
		batch = append(batch, fmt.Sprintf(`{"event":"s3 test","distinct_id":"user-%d","properties":{"i":%d}}`, i%7, i))
	}
	if status, answer := request(t, "POST", s.captureURL+"/batch/", "", fmt.Sprintf(`{"api_key":%q,"batch":[%s]}`, boot.ProjectAPIKey, strings.Join(batch, ","))); status != 200 {
		t.Fatalf("capture: %d %s", status, answer)
	}
	query := func() int {
		t.Helper()
		status, body := request(t, "POST", fmt.Sprintf("%s/api/projects/%d/query/", s.adminURL, boot.ProjectID), boot.PersonalAPIKey,
			`{"query":{"kind":"HogQLQuery","query":"SELECT count() FROM events WHERE event = 's3 test'"}}`)
		var answer struct{ Results [][]int }
		if status != 200 || json.Unmarshal([]byte(body), &answer) != nil || len(answer.Results) != 1 {
			t.Fatalf("query: %d %s", status, body)
		}
		return answer.Results[0][0]
	}
	deadline := time.Now().Add(30 * time.Second)
	for query() != 300 {
		if time.Now().After(deadline) {
			t.Fatalf("the query API counts %d events 30 s after 300 were acknowledged", query())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"lake", "files", "--data", dataDir, "--project", fmt.Sprint(boot.ProjectID)}, nil, &out, &errOut); code != 0 {
		t.Fatalf("hedge lake files: exit %d: %s", code, errOut.String())
	}
	urls := strings.Fields(out.String())
	if len(urls) == 0 || !strings.HasPrefix(urls[0], "s3://lake/hedge/team_id=") {
		t.Fatalf("hedge lake files printed %q", out.String())
	}
	// Every listed object, downloaded, read by stock DuckDB.
	download := t.TempDir()
	var files []string
	for i, u := range urls {
		file := filepath.Join(download, fmt.Sprintf("%d.parquet", i))
		if err := client.FGetObject(ctx, "lake", strings.TrimPrefix(u, "s3://lake/"), file, minio.GetObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	if n := stockCount(t, files, `event = 's3 test'`); n != 300 {
		t.Fatalf("stock DuckDB reads %d events from the bucket's parts, want 300", n)
	}
	if err := os.RemoveAll(filepath.Join(dataDir, lakeDir)); err != nil {
		t.Fatal(err)
	}
	if s, err = start(ctx, cfg, testlog.New()); err != nil {
		t.Fatal(err)
	}
	if n := query(); n != 300 {
		t.Fatalf("without its lake directory hedge counts %d events, want 300", n)
	}
}

// stockCount is the count of rows where (SQL) holds in files, read by stock DuckDB:
// an in-memory database that knows nothing of hedge.
func stockCount(t *testing.T, files []string, where string) int {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM read_parquet(?::VARCHAR[]) WHERE `+where, files).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The storage's flags: the lake needs the log; a cluster keeps its events in the lake.
func TestStorageModes(t *testing.T) {
	t.Setenv("HEDGE_LAKE_S3_ACCESS_KEY_ID", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	for _, c := range []struct {
		cfg  serveConfig
		want string // the storage, or the error's start
	}{
		{serveConfig{}, storageTable},
		{serveConfig{logMode: logJetStream}, storageTable},
		{serveConfig{logMode: logJetStream, storage: storageLake}, storageLake},
		{serveConfig{storage: storageLake}, storageLake}, // the log is the default
		{serveConfig{logMode: logDirect, storage: storageLake}, "--storage lake needs --log jetstream"},
		{serveConfig{cluster: clusterOf("127.0.0.1:1")}, storageLake},
		{serveConfig{cluster: clusterOf("127.0.0.1:1"), storage: storageTable}, "--log-cluster needs --storage lake"},
		{serveConfig{logMode: logJetStream, lakeS3: &warehouse.LakeS3{Bucket: "b"}}, "--lake-s3 needs --storage lake"},
		{serveConfig{logMode: logJetStream, storage: storageLake, lakeS3: &warehouse.LakeS3{Bucket: "b"}}, "--lake-s3 needs --lake-s3-endpoint"},
		{serveConfig{logMode: logJetStream, storage: storageLake, lakeS3: &warehouse.LakeS3{Bucket: "b"}, lakeS3Endpoint: "127.0.0.1:1"}, "--lake-s3 needs credentials"},
	} {
		err := c.cfg.checkModes()
		got := c.cfg.storage
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%+v: %s, want %s", c.cfg, got, c.want)
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"lake", "files", "--data", t.TempDir(), "--project", "1"}, nil, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "holds no lake") {
		t.Errorf("hedge lake files of a directory without a lake: exit %d, %q", code, errOut.String())
	}
	if code := run([]string{"lake", "files"}, nil, &out, &errOut); code != 2 {
		t.Errorf("hedge lake files without a project: exit %d", code)
	}
}

func clusterOf(addr string) eventlog.Cluster {
	return eventlog.Cluster{Listen: addr, Routes: []string{addr}, Name: "test"}
}

// TestServeLakeS3Killed: hedge serve --storage lake --lake-s3, killed (SIGKILL) while
// its commits upload parts under load, loses no acknowledged event and stores none
// twice once restarted, and the bucket then holds the catalog's parts only: an object
// uploaded for a commit that the kill cut short is removed by the restart's sweep.
func TestServeLakeS3Killed(t *testing.T) {
	s3 := s3test.New(t)
	ctx := context.Background()
	client := s3.Client(t)
	if err := client.MakeBucket(ctx, "lake", minio.MakeBucketOptions{Region: s3test.Region}); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	env := []string{"HEDGE_DATA=" + dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=127.0.0.1:0",
		"HEDGE_LOG=jetstream", "HEDGE_STORAGE=lake", "HEDGE_LAKE_S3=s3://lake/hedge", "HEDGE_LAKE_S3_ENDPOINT=" + s3.Addr,
		"HEDGE_LAKE_S3_INSECURE=true", "HEDGE_LAKE_S3_ACCESS_KEY_ID=" + s3test.AccessKey, "HEDGE_LAKE_S3_SECRET_ACCESS_KEY=" + s3test.SecretKey}
	first := startProcess(t, env)
	if first.captureURL == "" {
		t.Fatalf("hedge did not start:\n%s", first.log())
	}
	boot := readBootstrap(t, dataDir)

	// Four clients send batches of 20 events with uuids of their own until the kill.
	var mu sync.Mutex
	acked := map[string]bool{}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var senders sync.WaitGroup
	for sender := range 4 {
		senders.Go(func() {
			for n := 0; loadCtx.Err() == nil; n++ {
				uuids := make([]string, 20)
				var body strings.Builder
				fmt.Fprintf(&body, `{"api_key":%q,"batch":[`, boot.ProjectAPIKey)
				for i := range uuids {
					uuids[i] = fmt.Sprintf("00000000-0000-4000-8%03d-%012d", sender, n*len(uuids)+i)
					if i > 0 {
						body.WriteByte(',')
					}
					fmt.Fprintf(&body, `{"event":"killed","uuid":%q,"distinct_id":"user-%d"}`, uuids[i], i%7)
				}
				body.WriteString("]}")
				req, _ := http.NewRequestWithContext(loadCtx, http.MethodPost, first.captureURL+"/batch/", strings.NewReader(body.String()))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						mu.Lock()
						for _, u := range uuids {
							acked[u] = true
						}
						mu.Unlock()
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	time.Sleep(3 * time.Second)
	first.stop(t, syscall.SIGKILL)
	stopLoad()
	senders.Wait()
	if len(acked) < 200 {
		t.Fatalf("only %d events acknowledged before the kill:\n%s", len(acked), first.log())
	}

	restarted := startProcess(t, env)
	if restarted.adminURL == "" {
		t.Fatalf("hedge did not restart after SIGKILL:\n%s", restarted.log())
	}
	// The restart applies what the log holds; events of requests that were not
	// answered 200 may be stored too, so the count must pass the acknowledged ones and
	// stay.
	query := func(hogql string) [][]any {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": map[string]any{"kind": "HogQLQuery", "query": hogql}})
		status, text := request(t, http.MethodPost, fmt.Sprintf("%s/api/projects/%d/query/", restarted.adminURL, boot.ProjectID), boot.PersonalAPIKey, string(body))
		var answer struct{ Results [][]any }
		if status != http.StatusOK || json.Unmarshal([]byte(text), &answer) != nil {
			t.Fatalf("query: %d %s", status, text)
		}
		return answer.Results
	}
	last, since := -1.0, time.Now()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		n := query(`SELECT count() FROM events WHERE event = 'killed'`)[0][0].(float64)
		if n != last {
			last, since = n, time.Now()
		}
		if int(last) >= len(acked) && time.Since(since) > 2*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v events stored a minute after the restart, %d acknowledged:\n%s", last, len(acked), restarted.log())
		}
	}
	stored := map[string]int{}
	for _, row := range query(`SELECT uuid::String, count() FROM events WHERE event = 'killed' GROUP BY uuid LIMIT 100000`) {
		stored[row[0].(string)] = int(row[1].(float64))
	}
	lost, twice := 0, 0
	for u := range acked {
		if stored[u] == 0 {
			lost++
		}
	}
	for _, n := range stored {
		if n > 1 {
			twice++
		}
	}
	if lost > 0 || twice > 0 {
		t.Fatalf("of %d acknowledged events %d were lost; %d of %d stored twice", len(acked), lost, twice, len(stored))
	}
	if code := restarted.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d:\n%s", code, restarted.log())
	}

	// The bucket holds the parts the catalog names, and those a merge replaced within
	// the grace that queries have to finish reading them (meta.lake_garbage), no other.
	var out, errOut bytes.Buffer
	if code := run([]string{"lake", "files", "--data", dataDir, "--project", fmt.Sprint(boot.ProjectID)}, nil, &out, &errOut); code != 0 {
		t.Fatalf("hedge lake files: exit %d: %s", code, errOut.String())
	}
	listed := strings.Fields(out.String())
	var objects []string
	for o := range client.ListObjects(ctx, "lake", minio.ListObjectsOptions{Prefix: "hedge/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if strings.HasSuffix(o.Key, ".parquet") {
			objects = append(objects, "s3://lake/"+o.Key)
		}
	}
	known := slices.Clone(listed)
	rows, err := openDatabase(t, dataDir).Query(`SELECT path FROM meta.lake_garbage`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var path string
		if err := rows.Scan(&path); err != nil {
			t.Fatal(err)
		}
		known = append(known, "s3://lake/hedge/"+path)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		if !slices.Contains(known, o) {
			t.Errorf("the bucket holds %s, which neither the catalog nor its garbage names", o)
		}
	}
	for _, l := range listed {
		if !slices.Contains(objects, l) {
			t.Errorf("the catalog names %s, which the bucket lacks", l)
		}
	}
}
