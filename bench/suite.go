package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// suiteConfig is what `go run ./bench suite` is told.
type suiteConfig struct {
	mode string
	// hedge is the binary to measure; "" builds the module's.
	hedge string
	// results is the directory the report goes to as <date>-<commit>.json.
	results string
	// data is hedge's data directory, kept afterwards; "" uses a temporary one.
	data string
	// profile is a directory for hedge's CPU profile of each run ("": none).
	profile   string
	stages    bool
	scenarios string // a comma-separated subset, "" for the mode's plan
	seed      uint64
	log       io.Writer
}

// benchtimes are the stage benchmarks' -test.benchtime per mode and package, and
// stageRounds how often they run: standard runs them before and after the scenarios,
// so that a drift in the machine's speed shows as a spread, and reports the median.
var (
	benchtimes = map[string]map[string]string{
		"standard": {"edge": "1s", "warehouse": "20x", "flags": "1s"},
		"quick":    {"edge": "300ms", "warehouse": "5x", "flags": "300ms"},
		"tiny":     {"edge": "100ms", "warehouse": "2x", "flags": "100ms"},
	}
	stageRounds = map[string]int{"standard": 2, "quick": 1, "tiny": 1}
)

// runSuite builds and starts hedge, measures the stage ceilings and the scenarios of
// the mode, and writes the report; it returns the report and the file written.
func runSuite(ctx context.Context, cfg suiteConfig) (*report, string, error) {
	scenarios, err := plan(cfg.mode)
	if err != nil {
		return nil, "", err
	}
	if scenarios, err = pick(scenarios, cfg.scenarios); err != nil {
		return nil, "", err
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, "", err
	}
	rep := &report{Mode: cfg.mode, Machine: describeMachine(), Commit: describe(ctx, root), started: time.Now()}
	rep.Date = rep.started.UTC().Format("2006-01-02")
	if sys, err := readSystemCPU(); err == nil {
		rep.steal0 = &sys
	}
	work, err := os.MkdirTemp("", "hedge-bench-")
	if err != nil {
		return nil, "", fmt.Errorf("cannot make a work directory: %w", err)
	}
	defer os.RemoveAll(work)

	binary := cfg.hedge
	if binary == "" {
		binary = filepath.Join(work, "hedge")
		fmt.Fprintf(cfg.log, "building hedge %s\n", rep.Commit)
		if err := buildHedge(ctx, root, binary, rep.Commit); err != nil {
			return nil, "", err
		}
	}
	if rep.HedgeVersion, rep.DuckDBVersion, err = hedgeVersions(ctx, binary); err != nil {
		return nil, "", err
	}

	stages := &stageRunner{root: root, dir: work, benchtime: benchtimes[cfg.mode], slow: cfg.mode == "standard", log: cfg.log}
	rounds := stageRounds[cfg.mode]
	if cfg.stages {
		fmt.Fprintln(cfg.log, "compiling the stage benchmarks")
		if err := stages.compile(ctx); err != nil {
			return nil, "", err
		}
		fmt.Fprintln(cfg.log, "stage ceilings, round 1")
		if err := stages.run(ctx); err != nil {
			return nil, "", err
		}
	}

	data := cfg.data
	if data == "" {
		data = filepath.Join(work, "data")
	}
	// The traffic scenarios share one hedge (with --log direct), those through the log
	// another (with --log jetstream, the default, on a data directory of its own), those on a cluster a cluster
	// (hedge cluster up, in a directory of its own); the queries scenario starts its
	// own hedge on its generated data, once those have stopped.
	var direct, viaLog, viaLake, onCluster []scenario
	var runs []*scenarioRun
	for _, sc := range scenarios {
		switch {
		case sc.Queries != nil:
		case sc.Cluster:
			onCluster = append(onCluster, sc)
		case sc.Lake:
			viaLake = append(viaLake, sc)
		case sc.Log:
			viaLog = append(viaLog, sc)
		default:
			direct = append(direct, sc)
		}
	}
	for _, group := range []struct {
		scenarios []scenario
		data      string
		cluster   bool
		flags     []string
	}{{direct, data, false, []string{"--log", "direct"}}, {viaLog, data + logSuffix, false, []string{"--log", "jetstream"}},
		{viaLake, data + lakeSuffix, false, []string{"--log", "jetstream", "--storage", "lake"}}, {onCluster, data + clusterSuffix, true, nil}} {
		if len(group.scenarios) == 0 {
			continue
		}
		done, hedgeErr, err := runScenarios(ctx, cfg, binary, group.data, group.cluster, group.scenarios, runs, group.flags...)
		if err != nil {
			return nil, "", err
		}
		runs = append(runs, done...)
		rep.hedgeStopped(hedgeErr)
	}
	for _, sc := range scenarios {
		if sc.Queries == nil {
			continue
		}
		run, hedgeErr, err := runQueries(ctx, cfg, binary, work, sc)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", sc.Name, err)
		}
		rep.hedgeStopped(hedgeErr)
		runs = append(runs, run)
	}

	for round := 2; cfg.stages && round <= rounds; round++ {
		fmt.Fprintf(cfg.log, "stage ceilings, round %d\n", round)
		if err := stages.run(ctx); err != nil {
			return nil, "", err
		}
	}
	rep.Stages = stages.stages
	rep.finish(runs)
	path, err := rep.write(cfg.results)
	return rep, path, err
}

