package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// stage is a stage ceiling: a Go benchmark beside the code (a _timing_test.go file),
// which measures one stage of the ingestion path without HTTP; or a cost that such a
// benchmark measures: the heap the Writer takes per distinct id it holds, the time
// warehouse.Open takes.
type stage struct {
	Name string `json:"name"`
	// Unit is the benchmark's throughput metric, events/s, rows/s or evals/s, or its
	// cost: B/id (live heap bytes per distinct id held, which is also MB per million)
	// or ms/open.
	Unit string `json:"unit"`
	// Value is the median of Runs, one per run of the benchmark binary.
	Value       float64   `json:"value"`
	Runs        []float64 `json:"runs"`
	MBPerSecond float64   `json:"mb_per_second"`
	BytesPerOp  float64   `json:"bytes_per_op"`
	AllocsPerOp float64   `json:"allocs_per_op"`
}

// stagePackages are the benchmarks the suite runs, by package: the decode of a body
// (edge); the writer's commit of 10,000 rows with and without person processing and
// with new distinct ids, person processing alone, and the heap of the distinct-id cache
// per id (warehouse); a warehouse of 10 million distinct ids: Open, and commits of new
// ids over them (warehouse, slow); and the evaluation of a project's 50 flags for one
// person, on one goroutine and on every core (flags).
var stagePackages = []struct {
	pkg, pattern string
	// slow benchmarks take a minute or two to set up (10 million rows): standard mode
	// runs them in its first round only, -test.benchtime=5x; the other modes skip them.
	slow bool
}{
	{"edge", "^BenchmarkDecode$", false},
	{"warehouse", "^(BenchmarkWriterAppender10k|BenchmarkIdentity10k|BenchmarkDistinctIDCache)$", false},
	{"warehouse", "^BenchmarkDistinctIDs10M$", true},
	{"flags", "^BenchmarkEvaluate$", false},
}

// slowBenchtime is the -test.benchtime of the slow benchmarks.
const slowBenchtime = "5x"

// stageRunner compiles the test binaries once and runs them, so that repetitions can
// be interleaved with the end-to-end scenarios.
type stageRunner struct {
	root, dir string // the module's directory, and where the binaries go
	// benchtime per package: a duration, or NNx for a number of operations.
	benchtime map[string]string
	// slow runs the slow benchmarks, in the first round.
	slow   bool
	rounds int // run so far
	log    io.Writer
	stages []*stage
}

func (s *stageRunner) compile(ctx context.Context) error {
	compiled := map[string]bool{}
	for _, p := range stagePackages {
		if compiled[p.pkg] {
			continue
		}
		compiled[p.pkg] = true
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", filepath.Join(s.dir, p.pkg+".test"), "./"+p.pkg)
		cmd.Dir = s.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cannot compile the benchmarks of %s: %w\n%s", p.pkg, err, out)
		}
	}
	return nil
}

// run runs every benchmark once more (the slow ones only the first time, if at all) and
// adds its figures.
func (s *stageRunner) run(ctx context.Context) error {
	defer func() { s.rounds++ }()
	for _, p := range stagePackages {
		benchtime := s.benchtime[p.pkg]
		if p.slow {
			if !s.slow || s.rounds > 0 {
				continue
			}
			benchtime = slowBenchtime
		}
		cmd := exec.CommandContext(ctx, filepath.Join(s.dir, p.pkg+".test"),
			"-test.run=^$", "-test.bench="+p.pattern, "-test.benchtime="+benchtime, "-test.benchmem")
		cmd.Dir = filepath.Join(s.root, p.pkg)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("cannot run the benchmarks of %s: %w\n%s", p.pkg, err, out)
		}
		lines, err := parseBenchmarks(out)
		if err != nil {
			return fmt.Errorf("cannot read the benchmarks of %s: %w", p.pkg, err)
		}
		for _, l := range lines {
			s.add(l)
			fmt.Fprintf(s.log, "%-45s %s %s\n", l.Name, thousands(l.Value), l.Unit)
		}
	}
	return nil
}

func (s *stageRunner) add(l *stage) {
	for _, st := range s.stages {
		if st.Name == l.Name {
			st.Runs = append(st.Runs, l.Value)
			st.Value = median(st.Runs)
			st.MBPerSecond, st.BytesPerOp, st.AllocsPerOp = l.MBPerSecond, l.BytesPerOp, l.AllocsPerOp
			return
		}
	}
	l.Runs = []float64{l.Value}
	s.stages = append(s.stages, l)
}

// parseBenchmarks reads the result lines of `go test -bench` output: the name without
// its -GOMAXPROCS suffix, and the events/s, rows/s, evals/s, B/id or ms/open, MB/s, B/op
// and allocs/op metrics.
func parseBenchmarks(out []byte) ([]*stage, error) {
	var stages []*stage
	scanner := bufio.NewScanner(bytes.NewReader(out))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue // not a result line
		}
		st := &stage{Name: fields[0]}
		if i := strings.LastIndexByte(st.Name, '-'); i > 0 {
			if _, err := strconv.Atoi(st.Name[i+1:]); err == nil {
				st.Name = st.Name[:i]
			}
		}
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", scanner.Text(), err)
			}
			switch unit := fields[i+1]; unit {
			case "events/s", "rows/s", "evals/s", "B/id", "ms/open":
				st.Value, st.Unit = v, unit
			case "MB/s":
				st.MBPerSecond = v
			case "B/op":
				st.BytesPerOp = v
			case "allocs/op":
				st.AllocsPerOp = v
			}
		}
		if st.Unit != "" {
			stages = append(stages, st)
		}
	}
	return stages, scanner.Err()
}
