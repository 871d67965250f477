package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

// TestTiny runs the suite in its tiny mode, as `make bench` runs the standard one: it
// builds hedge, starts it on a temporary data directory, runs every scenario for a
// fraction of a second (the queries scenario on 20,000 generated events, on a hedge of
// its own) and writes its report. The report must say every run's rows are right, and
// the database, opened once hedge has stopped, must agree with it run by run. Speed is
// never asserted: this machine is shared.
func TestTiny(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	var log bytes.Buffer
	rep, path, err := runSuite(context.Background(), suiteConfig{mode: "tiny", results: dir, data: data, seed: 1, log: &log})
	if err == nil {
		rep.print(&log)
	}
	if os.Getenv("HEDGE_TEST_LOG") != "" {
		t.Log(log.String())
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file report
	if err := json.Unmarshal(text, &file); err != nil {
		t.Fatal(err)
	}
	if file.Failed || len(file.Problems) > 0 {
		t.Fatalf("the report failed: %v\n%s", file.Problems, log.String())
	}
	planned, _ := plan("tiny")
	names := map[string]bool{} // a scenario run twice is one result
	for _, sc := range planned {
		names[sc.Name] = true
	}
	if len(file.Scenarios) != len(names) {
		t.Fatalf("%d scenarios in the report, want %d", len(file.Scenarios), len(names))
	}

	// The scenarios through the log ran on a hedge of their own, on its own data, those
	// on the lake on another, and those on a cluster on its warehouse node's, whose
	// events are in the lake: stock DuckDB reads the parts hedge lake files lists.
	cluster, err := readClusterFile(data + clusterSuffix)
	if err != nil {
		t.Fatal(err)
	}
	clusterWarehouse, err := cluster.warehouseDir()
	if err != nil {
		t.Fatal(err)
	}
	var warehouses [4]*warehouse.Warehouse
	var events [4]string
	for i, dir := range []string{data, data + logSuffix, clusterWarehouse, data + lakeSuffix} {
		wh, err := warehouse.Open(context.Background(), warehouse.Config{Path: filepath.Join(dir, "hedge.duckdb")})
		if err != nil {
			t.Fatal(err)
		}
		defer wh.Close()
		warehouses[i], events[i] = wh, "events"
		if i < 2 {
			continue
		}
		boot, err := readBootstrap(filepath.Join(dir, "bootstrap.json"))
		if err != nil {
			t.Fatal(err)
		}
		files, err := warehouse.LakeFiles(filepath.Join(dir, "lake"), boot.ProjectID)
		if err != nil || len(files) == 0 {
			t.Fatalf("the lake of %s: %v (%v)", dir, files, err)
		}
		events[i] = "read_parquet(['" + strings.Join(files, "', '") + "'])"
	}
	stock, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer stock.Close()
	for _, res := range file.Scenarios {
		if q := res.Queries; q != nil {
			// Its own hedge served a copy of generated events: every figure was
			// timed, and each computed one beside its ceiling.
			for _, f := range q.Figures {
				if f.Latency.Count == 0 || f.Goal > 0 && (f.Ceiling == nil || f.Ceiling.Count == 0) {
					t.Fatalf("queries: %s timed %d times, ceiling %+v", f.Name, f.Latency.Count, f.Ceiling)
				}
			}
			// A figure per query case, and the dashboard's two (cold and cached).
			if len(q.Figures) != len(queryCases(newQueryRange(time.Now())))+2 || q.BytesPerEvent <= 0 {
				t.Fatalf("queries: %d figures, %.0f B an event", len(q.Figures), q.BytesPerEvent)
			}
			continue
		}
		if res.Scenario.Health {
			continue
		}
		if sc := res.Scenario; sc.Interval > 0 {
			// Its rate was batch-1k's share, and its intervals cover every measured send.
			if sc.Rate <= 0 || sc.Rate != sc.RateOfMax*sc.RateBase {
				t.Fatalf("%s: rate %v, %v of %v", sc.Name, sc.Rate, sc.RateOfMax, sc.RateBase)
			}
			for _, r := range res.Runs {
				var sends int64
				for _, in := range r.Intervals {
					sends += in.Requests + in.Failed
					if in.Dedup == nil {
						t.Fatalf("%s run %s: no deduplication set at %gs", sc.Name, r.RunID, in.From)
					}
				}
				if want := int((sc.Duration + sc.Interval - 1) / sc.Interval); len(r.Intervals) != want || sends != int64(res.Latency.Count) {
					t.Fatalf("%s run %s: %d intervals of %d sends, want %d of %d", sc.Name, r.RunID, len(r.Intervals), sends, want, res.Latency.Count)
				}
			}
		}
		db, from := warehouses[0].DB(), events[0]
		switch {
		case res.Scenario.Lake: // through the log too
			db, from = stock, events[3]
			if len(res.Versus) != 2 {
				t.Fatalf("%s: compared with %d scenarios", res.Scenario.Name, len(res.Versus))
			}
		case res.Scenario.Log:
			db, from = warehouses[1].DB(), events[1]
		case res.Scenario.Cluster:
			db, from = stock, events[2]
			// Each node's peak is part of the cluster's, which they add up to.
			var sum int64
			for _, peak := range res.NodePeakRSS {
				sum += peak
			}
			if len(res.NodePeakRSS) != clusterNodes || sum != res.PeakRSS || len(res.Versus) != 2 {
				t.Fatalf("%s: peaks %v adding up to %d of %d, compared with %d scenarios", res.Scenario.Name, res.NodePeakRSS, sum, res.PeakRSS, len(res.Versus))
			}
		}
		for _, r := range res.Runs {
			runID, err := strconv.ParseUint(r.RunID, 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			var rows, uuids int64
			if err := db.QueryRow(`SELECT count(*), count(DISTINCT uuid) FROM `+from+` WHERE `+runSQL(uint32(runID))).Scan(&rows, &uuids); err != nil {
				t.Fatal(err)
			}
			c := r.Rows
			stored := c.AckedEvents + c.StoredUnanswered*int64(res.BodyEvents)
			if c.AckedEvents == 0 || rows != c.Rows || rows != stored || uuids != rows {
				t.Fatalf("%s run %s: the database holds %d rows (%d uuids); the report says %d rows, %d acknowledged events, %d unanswered sends stored",
					res.Scenario.Name, r.RunID, rows, uuids, c.Rows, c.AckedEvents, c.StoredUnanswered)
			}
		}
	}
}

func TestParseBenchmarks(t *testing.T) {
	f := func(line, name, unit string, value, mbs, allocs float64) {
		t.Helper()
		stages, err := parseBenchmarks([]byte("goos: linux\n" + line + "\nPASS\n"))
		if err != nil || len(stages) != 1 {
			t.Fatalf("%q: %d stages, %v", line, len(stages), err)
		}
		s := stages[0]
		if s.Name != name || s.Unit != unit || s.Value != value || s.MBPerSecond != mbs || s.AllocsPerOp != allocs {
			t.Fatalf("%q: %+v", line, s)
		}
	}
	f("BenchmarkDecode/batch-1k-2         	     229	   4778795 ns/op	 184.88 MB/s	    209258 events/s	  386182 B/op	    2353 allocs/op",
		"BenchmarkDecode/batch-1k", "events/s", 209258, 184.88, 2353)
	f("BenchmarkWriterAppender10k/persons-2      	      10	 154657727 ns/op	  52.25 MB/s	    103519 rows/s	 3081878 B/op	  116415 allocs/op",
		"BenchmarkWriterAppender10k/persons", "rows/s", 103519, 52.25, 116415)
	f("BenchmarkEvaluate/parallel-2       	   35371	     10021 ns/op	     99786 evals/s	    6144 B/op	       1 allocs/op",
		"BenchmarkEvaluate/parallel", "evals/s", 99786, 0, 1)
	f("BenchmarkDecode/batch-1k 	     229	   4778795 ns/op	 184.88 MB/s	    209258 events/s", // GOMAXPROCS=1: no suffix
		"BenchmarkDecode/batch-1k", "events/s", 209258, 184.88, 0)
	f("BenchmarkDistinctIDCache-2     	      10	  61041302 ns/op	       230.6 B/id	 9213000 B/op	  150000 allocs/op",
		"BenchmarkDistinctIDCache", "B/id", 230.6, 0, 150000)
	f("BenchmarkDistinctIDs10M/open-2         	       3	  51854008 ns/op	        51.67 ms/open	  800000 B/op	    9000 allocs/op",
		"BenchmarkDistinctIDs10M/open", "ms/open", 51.67, 0, 9000)
	if stages, err := parseBenchmarks([]byte("BenchmarkX-2 \t 10\t 100 ns/op\nBenchmarkDecode\n--- FAIL: BenchmarkY\n")); err != nil || len(stages) != 0 {
		t.Fatalf("lines without a throughput: %v %v", stages, err)
	}
}

// The flags scenarios' check catches an answer that is refused, short of flags, or
// wrong about a stored person, and passes the answer the person's properties call for.
func TestAnswerCheck(t *testing.T) {
	p := &flagsProject{specs: flagSpecs(7), count: 50}
	person := newBenchPersons(1, 1)[0]
	body := &flagsBody{person: person}
	answer := func(flip string) []byte {
		flags := map[string]any{}
		for _, s := range p.specs {
			enabled := s.expect != nil && s.expect(person)
			if s.key == flip {
				enabled = !enabled
			}
			var variant any
			if enabled && len(s.variants) > 0 {
				variant = s.variants[0]
			}
			// A payload's "enabled" is inside a JSON string: not counted as a flag.
			flags[s.key] = map[string]any{"key": s.key, "enabled": enabled, "variant": variant,
				"metadata": map[string]any{"payload": `{"enabled": true}`}}
		}
		text, err := json.Marshal(map[string]any{"flags": flags, "errorsWhileComputingFlags": false})
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	f := func(status int, text []byte, ok bool) {
		t.Helper()
		c := &answerCheck{Flags: p.count}
		c.answer(p, 0, status, text, body)
		c.finish()
		if c.OK != ok {
			t.Fatalf("status %d: ok %v, want %v: %+v", status, c.OK, ok, c)
		}
	}
	f(200, answer(""), true)
	f(503, answer(""), false)
	f(200, answer(flagsKeyPrefix+"paid-plans"), false)
	f(200, bytes.Replace(answer(""), []byte(`"enabled":`), []byte(`"on":`), 1), false)
}

func TestCountFlags(t *testing.T) {
	f := func(answer string, want int) {
		t.Helper()
		if n := countFlags([]byte(answer)); n != want {
			t.Fatalf("%s: %d flags, want %d", answer, n, want)
		}
	}
	f(`{"flags":{},"errorsWhileComputingFlags":false}`, 0)
	f(`{"flags":{"a":{"key":"a","enabled":true},"disabled":{"key":"disabled","enabled":false}}}`, 2)
	f(`{"flags":{"a":{"key":"a","enabled":true,"metadata":{"payload":"{\"enabled\": true}"}}}}`, 1)
	f(`bled":"enabled":`, 1)
}