// logSettle bounds the wait of a row check through the log for the warehouse to apply
// what was acknowledged.
const logSettle = 10 * time.Minute

// server is what a group of scenarios runs against: a hedge, or a cluster of them.
type server interface {
	// stop ends it gracefully and returns what was unclean about that: a finding of
	// the report rather than a failure to measure.
	stop() error
	// kill ends it when the suite itself fails.
	kill()
	// logTail is the end of its log, for an error.
	logTail() string
}

// startServer starts hedge on data (with flags), or with cluster a cluster of hedges
// in the directory data, and returns it and the load's target on it.
func startServer(ctx context.Context, cfg suiteConfig, binary, data string, cluster bool, flags []string) (server, *target, error) {
	if cluster {
		c, err := startCluster(ctx, binary, data)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintln(cfg.log, c.describe())
		return c, c.target(), nil
	}
	p, err := startHedge(binary, data, cfg.profile != "", flags...)
	if err != nil {
		return nil, nil, err
	}
	boot, err := readBootstrap(filepath.Join(data, "bootstrap.json"))
	if err != nil {
		p.kill()
		return nil, nil, err
	}
	fmt.Fprintf(cfg.log, "hedge serving: capture %s, management %s, pid %d, data %s\n", p.captureURL, p.adminURL, p.pid(), data)
	return p, &target{
		CaptureURL: p.captureURL, AdminURL: p.adminURL, ProjectID: boot.ProjectID, token: boot.ProjectAPIKey, pids: []int{p.pid()},
		api: newAPIClient(p.adminURL, boot.PersonalAPIKey, boot.ProjectID),
	}, nil
}

// runScenarios starts hedge on data (with flags), or a cluster (startServer), after the
// runs before on another (whose rates a scenario may take: RateOf), runs the scenarios
// against it and stops it. An unclean stop is returned apart (hedgeErr), as a finding
// of the report rather than a failure to measure.
func runScenarios(ctx context.Context, cfg suiteConfig, binary, data string, cluster bool, scenarios []scenario, before []*scenarioRun, flags ...string) (runs []*scenarioRun, hedgeErr, err error) {
	if cfg.profile != "" {
		if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
			return nil, nil, fmt.Errorf("cannot make the profile directory: %w", err)
		}
	}
	srv, t, err := startServer(ctx, cfg, binary, data, cluster, flags)
	if err != nil {
		return nil, nil, err
	}
	r := &runner{target: t, seed: cfg.seed, log: cfg.log, profile: cfg.profile}
	if cluster || len(flags) > 0 {
		// Through the log (a cluster's too), the warehouse applies behind the 200s: the
		// row check waits for it to catch up, and says how long that took.
		r.settle = logSettle
	}
	for _, sc := range scenarios {
		sc, err := resolveRate(sc, slices.Concat(before, runs))
		if err != nil {
			srv.kill()
			return nil, nil, err
		}
		res, err := r.run(ctx, sc)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			srv.kill()
			return nil, nil, fmt.Errorf("%s: %w\n%s", sc.Name, err, srv.logTail())
		}
		runs = append(runs, res)
		progress(cfg.log, res)
	}
	return runs, srv.stop(), nil
}

