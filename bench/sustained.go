package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"
)

// The sustained scenario sends batch-1k's traffic on a fixed schedule at a share of the
// rate that batch-1k's runs of the same suite achieved, for minutes: the goal
// is that at 80% of the measured maximum /batch/ rate no request waits more than 1 s
// for its answer and events are queryable within 1 s of their 200 (p99). A stall of a
// few seconds (a checkpoint) hides in the figures of a whole run, so the run is also
// reported per interval (scenario.Interval), with the deduplication set that hedge
// holds at each interval's end: hedge cannot switch deduplication off (a --dedup-events
// or --dedup-window of 0 means the default), so its cost shows as the intervals after
// the set reaches its bound against those before.

// sustainedGoal bounds the longest wait for an answer and the p99 time from a 200 to
// queryable in the sustained scenario.
const sustainedGoal = time.Second

// The deduplication set's figures in hedge's /metrics: the uuids it holds, and those
// its bound made it forget.
const (
	dedupHeldMetric    = "hedge_writer_dedup_events"
	dedupEvictedMetric = "hedge_writer_dedup_evicted_total"
)

// dedupBytesPerEvent is the memory hedge's deduplication set takes per uuid held: at
// most 4/3 of a table slot and a FIFO entry, of 8 bytes each.
const dedupBytesPerEvent = 19

// resolveRate sets the rate of a scenario that runs at a share of another's (RateOf):
// RateOfMax times the median of the requests a second that the runs of RateOf among
// runs had answered 200, with connections enough to keep the schedule through a stall
// as long as the goal's wait, so that the generator's own queue starts only once the
// goal is missed (latency counts from when a request was due either way; each
// connection holds a copy of a body, some 1 MB). A scenario given a rate (bench load
// -rate) keeps it, with connections enough for it as well.
func resolveRate(sc scenario, runs []*scenarioRun) (scenario, error) {
	if sc.RateOf == "" {
		return sc, nil
	}
	if sc.Rate <= 0 {
		var achieved []float64
		for _, r := range runs {
			if r.scenario.Name == sc.RateOf && r.window > 0 {
				achieved = append(achieved, float64(r.sent.statuses[200])/r.window.Seconds())
			}
		}
		if len(achieved) == 0 {
			return sc, fmt.Errorf("cannot set the rate of %s: it is %.0f%% of the rate %s achieved, and %s has not run before it",
				sc.Name, 100*sc.RateOfMax, sc.RateOf, sc.RateOf)
		}
		sc.RateBase = median(achieved)
		sc.Rate = sc.RateOfMax * sc.RateBase
		if sc.Rate <= 0 {
			return sc, fmt.Errorf("cannot set the rate of %s: %s had no request answered 200", sc.Name, sc.RateOf)
		}
	}
	sc.Connections = max(sc.Connections, 1, int(math.Ceil(sustainedGoal.Seconds()*sc.Rate)))
	return sc, nil
}

// timedSend is one measured send of a scenario reported per interval.
type timedSend struct {
	due     time.Time
	latency time.Duration // from due to the answer
	status  int           // 0: no answer
	events  int
}

// dedupSample is hedge's deduplication set as read at one moment.
type dedupSample struct {
	at            time.Time
	held, evicted int64
}

// rssMoment is the server's resident set at one moment.
type rssMoment struct {
	at    time.Time
	bytes int64
}

// rssAt dates the samples of a watch that started at start.
func rssAt(start time.Time, series []rssSample) []rssMoment {
	moments := make([]rssMoment, len(series))
	for i, s := range series {
		moments[i] = rssMoment{start.Add(s.At), s.Bytes}
	}
	return moments
}

