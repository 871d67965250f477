package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report is what a suite or a load run measured: the file in bench/results.
type report struct {
	Date          string     `json:"date"`
	Commit        string     `json:"commit"`
	Mode          string     `json:"mode"`
	Machine       machine    `json:"machine"`
	HedgeVersion  string     `json:"hedge_version,omitempty"`
	DuckDBVersion string     `json:"duckdb_version,omitempty"`
	Target        *target    `json:"target"`
	Seconds       float64    `json:"seconds"`
	Stages        []*stage   `json:"stages,omitempty"`
	Scenarios     []*result  `json:"scenarios"`
	Targets       []goal     `json:"targets"`
	Failed        bool       `json:"failed"`
	Problems      []string   `json:"problems,omitempty"`
	started       time.Time  // for Seconds
	steal0        *systemCPU // for Machine.StealPercent
}

// result is a scenario's figures, over its runs: throughput is the median run's, the
// latencies are over every measured send of every run.
type result struct {
	Scenario          scenario         `json:"scenario"`
	BodyEvents        int              `json:"events_per_body"`
	Runs              []runSummary     `json:"runs"`
	EventsPerSecond   float64          `json:"events_per_second"`
	RequestsPerSecond float64          `json:"requests_per_second"`
	MBPerSecond       float64          `json:"body_mb_per_second"`
	Latency           percentiles      `json:"latency_ms"`
	Answers           map[string]int64 `json:"answers"`
	ServerCPU         float64          `json:"server_cpu_cores"`
	ClientCPU         float64          `json:"client_cpu_cores"`
	OtherCPU          float64          `json:"other_cpu_cores"`
	StealPercent      float64          `json:"steal_percent"`
	PeakRSS           int64            `json:"peak_rss_bytes"`
	// NodePeakRSS is a cluster's peak resident set of each node, by name; PeakRSS is
	// their sum.
	NodePeakRSS map[string]int64 `json:"node_peak_rss_bytes,omitempty"`
	// Versus compares a cluster scenario with the same load on one hedge (compareCluster).
	Versus     []versus         `json:"versus,omitempty"`
	Flatness   *flatness        `json:"rss_flatness,omitempty"`
	Visibility percentiles      `json:"visibility_ms"`
	Reads      map[string]reads `json:"reads,omitempty"`
	// Beside is the traffic sent beside the scenario's own (scenario.Beside).
	Beside *beside `json:"beside,omitempty"`
	// FlagAnswers is what a flags scenario verified of its answers, over its runs.
	FlagAnswers *answerCheck `json:"flag_answers,omitempty"`
	// Abuse is what the abuse beside the scenario's traffic did, over its runs.
	Abuse *abuseStats `json:"abuse,omitempty"`
	// Queries is what the queries scenario measured (the plan runs it once).
	Queries     *queryRun `json:"queries,omitempty"`
	RowsOK      bool      `json:"rows_ok"`
	Ceiling     *ceiling  `json:"ceiling,omitempty"`
	Problems    []string  `json:"problems,omitempty"`
	usageSource string
}

// runSummary is one run of a scenario.
type runSummary struct {
	RunID             string      `json:"run_id"`
	Seconds           float64     `json:"measured_seconds"`
	BuildSeconds      float64     `json:"body_build_seconds"`
	EventsPerSecond   float64     `json:"events_per_second"`
	RequestsPerSecond float64     `json:"requests_per_second"`
	StealPercent      float64     `json:"steal_percent"`
	Rows              rowCheck    `json:"rows"`
	FirstError        string      `json:"first_error,omitempty"`
	RSS               []rssSample `json:"rss,omitempty"`
	ServerSource      string      `json:"server_figures_from,omitempty"`
	// Intervals are the run's figures per interval (scenario.Interval).
	Intervals []interval `json:"intervals,omitempty"`
}

