package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hedge-analytics/hedge/bench/gen"
)

// scenario is one kind of traffic and how long it runs.
type scenario struct {
	Name string `json:"name"`
	// Path is the capture path posted to; Health scenarios GET /_health instead.
	Path string `json:"path"`
	// Events per body, at most; MaxBytes caps a body's size instead (batch-20mb).
	Events   int  `json:"events_per_body"`
	MaxBytes int  `json:"max_body_bytes,omitempty"`
	Gzip     bool `json:"gzip,omitempty"` // posthog-js style: gzip sent as text/plain, unannounced
	// Log runs the scenario against a hedge of its own that serves with --log
	// jetstream: a 200 means in the log, and the row check waits for the warehouse to
	// apply it (rowCheck.CaughtUp).
	Log bool `json:"log,omitempty"`
	// Lake runs the scenario as Log does, on a hedge of its own that also keeps its
	// events in the lake (--storage lake): Parquet parts written from the log.
	Lake bool `json:"lake,omitempty"`
	// Cluster runs the scenario against a cluster of hedges of its own (hedge cluster
	// up: three nodes, the log replicated on all three, the warehouse on node1), its
	// connections spread evenly over the nodes; as through the log, the row check
	// waits for the warehouse to apply what was acknowledged.
	Cluster bool `json:"cluster,omitempty"`
	// Historical sends historical_migration batches with month-old timestamps.
	Historical bool `json:"historical,omitempty"`
	// Personless is the share of ordinary events sent personless (posthog-js: 0.3).
	Personless  float64 `json:"personless_share"`
	Connections int     `json:"connections"`
	// Rate, when positive, sends that many requests a second on a fixed schedule (open
	// loop: latency counts from when a request was due, so a slow server cannot hide
	// its queueing); else every connection sends as fast as it is answered.
	Rate float64 `json:"rate,omitempty"`
	// RateOf, when set, names the scenario whose achieved rate sets Rate at run time:
	// RateOfMax times the median requests a second that its runs of the same suite
	// had answered 200 (resolveRate), RateBase. pick runs RateOf too when it is not
	// picked, and the plan runs it before.
	RateOf    string  `json:"rate_of,omitempty"`
	RateOfMax float64 `json:"rate_of_max,omitempty"`
	RateBase  float64 `json:"rate_base,omitempty"`
	// Interval, when positive, reports the run's figures per interval of its measured
	// part as well (bench/sustained.go).
	Interval time.Duration `json:"interval_ns,omitempty"`
	Warmup   time.Duration `json:"warmup_ns"`
	Duration time.Duration `json:"duration_ns"`
	// Sends, when positive, ends the run after WarmupSends+Sends sends instead of after
	// Warmup+Duration (Duration then only bounds it).
	Sends       int `json:"sends,omitempty"`
	WarmupSends int `json:"warmup_sends,omitempty"`
	// Reads also reads the management and query APIs while ingesting (mixed).
	Reads bool `json:"reads,omitempty"`
	// Soak checks that the server's resident set stays flat.
	Soak bool `json:"soak,omitempty"`
	// Health measures plain HTTP on hedge's capture listener (GET /_health): the
	// ceiling of requests a second that capture's figures are compared with.
	Health bool `json:"health,omitempty"`
	// Flags posts /flags/?v=2 requests shaped like posthog-js's to the project the
	// flags scenarios set up (bench/flags.go), and checks every answer.
	Flags bool `json:"flags,omitempty"`
	// Beside is traffic sent at the same time, on connections of its own, and
	// reported apart: the ingest that the flags scenarios are measured beside. Its
	// rows are the run's row check. Its timing is the scenario's: its own Warmup and
	// Duration are the scenario's, for the report.
	Beside *scenario `json:"beside,omitempty"`
	// Abuse is sent beside the scenario's own traffic, from other addresses and to
	// another tenant (bench/abuse.go); the report compares the scenario with
	// abuseBaseline, its traffic alone.
	Abuse *abuse `json:"abuse,omitempty"`
	// Queries is the queries scenario (bench/queries.go): it sends no traffic, and
	// runs on a hedge of its own, on generated events, after the other scenarios.
	Queries *queryBench `json:"queries,omitempty"`
	// poolEvents is about how many events the prebuilt bodies hold together.
	poolEvents int
	// flagsPersons is how many persons the flags scenarios store before they start.
	flagsPersons int
}

// modes are the suites: standard for `make bench` (under 10 minutes, sustained's 5,
// and the queries scenario's few more), quick for `make bench-quick` (about two minutes
// of load, and a minute of queries), tiny for `go test ./bench` (seconds, every scenario, for
// correctness only).
var modes = []string{"standard", "quick", "tiny"}