// sampleDedup reads hedge's deduplication set at from, at every interval after it, and
// once more when ctx ends, skipping a failed read; nil when the first read fails (the
// target is not hedge).
func sampleDedup(ctx context.Context, api *apiClient, from time.Time, every time.Duration) []dedupSample {
	var samples []dedupSample
	read := func() bool {
		m, err := api.metrics(dedupHeldMetric, dedupEvictedMetric)
		if err == nil {
			samples = append(samples, dedupSample{at: time.Now(), held: int64(m[dedupHeldMetric]), evicted: int64(m[dedupEvictedMetric])})
		}
		return err == nil
	}
	for k := 0; ; k++ {
		timer := time.NewTimer(time.Until(from.Add(time.Duration(k) * every)))
		select {
		case <-ctx.Done():
			timer.Stop()
			if len(samples) > 0 {
				read()
			}
			return samples
		case <-timer.C:
		}
		if !read() && len(samples) == 0 {
			return nil
		}
	}
}

// interval is the figures of one part of a run's measured part: the sends due in it
// (latency counts from when a send was due, the open loop's rule), the visibility
// samples of the events acknowledged in it, the server's peak resident set in it and
// its deduplication set at its end.
type interval struct {
	From       float64     `json:"from_s"` // since the measured part began
	Seconds    float64     `json:"seconds"`
	Requests   int64       `json:"requests_200"`
	Events     int64       `json:"events_200"`
	Failed     int64       `json:"not_200"` // answered otherwise, or not at all
	Latency    percentiles `json:"latency_ms"`
	Visibility percentiles `json:"visibility_ms"`
	PeakRSS    int64       `json:"peak_rss_bytes,omitempty"`
	Dedup      *dedupState `json:"dedup,omitempty"`
}

// dedupState is hedge's deduplication set at an interval's end: the uuids held, and
// those forgotten at its bound during the interval.
type dedupState struct {
	Held    int64 `json:"events_held"`
	Evicted int64 `json:"events_evicted"`
}

// timeline is what a run recorded with its moments.
type timeline struct {
	sends   []timedSend
	visible []visibleSample
	dedup   []dedupSample // in the order read
	rss     []rssMoment
}

// bucket splits the measured part that begins at start and lasts length into intervals
// of every, the last one shorter if need be. A send counts in the interval it was due
// in, a visibility sample in the one its event was acknowledged in and an RSS sample in
// the one it was read in, the last interval taking those after the end, and nothing
// counting before start. An interval's deduplication set is the first one read at or
// after its end (the last interval's: the last one read, once every send was
// answered), its evictions counted from the set read last before its end (which
// sampleDedup reads at the interval's start).
func bucket(start time.Time, length, every time.Duration, t timeline) []interval {
	if length <= 0 || every <= 0 {
		return nil
	}
	n := int((length + every - 1) / every)
	index := func(at time.Time) (int, bool) {
		if at.Before(start) {
			return 0, false
		}
		return min(int(at.Sub(start)/every), n-1), true
	}
	out := make([]interval, n)
	latencies, visible := make([][]time.Duration, n), make([][]time.Duration, n)
	for _, s := range t.sends {
		i, ok := index(s.due)
		if !ok {
			continue
		}
		latencies[i] = append(latencies[i], s.latency)
		if s.status == 200 {
			out[i].Requests++
			out[i].Events += int64(s.events)
		} else {
			out[i].Failed++
		}
	}
	for _, v := range t.visible {
		if i, ok := index(v.acked); ok {
			visible[i] = append(visible[i], v.delay)
		}
	}
	for _, m := range t.rss {
		if i, ok := index(m.at); ok {
			out[i].PeakRSS = max(out[i].PeakRSS, m.bytes)
		}
	}
	next := 0
	for i := range out {
		from := time.Duration(i) * every
		to := min(length, from+every)
		out[i].From, out[i].Seconds = from.Seconds(), (to - from).Seconds()
		out[i].Latency, out[i].Visibility = percentilesOf(latencies[i]), percentilesOf(visible[i])
		end := start.Add(to)
		for next < len(t.dedup) && t.dedup[next].at.Before(end) {
			next++
		}
		if i == n-1 && next == len(t.dedup) && next > 0 && !t.dedup[next-1].at.Before(start.Add(from)) {
			// The read made when the run ended may come a moment before the end its
			// start and length compute: it is the last interval's.
			next--
		}
		if next == len(t.dedup) {
			continue
		}
		d := t.dedup[next]
		if i == n-1 {
			d = t.dedup[len(t.dedup)-1]
		}
		out[i].Dedup = &dedupState{Held: d.held}
		if next > 0 {
			out[i].Dedup.Evicted = d.evicted - t.dedup[next-1].evicted
		}
	}
	return out
}

