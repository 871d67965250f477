package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/eventlog"
	"github.com/hedge-analytics/hedge/internal/testlog"
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
	for _, c := range []struct {
		cfg  serveConfig
		want string // the storage, or the error's start
	}{
		{serveConfig{}, storageTable},
		{serveConfig{logMode: logJetStream}, storageTable},
		{serveConfig{logMode: logJetStream, storage: storageLake}, storageLake},
		{serveConfig{storage: storageLake}, "--storage lake needs --log jetstream"},
		{serveConfig{logMode: logDirect, storage: storageLake}, "--storage lake needs --log jetstream"},
		{serveConfig{cluster: clusterOf("127.0.0.1:1")}, storageLake},
		{serveConfig{cluster: clusterOf("127.0.0.1:1"), storage: storageTable}, "--log-cluster needs --storage lake"},
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