// percentiles of a set of durations, in milliseconds.
type percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func percentilesOf(d []time.Duration) percentiles {
	if len(d) == 0 {
		return percentiles{}
	}
	slices.Sort(d)
	at := func(q float64) float64 { // nearest rank
		i := int(math.Ceil(q*float64(len(d)))) - 1
		return float64(d[max(i, 0)]) / float64(time.Millisecond)
	}
	return percentiles{Count: len(d), P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: at(1)}
}

// reads is how the management or query API answered during the mixed scenario.
type reads struct {
	Latency percentiles      `json:"latency_ms"`
	Answers map[string]int64 `json:"answers"`
}

// beside is how the traffic beside a scenario's own was answered: throughput of the
// median run, latencies over every measured send.
type beside struct {
	EventsPerSecond   float64          `json:"events_per_second"`
	RequestsPerSecond float64          `json:"requests_per_second"`
	Latency           percentiles      `json:"latency_ms"`
	Answers           map[string]int64 `json:"answers"`
}

// flatness is the soak's verdict on the server's resident set: the peak of the second
// half of the measured part against the peak of the first half.
type flatness struct {
	FirstHalfPeak  int64 `json:"first_half_peak_bytes"`
	SecondHalfPeak int64 `json:"second_half_peak_bytes"`
	Flat           bool  `json:"flat"`
}

// allowedGrowth is how much the soak's second-half peak may exceed its first-half peak
// and still count as flat: 5%, and at least 16 MiB for small processes.
func allowedGrowth(peak int64) int64 { return max(16<<20, peak/20) }

// ceiling is the stage ceiling that bounds a figure, measured in the same suite.
type ceiling struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	Bound string  `json:"bound_by"`
	// Ratio is the figure over its ceiling (for a duration, the ceiling over the
	// figure): 1 is at the ceiling.
	Ratio float64 `json:"ratio"`
}