// hedgeStopped notes an unclean stop of hedge (err), a finding of the report rather
// than a failure to measure.
func (rep *report) hedgeStopped(err error) {
	if err != nil {
		rep.Problems = append(rep.Problems, err.Error())
		rep.Failed = true
	}
}

// progress prints a line per run, as it ends.
func progress(w io.Writer, r *scenarioRun) {
	seconds := max(r.window.Seconds(), 1e-9)
	rows := "rows ok"
	if r.rows.Skipped != "" {
		rows = "rows not checked"
	} else if !r.rows.OK {
		rows = fmt.Sprintf("ROWS WRONG: %v", r.rows.problems())
	}
	if r.rows.Skipped == "" && (r.scenario.Log || r.scenario.Cluster) {
		rows += fmt.Sprintf(" (the warehouse caught up in %v)", r.rows.CaughtUp.Round(10*time.Millisecond))
	}
	if c := r.answers; c != nil {
		rows += ", flags answers ok"
		if !c.OK {
			rows += fmt.Sprintf(", FLAGS ANSWERS WRONG: %v", c.problems())
		}
	}
	fmt.Fprintf(w, "%-20s %s events/s, %s req/s, answers %s, steal %.1f%%, %s\n", r.scenario.Name,
		thousands(float64(r.sent.events)/seconds), thousands(float64(r.sent.statuses[200])/seconds),
		answerText(answers(r.sent.statuses)), r.usage.StealPercent, rows)
}

// finish computes the report's figures from the runs.
func (rep *report) finish(runs []*scenarioRun) {
	rep.Scenarios = summarize(runs)
	ceilings(rep.Scenarios, rep.Stages)
	compareCluster(rep.Scenarios)
	compareQueries(rep.Scenarios)
	rep.Targets = goals(rep.Scenarios, rep.Stages)
	for _, r := range rep.Scenarios {
		for _, p := range r.Problems {
			rep.Problems = append(rep.Problems, r.Scenario.Name+": "+p)
		}
		if !r.RowsOK || r.FlagAnswers != nil && !r.FlagAnswers.OK || r.Queries != nil && !r.Queries.AnswersOK {
			rep.Failed = true
		}
	}
	rep.Seconds = time.Since(rep.started).Seconds()
	if sys, err := readSystemCPU(); err == nil && rep.steal0 != nil && sys.total > rep.steal0.total {
		rep.Machine.StealPercent = 100 * (sys.steal - rep.steal0.steal) / (sys.total - rep.steal0.total)
	}
}

// write saves the report as <dir>/<date>-<commit>.json, never over an earlier one.
func (rep *report) write(dir string) (string, error) {
	text, err := rep.encode()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot make the results directory: %w", err)
	}
	base := rep.Date + "-" + rep.Commit
	for i := 1; ; i++ {
		path := filepath.Join(dir, base+".json")
		if i > 1 {
			path = filepath.Join(dir, fmt.Sprintf("%s-%d.json", base, i))
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("cannot write the report: %w", err)
		}
		_, err = f.Write(text)
		return path, errors.Join(err, f.Close())
	}
}

// writeFile saves the report as path.
func (rep *report) writeFile(path string) error {
	text, err := rep.encode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, text, 0o644); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	return nil
}

func (rep *report) encode() ([]byte, error) {
	text, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode the report: %w", err)
	}
	return append(text, '\n'), nil
}