// printIntervals writes a scenario's runs per interval, and the verdict.
func printIntervals(w io.Writer, r *result) {
	sc := r.Scenario
	for _, run := range r.Runs {
		if len(run.Intervals) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s, run %s: %s offered, %s events/s, %d connections, per %v (latency from when due):\n",
			sc.Name, run.RunID, offered(sc), thousands(run.EventsPerSecond), sc.Connections, sc.Interval)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "from\treq 200\tevents 200\tnot 200\tp50\tp99\tmax\tvisible p99\tpeak RSS\tdedup held\tevicted\t")
		for _, in := range run.Intervals {
			visible, rss, held, evicted := "-", "-", "-", "-"
			if in.Visibility.Count > 0 {
				visible = fmt.Sprintf("%s (%d)", millis(in.Visibility.P99), in.Visibility.Count)
			}
			if in.PeakRSS > 0 {
				rss = fmt.Sprintf("%d MiB", in.PeakRSS>>20)
			}
			if d := in.Dedup; d != nil {
				held, evicted = thousands(float64(d.Held)), thousands(float64(d.Evicted))
			}
			fmt.Fprintf(tw, "%gs\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", in.From, thousands(float64(in.Requests)),
				thousands(float64(in.Events)), in.Failed, millis(in.Latency.P50), millis(in.Latency.P99), millis(in.Latency.Max),
				visible, rss, held, evicted)
		}
		tw.Flush()
		if last := run.Intervals[len(run.Intervals)-1].Dedup; last != nil {
			fmt.Fprintf(w, "%s: the deduplication set held %s uuids once every send was answered, some %.1f MiB\n", sc.Name,
				thousands(float64(last.Held)), float64(last.Held*dedupBytesPerEvent)/(1<<20))
		}
	}
	if g := sustainedVerdict(r); g != nil {
		verdict := "not measured"
		if g.Met != nil {
			verdict = map[bool]string{true: "met", false: "NOT MET"}[*g.Met]
		}
		fmt.Fprintf(w, "%s: %s: %s; peak RSS %d MiB: %s\n", sc.Name, g.Target, g.Measured, r.PeakRSS>>20, verdict)
	}
}

// sustainedVerdict is the goal for a scenario that runs at a share of another's
// rate: every request answered 200 within sustainedGoal of when it was due, and its
// events queryable within sustainedGoal of the 200, p99; nil for other scenarios.
func sustainedVerdict(r *result) *goal {
	sc := r.Scenario
	if sc.RateOf == "" {
		return nil
	}
	limit := float64(sustainedGoal / time.Millisecond)
	g := &goal{
		Figure: fmt.Sprintf("%s at %s for %v", sc.Path, offered(sc), sc.Duration),
		Target: fmt.Sprintf("max wait ≤ %s, visible p99 ≤ %s", millis(limit), millis(limit)),
		Measured: fmt.Sprintf("max wait %s, p99 %s, visible p99 %s (%d), %s", millis(r.Latency.Max), millis(r.Latency.P99),
			millis(r.Visibility.P99), r.Visibility.Count, answerText(r.Answers)),
	}
	if r.Visibility.Count > 0 && r.Latency.Count > 0 {
		ok := r.Latency.Max <= limit && r.Visibility.P99 <= limit && r.Answers["200"] == int64(r.Latency.Count)
		g.Met = &ok
	}
	return g
}

// offered is the rate of a scenario that takes another's, and where it comes from.
func offered(sc scenario) string {
	if sc.RateBase == 0 {
		return thousands(sc.Rate) + " req/s (given)"
	}
	return fmt.Sprintf("%s req/s (%.0f%% of %s's %s)", thousands(sc.Rate), 100*sc.RateOfMax, sc.RateOf, thousands(sc.RateBase))
}