// goal is one of the targets for this machine, with what was measured.
type goal struct {
	Figure   string `json:"figure"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	// Met is nil when the suite did not measure the figure.
	Met *bool `json:"met"`
}

// summarize turns the runs of each scenario into results, in order of first run.
func summarize(runs []*scenarioRun) []*result {
	var results []*result
	byName := map[string][]*scenarioRun{}
	for _, r := range runs {
		if byName[r.scenario.Name] == nil {
			results = append(results, &result{Scenario: r.scenario})
		}
		byName[r.scenario.Name] = append(byName[r.scenario.Name], r)
	}
	for _, res := range results {
		res.fill(byName[res.Scenario.Name])
	}
	return results
}

func (res *result) fill(runs []*scenarioRun) {
	sent, besideSent := newSendStats(), newSendStats()
	var visibility []time.Duration
	readStats := map[string]*sendStats{}
	var events, requests, mb, besideEvents, besideRequests []float64
	res.RowsOK = true
	res.BodyEvents = runs[0].bodyEvents
	for _, r := range runs {
		seconds := r.window.Seconds()
		rs := runSummary{
			RunID: fmt.Sprintf("%08x", r.runID), Seconds: seconds, BuildSeconds: r.build.Seconds(),
			StealPercent: r.usage.StealPercent, Rows: r.rows, ServerSource: r.usage.Source, Intervals: r.intervals,
		}
		if seconds > 0 {
			rs.EventsPerSecond = float64(r.sent.events) / seconds
			rs.RequestsPerSecond = float64(r.sent.statuses[200]) / seconds
			mb = append(mb, float64(r.sent.bytes)/seconds/1e6)
		}
		if r.err != nil {
			rs.FirstError = r.err.Error()
		}
		if r.scenario.Soak {
			rs.RSS = r.usage.Series
			res.Flatness = flatnessOf(r.usage.Series, r.warmEnd)
		}
		if b := r.beside; b != nil && b.window > 0 {
			besideSent.add(&b.sent)
			besideEvents = append(besideEvents, float64(b.sent.events)/b.window.Seconds())
			besideRequests = append(besideRequests, float64(b.sent.statuses[200])/b.window.Seconds())
		}
		if r.answers != nil {
			if res.FlagAnswers == nil {
				res.FlagAnswers = &answerCheck{Flags: r.answers.Flags}
			}
			res.FlagAnswers.add(r.answers)
		}
		res.Runs = append(res.Runs, rs)
		events = append(events, rs.EventsPerSecond)
		requests = append(requests, rs.RequestsPerSecond)
		sent.add(&r.sent)
		for _, v := range r.visibility {
			visibility = append(visibility, v.delay)
		}
		for kind, s := range r.reads {
			if readStats[kind] == nil {
				readStats[kind] = newSendStats()
			}
			readStats[kind].add(s)
		}
		n := float64(len(runs))
		res.ServerCPU += r.usage.ServerCPU / n
		res.ClientCPU += r.usage.ClientCPU / n
		res.OtherCPU += r.usage.OtherCPU / n
		res.StealPercent += r.usage.StealPercent / n
		res.PeakRSS = max(res.PeakRSS, r.usage.PeakRSS)
		for node, peak := range r.usage.NodePeakRSS {
			if res.NodePeakRSS == nil {
				res.NodePeakRSS = map[string]int64{}
			}
			res.NodePeakRSS[node] = max(res.NodePeakRSS[node], peak)
		}
		res.usageSource = r.usage.Source
		if r.rows.Skipped == "" && !r.rows.OK {
			res.RowsOK = false
			res.Problems = append(res.Problems, r.rows.problems()...)
		}
	}
	res.EventsPerSecond, res.RequestsPerSecond, res.MBPerSecond = median(events), median(requests), median(mb)
	res.Latency = percentilesOf(sent.latencies)
	res.Answers = answers(sent.statuses)
	res.Visibility = percentilesOf(visibility)
	if runs[0].beside != nil {
		res.Beside = &beside{EventsPerSecond: median(besideEvents), RequestsPerSecond: median(besideRequests),
			Latency: percentilesOf(besideSent.latencies), Answers: answers(besideSent.statuses)}
	}
	res.Abuse = abuseOf(runs)
	if q := runs[0].queries; q != nil {
		res.Queries = q
		res.Problems = append(res.Problems, q.Problems...)
	}
	if res.FlagAnswers != nil {
		res.FlagAnswers.finish()
		res.Problems = append(res.Problems, res.FlagAnswers.problems()...)
	}
	if len(readStats) > 0 {
		res.Reads = map[string]reads{}
		for kind, s := range readStats {
			res.Reads[kind] = reads{Latency: percentilesOf(s.latencies), Answers: answers(s.statuses)}
		}
	}
	if res.Flatness != nil && !res.Flatness.Flat {
		res.Problems = append(res.Problems, fmt.Sprintf("resident set grew from %d MiB to %d MiB during the soak",
			res.Flatness.FirstHalfPeak>>20, res.Flatness.SecondHalfPeak>>20))
	}
	if sent.statuses[0] > 0 {
		for _, r := range res.Runs {
			if r.FirstError != "" {
				res.Problems = append(res.Problems, fmt.Sprintf("%d sends without an answer, e.g. %s", sent.statuses[0], r.FirstError))
				break
			}
		}
	}
}

func flatnessOf(series []rssSample, warmEnd time.Duration) *flatness {
	var measured []rssSample
	for _, s := range series {
		if s.At >= warmEnd {
			measured = append(measured, s)
		}
	}
	if len(measured) < 4 {
		return nil
	}
	f := &flatness{}
	half := len(measured) / 2
	for _, s := range measured[:half] {
		f.FirstHalfPeak = max(f.FirstHalfPeak, s.Bytes)
	}
	for _, s := range measured[half:] {
		f.SecondHalfPeak = max(f.SecondHalfPeak, s.Bytes)
	}
	f.Flat = f.SecondHalfPeak-f.FirstHalfPeak <= allowedGrowth(f.FirstHalfPeak)
	return f
}

func answers(statuses map[int]int64) map[string]int64 {
	m := map[string]int64{}
	for status, n := range statuses {
		key := strconv.Itoa(status)
		if status == 0 {
			key = "no answer"
		}
		m[key] = n
	}
	return m
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ceilings bounds each end-to-end figure with the stage ceilings it depends on: the
// decode of one core, the writer (one goroutine, the serial stage), plain HTTP for
// single-event requests, plain HTTP and the evaluation of the flags for /flags/, and
// the offered rate for open-loop scenarios.
func ceilings(results []*result, stages []*stage) {
	value := func(name string) (float64, string) {
		for _, s := range stages {
			if s.Name == name {
				return s.Value, s.Name
			}
		}
		return 0, ""
	}
	var http float64
	for _, res := range results {
		if res.Scenario.Health {
			http = res.RequestsPerSecond
		}
	}
	lowest := func(res *result, unit string, figure float64, names ...string) {
		c := &ceiling{Unit: unit, Value: math.Inf(1)}
		for _, name := range names {
			v, bound := value(name)
			if name == "http" {
				v, bound = http, "GET /_health"
			}
			if v > 0 && v < c.Value {
				c.Value, c.Bound = v, bound
			}
		}
		if c.Bound != "" && figure > 0 {
			c.Ratio = figure / c.Value
			res.Ceiling = c
		}
	}
	const (
		decode1k   = "BenchmarkDecode/batch-1k"
		decodeGzip = "BenchmarkDecode/gzip-1k"
		decode1    = "BenchmarkDecode/single"
		write      = "BenchmarkWriterAppender10k/persons"
		writeNoP   = "BenchmarkWriterAppender10k/personless"
		evaluate   = "BenchmarkEvaluate/parallel"
	)
	// The abuse's baseline, and that of the abuse through the log (scenario.Log).
	var baselines [2]*result
	for _, res := range results {
		switch res.Scenario.Name {
		case abuseBaseline:
			baselines[0] = res
		case abuseBaseline + logSuffix:
			baselines[1] = res
		}
	}
	for _, res := range results {
		sc := res.Scenario
		baseline := baselines[0]
		if sc.Log {
			baseline = baselines[1]
		}
		switch {
		case sc.Queries != nil:
			// Each of its figures has a ceiling of its own (queryFigure).
		case sc.Abuse != nil && baseline != nil && baseline.EventsPerSecond > 0:
			// The abused load's bound is the same load alone, measured just before.
			res.Ceiling = &ceiling{Value: baseline.EventsPerSecond, Unit: "events/s", Bound: baseline.Scenario.Name,
				Ratio: res.EventsPerSecond / baseline.EventsPerSecond}
		case sc.Flags && sc.Rate > 0:
			res.Ceiling = &ceiling{Value: sc.Rate, Unit: "req/s", Bound: "offered rate", Ratio: res.RequestsPerSecond / sc.Rate}
		case sc.Flags:
			// A /flags/ request costs the whole machine (server and generator share it)
			// at least a plain request's share, 1/http, and an evaluation's, 1/evaluate
			// (the parallel benchmark: every core); their sum bounds the rate. Decoding
			// the body, the lookups, encoding the answer and the ingest beside are the
			// rest of the cost, what the ratio shows.
			var cost float64
			var bounds []string
			if http > 0 {
				cost += 1 / http
				bounds = append(bounds, "GET /_health")
			}
			if v, name := value(evaluate); v > 0 {
				cost += 1 / v
				bounds = append(bounds, name)
			}
			if cost > 0 && res.RequestsPerSecond > 0 {
				res.Ceiling = &ceiling{Value: 1 / cost, Unit: "req/s", Bound: strings.Join(bounds, " + "), Ratio: res.RequestsPerSecond * cost}
			}
		case sc.Rate > 0:
			offered := sc.Rate * float64(sc.Events)
			res.Ceiling = &ceiling{Value: offered, Unit: "events/s", Bound: "offered rate", Ratio: res.EventsPerSecond / offered}
		case sc.Health:
		case sc.Events == 1:
			lowest(res, "req/s", res.RequestsPerSecond, "http", decode1, write)
		case sc.MaxBytes > 0:
			// One body alone: its decode and its write, one after the other.
			d, _ := value(decode1k)
			w, _ := value(write)
			events := float64(res.BodyEvents)
			if d > 0 && w > 0 && res.Latency.P50 > 0 {
				ms := 1000 * (events/d + events/w)
				res.Ceiling = &ceiling{Value: ms, Unit: "ms", Bound: "decode + write", Ratio: ms / res.Latency.P50}
			}
		case sc.Gzip:
			lowest(res, "events/s", res.EventsPerSecond, decodeGzip, write)
		case sc.Personless == 1:
			lowest(res, "events/s", res.EventsPerSecond, decode1k, writeNoP)
		default:
			lowest(res, "events/s", res.EventsPerSecond, decode1k, write)
		}
	}
}

// goals checks the figures against the targets for this machine.
func goals(results []*result, stages []*stage) []goal {
	find := func(name string) *result {
		for _, r := range results {
			if r.Scenario.Name == name {
				return r
			}
		}
		return nil
	}
	met := func(ok bool) *bool { return &ok }
	var g []goal
	add := func(figure, target, measured string, ok *bool) {
		g = append(g, goal{Figure: figure, Target: target, Measured: measured, Met: ok})
	}
	if r := find("batch-1k"); r != nil {
		add("/batch/ 1k bodies, sustained, durable", "≥ 200,000 events/s", thousands(r.EventsPerSecond)+" events/s", met(r.EventsPerSecond >= 200000))
	}
	if r := find("capture"); r != nil {
		add("/capture/ single events, durable", "≥ 50,000 req/s", thousands(r.RequestsPerSecond)+" req/s", met(r.RequestsPerSecond >= 50000))
	}
	if r := find("capture-25k"); r != nil {
		achieved := r.RequestsPerSecond / r.Scenario.Rate
		add(fmt.Sprintf("/capture/ p99 at %s req/s", thousands(r.Scenario.Rate)), "< 25 ms",
			fmt.Sprintf("%s at %s req/s", millis(r.Latency.P99), thousands(r.RequestsPerSecond)),
			met(r.Latency.P99 < 25 && achieved >= 0.95))
	}
	for _, r := range results {
		sc := r.Scenario
		if !sc.Flags || sc.Beside == nil {
			continue
		}
		flagsCount := 0
		if r.FlagAnswers != nil {
			flagsCount = r.FlagAnswers.Flags
		}
		ingest := fmt.Sprintf("beside /batch/ at %s events/s", thousands(sc.Beside.Rate*float64(sc.Beside.Events)))
		if sc.Rate > 0 {
			achieved := r.RequestsPerSecond / sc.Rate
			add(fmt.Sprintf("/flags/ (%d flags) p99 at %s req/s, %s", flagsCount, thousands(sc.Rate), ingest), "< 20 ms",
				fmt.Sprintf("%s at %s req/s", millis(r.Latency.P99), thousands(r.RequestsPerSecond)), met(r.Latency.P99 < 20 && achieved >= 0.95))
			continue
		}
		add(fmt.Sprintf("/flags/ (%d flags), %d connections, %s", flagsCount, sc.Connections, ingest), "≥ 10,000 req/s, p99 < 20 ms",
			fmt.Sprintf("%s req/s, p99 %s", thousands(r.RequestsPerSecond), millis(r.Latency.P99)), met(r.RequestsPerSecond >= 10000 && r.Latency.P99 < 20))
	}
	for _, r := range results {
		q := r.Queries
		if q == nil {
			continue
		}
		for _, f := range q.Figures {
			if f.Goal == 0 {
				continue
			}
			measured := millis(f.Latency.P50)
			if f.Ceiling != nil {
				measured += fmt.Sprintf(" (ceiling %s)", millis(f.Ceiling.P50))
			}
			failed := int64(0)
			for status, n := range f.Answers {
				if status != "200" {
					failed += n
				}
			}
			if failed > 0 {
				measured += fmt.Sprintf(", %d of %d runs failed", failed, failed+int64(f.Latency.Count))
			}
			var ok *bool
			if f.Latency.Count > 0 {
				ok = met(failed == 0 && f.Latency.P50 < float64(f.Goal)/float64(time.Millisecond))
			}
			add(fmt.Sprintf("%s on %s events, p50", f.Name, thousands(float64(q.Events))), "< "+millis(float64(f.Goal)/float64(time.Millisecond)), measured, ok)
		}
	}
	if r := find("batch-20mb"); r != nil {
		add(fmt.Sprintf("one %d MB /batch/ body", r.Scenario.MaxBytes>>20), "accepted in < 200 ms",
			fmt.Sprintf("%s median, %s max", millis(r.Latency.P50), millis(r.Latency.Max)), met(r.Latency.P50 < 200))
	}
	if r := find("abuse"); r != nil && r.Scenario.Abuse != nil {
		a := r.Scenario.Abuse
		figure := fmt.Sprintf("/batch/ 1k bodies beside %s idle connections, %d stalled bodies, another tenant's heavy queries",
			thousands(float64(a.IdleConns)), a.StalledBodies)
		if base := find(abuseBaseline); base != nil && base.EventsPerSecond > 0 {
			ratio := r.EventsPerSecond / base.EventsPerSecond
			clean := len(r.Answers) == 1 && r.Answers["200"] > 0
			measured := fmt.Sprintf("%.2f (%s against %s events/s), p99 %s against %s, %s", ratio, thousands(r.EventsPerSecond),
				thousands(base.EventsPerSecond), millis(r.Latency.P99), millis(base.Latency.P99), answerText(r.Answers))
			if len(r.Answers) == 0 {
				measured = "0: the load stalled, no send of its measured part was answered"
			}
			add(figure, "≥ 0.8 of the load alone, no errors", measured, met(ratio >= 0.8 && clean && r.RowsOK))
		} else {
			add(figure, "≥ 0.8 of the load alone, no errors", "no "+abuseBaseline+" run to compare with", nil)
		}
		if r.PeakRSS > 0 {
			add("peak RSS beside the abuse, default flags", "< 1 GB", fmt.Sprintf("%d MiB", r.PeakRSS>>20), met(r.PeakRSS < 1<<30))
		}
	}
	// The time to queryable is a goal of ordinary operation: beside the abuse, another
	// tenant's queries hold DuckDB's cores (the abuse scenario's row shows it).
	var worst *result
	for _, r := range results {
		if r.Scenario.Abuse == nil && r.Visibility.Count > 0 && (worst == nil || r.Visibility.P99 > worst.Visibility.P99) {
			worst = r
		}
	}
	if worst != nil {
		add("time from 200 to queryable, p99", "< 1 s", fmt.Sprintf("%s (%s)", millis(worst.Visibility.P99), worst.Scenario.Name), met(worst.Visibility.P99 < 1000))
	}
	// The goal is a hedge's: a cluster's nodes count one by one.
	var peak int64
	var peakOf string
	for _, r := range results {
		if r.NodePeakRSS == nil && r.PeakRSS > peak {
			peak, peakOf = r.PeakRSS, r.Scenario.Name
		}
		for node, p := range r.NodePeakRSS {
			if p > peak {
				peak, peakOf = p, r.Scenario.Name+" "+node
			}
		}
	}
	if peak > 0 {
		add("peak RSS, any scenario", "< 1 GB", fmt.Sprintf("%d MiB (%s)", peak>>20, peakOf), met(peak < 1<<30))
	}
	for _, r := range results {
		if v := sustainedVerdict(r); v != nil {
			g = append(g, *v)
		}
	}
	if p, n := find("batch-1k"), find("batch-1k-personless"); p != nil && n != nil && n.EventsPerSecond > 0 {
		overhead := 1 - p.EventsPerSecond/n.EventsPerSecond
		measured := fmt.Sprintf("%.0f%% end to end", 100*overhead)
		var wp, wn float64
		for _, s := range stages {
			switch s.Name {
			case "BenchmarkWriterAppender10k/persons":
				wp = s.Value
			case "BenchmarkWriterAppender10k/personless":
				wn = s.Value
			}
		}
		if wp > 0 && wn > 0 {
			measured += fmt.Sprintf(", %.0f%% in the writer", 100*(1-wp/wn))
		}
		verdict := met(overhead <= 0.30)
		if overhead < -0.10 {
			// Personless events cost less than persons: a run this much slower was
			// caught by something else, such as DuckDB's automatic checkpoint.
			measured += "; inconclusive, the personless runs were slower"
			verdict = nil
		}
		add("person processing overhead", "≤ 30% versus personless", measured, verdict)
	}
	return g
}

// print writes the report as tables: the machine, the stage ceilings, one row per
// scenario with its ceiling and ratio, and the targets.
func (rep *report) print(w io.Writer) {
	m := rep.Machine
	fmt.Fprintf(w, "\nhedge %s, DuckDB %s, %s, commit %s, mode %s\n", cmp.Or(rep.HedgeVersion, "?"), cmp.Or(rep.DuckDBVersion, "?"), m.GoVersion, rep.Commit, rep.Mode)
	fmt.Fprintf(w, "machine: %s, %d cores, %d GiB, Linux %s; load %.2f at start, steal %.1f%% over %.0f s\n",
		m.CPUModel, m.Cores, m.MemoryBytes>>30, m.Kernel, m.LoadAverage[0], m.StealPercent, rep.Seconds)
	if rep.Target != nil {
		fmt.Fprintf(w, "target: %s\n", rep.Target.CaptureURL)
	}
	if len(rep.Stages) > 0 {
		fmt.Fprintln(w, "\nstage ceilings and costs (Go benchmarks, one goroutine, /parallel on every core; median of runs;")
		fmt.Fprintln(w, "B/id: live heap per distinct id the Writer holds, also MB per million ids):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "benchmark\t\tMB/s\tallocs/op\truns\t")
		for _, s := range rep.Stages {
			mbs := "-" // a benchmark of no bytes (BenchmarkEvaluate)
			if s.MBPerSecond > 0 {
				mbs = fmt.Sprintf("%.0f", s.MBPerSecond)
			}
			fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%d\t\n", s.Name, thousands(s.Value), s.Unit, mbs, thousands(s.AllocsPerOp), len(s.Runs))
		}
		tw.Flush()
	}
	traffic := slices.DeleteFunc(slices.Clone(rep.Scenarios), func(r *result) bool { return r.Queries != nil }) // a table of its own, below
	if len(traffic) > 0 {
		fmt.Fprintln(w, "\nscenarios (latency from when a request was due; CPU in cores: server/generator/others):")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(traffic) > 0 {
		fmt.Fprintln(tw, "scenario\tevents/s\treq/s\tp50\tp95\tp99\tmax\tanswers\tcpu\tsteal\tpeak RSS\tvisible p99\trows\tceiling\tratio\t")
	}
	for _, r := range traffic {
		rows := "ok"
		switch {
		case r.Scenario.Health:
			rows = "-"
		case len(r.Runs) > 0 && r.Runs[0].Rows.Skipped != "":
			rows = "skipped"
		case !r.RowsOK:
			rows = "FAILED"
		}
		ceil, ratio := "-", "-"
		if c := r.Ceiling; c != nil {
			ceil = fmt.Sprintf("%s %s (%s)", thousands(c.Value), c.Unit, c.Bound)
			if c.Unit == "ms" {
				ceil = fmt.Sprintf("%s (%s)", millis(c.Value), c.Bound)
			}
			ratio = fmt.Sprintf("%.2f", c.Ratio)
		}
		server := "?"
		if r.ServerCPU >= 0 && r.usageSource != "" {
			server = fmt.Sprintf("%.2f", r.ServerCPU)
		}
		rss := "?"
		if r.PeakRSS > 0 {
			rss = fmt.Sprintf("%d MiB", r.PeakRSS>>20)
		}
		visible := "-"
		if r.Visibility.Count > 0 {
			visible = fmt.Sprintf("%s (%d)", millis(r.Visibility.P99), r.Visibility.Count)
		}
		events := thousands(r.EventsPerSecond)
		if r.Scenario.Health || r.Scenario.Flags {
			events = "-" // their requests carry no events (the ingest beside is reported below)
		}
		name := r.Scenario.Name
		if len(r.Runs) > 1 {
			name += fmt.Sprintf(" ×%d", len(r.Runs))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s/%.2f/%.2f\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t\n",
			name, events, thousands(r.RequestsPerSecond),
			millis(r.Latency.P50), millis(r.Latency.P95), millis(r.Latency.P99), millis(r.Latency.Max),
			answerText(r.Answers), server, r.ClientCPU, r.OtherCPU, r.StealPercent, rss, visible, rows, ceil, ratio)
	}
	tw.Flush()
	for _, r := range rep.Scenarios {
		for _, kind := range slices.Sorted(maps.Keys(r.Reads)) {
			rd := r.Reads[kind]
			fmt.Fprintf(w, "%s: %s API reads meanwhile: p50 %s, p99 %s, %s\n", r.Scenario.Name, kind,
				millis(rd.Latency.P50), millis(rd.Latency.P99), answerText(rd.Answers))
		}
		if b, sc := r.Beside, r.Scenario.Beside; b != nil && sc != nil {
			fmt.Fprintf(w, "%s: %s beside, %s req/s of %d events offered: %s events/s, %s req/s, p50 %s, p99 %s, max %s, %s\n",
				r.Scenario.Name, sc.Path, thousands(sc.Rate), sc.Events, thousands(b.EventsPerSecond), thousands(b.RequestsPerSecond),
				millis(b.Latency.P50), millis(b.Latency.P99), millis(b.Latency.Max), answerText(b.Answers))
		}
		if c := r.FlagAnswers; c != nil {
			verdict := "all as expected"
			if !c.OK {
				verdict = "WRONG: " + strings.Join(c.problems(), "; ")
			}
			fmt.Fprintf(w, "%s: %s answers of %d flags each; %s decoded (%s for stored persons), %s values compared with the persons' properties: %s\n",
				r.Scenario.Name, thousands(float64(c.Sends)), c.Flags, thousands(float64(c.Decoded)), thousands(float64(c.DecodedKnown)),
				thousands(float64(c.Compared)), verdict)
		}
		if a := r.Abuse; a != nil {
			var baseline *result
			for _, b := range rep.Scenarios {
				if b.Scenario.Name == abuseBaseline {
					baseline = b
				}
			}
			a.print(w, r, baseline)
		}
		if q := r.Queries; q != nil {
			q.print(w, r, rep.Mode)
		}
		printIntervals(w, r)
		if r.Scenario.Cluster || r.Scenario.Lake {
			printVersus(w, r, rep.Scenarios)
		}
		if f := r.Flatness; f != nil {
			fmt.Fprintf(w, "%s: resident set peak %d MiB in the first half, %d MiB in the second: flat %v\n",
				r.Scenario.Name, f.FirstHalfPeak>>20, f.SecondHalfPeak>>20, f.Flat)
		}
	}
	if len(rep.Targets) > 0 {
		fmt.Fprintln(w, "\ntargets for this machine (goals, not assertions):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, g := range rep.Targets {
			verdict := "not measured"
			if g.Met != nil {
				verdict = map[bool]string{true: "met", false: "NOT MET"}[*g.Met]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Figure, g.Target, g.Measured, verdict)
		}
		tw.Flush()
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
}

// answerText is the answers by status, most frequent first: "200:1234 503:5"; "-"
// for none.
func answerText(a map[string]int64) string {
	if len(a) == 0 {
		return "-"
	}
	keys := slices.SortedFunc(maps.Keys(a), func(x, y string) int { return cmp.Or(cmp.Compare(a[y], a[x]), cmp.Compare(x, y)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + strconv.FormatInt(a[k], 10)
	}
	return strings.Join(parts, " ")
}

// thousands formats v rounded, with thousands separators.
func thousands(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// millis formats a duration in milliseconds with about three significant digits.
func millis(ms float64) string {
	switch {
	case ms == 0:
		return "-"
	case ms >= 1000:
		return fmt.Sprintf("%.2fs", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0fms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.2fms", ms)
}
