package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command in args and returns the process exit code: 1 when a run
// failed its row check or could not run, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "suite":
		return suiteCommand(ctx, args[1:], stdout, stderr)
	case "load":
		return loadCommand(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		printUsage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "bench: unknown command %q\n\n", args[0])
	printUsage(stderr)
	return 2
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `bench: hedge's load generator and benchmark suite.

Usage:
  go run ./bench suite [flags]   build and start hedge, measure the stage ceilings and
                                 the scenarios, print the tables, write bench/results/
  go run ./bench load [flags]    load a running hedge or PostHog-compatible endpoint

Run "go run ./bench suite -h" or "go run ./bench load -h" for the flags.
`)
}

func suiteCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := suiteConfig{log: stderr}
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.mode, "mode", "standard", "scenarios and durations: "+strings.Join(modes, ", "))
	fs.StringVar(&cfg.hedge, "hedge", "", "hedge binary to measure; empty: build this module's")
	fs.StringVar(&cfg.results, "results", "", "directory for the report, <date>-<commit>.json; empty: bench/results of this module")
	fs.StringVar(&cfg.data, "data", "", "hedge's data directory, kept afterwards (the scenarios through the log use <data>-log, those on a cluster <data>-cluster); empty: a temporary one")
	fs.StringVar(&cfg.profile, "profile", "", "directory for hedge's CPU profile of each run (starts hedge with --pprof)")
	fs.BoolVar(&cfg.stages, "stages", true, "measure the stage ceilings (go test -bench in edge and warehouse)")
	fs.StringVar(&cfg.scenarios, "scenarios", "", "comma-separated scenarios to run; empty: all of the mode")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the generated events")
	if err := fs.Parse(args); err != nil {
		return exitCode(err)
	}
	if cfg.results == "" {
		root, err := moduleRoot(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		cfg.results = filepath.Join(root, "bench", "results")
	}
	rep, path, err := runSuite(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	rep.print(stdout)
	fmt.Fprintf(stdout, "\nreport: %s\n", path)
	if rep.Failed {
		return 1
	}
	return 0
}

func loadCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		bootPath, captureURL, token, adminURL, personalKey string
		projectID                                          int64
		pid                                                int
		mode, list, out, profile                           string
		duration                                           time.Duration
		connections                                        int
		rate                                               float64
		seed                                               uint64
		settle                                             time.Duration
	)
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&bootPath, "bootstrap", "", "hedge's bootstrap.json: fills every URL and key below that is not given")
	fs.StringVar(&captureURL, "capture-url", "", "capture endpoint, e.g. http://127.0.0.1:8001 or https://us.i.posthog.com")
	fs.StringVar(&token, "token", "", "project API key (phc_...)")
	fs.StringVar(&adminURL, "admin-url", "", "management API, for time to visibility and the row check; empty: skip them")
	fs.StringVar(&personalKey, "personal-key", "", "personal API key (phx_...) with query:read")
	fs.Int64Var(&projectID, "project-id", 0, "project id of the token")
	fs.IntVar(&pid, "pid", 0, "the server's process id, for its CPU and peak memory from /proc; 0: from hedge's /metrics if the admin URL is given")
	fs.StringVar(&mode, "mode", "standard", "durations and scenarios: "+strings.Join(modes, ", "))
	fs.StringVar(&list, "scenarios", "batch-1k", "comma-separated scenarios (http flags flags-10k capture capture-25k batch-1k batch-1k-personless batch-20mb gzip historical mixed sustained soak abuse-baseline abuse-connections abuse); empty: all of the mode")
	fs.DurationVar(&duration, "duration", 0, "measured time of each scenario; 0: the mode's")
	fs.IntVar(&connections, "connections", 0, "connections of each scenario; 0: the scenario's")
	fs.Float64Var(&rate, "rate", 0, "requests a second (open loop) for every scenario; 0: the scenario's")
	fs.StringVar(&out, "out", "", "write the report as JSON to this file")
	fs.StringVar(&profile, "profile", "", "directory for the server's CPU profile of each run (hedge serve --pprof)")
	fs.Uint64Var(&seed, "seed", 1, "seed of the generated events")
	fs.DurationVar(&settle, "settle", 10*time.Second, "how long the row check waits for acknowledged events to become readable")
	if err := fs.Parse(args); err != nil {
		return exitCode(err)
	}
	if bootPath != "" {
		boot, err := readBootstrap(bootPath)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		captureURL, token = cmp.Or(captureURL, boot.CaptureURL), cmp.Or(token, boot.ProjectAPIKey)
		adminURL, personalKey, projectID = cmp.Or(adminURL, boot.AdminURL), cmp.Or(personalKey, boot.PersonalAPIKey), cmp.Or(projectID, boot.ProjectID)
	}
	if captureURL == "" || token == "" {
		fmt.Fprintln(stderr, "bench load: -capture-url and -token (or -bootstrap) are required")
		return 2
	}
	t := &target{CaptureURL: strings.TrimSuffix(captureURL, "/"), token: token}
	if pid > 0 {
		t.pids = []int{pid}
	}
	if adminURL != "" {
		if personalKey == "" || projectID == 0 {
			fmt.Fprintln(stderr, "bench load: -admin-url needs -personal-key and -project-id")
			return 2
		}
		t.AdminURL, t.ProjectID = strings.TrimSuffix(adminURL, "/"), projectID
		t.api = newAPIClient(t.AdminURL, personalKey, projectID)
	}
	scenarios, err := plan(mode)
	if err == nil {
		scenarios, err = pick(scenarios, list)
	}
	// The queries scenario generates its data and starts hedge on it, a cluster
	// scenario starts its cluster: the suite's.
	if err == nil && list != "" {
		for _, sc := range scenarios {
			if sc.Queries != nil || sc.Cluster {
				err = fmt.Errorf("the %s scenario runs in the suite only: go run ./bench suite -scenarios %s", sc.Name, sc.Name)
				break
			}
		}
	}
	scenarios = slices.DeleteFunc(scenarios, func(sc scenario) bool { return sc.Queries != nil || sc.Cluster })
	if err != nil {
		fmt.Fprintln(stderr, "bench load:", err)
		return 2
	}
	for i := range scenarios {
		sc := &scenarios[i]
		if duration > 0 && sc.Sends == 0 {
			sc.Duration = duration
			if sc.Beside != nil {
				b := *sc.Beside
				b.Duration = duration
				sc.Beside = &b
			}
		}
		if connections > 0 {
			sc.Connections = connections
		}
		if rate > 0 {
			sc.Rate = rate
		}
	}
	if profile != "" {
		if err := os.MkdirAll(profile, 0o755); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
	}
	r := &runner{target: t, seed: seed, log: stderr, profile: profile, settle: settle}
	rep := &report{Mode: mode, Machine: describeMachine(), Target: t, started: time.Now(), Commit: "-"}
	rep.Date = rep.started.UTC().Format("2006-01-02")
	if sys, err := readSystemCPU(); err == nil {
		rep.steal0 = &sys
	}
	var runs []*scenarioRun
	for _, sc := range scenarios {
		sc, err := resolveRate(sc, runs)
		if err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 1
		}
		res, err := r.run(ctx, sc)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			fmt.Fprintf(stderr, "bench: %s: %v\n", sc.Name, err)
			return 1
		}
		runs = append(runs, res)
		progress(stderr, res)
	}
	rep.finish(runs)
	rep.print(stdout)
	if out != "" {
		if err := rep.writeFile(out); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
	}
	if rep.Failed {
		return 1
	}
	return 0
}

func exitCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