// plan is the scenarios of a mode in the order they run. A scenario named twice or
// more runs that many times and reports the median; batch-1k and batch-1k-personless
// alternate, since their ratio is the cost of person processing and the machine's
// speed drifts, and http runs first and before the flags scenarios.
func plan(mode string) ([]scenario, error) {
	const (
		batch  = "/batch/"
		single = "/capture/"
	)
	type durations struct{ warmup, short, long, soak, sustained, interval time.Duration }
	var d durations
	// Single-event requests each wait for a group commit, so capture's throughput is
	// its connections over the commit time: 256 connections reach hedge's plateau on 2
	// cores (measured: 8.9k req/s with 64, 15.5k with 256, 18.7k with 512), and the
	// fixed rate needs twice that many in flight when commits slow down.
	reps, pool, conns, bigBody, bigSends, soakEvents, soakRate, captureRate := 1, 16000, 256, 20<<20, 5, 100, 200.0, 25000.0
	// /flags/ answers without waiting for a commit, so few requests in flight reach
	// hedge's plateau on 2 cores (measured beside the ingest: 8.7k req/s with 16, 9.8-
	// 11.4k with 32, 10.4-11.8k with 64 at twice the p99, 12.5k with 128 while the
	// ingest beside fell behind, p50 0.8 s). The fixed rate is the goal; its
	// connections cover a 25 ms stall at that rate.
	flagsConns, flagsRateConns, flagsRate, flagsPersons := 32, 256, 10000.0, 1000
	// The abuse is the issue's: 1,500 idle connections, 24 stalled bodies (as many
	// as once held hedge's whole in-flight budget), and another tenant's queries on
	// one worker more than the 2 that hedge runs at once for a project, so that one
	// always waits: one counts rows until the query time limit (one core), the other
	// groups 60 million rows into 30 million groups (measured alone: 4 s on both
	// cores and 220 MB, near DuckDB's default memory limit; two at once spill and run
	// to the time limit). The abused runs are measured for longer than hedge's 10 s
	// timeouts, so that they see hedge close the idle connections and end the stalled
	// bodies, and the abuse open them again.
	allAbuse := abuse{IdleConns: 1500, StalledBodies: 24, StalledLength: 10 << 20, StalledSent: 65 << 10, QueryWorkers: 3,
		Queries: []string{
			"SELECT count() FROM range(1000000000000)",
			"SELECT count() FROM (SELECT range % 30000000 AS k, count() AS c FROM range(60000000) GROUP BY k)",
		}}
	abuseDuration := 12 * time.Second
	// The queries scenario's events: the 10 million over 60 days (some 5 GB
	// of database), from 50,000 persons; quick mode reads a tenth as many.
	queries := queryBench{Events: 10_000_000, Persons: 50_000, Days: 60, Runs: 10, MinRuns: 3, Budget: 10 * time.Second, Cache: true}
	switch mode {
	case "standard":
		d = durations{2 * time.Second, 15 * time.Second, 20 * time.Second, 2 * time.Minute, 5 * time.Minute, 10 * time.Second}
		reps = 3
		abuseDuration = d.long
	case "quick":
		d = durations{time.Second, 6 * time.Second, 8 * time.Second, 15 * time.Second, 30 * time.Second, 10 * time.Second}
		bigSends = 2
		queries.Events, queries.Persons, queries.Runs, queries.Budget = 1_000_000, 20_000, 5, 3*time.Second
	case "tiny":
		d = durations{0, 300 * time.Millisecond, 300 * time.Millisecond, time.Second, time.Second, 250 * time.Millisecond}
		pool, conns, bigBody, bigSends, soakEvents, soakRate, captureRate = 500, 4, 1<<20, 2, 10, 50, 500
		flagsConns, flagsRateConns, flagsRate, flagsPersons = 4, 8, 500, 40
		allAbuse = abuse{IdleConns: 20, StalledBodies: 2, StalledLength: 1 << 20, StalledSent: 65 << 10, QueryWorkers: 1,
			Queries: []string{"SELECT count() FROM range(1000000)", "SELECT count() FROM (SELECT range % 1000 AS k, count() AS c FROM range(100000) GROUP BY k)"}}
		abuseDuration = d.long
		queries = queryBench{Events: 20_000, Persons: 300, Days: 60, Runs: 2, MinRuns: 1}
	default:
		return nil, fmt.Errorf("unknown mode %q: want one of %s", mode, strings.Join(modes, ", "))
	}
	batchEvents := min(1000, pool/5)
	s := func(sc scenario) scenario {
		sc.poolEvents = pool
		if sc.Personless == 0 {
			sc.Personless = 0.3
		}
		if sc.Warmup == 0 && !sc.Health && sc.Sends == 0 {
			sc.Warmup = d.warmup
		}
		return sc
	}
	http := s(scenario{Name: "http", Health: true, Connections: conns, Warmup: d.warmup / 2, Duration: d.short / 3})
	capture := s(scenario{Name: "capture", Path: single, Events: 1, Connections: conns, Duration: d.long})
	capture25k := s(scenario{Name: "capture-25k", Path: single, Events: 1, Connections: 2 * conns, Rate: captureRate, Duration: d.short})
	// 8 bodies in flight keep the writer busy; with 4 it waited on round trips a third
	// of the time, so the figure measured the client's concurrency, not hedge.
	batch1k := s(scenario{Name: "batch-1k", Path: batch, Events: batchEvents, Connections: 8, Duration: d.long / time.Duration(reps)})
	personless := batch1k
	personless.Name, personless.Personless = "batch-1k-personless", 1
	// sustained is batch-1k's traffic at 80% of the rate batch-1k's runs achieved, on
	// a fixed schedule, for minutes (the goal: no answer waits more than 1 s,
	// events queryable within 1 s p99), reported per interval; resolveRate sets its
	// rate and connections.
	sustained := s(scenario{Name: "sustained", Path: batch, Events: batchEvents, RateOf: batch1k.Name, RateOfMax: 0.8,
		Interval: d.interval, Duration: d.sustained})
	big := s(scenario{Name: "batch-20mb", Path: batch, Events: 1 << 30, MaxBytes: bigBody, Connections: 1,
		Sends: bigSends, WarmupSends: 1, Duration: 2 * time.Minute})
	gzip := s(scenario{Name: "gzip", Path: "/e/", Events: batchEvents, Gzip: true, Connections: 8, Duration: d.long})
	historical := s(scenario{Name: "historical", Path: batch, Events: batchEvents, Historical: true, Connections: 2, Duration: d.short})
	mixed := s(scenario{Name: "mixed", Path: batch, Events: batchEvents, Connections: 8, Reads: true, Duration: d.long})
	soak := s(scenario{Name: "soak", Path: batch, Events: soakEvents, Connections: 8, Rate: soakRate, Soak: true, Duration: d.soak})
	// The flags scenarios run beside /batch/ ingest at the soak's rate (a fifth of the
	// batch-1k ceiling on 2 cores), as a project's traffic does: the closed loop
	// measures /flags/'s throughput, the fixed rate its latency at the goal's rate.
	besideIngest := func(sc scenario) scenario {
		ingest := s(scenario{Name: sc.Name + "/batch", Path: batch, Events: soakEvents, Connections: 8, Rate: soakRate})
		ingest.Warmup, ingest.Duration = sc.Warmup, sc.Duration
		sc.Beside, sc.flagsPersons = &ingest, flagsPersons
		return sc
	}
	flagsPath := "/flags/?v=2"
	flags := besideIngest(s(scenario{Name: "flags", Path: flagsPath, Flags: true, Connections: flagsConns, Duration: d.short}))
	flags10k := besideIngest(s(scenario{Name: "flags-10k", Path: flagsPath, Flags: true, Connections: flagsRateConns,
		Rate: flagsRate, Duration: d.short}))

	// The abuse's load is batch-1k's: alone, beside the abusive connections (which
	// tells their cost from the queries'), and beside all of the abuse.
	baseline := s(scenario{Name: abuseBaseline, Path: batch, Events: batchEvents, Connections: 8, Duration: abuseDuration})
	connsAbuse := allAbuse
	connsAbuse.QueryWorkers, connsAbuse.Queries = 0, nil
	abusedConns, abused := baseline, baseline
	abusedConns.Name, abusedConns.Abuse = "abuse-connections", &connsAbuse
	abused.Name, abused.Abuse = "abuse", &allAbuse

	scenarios := []scenario{http, capture}
	if mode != "quick" {
		scenarios = append(scenarios, capture25k)
	}
	for range reps {
		scenarios = append(scenarios, batch1k, personless)
	}
	scenarios = append(scenarios, big, gzip)
	if mode != "quick" {
		scenarios = append(scenarios, historical, mixed)
	}
	// The flags scenarios come last, so that the ingest beside them leaves the database
	// the other scenarios measure as it was before they existed; http runs again just
	// before them, so that their ceiling is the machine's speed of that moment too.
	// The abuse scenarios come last of all, abuse the very last: hedge runs the
	// tenant's queries that the abuse abandons on to their end (up to its query time
	// limit), which only abuse's row check and hedge's shutdown see.
	// sustained comes after batch-1k, whose rate it takes, and after the other ingest
	// scenarios and the soak: its minutes store more events than all of them together,
	// a larger database would change their figures, and the end of its load (a
	// checkpoint of its WAL) would show in the soak's resident set.
	scenarios = append(scenarios, soak, sustained, http, flags, flags10k, baseline)
	if mode != "quick" {
		scenarios = append(scenarios, abusedConns)
	}
	// The same loads through the event log, on a hedge of their own (runSuite): what a
	// client's 200 costs when it waits for the log's fsync rather than the warehouse's
	// commit, and the abuse beside it.
	viaLog := func(sc scenario) scenario {
		sc.Name, sc.Log = sc.Name+logSuffix, true
		return sc
	}
	batch1kLog := viaLog(batch1k)
	batch1kLog.Duration = d.long
	// sustained-log sends at 80% of what the direct path's batch-1k took, a rate the
	// warehouse keeps up with: how soon acknowledged events are queryable through the log.
	scenarios = append(scenarios, abused, viaLog(capture), batch1kLog, viaLog(baseline), viaLog(abused), viaLog(sustained))
	// batch-1k-cluster is batch-1k-log's load sent to the three nodes of a cluster, as
	// many connections to each (one more than batch-1k's 8 in all): what a 200 costs
	// when the log replicates it to every node, and whether the warehouse keeps up
	// with three edges.
	batch1kCluster := batch1kLog
	batch1kCluster.Name, batch1kCluster.Log, batch1kCluster.Cluster = batch1k.Name+clusterSuffix, false, true
	batch1kCluster.Connections = clusterNodes * ((batch1k.Connections + clusterNodes - 1) / clusterNodes)
	scenarios = append(scenarios, batch1kCluster)
	// batch-1k-lake is batch-1k-log's load on a hedge that keeps its events in the
	// lake: what the lake's writer stores a second, beside the table's (batch-1k-log's
	// caught up), which decides the default of one node (README, "The lake").
	batch1kLake := batch1kLog
	batch1kLake.Name, batch1kLake.Lake = batch1k.Name+lakeSuffix, true
	scenarios = append(scenarios, batch1kLake)
	// The queries scenarios run on a hedge of their own each, once the other
	// scenarios' has stopped (runSuite): queries-lake on the same events moved into the
	// lake (hedge lake move), served with --storage lake.
	queriesLake := queries
	queriesLake.Lake = true
	return append(scenarios, scenario{Name: "queries", Queries: &queries}, scenario{Name: "queries" + lakeSuffix, Queries: &queriesLake}), nil
}

