package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