// pick keeps the scenarios named in list (comma-separated), in plan order, and the
// scenarios whose rate a kept one takes (RateOf), which the plan runs before it; ""
// keeps all.
func pick(scenarios []scenario, list string) ([]scenario, error) {
	if list == "" {
		return scenarios, nil
	}
	names := strings.Split(list, ",")
	for _, sc := range scenarios {
		if sc.RateOf != "" && slices.Contains(names, sc.Name) && !slices.Contains(names, sc.RateOf) {
			names = append(names, sc.RateOf)
		}
	}
	var kept []scenario
	for _, sc := range scenarios {
		if slices.Contains(names, sc.Name) {
			kept = append(kept, sc)
		}
	}
	for _, name := range names {
		if !slices.ContainsFunc(kept, func(sc scenario) bool { return sc.Name == name }) {
			return nil, fmt.Errorf("unknown scenario %q", name)
		}
	}
	return kept, nil
}

// bodies builds the scenario's prebuilt bodies: enough of them, from different
// visitors, that the traffic varies, all with the same number of events so that each
// send's rows can be counted. A body capped by size is built once.
func (sc scenario) bodies(token string, seed uint64) []*gen.Body {
	if sc.Health || sc.Flags {
		return nil // flagsProject's bodies
	}
	g := gen.New(gen.Config{Seed: seed, PersonlessShare: sc.Personless})
	now := time.Now()
	if sc.Historical {
		now = now.AddDate(0, -1, 0)
	}
	n := 1
	if sc.MaxBytes == 0 {
		n = min(1024, max(1, sc.poolEvents/sc.Events))
	}
	bodies := make([]*gen.Body, n)
	for i := range bodies {
		if sc.Events == 1 {
			bodies[i] = g.SingleBody(token, now)
		} else {
			bodies[i] = g.BatchBody(gen.BodyConfig{Token: token, Events: sc.Events, MaxBytes: sc.MaxBytes, Historical: sc.Historical, Time: now})
		}
		if sc.Gzip {
			bodies[i] = bodies[i].Gzip()
		}
	}
	return bodies
}

// contentType is what posthog-js and the server SDKs send with the scenario's bodies.
func (sc scenario) contentType() string {
	if sc.Gzip {
		return "text/plain"
	}
	return "application/json"
}
